"""Triton index-only commit: `version_idx[s] = (version_idx[s] + accepted) % num_versions`."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._common import check_ranges, fail, same_device
from .._launch import Launch, Plan
from .._oneshot import PLANS

BLOCK = 1024


@triton.jit
def _commit_index_kernel(version_idx, vstride, slots, accepted, B, NV, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < B
    slot = tl.load(slots + offs, mask=mask, other=0).to(tl.int64)
    acc = tl.load(accepted + offs, mask=mask, other=0).to(tl.int64)
    cur = tl.load(version_idx + slot * vstride, mask=mask, other=0).to(tl.int64)
    tl.store(version_idx + slot * vstride, ((cur + acc) % NV).to(version_idx.dtype.element_ty), mask=mask)


class CommitIndexPlan(Plan):
    """`commit_index` on a bound version index: `plan(slots, accepted)` launches with no host-side work but the
    launch (index vectors on the index's device, int32 or int64, not checked; see `check`)."""

    def __init__(self, version_idx: torch.Tensor, num_versions: int):
        if version_idx.dtype not in (torch.int32, torch.int64) or version_idx.dim() != 1:
            fail(f"commit_index: version_idx must be int32/int64 [S], got {version_idx.dtype} {tuple(version_idx.shape)}")
        if int(num_versions) < 1:
            fail(f"commit_index: num_versions must be >= 1, got {num_versions}")
        super().__init__()
        self.device = same_device(version_idx=version_idx)
        self.version_idx, self.num_versions = version_idx, int(num_versions)

    key_by_layout = False  # the index vectors' alignment is part of the key

    def __call__(self, slots: torch.Tensor, accepted: torch.Tensor) -> None:
        for launch in self.launches(self.key(slots, accepted)):
            launch.run(slots, accepted)

    def key(self, slots: torch.Tensor, accepted: torch.Tensor) -> tuple:
        # Triton specializes a pointer on 16-byte alignment, and this kernel loads the index vectors as vectors.
        return (slots.shape[0], slots.dtype, accepted.dtype, slots.data_ptr() % 16, accepted.data_ptr() % 16)

    def build(self, nb: int) -> tuple[Launch, ...]:
        args = (self.version_idx, self.version_idx.stride(0), None, None, nb, self.num_versions, BLOCK)
        return (Launch(_commit_index_kernel, triton.cdiv(nb, BLOCK), args, (2, 3)),)

    def check(self, slots: torch.Tensor, accepted: torch.Tensor) -> None:
        """Slots within the index and non-negative counts (one synchronization)."""
        check_ranges([("slots", slots, 0, self.version_idx.shape[0]), ("accepted", accepted, 0, 2**62)])


def commit_index_triton(
    version_idx: torch.Tensor, slots: torch.Tensor, accepted: torch.Tensor, num_versions: int, *, check: bool = True
) -> None:
    """See `reference.commit_index_reference`. Slots must be distinct within one call."""
    PLANS.run("commit_index", (version_idx,), num_versions, _plan, ("slots", "accepted"), (slots, accepted), check)


def _plan(tensors: tuple[torch.Tensor], num_versions: int) -> CommitIndexPlan:
    return CommitIndexPlan(*tensors, num_versions)
