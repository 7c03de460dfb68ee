"""Triton device functions shared by the kernels: which unit a program owns, and the block move of the
copy-like ops."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def unit_of(u, NCH, B):
    """`(chunk, request, layer)` of unit `u` of the units `(layer, request, chunk)`, chunk fastest so that
    neighbouring units touch neighbouring memory; all int32. The decode is positional: callers that walk other
    axes in these places (heads, or layers inside requests) pass their own sizes for `NCH` and `B`."""
    rest = u // NCH
    return u % NCH, rest % B, rest // B


@triton.jit
def chunk_unit(u, NCH, B, NL, LAYER_INNER: tl.constexpr):
    """`(chunk, request, layer)` of unit `u` among the units `(layer, request, chunk)`, or `(request, layer,
    chunk)` when `LAYER_INNER` (see `_common.layer_inner`); chunk fastest. `layer` is int64 (it scales the
    largest stride)."""
    if LAYER_INNER:
        chunk, layer, b = unit_of(u, NCH, NL)
    else:
        chunk, b, layer = unit_of(u, NCH, B)
    return chunk, b, layer.to(tl.int64)


@triton.jit
def move_block(src_ptr, dst_ptr, offs, n, FULL):
    """`dst_ptr[i] = src_ptr[i]` for the lanes with `offs < n`, every lane when `FULL` (no mask).

    Loads are cached in L2 only (`.cg`): on an H200 that moved state 2-3% faster than the default load
    with an L2 evict-first hint, at every batch size (results/kernel_experiments.md).
    """
    if FULL:
        tl.store(dst_ptr, tl.load(src_ptr, cache_modifier=".cg"))
    else:
        mask = offs < n
        tl.store(dst_ptr, tl.load(src_ptr, mask=mask, cache_modifier=".cg"), mask=mask)
