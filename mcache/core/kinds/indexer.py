"""A sparse-attention indexer's key cache (Qwen3.8-Flash-Next's QSA): compressed keys per token, a raw-key ring per
slot, both whole on every TP rank (one key head, which every rank's selection reads)."""

from __future__ import annotations

from mcache.core.errors import LayoutError
from mcache.core.kinds.base import CacheDtypes, StateShape

NAME = "indexer"
PRE_NORM = False  # no norm of the hidden size of its own: it reads the attention's normed input


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Keys `[kv_heads, head_dim]` one row per `compress` tokens (a group's mean, written when the group closes), and
    the open group's raw keys `[compress, kv_heads, head_dim]` a slot (transformers modeling_qwen4_exp.py; vLLM
    v0.34.0 models/qwen4_exp/common/qsa_indexer.py QSACompressedKeyCache / QSARawKeyCache, SGLang v0.5.20
    mem_cache/qsa_kv_pool.py). Both in the model's dtype, whatever the attention KV's: the engines keep them bf16
    unless their own indexer option says fp8 (vLLM `indexer_kv_dtype`, SGLang `--qsa-indexer-dtype`)."""
    row = (p.kv_heads, p.head_dim)
    if p.kv_heads * p.head_dim % p.compress:  # a token's share of a row is whole bytes in any dtype
        raise LayoutError(f"{NAME}.compress", f"a divisor of a key row's {p.kv_heads * p.head_dim} values, got "
                                              f"{p.compress}")
    return [
        StateShape("keys", "kv", row, ("Hidx", "D"), dt.model, "token", tokens_per_row=p.compress),
        StateShape("key_ring", "conv", (p.compress, *row), ("G", "Hidx", "D"), dt.model),
    ]


def weights(spec, p) -> dict[str, int]:
    """The projection to `num_heads` query and `kv_heads` key heads (a ReplicatedLinear in vLLM) and the q / k norms."""
    return {"proj": spec.hidden_size * (p.num_heads + p.kv_heads) * p.head_dim, "other": 2 * p.head_dim}
