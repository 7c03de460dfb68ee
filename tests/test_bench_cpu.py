"""`mcache bench --device cpu`: the end-to-end smoke run CI can do, OOM handling and Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from paths import TINY_SPEC

from mcache.bench.ops import CaseBuilder
from mcache.bench.runner import BenchConfig, Runner
from mcache.cli.main import main
from mcache.results import schema as results


def test_cpu_smoke_run_writes_a_valid_results_file(tmp_path, capsys):
    out = tmp_path / "smoke.json"
    rc = main(["bench", TINY_SPEC, "--device", "cpu", "--batch", "1,2", "--max-batch", "4", "--reps", "2",
               "--scheme", "replay", "-o", str(out)])
    assert rc == 0
    run = results.load(out)
    assert run.meta.comparable is False and run.meta.device == "cpu" and run.meta.ceiling is None
    assert not run.meta.spec_file.startswith("/")  # the spec relative to the working directory, or its name alone
    assert run.meta.memory.estimated_bytes == run.meta.memory.allocated_bytes > 0
    done = {(r.op, r.kind, r.batch, r.impl) for r in run.rows if r.status == "ok"}
    for kind in ("mamba2", "gdn"):  # kinds with a replay recurrence
        assert {("replay", kind, 2, "torch"), ("replay", kind, 2, "torch-loop")} <= done
    assert ("commit", "mamba1", 1, "torch") in done  # mamba1 falls back to intermediate states
    assert {("reset", "mamba1", 2, "torch"), ("relocate", "gdn", 2, "torch"), ("transfer", "mamba2", 2, "torch"),
            ("snapshot", "gdn", 2, "torch"), ("pack", "mamba2", 1, "torch")} <= done
    assert any(r.op == "alloc" and r.kind == "pools" for r in run.rows)
    ok = [r for r in run.rows if r.status == "ok" and r.impl == "torch"]
    assert all(r.median_us > 0 and r.bytes > 0 for r in ok)
    assert "CPU smoke run, not comparable" in capsys.readouterr().out


def test_per_layer_rows():
    cfg = BenchConfig(spec=TINY_SPEC, device="cpu", batches=[1], ops=["reset"], per_layer=True, reps=2)
    run = Runner(cfg).run()
    layers = sorted({(r.kind, r.layer) for r in run.rows if r.layer is not None})
    assert layers == [("gdn", 1), ("mamba1", 3), ("mamba2", 0), ("mamba2", 4)]  # global layer ids


def test_out_of_memory_becomes_a_skipped_row(monkeypatch):
    real = CaseBuilder.build

    def build(self, op, batch):
        if op == "pack" and batch == 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
        return real(self, op, batch)

    monkeypatch.setattr(CaseBuilder, "build", build)
    run = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[1, 2], ops=["pack", "reset"], reps=2)).run()
    skipped = [r for r in run.rows if r.status == "skipped"]
    assert {(r.op, r.batch) for r in skipped} == {("pack", 2)}
    assert all(r.reason.startswith("out of memory: CUDA out of memory") for r in skipped)
    assert any(r.op == "reset" and r.batch == 2 and r.status == "ok" for r in run.rows)  # the run went on


def test_wrong_output_is_not_timed(monkeypatch):
    import mcache.bench.ops as ops

    monkeypatch.setattr(ops.K, "reset_slots_plan", lambda pools: lambda slots: None)  # a kernel that does nothing
    run = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[1], ops=["reset"], reps=2)).run()
    assert run.rows and all(r.status == "skipped" and "disagrees" in r.reason for r in run.rows)


def test_ctrl_c_keeps_the_rows_done(monkeypatch, tmp_path):
    real = CaseBuilder.build
    calls = {"n": 0}

    def build(self, op, batch):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(self, op, batch)

    monkeypatch.setattr(CaseBuilder, "build", build)
    out = tmp_path / "partial.json"
    rc = main(["bench", TINY_SPEC, "--device", "cpu", "--batch", "1", "--ops", "reset,pack,snapshot", "--reps", "2",
               "-o", str(out)])
    assert rc == 130
    data = json.loads(out.read_text())
    assert data["meta"]["interrupted"] is True
    assert len([r for r in data["rows"] if r["impl"] == "torch"]) == 3  # the three cases before the interrupt


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ops", "reset,dance"], "--ops: one or more of"),
        (["--batch", "0"], "--batch: positive integers"),
        (["--rank", "3", "--tp", "2"], "--rank: 0 .. 1"),
        (["--device", "tpu"], "--device: cuda, cpu (or cuda:N)"),
        (["--device", "meta"], "--device: cuda, cpu (or cuda:N)"),
        (["--batch", "8", "--max-batch", "4"], "--batch: at most --max-batch (4)"),
        (["--reps", "0"], "Invalid value for '--reps'"),
        (["-o", "/nonexistent/dir/x.json"], "output: a file in an existing folder"),
        (["--draft", "0"], "Invalid value for '--draft'"),
    ],
)
def test_bad_bench_options(args, needle, capsys):
    assert main(["bench", TINY_SPEC, "--device", "cpu", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_a_rank_without_state_has_nothing_to_time(tmp_path, capsys):
    spec = tmp_path / "attention-only.yaml"
    spec.write_text("name: attn\nsource: test\nhidden_size: 64\nvocab_size: 10\nnum_layers: 2\n"
                    "layers: {types: [attention, mlp]}\nattention: {num_heads: 4, num_kv_heads: 2, head_dim: 16}\n"
                    "mlp: {intermediate_size: 128}\n")
    assert main(["bench", str(spec), "--device", "cpu", "--batch", "1"]) == 2
    assert "no recurrent layers on stage 0" in capsys.readouterr().err
    assert main(["bench", str(spec), "--device", "cpu", "--batch", "1", "--ops", "alloc", "--reps", "2"]) == 0


@pytest.mark.parametrize(("ssm", "want"), [(None, "float32"), ("bfloat16", "bfloat16")])
def test_the_state_dtype_recorded_is_the_one_allocated(tmp_path, ssm, want):
    """A model with KDA layers keeps its states in float32 unless --ssm-dtype says (the model dtype is bf16): the
    results file records the dtype the pools were allocated in."""
    kinds = "types: [mamba2, kda, attention, mamba2, kda]"
    text = Path(TINY_SPEC).read_text().replace("types: [mamba2, gdn, attention, mamba1, mamba2]", kinds)
    spec = tmp_path / "kda.yaml"
    spec.write_text(text + "kda: {num_heads: 2, head_dim: 8, conv_kernel: 4}\n")
    cfg = BenchConfig(spec=str(spec), device="cpu", batches=[1], ops=["reset"], reps=2, ssm_dtype=ssm)
    runner = Runner(cfg)
    assert runner.run().meta.runtime["state_dtype"] == want
    assert {s.dtype for kind in ("kda", "mamba2") for s in runner.ctx.states(kind) if s.component == "ssm"} == {want}
