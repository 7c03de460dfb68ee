"""DeepSeek sparse attention's indexer (GLM-5.3-Flash's): fp8 keys with their scales, one per `kpool` tokens, and the
open pool's raw keys and gate scores a slot, all whole on every TP rank (one key head, which every rank's selection
reads)."""

from __future__ import annotations

from mcache.core.errors import LayoutError
from mcache.core.kinds.base import CacheDtypes, StateShape

NAME = "dsa_indexer"
PRE_NORM = False  # no norm of the hidden size of its own: it reads the attention's normed input
SCALE_BLOCK = 128  # values a float32 scale covers (vLLM `quant_block_size`, SGLang DSATokenToKVPool.quant_block_size)


def key_row_bytes(p) -> int:
    """Bytes of one stored key: `head_dim` fp8 values and a float32 scale per 128 of them (132 for 128)."""
    if p.head_dim % SCALE_BLOCK:
        raise LayoutError(f"{NAME}.head_dim", f"a multiple of {SCALE_BLOCK} (a float32 scale per {SCALE_BLOCK} fp8 "
                                              f"values), got {p.head_dim}")
    return p.head_dim + p.head_dim // SCALE_BLOCK * 4


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Keys as bytes, one row per `kpool` tokens (a pool's key, written when the pool closes), whatever the KV dtype;
    with `compress` and `kpool` > 1, the open pool's raw keys and gate scores `[kpool, 2, head_dim]` a slot in the
    model's dtype (transformers modeling_glm5_next.py Glm5NextTextIndexer; vLLM v0.34.0 models/glm5next/common/
    attention.py Glm5NextIndexerCache / Glm5NextTailCache, SGLang v0.5.20 mem_cache/memory_pool.py DSATokenToKVPool
    `_compress_tail_k` / `_compress_tail_score`)."""
    row = key_row_bytes(p)
    if row % p.kpool:  # a token's share of a key is whole bytes
        raise LayoutError(f"{NAME}.kpool", f"a divisor of a key's {row} bytes ({p.head_dim} fp8 values and their "
                                           f"scales), got {p.kpool}")
    keys = StateShape("keys", "kv", (row,), ("B",), "uint8", "token", tokens_per_row=p.kpool)
    if not p.compress or p.kpool == 1:
        return [keys]
    return [keys, StateShape("tail", "conv", (p.kpool, 2, p.head_dim), ("G", "KS", "D"), dt.model)]


def weights(spec, p) -> dict[str, int]:
    """The query projection from the MLA's query latent (`wq_b`), the key and head-weight projections (`wk`,
    `weights_proj`), the key's LayerNorm and the pool's position embedding and gate (`index_kpool_compress_ape` /
    `_gate`, which transformers and vLLM build whatever `kpool` is)."""
    h, d = spec.hidden_size, p.head_dim
    return {"proj": p.q_rank * p.num_heads * d + h * d + h * p.num_heads,
            "other": 2 * d + p.kpool * d + d * h}
