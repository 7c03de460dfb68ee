"""Plain-torch index-only commit: the CPU path and the kernel's oracle."""

from __future__ import annotations

import torch


def commit_index_reference(version_idx: torch.Tensor, slots: torch.Tensor, accepted: torch.Tensor, num_versions: int) -> None:
    """`version_idx[slots[b]] = (version_idx[slots[b]] + accepted[b]) % num_versions`.

    `version_idx` is int32 `[S]` (one current-version index per slot); `slots`, `accepted` are int `[B]`.
    """
    dev = version_idx.device
    slots = slots.to(dev)
    new = (version_idx[slots].long() + accepted.to(dev).long()) % num_versions
    version_idx[slots] = new.to(version_idx.dtype)
