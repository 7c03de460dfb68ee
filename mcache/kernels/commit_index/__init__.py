"""`commit_index`: index-only commit, advancing each slot's current-version index."""

from __future__ import annotations

import torch

from .reference import commit_index_reference

__all__ = ["commit_index", "commit_index_reference"]


def commit_index(version_idx: torch.Tensor, slots: torch.Tensor, accepted: torch.Tensor, num_versions: int, *, check: bool = True) -> None:
    """`version_idx[s] = (version_idx[s] + accepted) % num_versions` for each `(s, accepted)` pair."""
    if version_idx.is_cuda:
        from .kernel import commit_index_triton

        commit_index_triton(version_idx, slots, accepted, num_versions, check=check)
    else:
        commit_index_reference(version_idx, slots, accepted, num_versions)
