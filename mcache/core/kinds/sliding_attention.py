"""Sliding-window attention beside full attention in one model: the `attention` kind's KV and weights, from its
own block (whose `sliding_window` caps each sequence's KV), for the layers a config windows (PLaMo-2 windows
every attention layer but its `full_attention_idx`)."""

from __future__ import annotations

from mcache.core.errors import LayoutError
from mcache.core.kinds import attention
from mcache.core.kinds.base import CacheDtypes, StateShape

NAME = "sliding_attention"


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Attention's KV per token, capped at the window."""
    if p.sliding_window is None:
        raise LayoutError(f"{NAME}.sliding_window", "a window (the layers of this kind are windowed)")
    return attention.states(spec, p, tp, dt)


def weights(spec, p) -> dict[str, int]:
    """The same projections as attention."""
    return attention.weights(spec, p)


def layer_weights(spec, p) -> dict[str, int]:
    """The same per-layer weights as attention."""
    return attention.layer_weights(spec, p)
