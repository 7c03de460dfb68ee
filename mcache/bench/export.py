"""Exporters for the formats CI dashboards read: github-action-benchmark and Bencher (BMF)."""

from __future__ import annotations

from mcache.bench.results import Results
from mcache.core.errors import McacheError

METRICS = ("time", "bandwidth")


def _name(results: Results, key: str) -> str:
    return f"{results.meta.spec_name}/{key}"


def to_github_action_benchmark(results: Results, metric: str) -> list[dict]:
    """The "custom" format: `[{"name", "unit", "value", "range", "extra"}]`.

    Its direction (smaller or bigger is better) is per file, so times and bandwidths are exported
    separately (`metric`: `time` in us, smaller is better; `bandwidth` in GB/s, bigger is better).
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
            lo, hi = row.spread_us
            spread = max(row.median_us - lo, hi - row.median_us)
            entry = {"name": _name(results, row.key), "unit": "us", "value": row.median_us, "range": f"±{spread:.2f}"}
        elif row.gbps is not None:
            entry = {"name": _name(results, row.key), "unit": "GB/s", "value": row.gbps}
        else:
            continue
        if extra:
            entry["extra"] = extra
        out.append(entry)
    return out


def to_bencher(results: Results) -> dict:
    """Bencher Metric Format: `{benchmark: {"latency": {value, lower_value, upper_value}, "bandwidth": {...}}}`.

    Latency is in nanoseconds (Bencher's built-in measure); bandwidth in GB/s.
    """
    out: dict[str, dict] = {}
    for row in results.rows:
        if row.status != "ok" or row.median_us is None:
            continue
        measures = {
            "latency": {
                "value": row.median_us * 1000,
                "lower_value": row.spread_us[0] * 1000,
                "upper_value": row.spread_us[1] * 1000,
            }
        }
        if row.gbps is not None:
            measures["bandwidth"] = {"value": row.gbps}
        out[_name(results, row.key)] = measures
    return out
