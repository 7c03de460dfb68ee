"""The Mamba2 fold (scalar decay per head). The recurrence is linear in `h`, so all tokens fold in closed form,
`h_c = exp(sum dA) h_0 + (x * w)^T B` with `w_t = dt_t exp(sum_{s>t} dA_s)`; the state is read and written once.
The sum of rank-one terms runs in one of two forms (`mamba2_form` picks), each program folding several blocks of a
head's rows with what depends on the ring alone computed once: `"fma"`, token by token on the CUDA cores (exact fp32
products), for short rings; `"dot"`, one `[BP, CT] x [CT, N]` product a block on the tensor cores, for longer ones:
with a 16-bit B on CUDA, `x w` in exact 16-bit pieces (about fp32 accuracy for a float32 state), else fp32 operands in
`tf32x3` (the interpreter's 16-bit products are not faithful).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._common import fail, lead_strides, next_pow2, same_device
from .._launch import Launch
from .._oneshot import PLANS
from ._fold import (
    FOLD_INDICES,
    HALF,
    FoldPlan,
    check_rings,
    check_state,
    dot16_pieces,
    head_unit,
    ring_base,
    ring_groups,
    rings_with_strides,
)
from .conv import conv_fold, state_window, with_window

PRECISION = "tf32x3"
# The CUDA-core form folds rings of up to MAMBA2_FMA_MAX tokens; at 16 tokens the tensor-core form (float32 79 / 83 / 84%,
# bfloat16 60 / 64 / 64% at batch 8 / 32 / 64) was ahead of any shape of the CUDA-core one (at best 66 / 71 / 71% and
# 45 / 50 / 51%; results/roofline/sweeps/fold-sweep-4).
MAMBA2_FMA_MAX = 4
# `(BP rows a block, num_warps, RB row blocks a program, pipeline stages of the block loop)` of each form by the
# state's element size, for N up to 128. On an H200 (Nemotron-H-8B's `[128, 64, 128]` state, % of the memory roofline at
# batch 8 / 32 / 64). The CUDA-core form at 4 tokens (results/roofline/sweeps/fold-sweep-6): bfloat16, a whole head a
# program (8 blocks of 8 rows, one warp, 4 stages) 82 / 93 / 94% (3 stages 81 / 84-92 / 93, 4 blocks of 16 rows 76-78 /
# 85-87 / 85-88, a block of 8 rows a program as before 72 / 79 / 77); float32, a block of 16 rows a program 85.5 / 95 /
# 95% (whole heads 82-84 / 91-94 / 92-94, the form before 85 / 86-94 / 94). The tensor-core form at 16 tokens with bf16
# x and B (fold-sweep-7), x w in 16-bit pieces: a whole head a program (4 blocks of 16 rows, one warp), bfloat16 with 4
# stages 81.5 / 92 / 93% (3 stages 81 / 91 / 92, one block of 32 rows on two warps a program 77 / 83 / 83, of 64 on four
# 75 / 79 / 80; tf32x3 on one block of 16 rows and two warps as before 59 / 63 / 64), float32 with 3 stages 82 / 92 / 92%
# (one block of 16 rows a program 82 / 90 / 91; before 79 / 82 / 82).
MAMBA2_CONFIG = {"fma": {4: (16, 1, 1, 1), 2: (8, 1, 8, 4)}, "dot": {4: (16, 1, 4, 3), 2: (16, 1, 4, 4)}}


def mamba2_config(form: str, itemsize: int, bn: int) -> tuple[int, int, int, int]:
    """The default config of `form` for a state of `itemsize`-byte elements and rows of `bn` (N padded): a tensor-core
    block of a row wider than 128 takes twice the warps for each doubling (its fp32 accumulator per thread bounded)."""
    bp, warps, rb, stages = MAMBA2_CONFIG[form][itemsize]
    if form == "dot":
        warps *= max(1, bn // 128)
    return bp, warps, rb, stages


def row_blocks(P: int, bp: int, rb: int) -> tuple[int, int]:
    """`(row blocks a program, programs a head)` for heads of `P` rows, blocks of `bp` rows and at most `rb` blocks a
    program."""
    rb = min(rb, triton.cdiv(P, bp))
    return rb, triton.cdiv(P, bp * rb)


def mamba2_form(hist: int) -> str:
    """The default form of a Mamba2 fold from rings of `hist` tokens: `"fma"` up to `MAMBA2_FMA_MAX`, else `"dot"`."""
    return "fma" if hist <= MAMBA2_FMA_MAX else "dot"


@triton.jit
def _load_rows(sbase, soff, sm, EVEN: tl.constexpr):
    """A block of a head's state rows (`soff` offsets from the head's base, `sm` its mask unless EVEN)."""
    if EVEN:
        h0 = tl.load(sbase + soff, eviction_policy="evict_first")
    else:
        h0 = tl.load(sbase + soff, mask=sm, other=0.0, eviction_policy="evict_first")
    return h0


@triton.jit
def _store_rows(sbase, soff, sm, h1, EVEN: tl.constexpr):
    """Store a block of rows (fp32) in the state's dtype."""
    if EVEN:
        tl.store(sbase + soff, h1.to(sbase.dtype.element_ty))
    else:
        tl.store(sbase + soff, h1.to(sbase.dtype.element_ty), mask=sm)


