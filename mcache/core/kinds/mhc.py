"""Manifold-constrained hyper-connections (GLM-5.3-Flash's mHC): weights only, no cache."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, StateShape

NAME = "mhc"
PRE_NORM = False  # its input norm has no weight


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """None: the streams live only within a step."""
    return []


def weights(spec, p) -> dict[str, int]:
    """Two a layer (before attention and before the FFN), each projecting the `streams` x hidden inputs to the
    `(2 + streams) x streams` pre, post and comb weights, with their bias and three scales (transformers
    modeling_glm5_next.py Glm5NextTextHyperConnection `fn`, `base`, `scale`)."""
    n = p.streams
    mixes = (2 + n) * n
    return {"other": 2 * (mixes * n * spec.hidden_size + mixes + 3)}
