"""flash-linear-attention's fused recurrent kernels as baselines of the GatedDeltaNet and KDA folds (`fla-core`, the
optional extra `fla`; imported lazily, only where it is installed).

`fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule` and `fla.ops.kda.fused_recurrent_kda` run the same
recurrence as the folds (the engines' decode and verify kernels derive from them), one sequence per request, one call
per layer as an engine makes it. Each is given the fold's own tokens, taken from the rings beforehand in the token-major
layout FLA reads (`[B, T, heads, dim]`, not timed: an engine has them so), FLA's state layout `state_v_first=True`
(`[N, H, V, K]`, the pool's), a query (FLA also reads q and writes o) and the default scale. Two rows:
- `fla`: the same job as the fold: per layer, gather the requests' states from the pool, run FLA's kernel, and write
  its final state (float32) back into the pool's slots;
- `fla-kernel`: FLA's kernels alone on states gathered beforehand (contiguous, float32): its lower bound.
Each is checked against the torch reference before it is timed, like every row.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import torch

FLA_KINDS = ("gdn", "kda")


def available() -> bool:
    """Whether `fla-core` is installed (without importing it)."""
    return importlib.util.find_spec("fla") is not None


def _entry(kind: str):
    if kind == "gdn":
        from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fn
    else:
        from fla.ops.kda import fused_recurrent_kda as fn
    return fn


def fla_cases(kind: str, ssm: torch.Tensor, rings: list[torch.Tensor], slots: torch.Tensor, buf: torch.Tensor,
              tokens: int, gen: torch.Generator) -> list[tuple[str, Callable[[], None], Callable[[], torch.Tensor]]]:
    """`(impl, run, final)` of each FLA row for folding `tokens` of ring `buf` of `slots` into `ssm` (`rings`: k, v,
    g, beta); `final()` runs once and returns the folded states `[L, B, H, V, K]` without touching the pool. Empty
    where FLA is missing or the kind has no FLA kernel."""
    if kind not in FLA_KINDS or not available():
        return []
    fn = _entry(kind)
    k, v, g, beta = rings
    L = ssm.shape[0]
    # The tokens each request folds, token-major per layer: [L, B, T, heads, dim] (gathered once, not timed).
    per = [r[:, slots, buf, :tokens].contiguous() for r in (k, v, g, beta)]
    kk, vv, gg, bb = per
    q = (torch.rand(kk.shape, generator=gen) * 0.2 - 0.1).to(kk)  # `gen` is the run's CPU generator
    def layer(i: int, h0: torch.Tensor) -> torch.Tensor:
        _, ht = fn(q[i], kk[i], vv[i], g=gg[i], beta=bb[i], initial_state=h0, output_final_state=True,
                   state_v_first=True)
        return ht

    def run() -> None:
        for i in range(L):
            ssm[i, slots] = layer(i, ssm[i, slots]).to(ssm.dtype)

    fixed = ssm[:, slots].float().contiguous()
    outs: list[torch.Tensor | None] = [None] * L

    def kernel_only() -> None:
        for i in range(L):
            outs[i] = layer(i, fixed[i])

    def final() -> torch.Tensor:
        return torch.stack([layer(i, ssm[i, slots]) for i in range(L)]).to(ssm.dtype)

    return [("fla", run, final), ("fla-kernel", kernel_only, final)]
