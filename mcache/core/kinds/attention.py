"""GQA/MHA attention: a paged KV cache, `2 * kv_heads/tp * head_dim` elements per token."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, StateShape, replicated_split, split

NAME = "attention"


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """KV per token `[2, kv_heads/tp, head_dim]` (K and V padded to the larger head dim)."""
    kv_heads = replicated_split(p.num_kv_heads, tp, f"{NAME}.num_kv_heads")
    split(p.num_heads, tp, f"{NAME}.num_heads")  # (sliding_attention reads its own block through here too)
    v_dim = p.v_head_dim or p.head_dim
    if v_dim == p.head_dim:
        return [StateShape("kv", "kv", (2, kv_heads, p.head_dim), ("KV", "Hkv", "D"), dt.kv, "token",
                           window=p.sliding_window)]
    return [
        StateShape("k", "kv", (kv_heads, p.head_dim), ("Hkv", "D"), dt.kv, "token", window=p.sliding_window),
        StateShape("v", "kv", (kv_heads, v_dim), ("Hkv", "Dv"), dt.kv, "token", window=p.sliding_window),
    ]


def weights(spec, p) -> dict[str, int]:
    """q, k, v, o projections (q doubled with an output gate; one gate a head, `d_in x num_heads`, with a head gate)."""
    d_in = p.input_size or spec.hidden_size
    v_dim = p.v_head_dim or p.head_dim
    q = d_in * p.num_heads * p.head_dim * (2 if p.output_gate else 1)
    kv = d_in * p.num_kv_heads * (p.head_dim + v_dim)
    o = p.num_heads * v_dim * spec.hidden_size
    return {"proj": q + kv + o + (d_in * p.num_heads if p.head_gate else 0)}


def layer_weights(spec, p) -> dict[str, int]:
    """What each layer running the block has of its own: q/k/v LoRA adapters (`input_size` -> rank -> `input_size`
    each, transformers modeling_zamba2.py Zamba2Attention `linear_*_adapter_list`) and the hidden x hidden linear on
    the block's output (Zamba2HybridLayer `linear`; vLLM zamba2.py loads both)."""
    d_in = p.input_size or spec.hidden_size
    return {"adapter": 3 * 2 * d_in * (p.adapter_rank or 0), "linear": spec.hidden_size**2 if p.layer_linear else 0}
