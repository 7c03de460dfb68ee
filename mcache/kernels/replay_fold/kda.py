"""The KDA fold (a gate per K channel), stepping: every row `S[v, :]` of the state evolves on its own (it needs
only `v[v]`, k, the gate and beta), so a program holds a few rows in registers and steps through the tokens, the
next tokens' rings loading while one is applied. (Its chunked form needs `e^{G_t - G_s}` per channel and token
pair, a `[CT, CT, K]` contraction off the tensor cores; split as `e^{G_t} e^{-G_s}` it overflows for strong
gates.)
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._common import lead_strides, next_pow2
from .._launch import Launch
from .._oneshot import PLANS
from ._fold import FoldPlan, delta_args, head_unit, ring_base, rings_with_strides, run_fold
from .conv import conv_fold, state_window, with_window

# `(BV rows of V per program, num_warps)` of the KDA fold and the pipeline stages of its token loop (the next
# tokens' k and gates load while this one is applied): 16 rows on one warp, 3 stages were the fastest of BV 8..64
# on 1..4 warps and 1..6 stages on an H200 for Kimi-Linear's `[32, 128, 128]` states (float32: 40-41% of the
# size-matched copy against 30-32% for 32 rows unpipelined; bfloat16: 30-37% against 27-32%).
KDA_CONFIG = (16, 1)
KDA_STAGES = 3


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
    # Programs NU.. fold the conv window (`conv_fold`). CONV is a constexpr tested on its own, so that a launch without
    # a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
    # Rows of the state are independent under the delta rule (`S[v, :]` needs only `v[v]`, k, g and beta),
    # so a program keeps BV rows in registers and steps through the tokens: one read, one write.
    vb, h, b, layer = head_unit(NVB, H, NB)
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
        kb = ring_base(k, ks0, ks1, ks2, layer, slot, r) + (h // HPG) * K + kk
        vbase = ring_base(v, vs0, vs1, vs2, layer, slot, r) + h * V + vv
        gb = ring_base(g, gs0, gs1, gs2, layer, slot, r) + h * K + kk
        eb = ring_base(beta, es0, es1, es2, layer, slot, r) + h
        for t in tl.range(0, c, num_stages=STAGES):
            kt = tl.load(kb + t * ks3, mask=km, other=0.0).to(tl.float32)
            vt = tl.load(vbase + t * vs3, mask=vm, other=0.0).to(tl.float32)
            bt = tl.load(eb + t * es3).to(tl.float32)
            s = s * tl.exp(tl.load(gb + t * gs3, mask=km, other=0.0).to(tl.float32))[None, :]
            u = bt * (vt - tl.sum(s * kt[None, :], 1))  # [BV]: beta (v - S k)
            s = s + u[:, None] * kt[None, :]
        tl.store(sp, s.to(ssm.dtype.element_ty), mask=sm)


class KdaFoldPlan(FoldPlan):
    """The KDA fold of a bound `[L, S, H, V, K]` state and its k, v, g (per channel), beta rings (and, with
    `conv`, the conv window: `conv.state_window`), in one launch; `config` = `(BV rows of V per program, num_warps)`."""

    def __init__(self, ssm, k, v, g, beta, *, conv=None, config: tuple[int, int] | None = None):
        (L, H, V, K, hpg, hist, nbuf, S), dev = delta_args(ssm, k, v, g, beta, per_channel=True)
        bv, self.warps = config or KDA_CONFIG
        super().__init__(dev, S, nbuf, hist)
        self.window = state_window(self, conv, L, self.warps)
        self.empty = ssm.numel() == 0
        nvb = triton.cdiv(V, bv)
        self.units = L * H * nvb
        self.args = (ssm, *lead_strides(ssm, 2), *rings_with_strides(k, v, g, beta))
        self.dims = (H, V, K, hpg, nvb)
        self.constexprs = dict(BV=bv, BK=max(16, next_pow2(K)), STAGES=KDA_STAGES)

    def build(self, nb: int) -> tuple[Launch, ...]:
        n = len(self.args)
        grid, args, consts = with_window(self.window, self.units * nb, nb, (*self.args, None, None, None, nb, *self.dims), self.constexprs)
        return (Launch(_kda_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=self.warps),)


def replay_fold_kda_triton(ssm, k, v, g, beta, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.replay_fold_kda_reference` and `KdaFoldPlan`."""
    plan = PLANS.get("fold_kda", (ssm, k, v, g, beta), config, lambda: KdaFoldPlan(ssm, k, v, g, beta, config=config))
    run_fold(plan, slots, buf, count, check)
