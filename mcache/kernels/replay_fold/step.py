"""The delta-rule folds in stepping form, shared by GatedDeltaNet (a gate per head) and KDA (a gate per K channel).

Every row `S[v, :]` of a `[V, K]` state evolves on its own under the delta rule (it needs only `v[v]`, k, the gate
and beta), so a program holds BV rows in registers and applies the tokens one by one with fp32 FMAs: one read and
one write of the state, no tensor cores, and the float32 result is the reference's recurrence. The token loop is
pipelined: the next tokens' k and gates load while one is applied. (A static loop over the whole ring, tokens past
the count as identity steps, was 3-17 points slower on an H200 at 2 and 4 tokens: results/kernel_experiments.md.)
"""

from __future__ import annotations

import triton
import triton.language as tl

from .._common import lead_strides, next_pow2
from .._launch import Launch
from ._fold import head_unit, ring_base, rings_with_strides
from .conv import conv_fold, with_window

# Pipeline stages of the token loop: 3 were the fastest of 1..6 on an H200 for KDA at 16 tokens; for GatedDeltaNet
# float32 at 4 tokens 3 and 4 were within a point, 2 up to 21 points slower (results/kernel_experiments.md).
STEP_STAGES = 3


@triton.jit
def _token(s, kb, vb, gb, eb, t, ks3, vs3, gs3, es3, km, vm, PER_K: tl.constexpr):
    """Token `t` applied to rows `s` `[BV, BK]` (fp32): `S = S e^g; S += beta (v - S k) k^T`."""
    kt = tl.load(kb + t * ks3, mask=km, other=0.0).to(tl.float32)
    vt = tl.load(vb + t * vs3, mask=vm, other=0.0).to(tl.float32)
    bt = tl.load(eb + t * es3).to(tl.float32)
    if PER_K:
        s = s * tl.exp(tl.load(gb + t * gs3, mask=km, other=0.0).to(tl.float32))[None, :]
    else:
        s = s * tl.exp(tl.load(gb + t * gs3).to(tl.float32))
    u = bt * (vt - tl.sum(s * kt[None, :], 1))  # [BV]: beta (v - S k)
    return s + u[:, None] * kt[None, :]


@triton.jit
def _step_kernel(
    ssm, ss0, ss1,
    k, ks0, ks1, ks2, ks3,
    v, vs0, vs1, vs2, vs3,
    g, gs0, gs1, gs2, gs3,
    beta, es0, es1, es2, es3,
    slots, bufs, counts,
    NB, H, V, K, HPG, NVB,
    conv, cs0, cs1, cin, is0, is1, is2, is3, C, NCB, NU,
    BV: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, PER_K: tl.constexpr,
    CONV: tl.constexpr = False, KM1: tl.constexpr = 1, BJ: tl.constexpr = 1, BC: tl.constexpr = 1, BLOCK: tl.constexpr = 1,
):  # fmt: skip
    # Programs NU.. fold the conv window (`conv_fold`). CONV is a constexpr tested on its own, so that a launch without
    # a window compiles no branch for it.
    if CONV:  # noqa: SIM102
        if tl.program_id(0) >= NU:
            conv_fold(conv, cs0, cs1, cin, is0, is1, is2, is3, slots, bufs, counts, tl.program_id(0) - NU, NB, C, NCB,
                       KM1, BJ, BC, BLOCK)
            return
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
        gb = ring_base(g, gs0, gs1, gs2, layer, slot, r) + (h * K + kk if PER_K else h)
        eb = ring_base(beta, es0, es1, es2, layer, slot, r) + h
        for t in tl.range(0, c, num_stages=STAGES):
            s = _token(s, kb, vbase, gb, eb, t, ks3, vs3, gs3, es3, km, vm, PER_K)
        tl.store(sp, s.to(ssm.dtype.element_ty), mask=sm)


class Stepper:
    """The stepping launch of a checked delta-rule fold (`ssm` `[L, S, H, V, K]`, rings k, v, g, beta):
    `launch(nb, window)` is a batch's launch, with the conv `window` (`conv.state_window`) if any.
    `config` = `(BV rows of V per program, num_warps)`; `per_k`: a gate per K channel (KDA)."""

    def __init__(self, ssm, k, v, g, beta, dims: tuple, config: tuple[int, int], per_k: bool):
        L, H, V, K, hpg = dims
        bv, self.warps = config
        nvb = triton.cdiv(V, bv)
        self.units = L * H * nvb
        self.args = (ssm, *lead_strides(ssm, 2), *rings_with_strides(k, v, g, beta))
        self.dims = (H, V, K, hpg, nvb)
        self.constexprs = dict(BV=bv, BK=max(16, next_pow2(K)), STAGES=STEP_STAGES, PER_K=per_k)

    def launch(self, nb: int, window) -> Launch:
        n = len(self.args)
        grid, args, consts = with_window(window, self.units * nb, nb, (*self.args, None, None, None, nb, *self.dims), self.constexprs)
        return Launch(_step_kernel, grid, args, (n, n + 1, n + 2), consts, num_warps=self.warps)
