"""`commit_index`: index-only commit, advancing each slot's current-version index."""

from __future__ import annotations

from functools import cache

import torch

from .reference import commit_index_reference

__all__ = ["commit_index", "commit_index_plan", "commit_index_reference"]


def commit_index(version_idx: torch.Tensor, slots: torch.Tensor, accepted: torch.Tensor, num_versions: int, *, check: bool = True) -> None:
    """`version_idx[s] = (version_idx[s] + accepted) % num_versions` for each `(s, accepted)` pair."""
    if version_idx.is_cuda:
        _kernel().commit_index_triton(version_idx, slots, accepted, num_versions, check=check)
    else:
        commit_index_reference(version_idx, slots, accepted, num_versions)


def commit_index_plan(version_idx: torch.Tensor, num_versions: int):
    """`commit_index` bound to a version index: a callable `(slots, accepted)` that checks nothing per call (the
    Triton `CommitIndexPlan` on CUDA, the torch reference otherwise)."""
    if version_idx.is_cuda:
        return _kernel().CommitIndexPlan(version_idx, num_versions)
    return lambda slots, accepted: commit_index_reference(version_idx, slots, accepted, num_versions)


@cache
def _kernel():
    """`kernel`, imported on the first CUDA call (Triton is imported only then; once: an import costs microseconds)."""
    from . import kernel

    return kernel
