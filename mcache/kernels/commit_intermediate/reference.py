"""Plain-torch commit of speculative intermediate states: the CPU path and the kernel's oracle."""

from __future__ import annotations

import torch

from .._common import same_dtype


def commit_intermediate_reference(
    pool: torch.Tensor,
    inter: torch.Tensor,
    slots: torch.Tensor,
    rows: torch.Tensor,
    accepted: torch.Tensor,
) -> None:
    """`pool[:, slots[b]] = inter[:, rows[b], accepted[b] - 1]`; entries with `accepted[b] == 0` are untouched.

    `pool` is `[L, S, *state]`, `inter` is `[L, R, T, *state]`; `slots`, `rows`, `accepted` are int `[B]`.
    """
    same_dtype("commit_intermediate", pool=pool, inter=inter)  # a bit copy, as the Triton launcher requires too
    dev = pool.device
    slots, rows, accepted = slots.to(dev), rows.to(dev), accepted.to(dev)
    keep = accepted > 0
    if not bool(keep.any()):
        return
    s, r, a = slots[keep], rows[keep], accepted[keep].long() - 1
    pool[:, s] = inter[:, r, a]
