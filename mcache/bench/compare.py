"""Compare two results files row by row, with verdicts that know about noise."""

from __future__ import annotations

import math
from collections.abc import Callable

import msgspec

from mcache.bench.results import Meta, Results, Row
from mcache.core.errors import McacheError


class Change(msgspec.Struct, kw_only=True):
    """One row of a comparison. `verdict` is one of:

    - `same`: the two runs' p10..p90 ranges overlap (the change is within the noise);
    - `faster` / `slower`: outside the spread but within the threshold;
    - `improvement` / `regression`: outside the spread and beyond the threshold;
    - `new` / `gone`: the row is in one run only; `skipped`: skipped in either run.
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
    return pct


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
    "runtime": lambda m: m.runtime,
    "timer": lambda m: m.timer,
    "cuda_graphs": lambda m: m.cuda_graphs,
}
_NOTED = {"mcache_version": lambda m: m.mcache_version, "versions": lambda m: m.versions}


def check_comparable(base: Results, new: Results, force: bool, names: tuple[str, str] = ("base", "new")) -> list[str]:
    """Refuse runs that differ in device, spec, layout, runtime settings, timer or CUDA graphs unless `force`;
    return the notes to print: differing versions, an interrupted run, and (when forced) what differs."""
    refused = _differences(base.meta, new.meta, _REFUSED)
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
    delta = (new.median_us - base.median_us) / base.median_us * 100
    (lo_b, hi_b), (lo_n, hi_n) = base.spread_us, new.spread_us
    overlap = lo_n <= hi_b and lo_b <= hi_n
    if overlap or delta == 0:
        return delta, "same"
    if delta > threshold_pct:
        return delta, "regression"
    if delta < -threshold_pct:
        return delta, "improvement"
    return delta, "slower" if delta > 0 else "faster"


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
        if b is None or n is None:
            delta, verdict = None, "new" if b is None else "gone"
        else:
            delta, verdict = _verdict(b, n, threshold_pct)
        changes.append(Change(key=key, op=row.op, kind=row.kind, impl=row.impl, batch=row.batch, layer=row.layer,
                              base_us=b.median_us if b else None, new_us=n.median_us if n else None,
                              delta_pct=delta, verdict=verdict))
    return Comparison(base=base_name, new=new_name, threshold_pct=threshold_pct, changes=changes, notes=notes)
