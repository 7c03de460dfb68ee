"""The GatedDeltaNet fold (scalar gate per head). Float32 states from short rings are stepped token by token
(`step.py`, one launch: `GDN_STEP_MAX`); otherwise the fold runs in chunked form with the cumulative log-gates `G`
(`e^{G_c}` the whole chunk's decay), in two launches.

First one warp per (layer, request, head) computes the `[CT, CT]` mix matrix
`M = diag(beta) (I + U)^{-1} diag(e^{G_c - G})`, `U[t, s] = beta_s e^{G_s - G_t} k_t.k_s` (s > t), by a forward
substitution: it depends on the ring only. Then the update of each block of rows of the state is
substitution-free: `P = S K^T`, `W = (V^T - P e^G) M`, `S' = e^{G_c} S + W K`, the large products on the tensor
cores (16-bit k: exact products with a bf16 hi + lo split of `W`; otherwise `tf32x3`), the product with M as three
exact bf16 passes for 16-bit states (`tf32x3` otherwise). For 16-bit states on Hopper the update is persistent and
moves its tiles by TMA while the pipeliner loads the next units' rings; it launches with PDL, so it starts while
the mix kernel finishes. Float32 states take the pointer form in halves of K (`S K^T` in two tf32 passes, S hi + lo
against exact 16-bit k), each half of the tile read again for its update, so that no whole tile is held in registers
across the products: on an H200 that took the Qwen3-Next fold at 16 tokens from 53-55% of its memory roofline to 71-72%.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from .._common import fail, lead_strides, next_pow2, sm_count
from .._launch import Launch
from .._oneshot import PLANS
from ._fold import FOLD_INDICES, HALF, FoldPlan, delta_args, dot16_pieces, head_of, head_unit, ring_base, rings_with_strides
from .conv import conv_fold, state_window, with_window
from .step import Stepper

# `(BV rows of V per program, num_warps)` of the GatedDeltaNet update: 64 rows on four warps (one warpgroup
# product) was the fastest of BV 32..128 on 1..8 warps on an H200 for `[32, 128, 128]` states, bf16 and f32.
GDN_CONFIG = (64, 4)
# The persistent TMA form: three programs per SM were the fastest of 2..5 on an H200 for bf16 `[32, 128, 128]` states
# (float32 states run faster in the pointer form). Five stages: Triton 3.6 gives the state tile two shared-memory
# buffers from five stages on (one at 2..4), so the next tile loads during this one's products; 1-2 points faster at
# batch 1 than three stages, within half a point from batch 8 up.
GDN_TMA_PER_SM = 3
GDN_TMA_STAGES = 5
# The stepping form (`step.py`) folds float32 states from rings of up to GDN_STEP_MAX tokens, 8 rows on one warp: on an
# H200 (Qwen3-Next `[32, 128, 128]`, % of the memory roofline at batch 8 / 32 / 64) 84 / 93 / 92% at 4 tokens, 79 / 85 /
# 82% at 5, 73 / 76 / 74% at 6, 67 / 69 / 68% at 7 and 61 / 62 / 61% at 8, against the chunked form's (in halves of K)
# 67 / 72 / 73% at every length; at 16 tokens 35% against 66 / 71 / 72%. For 16-bit states the chunked form was faster
# at 4, 8 and 16 tokens (67-77% against 46-62%).
# With the conv window in the same launch, 16 rows: the fold with the window took 342 / 2740 µs at batch 8 / 64 against
# 388 / 2980 µs with 8 rows (the window alone 15 / 68 µs; without it 8 rows 314 / 2490, 16 rows 339 / 2643).
GDN_STEP_MAX = 6
GDN_STEP_CONFIG = (8, 1)
GDN_STEP_WINDOW_CONFIG = (16, 1)


def gdn_max_registers(dtype: torch.dtype) -> int | None:
    """Register cap of the GatedDeltaNet update in the pointer form: 96 for 16-bit states (five programs per SM
    instead of four: 70-71% of the size-matched copy against 64-67% on an H200); none for float32 states (taken in
    halves of K they need 126 registers, four programs per SM; a cap of 96 or 128 was no faster)."""
    return 96 if dtype in HALF else None


@triton.jit
def _dot_nt(a, b, DOT16: tl.constexpr):
    """`a @ b^T` in fp32: one pass when both are the same 16-bit type (exact products); two tf32 passes for a float32
    `a` against a 16-bit `b` (exact in tf32: only `a` is split, hi + lo, about fp32 accuracy); else `tf32x3`."""
    if DOT16 and a.dtype == b.dtype:
        out = tl.dot(a, tl.trans(b))
    elif DOT16 and a.dtype == tl.float32:
        hi = ((a.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)  # a rounded to tf32
        bt = tl.trans(b.to(tl.float32))
        out = tl.dot(hi, bt, input_precision="tf32")
        out = tl.dot(a - hi, bt, acc=out, input_precision="tf32")
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
    BK: tl.constexpr, CT: tl.constexpr, CS: tl.constexpr, STEPS: tl.constexpr, DOT16: tl.constexpr, PDL: tl.constexpr,
    CONV: tl.constexpr = False, KM1: tl.constexpr = 1, BJ: tl.constexpr = 1, BC: tl.constexpr = 1, BLOCK: tl.constexpr = 1,
):  # fmt: skip
    # One program (one warp) per (layer, request, head): M = diag(beta) (I + U)^{-1} diag(e^{G_c - G}), the
    # forward substitution X (I + U) = diag(beta) done column by column, for the STEPS columns a ring can fill (its
    # length): past a request's count beta, k and so U are zero and a step changes nothing. So only M's leading
    # [CS, CS] block is stored (U's too, on its way through memory), CS the ring's length to a power of two (the
    # update's [CT, CT] tile reads zeros past it): 64 bytes for a 4-token ring, not the 1 KiB of the 16-token tile.
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()  # the update kernel may launch now; it waits for M before reading it
    # Programs NU.. fold the conv window (`conv_fold`). CONV is a constexpr tested on its own, so that a launch without
    # a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
    _, h, b, layer = head_unit(1, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        kk = tl.arange(0, BK)
        t = tl.arange(0, CT)
        tm = t < c
        kb = ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K
        kt = tl.load(kb + t[:, None] * ks3 + kk[None, :], mask=tm[:, None] & (kk[None, :] < K), other=0.0)  # [CT, BK]
        gt = tl.load(ring_base(g, gs0, gs1, gs2, layer, slot, r) + t * gs3 + h, mask=tm, other=0.0).to(tl.float32)
        bt = tl.load(ring_base(beta, es0, es1, es2, layer, slot, r) + t * es3 + h, mask=tm, other=0.0).to(tl.float32)
        G = tl.cumsum(gt, 0)
        gram = _dot_nt(kt, kt, DOT16)
        # u[t, s] = U[t, s] = beta_s e^{G_s - G_t} k_t.k_s for s > t
        later = t[None, :] > t[:, None]
        u = tl.where(later, bt[None, :] * tl.exp(tl.where(later, G[None, :] - G[:, None], 0.0)) * gram, 0.0)
        # The substitution needs row j of u broadcast over the rows at step j. U goes through this head's output
        # slot, so that each row is a load off the dependency chain rather than a cross-lane sum: 80 shuffles per
        # head instead of 224, the mix kernel 5% faster on an H200 (results/kernel_experiments.md).
        mb = mix + ((layer * NB + b) * H + h) * (CS * CS)
        lead = (t[:, None] < CS) & (t[None, :] < CS)
        tl.store(mb + t[:, None] * CS + t[None, :], u, mask=lead)
        tl.debug_barrier()  # every lane's part of u is visible to the others
        x = tl.where(t[:, None] == t[None, :], bt[:, None], 0.0)
        for j in tl.static_range(STEPS):  # column j is final: take it out of the later columns
            xj = tl.sum(tl.where(t[None, :] == j, x, 0.0), 1)
            uj = tl.load(mb + j * CS + t[None, :] + 0 * t[:, None], mask=(t < CS)[None, :] & (t[:, None] >= 0), other=0.0)
            x = x - xj[:, None] * uj
        tl.debug_barrier()  # every lane has read u before M overwrites it
        tl.store(mb + t[:, None] * CS + t[None, :], x * tl.exp(tl.sum(gt, 0) - G)[None, :], mask=lead)


@triton.jit
def _mix_tile(mb, t, c, CS: tl.constexpr):
    """A head's M as the update's `[CT, CT]` tile (`t` its token indices): the mix kernel's leading `[CS, CS]` block at
    `mb`, its rows to the count; zeros elsewhere."""
    return tl.load(mb + t[:, None] * CS + t[None, :], mask=(t < c)[:, None] & (t < CS)[None, :], other=0.0)


@triton.jit
def _gdn_vg(v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3, layer, slot, r, h, vv, t, c, V):
    """One head's V^T `[BV, CT]` and log-gates `[CT]` (both fp32); tokens past `c` and rows past V load as zeros."""
    tm = t < c
    vbase = ring_base(v, vs0, vs1, vs2, layer, slot, r) + h * V
    vT = tl.load(vbase + t[None, :] * vs3 + vv[:, None], mask=tm[None, :] & (vv[:, None] < V), other=0.0).to(tl.float32)
    gt = tl.load(ring_base(g, gs0, gs1, gs2, layer, slot, r) + t * gs3 + h, mask=tm, other=0.0).to(tl.float32)
    return vT, gt


