"""Compare two results files row by row, with verdicts that know about noise."""

from __future__ import annotations

import math
from collections.abc import Callable

import msgspec

from mcache.core.errors import McacheError
from mcache.results.schema import EXPERIMENT, TIMES, Meta, Results, Row


class Change(msgspec.Struct, kw_only=True):
    """One row of a comparison. Each of its three times (device `*_us`, `eager`, `host`; see `results.Row`)
    gets a verdict in `verdicts`:

    - `same`: the two runs' p10..p90 ranges overlap (the change is within the noise);
    - `faster` / `slower`: outside the spread but within the threshold;
    - `improvement` / `regression`: outside the spread and beyond the threshold.

    A time the base lacks (a schema-1 file has no eager or host times) is not compared. `verdict` is the
    row's: `regression` if any time regressed, else the device time's verdict unless another time improved or
    slowed beyond it (see `_worst`); `new` / `gone`: the row is in one run only; `skipped`: skipped in either run.
    """

    key: str
    op: str
    kind: str
    impl: str
    batch: int
    layer: int | None
    base_us: float | None
    new_us: float | None
    delta_pct: float | None
    verdict: str
    base_eager_us: float | None = None
    new_eager_us: float | None = None
    eager_delta_pct: float | None = None
    base_host_us: float | None = None
    new_host_us: float | None = None
    host_delta_pct: float | None = None
    verdicts: dict[str, str] = {}


class Comparison(msgspec.Struct, kw_only=True):
    """All changes, the threshold used, and whether any regression was found."""

    base: str
    new: str
    threshold_pct: float
    changes: list[Change]
    notes: list[str] = []

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "regression"]


def parse_threshold(text: str) -> float:
    """`"5%"` -> `5.0`; anything but a finite, non-negative percentage is a one-line `McacheError`."""
    try:
        pct = float(text.strip().removesuffix("%"))
    except ValueError:
        pct = math.nan
    if not math.isfinite(pct) or pct < 0:
        raise McacheError(f"compare: --threshold: a percentage of 0% or more, such as 5%, got {text!r}")
    return pct + 0.0  # -0% is 0%


def _differences(b: Meta, n: Meta, fields: dict[str, Callable[[Meta], object]]) -> list[str]:
    """`field (base value vs new value)` for each of `fields` (name -> getter) that differs; dicts key by key."""
    found = []
    for name, get in fields.items():
        old, new = get(b), get(n)
        if isinstance(old, dict) and isinstance(new, dict):
            found += [f"{name}.{k} ({old.get(k)} vs {new.get(k)})" for k in {**old, **new} if old.get(k) != new.get(k)]
        elif old != new:
            found.append(f"{name} ({old} vs {new})")
    return found


# What makes two runs incomparable (refused unless --force), and what only deserves a note.
_REFUSED = {
    "device": lambda m: m.device_name if m.comparable else f"{m.device_name} (smoke run)",
    "spec": lambda m: f"{m.spec_name} {m.spec_sha256[:12]}",
    "layout": lambda m: m.layout,
    "runtime": lambda m: {k: v for k, v in m.runtime.items() if k not in EXPERIMENT.values()},
    "timer": lambda m: m.timer,
    "cuda_graphs": lambda m: m.cuda_graphs,
}
_NOTED = {"mcache_version": lambda m: m.mcache_version, "versions": lambda m: m.versions}


def _experiment_differences(b: Meta, n: Meta, names: tuple[str, str]) -> list[str]:
    """`state dtype (bfloat16 vs float32)` for each of `EXPERIMENT` that differs, or `... (base records none: cannot
    tell)` where a run lacks it."""
    found = []
    for what, key in EXPERIMENT.items():
        old, new = b.runtime.get(key), n.runtime.get(key)
        missing = [name for name, value in zip(names, (old, new), strict=True) if value is None]
        if missing:
            found.append(f"{what} ({' and '.join(missing)} {'record' if len(missing) > 1 else 'records'} none: cannot tell)")
        elif old != new:
            found.append(f"{what} ({old} vs {new})")
    return found


