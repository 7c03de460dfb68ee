"""Triton pack/unpack of state slices between a pool and a `[B, L, total]` transfer buffer.

The `(start, length)` ranges are split on the host into chunks of at most BLOCK words, kept in a small
device table (cached per ranges, word size, block and device). Programs walk `(request, layer, chunk)` when the
buffer's (or the pool's) layers lie side by side (`_common.layer_inner`), else `(layer, request, chunk)`; chunk
fastest. Full chunks take the unmasked path; `ALIGN` tells Triton how aligned every chunk start and length is so
that accesses stay 16 bytes wide. Offsets are int64.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
import triton
import triton.language as tl

from .._blocks import chunk_unit, move_block
from .._common import (
    as_index,
    check_ranges,
    copy_config,
    fail,
    launch_grid,
    layer_inner,
    lead_strides,
    same_device,
    same_dtype,
    state_numel,
    word_views,
)
from .._launch import Launch


@triton.jit
def _pack_kernel(
    pool, slots, ps0, ps1,
    packed, qs0, qs1,
    table, B, NL, NCH,
    TO_POOL: tl.constexpr, BLOCK: tl.constexpr, ALIGN: tl.constexpr, LAYER_INNER: tl.constexpr,
):  # fmt: skip
    j, b, layer = chunk_unit(tl.program_id(0), NCH, B, NL, LAYER_INNER)
    p_start = tl.multiple_of(tl.load(table + 3 * j), ALIGN)
    q_start = tl.multiple_of(tl.load(table + 3 * j + 1), ALIGN)
    length = tl.multiple_of(tl.load(table + 3 * j + 2), ALIGN)
    slot = tl.load(slots + b).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    p_ptr = pool + (layer * ps0 + slot * ps1 + p_start) + offs
    q_ptr = packed + (b.to(tl.int64) * qs0 + layer * qs1 + q_start) + offs
    if TO_POOL:
        src_ptr, dst_ptr = q_ptr, p_ptr
    else:
        src_ptr, dst_ptr = p_ptr, q_ptr
    move_block(src_ptr, dst_ptr, offs, length, length == BLOCK)


@lru_cache(maxsize=256)
def _chunk_table(ranges: tuple[tuple[int, int], ...], block: int, device: torch.device):
    """Rows `(state_start, packed_start, length)` in words, each chunk at most `block` words; and ALIGN."""
    rows, q = [], 0
    for start, length in ranges:
        for off in range(0, length, block):
            rows.append((start + off, q + off, min(block, length - off)))
        q += length
    g = 0
    for r in rows:
        g = math.gcd(g, math.gcd(math.gcd(r[0], r[1]), r[2]))
    align = 16
    while align > 1 and g % align:
        align //= 2
    tab = torch.tensor(rows, dtype=torch.int64).reshape(-1).to(device)
    return tab, len(rows), align


class PackPlan:
    """`pack` (or, with `to_pool`, `unpack`) between a bound pool and a bound `[B, L, total]` buffer over fixed
    `(start, length)` ranges: `plan(slots)` launches with no host-side work but the launch (`slots` `[B]` on the
    pool's device, int32 or int64, range not checked; see `check`)."""

    def __init__(self, pool: torch.Tensor, ranges, packed: torch.Tensor, *, to_pool: bool = False,
                 config: tuple[int, int] | None = None):
        self.name = name = "unpack" if to_pool else "pack"
        self.device = same_device(pool=pool, packed=packed)
        same_dtype(name, pool=pool, buffer=packed)
        numel = state_numel(pool, 2, "pool")
        ranges = tuple((int(s), int(n)) for s, n in ranges)
        for s, n in ranges:
            if s < 0 or n < 0 or s + n > numel:
                fail(f"{name}: range (start={s}, length={n}) is outside the state of {numel} elements")
        total = sum(n for _, n in ranges)
        nl = pool.shape[0]
        if packed.dim() != 3 or packed.shape[1:] != (nl, total) or (total > 1 and packed.stride(2) != 1):
            fail(f"{name}: buffer must be [B, L={nl}, total={total}] with a contiguous last dim, "
                 f"got {tuple(packed.shape)} strides {packed.stride()}")  # fmt: skip
        self.pool, self.batch = pool, packed.shape[0]
        ranges = tuple(r for r in ranges if r[1] > 0)
        self._launches: dict[torch.dtype, Launch] = {}
        self._args = None
        if self.batch == 0 or total == 0 or nl == 0:
            return
        flat = [v for r in ranges for v in r]
        w, pv, qv = word_views(pool, 2, packed, 2, flat)
        es = pool.element_size()  # word_size made every start and length a whole number of words
        words = tuple((s * es // w, n * es // w) for s, n in ranges)
        nb = self.batch
        block, warps = copy_config(max(n for _, n in words), w, config, nl * nb * sum(n for _, n in words), pv.device)
        tab, nch, align = _chunk_table(words, block, pv.device)
        grid = launch_grid(name, nl * nb * nch)
        args = (pv, None, *lead_strides(pv, 2), qv, *lead_strides(qv, 2), tab, nb, nl, nch,
                to_pool, block, align, layer_inner((pv, 0), (qv, 1)))
        self._args = (grid, args, warps)

    def __call__(self, slots: torch.Tensor) -> None:
        launch = self._launches.get(slots.dtype)
        if launch is None:
            if self._args is None:
                return
            grid, args, warps = self._args
            launch = self._launches[slots.dtype] = Launch(_pack_kernel, grid, args, (1,), num_warps=warps)
        launch(slots)

    def check(self, slots: torch.Tensor) -> None:
        """One slot per buffer row, each within the pool (one synchronization)."""
        if slots.shape[0] != self.batch:
            fail(f"{self.name}: {slots.shape[0]} slots for a buffer of {self.batch} requests")
        check_ranges([("slots", slots, 0, self.pool.shape[1])])


def _run(pool, slots, ranges, packed, to_pool: bool, check: bool, config) -> None:
    plan = PackPlan(pool, ranges, packed, to_pool=to_pool, config=config)
    slots = as_index("slots", slots, plan.batch, plan.device)
    if check:
        plan.check(slots)
    plan(slots)


def pack_triton(pool, slots, ranges, out, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.pack_reference`: `pool` `[L, S, *st]` -> `out` `[B, L, total]` (one dtype, bit copy)."""
    _run(pool, slots, ranges, out, False, check, config)


def unpack_triton(packed, pool, slots, ranges, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.unpack_reference`: `packed` `[B, L, total]` -> `pool` `[L, S, *st]`."""
    _run(pool, slots, ranges, packed, True, check, config)
