"""`copy_slots`: copy whole slots within a pool (relocation) or between pools (snapshot, restore)."""

from __future__ import annotations

import torch

from .._dispatch import run
from .reference import copy_slots_reference

__all__ = ["copy_slots", "copy_slots_plan", "copy_slots_reference"]


def copy_slots(src: torch.Tensor, src_slots: torch.Tensor, dst: torch.Tensor, dst_slots: torch.Tensor, *, check: bool = True) -> None:
    """`dst[:, dst_slots[b]] = src[:, src_slots[b]]` (Triton on CUDA, torch otherwise).

    Within one pool, a slot may not be both read and written by one call (the kernel does not gather first).
    """
    run(dst.is_cuda, __package__, "copy_slots", copy_slots_reference, src, src_slots, dst, dst_slots, check=check)


def copy_slots_plan(src: torch.Tensor, dst: torch.Tensor, *, config: tuple[int, int] | None = None):
    """`copy_slots` bound to two pools: a callable `(src_slots, dst_slots)` that checks nothing per call (the
    Triton `CopySlotsPlan` on CUDA, with `config` = `(BLOCK, num_warps)` if given; the torch reference
    otherwise)."""
    if dst.is_cuda:
        from .kernel import CopySlotsPlan

        return CopySlotsPlan(src, dst, config=config)
    return lambda src_slots, dst_slots: copy_slots_reference(src, src_slots, dst, dst_slots)
