"""The roofline `mcache bench` holds each row to: the larger of its memory time (the bytes it must move at the copy
ceiling measured in the same run) and its arithmetic time (the fold's operations, counted from the kernel's own
formulation, at the rates measured in the same run).

Two rates are measured, each with a compute-bound kernel of its own:
- `fma_tflops`: the fp32 FMA rate of the CUDA cores, from `_fma_kernel` (independent chains of `x = x * a + b` in
  registers: no memory traffic but one store per thread);
- `tf32_tflops`: the tensor cores' rate on fp32 operands in tf32, from a large `torch.mm` with tf32 allowed; the folds'
  tensor-core products (`tl.dot`, `tf32x3` = three tf32 passes, or one to three exact bf16 passes) are counted as tf32
  passes at this rate (a bf16 pass runs at about twice it, so their time is, if anything, overstated).

The work of a fold (per layer, request and head; `T` the tokens folded, `CT = max(16, next_pow2(ring length))` the
token tile the kernels pad the ring to, one FMA = 2 FLOPs):
- Mamba2 (`[P, N]` state), CUDA-core form (rings of up to 4 tokens: `mamba2.mamba2_form`): `P*N` (the decay) +
  `T * (2*P*N + P)` (each token's rank-one update and x scaled by its weight); no tensor-core work.
- Mamba2, tensor-core form: CUDA cores `P*N` (the decay) + `P*CT` (x scaled by its weights); tensor cores one
  `[P, CT] x [CT, N]` product, `passes * 2*P*CT*N`: with a 16-bit B ring `x w` in exact 16-bit pieces, 3 for
  a float32 state and 2 for a 16-bit one (`_fold.dot16_pieces`), else 3 (`tf32x3`).
- GatedDeltaNet stepped (float32 states, rings of up to 6 tokens: `gdn.gdn_steps`): as KDA below.
- GatedDeltaNet (`[V, K]` state, chunked): CUDA cores `V*K` (the decay) + `6*V*CT` (the gated residual and the hi/lo
  splits) + the mix kernel's substitution `2*CT^2*R` (a rank-one step a ring slot, R the ring's length); tensor
  cores the mix kernel's gram `2*CT^2*K` and the update's `S K^T` (`2*V*K*CT`), `X M` (`2*V*CT^2`) and `W K`
  (`2*V*CT*K`), each times its passes (`_dot_nt`, `_mixed`, `_plus_wk`).
- KDA (`[V, K]` state, stepping: `step.py`): CUDA cores `5*V*K` per token folded (decay 1, `S k` 2, the rank-one
  update 2) and `3*V` per token (the residual); no tensor-core work.
Copy-like ops do no arithmetic: their roofline is the copy ceiling.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from mcache.kernels._common import next_pow2

FMA_CHAINS = 8  # independent FMA chains per element (latency hidden by the others)
FMA_BLOCK, FMA_WARPS, FMA_PER_SM, FMA_ITERS = 1024, 4, 16, 4096
MM_SIZE = 8192


class Work(NamedTuple):
    """Arithmetic of one op: `flops` on the CUDA cores (fp32), `mma_flops` on the tensor cores (tf32 passes)."""

    flops: int = 0
    mma_flops: int = 0

    def scaled(self, n: int) -> Work:
        return Work(self.flops * n, self.mma_flops * n)


def _tile(hist: int) -> int:
    return max(16, next_pow2(hist))


def fold_work(kind: str, state: torch.Tensor, k: torch.Tensor | None, batch: int, tokens: int, hist: int) -> Work:
    """The arithmetic of folding `tokens` of a ring of `hist` into `batch` requests' states of a `[L, S, H, *state]`
    pool (`k`: the ring whose dtype picks the tensor-core passes, the delta rules' key ring or Mamba2's B ring)."""
    L, H = state.shape[0], state.shape[2]
    ct = _tile(hist)
    if kind == "mamba2" and _mamba2_form(hist) == "fma":
        P, N = state.shape[3], state.shape[4]
        per_head = Work(P * N + tokens * (2 * P * N + N * _mamba2_fma_programs(state.dtype, P, N)), 0)
    elif kind == "mamba2":
        P, N = state.shape[3], state.shape[4]
        passes = (3 if state.dtype == torch.float32 else 2) if _dot16(k) else 3
        per_head = Work(P * N + P * ct, passes * 2 * P * ct * N)
    elif kind == "kda" or (kind == "gdn" and _gdn_steps(state.dtype, hist)):
        V, K = state.shape[3], state.shape[4]
        per_head = Work(tokens * (5 * V * K + 3 * V), 0)
    elif kind == "gdn":
        V, K = state.shape[3], state.shape[4]
        half_k = _dot16(k)
        half_state = state.dtype in (torch.bfloat16, torch.float16)
        # `_dot_nt`: one exact pass when both are the same 16-bit type; a float32 state against 16-bit k (exact in tf32)
        # in two tf32 passes (S hi + lo); else tf32x3
        p_passes = (1 if half_state else 2) if half_k else 3
        wk_passes = (2 if half_state else 3) if half_k else 3  # W as hi + lo (+ lo2), or tf32x3
        gram = 2 * ct * ct * K * (1 if half_k else 3)
        mma = p_passes * 2 * V * K * ct + 3 * 2 * V * ct * ct + wk_passes * 2 * V * ct * K + gram
        per_head = Work(V * K + 6 * V * ct + 2 * ct * ct * hist, mma)
    else:
        return Work()
    return per_head.scaled(L * batch * H)


def _dot16(k: torch.Tensor | None) -> bool:
    """Whether a fold's tensor-core products take its ring `k` as it is, 16-bit (as the kernels do on CUDA)."""
    return k is not None and k.dtype in (torch.bfloat16, torch.float16)


