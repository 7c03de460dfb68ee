"""`commit_intermediate`: copy each request's accepted speculative state into its slot."""

from __future__ import annotations

from functools import cache

import torch

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
    if pool.is_cuda:
        _kernel().commit_intermediate_triton(pool, inter, slots, rows, accepted, check=check)
    else:
        commit_intermediate_reference(pool, inter, slots, rows, accepted)


def commit_intermediate_plan(pairs: list[tuple[torch.Tensor, torch.Tensor]]):
    """`commit_intermediate` bound to pairs `[(pool, inter), ...]` (a kind's conv window and SSM state with their
    intermediate states): a callable `(slots, rows, accepted)` that commits every pair and checks nothing per call
    (the Triton `CommitIntermediatePlan` on CUDA, one launch for two pairs; the torch reference otherwise)."""
    pairs = list(pairs)
    if pairs and pairs[0][0].is_cuda:
        return _kernel().CommitIntermediatePlan(pairs)

    def reference(slots: torch.Tensor, rows: torch.Tensor, accepted: torch.Tensor) -> None:
        for pool, inter in pairs:
            commit_intermediate_reference(pool, inter, slots, rows, accepted)

    return reference


@cache
def _kernel():
    """`kernel`, imported on the first CUDA call (Triton is imported only then; once: an import costs microseconds)."""
    from . import kernel

    return kernel
