"""Hyper-connections (Qwen3.8-Flash-Next's `hc_count` residual streams): weights only, no cache."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, StateShape

NAME = "hc"
PRE_NORM = False  # no norm of the hidden size of its own: its norms are its own (`other`)


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """None: the streams live only within a step."""
    return []


def weights(spec, p) -> dict[str, int]:
    """Two gated residuals a layer (before attention and before the FFN), each a grouped norm over the streams, a
    low-rank input mixer (down to `lowrank`, back up) and the block's injection into each stream (transformers
    modeling_qwen4_exp.py Qwen4ExpTextGatedResidual)."""
    width = p.streams * spec.hidden_size
    return {"proj": 2 * (2 * width * p.lowrank + width * p.streams), "other": 2 * width}
