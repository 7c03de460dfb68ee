"""Mixture of experts: no cache, weights only."""

from __future__ import annotations

NAME = "moe"


def states(spec, p, tp, dt) -> list:
    """A cache-free kind."""
    return []


def weights(spec, p) -> int:
    """Router, routed experts and shared experts."""
    per_matrix = 3 if p.gated else 2
    routed = p.num_experts * per_matrix * spec.hidden_size * p.expert_intermediate_size
    shared_size = p.shared_intermediate_size or p.expert_intermediate_size
    shared = p.shared_experts * per_matrix * spec.hidden_size * shared_size
    return spec.hidden_size * p.num_experts + routed + shared
