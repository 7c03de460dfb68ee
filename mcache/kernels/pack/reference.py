"""Plain-torch pack/unpack of a request's state slices: the CPU path and the kernels' oracle."""

from __future__ import annotations

import torch

from .._common import same_dtype


def _flat_state(pool: torch.Tensor) -> torch.Tensor:
    """`[L, S, *state]` -> `[L, S, prod(state)]` (a view: the state dims are contiguous)."""
    return pool.flatten(2) if pool.dim() > 2 else pool.unsqueeze(-1)


def pack_reference(pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]], out: torch.Tensor) -> None:
    """`out[b, l] = concat(flat(pool[l, slots[b]])[start : start + length] for (start, length) in ranges)`.

    `pool` is `[L, S, *state]`, `slots` int64 `[B]`, `out` is `[B, L, total]` with `total = sum(lengths)`;
    the ranges are element offsets into the flattened per-layer state.
    """
    same_dtype("pack", pool=pool, buffer=out)  # a bit copy, as the Triton launcher requires too
    flat = _flat_state(pool)
    slots = slots.to(pool.device)
    off = 0
    for start, length in ranges:
        out[:, :, off : off + length] = flat[:, slots, start : start + length].transpose(0, 1)
        off += length


def unpack_reference(packed: torch.Tensor, pool: torch.Tensor, slots: torch.Tensor, ranges: list[tuple[int, int]]) -> None:
    """Inverse of `pack`: write `packed[b, l]`'s pieces back into `pool[l, slots[b]]` at the given ranges."""
    same_dtype("unpack", pool=pool, buffer=packed)
    flat = _flat_state(pool)
    slots = slots.to(pool.device)
    off = 0
    for start, length in ranges:
        flat[:, slots, start : start + length] = packed[:, :, off : off + length].transpose(0, 1)
        off += length
