"""Qwen3.8-Flash-Next (`qwen4_exp`, Qwen4ExpConfig in transformers configuration_qwen4_exp.py; vLLM v0.34.0
models/qwen4_exp, SGLang v0.5.20 models/qwen4_exp.py): Qwen3.5-MoE's GatedDeltaNet and gated attention, a QSA
indexer on every full-attention layer, per-layer n-gram embeddings (PLE) on the 1-based `ple_layer_ids`, and
`hc_count` residual streams (hyper-connections)."""

from __future__ import annotations

from mcache.core.hf.common import Cfg, Draft, count_note
from mcache.core.hf.linear_attention import QWEN_TYPES, qwen_text
from mcache.core.hf.multimodal import text_config, with_vision

# transformers reads `full_attention` as `indexed_attention` (Qwen4ExpTextConfig.__post_init__); vLLM's decoder layer
# takes `qwen_sparse_attention` too (models/qwen4_exp/nvidia/model.py `_QSA_LAYER_TYPES`)
QWEN4_TYPES = {**QWEN_TYPES, "indexed_attention": "attention", "qwen_sparse_attention": "attention"}
MAX_NGRAM_HEADS = 4096  # bounds the prime search (all PLE layers' heads): real checkpoints have 16 (3 - 1 x 8, one layer)
_WITNESSES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)  # Miller-Rabin: exact for every n < 3.3e24


def is_prime(n: int) -> bool:
    """Whether `n` is prime (deterministic Miller-Rabin: exact far beyond the sizes a config can name)."""
    if n < 2:
        return False
    for p in _WITNESSES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in _WITNESSES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def ngram_table_rows(base: int, heads: int, layer: int, divisor: int) -> int:
    """Rows of the n-gram table of the `layer`-th PLE layer (0-based): its `heads` hashed heads take the next `heads`
    primes from `base` on, after the earlier PLE layers' (head `j` of layer `l` the `(l * heads + j + 1)`-th prime >=
    `base`), padded to a multiple of `divisor` (transformers modeling_qwen4_exp.py Qwen4ExpTextNGramEmbedding)."""
    primes, n, total = 0, base - 1, 0
    while primes < (layer + 1) * heads:
        n += 1
        while not is_prime(n):
            n += 1
        primes += 1
        if primes > layer * heads:
            total += n
    return -(-total // divisor) * divisor


def qwen4_exp(cfg: Cfg) -> Draft:
    """The text model (`text_config`), its indexer and PLE blocks; the vision tower recorded, not weighed."""
    text = text_config(cfg)
    draft = qwen_text(cfg, text, QWEN4_TYPES)
    hidden = draft.hidden_size
    attention = [i for i, e in enumerate(draft.entries) if e.startswith("attention+")]
    if attention and text.given("indexer_n_heads"):
        ratio = text.int("indexer_compress_ratio")
        draft.blocks["indexer"] = {"num_heads": text.int("indexer_n_heads"), "head_dim": text.int("indexer_head_dim"),
                                   "kv_heads": text.int("indexer_kv_heads", 1), "compress": ratio}
        for i in attention:
            draft.entries[i] = draft.entries[i].replace("attention+", "attention+indexer+", 1)
        if "mtp" in draft.blocks:
            draft.blocks["mtp"]["layer"] = draft.blocks["mtp"]["layer"].replace("attention+", "attention+indexer+", 1)
        draft.notes.append(f"A QSA indexer on each attention layer: one key of {text.int('indexer_head_dim')} a "
                           f"{ratio}-token group, and the open group's raw keys a slot.")
    ple = sorted(text.indices("ple_layer_ids", len(draft.entries), base=1)) if text.given("ple_layer_ids") else []
    if ple:
        draft.blocks["ple"] = _ple_block(text, hidden, len(ple))
        for i in ple:
            if not draft.entries[i].startswith("gdn+"):
                raise text.error("ple_layer_ids", f"linear_attention layers only (Qwen4ExpTextConfig), got {i + 1}")
            draft.entries[i] = draft.entries[i].replace("gdn+", "gdn+ple+", 1)
        draft.notes.append(f"PLE on layer(s) {', '.join(str(i + 1) for i in ple)} (1-based ple_layer_ids): a dilated "
                           "conv window over every residual stream a slot, and its n-gram table in the weights.")
    draft.blocks["hc"] = {"streams": text.int("hc_count", 4), "lowrank": text.int("hc_lowrank", 320)}
    draft.entries = [e.replace("+moe", "+hc+moe") for e in draft.entries]
    draft.notes.append(f"{draft.blocks['hc']['streams']} residual streams (hc_count) mixed around every block; the "
                       "model's final mixer is not weighed.")
    draft.notes[0] = count_note(draft.entries)  # the layer count `qwen_text` wrote, of the entries as they are now
    return with_vision(draft, cfg)


def _ple_block(text: Cfg, hidden: int, layers: int) -> dict:
    """The PLE block: streams, the conv's taps and spacing (`ngram_size`), and the n-gram table (the mean of its
    layers', whose prime-sized tables differ by a few rows)."""
    heads = (text.int("ngram_size", 3) - 1) * text.int("heads_per_ngram", 8)
    if heads * layers > MAX_NGRAM_HEADS:
        raise text.error("heads_per_ngram", f"at most {MAX_NGRAM_HEADS} n-gram heads over the PLE layers ((ngram_size "
                                            f"- 1) x heads_per_ngram x {layers}), got {heads * layers}")
    embed_dim = text.int("ple_embed_dim", hidden)
    if embed_dim % heads:
        raise text.error("ple_embed_dim", f"a multiple of the {heads} n-gram heads, got {embed_dim}")
    base, divisor = text.int("ngram_vocab_size_base", 20_000_000), text.int("make_ngram_vocab_size_divisible_by", 128)
    rows = [ngram_table_rows(base, heads, layer, divisor) for layer in range(layers)]
    return {"streams": text.int("hc_count", 4), "conv_kernel": text.int("ple_conv_kernel_size", 4),
            "dilation": text.int("ngram_size", 3), "embed_dim": embed_dim,
            "embedding_rows": sum(rows) // layers, "embedding_dim": embed_dim // heads}
