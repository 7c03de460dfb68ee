"""Dense feed-forward: no cache, weights only."""

from __future__ import annotations

NAME = "mlp"


def states(spec, p, tp, dt) -> list:
    """A cache-free kind."""
    return []


def weights(spec, p) -> dict[str, int]:
    """Up (and gate) and down projections."""
    return {"proj": (3 if p.gated else 2) * spec.hidden_size * p.intermediate_size}
