"""The KDA fold (a gate per K channel), stepping (`step.py`): a program holds a few rows of the state in
registers and applies the tokens one by one. (Its chunked form needs `e^{G_t - G_s}` per channel and token
pair, a `[CT, CT, K]` contraction off the tensor cores; split as `e^{G_t} e^{-G_s}` it overflows for strong
gates.)
"""

from __future__ import annotations

from .._launch import Launch
from .._oneshot import PLANS
from ._fold import FOLD_INDICES, FoldPlan, delta_args
from .conv import state_window
from .step import Stepper

# `(BV rows of V per program, num_warps)` of the KDA fold: 16 rows on one warp were the fastest of BV 8..64 on 1..4
# warps on an H200 for Kimi-Linear's `[32, 128, 128]` states at 16 tokens (float32: 40-41% of the size-matched copy
# against 30-32% for 32 rows unpipelined; bfloat16: 30-37% against 27-32%).
KDA_CONFIG = (16, 1)


class KdaFoldPlan(FoldPlan):
    """The KDA fold of a bound `[L, S, H, V, K]` state and its k, v, g (per channel), beta rings (and, with
    `conv`, the conv window: `conv.state_window`), in one launch (`step.Stepper`); `config` = `(BV rows of V per
    program, num_warps)`."""

    def __init__(self, ssm, k, v, g, beta, *, conv=None, config: tuple[int, int] | None = None):
        (L, H, V, K, hpg, hist, nbuf, S), dev = delta_args(ssm, k, v, g, beta, per_channel=True)
        super().__init__(dev, S, nbuf, hist)
        self.empty = ssm.numel() == 0
        self.stepper = Stepper(ssm, k, v, g, beta, (L, H, V, K, hpg), config or KDA_CONFIG, per_k=True)
        self.window = state_window(self, conv, L, self.stepper.warps)

    def build(self, nb: int) -> tuple[Launch, ...]:
        return (self.stepper.launch(nb, self.window),)


def replay_fold_kda_triton(ssm, k, v, g, beta, slots, buf, count, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.replay_fold_kda_reference` and `KdaFoldPlan`."""
    PLANS.run("fold_kda", (ssm, k, v, g, beta), config, _plan, FOLD_INDICES, (slots, buf, count), check)


def _plan(tensors: tuple, config) -> KdaFoldPlan:
    return KdaFoldPlan(*tensors, config=config)