@triton.jit
def _gdn_rings(
    k, ks0, ks1, ks2, ks3, v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3,
    layer, slot, r, h, vv, t, c, V, K, HPG, BK: tl.constexpr,
):  # fmt: skip
    """One head's ring rows for the update: k `[CT, BK]`, V^T `[BV, CT]` and the log-gates `[CT]` (both fp32);
    tokens past `c`, rows past V and channels past K load as zeros."""
    kk = tl.arange(0, BK)
    kb = ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K
    kt = tl.load(kb + t[:, None] * ks3 + kk[None, :], mask=(t < c)[:, None] & (kk[None, :] < K), other=0.0)
    vT, gt = _gdn_vg(v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3, layer, slot, r, h, vv, t, c, V)
    return kt, vT, gt


@triton.jit
def _mixed(pT, vT, gt, m, HALF_STATE: tl.constexpr):
    """`W = (V^T - P e^G) M` `[BV, CT]` for P = S K^T `[BV, CT]`, vT `[BV, CT]`, gt `[CT]` log-gates and M `[CT, CT]`
    (all fp32): for 16-bit states as three exact bf16 passes (hi + lo of both, far below 16-bit rounding), else
    `tf32x3`."""
    x = vT - pT * tl.exp(tl.cumsum(gt, 0))[None, :]
    if HALF_STATE:
        xh = x.to(tl.bfloat16)
        xl = (x - xh.to(tl.float32)).to(tl.bfloat16)
        mh = m.to(tl.bfloat16)
        w = tl.dot(xh, mh)
        w = tl.dot(xh, (m - mh.to(tl.float32)).to(tl.bfloat16), acc=w)
        w = tl.dot(xl, mh, acc=w)
    else:
        w = tl.dot(x, m, input_precision="tf32x3")
    return w


