"""Mixture of experts: no cache, weights only."""

from __future__ import annotations

NAME = "moe"


def states(spec, p, tp, dt) -> list:
    """A cache-free kind."""
    return []


def weights(spec, p) -> dict[str, int]:
    """Routed experts (in the latent space, with its two projections, when there is one: vLLM nemotron_h.py
    NemotronHMoE's fc1_latent_proj and fc2_latent_proj), shared experts, and the router."""
    per_matrix = 3 if p.gated else 2
    width = p.latent_size or spec.hidden_size
    shared_size = p.shared_intermediate_size or p.expert_intermediate_size
    return {
        "experts": p.num_experts * per_matrix * width * p.expert_intermediate_size,
        "shared_experts": p.shared_experts * per_matrix * spec.hidden_size * shared_size,
        "proj": 2 * spec.hidden_size * p.latent_size if p.latent_size else 0,
        "other": spec.hidden_size * p.num_experts,
    }
