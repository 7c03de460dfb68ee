"""`reset_slots`: zero whole slots of one or more state pools, all layers in one launch."""

from __future__ import annotations

import torch

from .._dispatch import run
from .reference import reset_slots_reference

__all__ = ["reset_slots", "reset_slots_plan", "reset_slots_reference"]


def reset_slots(pools: list[torch.Tensor], slots: torch.Tensor, *, check: bool = True) -> None:
    """Zero `pool[:, slots]` for each `[L, S, *state]` pool (Triton on CUDA, torch otherwise).

    `check=False` skips the host-side index-range check (which synchronizes when `slots` is on the GPU).
    """
    run(bool(pools) and pools[0].is_cuda, __package__, "reset_slots", reset_slots_reference, pools, slots, check=check)


def reset_slots_plan(pools: list[torch.Tensor]):
    """`reset_slots` bound to its pools: a callable `(slots)` that checks nothing per call (the Triton
    `ResetSlotsPlan` on CUDA, the torch reference otherwise)."""
    pools = list(pools)
    if pools and pools[0].is_cuda:
        from .kernel import ResetSlotsPlan

        return ResetSlotsPlan(pools)
    return lambda slots: reset_slots_reference(pools, slots)
