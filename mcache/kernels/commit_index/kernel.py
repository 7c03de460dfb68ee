"""Triton index-only commit: `version_idx[s] = (version_idx[s] + accepted) % num_versions`."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._common import as_indices, fail, same_device

BLOCK = 1024


@triton.jit
def _commit_index_kernel(version_idx, vstride, slots, accepted, B, NV, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < B
    slot = tl.load(slots + offs, mask=mask, other=0).to(tl.int64)
    acc = tl.load(accepted + offs, mask=mask, other=0).to(tl.int64)
    cur = tl.load(version_idx + slot * vstride, mask=mask, other=0).to(tl.int64)
    tl.store(version_idx + slot * vstride, ((cur + acc) % NV).to(version_idx.dtype.element_ty), mask=mask)


def commit_index_triton(
    version_idx: torch.Tensor, slots: torch.Tensor, accepted: torch.Tensor, num_versions: int, *, check: bool = True
) -> None:
    """See `reference.commit_index_reference`. Slots must be distinct within one call."""
    if version_idx.dtype not in (torch.int32, torch.int64) or version_idx.dim() != 1:
        fail(f"commit_index: version_idx must be int32/int64 [S], got {version_idx.dtype} {tuple(version_idx.shape)}")
    if int(num_versions) < 1:
        fail(f"commit_index: num_versions must be >= 1, got {num_versions}")
    dev = same_device(version_idx=version_idx)
    slots, accepted = as_indices(dev, check, ("slots", slots, 0, version_idx.shape[0]), ("accepted", accepted, 0, 2**62))
    nb = slots.shape[0]
    if nb == 0:
        return
    _commit_index_kernel[(triton.cdiv(nb, BLOCK),)](version_idx, version_idx.stride(0), slots, accepted, nb, int(num_versions), BLOCK=BLOCK)