def check_comparable(base: Results, new: Results, force: bool, names: tuple[str, str] = ("base", "new")) -> list[str]:
    """Refuse runs that differ in device, spec, layout, runtime settings, timer or CUDA graphs, or are a different
    experiment (state dtype, ring length, scheme; a run that does not record one cannot tell), unless `force`;
    return the notes to print: differing versions, an interrupted run, and (when forced) what differs."""
    refused = _differences(base.meta, new.meta, _REFUSED) + _experiment_differences(base.meta, new.meta, names)
    if refused and not force:
        raise McacheError(f"compare: runs with different {refused[0]}; pass --force to compare anyway")
    notes = [f"compared despite different {', '.join(refused)} (--force)"] if refused else []
    versions = _differences(base.meta, new.meta, _NOTED)
    notes += [f"versions differ: {', '.join(versions)}"] if versions else []
    notes += [f"{name} is an interrupted run: rows it did not reach are missing"
              for name, run in zip(names, (base, new), strict=True) if run.meta.interrupted]
    return notes


def _verdict(base: Row, new: Row, threshold_pct: float) -> tuple[float | None, str]:
    if base.status != "ok" or new.status != "ok" or not base.median_us or new.median_us is None:
        return None, "skipped"
    return time_verdict(base, new, "device", threshold_pct)


def time_verdict(base: Row, new: Row, name: str, threshold_pct: float) -> tuple[float | None, str | None]:
    """Change in % and verdict of one time (`device`, `eager` or `host`); `(None, None)` where a run lacks it."""
    b, lo_b, hi_b = base.time(name)
    n, lo_n, hi_n = new.time(name)
    if not b or n is None:
        return None, None
    delta = (n - b) / b * 100
    overlap = lo_n <= hi_b and lo_b <= hi_n
    if overlap or delta == 0:
        return delta, "same"
    if delta > threshold_pct:
        return delta, "regression"
    if delta < -threshold_pct:
        return delta, "improvement"
    return delta, "slower" if delta > 0 else "faster"


_SEVERITY = ("regression", "improvement", "slower", "faster", "same")


def _worst(verdicts: dict[str, str]) -> str:
    """The row's verdict from its times': a regression anywhere first, then an improvement, and so on."""
    return min(verdicts.values(), key=_SEVERITY.index)


def _three_times(b: Row, n: Row, threshold_pct: float) -> tuple[dict[str, float | None], dict[str, str]]:
    """Eager and host deltas and every time's verdict, for two timed rows."""
    deltas, verdicts = {}, {}
    for name in TIMES:
        deltas[name], verdict = time_verdict(b, n, name, threshold_pct)
        if verdict is not None:
            verdicts[name] = verdict
    return deltas, verdicts


def compare(base: Results, new: Results, base_name: str, new_name: str, threshold_pct: float = 5.0,
            force: bool = False) -> Comparison:
    """Compare every row of `new` with the row of the same key in `base`."""
    notes = check_comparable(base, new, force, (base_name, new_name))
    base_rows = {r.key: r for r in base.rows}
    new_rows = {r.key: r for r in new.rows}
    changes = []
    for key in list(base_rows) + [k for k in new_rows if k not in base_rows]:
        b, n = base_rows.get(key), new_rows.get(key)
        row = n or b
        deltas, verdicts = {}, {}
        if b is None or n is None:
            delta, verdict = None, "new" if b is None else "gone"
        else:
            delta, verdict = _verdict(b, n, threshold_pct)
            if verdict != "skipped":
                deltas, verdicts = _three_times(b, n, threshold_pct)
                verdict = _worst(verdicts)
        changes.append(Change(key=key, op=row.op, kind=row.kind, impl=row.impl, batch=row.batch, layer=row.layer,
                              base_us=b.median_us if b else None, new_us=n.median_us if n else None,
                              delta_pct=delta, verdict=verdict,
                              base_eager_us=b.eager_us if b else None, new_eager_us=n.eager_us if n else None,
                              eager_delta_pct=deltas.get("eager"), base_host_us=b.host_us if b else None,
                              new_host_us=n.host_us if n else None, host_delta_pct=deltas.get("host"),
                              verdicts=verdicts))
    return Comparison(base=base_name, new=new_name, threshold_pct=threshold_pct, changes=changes, notes=notes)