@triton.jit
def _block(pb, n, P, N, BP: tl.constexpr):
    """Rows `p` of row block `pb`, their offsets inside the head and their mask."""
    p = pb * BP + tl.arange(0, BP)
    return p, p[:, None] * N + n[None, :], (p[:, None] < P) & (n[None, :] < N)


@triton.jit
def _fold_dot(sbase, pb, n, xb, xs3, bb, bs3, dab, as3, dtb, ts3, c, P, N, BP: tl.constexpr, CP: tl.constexpr,
              RB: tl.constexpr, STAGES: tl.constexpr, PREC: tl.constexpr, EVEN: tl.constexpr, DOT16: tl.constexpr):
    """The tensor-core form: RB blocks of BP rows, each `h_c = e^{total} h_0 + (x w) B` as one `[BP, CP] x [CP, BN]`
    product, the weights and B loaded once a program. With a 16-bit B, `x w` goes in 16-bit pieces
    (`dot16_pieces`: three for a float32 state, two for a 16-bit one), else in `PREC`."""
    t = tl.arange(0, CP)
    tm = t < c
    dav = tl.load(dab + t * as3, mask=tm, other=0.0).to(tl.float32)
    dtv = tl.load(dtb + t * ts3, mask=tm, other=0.0).to(tl.float32)
    total = tl.sum(dav, 0)
    decay = tl.exp(total)
    w = dtv * tl.exp(total - tl.cumsum(dav, 0))  # dt_t * exp(sum of dA after t)
    bt = tl.load(bb + t[:, None] * bs3 + n[None, :], mask=tm[:, None] & (n[None, :] < N), other=0.0)
    for i in tl.range(0, RB, num_stages=STAGES):
        p, soff, sm = _block(pb * RB + i, n, P, N, BP)
        h0 = _load_rows(sbase, soff, sm, EVEN)
        xt = tl.load(xb + t[None, :] * xs3 + p[:, None], mask=tm[None, :] & (p[:, None] < P), other=0.0)
        xw = xt.to(tl.float32) * w[None, :]  # [BP, CP]
        acc = h0.to(tl.float32) * decay
        if DOT16:
            h1 = dot16_pieces(xw, bt, acc, sbase.dtype.element_ty == tl.float32)  # [BP, BN]
        else:
            h1 = tl.dot(xw, bt.to(tl.float32), acc=acc, input_precision=PREC)
        _store_rows(sbase, soff, sm, h1, EVEN)


@triton.jit
def _scaled_b(bb, bs3, dab, as3, dtb, ts3, j: tl.constexpr, c, after, n, N):
    """Token `j`'s `w_j B_j` (`[BN]`, fp32), `w_j = dt_j e^{sum of dA after j}`, and that sum, given the sum after
    token `j - 1`; a token past the count `c` is zeros (an identity step)."""
    after = after - tl.load(dab + j * as3, mask=j < c, other=0.0).to(tl.float32)
    wj = tl.load(dtb + j * ts3, mask=j < c, other=0.0).to(tl.float32) * tl.exp(after)
    bj = tl.load(bb + j * bs3 + n, mask=(n < N) & (n * 0 + j < c), other=0.0).to(tl.float32)
    return bj * wj, after


