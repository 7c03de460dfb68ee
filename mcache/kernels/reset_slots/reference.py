"""Plain-torch slot reset: the CPU path and the oracle for the Triton kernel."""

from __future__ import annotations

import torch


def reset_slots_reference(pools: list[torch.Tensor], slots: torch.Tensor) -> None:
    """Zero `pool[:, slots]` for every pool.

    Each pool is `[L, S, *state]` (layer-major as is, slot-major as `.transpose(0, 1)`); `slots` is int64 `[B]`.
    """
    for pool in pools:
        pool[:, slots.to(pool.device)] = 0
