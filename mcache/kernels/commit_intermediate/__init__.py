"""`commit_intermediate`: copy each request's accepted speculative state into its slot."""

from __future__ import annotations

import torch

from .._dispatch import run
from .reference import commit_intermediate_reference

__all__ = ["commit_intermediate", "commit_intermediate_plan", "commit_intermediate_reference"]


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


def commit_intermediate_plan(pairs: list[tuple[torch.Tensor, torch.Tensor]]):
    """`commit_intermediate` bound to pairs `[(pool, inter), ...]` (a kind's conv window and SSM state with their
    intermediate states): a callable `(slots, rows, accepted)` that commits every pair and checks nothing per call
    (the Triton `CommitIntermediatePlan` on CUDA, one launch for two pairs; the torch reference otherwise)."""
    pairs = list(pairs)
    if pairs and pairs[0][0].is_cuda:
        from .kernel import CommitIntermediatePlan

        return CommitIntermediatePlan(pairs)

    def reference(slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> None:
        for pool, inter in pairs:
            commit_intermediate_reference(pool, inter, slots, rows, accepted)

    return reference