@triton.jit
def _add_token(h1, xb, xs3, j: tl.constexpr, c, p, P, bw):
    """`h1 += x_j (w_j B_j)^T` for the rows `p` (`x` of a token past the count loads as zeros)."""
    xj = tl.load(xb + j * xs3 + p, mask=(p < P) & (p * 0 + j < c), other=0.0).to(tl.float32)
    return h1 + xj[:, None] * bw[None, :]


@triton.jit
def _fold_fma(sbase, pb, n, xb, xs3, bb, bs3, dab, as3, dtb, ts3, c, P, N,
              BP: tl.constexpr, RB: tl.constexpr, HIST: tl.constexpr, STAGES: tl.constexpr, EVEN: tl.constexpr):
    """The CUDA-core form: RB blocks of BP rows, token by token with fp32 FMAs (exact products). What depends on the
    ring only (the scalars w_t, each token's `w_t B_t`) is computed once and kept across the blocks: the first four
    tokens' in variables of their own (later ones, in a ring longer than MAMBA2_FMA_MAX folded in this form on
    request, are scaled again for each block). (`p * 0 + j < c`: the interpreter refuses a scalar condition in a
    vector mask.)"""
    total = 0.0
    for j in tl.static_range(HIST):
        total += tl.load(dab + j * as3, mask=j < c, other=0.0).to(tl.float32)
    decay = tl.exp(total)
    bw0, after = _scaled_b(bb, bs3, dab, as3, dtb, ts3, 0, c, total, n, N)
    bw1, bw2, bw3 = bw0, bw0, bw0  # tokens past HIST are never added
    if HIST > 1:
        bw1, after = _scaled_b(bb, bs3, dab, as3, dtb, ts3, 1, c, after, n, N)
    if HIST > 2:
        bw2, after = _scaled_b(bb, bs3, dab, as3, dtb, ts3, 2, c, after, n, N)
    if HIST > 3:
        bw3, after = _scaled_b(bb, bs3, dab, as3, dtb, ts3, 3, c, after, n, N)
    for i in tl.range(0, RB, num_stages=STAGES):
        p, soff, sm = _block(pb * RB + i, n, P, N, BP)
        h1 = _add_token(_load_rows(sbase, soff, sm, EVEN).to(tl.float32) * decay, xb, xs3, 0, c, p, P, bw0)
        if HIST > 1:
            h1 = _add_token(h1, xb, xs3, 1, c, p, P, bw1)
        if HIST > 2:
            h1 = _add_token(h1, xb, xs3, 2, c, p, P, bw2)
        if HIST > 3:
            h1 = _add_token(h1, xb, xs3, 3, c, p, P, bw3)
        rest = after
        for j in tl.static_range(4, HIST):
            bw, rest = _scaled_b(bb, bs3, dab, as3, dtb, ts3, j, c, rest, n, N)
            h1 = _add_token(h1, xb, xs3, j, c, p, P, bw)
        _store_rows(sbase, soff, sm, h1, EVEN)


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
    BP: tl.constexpr, BN: tl.constexpr, EVEN: tl.constexpr, FMA: tl.constexpr,
    CP: tl.constexpr = 16, PREC: tl.constexpr = "tf32x3", RB: tl.constexpr = 1, HIST: tl.constexpr = 1,
    STAGES: tl.constexpr = 1, DOT16: tl.constexpr = False,
    CONV: tl.constexpr = False, KM1: tl.constexpr = 1, BJ: tl.constexpr = 1, BC: tl.constexpr = 1, BLOCK: tl.constexpr = 1,
):  # fmt: skip
    # Programs NU.. fold the conv window (`conv_fold`). CONV is a constexpr tested on its own, so that a launch without
    # a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
    pb, h, b, layer = head_unit(NPB, H, NB)
    c = tl.load(counts + b).to(tl.int32)
    if c > 0:
        slot = tl.load(slots + b).to(tl.int64)
        r = tl.load(bufs + b).to(tl.int64)
        n = tl.arange(0, BN)
        xb = ring_base(x, xs0, xs1, xs2, layer, slot, r) + h * P
        bb = ring_base(Bm, bs0, bs1, bs2, layer, slot, r) + (h // HPG) * N
        dab = ring_base(dA, as0, as1, as2, layer, slot, r) + h
        dtb = ring_base(dt, ts0, ts1, ts2, layer, slot, r) + h
        # One int64 base per head and int32 offsets inside it: a tile of 64-bit pointers kept live from the
        # load to the store costs registers, and registers bound how many programs keep loads in flight.
        sbase = ssm + (layer * ss0 + slot * ss1 + h * P * N)
        if FMA:
            _fold_fma(sbase, pb, n, xb, xs3, bb, bs3, dab, as3, dtb, ts3, c, P, N, BP, RB, HIST, STAGES, EVEN)
        else:
            _fold_dot(sbase, pb, n, xb, xs3, bb, bs3, dab, as3, dtb, ts3, c, P, N, BP, CP, RB, STAGES, PREC, EVEN, DOT16)


class Mamba2FoldPlan(FoldPlan):
    """The Mamba2 fold of a bound `[L, S, H, P, N]` state and its x, B, dt, dA rings (and, with `conv`, the conv
    window: `conv.state_window`), in one launch; `form` `"fma"` or `"dot"` (default: `mamba2_form`), `config` `(BP rows
    of P a block, num_warps, RB blocks a program, pipeline stages)` (default: `mamba2_config`; BP at least 16 for
    `"dot"`)."""

    def __init__(self, ssm, x, B, dt, dA, *, conv=None, config: tuple[int, ...] | None = None, form: str | None = None):
        check_state("ssm", ssm, 5)
        if form not in (None, "dot", "fma"):
            fail(f"form: expected 'dot' or 'fma', got {form!r}")
        L, S, H, P, N = ssm.shape
        dev = same_device(ssm=ssm, x=x, B=B, dt=dt, dA=dA)
        G = ring_groups("B", B, H, "G", "N")
        nbuf, hist = check_rings(L, S, ("x", x, (H, P)), ("B", B, (G, N)), ("dt", dt, (H,)), ("dA", dA, (H,)))
        bn = max(16, next_pow2(N))
        form = form or mamba2_form(hist)
        config = config or mamba2_config(form, ssm.element_size(), bn)
        if len(config) != 4:
            fail(f"config: expected (BP, num_warps, RB, stages), got {config!r}")
        bp, self.warps, rb, stages = config
        rb = row_blocks(P, bp, rb)[0]
        super().__init__(dev, S, nbuf, hist)
        self.window = state_window(self, conv, L, self.warps)
        self.empty = ssm.numel() == 0
        rows = bp * rb
        self.npb = triton.cdiv(P, rows)
        self.units = L * H * self.npb
        self.args = (ssm, *lead_strides(ssm, 2), *rings_with_strides(x, B, dt, dA))
        self.dims = (H, P, N, H // G, self.npb)
        even = P % rows == 0 and bn == N
        self.constexprs = dict(BP=bp, BN=bn, EVEN=even, FMA=form == "fma", RB=rb, STAGES=stages)
        if form == "fma":
            self.constexprs.update(HIST=hist)
        else:
            self.constexprs.update(CP=max(16, next_pow2(hist)), PREC=PRECISION, DOT16=ssm.is_cuda and B.dtype in HALF)

    def build(self, nb: int) -> tuple[Launch, ...]:
        n = len(self.args)
        grid, args, consts = with_window(self.window, self.units * nb, nb, (*self.args, None, None, None, nb, *self.dims), self.constexprs)
        return (Launch(_mamba2_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=self.warps),)


def replay_fold_mamba2_triton(
    ssm, x, B, dt, dA, slots, buf, count, *, check: bool = True, config: tuple[int, ...] | None = None, form: str | None = None
) -> None:
    """See `reference.replay_fold_mamba2_reference` and `Mamba2FoldPlan`."""
    PLANS.run("fold_mamba2", (ssm, x, B, dt, dA), (config, form), _plan, FOLD_INDICES, (slots, buf, count), check)


def _plan(tensors: tuple, options: tuple) -> Mamba2FoldPlan:
    config, form = options
    return Mamba2FoldPlan(*tensors, config=config, form=form)
