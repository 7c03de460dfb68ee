"""GLM-5.3-Flash (`glm5_next`, Glm5NextConfig in transformers 5.22 configuration_glm5_next.py; vLLM v0.34.0
models/glm5next, SGLang v0.5.20 models/glm5_next.py): Kimi Delta Attention layers and NoPE MLA layers with DeepSeek
sparse attention's indexer, whose keys are pooled `index_kpool` tokens a key; dense MLPs, then routed experts with a
shared one; `hc_mult` residual streams (mHC) around every block; the vision tower recorded, not weighed."""

from __future__ import annotations

from mcache.core.hf.common import Cfg, Draft, count_note, moe_block
from mcache.core.hf.multimodal import text_config, with_vision

# transformers reads `full_attention` as `indexed_attention`; the checkpoints write `deepseek_sparse_attention`
# (configuration_utils.py maps it to `indexed_attention`); vLLM makes every layer but `linear_attention` MLA
GLM5_TYPES = {"linear_attention": "kda", "indexed_attention": "mla", "deepseek_sparse_attention": "mla",
              "full_attention": "mla"}
INDEXER_TYPES = ("full", "shared")
DENSE_LAYERS = 3  # Glm5NextTextConfig.__post_init__: mlp_layer_types' default, the first three layers dense


def glm5_next(cfg: Cfg) -> Draft:
    """The text model (`text_config`, or the top level of a flat text-only config) and its vision tower."""
    text = text_config(cfg)
    n, hidden = text.num_layers(), text.int("hidden_size")
    mixers = _mixers(text, n)
    ffn = _ffn(text, n)
    indexed = {i for i in _indexed_layers(text, n) if mixers[i] == "mla"} if "mla" in mixers else set()
    mhc = text.bool("mhc", True)  # transformers builds the streams whatever it says; SGLang only when it is true

    def entry(mixer: str, indexer: bool, mlp: str) -> str:
        return "+".join([mixer, *(["dsa_indexer"] if indexer else []), *(["mhc"] if mhc else []), mlp])

    entries = [entry(m, i in indexed, f) for i, (m, f) in enumerate(zip(mixers, ffn, strict=True))]
    draft = Draft(cfg, hidden, text.weight_int("vocab_size"), entries, tie_embeddings=text.bool("tie_word_embeddings"),
                  dtype_cfg=text)
    lin = text.sub("linear_attn_config", required=False)

    def linear(key: str, field: str) -> int:  # linear_attn_config's fields override the class's linear_* ones
        return lin.int(key) if lin and lin.given(key) else text.int(field)

    if "kda" in mixers:  # Glm5NextTextConfig.__post_init__
        draft.blocks["kda"] = {"num_heads": linear("num_heads", "linear_num_heads"),
                               "head_dim": linear("head_dim", "linear_head_dim"),
                               "conv_kernel": linear("short_conv_kernel_size", "linear_conv_kernel_dim")}
    q_lora = text.int("q_lora_rank")  # the DSA layers require it (Glm5NextTextConfig.validate_architecture)
    if "mla" in mixers:
        draft.blocks["mla"] = {"num_heads": text.int("num_attention_heads"), "kv_lora_rank": text.int("kv_lora_rank"),
                               "qk_rope_head_dim": text.int("qk_rope_head_dim", minimum=0),
                               "qk_nope_head_dim": text.int("qk_nope_head_dim"), "v_head_dim": text.int("v_head_dim"),
                               "q_lora_rank": q_lora}
    if indexed:
        kpool = text.int("index_kpool")
        draft.blocks["dsa_indexer"] = {"num_heads": text.int("index_n_heads"), "head_dim": text.int("index_head_dim"),
                                       "q_rank": q_lora, "kpool": kpool,
                                       "compress": text.bool("index_kpool_compress", True)}
        draft.notes.append(f"A DSA indexer on {len(indexed)} of the {mixers.count('mla')} MLA layers (indexer_types "
                           f"'full'): fp8 keys with their scales, one per {kpool} tokens (index_kpool), and the open "
                           "pool's raw keys and gate scores a slot.")
    if mhc:
        draft.blocks["mhc"] = {"streams": text.int("hc_mult")}
        draft.notes.append(f"{draft.blocks['mhc']['streams']} residual streams (hc_mult, mHC) mixed around every "
                           "block.")
    if "mlp" in ffn:
        draft.blocks["mlp"] = {"intermediate_size": text.weight_int("intermediate_size")}
    if "moe" in ffn:
        size = text.weight_int("moe_intermediate_size")
        draft.blocks["moe"] = moe_block(text.int("n_routed_experts"), text.int("num_experts_per_tok", None), size, size,
                                        text.int("n_shared_experts", minimum=0))
    mtp = text.int("num_nextn_predict_layers", 0, minimum=0)
    if mtp and "mla" in mixers:  # an MTP layer is never KDA (vLLM models/glm5next/common/model.py), MoE, DSA
        draft.blocks["mtp"] = {"num_layers": mtp, "layer": entry("mla", bool(indexed), "moe" if "moe" in ffn else "mlp")}
        draft.notes.append(f"{mtp} MTP layer(s) (num_nextn_predict_layers), MLA with the indexer.")
    draft.notes.insert(0, count_note(entries) + " KDA and MLA layers from layer_types; MLA caches kv_lora_rank + "
                       "qk_rope_head_dim per token.")
    return with_vision(draft, cfg)


