"""`mcache bench` on a GPU: every op of the tiny spec checks out against its reference and is timed."""

from __future__ import annotations

import warnings

import pytest
from paths import TINY_SPEC

from mcache.bench.roofline import Work, arith_us
from mcache.bench.runner import BenchConfig, Runner


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["intermediate", "replay"])
def test_gpu_run_of_every_op(scheme):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = Runner(BenchConfig(spec=TINY_SPEC, device="cuda", batches=[1, 3], max_batch=8, reps=5, scheme=scheme)).run()
    assert not [w for w in caught if "CUDA Graph is empty" in str(w.message)]
    assert run.meta.comparable and run.meta.ceiling.gbps > 0
    assert run.meta.memory.allocated_bytes == run.meta.memory.estimated_bytes
    bad = [r for r in run.rows if r.status == "skipped" and "disagrees" in (r.reason or "")]
    assert not bad, bad
    triton = [r for r in run.rows if r.impl == "triton" and r.status == "ok"]
    assert {r.op for r in triton} >= {"reset", "relocate", "snapshot", "pack", "transfer"}
    assert all(r.pct_ceiling is not None and r.speedup_vs_baseline is not None for r in triton)
    # Every op and baseline is timed from CUDA-graph replays, except the replay op's host-synchronizing torch loop.
    eager = {(r.op, r.impl) for r in run.rows if r.status == "ok" and r.impl != "host" and r.timer is not None}
    assert eager <= {("replay", "torch-loop")}, eager


@pytest.mark.gpu
@pytest.mark.parametrize("ring", [None, 16])
def test_gpu_run_reports_the_roofline(ring):
    """The run measures the FMA and tf32 rates; every timed row has its memory time and % roofline, the folds their
    arithmetic; the roofline never exceeds what the kernel reached by more than timing noise allows."""
    cfg = BenchConfig(spec=TINY_SPEC, device="cuda", batches=[1, 3], max_batch=8, reps=5, scheme="replay",
                      ops=["reset", "replay", "replay_fold"], ring_tokens=ring)
    run = Runner(cfg).run()
    assert run.meta.runtime["history"] == (ring or cfg.draft + 1)
    assert run.meta.compute.fma_tflops > 1 and run.meta.compute.tf32_tflops > run.meta.compute.fma_tflops
    ok = [r for r in run.rows if r.status == "ok" and r.impl != "host"]
    assert ok and all(r.memory_us == round(r.bytes / (run.meta.ceiling.gbps * 1e3), 3) for r in ok)  # bytes at the ceiling
    for r in ok:  # the larger floor over the device time (the tiny spec's rows round to a few tenths of a percent)
        assert r.pct_roofline == pytest.approx(100 * max(r.memory_us, r.arith_us) / r.median_us, abs=0.06)
    folds = [r for r in ok if r.op in ("replay", "replay_fold")]
    rates = run.meta.compute
    assert folds and all(r.flops > 0 and r.arith_us == round(arith_us(Work(r.flops, r.mma_flops), rates.fma_tflops,
                                                                        rates.tf32_tflops), 3) for r in folds)
    assert all(r.flops == 0 and r.arith_us == 0 for r in ok if r.op == "reset")


@pytest.mark.gpu
def test_gpu_run_times_fla_beside_the_delta_rule_folds():
    """Where fla-core is installed, the GatedDeltaNet fold has FLA's rows, checked against the reference and timed."""
    pytest.importorskip("fla")
    cfg = BenchConfig(spec=TINY_SPEC, device="cuda", batches=[3], max_batch=8, reps=5, scheme="replay",
                      ops=["replay_fold"])
    run = Runner(cfg).run()
    rows = {(r.kind, r.impl): r for r in run.rows if r.op == "replay_fold"}
    for impl in ("fla", "fla-kernel"):
        assert rows[("gdn", impl)].status == "ok", rows[("gdn", impl)].reason
        assert rows[("gdn", impl)].median_us > 0 and rows[("gdn", impl)].pct_roofline is not None
    assert ("mamba2", "fla") not in rows  # FLA has no Mamba2 fold


@pytest.mark.gpu
def test_gpu_run_times_vllm_beside_the_mamba2_fold():
    """Where vLLM's Mamba2 kernel imports (vLLM, or scripts/vllm_ssm_standin.py's package), the Mamba2 fold has its
    row, checked against the reference and timed."""
    from mcache.bench import vllm_ssm

    if not vllm_ssm.available():
        pytest.skip("vLLM's selective_state_update does not import here")
    cfg = BenchConfig(spec=TINY_SPEC, device="cuda", batches=[3], max_batch=8, reps=5, scheme="replay",
                      ops=["replay_fold"])
    rows = {(r.kind, r.impl): r for r in Runner(cfg).run().rows if r.op == "replay_fold"}
    assert rows[("mamba2", "vllm")].status == "ok", rows[("mamba2", "vllm")].reason
    assert rows[("mamba2", "vllm")].median_us > 0 and rows[("mamba2", "vllm")].pct_roofline is not None
    assert ("gdn", "vllm") not in rows  # the baseline of the Mamba2 fold only
