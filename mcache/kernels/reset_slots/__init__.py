"""`reset_slots`: zero whole slots of one or more state pools, all layers in one launch."""

from __future__ import annotations

import torch

from .reference import reset_slots_reference

__all__ = ["reset_slots", "reset_slots_reference"]


def reset_slots(pools: list[torch.Tensor], slots: torch.Tensor, *, check: bool = True) -> None:
    """Zero `pool[:, slots]` for each `[L, S, *state]` pool (Triton on CUDA, torch otherwise).

    `check=False` skips the host-side index-range check (which synchronizes when `slots` is on the GPU).
    """
    if pools and pools[0].is_cuda:
        from .kernel import reset_slots_triton

        reset_slots_triton(pools, slots, check=check)
    else:
        reset_slots_reference(pools, slots)
