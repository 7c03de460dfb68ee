"""Mixture of experts: no cache, weights only."""

from __future__ import annotations

NAME = "moe"


def states(spec, p, tp, dt) -> list:
    """A cache-free kind."""
    return []


def weights(spec, p) -> int:
    """Router, routed experts (in the latent space, with its two projections, when there is one) and shared
    experts (vLLM nemotron_h.py NemotronHMoE: fc1_latent_proj, fc2_latent_proj)."""
    per_matrix = 3 if p.gated else 2
    width = p.latent_size or spec.hidden_size
    routed = p.num_experts * per_matrix * width * p.expert_intermediate_size
    latent = 2 * spec.hidden_size * p.latent_size if p.latent_size else 0
    shared_size = p.shared_intermediate_size or p.expert_intermediate_size
    shared = p.shared_experts * per_matrix * spec.hidden_size * shared_size
    return spec.hidden_size * p.num_experts + routed + latent + shared
