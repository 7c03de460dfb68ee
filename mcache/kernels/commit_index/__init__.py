"""`commit_index`: index-only commit, advancing each slot's current-version index."""

from __future__ import annotations

import torch

from .._dispatch import run
from .reference import commit_index_reference

__all__ = ["commit_index", "commit_index_reference"]


def commit_index(version_idx: torch.Tensor, slots: torch.Tensor, accepted: torch.Tensor, num_versions: int, *, check: bool = True) -> None:
    """`version_idx[s] = (version_idx[s] + accepted) % num_versions` for each `(s, accepted)` pair."""
    run(version_idx.is_cuda, __package__, "commit_index", commit_index_reference, version_idx, slots, accepted, num_versions, check=check)
