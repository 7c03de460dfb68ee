"""Multi-head latent attention: one latent per token, not sharded by TP."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, StateShape, split

NAME = "mla"


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Latent per token `[kv_lora_rank + qk_rope_head_dim]`, the same on every TP rank."""
    split(p.num_heads, tp, f"{NAME}.num_heads")
    return [StateShape("kv", "kv", (p.kv_lora_rank + p.qk_rope_head_dim,), ("latent",), dt.kv, "token")]


def weights(spec, p) -> dict[str, int]:
    """q (optionally low-rank), kv down/up projections and o."""
    h, qk = spec.hidden_size, p.qk_nope_head_dim + p.qk_rope_head_dim
    q = h * p.num_heads * qk if p.q_lora_rank is None else h * p.q_lora_rank + p.q_lora_rank * p.num_heads * qk
    kv_a = h * (p.kv_lora_rank + p.qk_rope_head_dim)
    kv_b = p.kv_lora_rank * p.num_heads * (p.qk_nope_head_dim + p.v_head_dim)
    return {"proj": q + kv_a + kv_b + p.num_heads * p.v_head_dim * h}
