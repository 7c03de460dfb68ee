"""Triton slot copy: `dst[:, dst_slots[b]] = src[:, src_slots[b]]`, all layers in one launch.

Units `(layer, request, chunk)` or `(request, layer, chunk)` (`_common.layer_inner`), chunk fastest; states are
moved as 4-, 2- or 1-byte words; int64 offsets.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._blocks import chunk_unit, move_block
from .._common import as_index, check_ranges, chunk_plan, fail, layer_inner, lead_strides, same_device, same_dtype, state_numel, word_views
from .._launch import Launch


@triton.jit
def _copy_slots_kernel(
    src, src_slots, ss0, ss1,
    dst, dst_slots, ds0, ds1,
    B, NL, D, NCH,
    BLOCK: tl.constexpr, EVEN: tl.constexpr, LAYER_INNER: tl.constexpr,
):  # fmt: skip
    chunk, b, layer = chunk_unit(tl.program_id(0), NCH, B, NL, LAYER_INNER)
    start = chunk.to(tl.int64) * BLOCK
    s_slot = tl.load(src_slots + b).to(tl.int64)
    d_slot = tl.load(dst_slots + b).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    s_ptr = src + (layer * ss0 + s_slot * ss1 + start) + offs
    d_ptr = dst + (layer * ds0 + d_slot * ds1 + start) + offs
    move_block(s_ptr, d_ptr, offs, D - start, EVEN)


class CopySlotsPlan:
    """`copy_slots` between two bound pools: `plan(src_slots, dst_slots)` launches with no host-side work but
    the launch (index vectors on the pools' device, int32 or int64, ranges not checked; see `check`)."""

    def __init__(self, src: torch.Tensor, dst: torch.Tensor, *, config: tuple[int, int] | None = None):
        self.device = same_device(src=src, dst=dst)
        same_dtype("copy_slots", src=src, dst=dst)
        if src.dim() < 2 or src.shape[0] != dst.shape[0] or src.shape[2:] != dst.shape[2:]:
            fail(f"copy_slots: src {tuple(src.shape)} and dst {tuple(dst.shape)} need the same L and state shape")
        state_numel(src, 2, "src")
        state_numel(dst, 2, "dst")
        self.src, self.dst, self.config = src, dst, config
        self.empty = src.numel() == 0
        self.one_pool = src.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr()
        if not self.empty:
            self.w, self.sv, self.dv = word_views(src, 2, dst, 2)
        self._launches: dict[tuple, Launch] = {}

    def __call__(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        key = (src_slots.shape[0], src_slots.dtype, dst_slots.dtype)
        launch = self._launches.get(key)
        if launch is None:
            if key[0] == 0 or self.empty:
                return
            launch = self._launches[key] = self._build(key[0])
        launch(src_slots, dst_slots)

    def _build(self, nb: int) -> Launch:
        sv, dv, d = self.sv, self.dv, self.sv.shape[2]
        block, warps, nch, grid = chunk_plan("copy_slots", d, self.w, sv.shape[0] * nb, self.config, self.device)
        args = (sv, None, *lead_strides(sv, 2), dv, None, *lead_strides(dv, 2), nb, sv.shape[0], d, nch,
                block, d % block == 0, layer_inner((sv, 0), (dv, 0)))
        return Launch(_copy_slots_kernel, grid, args, (1, 5), num_warps=warps)

    def check(self, src_slots: torch.Tensor, dst_slots: torch.Tensor) -> None:
        """The index ranges, and that one pool is not both read and written at a slot (one synchronization)."""
        items = [("src_slots", src_slots, 0, self.src.shape[1]), ("dst_slots", dst_slots, 0, self.dst.shape[1])]
        if self.one_pool and src_slots.numel():
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
    plan = CopySlotsPlan(src, dst, config=config)
    src_slots = as_index("src_slots", src_slots, None, plan.device)
    dst_slots = as_index("dst_slots", dst_slots, src_slots.shape[0], plan.device)
    if check:
        plan.check(src_slots, dst_slots)
    plan(src_slots, dst_slots)
