"""`mcache bench` rough edges (issue 21): Ctrl-C anywhere keeps the rows, `-o` and layout errors before any work,
a table that fits 100 columns, no work for ops without buffers, a capped CPU smoke run; and the kernel-only
ops and `--sweep` folded in from the old kernel table script."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch
from paths import TINY_SPEC

from mcache.bench.ops import CaseBuilder
from mcache.bench.runner import BenchConfig, Runner
from mcache.cli import bench_output as output
from mcache.cli.main import main
from mcache.cli.table import render
from mcache.results import schema as results

SMOKE = ["--device", "cpu", "--batch", "1", "--max-batch", "2", "--reps", "2"]


def _ctrl_c(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("where", ["manager build", "ceiling", "kernel compile", "progress bar", "runner setup"])
def test_ctrl_c_anywhere_writes_a_valid_file_and_exits_130(where, monkeypatch, tmp_path):
    from rich.progress import Progress

    def then(cls, name):
        real = getattr(cls, name)

        def patched(*args, **kwargs):
            _ctrl_c()
            return real(*args, **kwargs)

        monkeypatch.setattr(cls, name, patched)

    target = {"manager build": (Runner, "_build_manager"), "ceiling": (Runner, "_ceiling"),
              "kernel compile": (CaseBuilder, "reset"), "progress bar": (Progress, "advance"),
              "runner setup": (Runner, "__init__")}[where]  # before the run: remembered, the run stops at once
    then(*target)
    out = tmp_path / "run.json"
    assert main(["bench", TINY_SPEC, *SMOKE, "--ops", "reset,pack", "-o", str(out)]) == 130
    run = results.load(out)
    assert run.meta.interrupted is True
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


def test_a_swallowed_ctrl_c_still_ends_the_run(monkeypatch, tmp_path):
    real = CaseBuilder.reset

    def swallowing(self, batch):
        try:
            _ctrl_c()
            for _ in range(1000):
                pass
        except KeyboardInterrupt:  # library code that catches too much
            pass
        return real(self, batch)

    monkeypatch.setattr(CaseBuilder, "reset", swallowing)
    out = tmp_path / "run.json"
    assert main(["bench", TINY_SPEC, *SMOKE, "--ops", "reset,pack", "-o", str(out)]) == 130
    run = results.load(out)
    assert run.meta.interrupted and not [r for r in run.rows if r.op == "pack"]


@pytest.mark.parametrize("target", ["folder", "missing/x.json"])
def test_output_is_checked_before_any_work(target, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(Runner, "__init__", lambda *a: pytest.fail("the run started"))
    path = tmp_path / target
    if target == "folder":
        path.mkdir()
    assert main(["bench", TINY_SPEC, *SMOKE, "-o", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mcache: {path}: output: a file") and err.count("\n") == 1


def test_a_layout_the_model_cannot_take_names_the_spec_file(capsys):
    assert main(["bench", "nemotron-h-8b", "--tp", "3", "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("mcache: ") and "nemotron-h-8b.yaml:" in captured.err
    assert "attention.num_kv_heads: 8 cannot be split over tp=3" in captured.err and captured.err.count("\n") == 1


def _row(op, median, reason=None):
    if reason:
        return results.Row(op=op, impl="triton", kind="gdn", batch=64, status="skipped", reason=reason)
    return results.Row(op=op, impl="triton", kind="gdn", batch=64, layer=35, median_us=median, p10_us=median * 0.99,
                       p90_us=median * 1.01, eager_us=median * 1.1, host_us=61.25, bytes=6 << 30, gbps=4188.3,
                       pct_ceiling=97.5, pct_size_matched=96.1, size_matched_us=median, speedup_vs_baseline=8.88)


def test_the_table_fits_100_columns_without_cutting_a_number(monkeypatch, capsys):
    from test_results_compare_export import make_run

    run = make_run([_row("commit_intermediate", 240412.23), _row("replay", 1827.09),
                    _row("pack", 0, reason="out of memory: CUDA out of memory.\nTried to allocate 80.00 GiB")])
    run.meta.host_reference = {"copy_": 7.5, "index_copy_": 9.0}
    monkeypatch.setattr(output, "page_width", lambda: 100)
    cells = [output._bench_cells(r, 7.5) for r in run.rows if r.status == "ok"]
    head = output.bench_columns(cells, 100)
    assert head[:8] == ["op", "kind", "batch", "impl", "device us", "eager us", "host us", "host/copy_"]
    assert "p10" not in head  # the least important columns go first
    printed = []
    monkeypatch.setattr(output, "print_blocks", lambda blocks, _: printed.extend(
        line for b in blocks for line in ([b] if isinstance(b, str) else render(b, 100)[0])))
    output.emit_bench(run, None)
    text = "\n".join(printed)
    assert max(len(line) for line in text.splitlines()[1:]) <= 100 and "…" not in text
    assert "240412.23" in text and "8.17x" in text  # 61.25 / 7.5
    skipped = [line for line in text.splitlines() if line.startswith("skipped")]
    assert skipped == ["skipped pack gdn batch 64 triton: out of memory: CUDA out of memory. Tried to allocate 80.00 GiB"]


def test_ops_without_buffers_are_listed_once_without_work(monkeypatch):
    real = CaseBuilder.commit

    def commit(self, batch):
        assert self.kind == "mamba1", f"a commit case was built for {self.kind}"  # mamba1 keeps intermediate states
        return real(self, batch)

    monkeypatch.setattr(CaseBuilder, "commit", commit)
    run = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[1, 2], max_batch=4, ops=["commit", "reset"],
                             scheme="replay", reps=2)).run()
    skipped = [(r.op, r.kind) for r in run.rows if r.status == "skipped"]
    assert sorted(skipped) == [("commit", "gdn"), ("commit", "mamba2")]  # mamba1 keeps intermediate states


def test_a_cpu_smoke_run_caps_torch_threads(monkeypatch):
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    assert main(["bench", TINY_SPEC, *SMOKE, "--ops", "alloc"]) == 0
    assert threads == [min(4, os.cpu_count() or 1)]


def test_kernel_ops_on_the_cpu(capsys):
    assert main(["bench", TINY_SPEC, *SMOKE, "--ops", "kernels", "--scheme", "replay", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    for op in ("copy_slots", "pack_heads", "unpack_heads", "replay_fold", "replay_fold_conv"):
        assert f"| {op} | gdn |" in out
    assert "| device µs |" in out and "skipped commit_intermediate gdn" in out


def test_kernel_ops_check_against_the_reference(monkeypatch):
    import mcache.bench.kernel_ops as kops

    monkeypatch.setattr(kops.K, "copy_slots_plan", lambda *a, config=None: lambda src, dst: None)  # a kernel that does nothing
    run = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[1], max_batch=2, ops=["copy_slots"], reps=2)).run()
    assert run.rows and all(r.status == "skipped" and "disagrees" in r.reason for r in run.rows)


def test_sweep_needs_cuda(capsys):
    assert main(["bench", TINY_SPEC, *SMOKE, "--sweep"]) == 2
    err = capsys.readouterr().err
    assert err == "mcache: bench: --sweep: times Triton kernel configurations, which needs --device cuda\n"


def test_sweep_cases_cover_every_configuration():
    from mcache.bench.kernel_ops import CONV_CONFIGS, COPY_CONFIGS, FOLD_CONFIGS, KernelCaseBuilder, sweep_cases

    runner = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[1], max_batch=2, scheme="replay"))
    manager = runner._build_manager()
    for kind in ("gdn", "mamba2"):  # Mamba2's folds take four-number configurations
        builder = KernelCaseBuilder(manager.pools.values(), kind, None, len(manager.free_slots), 4, 16, torch.Generator().manual_seed(0))
        cases = sweep_cases(builder, 1)
        configs = COPY_CONFIGS + FOLD_CONFIGS[kind] + CONV_CONFIGS
        assert [impl for impl, _ in cases] == [f"triton@{'x'.join(map(str, c))}" for c in configs]
        assert {case.op for _, case in cases} == {"copy_slots", "replay_fold", "replay_fold_conv"}
        json.dumps([case.nbytes for _, case in cases])


def test_a_huge_batch_is_one_line_before_any_work(capsys):
    assert main(["bench", TINY_SPEC, "--device", "cpu", "--batch", "1,99999999999999999"]) == 2
    assert capsys.readouterr().err == "mcache: --batch: an integer from 1 to 2**40 (1099511627776), got 99999999999999999\n"
