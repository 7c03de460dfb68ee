"""Triton pack/unpack of state slices between a pool and a `[B, L, total]` transfer buffer, up to two (pool,
buffer) pairs in one launch.

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
    check_ranges,
    copy_config,
    fail,
    launch_grid,
    layer_inner,
    lead_strides,
    pool_args,
    pool_groups,
    same_device,
    same_dtype,
    state_numel,
    word_views,
)
from .._launch import Launch, Plan
from .._oneshot import PLANS

MAX_PAIRS = 2


@triton.jit
def _pack_unit(pool, ps0, ps1, packed, qs0, qs1, table, NCH, NL, u, slots, B,
               TO_POOL: tl.constexpr, BLOCK: tl.constexpr, ALIGN: tl.constexpr, LAYER_INNER: tl.constexpr):  # fmt: skip
    j, b, layer = chunk_unit(u, NCH, B, NL, LAYER_INNER)
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


@triton.jit
def _pack_kernel(
    slots, B,
    p0, a0, b0, q0, c0, e0, t0, n0, l0, u0,
    p1, a1, b1, q1, c1, e1, t1, n1, l1,
    NPAIRS: tl.constexpr, TO_POOL: tl.constexpr, BLOCK: tl.constexpr, LAYER_INNER: tl.constexpr,
    A0: tl.constexpr, A1: tl.constexpr,
):  # fmt: skip
    # Pair i: pool, its two lead strides, buffer, its two lead strides, chunk table, chunks per request and
    # layer, layers; u0 is the number of pair 0's units. The NPAIRS branch is resolved at compile time.
    pid = tl.program_id(0)
    if pid < u0:
        _pack_unit(p0, a0, b0, q0, c0, e0, t0, n0, l0, pid, slots, B, TO_POOL, BLOCK, A0, LAYER_INNER)
    else:
        if NPAIRS > 1:
            _pack_unit(p1, a1, b1, q1, c1, e1, t1, n1, l1, pid - u0, slots, B, TO_POOL, BLOCK, A1, LAYER_INNER)


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


class PackPlan(Plan):
    """`pack` (or, with `to_pool`, `unpack`) of bound triples `[(pool, ranges, packed), ...]`: each pool's fixed
    `(start, length)` ranges to or from its `[B, L, total]` buffer (a kind's conv window and SSM state: one
    launch). `plan(slots)` launches with no host-side work but the launches (`slots` `[B]` on the pools' device,
    int32 or int64, range not checked; see `check`)."""

    def __init__(self, items, *, to_pool: bool = False, config: tuple[int, int] | None = None):
        super().__init__()
        items = [(pool, tuple((int(s), int(n)) for s, n in ranges), packed) for pool, ranges, packed in items]
        self.name = name = "unpack" if to_pool else "pack"
        self.device = same_device(**{f"items[{i}].{n}": t for i, (p, _, q) in enumerate(items) for n, t in (("pool", p), ("buffer", q))})
        self.pools, self.batch = [p for p, _, _ in items], items[0][2].shape[0]
        self.index_length = self.batch  # a request's slot per buffer row
        self.to_pool, self.config = to_pool, config
        views = []
        for pool, ranges, packed in items:
            same_dtype(name, pool=pool, buffer=packed)
            numel = state_numel(pool, 2, "pool")
            for s, n in ranges:
                if s < 0 or n < 0 or s + n > numel:
                    fail(f"{name}: range (start={s}, length={n}) is outside the state of {numel} elements")
            total, nl = sum(n for _, n in ranges), pool.shape[0]
            if packed.dim() != 3 or packed.shape != (self.batch, nl, total) or (total > 1 and packed.stride(2) != 1):
                fail(f"{name}: buffer must be [B={self.batch}, L={nl}, total={total}] with a contiguous last dim, "
                     f"got {tuple(packed.shape)} strides {packed.stride()}")  # fmt: skip
            ranges = tuple(r for r in ranges if r[1] > 0)
            if total and nl and self.batch:
                w, pv, qv = word_views(pool, 2, packed, 2, [v for r in ranges for v in r])
                es = pool.element_size()  # word_size made every start and length a whole number of words
                views.append((pv, qv, tuple((s * es // w, n * es // w) for s, n in ranges)))
        self.groups = pool_groups(views, lambda v: v[0].dtype, MAX_PAIRS)

    def __call__(self, slots: torch.Tensor) -> None:
        for launch in self.launches(self.key(slots)):
            launch.run(slots)

    def key(self, slots: torch.Tensor) -> tuple:
        return (self.batch, slots.dtype)  # the batch is the buffers'

    def group_launch(self, group, nb: int) -> Launch:
        wb = group[0][0].element_size()
        moved = sum(pv.shape[0] * sum(n for _, n in words) for pv, _, words in group) * nb
        block, warps = copy_config(max(n for _, _, words in group for _, n in words), wb, self.config, moved, self.device)

        def args_of(item):
            pv, qv, words = item
            tab, nch, align = _chunk_table(words, block, pv.device)
            return [pv, *lead_strides(pv, 2), qv, *lead_strides(qv, 2), tab, nch, pv.shape[0]], nch, align

        flat, aligns, units = pool_args(group, MAX_PAIRS, nb, args_of)
        inner = layer_inner(*((v, d) for pv, qv, _ in group for v, d in ((pv, 0), (qv, 1))))
        args = (None, nb, *flat, len(group), self.to_pool, block, inner, *aligns)
        return Launch(_pack_kernel, launch_grid(self.name, units), args, (0,), num_warps=warps)

    def check(self, slots: torch.Tensor) -> None:
        """One slot per buffer row, each within the pools (one synchronization)."""
        if slots.shape[0] != self.batch:
            fail(f"{self.name}: {slots.shape[0]} slots for a buffer of {self.batch} requests")
        check_ranges([("slots", slots, 0, min(p.shape[1] for p in self.pools))])


def _run(pool, slots, ranges, packed, to_pool: bool, check: bool, config) -> None:
    PLANS.run("pack", (pool, packed), (tuple(tuple(r) for r in ranges), to_pool, config), _one_pool, ("slots",),
              (slots,), check)


def _one_pool(tensors: tuple[torch.Tensor, torch.Tensor], options) -> PackPlan:
    (pool, packed), (ranges, to_pool, config) = tensors, options
    return PackPlan([(pool, ranges, packed)], to_pool=to_pool, config=config)


def pack_triton(pool, slots, ranges, out, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.pack_reference`: `pool` `[L, S, *st]` -> `out` `[B, L, total]` (one dtype, bit copy)."""
    _run(pool, slots, ranges, out, False, check, config)


def unpack_triton(packed, pool, slots, ranges, *, check: bool = True, config: tuple[int, int] | None = None) -> None:
    """See `reference.unpack_reference`: `packed` `[B, L, total]` -> `pool` `[L, S, *st]`."""
    _run(pool, slots, ranges, packed, True, check, config)
