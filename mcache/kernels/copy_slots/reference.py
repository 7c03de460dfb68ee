"""Plain-torch slot copy: the CPU path and the oracle for the Triton kernel."""

from __future__ import annotations

import torch

from .._common import same_dtype


def copy_slots_reference(src: torch.Tensor, src_slots: torch.Tensor, dst: torch.Tensor, dst_slots: torch.Tensor) -> None:
    """`dst[:, dst_slots[b]] = src[:, src_slots[b]]` for every b.

    `src` and `dst` are `[L, S, *state]` pools with the same `L` and state shape (they may be one pool); the
    slot vectors are int64 `[B]`. All reads happen before any write (torch gathers first).
    """
    same_dtype("copy_slots", src=src, dst=dst)  # a bit copy, as the Triton launcher requires too
    dst[:, dst_slots.to(dst.device)] = src[:, src_slots.to(src.device)]
