"""Triton commit of intermediate states: `pool[:, slots[b]] = inter[:, rows[b], accepted[b] - 1]` for up to two
(pool, intermediate) pairs in one launch (a kind's conv window and SSM state).

Units `(pair, layer, request, chunk)` or `(pair, request, layer, chunk)` (`_common.layer_inner`), chunk fastest;
a request with `accepted == 0` moves nothing. States are moved as 4-, 2- or 1-byte words; int64 offsets.
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
def _commit_unit(pool, ps0, ps1, inter, is0, is1, is2, D, NCH, NL, u, slots, rows, accepted, B,
                 BLOCK: tl.constexpr, EVEN: tl.constexpr, LAYER_INNER: tl.constexpr):  # fmt: skip
    chunk, b, layer = chunk_unit(u, NCH, B, NL, LAYER_INNER)
    acc = tl.load(accepted + b).to(tl.int64)
    slot = tl.load(slots + b).to(tl.int64)  # all three indices in one round trip
    row = tl.load(rows + b).to(tl.int64)
    if acc > 0:
        start = chunk.to(tl.int64) * BLOCK
        offs = tl.arange(0, BLOCK)
        s_ptr = inter + (layer * is0 + row * is1 + (acc - 1) * is2 + start) + offs
        d_ptr = pool + (layer * ps0 + slot * ps1 + start) + offs
        move_block(s_ptr, d_ptr, offs, D - start, EVEN)


@triton.jit
def _commit_intermediate_kernel(
    slots, rows, accepted, B,
    p0, a0, b0, i0, c0, e0, f0, d0, n0, l0, u0,
    p1, a1, b1, i1, c1, e1, f1, d1, n1, l1,
    NPAIRS: tl.constexpr, BLOCK: tl.constexpr, LAYER_INNER: tl.constexpr, E0: tl.constexpr, E1: tl.constexpr,
):  # fmt: skip
    # Pair i: pool, its two lead strides, intermediate states, their three lead strides, state words, chunks,
    # layers; u0 is the number of pair 0's units. The NPAIRS branch is resolved at compile time.
    pid = tl.program_id(0)
    if pid < u0:
        _commit_unit(p0, a0, b0, i0, c0, e0, f0, d0, n0, l0, pid, slots, rows, accepted, B, BLOCK, E0, LAYER_INNER)
    else:
        if NPAIRS > 1:
            _commit_unit(p1, a1, b1, i1, c1, e1, f1, d1, n1, l1, pid - u0, slots, rows, accepted, B, BLOCK, E1, LAYER_INNER)


class CommitIntermediatePlan(Plan):
    """`commit_intermediate` of bound pairs `[(pool, inter), ...]` (a kind's conv window and SSM state with their
    intermediate states): `plan(slots, rows, accepted)` commits every pair, one launch per group of up to
    `MAX_PAIRS` pairs with one word type, with no host-side work but the launches (index vectors on the pools'
    device, int32 or int64, ranges not checked; see `check`)."""

    def __init__(self, pairs: list[tuple[torch.Tensor, torch.Tensor]], *, config: tuple[int, int] | None = None):
        pairs = list(pairs)
        self.device = same_device(**{f"pairs[{i}].{n}": t for i, p in enumerate(pairs) for n, t in zip(("pool", "inter"), p, strict=True)})
        for pool, inter in pairs:
            same_dtype("commit_intermediate", pool=pool, inter=inter)
            if pool.dim() < 2 or inter.dim() != pool.dim() + 1 or inter.shape[0] != pool.shape[0]:
                fail(f"commit_intermediate: pool {tuple(pool.shape)} needs inter [L, R, T, *state], got {tuple(inter.shape)}")
            if inter.shape[3:] != pool.shape[2:]:
                fail(f"commit_intermediate: state shapes differ: {tuple(pool.shape[2:])} vs {tuple(inter.shape[3:])}")
            state_numel(pool, 2, "pool")
            state_numel(inter, 3, "inter")
        super().__init__()
        self.pairs, self.config = pairs, config
        words = [word_views(pool, 2, inter, 3)[1:] for pool, inter in pairs if pool.numel()]
        self.groups = pool_groups(words, lambda pi: pi[0].dtype, MAX_PAIRS)

    def __call__(self, slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> None:
        for launch in self.launches(self.key(slots, rows, accepted)):
            launch.run(slots, rows, accepted)

    def key(self, slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> tuple:
        return (slots.shape[0], slots.dtype, rows.dtype, accepted.dtype)

    def group_launch(self, group: list[tuple[torch.Tensor, torch.Tensor]], nb: int) -> Launch:
        block, warps = group_config([p for p, _ in group], nb, self.config)

        def args_of(pair):
            pv, iv = pair
            d = pv.shape[2]
            nch = triton.cdiv(d, block)
            return [pv, *lead_strides(pv, 2), iv, *lead_strides(iv, 3), d, nch, pv.shape[0]], nch, d % block == 0

        flat, evens, units = pool_args(group, MAX_PAIRS, nb, args_of)
        args = (None, None, None, nb, *flat, len(group), block, layer_inner(*((v, 0) for pi in group for v in pi)), *evens)
        return Launch(_commit_intermediate_kernel, launch_grid("commit_intermediate", units), args, (0, 1, 2), num_warps=warps)

    def check(self, slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> None:
        """Slots, rows and accepted counts within every pair's pools (one synchronization)."""
        check_ranges([("slots", slots, 0, min(p.shape[1] for p, _ in self.pairs)),
                      ("rows", rows, 0, min(i.shape[1] for _, i in self.pairs)),
                      ("accepted", accepted, 0, min(i.shape[2] for _, i in self.pairs) + 1)])


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
    PLANS.run("commit_intermediate", (pool, inter), config, _one_pair, ("slots", "rows", "accepted"),
              (slots, rows, accepted), check)


def _one_pair(tensors: tuple[torch.Tensor, torch.Tensor], config) -> CommitIntermediatePlan:
    return CommitIntermediatePlan([tensors], config=config)
