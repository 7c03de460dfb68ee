"""Triton slot reset: one launch zeroes `pool[:, slots]` in up to four pools (any float dtypes, both layouts).

Programs walk units `(pool, layer, request, chunk)`, or `(pool, request, layer, chunk)` when a pool keeps a
request's layers side by side (`_common.layer_inner`); the chunk axis varies fastest so neighbouring programs
write neighbouring memory. Pools are moved as 4-, 2- or 1-byte words; offsets are computed in int64.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._blocks import chunk_unit
from .._common import (
    check_ranges,
    group_config,
    launch_grid,
    layer_inner,
    lead_strides,
    pool_args,
    pool_groups,
    same_device,
    state_numel,
    word_size,
    word_view,
)
from .._launch import Launch, Plan
from .._oneshot import PLANS

MAX_POOLS = 4


@triton.jit
def _zero_unit(ptr, st0, st1, D, nch, NL, u, slots_ptr, B, BLOCK: tl.constexpr, EVEN: tl.constexpr, LAYER_INNER: tl.constexpr):
    chunk, b, layer = chunk_unit(u, nch, B, NL, LAYER_INNER)
    slot = tl.load(slots_ptr + b).to(tl.int64)
    start = chunk.to(tl.int64) * BLOCK
    base = layer * st0 + slot * st1 + start
    offs = tl.arange(0, BLOCK)
    zero = tl.zeros([BLOCK], dtype=ptr.dtype.element_ty)
    if EVEN:
        tl.store(ptr + base + offs, zero)
    else:
        tl.store(ptr + base + offs, zero, mask=offs < D - start)


@triton.jit
def _reset_kernel(
    slots_ptr, B,
    p0, a0, b0, d0, n0, l0, u0,
    p1, a1, b1, d1, n1, l1, u1,
    p2, a2, b2, d2, n2, l2, u2,
    p3, a3, b3, d3, n3, l3,
    NPOOLS: tl.constexpr, BLOCK: tl.constexpr, LAYER_INNER: tl.constexpr,
    E0: tl.constexpr, E1: tl.constexpr, E2: tl.constexpr, E3: tl.constexpr,
):  # fmt: skip
    # u0..u2 are the cumulative unit counts at the end of pools 0..2; NPOOLS branches are resolved at compile time.
    pid = tl.program_id(0)
    if pid < u0:
        _zero_unit(p0, a0, b0, d0, n0, l0, pid, slots_ptr, B, BLOCK, E0, LAYER_INNER)
    else:
        if NPOOLS > 1:
            if pid < u1:
                _zero_unit(p1, a1, b1, d1, n1, l1, pid - u0, slots_ptr, B, BLOCK, E1, LAYER_INNER)
            else:
                if NPOOLS > 2:
                    if pid < u2:
                        _zero_unit(p2, a2, b2, d2, n2, l2, pid - u1, slots_ptr, B, BLOCK, E2, LAYER_INNER)
                    else:
                        if NPOOLS > 3:
                            _zero_unit(p3, a3, b3, d3, n3, l3, pid - u2, slots_ptr, B, BLOCK, E3, LAYER_INNER)


class ResetSlotsPlan(Plan):
    """`reset_slots` of bound pools: `plan(slots)` zeroes `pool[:, slots]` in every pool, one launch per group of
    up to `MAX_POOLS` pools with one word type (in practice one launch), with no host-side work but the launches
    (`slots` on the pools' device, int32 or int64, ranges not checked; see `check`)."""

    def __init__(self, pools: list[torch.Tensor], *, config: tuple[int, int] | None = None):
        super().__init__()
        pools = list(pools)
        self.device = same_device(**{f"pools[{i}]": p for i, p in enumerate(pools)}) if pools else None
        for i, p in enumerate(pools):
            state_numel(p, 2, f"pools[{i}]")
        self.slots_limit = min((p.shape[1] for p in pools), default=0)
        views = [word_view(p, 2, word_size(p, 2)) for p in pools if p.numel() > 0]
        self.groups = pool_groups(views, lambda v: v.dtype, MAX_POOLS)
        self.config = config

    def __call__(self, slots: torch.Tensor) -> None:
        for launch in self.launches(self.key(slots)):
            launch.run(slots)

    def key(self, slots: torch.Tensor) -> tuple:
        return (slots.shape[0], slots.dtype)

    def group_launch(self, views: list[torch.Tensor], nb: int) -> Launch:
        block, warps = group_config(views, nb, self.config)

        def args_of(v):
            d = v.shape[2]
            nch = triton.cdiv(d, block)
            return [v, *lead_strides(v, 2), d, nch, v.shape[0]], nch, d % block == 0

        flat, evens, total = pool_args(views, MAX_POOLS, nb, args_of)
        launch_grid("reset_slots", total)
        every = (None, nb, *flat, len(views), block, layer_inner(*((v, 0) for v in views)), *evens)
        return Launch(_reset_kernel, total, every, (0,), num_warps=warps)

    def check(self, slots: torch.Tensor) -> None:
        """`0 <= slots < S` for the smallest pool (one synchronization)."""
        check_ranges([("slots", slots, 0, self.slots_limit)])


def reset_slots_triton(
    pools: list[torch.Tensor], slots: torch.Tensor, *, check: bool = True, config: tuple[int, int] | None = None
) -> None:
    """Zero `pool[:, slots]` for every `[L, S, *state]` pool; see `reference.reset_slots_reference`."""
    PLANS.run("reset_slots", list(pools), config, _plan, ("slots",), (slots,), check)


def _plan(pools: list[torch.Tensor], config) -> ResetSlotsPlan:
    return ResetSlotsPlan(pools, config=config)
