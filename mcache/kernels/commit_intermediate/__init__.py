"""`commit_intermediate`: copy each request's accepted speculative state into its slot."""

from __future__ import annotations

import torch

from .._dispatch import run
from .reference import commit_intermediate_reference

__all__ = ["commit_intermediate", "commit_intermediate_reference"]


def commit_intermediate(
    pool: torch.Tensor,
    inter: torch.Tensor,
    slots: torch.Tensor,
    rows: torch.Tensor,
    accepted: torch.Tensor,
    *,
    check: bool = True,
) -> None:
    """`pool[:, slots[b]] = inter[:, rows[b], accepted[b] - 1]`, skipping `accepted[b] == 0`."""
    run(pool.is_cuda, __package__, "commit_intermediate", commit_intermediate_reference, pool, inter, slots, rows, accepted, check=check)
