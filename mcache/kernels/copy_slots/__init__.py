"""`copy_slots`: copy whole slots within a pool (relocation) or between pools (snapshot, restore)."""

from __future__ import annotations

from functools import cache

import torch

from .reference import copy_slots_reference

__all__ = ["copy_slots", "copy_slots_plan", "copy_slots_reference"]


def copy_slots(src: torch.Tensor, src_slots: torch.Tensor, dst: torch.Tensor, dst_slots: torch.Tensor, *, check: bool = True) -> None:
    """`dst[:, dst_slots[b]] = src[:, src_slots[b]]` (Triton on CUDA, torch otherwise).

    Within one pool, a slot may not be both read and written by one call (the kernel does not gather first).
    """
    if dst.is_cuda:
        _kernel().copy_slots_triton(src, src_slots, dst, dst_slots, check=check)
    else:
        copy_slots_reference(src, src_slots, dst, dst_slots)


def copy_slots_plan(pairs: list[tuple[torch.Tensor, torch.Tensor]], *, config: tuple[int, int] | None = None):
    """`copy_slots` bound to pool pairs `[(src, dst), ...]` (a request's conv window and SSM state, say): a callable
    `(src_slots, dst_slots)` that copies the slots in every pair and checks nothing per call (the Triton
    `CopySlotsPlan` on CUDA, one launch for two pairs, with `config` = `(BLOCK, num_warps)` if given; the torch
    reference otherwise)."""
    pairs = list(pairs)
    if pairs and pairs[0][1].is_cuda:
        return _kernel().CopySlotsPlan(pairs, config=config)

    def reference(src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        for src, dst in pairs:
            copy_slots_reference(src, src_slots, dst, dst_slots)

    return reference


@cache
def _kernel():
    """`kernel`, imported on the first CUDA call (Triton is imported only then; once: an import costs microseconds)."""
    from . import kernel

    return kernel
