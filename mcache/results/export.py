"""Exporters for the formats CI dashboards read: github-action-benchmark and Bencher (BMF)."""

from __future__ import annotations

from mcache.core.errors import McacheError
from mcache.results.schema import EXPERIMENT, Results, Row

METRICS = ("time", "bandwidth")


def _name(results: Results, key: str) -> str:
    """`spec/state_dtype=bfloat16,history=16,spec_scheme=replay/key`: runs of another experiment are another series."""
    runtime = results.meta.runtime
    experiment = ",".join(f"{field}={runtime.get(field, 'unknown')}" for field in EXPERIMENT.values())
    return f"{results.meta.spec_name}/{experiment}/{key}"


def to_github_action_benchmark(results: Results, metric: str) -> list[dict]:
    """The "custom" format: `[{"name", "unit", "value", "range", "extra"}]`.

    Each benchmark's name holds the spec, the experiment (state dtype, ring length, scheme: `_name`) and the row's key.
    Its direction (smaller or bigger is better) is per file, so times and bandwidths are exported
    separately (`metric`: `time` in us, smaller is better; `bandwidth` in GB/s, bigger is better).
    With `time`, a row's eager and host times (schema 2) are benchmarks of their own, named `.../eager` and
    `.../host` beside the device time's `...`.
    """
    if metric not in METRICS:
        raise McacheError(f"export: --metric: one of {', '.join(METRICS)}, got {metric!r}")
    out = []
    for row in results.rows:
        if row.status != "ok" or row.median_us is None:
            continue
        extra = f"{row.bytes} bytes" if row.bytes else ""
        if row.bytes and row.pct_ceiling is not None:
            extra += f"; {row.pct_ceiling}% of copy ceiling"
        if metric == "time":
            name = _name(results, row.key)
            entries = [_time_entry(name, row, "device")]
            entries += [_time_entry(f"{name}/{t}", row, t) for t in ("eager", "host") if row.time(t)[0] is not None]
        elif row.gbps is not None:
            entries = [{"name": _name(results, row.key), "unit": "GB/s", "value": row.gbps}]
        else:
            continue
        out += [{**entry, "extra": extra} if extra else entry for entry in entries]
    return out


def _time_entry(name: str, row: Row, time: str) -> dict:
    median, lo, hi = row.time(time)
    return {"name": name, "unit": "us", "value": median, "range": f"±{max(median - lo, hi - median):.2f}"}


def _ns(row: Row, time: str) -> dict:
    median, lo, hi = row.time(time)
    return {"value": median * 1000, "lower_value": lo * 1000, "upper_value": hi * 1000}


def to_bencher(results: Results) -> dict:
    """Bencher Metric Format: `{benchmark: {"latency": {value, lower_value, upper_value}, "bandwidth": {...}}}`.

    Latency (the device time) is in nanoseconds (Bencher's built-in measure); `eager-latency` and
    `host-latency` (schema 2) likewise; bandwidth in GB/s.
    """
    out: dict[str, dict] = {}
    for row in results.rows:
        if row.status != "ok" or row.median_us is None:
            continue
        measures = {"latency": _ns(row, "device")}
        for name in ("eager", "host"):
            if row.time(name)[0] is not None:
                measures[f"{name}-latency"] = _ns(row, name)
        if row.gbps is not None:
            measures["bandwidth"] = {"value": row.gbps}
        out[_name(results, row.key)] = measures
    return out