@triton.jit
def _plus_wk(acc, w, kt, DOT16: tl.constexpr, F32: tl.constexpr):
    """`acc + W K` for kt `[CT, KS]`: with 16-bit k, W in 16-bit pieces (hi + lo, + lo2 for float32 states: about fp32
    accuracy on exact k); else `tf32x3`."""
    if DOT16:  # noqa: SIM108
        acc = dot16_pieces(w, kt, acc, F32)
    else:
        acc = tl.dot(w, kt.to(tl.float32), acc=acc, input_precision="tf32x3")
    return acc


@triton.jit
def _gdn_update(s, kt, vT, gt, m, DOT16: tl.constexpr):
    """One tile's fold: `S' = e^{G_c} S + ((V^T - (S K^T) e^G) M) K` for s `[BV, BK]`, kt `[CT, BK]`,
    vT `[BV, CT]` (fp32), gt `[CT]` log-gates (fp32) and M `[CT, CT]` (fp32); returns S' in fp32."""
    w = _mixed(_dot_nt(s, kt, DOT16), vT, gt, m, DOT16 and s.dtype != tl.float32)
    return _plus_wk(s.to(tl.float32) * tl.exp(tl.sum(gt, 0)), w, kt, DOT16, s.dtype == tl.float32)


@triton.jit
def _gdn_kernel(
    ssm, ss0, ss1,
    k, ks0, ks1, ks2, ks3,
    v, vs0, vs1, vs2, vs3,
    g, gs0, gs1, gs2, gs3,
    slots, bufs, counts, mix,
    NB, H, V, K, HPG, NVB,
    BV: tl.constexpr, BK: tl.constexpr, CT: tl.constexpr, CS: tl.constexpr, DOT16: tl.constexpr, EVEN: tl.constexpr,
    PDL: tl.constexpr, HALVES: tl.constexpr,
):  # fmt: skip
    # One program folds BV rows of V of one head (pointer form). With HALVES the tile is taken as two halves of its K
    # columns: P = S K^T summed over them, then each half's S' = e^{G_c} S + W K from the half read again (from L2),
    # so that no whole tile is held across the products (a float32 `[64, 128]` tile: 126 registers instead of 242,
    # four programs per SM instead of two).
    vb, h, b, layer = head_unit(NVB, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        KS: tl.constexpr = BK // 2 if HALVES else BK
        kc = tl.arange(0, KS)
        vv = vb * BV + tl.arange(0, BV)
        t = tl.arange(0, CT)
        rows = ssm + (layer * ss0 + slot * ss1 + h * V * K) + vv[:, None] * K
        kb = ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K + t[:, None] * ks3
        vT, gt = _gdn_vg(v, vs0, vs1, vs2, vs3, g, gs0, gs1, gs2, gs3, layer, slot, r, h, vv, t, c, V)
        ka = tl.load(kb + kc[None, :], mask=(t < c)[:, None] & (kc[None, :] < K), other=0.0)
        pT = _dot_nt(_state_cols(rows, vv, kc, V, K, EVEN, ""), ka, DOT16)
        if HALVES:
            kz = tl.load(kb + KS + kc[None, :], mask=(t < c)[:, None] & (KS + kc[None, :] < K), other=0.0)
            pT += _dot_nt(_state_cols(rows, vv, KS + kc, V, K, EVEN, ""), kz, DOT16)
        if PDL:
            tl.extra.cuda.gdc_wait()  # M comes from the mix kernel, which may still be running
        m = _mix_tile(mix + ((layer * NB + b) * H + h) * (CS * CS), t, c, CS)
        f32: tl.constexpr = ssm.dtype.element_ty == tl.float32
        w = _mixed(pT, vT, gt, m, DOT16 and not f32)
        decay = tl.exp(tl.sum(gt, 0))
        _fold_cols(rows, vv, kc, V, K, EVEN, w, ka, decay, DOT16, f32)
        if HALVES:
            _fold_cols(rows, vv, KS + kc, V, K, EVEN, w, kz, decay, DOT16, f32)


@triton.jit
def _state_cols(rows, vv, kc, V, K, EVEN: tl.constexpr, CACHE: tl.constexpr):
    """Columns `kc` of the tile's rows `vv` (`rows` their starts); rows past V and columns past K as zeros."""
    if EVEN:
        s = tl.load(rows + kc[None, :], cache_modifier=CACHE)
    else:
        s = tl.load(rows + kc[None, :], mask=(vv[:, None] < V) & (kc[None, :] < K), other=0.0, cache_modifier=CACHE)
    return s


@triton.jit
def _fold_cols(rows, vv, kc, V, K, EVEN: tl.constexpr, w, kt, decay, DOT16: tl.constexpr, F32: tl.constexpr):
    """Columns `kc` of the tile's rows `vv` folded in place: `S' = e^{G_c} S + W K` (S read again, from L2)."""
    acc = _plus_wk(_state_cols(rows, vv, kc, V, K, EVEN, ".cg").to(tl.float32) * decay, w, kt, DOT16, F32)
    if EVEN:
        tl.store(rows + kc[None, :], acc.to(rows.dtype.element_ty))
    else:
        tl.store(rows + kc[None, :], acc.to(rows.dtype.element_ty), mask=(vv[:, None] < V) & (kc[None, :] < K))


@triton.jit
def _gdn_tma_kernel(
    sd,
    k, ks0, ks1, ks2, ks3,
    v, vs0, vs1, vs2, vs3,
    g, gs0, gs1, gs2, gs3,
    slots, bufs, counts, mix,
    NB, NU, S,
    H: tl.constexpr, V: tl.constexpr, K: tl.constexpr, HPG: tl.constexpr, NVB: tl.constexpr,
    BV: tl.constexpr, BK: tl.constexpr, CT: tl.constexpr, CS: tl.constexpr, DOT16: tl.constexpr, PDL: tl.constexpr,
    STAGES: tl.constexpr,
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
        vb, h, b, layer = head_of(u, NVB, H, NB)  # int32: TMA coordinates
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
        m = _mix_tile(mix + hr.to(tl.int64) * (CS * CS), t, c, CS)
        acc = _gdn_update(s, kt, vT, gt, m, DOT16)
        sd.store([layer, ts, h, vb * BV, 0], acc.to(s.dtype).reshape(1, 1, 1, BV, BK))


class GdnFoldPlan(FoldPlan):
    """The GatedDeltaNet fold of a bound `[L, S, H, V, K]` state and its k, v, g, beta rings, in one of three forms
    (`gdn_form` picks the default): `"step"`, one launch stepping through the tokens (`step.Stepper`; the conv window
    in its launch); or the chunked form in two launches, the `[CT, CT]` mix matrix M of every (layer, request, head)
    (and the conv window, if given), then the update of the state tiles, either persistent with TMA (`"tma"`) or one
    program per tile (`"pointer"`). `config` = `(BV rows of V per program, at least 16 in the chunked forms;
    num_warps)`. M's scratch is allocated once per batch size."""

    def __init__(self, ssm, k, v, g, beta, *, conv=None, config: tuple[int, int] | None = None, form: str | None = None):
        (L, H, V, K, hpg, hist, nbuf, S), dev = delta_args(ssm, k, v, g, beta, per_channel=False)
        super().__init__(dev, S, nbuf, hist)
        if form not in (None, "step", "tma", "pointer"):
            fail(f"form: expected 'step', 'tma' or 'pointer', got {form!r}")
        if form == "tma" and not _tma_aligned(ssm):
            fail(f"ssm: form='tma' needs a 16-byte aligned base and strides, got strides {ssm.stride()} of {ssm.dtype}")
        self.form = form or gdn_form(ssm, k)
        self.empty = ssm.numel() == 0
        if self.form == "step":
            config = config or (GDN_STEP_WINDOW_CONFIG if conv else GDN_STEP_CONFIG)
            self.stepper = Stepper(ssm, k, v, g, beta, (L, H, V, K, hpg), config, per_k=False)
            self.window = state_window(self, conv, L, self.stepper.warps)
            return
        self.window = state_window(self, conv, L, 1)  # in the mix kernel's launch: one warp
        self.ssm, self.L, self.H, self.V, self.K, self.hpg = ssm, L, H, V, K, hpg
        self.bk, self.ct = max(16, next_pow2(K)), max(16, next_pow2(hist))
        self.steps = hist  # the mix kernel's substitution steps: the ring's length (a 4-token ring: 4 of CT's 16)
        self.cs = min(self.ct, next_pow2(hist))  # the leading block of M the mix kernel computes
        self.dot16, self.pdl = ssm.is_cuda and k.dtype in HALF, _hopper(ssm)  # PDL: the update launches while M is computed
        self.bv, self.warps = config or GDN_CONFIG
        self.nvb = triton.cdiv(V, self.bv)
        self.tma = self.form == "tma"
        self.mix_rings = rings_with_strides(k, g, beta)
        self.rings = rings_with_strides(k, v, g)
        self.halves = ssm.dtype == torch.float32 and self.bk >= 32  # a product's K side of at least 16
        if self.tma and not self.empty:
            self.desc = TensorDescriptor(ssm, list(ssm.shape), list(ssm.stride()), [1, 1, 1, self.bv, self.bk])

    def build(self, nb: int) -> tuple[Launch, ...]:
        if self.form == "step":
            return (self.stepper.launch(nb, self.window),)
        L, H = self.L, self.H
        mix = torch.empty(L * nb * H * self.cs * self.cs, device=self.device, dtype=torch.float32)
        n = len(self.mix_rings)
        mix_args = (*self.mix_rings, None, None, None, mix, nb, H, self.K, self.hpg)
        mix_consts = dict(BK=self.bk, CT=self.ct, CS=self.cs, STEPS=self.steps, DOT16=self.dot16, PDL=self.pdl)
        grid, args, consts = with_window(self.window, L * nb * H, nb, mix_args, mix_consts)
        first = Launch(_gdn_mix_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=1)
        opts = dict(num_warps=self.warps, **({"launch_pdl": True} if self.pdl else {}))
        consts = dict(BV=self.bv, BK=self.bk, CT=self.ct, CS=self.cs, DOT16=self.dot16, PDL=self.pdl)
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
            consts.update(EVEN=self.V % self.bv == 0 and self.bk == self.K, HALVES=self.halves)
            second = Launch(_gdn_kernel, L * nb * H * self.nvb, args, (n, n + 1, n + 2), consts, **opts,
                            **({"maxnreg": cap} if cap else {}))
        return first, second


def _hopper(t: torch.Tensor) -> bool:
    """A CUDA tensor on a Hopper or newer GPU (TMA, PDL)."""
    return t.is_cuda and torch.cuda.get_device_capability(t.device)[0] >= 9


def _tma_aligned(ssm: torch.Tensor) -> bool:
    """TMA addresses the pool: a 16-byte aligned base and strides."""
    return ssm.data_ptr() % 16 == 0 and all(st * ssm.element_size() % 16 == 0 for st in ssm.stride()[:4])


def gdn_form(ssm: torch.Tensor, k: torch.Tensor) -> str:
    """The default form of a GatedDeltaNet fold: stepping for float32 states and rings of up to `GDN_STEP_MAX` tokens,
    else the chunked update, persistent with TMA where `gdn_tma_fits`, else by pointers."""
    if gdn_steps(ssm.dtype, k.shape[3]):
        return "step"
    return "tma" if gdn_tma_fits(ssm, k) else "pointer"


def gdn_steps(dtype: torch.dtype, hist: int) -> bool:
    """Whether a GatedDeltaNet fold of `dtype` states from rings of `hist` tokens is stepped by default."""
    return dtype == torch.float32 and hist <= GDN_STEP_MAX


def gdn_tma_fits(ssm: torch.Tensor, k: torch.Tensor) -> bool:
    """Whether the persistent TMA form folds this pool by default: 16-bit states (and k of the same type) on a
    Hopper or newer GPU, in a pool TMA can address."""
    return _hopper(ssm) and ssm.dtype in HALF and k.dtype == ssm.dtype and _tma_aligned(ssm)


def replay_fold_gdn_triton(
    ssm, k, v, g, beta, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None, form: str | None = None
) -> None:
    """See `reference.replay_fold_gdn_reference` and `GdnFoldPlan`."""
    PLANS.run("fold_gdn", (ssm, k, v, g, beta), (config, form), _plan, FOLD_INDICES, (slots, buf, count), check)


def _plan(tensors: tuple, options: tuple) -> GdnFoldPlan:
    config, form = options
    return GdnFoldPlan(*tensors, config=config, form=form)
