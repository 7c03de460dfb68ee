"""`pack` / `unpack`: gather a request's state slices (heads, conv sections) into a transfer buffer and back."""

from __future__ import annotations

import torch

from .reference import pack_reference, unpack_reference

__all__ = ["pack", "pack_reference", "unpack", "unpack_reference"]


def pack(pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], out: torch.Tensor, *, check: bool = True) -> None:
    """`out[b, l]` = the `(start, length)` ranges of flattened `pool[l, slots[b]]`, concatenated."""
    if pool.is_cuda:
        from .kernel import pack_triton

        pack_triton(pool, slots, ranges, out, check=check)
    else:
        pack_reference(pool, slots, ranges, out)


def unpack(packed: torch.Tensor, pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], *, check: bool = True) -> None:
    """Inverse of `pack`: scatter `packed[b, l]` back into the ranges of `pool[l, slots[b]]`."""
    if pool.is_cuda:
        from .kernel import unpack_triton

        unpack_triton(packed, pool, slots, ranges, check=check)
    else:
        unpack_reference(packed, pool, slots, ranges)
