"""Dense feed-forward: no cache, weights only."""

from __future__ import annotations

NAME = "mlp"


def states(spec, p, tp, dt) -> list:
    """A cache-free kind."""
    return []


def weights(spec, p) -> dict[str, int]:
    """Up (and gate) and down projections."""
    return {"proj": (3 if p.gated else 2) * spec.hidden_size * p.intermediate_size}


def layer_weights(spec, p) -> dict[str, int]:
    """Each layer's LoRA adapter on the up (and gate) projection: hidden -> rank -> (2 x) intermediate (transformers
    modeling_zamba2.py Zamba2MLP `gate_up_proj_adapter_list`, one real adapter per hybrid layer)."""
    rank = p.adapter_rank or 0
    return {"adapter": rank * (spec.hidden_size + (2 if p.gated else 1) * p.intermediate_size)}
