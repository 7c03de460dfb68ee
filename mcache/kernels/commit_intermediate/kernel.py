"""Triton commit of intermediate states: `pool[:, slots[b]] = inter[:, rows[b], accepted[b] - 1]`.

Units `(layer, request, chunk)`, chunk fastest; a request with `accepted == 0` moves nothing. States are
moved as 4-, 2- or 1-byte words; int64 offsets.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._common import as_index, check_ranges, copy_config, fail, same_device, state_numel, word_size, word_view


@triton.jit
def _commit_intermediate_kernel(
    pool, slots, ps0, ps1,
    inter, rows, accepted, is0, is1, is2,
    B, D, NCH,
    BLOCK: tl.constexpr, EVEN: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    chunk = pid % NCH
    rest = pid // NCH
    b = rest % B
    layer = (rest // B).to(tl.int64)
    acc = tl.load(accepted + b).to(tl.int64)
    if acc > 0:
        start = chunk.to(tl.int64) * BLOCK
        slot = tl.load(slots + b).to(tl.int64)
        row = tl.load(rows + b).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        s_ptr = inter + (layer * is0 + row * is1 + (acc - 1) * is2 + start) + offs
        d_ptr = pool + (layer * ps0 + slot * ps1 + start) + offs
        if EVEN:
            tl.store(d_ptr, tl.load(s_ptr, eviction_policy="evict_first"))
        else:
            mask = offs < D - start
            tl.store(d_ptr, tl.load(s_ptr, mask=mask, eviction_policy="evict_first"), mask=mask)


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
    dev = same_device(pool=pool, inter=inter)
    if pool.dtype != inter.dtype:
        fail(f"commit_intermediate: pool is {pool.dtype}, inter is {inter.dtype}; the copy does not convert")
    if pool.dim() < 2 or inter.dim() != pool.dim() + 1 or inter.shape[0] != pool.shape[0]:
        fail(f"commit_intermediate: pool {tuple(pool.shape)} needs inter [L, R, T, *state], got {tuple(inter.shape)}")
    if inter.shape[3:] != pool.shape[2:]:
        fail(f"commit_intermediate: state shapes differ: {tuple(pool.shape[2:])} vs {tuple(inter.shape[3:])}")
    state_numel(pool, 2, "pool")
    state_numel(inter, 3, "inter")
    slots = as_index("slots", slots, None, dev)
    nb = slots.shape[0]
    rows = as_index("rows", rows, nb, dev)
    accepted = as_index("accepted", accepted, nb, dev)
    if check:
        check_ranges([
            ("slots", slots, 0, pool.shape[1]),
            ("rows", rows, 0, inter.shape[1]),
            ("accepted", accepted, 0, inter.shape[2] + 1),
        ])  # fmt: skip
    if nb == 0 or pool.numel() == 0:
        return
    w = min(word_size(pool, 2), word_size(inter, 3))
    pv, iv = word_view(pool, 2, w), word_view(inter, 3, w)
    d = pv.shape[2]
    block, warps = copy_config(d, w, config)
    nch = triton.cdiv(d, block)
    grid = pv.shape[0] * nb * nch
    if grid >= 2**31:
        fail(f"commit_intermediate: {grid} programs exceed the launch grid")
    _commit_intermediate_kernel[(grid,)](
        pv, slots, pv.stride(0), pv.stride(1),
        iv, rows, accepted, iv.stride(0), iv.stride(1), iv.stride(2),
        nb, d, nch, BLOCK=block, EVEN=d % block == 0, num_warps=warps,
    )  # fmt: skip
