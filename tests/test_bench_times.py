"""`mcache bench`'s three times per row: the host-cost loop, eager and host columns, schema 2 with v1 still read,
`compare` gating on every time, `export` of the new times."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import torch
from paths import TINY_SPEC
from test_results_compare_export import SERIES, make_run

from mcache.bench import timing
from mcache.cli.main import main
from mcache.results import schema as results
from mcache.results.compare import compare
from mcache.results.export import to_bencher, to_github_action_benchmark
from mcache.results.schema import Row

ROOT = Path(__file__).resolve().parents[1]


def test_host_time_is_loop_time_over_calls_with_an_injected_clock():
    ticks = {"n": 0}

    def fn():
        ticks["n"] += 1

    def clock():  # each call of fn costs 7 us of this clock
        return ticks["n"] * 7e-6

    t = timing.host_time(fn, torch.device("cpu"), calls=200, rounds=3, clock=clock)
    assert (t.median_us, t.p10_us, t.p90_us) == pytest.approx((7.0, 7.0, 7.0))
    assert ticks["n"] == 1 + 3 * 200  # one warm-up call, then three rounds of 200


class _FakeCuda:
    """Stands in for torch.cuda: the sleep counts, the event after it says whether it ran out."""

    def __init__(self, idle_rounds: int):
        self.idle_rounds, self.sleeps, self.syncs = idle_rounds, [], 0

    def synchronize(self, device=None):
        self.syncs += 1

    def _sleep(self, cycles):
        self.sleeps.append(cycles)

    def Event(self):  # noqa: N802 - torch's name
        fake = self

        class Event:
            def record(self):
                pass

            def query(self):
                fake.idle_rounds -= 1
                return fake.idle_rounds >= 0

        return Event()


def test_host_time_on_a_gpu_repeats_a_round_in_which_the_gpu_went_idle(monkeypatch):
    fake = _FakeCuda(idle_rounds=1)
    for name in ("synchronize", "_sleep", "Event"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    calls = []
    t = timing.host_time(lambda: calls.append(1), torch.device("cuda"), calls=200, rounds=2, clock=lambda: len(calls) * 1e-5)
    # Round 1: the sleep ran out (idle) -> again with twice the sleep and half the calls; then two good rounds.
    first = timing.SLEEP_CYCLES_PER_US * 200 * 100
    assert fake.sleeps == [first, 2 * first, 2 * first]
    assert len(calls) == 1 + 200 + 100 + 100 and t.median_us == pytest.approx(10.0)


def test_cpu_run_has_three_times_per_row_and_torch_host_reference(tmp_path):
    out = tmp_path / "run.json"
    assert main(["bench", TINY_SPEC, "--device", "cpu", "--batch", "1", "--max-batch", "2", "--reps", "2",
                 "--ops", "reset,relocate", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["schema_version"] == 3
    assert set(data["meta"]["host_reference"]) == {"copy_", "index_copy_", "copy_slots plan", "copy_slots one-shot"}
    assert all(v > 0 for v in data["meta"]["host_reference"].values())
    timed = [r for r in data["rows"] if r["status"] == "ok" and r["impl"] != "host"]
    assert {r["impl"] for r in timed} == {"torch", "torch-index"}  # baseline rows get the same columns
    for r in timed:
        assert r["eager_p10_us"] <= r["eager_us"] <= r["eager_p90_us"] and r["host_p10_us"] <= r["host_us"] <= r["host_p90_us"]


def test_version_1_files_load_without_eager_or_host_times():
    run = results.load(ROOT / "tests" / "data" / "results-v1.json")  # rows of a schema-1 run (the Kimi-Linear results of dbb705f)
    assert run.schema_version == 1 and run.meta.host_reference is None
    assert all(r.eager_us is None and r.host_us is None for r in run.rows)


def _timed(op: str, device=(100, 99, 101), eager=(120, 119, 121), host=(50, 49, 51)) -> Row:
    return Row(op=op, impl="triton", kind="mamba2", batch=1, median_us=device[0], p10_us=device[1], p90_us=device[2],
               eager_us=eager[0], eager_p10_us=eager[1], eager_p90_us=eager[2],
               host_us=host[0], host_p10_us=host[1], host_p90_us=host[2])


def test_compare_gates_on_eager_and_host_times(tmp_path, capsys):
    base = make_run([_timed("reset"), _timed("commit"), _timed("pack"), _timed("copy")])
    new = make_run([_timed("reset"),
                    _timed("commit", host=(80, 79, 81)),  # host +60%, outside the noise: a regression
                    _timed("pack", eager=(150, 149, 151)),  # eager +25%: a regression
                    _timed("copy", host=(40, 39.5, 40.5))])  # host -20%: an improvement
    got = {c.op: c for c in compare(base, new, "b", "n").changes}
    assert got["reset"].verdict == "same"
    assert got["commit"].verdict == "regression" and got["commit"].verdicts == {"device": "same", "eager": "same",
                                                                                 "host": "regression"}
    assert got["commit"].host_delta_pct == pytest.approx(60.0) and got["commit"].delta_pct == 0
    assert got["pack"].verdict == "regression" and got["pack"].eager_delta_pct == pytest.approx(25.0)
    assert got["copy"].verdict == "improvement"
    paths = []
    for name, run in (("base.json", base), ("new.json", new)):
        results.save(run, tmp_path / name)
        paths.append(str(tmp_path / name))
    assert main(["compare", *paths, "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "| commit/mamba2/triton/b1 | 100.00 | 100.00 | +0.0% | +0.0% | +60.0% | ❌ regression (host) |" in out


def test_a_version_1_base_is_compared_on_the_device_time_only(tmp_path):
    v1 = msgspec.to_builtins(make_run([Row(op="reset", impl="triton", kind="mamba2", batch=1, median_us=100,
                                           p10_us=99, p90_us=101)]))
    v1["schema_version"] = 1
    for key in ("eager_us", "eager_p10_us", "eager_p90_us", "host_us", "host_p10_us", "host_p90_us"):
        v1["rows"][0].pop(key)
    v1["meta"].pop("host_reference")
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(v1))
    new = make_run([_timed("reset", host=(500, 499, 501))])  # host time has no base: not compared
    (change,) = compare(results.load(path), new, "v1", "new").changes
    assert change.verdict == "same" and change.verdicts == {"device": "same"} and change.host_delta_pct is None


def test_export_writes_eager_and_host_times():
    run = make_run([_timed("reset")])
    names = {e["name"]: e for e in to_github_action_benchmark(run, "time")}
    key = f"{SERIES}/reset/mamba2/triton/b1"
    assert names[key]["value"] == 100 and names[f"{key}/eager"]["value"] == 120 and names[f"{key}/host"]["value"] == 50
    assert names[f"{key}/host"]["range"] == "±1.00"
    bmf = to_bencher(run)[key]
    assert bmf["host-latency"] == {"value": 50_000, "lower_value": 49_000, "upper_value": 51_000}
    assert bmf["eager-latency"]["value"] == 120_000 and bmf["latency"]["value"] == 100_000
    json.dumps(bmf, allow_nan=False)
