"""The roofline of `mcache bench` on the CPU: the FMA kernel computes its chains (Triton's interpreter), the fold's
work scales as its formulation says, the arithmetic floor is the busier unit, and `--ring-tokens` sizes the rings."""

from __future__ import annotations

import json

import pytest
import torch
from paths import TINY_SPEC

from mcache.bench import roofline
from mcache.cli.main import main


def test_fma_kernel_runs_its_chains_and_counts_its_flops():
    out = torch.full((2 * 16,), float("nan"))
    a, b, iters = 0.9, 0.25, 7
    flops = roofline.fma_chains(out, a, b, iters, block=16, warps=1)
    x0 = torch.arange(32, dtype=torch.float64) * 1e-6
    chains = [x0 + c for c in range(roofline.FMA_CHAINS)]
    for _ in range(iters):
        chains = [x * a + b for x in chains]
    assert torch.allclose(out.double(), sum(chains), rtol=1e-5)
    assert flops == 2 * roofline.FMA_CHAINS * iters * 32
    assert roofline.fma_tflops(torch.device("cpu")) is None and roofline.tf32_tflops(torch.device("cpu")) is None


def test_fold_work_follows_each_kernels_formulation():
    L, S, H, V, K = 2, 4, 3, 8, 16
    f32 = torch.empty(L, S, H, V, K)
    k16 = torch.empty(L, S, 2, 4, 1, K, dtype=torch.bfloat16)
    kda = roofline.fold_work("kda", f32, None, batch=5, tokens=4, hist=4)
    assert kda == roofline.Work(L * 5 * H * 4 * (5 * V * K + 3 * V), 0)
    assert roofline.fold_work("kda", f32, None, 5, 16, 16).flops == 4 * kda.flops  # stepping: linear in tokens
    assert roofline.fold_work("gdn", f32, None, 5, 4, 4) == kda  # float32 states from a short ring: stepped
    gdn16, gdn32 = (roofline.fold_work("gdn", f32, None, 5, t, t) for t in (9, 16))
    assert gdn16.mma_flops == gdn32.mma_flops  # chunked: the kernel pads the ring to a 16-token tile for its products
    # ... and its mix kernel substitutes one column a ring slot: 9 rank-one steps on the [16, 16] tile, not 16
    assert (gdn16.flops, gdn32.flops) == tuple(L * 5 * H * (V * K + 6 * V * 16 + 2 * 16 * 16 * n) for n in (9, 16))
    b16 = f32.bfloat16()
    short, whole = roofline.fold_work("gdn", b16, k16, 5, 4, 4), roofline.fold_work("gdn", b16, k16, 5, 16, 16)
    assert short.mma_flops == whole.mma_flops and short.flops == L * 5 * H * (V * K + 6 * V * 16 + 2 * 16 * 16 * 4)
    assert roofline.fold_work("gdn", b16, k16, 5, 4, 4).mma_flops < gdn16.mma_flops  # fewer exact bf16 passes
    # a float32 state against a bf16 k ring: S K^T in two tf32 passes (S hi + lo, k exact), X M in tf32x3, W K in three
    # exact bf16 pieces, the gram in one exact pass
    per_head = 2 * 2 * V * K * 16 + 3 * 2 * V * 16 * 16 + 3 * 2 * V * 16 * K + 2 * 16 * 16 * K
    assert roofline.fold_work("gdn", f32, k16, 5, 9, 9).mma_flops == L * 5 * H * per_head
    m = roofline.fold_work("mamba2", f32, None, 5, 3, 4)  # a ring of 4: the CUDA-core form, 3 tokens folded
    assert m == roofline.Work(L * 5 * H * (V * K + 3 * (2 * V * K + K)), 0)  # one program a head: B_t scaled once
    tall = torch.empty(L, S, H, 64, K)  # 16 rows a program for a float32 state: 4 programs a head, each scales B_t
    assert roofline.fold_work("mamba2", tall, None, 5, 3, 4).flops == L * 5 * H * (64 * K + 3 * (2 * 64 * K + 4 * K))
    m = roofline.fold_work("mamba2", f32, None, 5, 4, 9)  # a ring of 9: the tensor-core product over a 16-token tile
    assert m.mma_flops == L * 5 * H * 3 * 2 * V * 16 * K and m.flops == L * 5 * H * (V * K + V * 16)
    B16 = k16  # a bf16 B ring: x w in exact bf16 pieces, three for a float32 state, two for a bf16 one
    assert roofline.fold_work("mamba2", f32, B16, 5, 4, 9).mma_flops == m.mma_flops == 3 * 2 * L * 5 * H * V * 16 * K
    assert roofline.fold_work("mamba2", b16, B16, 5, 4, 9).mma_flops == L * 5 * H * 2 * 2 * V * 16 * K
    assert roofline.fold_work("conv", f32, None, 5, 4, 4) == roofline.Work()


def test_arithmetic_floor_is_the_busier_unit():
    w = roofline.Work(flops=50e6, mma_flops=400e6)  # 1 µs on each unit at 50 / 400 TFLOP/s
    assert roofline.arith_us(w, 50.0, 400.0) == pytest.approx(1.0)
    assert roofline.arith_us(roofline.Work(100e6, 400e6), 50.0, 400.0) == pytest.approx(2.0)
    assert roofline.arith_us(roofline.Work(), None, None) == 0.0  # copies: no arithmetic
    assert roofline.arith_us(w, None, None) is None  # rates unmeasured: unknown, never zero


def test_ring_tokens_default_to_draft_plus_one_and_size_the_rings(tmp_path):
    for args, history in (([], 4), (["--ring-tokens", "6"], 6), (["--draft", "1"], 2)):
        out = tmp_path / "run.json"
        assert main(["bench", TINY_SPEC, "--device", "cpu", "--scheme", "replay", "--batch", "1", "--max-batch", "2",
                     "--reps", "2", "--ops", "replay", *args, "-o", str(out)]) == 0
        data = json.loads(out.read_text())
        assert data["meta"]["runtime"]["history"] == history
        row = next(r for r in data["rows"] if r["op"] == "replay" and r["impl"] == "torch" and r["kind"] == "mamba2")
        assert row["status"] == "ok" and row["pct_roofline"] is None  # no ceiling on the CPU
    assert main(["bench", TINY_SPEC, "--device", "cpu", "--ring-tokens", "3"]) == 2