def _mixers(text: Cfg, n: int) -> list[str]:
    """KDA or MLA per layer from `layer_types`, else transformers' default (MLA every fourth layer); a
    `linear_attn_config.kda_layers` (0-based, which SGLang reads instead) must agree."""
    if text.given("layer_types"):
        mixers = text.layer_list("layer_types", n, GLM5_TYPES)
    else:
        mixers = ["mla" if i % 4 == 3 else "kda" for i in range(n)]
    lin = text.sub("linear_attn_config", required=False)
    if lin is not None and lin.given("kda_layers"):
        kda = lin.indices("kda_layers", n)
        if kda != {i for i, m in enumerate(mixers) if m == "kda"}:
            how = "layer_types" if text.given("layer_types") else "the linear_attention layers transformers assumes " \
                                                                   "without layer_types (all but every fourth)"
            raise lin.error("kda_layers", f"the layers {how} makes KDA (0-based; vLLM reads layer_types, SGLang "
                                          "kda_layers)")
    return mixers


def _ffn(text: Cfg, n: int) -> list[str]:
    """`mlp_layer_types` (`dense` or `sparse`), else the first three layers dense."""
    if not text.given("mlp_layer_types"):
        return ["mlp" if i < DENSE_LAYERS else "moe" for i in range(n)]
    return text.layer_list("mlp_layer_types", n, {"dense": "mlp", "sparse": "moe"})


def _indexed_layers(text: Cfg, n: int) -> set[int]:
    """Layers whose attention runs an indexer of its own: `indexer_types` `full` (a `shared` layer reuses the
    previous full layer's selection and has none), else transformers' rule from `index_topk_pattern` (F / S) or
    `index_topk_freq` and `index_skip_topk_offset`."""
    if text.given("indexer_types"):
        types = text.list("indexer_types", str)
        key = "indexer_types"
    elif text.given("index_topk_pattern"):
        pattern = text.raw("index_topk_pattern")
        if isinstance(pattern, str):
            types = [{"F": "full", "S": "shared"}.get(c, c) for c in pattern]
        else:
            types = text.list("index_topk_pattern", str)
        key = "index_topk_pattern"
    else:
        freq = max(text.int("index_topk_freq", 1), 1)
        offset = text.int("index_skip_topk_offset", 2, minimum=0)
        return {i for i in range(n) if max(i - offset + 1, 0) % freq == 0}
    if len(types) != n:
        raise text.error(key, f"{n} entries (num_hidden_layers), got {len(types)}")
    for i, t in enumerate(types):
        if t not in INDEXER_TYPES:
            raise text.error(f"{key}[{i}]", f"one of {', '.join(INDEXER_TYPES)} (or F / S), got {t!r}")
    return {i for i, t in enumerate(types) if t == "full"}
