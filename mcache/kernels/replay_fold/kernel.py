"""Triton replay folds: fold `count[b]` ring tokens into the checkpoint state, reading and writing it once.

- Mamba2 (scalar decay per head) is linear in `h`, so all tokens fold in closed form with small matrix
  products on the tensor cores (fp32 operands, `tf32x3`: about fp32 accuracy):
  `h_c = exp(sum dA) h_0 + (x * w)^T B` with `w_t = dt_t exp(sum_{s>t} dA_s)`, one `[P, c] x [c, N]` product
  per head.
- GatedDeltaNet (scalar gate per head) folds in chunked form with the cumulative log-gates `G` (`e^{G_c}` the
  whole chunk's decay), in two launches. First one warp per (layer, request, head) computes the `[CT, CT]` mix
  matrix `M = diag(beta) (I + U)^{-1} diag(e^{G_c - G})`, `U[t, s] = beta_s e^{G_s - G_t} k_t.k_s` (s > t), by a
  forward substitution: it depends on the ring only. Then the update of each block of rows of the state is
  substitution-free: `P = S K^T`, `W = (V^T - P e^G) M`, `S' = e^{G_c} S + W K`, the large products on the
  tensor cores (16-bit k: exact products with a bf16 hi + lo split of `W`; otherwise `tf32x3`), the product with
  M as three exact bf16 passes for 16-bit states (`tf32x3` otherwise). For 16-bit states on Hopper the update
  is persistent and moves its tiles by TMA while the pipeliner loads the next units' rings; it launches with
  PDL, so it starts while the mix kernel finishes. On an H200 the Qwen3-Next replay op is 2.3-2.7x faster
  than with row stepping (batch 1-64).
- KDA (a gate per K channel) steps: every row `S[v, :]` of the state evolves on its own (it needs only
  `v[v]`, k, the gate and beta), so a program holds a few rows in registers and steps through the tokens, the
  next tokens' rings loading while one is applied. (Its chunked form needs `e^{G_t - G_s}` per channel and token
  pair, a `[CT, CT, K]` contraction off the tensor cores; split as `e^{G_t} e^{-G_s}` it overflows for strong gates.)

Tokens past `count` are loaded as zeros (k, v, beta, x, dt, dA, g = 0), which makes them identity steps.
Offsets are int64; `[L, S, ...]` dims 0/1 of the state and dims 0..3 of the ring tensors may have any strides.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from .._blocks import unit_of
from .._common import FLOAT_DTYPES, check_ranges, fail, indices_on, lead_strides, next_pow2, same_device, sm_count, state_numel
from .._launch import Launch, Plan

PRECISION = "tf32x3"
HALF = (torch.bfloat16, torch.float16)  # 16-bit states and rings
# `(BV rows of V per program, num_warps)` of the GatedDeltaNet update: 64 rows on four warps (one warpgroup
# product) was the fastest of BV 32..128 on 1..8 warps on an H200 for `[32, 128, 128]` states, bf16 and f32.
GDN_CONFIG = (64, 4)
# The persistent TMA form: three programs per SM were the fastest of 2..5 on an H200 for bf16 `[32, 128, 128]` states
# (float32 states run faster in the pointer form). Five stages: Triton 3.6 gives the state tile two shared-memory
# buffers from five stages on (one at 2..4), so the next tile loads during this one's products; 1-2 points faster at
# batch 1 than three stages, within half a point from batch 8 up.
GDN_TMA_PER_SM = 3
GDN_TMA_STAGES = 5
# `(channels per program, num_warps)` of the conv-window fold: 512 channels on two warps was the fastest of 256..2048
# channels on 2..8 warps on an H200 for the Qwen3-Next and Nemotron-H windows (85-96% of the size-matched copy with
# 16 new tokens, 65-88% with 2, where the old columns are read too). Folded in a state kernel's launch, the window
# takes the same channels per warp on that kernel's warps.
CONV_CONFIG = (512, 2)
# `(BV rows of V per program, num_warps)` of the KDA fold and the pipeline stages of its token loop (the next
# tokens' k and gates load while this one is applied): 16 rows on one warp, 3 stages were the fastest of BV 8..64
# on 1..4 warps and 1..6 stages on an H200 for Kimi-Linear's `[32, 128, 128]` states (float32: 40-41% of the
# size-matched copy against 30-32% for 32 rows unpipelined; bfloat16: 30-37% against 27-32%).
KDA_CONFIG = (16, 1)
KDA_STAGES = 3


def mamba2_config(P: int, bn: int) -> tuple[int, int]:
    """`(BP, num_warps)`: 16 rows of P (2048 states at N = 128) on two warps, the fastest of a sweep over
    BP 8..64 and 2..8 warps on an H200 for the Nemotron-H-8B state (84-88% of the size-matched copy at
    batch 1-64, against 78-81% for 32 rows on four warps)."""
    return max(16, min(next_pow2(P), 2048 // bn)), 2


def gdn_max_registers(dtype: torch.dtype) -> int | None:
    """Register cap of the GatedDeltaNet update in the pointer form: 96 for 16-bit states (five programs per SM
    instead of four: 70-71% of the size-matched copy against 64-67% on an H200); none for float32 states."""
    return 96 if dtype in HALF else None


@triton.jit
def _ring_base(ptr, s0, s1, s2, layer, slot, r):
    return ptr + (layer * s0 + slot * s1 + r * s2)


@triton.jit
def _head_of(u, NBLK, H, NB):
    """`(block, head, request, layer)` of unit `u` of the units `(layer, request, head, block)`, block
    fastest; all int32."""
    h, b, layer = unit_of(u // NBLK, H, NB)
    return u % NBLK, h, b, layer


@triton.jit
def _head_unit(NBLK, H, NB):
    """`_head_of` this program, head and layer int64 (they scale strides)."""
    blk, h, b, layer = _head_of(tl.program_id(0), NBLK, H, NB)
    return blk, h.to(tl.int64), b, layer.to(tl.int64)


@triton.jit
def _mamba2_kernel(
    ssm, ss0, ss1,
    x, xs0, xs1, xs2, xs3,
    Bm, bs0, bs1, bs2, bs3,
    dt, ts0, ts1, ts2, ts3,
    dA, as0, as1, as2, as3,
    slots, bufs, counts,
    NB, H, P, N, HPG, NPB,
    conv, cs0, cs1, cin, is0, is1, is2, is3, C, NCB, NU,
    BP: tl.constexpr, BN: tl.constexpr, CP: tl.constexpr, PREC: tl.constexpr, EVEN: tl.constexpr,
    CONV: tl.constexpr = False, KM1: tl.constexpr = 1, BJ: tl.constexpr = 1, BC: tl.constexpr = 1, BLOCK: tl.constexpr = 1,
):  # fmt: skip
    # Programs NU.. fold the conv window (`_conv_kernel`). CONV is a constexpr tested on its own, so that a launch
    # without a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            _conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
    pb, h, b, layer = _head_unit(NPB, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        p = pb * BP + tl.arange(0, BP)
        n = tl.arange(0, BN)
        sm = (p[:, None] < P) & (n[None, :] < N)
        # One int64 base per head and int32 offsets inside it: a tile of 64-bit pointers kept live from the
        # load to the store costs registers, and registers bound how many programs keep loads in flight.
        sbase = ssm + (layer * ss0 + slot * ss1 + h * P * N)
        soff = p[:, None] * N + n[None, :]
        # The state load goes first so that its latency overlaps the ring loads and the product.
        if EVEN:
            h0 = tl.load(sbase + soff, eviction_policy="evict_first")
        else:
            h0 = tl.load(sbase + soff, mask=sm, other=0.0, eviction_policy="evict_first")
        t = tl.arange(0, CP)
        tm = t < c
        dav = tl.load(_ring_base(dA, as0, as1, as2, layer, slot, r) + t * as3 + h, mask=tm, other=0.0).to(tl.float32)
        dtv = tl.load(_ring_base(dt, ts0, ts1, ts2, layer, slot, r) + t * ts3 + h, mask=tm, other=0.0).to(tl.float32)
        total = tl.sum(dav, 0)
        w = dtv * tl.exp(total - tl.cumsum(dav, 0))  # dt_t * exp(sum of dA after t)
        xb = _ring_base(x, xs0, xs1, xs2, layer, slot, r) + h * P
        xt = tl.load(xb + t[None, :] * xs3 + p[:, None], mask=tm[None, :] & (p[:, None] < P), other=0.0)
        bb = _ring_base(Bm, bs0, bs1, bs2, layer, slot, r) + (h // HPG) * N
        bt = tl.load(bb + t[:, None] * bs3 + n[None, :], mask=tm[:, None] & (n[None, :] < N), other=0.0)
        xw = xt.to(tl.float32) * w[None, :]  # [BP, CP]
        h1 = tl.dot(xw, bt.to(tl.float32), acc=h0.to(tl.float32) * tl.exp(total), input_precision=PREC)  # [BP, BN]
        if EVEN:
            tl.store(sbase + soff, h1.to(ssm.dtype.element_ty))
        else:
            tl.store(sbase + soff, h1.to(ssm.dtype.element_ty), mask=sm)


@triton.jit
def _dot_nt(a, b, DOT16: tl.constexpr):
    """`a @ b^T` in fp32: one pass when both are the same 16-bit type (exact products), else `tf32x3`."""
    if DOT16 and a.dtype == b.dtype:
        out = tl.dot(a, tl.trans(b))
    else:
        out = tl.dot(a.to(tl.float32), tl.trans(b.to(tl.float32)), input_precision="tf32x3")
    return out


@triton.jit
def _gdn_mix_kernel(
    k, ks0, ks1, ks2, ks3,
    g, gs0, gs1, gs2, gs3,
    beta, es0, es1, es2, es3,
    slots, bufs, counts, mix,
    NB, H, K, HPG,
    conv, cs0, cs1, cin, is0, is1, is2, is3, C, NCB, NU,
    BK: tl.constexpr, CT: tl.constexpr, DOT16: tl.constexpr, PDL: tl.constexpr,
    CONV: tl.constexpr = False, KM1: tl.constexpr = 1, BJ: tl.constexpr = 1, BC: tl.constexpr = 1, BLOCK: tl.constexpr = 1,
):  # fmt: skip
    # One program (one warp) per (layer, request, head): M = diag(beta) (I + U)^{-1} diag(e^{G_c - G}), the
    # forward substitution X (I + U) = diag(beta) done column by column on the [CT, CT] tile.
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()  # the update kernel may launch now; it waits for M before reading it
    # Programs NU.. fold the conv window (`_conv_kernel`). CONV is a constexpr tested on its own, so that a launch
    # without a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            _conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
    _, h, b, layer = _head_unit(1, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        kk = tl.arange(0, BK)
        t = tl.arange(0, CT)
        tm = t < c
        kb = _ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K
        kt = tl.load(kb + t[:, None] * ks3 + kk[None, :], mask=tm[:, None] & (kk[None, :] < K), other=0.0)  # [CT, BK]
        gt = tl.load(_ring_base(g, gs0, gs1, gs2, layer, slot, r) + t * gs3 + h, mask=tm, other=0.0).to(tl.float32)
        bt = tl.load(_ring_base(beta, es0, es1, es2, layer, slot, r) + t * es3 + h, mask=tm, other=0.0).to(tl.float32)
        G = tl.cumsum(gt, 0)
        gram = _dot_nt(kt, kt, DOT16)
        # u[t, s] = U[t, s] = beta_s e^{G_s - G_t} k_t.k_s for s > t
        later = t[None, :] > t[:, None]
        u = tl.where(later, bt[None, :] * tl.exp(tl.where(later, G[None, :] - G[:, None], 0.0)) * gram, 0.0)
        # The substitution needs row j of u broadcast over the rows at step j. U goes through this head's output
        # slot, so that each row is a load off the dependency chain rather than a cross-lane sum: 80 shuffles per
        # head instead of 224, the mix kernel 5% faster on an H200 (results/kernel_experiments.md).
        mb = mix + ((layer * NB + b) * H + h) * (CT * CT)
        tl.store(mb + t[:, None] * CT + t[None, :], u)
        tl.debug_barrier()  # every lane's part of u is visible to the others
        x = tl.where(t[:, None] == t[None, :], bt[:, None], 0.0)
        for j in tl.static_range(CT):  # column j is final: take it out of the later columns
            xj = tl.sum(tl.where(t[None, :] == j, x, 0.0), 1)
            x = x - xj[:, None] * tl.load(mb + j * CT + t[None, :] + 0 * t[:, None])
        tl.debug_barrier()  # every lane has read u before M overwrites it
        tl.store(mb + t[:, None] * CT + t[None, :], x * tl.exp(tl.sum(gt, 0) - G)[None, :])


@triton.jit
def _gdn_rings(
    k, ks0, ks1, ks2, ks3, v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3,
    layer, slot, r, h, vv, t, c, V, K, HPG, BK: tl.constexpr,
):  # fmt: skip
    """One head's ring rows for the update: k `[CT, BK]`, V^T `[BV, CT]` and the log-gates `[CT]` (both fp32);
    tokens past `c`, rows past V and channels past K load as zeros."""
    kk = tl.arange(0, BK)
    tm = t < c
    kb = _ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K
    kt = tl.load(kb + t[:, None] * ks3 + kk[None, :], mask=tm[:, None] & (kk[None, :] < K), other=0.0)
    vbase = _ring_base(v, vs0, vs1, vs2, layer, slot, r) + h * V
    vT = tl.load(vbase + t[None, :] * vs3 + vv[:, None], mask=tm[None, :] & (vv[:, None] < V), other=0.0).to(tl.float32)
    gt = tl.load(_ring_base(g, gs0, gs1, gs2, layer, slot, r) + t * gs3 + h, mask=tm, other=0.0).to(tl.float32)
    return kt, vT, gt


@triton.jit
def _gdn_update(s, kt, vT, gt, m, DOT16: tl.constexpr):
    """One tile's fold: `S' = e^{G_c} S + ((V^T - (S K^T) e^G) M) K` for s `[BV, BK]`, kt `[CT, BK]`,
    vT `[BV, CT]` (fp32), gt `[CT]` log-gates (fp32) and M `[CT, CT]` (fp32); returns S' in fp32."""
    pT = _dot_nt(s, kt, DOT16)  # [BV, CT]
    x = vT - pT * tl.exp(tl.cumsum(gt, 0))[None, :]
    if DOT16 and s.dtype != tl.float32:  # bf16 hi + lo of both: 3 exact-product passes, far below 16-bit rounding
        xh = x.to(tl.bfloat16)
        xl = (x - xh.to(tl.float32)).to(tl.bfloat16)
        mh = m.to(tl.bfloat16)
        w = tl.dot(xh, mh)
        w = tl.dot(xh, (m - mh.to(tl.float32)).to(tl.bfloat16), acc=w)
        w = tl.dot(xl, mh, acc=w)
    else:
        w = tl.dot(x, m, input_precision="tf32x3")
    acc = s.to(tl.float32) * tl.exp(tl.sum(gt, 0))
    if DOT16:  # W as 16-bit hi + lo (+ lo2 for float32 states): about fp32 accuracy on exact k
        hi = w.to(kt.dtype)
        lo = w - hi.to(tl.float32)
        acc = tl.dot(hi, kt, acc=acc)
        acc = tl.dot(lo.to(kt.dtype), kt, acc=acc)
        if s.dtype == tl.float32:
            acc = tl.dot((lo - lo.to(kt.dtype).to(tl.float32)).to(kt.dtype), kt, acc=acc)
    else:
        acc = tl.dot(w, kt.to(tl.float32), acc=acc, input_precision="tf32x3")
    return acc


@triton.jit
def _gdn_kernel(
    ssm, ss0, ss1,
    k, ks0, ks1, ks2, ks3,
    v, vs0, vs1, vs2, vs3,
    g, gs0, gs1, gs2, gs3,
    slots, bufs, counts, mix,
    NB, H, V, K, HPG, NVB,
    BV: tl.constexpr, BK: tl.constexpr, CT: tl.constexpr, DOT16: tl.constexpr, EVEN: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    # One program folds BV rows of V of one head (pointer form).
    vb, h, b, layer = _head_unit(NVB, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        kk = tl.arange(0, BK)
        vv = vb * BV + tl.arange(0, BV)
        sbase = ssm + (layer * ss0 + slot * ss1 + h * V * K)
        soff = vv[:, None] * K + kk[None, :]
        sm = (vv[:, None] < V) & (kk[None, :] < K)
        s = tl.load(sbase + soff) if EVEN else tl.load(sbase + soff, mask=sm, other=0.0)
        t = tl.arange(0, CT)
        kt, vT, gt = _gdn_rings(
            k, ks0, ks1, ks2, ks3, v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3, layer, slot, r, h, vv, t, c, V, K, HPG, BK
        )
        if PDL:
            tl.extra.cuda.gdc_wait()  # M comes from the mix kernel, which may still be running
        m = tl.load(mix + ((layer * NB + b) * H + h) * (CT * CT) + t[:, None] * CT + t[None, :])
        acc = _gdn_update(s, kt, vT, gt, m, DOT16)
        if EVEN:
            tl.store(sbase + soff, acc.to(ssm.dtype.element_ty))
        else:
            tl.store(sbase + soff, acc.to(ssm.dtype.element_ty), mask=sm)


@triton.jit
def _gdn_tma_kernel(
    sd,
    k, ks0, ks1, ks2, ks3,
    v, vs0, vs1, vs2, vs3,
    g, gs0, gs1, gs2, gs3,
    slots, bufs, counts, mix,
    NB, NU, S,
    H: tl.constexpr, V: tl.constexpr, K: tl.constexpr, HPG: tl.constexpr, NVB: tl.constexpr,
    BV: tl.constexpr, BK: tl.constexpr, CT: tl.constexpr, DOT16: tl.constexpr, PDL: tl.constexpr, STAGES: tl.constexpr,
):  # fmt: skip
    # Persistent over units (layer, request, head, V block); state tiles move by TMA, and the pipeliner loads
    # the next units' rings and M while this one is folded. A request with nothing to fold gets the slot
    # coordinate S, out of bounds: the tile loads as zeros and its store is dropped. The head dims are
    # compile-time constants: the unit decode runs every iteration, and a division by a run-time value costs
    # about 20 instructions (the decode was a quarter of the loop's instructions with H, HPG and NVB run-time).
    t = tl.arange(0, CT)
    if PDL:
        tl.extra.cuda.gdc_wait()
    for u in tl.range(tl.program_id(0), NU, tl.num_programs(0), num_stages=STAGES):
        vb, h, b, layer = _head_of(u, NVB, H, NB)  # int32: TMA coordinates
        hr = u // NVB  # (layer, request, head)
        c = tl.load(counts + b).to(tl.int32)
        slot = tl.load(slots + b)
        r = tl.load(bufs + b).to(tl.int64)
        ts = tl.where(c > 0, slot.to(tl.int32), S)
        s = sd.load([layer, ts, h, vb * BV, 0]).reshape(BV, BK)
        kt, vT, gt = _gdn_rings(
            k, ks0, ks1, ks2, ks3, v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3,
            layer.to(tl.int64), slot, r, h, vb * BV + tl.arange(0, BV), t, c, V, K, HPG, BK,
        )  # fmt: skip
        m = tl.load(mix + hr.to(tl.int64) * (CT * CT) + t[:, None] * CT + t[None, :], mask=(t < c)[:, None], other=0.0)
        acc = _gdn_update(s, kt, vT, gt, m, DOT16)
        sd.store([layer, ts, h, vb * BV, 0], acc.to(s.dtype).reshape(1, 1, 1, BV, BK))


@triton.jit
def _kda_kernel(
    ssm, ss0, ss1,
    k, ks0, ks1, ks2, ks3,
    v, vs0, vs1, vs2, vs3,
    g, gs0, gs1, gs2, gs3,
    beta, es0, es1, es2, es3,
    slots, bufs, counts,
    NB, H, V, K, HPG, NVB,
    conv, cs0, cs1, cin, is0, is1, is2, is3, C, NCB, NU,
    BV: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr,
    CONV: tl.constexpr = False, KM1: tl.constexpr = 1, BJ: tl.constexpr = 1, BC: tl.constexpr = 1, BLOCK: tl.constexpr = 1,
):  # fmt: skip
    # Programs NU.. fold the conv window (`_conv_kernel`). CONV is a constexpr tested on its own, so that a launch
    # without a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            _conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
    # Rows of the state are independent under the delta rule (`S[v, :]` needs only `v[v]`, k, g and beta),
    # so a program keeps BV rows in registers and steps through the tokens: one read, one write.
    vb, h, b, layer = _head_unit(NVB, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        kk = tl.arange(0, BK)
        km = kk < K
        vv = vb * BV + tl.arange(0, BV)
        vm = vv < V
        sp = ssm + (layer * ss0 + slot * ss1) + (h * V + vv[:, None]) * K + kk[None, :]
        sm = vm[:, None] & km[None, :]
        s = tl.load(sp, mask=sm, other=0.0).to(tl.float32)  # [BV, BK]
        kb = _ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K + kk
        vbase = _ring_base(v, vs0, vs1, vs2, layer, slot, r) + h * V + vv
        gb = _ring_base(g, gs0, gs1, gs2, layer, slot, r) + h * K + kk
        eb = _ring_base(beta, es0, es1, es2, layer, slot, r) + h
        for t in tl.range(0, c, num_stages=STAGES):
            kt = tl.load(kb + t * ks3, mask=km, other=0.0).to(tl.float32)
            vt = tl.load(vbase + t * vs3, mask=vm, other=0.0).to(tl.float32)
            bt = tl.load(eb + t * es3).to(tl.float32)
            s = s * tl.exp(tl.load(gb + t * gs3, mask=km, other=0.0).to(tl.float32))[None, :]
            u = bt * (vt - tl.sum(s * kt[None, :], 1))  # [BV]: beta (v - S k)
            s = s + u[:, None] * kt[None, :]
        tl.store(sp, s.to(ssm.dtype.element_ty), mask=sm)


@triton.jit
def _conv_fold(
    conv, cs0, cs1,
    cin, is0, is1, is2, is3,
    slots, bufs, counts,
    u, NB, C, NCB,
    KM1: tl.constexpr, BJ: tl.constexpr, BC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Unit `u` of the conv-window fold: BC channels of one (layer, request), as `[BJ window columns, BC channels]`
    rows. The ring tokens load contiguously along the channels, and the rows are stored transposed (the window's
    time axis is its fastest)."""
    cb, b, layer = unit_of(u, NCB, NB)  # requests inner: the order it was tuned in
    layer = layer.to(tl.int64)
    c = tl.load(counts + b).to(tl.int32)
    slot = tl.load(slots + b).to(tl.int64)
    r = tl.load(bufs + b).to(tl.int64)
    if c > 0:
        lc = tl.arange(0, BC)
        ch = cb * BC + lc
        j = tl.arange(0, BJ)
        tok = c + j - KM1  # window column j is token tok, or old column j + c when tok < 0
        m = (j < KM1)[:, None] & (ch < C)[None, :]
        ib = _ring_base(cin, is0, is1, is2, layer, slot, r)
        rows = tl.load(ib + tok[:, None].to(tl.int64) * is3 + ch[None, :], mask=m & (tok >= 0)[:, None], other=0.0)
        rows = rows.to(conv.dtype.element_ty)
        cp = conv + (layer * cs0 + slot * cs1)
        if c < KM1:  # fewer new tokens than the window: old columns c.. shift left
            # The program's block of the old window loads contiguously; a gather in shared memory picks the columns.
            f = tl.arange(0, BLOCK)
            win = tl.load(cp + cb * (BC * KM1) + f, mask=f < tl.minimum(BC, C - cb * BC) * KM1, other=0.0)
            idx = tl.where(m & (tok < 0)[:, None], lc[None, :] * KM1 + (j + c)[:, None], 0)
            rows = tl.where((tok < 0)[:, None], tl.gather(win, tl.reshape(idx, [BJ * BC]), axis=0).reshape(BJ, BC), rows)
            tl.debug_barrier()  # every old column is read before any is overwritten (threads share a channel)
        tl.store(cp + ch[:, None] * KM1 + j[None, :], tl.trans(rows), mask=tl.trans(m))


@triton.jit
def _conv_kernel(
    slots, bufs, counts, NB,
    conv, cs0, cs1, cin, is0, is1, is2, is3, C, NCB,
    KM1: tl.constexpr, BJ: tl.constexpr, BC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    # The conv window alone (a short-conv kind); the state kernels take it as their trailing programs (`CONV`).
    _conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0), NB, C, NCB, KM1, BJ, BC, BLOCK)


def _float(name: str, t: torch.Tensor) -> None:
    """States and ring inputs are float32, bfloat16 or float16."""
    if t.dtype not in FLOAT_DTYPES:
        fail(f"{name}: expected float32/bfloat16/float16, got {t.dtype}")


def _ring(name: str, t: torch.Tensor, L: int, S: int, tail: tuple[int, ...]) -> tuple[int, int]:
    """Check a ring tensor `[L, S, NBUF, Hist, *tail]`; returns `(NBUF, Hist)`."""
    _float(name, t)
    if t.dim() != 4 + len(tail) or tuple(t.shape[:2]) != (L, S) or tuple(t.shape[4:]) != tail:
        fail(f"{name}: expected [L={L}, S={S}, 2, Hist, {', '.join(map(str, tail))}], got {tuple(t.shape)}")
    state_numel(t, 4, name)
    return t.shape[2], t.shape[3]


def _rings(L: int, S: int, *rings: tuple[str, torch.Tensor, tuple[int, ...]]) -> tuple[int, int]:
    """Check ring tensors `(name, t, tail)` (see `_ring`) with the ring dims of the first; returns `(NBUF, Hist)`."""
    first, t0, tail0 = rings[0]
    dims = _ring(first, t0, L, S, tail0)
    for name, t, tail in rings[1:]:
        if _ring(name, t, L, S, tail) != dims:
            fail(f"{name}: ring dims {tuple(t.shape[2:4])} differ from {first}'s {dims}")
    return dims


def _groups(name: str, t: torch.Tensor, H: int, group: str, dim: str) -> int:
    """Head groups of a grouped ring tensor `[L, S, 2, Hist, groups, dim]`; they must divide the H heads."""
    if t.dim() != 6 or t.shape[-2] < 1 or H % t.shape[-2]:
        fail(f"{name}: expected [L, S, 2, Hist, {group}, {dim}] with H={H} divisible by {group}, got {tuple(t.shape)}")
    return t.shape[-2]


def _state(name: str, t: torch.Tensor, ndim: int) -> None:
    _float(name, t)
    if t.dim() != ndim:
        fail(f"{name}: expected {ndim} dims, got shape {tuple(t.shape)}")
    state_numel(t, 2, name)


class _ConvWindow:
    """The conv-window fold of a `[L, S, C, K-1]` window and its conv-input ring, `channels` per program: the
    trailing arguments of `_conv_kernel` and of the state kernels (from `conv`), and their constexprs."""

    def __init__(self, conv: torch.Tensor, conv_in: torch.Tensor, channels: int):
        _state("conv", conv, 4)
        L, S, C, km1 = conv.shape
        self.device = same_device(conv=conv, conv_in=conv_in)
        self.L, self.S = L, S
        self.nbuf, self.hist = _rings(L, S, ("conv_in", conv_in, (C,)))
        bc = min(next_pow2(channels), next_pow2(C))
        self.ncb = triton.cdiv(C, bc)
        self.empty = conv.numel() == 0
        self.args = (conv, *lead_strides(conv, 2), conv_in, *lead_strides(conv_in, 4), C, self.ncb)
        self.constexprs = dict(KM1=km1, BJ=next_pow2(km1), BC=bc, BLOCK=next_pow2(bc * km1))

    def programs(self, nb: int) -> int:
        return self.L * nb * self.ncb


_NO_WINDOW = (None,) * 8 + (0, 0)  # the conv arguments of a state kernel launched without a window


class _FoldPlan(Plan):
    """A fold bound to its state pool and ring tensors: `plan(slots, buf, count)` launches with no host-side
    work but the launches (index vectors on the pools' device, int32 or int64, ranges not checked; see `check`).
    Subclasses check their tensors in `__init__` (setting `S`, `nbuf`, `hist`, `empty`) and `build` a batch's
    launches. A state's plan may also fold the kind's conv window (`fold_window`)."""

    def __init__(self, device: torch.device, S: int, nbuf: int, hist: int):
        super().__init__()
        self.device, self.S, self.nbuf, self.hist = device, S, nbuf, hist
        self.window: _ConvWindow | None = None

    def fold_window(self, conv: tuple[torch.Tensor, torch.Tensor] | None, L: int, warps: int) -> None:
        """Fold the conv window `conv = (window, conv_in)` (None: none) in the state kernel's launch, as its
        trailing programs on the kernel's `warps` (a launch costs the host as much as a small kernel costs the
        device). The window must have the state's `L` layers, slots and ring dims."""
        if conv is None:
            return
        window = _ConvWindow(*conv, channels=CONV_CONFIG[0] // CONV_CONFIG[1] * warps)
        if window.device != self.device:
            fail(f"all tensors must be on one device: conv is on {window.device}, expected {self.device}")
        if (window.L, window.S, window.nbuf, window.hist) != (L, self.S, self.nbuf, self.hist):
            fail(f"conv: the window's layers, slots and ring dims {(window.L, window.S, window.nbuf, window.hist)} "
                 f"differ from the state's {(L, self.S, self.nbuf, self.hist)}")
        self.window = window

    def with_window(self, programs: int, nb: int, args: tuple, constexprs: dict) -> tuple[int, tuple, dict]:
        """`(grid, args, constexprs)` of a state kernel's launch over `programs` state programs with its trailing
        conv arguments: the window's programs after the state's when this plan folds one."""
        if self.window is None:
            return programs, (*args, *_NO_WINDOW, programs), constexprs
        w = self.window
        return programs + w.programs(nb), (*args, *w.args, programs), {**constexprs, "CONV": True, **w.constexprs}

    def __call__(self, slots: torch.Tensor, buf: torch.Tensor, count: torch.Tensor) -> None:
        for launch in self.launches((0 if self.empty else slots.shape[0], slots.dtype, buf.dtype, count.dtype)):
            launch.run(slots, buf, count)

    def check(self, slots: torch.Tensor, buf: torch.Tensor, count: torch.Tensor) -> None:
        """Slots, ring buffers and counts within the pools (one synchronization)."""
        check_ranges([("slots", slots, 0, self.S), ("buf", buf, 0, self.nbuf), ("count", count, 0, self.hist + 1)])


def _run_fold(plan: _FoldPlan, slots, buf, count, check: bool) -> None:
    """Move the index vectors to the plan's device, check them when `check`, and run the plan once."""
    slots, buf, count = indices_on(plan.device, ("slots", slots), ("buf", buf), ("count", count))
    if check:
        plan.check(slots, buf, count)
    plan(slots, buf, count)


class Mamba2FoldPlan(_FoldPlan):
    """The Mamba2 fold of a bound `[L, S, H, P, N]` state and its x, B, dt, dA rings (and, with `conv`, the conv
    window: `fold_window`), in one launch; `config` = `(BP rows of P per program, num_warps)`."""

    def __init__(self, ssm, x, B, dt, dA, *, conv=None, config: tuple[int, int] | None = None):
        _state("ssm", ssm, 5)
        L, S, H, P, N = ssm.shape
        dev = same_device(ssm=ssm, x=x, B=B, dt=dt, dA=dA)
        G = _groups("B", B, H, "G", "N")
        nbuf, hist = _rings(L, S, ("x", x, (H, P)), ("B", B, (G, N)), ("dt", dt, (H,)), ("dA", dA, (H,)))
        bn = max(16, next_pow2(N))
        bp, self.warps = config or mamba2_config(P, bn)
        super().__init__(dev, S, nbuf, hist)
        self.fold_window(conv, L, self.warps)
        self.empty = ssm.numel() == 0
        self.npb = triton.cdiv(P, bp)
        self.units = L * H * self.npb
        self.args = (ssm, *lead_strides(ssm, 2), *_rings_with_strides(x, B, dt, dA))
        self.dims = (H, P, N, H // G, self.npb)
        self.constexprs = dict(BP=bp, BN=bn, CP=max(16, next_pow2(hist)), PREC=PRECISION, EVEN=P % bp == 0 and bn == N)

    def build(self, nb: int) -> tuple[Launch, ...]:
        n = len(self.args)
        grid, args, consts = self.with_window(self.units * nb, nb, (*self.args, None, None, None, nb, *self.dims), self.constexprs)
        return (Launch(_mamba2_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=self.warps),)


class GdnFoldPlan(_FoldPlan):
    """The GatedDeltaNet fold of a bound `[L, S, H, V, K]` state and its k, v, g, beta rings, in two launches:
    the `[CT, CT]` mix matrix M of every (layer, request, head) (and the conv window, if given), then the update
    of the state tiles, either persistent with TMA (`form="tma"`, the default where `gdn_tma_fits`) or one
    program per tile (`form="pointer"`). `config` = `(BV rows of V per program, at least 16; num_warps)`. M's
    scratch is allocated once per batch size."""

    def __init__(self, ssm, k, v, g, beta, *, conv=None, config: tuple[int, int] | None = None, form: str | None = None):
        (L, H, V, K, hpg, hist, nbuf, S), dev = _delta_args(ssm, k, v, g, beta, per_channel=False)
        super().__init__(dev, S, nbuf, hist)
        self.fold_window(conv, L, 1)  # in the mix kernel's launch: one warp
        if form not in (None, "tma", "pointer"):
            fail(f"form: expected 'tma' or 'pointer', got {form!r}")
        if form == "tma" and not _tma_aligned(ssm):
            fail(f"ssm: form='tma' needs a 16-byte aligned base and strides, got strides {ssm.stride()} of {ssm.dtype}")
        self.empty = ssm.numel() == 0
        self.ssm, self.L, self.H, self.V, self.K, self.hpg = ssm, L, H, V, K, hpg
        self.bk, self.ct = max(16, next_pow2(K)), max(16, next_pow2(hist))
        self.dot16, self.pdl = ssm.is_cuda and k.dtype in HALF, _hopper(ssm)  # PDL: the update launches while M is computed
        self.bv, self.warps = config or GDN_CONFIG
        self.nvb = triton.cdiv(V, self.bv)
        self.tma = form == "tma" or (form is None and gdn_tma_fits(ssm, k))
        self.mix_rings = _rings_with_strides(k, g, beta)
        self.rings = _rings_with_strides(k, v, g)
        if self.tma and not self.empty:
            self.desc = TensorDescriptor(ssm, list(ssm.shape), list(ssm.stride()), [1, 1, 1, self.bv, self.bk])

    def build(self, nb: int) -> tuple[Launch, ...]:
        L, H = self.L, self.H
        mix = torch.empty(L * nb * H * self.ct * self.ct, device=self.device, dtype=torch.float32)
        n = len(self.mix_rings)
        grid, args, consts = self.with_window(L * nb * H, nb, (*self.mix_rings, None, None, None, mix, nb, H, self.K, self.hpg),
                                              dict(BK=self.bk, CT=self.ct, DOT16=self.dot16, PDL=self.pdl))
        first = Launch(_gdn_mix_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=1)
        opts = dict(num_warps=self.warps, **({"launch_pdl": True} if self.pdl else {}))
        consts = dict(BV=self.bv, BK=self.bk, CT=self.ct, DOT16=self.dot16, PDL=self.pdl)
        if self.tma:
            nu = L * nb * H * self.nvb
            programs = GDN_TMA_PER_SM * sm_count(self.device) if self.device.type == "cuda" else 3
            n = 1 + len(self.rings)
            args = (self.desc, *self.rings, None, None, None, mix, nb, nu, self.ssm.shape[1])
            consts.update(H=H, V=self.V, K=self.K, HPG=self.hpg, NVB=self.nvb, STAGES=GDN_TMA_STAGES)
            second = Launch(_gdn_tma_kernel, min(nu, programs), args, (n, n + 1, n + 2), consts, **opts)
        else:
            cap = gdn_max_registers(self.ssm.dtype)
            n = 3 + len(self.rings)
            args = (self.ssm, *lead_strides(self.ssm, 2), *self.rings, None, None, None, mix, nb, H, self.V, self.K, self.hpg, self.nvb)
            consts.update(EVEN=self.V % self.bv == 0 and self.bk == self.K)
            second = Launch(_gdn_kernel, L * nb * H * self.nvb, args, (n, n + 1, n + 2), consts, **opts,
                            **({"maxnreg": cap} if cap else {}))
        return first, second


class KdaFoldPlan(_FoldPlan):
    """The KDA fold of a bound `[L, S, H, V, K]` state and its k, v, g (per channel), beta rings (and, with
    `conv`, the conv window: `fold_window`), in one launch; `config` = `(BV rows of V per program, num_warps)`."""

    def __init__(self, ssm, k, v, g, beta, *, conv=None, config: tuple[int, int] | None = None):
        (L, H, V, K, hpg, hist, nbuf, S), dev = _delta_args(ssm, k, v, g, beta, per_channel=True)
        bv, self.warps = config or KDA_CONFIG
        super().__init__(dev, S, nbuf, hist)
        self.fold_window(conv, L, self.warps)
        self.empty = ssm.numel() == 0
        nvb = triton.cdiv(V, bv)
        self.units = L * H * nvb
        self.args = (ssm, *lead_strides(ssm, 2), *_rings_with_strides(k, v, g, beta))
        self.dims = (H, V, K, hpg, nvb)
        self.constexprs = dict(BV=bv, BK=max(16, next_pow2(K)), STAGES=KDA_STAGES)

    def build(self, nb: int) -> tuple[Launch, ...]:
        n = len(self.args)
        grid, args, consts = self.with_window(self.units * nb, nb, (*self.args, None, None, None, nb, *self.dims), self.constexprs)
        return (Launch(_kda_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=self.warps),)


class ConvFoldPlan(_FoldPlan):
    """The conv-window fold of a bound `[L, S, C, K-1]` window and its conv-input ring, alone (a kind without an
    SSM state); `config` = `(channels per program, num_warps)`."""

    def __init__(self, conv, conv_in, *, config: tuple[int, int] | None = None):
        bc, self.warps = config or CONV_CONFIG
        window = _ConvWindow(conv, conv_in, bc)
        super().__init__(window.device, window.S, window.nbuf, window.hist)
        self.window, self.empty = window, window.empty

    def build(self, nb: int) -> tuple[Launch, ...]:
        w = self.window
        return (Launch(_conv_kernel, w.programs(nb), (None, None, None, nb, *w.args), (0, 1, 2), w.constexprs,
                       num_warps=self.warps),)


def _rings_with_strides(*rings: torch.Tensor) -> tuple:
    """Each ring tensor followed by the strides of its four ring dims, as the kernels take them."""
    return tuple(x for t in rings for x in (t, *lead_strides(t, 4)))


def _delta_args(ssm, k, v, g, beta, per_channel: bool):
    """Check a delta-rule fold's tensors; returns `((L, H, V, K, heads per k group, Hist, NBUF, S), device)`."""
    _state("ssm", ssm, 5)
    L, S, H, V, K = ssm.shape
    dev = same_device(ssm=ssm, k=k, v=v, g=g, beta=beta)
    hk = _groups("k", k, H, "Hk", "K")
    gtail = (H, K) if per_channel else (H,)
    nbuf, hist = _rings(L, S, ("k", k, (hk, K)), ("v", v, (H, V)), ("g", g, gtail), ("beta", beta, (H,)))
    return (L, H, V, K, H // hk, hist, nbuf, S), dev


def _hopper(t: torch.Tensor) -> bool:
    """A CUDA tensor on a Hopper or newer GPU (TMA, PDL)."""
    return t.is_cuda and torch.cuda.get_device_capability(t.device)[0] >= 9


def _tma_aligned(ssm: torch.Tensor) -> bool:
    """TMA addresses the pool: a 16-byte aligned base and strides."""
    return ssm.data_ptr() % 16 == 0 and all(st * ssm.element_size() % 16 == 0 for st in ssm.stride()[:4])


def gdn_tma_fits(ssm: torch.Tensor, k: torch.Tensor) -> bool:
    """Whether the persistent TMA form folds this pool by default: 16-bit states (and k of the same type) on a
    Hopper or newer GPU, in a pool TMA can address."""
    return _hopper(ssm) and ssm.dtype in HALF and k.dtype == ssm.dtype and _tma_aligned(ssm)


def replay_fold_mamba2_triton(ssm, x, B, dt, dA, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.replay_fold_mamba2_reference` and `Mamba2FoldPlan`."""
    _run_fold(Mamba2FoldPlan(ssm, x, B, dt, dA, config=config), slots, buf, count, check)


def replay_fold_gdn_triton(
    ssm, k, v, g, beta, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None, form: str | None = None
) -> None:
    """See `reference.replay_fold_gdn_reference` and `GdnFoldPlan`."""
    _run_fold(GdnFoldPlan(ssm, k, v, g, beta, config=config, form=form), slots, buf, count, check)


def replay_fold_kda_triton(ssm, k, v, g, beta, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.replay_fold_kda_reference` and `KdaFoldPlan`."""
    _run_fold(KdaFoldPlan(ssm, k, v, g, beta, config=config), slots, buf, count, check)


def replay_fold_conv_triton(conv, conv_in, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.replay_fold_conv_reference` and `ConvFoldPlan`."""
    _run_fold(ConvFoldPlan(conv, conv_in, config=config), slots, buf, count, check)
