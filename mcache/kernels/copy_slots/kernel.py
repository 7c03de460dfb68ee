"""Triton slot copy: `dst[:, dst_slots[b]] = src[:, src_slots[b]]` for up to two pool pairs, all layers in one launch.

Programs walk units `(pair, layer, request, chunk)`, or `(pair, request, layer, chunk)` when a pool keeps a
request's layers side by side (`_common.layer_inner`), chunk fastest; states are moved as 4-, 2- or 1-byte
words; int64 offsets. A request's conv window and SSM state move in one launch: a launch costs the host as much
as a small torch op, so two launches cost it twice (results/kernel_experiments.md).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._blocks import chunk_unit, move_block
from .._common import (
    check_ranges,
    fail,
    group_config,
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
def _copy_unit(src, ss0, ss1, dst, ds0, ds1, D, NCH, NL, u, src_slots, dst_slots, B,
               BLOCK: tl.constexpr, EVEN: tl.constexpr, LAYER_INNER: tl.constexpr):  # fmt: skip
    chunk, b, layer = chunk_unit(u, NCH, B, NL, LAYER_INNER)
    start = chunk.to(tl.int64) * BLOCK
    s_slot = tl.load(src_slots + b).to(tl.int64)
    d_slot = tl.load(dst_slots + b).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    s_ptr = src + (layer * ss0 + s_slot * ss1 + start) + offs
    d_ptr = dst + (layer * ds0 + d_slot * ds1 + start) + offs
    move_block(s_ptr, d_ptr, offs, D - start, EVEN)


@triton.jit
def _copy_slots_kernel(
    src_slots, dst_slots, B,
    s0, a0, b0, t0, c0, e0, d0, n0, l0, u0,
    s1, a1, b1, t1, c1, e1, d1, n1, l1,
    NPAIRS: tl.constexpr, BLOCK: tl.constexpr, LAYER_INNER: tl.constexpr, E0: tl.constexpr, E1: tl.constexpr,
):  # fmt: skip
    # Pair i: source, its two lead strides, destination, its strides, state words, chunks, layers; u0 is the number
    # of pair 0's units. The NPAIRS branch is resolved at compile time.
    pid = tl.program_id(0)
    if pid < u0:
        _copy_unit(s0, a0, b0, t0, c0, e0, d0, n0, l0, pid, src_slots, dst_slots, B, BLOCK, E0, LAYER_INNER)
    else:
        if NPAIRS > 1:
            _copy_unit(s1, a1, b1, t1, c1, e1, d1, n1, l1, pid - u0, src_slots, dst_slots, B, BLOCK, E1, LAYER_INNER)


class CopySlotsPlan(Plan):
    """`copy_slots` between bound pool pairs `[(src, dst), ...]`: `plan(src_slots, dst_slots)` copies the slots in
    every pair, one launch per group of up to `MAX_PAIRS` pairs with one word type (conv window and SSM state: one
    launch), with no host-side work but the launches (index vectors on the pools' device, int32 or int64, ranges
    not checked; see `check`). `config` = `(BLOCK words, num_warps)`."""

    def __init__(self, pairs: list[tuple[torch.Tensor, torch.Tensor]], *, config: tuple[int, int] | None = None):
        pairs = list(pairs)
        if not pairs:
            fail("copy_slots: no pool pairs")
        self.device = same_device(**{f"pairs[{i}].{n}": t for i, p in enumerate(pairs) for n, t in zip("sd", p, strict=True)})
        for i, (src, dst) in enumerate(pairs):
            same_dtype("copy_slots", src=src, dst=dst)
            if src.dim() < 2 or src.shape[0] != dst.shape[0] or src.shape[2:] != dst.shape[2:]:
                fail(f"copy_slots: src {tuple(src.shape)} and dst {tuple(dst.shape)} need the same L and state shape")
            state_numel(src, 2, f"pairs[{i}].src")
            state_numel(dst, 2, f"pairs[{i}].dst")
        super().__init__()
        self.pairs, self.config = pairs, config
        words = [word_views(s, 2, d, 2)[1:] for s, d in pairs if s.numel()]
        self.groups = pool_groups(words, lambda sd: sd[0].dtype, MAX_PAIRS)

    def __call__(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        for launch in self.launches(self.key(src_slots, dst_slots)):
            launch.run(src_slots, dst_slots)

    def key(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> tuple:
        return (src_slots.shape[0], src_slots.dtype, dst_slots.dtype)

    def group_launch(self, group: list[tuple[torch.Tensor, torch.Tensor]], nb: int) -> Launch:
        block, warps = group_config([s for s, _ in group], nb, self.config)

        def args_of(pair):
            sv, dv = pair
            d = sv.shape[2]
            nch = triton.cdiv(d, block)
            return [sv, *lead_strides(sv, 2), dv, *lead_strides(dv, 2), d, nch, sv.shape[0]], nch, d % block == 0

        flat, evens, units = pool_args(group, MAX_PAIRS, nb, args_of)
        args = (None, None, nb, *flat, len(group), block, layer_inner(*((v, 0) for sd in group for v in sd)), *evens)
        return Launch(_copy_slots_kernel, launch_grid("copy_slots", units), args, (0, 1), num_warps=warps)

    def check(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        """The index ranges, and that no pool is both read and written at a slot (one synchronization)."""
        items = [("src_slots", src_slots, 0, min(s.shape[1] for s, _ in self.pairs)),
                 ("dst_slots", dst_slots, 0, min(d.shape[1] for _, d in self.pairs))]
        one_pool = any(s.untyped_storage().data_ptr() == d.untyped_storage().data_ptr() for s, d in self.pairs)
        if one_pool and src_slots.numel():
            shared = torch.isin(dst_slots, src_slots).any().long().view(1)
            items.append(("slots both read and written in one pool (count)", shared, 0, 1))
        check_ranges(items)


def copy_slots_triton(
    src: torch.Tensor,
    src_slots: torch.Tensor,
    dst: torch.Tensor,
    dst_slots: torch.Tensor,
    *,
    check: bool = True,
    config: tuple[int, int] | None = None,
) -> None:
    """`dst[:, dst_slots[b]] = src[:, src_slots[b]]`; see `reference.copy_slots_reference`.

    A pure bit copy: `src` and `dst` must have one dtype. Within one pool the read and written slot sets must
    be disjoint (checked when `check`); repeated destination slots leave one of the writers' values.
    """
    PLANS.run("copy_slots", (src, dst), config, _one_pair, ("src_slots", "dst_slots"), (src_slots, dst_slots), check)


def _one_pair(pools: tuple[torch.Tensor, torch.Tensor], config) -> CopySlotsPlan:
    return CopySlotsPlan([pools], config=config)
