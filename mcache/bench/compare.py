"""Compare two results files row by row, with verdicts that know about noise."""

from __future__ import annotations

import msgspec

from mcache.bench.results import Results, Row
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

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "regression"]


def check_comparable(base: Results, new: Results, force: bool) -> None:
    """Refuse runs from different GPUs, specs or settings (or a CPU run against a GPU run) unless `force`."""
    if force:
        return
    b, n = base.meta, new.meta
    b_gpu, n_gpu = b.device_name, n.device_name
    if b.comparable != n.comparable or b_gpu != n_gpu:
        raise McacheError(f"compare: runs from different devices ({b_gpu} vs {n_gpu}); pass --force to compare anyway")
    if (b.layout, b.runtime) != (n.layout, n.runtime):
        raise McacheError(
            f"compare: runs with different settings (layout {b.layout} runtime {b.runtime} vs layout {n.layout} "
            f"runtime {n.runtime}); pass --force to compare anyway"
        )
    if b.spec_sha256 != n.spec_sha256:
        raise McacheError(
            f"compare: runs of different specs ({b.spec_name} {b.spec_sha256[:12]} vs {n.spec_name} "
            f"{n.spec_sha256[:12]}); pass --force to compare anyway"
        )


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
    if threshold_pct < 0:
        raise McacheError(f"compare: --threshold: a non-negative percentage, got {threshold_pct}")
    check_comparable(base, new, force)
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
    return Comparison(base=base_name, new=new_name, threshold_pct=threshold_pct, changes=changes)
