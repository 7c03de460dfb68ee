"""`reset_slots`: zero whole slots of one or more state pools, all layers in one launch."""

from __future__ import annotations

from functools import cache

import torch

from .reference import reset_slots_reference

__all__ = ["reset_slots", "reset_slots_plan", "reset_slots_reference"]


def reset_slots(pools: list[torch.Tensor], slots: torch.Tensor, *, check: bool = True) -> None:
    """Zero `pool[:, slots]` for each `[L, S, *state]` pool (Triton on CUDA, torch otherwise).

    `check=False` skips the host-side index-range check (which synchronizes when `slots` is on the GPU).
    """
    if pools and pools[0].is_cuda:
        _kernel().reset_slots_triton(pools, slots, check=check)
    else:
        reset_slots_reference(pools, slots)


def reset_slots_plan(pools: list[torch.Tensor]):
    """`reset_slots` bound to its pools: a callable `(slots)` that checks nothing per call (the Triton
    `ResetSlotsPlan` on CUDA, the torch reference otherwise)."""
    pools = list(pools)
    if pools and pools[0].is_cuda:
        return _kernel().ResetSlotsPlan(pools)
    return lambda slots: reset_slots_reference(pools, slots)


@cache
def _kernel():
    """`kernel`, imported on the first CUDA call (Triton is imported only then; once: an import costs microseconds)."""
    from . import kernel

    return kernel
