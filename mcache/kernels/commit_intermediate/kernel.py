"""Triton commit of intermediate states: `pool[:, slots[b]] = inter[:, rows[b], accepted[b] - 1]`.

Units `(layer, request, chunk)` or `(request, layer, chunk)` (`_common.layer_inner`), chunk fastest; a request
with `accepted == 0` moves nothing. States are moved as 4-, 2- or 1-byte words; int64 offsets.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._blocks import chunk_unit, move_block
from .._common import as_index, check_ranges, chunk_plan, fail, layer_inner, lead_strides, same_device, same_dtype, state_numel, word_views
from .._launch import Launch


@triton.jit
def _commit_intermediate_kernel(
    pool, slots, ps0, ps1,
    inter, rows, accepted, is0, is1, is2,
    B, NL, D, NCH,
    BLOCK: tl.constexpr, EVEN: tl.constexpr, LAYER_INNER: tl.constexpr,
):  # fmt: skip
    chunk, b, layer = chunk_unit(tl.program_id(0), NCH, B, NL, LAYER_INNER)
    acc = tl.load(accepted + b).to(tl.int64)
    slot = tl.load(slots + b).to(tl.int64)  # all three indices in one round trip
    row = tl.load(rows + b).to(tl.int64)
    if acc > 0:
        start = chunk.to(tl.int64) * BLOCK
        offs = tl.arange(0, BLOCK)
        s_ptr = inter + (layer * is0 + row * is1 + (acc - 1) * is2 + start) + offs
        d_ptr = pool + (layer * ps0 + slot * ps1 + start) + offs
        move_block(s_ptr, d_ptr, offs, D - start, EVEN)


class CommitIntermediatePlan:
    """`commit_intermediate` between a bound pool and its intermediate states: `plan(slots, rows, accepted)`
    launches with no host-side work but the launch (index vectors on the pools' device, int32 or int64, ranges
    not checked; see `check`)."""

    def __init__(self, pool: torch.Tensor, inter: torch.Tensor, *, config: tuple[int, int] | None = None):
        self.device = same_device(pool=pool, inter=inter)
        same_dtype("commit_intermediate", pool=pool, inter=inter)
        if pool.dim() < 2 or inter.dim() != pool.dim() + 1 or inter.shape[0] != pool.shape[0]:
            fail(f"commit_intermediate: pool {tuple(pool.shape)} needs inter [L, R, T, *state], got {tuple(inter.shape)}")
        if inter.shape[3:] != pool.shape[2:]:
            fail(f"commit_intermediate: state shapes differ: {tuple(pool.shape[2:])} vs {tuple(inter.shape[3:])}")
        state_numel(pool, 2, "pool")
        state_numel(inter, 3, "inter")
        self.pool, self.inter, self.config = pool, inter, config
        self.empty = pool.numel() == 0
        if not self.empty:
            self.w, self.pv, self.iv = word_views(pool, 2, inter, 3)
        self._launches: dict[tuple, Launch] = {}

    def __call__(self, slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> None:
        key = (slots.shape[0], slots.dtype, rows.dtype, accepted.dtype)
        launch = self._launches.get(key)
        if launch is None:
            if key[0] == 0 or self.empty:
                return
            launch = self._launches[key] = self._build(key[0])
        launch(slots, rows, accepted)

    def _build(self, nb: int) -> Launch:
        pv, iv, d = self.pv, self.iv, self.pv.shape[2]
        block, warps, nch, grid = chunk_plan("commit_intermediate", d, self.w, pv.shape[0] * nb, self.config, self.device)
        args = (pv, None, *lead_strides(pv, 2), iv, None, None, *lead_strides(iv, 3), nb, pv.shape[0], d, nch,
                block, d % block == 0, layer_inner((pv, 0), (iv, 0)))
        return Launch(_commit_intermediate_kernel, grid, args, (1, 5, 6), num_warps=warps)

    def check(self, slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> None:
        """Slots, rows and accepted counts within the pools (one synchronization)."""
        check_ranges([("slots", slots, 0, self.pool.shape[1]), ("rows", rows, 0, self.inter.shape[1]),
                      ("accepted", accepted, 0, self.inter.shape[2] + 1)])


def commit_intermediate_triton(
    pool: torch.Tensor,
    inter: torch.Tensor,
    slots: torch.Tensor,
    rows: torch.Tensor,
    accepted: torch.Tensor,
    *,
    check: bool = True,
    config: tuple[int, int] | None = None,
) -> None:
    """See `reference.commit_intermediate_reference`; `pool` `[L, S, *st]`, `inter` `[L, R, T, *st]`, one dtype."""
    plan = CommitIntermediatePlan(pool, inter, config=config)
    slots = as_index("slots", slots, None, plan.device)
    rows = as_index("rows", rows, slots.shape[0], plan.device)
    accepted = as_index("accepted", accepted, slots.shape[0], plan.device)
    if check:
        plan.check(slots, rows, accepted)
    plan(slots, rows, accepted)
