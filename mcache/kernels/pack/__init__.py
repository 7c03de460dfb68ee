"""`pack` / `unpack`: gather a request's state slices (heads, conv sections) into a transfer buffer and back."""

from __future__ import annotations

from functools import cache

import torch

from .reference import pack_reference, unpack_reference

__all__ = ["pack", "pack_plan", "pack_reference", "unpack", "unpack_plan", "unpack_reference"]


def pack(pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], out: torch.Tensor, *, check: bool = True) -> None:
    """`out[b, l]` = the `(start, length)` ranges of flattened `pool[l, slots[b]]`, concatenated."""
    if pool.is_cuda:
        _kernel().pack_triton(pool, slots, ranges, out, check=check)
    else:
        pack_reference(pool, slots, ranges, out)


def unpack(packed: torch.Tensor, pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], *, check: bool = True) -> None:
    """Inverse of `pack`: scatter `packed[b, l]` back into the ranges of `pool[l, slots[b]]`."""
    if pool.is_cuda:
        _kernel().unpack_triton(packed, pool, slots, ranges, check=check)
    else:
        unpack_reference(packed, pool, slots, ranges)


def pack_plan(items: list[tuple[torch.Tensor, list[tuple[int, int]], torch.Tensor]]):
    """`pack` bound to triples `[(pool, ranges, out), ...]` (`out` `[B, L, total]` each; a kind's conv window and
    SSM state, say): a callable `(slots)` that packs every pool and checks nothing per call (the Triton `PackPlan`
    on CUDA, one launch for two pools; the torch reference otherwise)."""
    items = list(items)
    if items and items[0][0].is_cuda:
        return _kernel().PackPlan(items)

    def reference(slots: torch.Tensor) -> None:
        for pool, ranges, out in items:
            pack_reference(pool, slots, ranges, out)

    return reference


def unpack_plan(items: list[tuple[torch.Tensor, list[tuple[int, int]], torch.Tensor]]):
    """`unpack` bound like `pack_plan`, triples `[(pool, ranges, packed), ...]`: a callable `(slots)`."""
    items = list(items)
    if items and items[0][0].is_cuda:
        return _kernel().PackPlan(items, to_pool=True)

    def reference(slots: torch.Tensor) -> None:
        for pool, ranges, packed in items:
            unpack_reference(packed, pool, slots, ranges)

    return reference


@cache
def _kernel():
    """`kernel`, imported on the first CUDA call (Triton is imported only then; once: an import costs microseconds)."""
    from . import kernel

    return kernel