def _mamba2_form(hist: int) -> str:
    from mcache.kernels.replay_fold.mamba2 import mamba2_form  # imports Triton: only for a Mamba2 fold

    return mamba2_form(hist)


def _mamba2_fma_programs(dtype: torch.dtype, P: int, N: int) -> int:
    """Programs a head of the CUDA-core Mamba2 fold takes (each scales the tokens' `B_t` by `w_t` once)."""
    from mcache.kernels.replay_fold.mamba2 import mamba2_config, row_blocks  # imports Triton: only for a Mamba2 fold

    bp, _, rb, _ = mamba2_config("fma", dtype.itemsize, max(16, next_pow2(N)))
    return row_blocks(P, bp, rb)[1]


def _gdn_steps(dtype: torch.dtype, hist: int) -> bool:
    from mcache.kernels.replay_fold.gdn import gdn_steps  # imports Triton: only for a GatedDeltaNet fold

    return gdn_steps(dtype, hist)


def arith_us(work: Work, fma_tflops: float | None, tf32_tflops: float | None) -> float | None:
    """The arithmetic floor (µs): the busier of the two units at its measured rate (they run side by side)."""
    if not work.flops and not work.mma_flops:
        return 0.0
    if not fma_tflops or (work.mma_flops and not tf32_tflops):
        return None
    cuda = work.flops / (fma_tflops * 1e6)
    mma = work.mma_flops / (tf32_tflops * 1e6) if work.mma_flops else 0.0
    return max(cuda, mma)


def _fma_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def fma(out, a, b, iters, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x0 = i.to(tl.float32) * 1e-6
        x1, x2, x3 = x0 + 1.0, x0 + 2.0, x0 + 3.0
        x4, x5, x6, x7 = x0 + 4.0, x0 + 5.0, x0 + 6.0, x0 + 7.0
        for _ in range(iters):  # FMA_CHAINS independent chains of `x = x * a + b`
            x0 = x0 * a + b
            x1 = x1 * a + b
            x2 = x2 * a + b
            x3 = x3 * a + b
            x4 = x4 * a + b
            x5 = x5 * a + b
            x6 = x6 * a + b
            x7 = x7 * a + b
        tl.store(out + i, ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)))

    return fma


_FMA = None


def fma_chains(out: torch.Tensor, a: float, b: float, iters: int, block: int = FMA_BLOCK, warps: int = FMA_WARPS) -> int:
    """Run the FMA kernel over `out` (`block` elements per program); returns the FLOPs it did."""
    global _FMA
    if _FMA is None:
        _FMA = _fma_kernel()
    programs = out.numel() // block
    _FMA[(programs,)](out, a, b, iters, BLOCK=block, num_warps=warps)
    return 2 * FMA_CHAINS * iters * programs * block


def fma_tflops(device: torch.device, reps: int = 10) -> float | None:
    """The CUDA cores' fp32 FMA rate (TFLOP/s), measured with `_fma_kernel` on every SM; None off CUDA."""
    if device.type != "cuda":
        return None
    from mcache.bench.timing import time_op
    from mcache.kernels._common import sm_count

    out = torch.empty(sm_count(device) * FMA_PER_SM * FMA_BLOCK, dtype=torch.float32, device=device)
    flops = fma_chains(out, 0.999, 1e-3, FMA_ITERS)
    t = time_op(lambda: fma_chains(out, 0.999, 1e-3, FMA_ITERS), device, reps=reps, warmup=2, graph=False)
    return flops / (t.median_us * 1e6)


def tf32_tflops(device: torch.device, reps: int = 10) -> float | None:
    """The tensor cores' rate on fp32 operands in tf32 (TFLOP/s), from a `[MM_SIZE]^2` `torch.mm`; None off CUDA."""
    if device.type != "cuda":
        return None
    from mcache.bench.timing import time_op

    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.rand(MM_SIZE, MM_SIZE, device=device, generator=gen)
    b = torch.rand(MM_SIZE, MM_SIZE, device=device, generator=gen)
    out = torch.empty_like(a)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        t = time_op(lambda: torch.mm(a, b, out=out), device, reps=reps, warmup=2, graph=False)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return 2 * MM_SIZE**3 / (t.median_us * 1e6)
