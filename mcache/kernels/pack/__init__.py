"""`pack` / `unpack`: gather a request's state slices (heads, conv sections) into a transfer buffer and back."""

from __future__ import annotations

import torch

from .._dispatch import run
from .reference import pack_reference, unpack_reference

__all__ = ["pack", "pack_plan", "pack_reference", "unpack", "unpack_plan", "unpack_reference"]


def pack(pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], out: torch.Tensor, *, check: bool = True) -> None:
    """`out[b, l]` = the `(start, length)` ranges of flattened `pool[l, slots[b]]`, concatenated."""
    run(pool.is_cuda, __package__, "pack", pack_reference, pool, slots, ranges, out, check=check)


def unpack(packed: torch.Tensor, pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], *, check: bool = True) -> None:
    """Inverse of `pack`: scatter `packed[b, l]` back into the ranges of `pool[l, slots[b]]`."""
    run(pool.is_cuda, __package__, "unpack", unpack_reference, packed, pool, slots, ranges, check=check)


def pack_plan(pool: torch.Tensor, ranges: list[tuple[int, int]], out: torch.Tensor):
    """`pack` bound to a pool, its ranges and a `[B, L, total]` buffer: a callable `(slots)` that checks nothing
    per call (the Triton `PackPlan` on CUDA, the torch reference otherwise)."""
    if pool.is_cuda:
        from .kernel import PackPlan

        return PackPlan(pool, ranges, out)
    return lambda slots: pack_reference(pool, slots, ranges, out)


def unpack_plan(packed: torch.Tensor, pool: torch.Tensor, ranges: list[tuple[int, int]]):
    """`unpack` bound like `pack_plan`: a callable `(slots)`."""
    if pool.is_cuda:
        from .kernel import PackPlan

        return PackPlan(pool, ranges, packed, to_pool=True)
    return lambda slots: unpack_reference(packed, pool, slots, ranges)
