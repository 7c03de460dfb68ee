"""The Mamba2 fold (scalar decay per head). The recurrence is linear in `h`, so all tokens fold in closed form,
`h_c = exp(sum dA) h_0 + (x * w)^T B` with `w_t = dt_t exp(sum_{s>t} dA_s)`; the state is read and written once.
The sum of rank-one terms runs in one of two forms (`mamba2_form` picks): `"fma"`, token by token on the CUDA cores
(exact fp32 products), for short rings; `"dot"`, one `[P, CT] x [CT, N]` product per head on the tensor cores (fp32
operands in `tf32x3`: about fp32 accuracy), for longer ones.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._common import fail, lead_strides, next_pow2, same_device
from .._launch import Launch
from ._fold import FoldPlan, check_rings, check_state, head_unit, ring_base, ring_groups, rings_with_strides, run_fold
from .conv import conv_fold, state_window, with_window

PRECISION = "tf32x3"
# The CUDA-core form folds rings of up to MAMBA2_FMA_MAX tokens. On an H200 (Nemotron-H-8B's `[128, 64, 128]` state,
# % of the memory roofline at batch 8 / 32 / 64, results/roofline/sweeps/fold-sweep-4): at 4 tokens float32 85 / 93 /
# 93% on 16 rows a warp against the tensor-core form's 82 / 87 / 87%, bfloat16 71 / 78 / 76% on 8 rows a warp against
# 60 / 64 / 64%; at 16 tokens the tensor-core form (float32 79 / 83 / 84%, bfloat16 60 / 64 / 64%) against at best
# 66 / 71 / 71% and 45 / 50 / 51%.
MAMBA2_FMA_MAX = 4
MAMBA2_FMA_CONFIG = {4: (16, 1), 2: (8, 1)}  # `(BP, num_warps)` by the state's element size


def mamba2_config(P: int, bn: int) -> tuple[int, int]:
    """`(BP, num_warps)` of the tensor-core form: 16 rows of P (2048 states at N = 128) on two warps, the fastest of a
    sweep over BP 8..64 and 2..8 warps on an H200 for the Nemotron-H-8B state (84-88% of the size-matched copy at
    batch 1-64, against 78-81% for 32 rows on four warps)."""
    return max(16, min(next_pow2(P), 2048 // bn)), 2


def mamba2_form(hist: int) -> str:
    """The default form of a Mamba2 fold from rings of `hist` tokens: `"fma"` up to `MAMBA2_FMA_MAX`, else `"dot"`."""
    return "fma" if hist <= MAMBA2_FMA_MAX else "dot"


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
    FMA: tl.constexpr = False, HIST: tl.constexpr = 1,
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
        dav = tl.load(ring_base(dA, as0, as1, as2, layer, slot, r) + t * as3 + h, mask=tm, other=0.0).to(tl.float32)
        dtv = tl.load(ring_base(dt, ts0, ts1, ts2, layer, slot, r) + t * ts3 + h, mask=tm, other=0.0).to(tl.float32)
        total = tl.sum(dav, 0)
        w = dtv * tl.exp(total - tl.cumsum(dav, 0))  # dt_t * exp(sum of dA after t)
        xb = ring_base(x, xs0, xs1, xs2, layer, slot, r) + h * P
        bb = ring_base(Bm, bs0, bs1, bs2, layer, slot, r) + (h // HPG) * N
        if FMA:  # rank-one updates on the CUDA cores, token by token: exact fp32 products. (`p * 0 + j < c`: the
            # interpreter refuses a scalar condition in a vector mask.)
            h1 = h0.to(tl.float32) * tl.exp(total)
            for j in tl.static_range(HIST):
                wj = tl.sum(tl.where(t == j, w, 0.0), 0)
                xj = tl.load(xb + j * xs3 + p, mask=(p < P) & (p * 0 + j < c), other=0.0).to(tl.float32)
                bj = tl.load(bb + j * bs3 + n, mask=(n < N) & (n * 0 + j < c), other=0.0).to(tl.float32)
                h1 += (xj * wj)[:, None] * bj[None, :]
        else:
            xt = tl.load(xb + t[None, :] * xs3 + p[:, None], mask=tm[None, :] & (p[:, None] < P), other=0.0)
            bt = tl.load(bb + t[:, None] * bs3 + n[None, :], mask=tm[:, None] & (n[None, :] < N), other=0.0)
            xw = xt.to(tl.float32) * w[None, :]  # [BP, CP]
            h1 = tl.dot(xw, bt.to(tl.float32), acc=h0.to(tl.float32) * tl.exp(total), input_precision=PREC)  # [BP, BN]
        if EVEN:
            tl.store(sbase + soff, h1.to(ssm.dtype.element_ty))
        else:
            tl.store(sbase + soff, h1.to(ssm.dtype.element_ty), mask=sm)


class Mamba2FoldPlan(FoldPlan):
    """The Mamba2 fold of a bound `[L, S, H, P, N]` state and its x, B, dt, dA rings (and, with `conv`, the conv
    window: `conv.state_window`), in one launch; `config` = `(BP rows of P per program, num_warps)`, `form` `"fma"` or
    `"dot"` (default: `mamba2_form`)."""

    def __init__(self, ssm, x, B, dt, dA, *, conv=None, config: tuple[int, int] | None = None, form: str | None = None):
        check_state("ssm", ssm, 5)
        if form not in (None, "dot", "fma"):
            fail(f"form: expected 'dot' or 'fma', got {form!r}")
        L, S, H, P, N = ssm.shape
        dev = same_device(ssm=ssm, x=x, B=B, dt=dt, dA=dA)
        G = ring_groups("B", B, H, "G", "N")
        nbuf, hist = check_rings(L, S, ("x", x, (H, P)), ("B", B, (G, N)), ("dt", dt, (H,)), ("dA", dA, (H,)))
        bn = max(16, next_pow2(N))
        form = form or mamba2_form(hist)
        bp, self.warps = config or (MAMBA2_FMA_CONFIG[ssm.element_size()] if form == "fma" else mamba2_config(P, bn))
        super().__init__(dev, S, nbuf, hist)
        self.window = state_window(self, conv, L, self.warps)
        self.empty = ssm.numel() == 0
        self.npb = triton.cdiv(P, bp)
        self.units = L * H * self.npb
        self.args = (ssm, *lead_strides(ssm, 2), *rings_with_strides(x, B, dt, dA))
        self.dims = (H, P, N, H // G, self.npb)
        self.constexprs = dict(BP=bp, BN=bn, CP=max(16, next_pow2(hist)), PREC=PRECISION, EVEN=P % bp == 0 and bn == N,
                               FMA=form == "fma", HIST=hist)

    def build(self, nb: int) -> tuple[Launch, ...]:
        n = len(self.args)
        grid, args, consts = with_window(self.window, self.units * nb, nb, (*self.args, None, None, None, nb, *self.dims), self.constexprs)
        return (Launch(_mamba2_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=self.warps),)


def replay_fold_mamba2_triton(
    ssm, x, B, dt, dA, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None, form: str | None = None
) -> None:
    """See `reference.replay_fold_mamba2_reference` and `Mamba2FoldPlan`."""
    run_fold("fold_mamba2", (ssm, x, B, dt, dA), (config, form),
             lambda: Mamba2FoldPlan(ssm, x, B, dt, dA, config=config, form=form), (slots, buf, count), check)
