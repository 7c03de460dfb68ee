"""Linear-attention hybrids: `qwen3_next`, `qwen3_5`(`_moe`, and the `minicpmv4_6` wrapper), `kimi_linear` (and its `kimi_k3` wrapper),
`minimax` (and the remote-code `minimax_text_01`, `minimax_m1`), `lfm2` (and its `lfm2_vl` wrapper), `lfm2_moe`, `lfm3` (and its
`lfm3_vl` wrapper), `olmo_hybrid`, `bailing_hybrid`, `bailing_moe_linear`."""

from __future__ import annotations

from mcache.core.hf.common import Cfg, Draft, attention_block, count_note, moe_block, mtp_layers
from mcache.core.hf.multimodal import text_config, with_vision, wrapped

QWEN_TYPES = {"linear_attention": "gdn", "full_attention": "attention"}


def _qwen_layers(cfg: Cfg, n: int, types: dict[str, str]) -> tuple[list[str], str]:
    """GDN/attention per layer from `layer_types` (names read through `types`), else `full_attention_interval`
    ((i+1) % k == 0)."""
    interval = cfg.int("full_attention_interval") if cfg.has("full_attention_interval") else None
    if cfg.has("layer_types"):
        mixers = cfg.layer_list("layer_types", n, types)
        if cfg.given("full_attention_interval"):
            implied = ["attention" if (i + 1) % interval == 0 else "gdn" for i in range(n)]
            if implied != mixers:
                raise cfg.error("full_attention_interval", f"agreement with layer_types, got {interval}")
        return mixers, "layer_types"
    if interval is None:
        raise cfg.error("layer_types", "a value (or full_attention_interval), missing")
    return ["attention" if (i + 1) % interval == 0 else "gdn" for i in range(n)], f"full_attention_interval {interval}"


def _qwen_ffn(cfg: Cfg, n: int, moe: bool) -> tuple[list[str], dict]:
    """Per-layer FFN kind and blocks: MoE where `(i+1) % decoder_sparse_step == 0` and not in
    `mlp_only_layers`, a dense gated MLP elsewhere."""
    blocks: dict = {}
    if not moe or not cfg.int("num_experts", minimum=0):
        blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
        return ["mlp"] * n, blocks
    step = cfg.int("decoder_sparse_step", 1)  # Qwen3.5-MoE has no such field: experts on every layer
    dense = cfg.indices("mlp_only_layers", n) if cfg.has("mlp_only_layers") else set()
    ffn = ["moe" if i not in dense and (i + 1) % step == 0 else "mlp" for i in range(n)]
    shared = cfg.int("shared_expert_intermediate_size", minimum=0)
    blocks["moe"] = moe_block(
        cfg.int("num_experts"), cfg.int("num_experts_per_tok", None), cfg.weight_int("moe_intermediate_size"), shared
    )
    if "mlp" in ffn:
        blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    return ffn, blocks


def qwen_text(cfg: Cfg, text: Cfg, types: dict[str, str]) -> Draft:
    """A Qwen3.5-MoE text model whose layer types read through `types` (Qwen3.8-Flash-Next's names)."""
    return _qwen(cfg, text, moe=True, types=types)


def _qwen(cfg: Cfg, text: Cfg, moe: bool, default_mtp: int = 0, serves_mtp: bool = True,
          types: dict[str, str] = QWEN_TYPES) -> Draft:
    n, hidden = text.num_layers(), text.int("hidden_size")
    mixers, how = _qwen_layers(text, n, types)
    ffn, blocks = _qwen_ffn(text, n, moe)
    entries = [f"{m}+{f}" for m, f in zip(mixers, ffn, strict=True)]
    tie = text.bool("tie_word_embeddings")
    draft = Draft(cfg, hidden, text.weight_int("vocab_size"), entries, blocks=blocks, tie_embeddings=tie, dtype_cfg=text)
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(text, hidden, output_gate=text.bool("attn_output_gate", True))
    if "gdn" in mixers:
        draft.blocks["gdn"] = {
            "num_k_heads": text.int("linear_num_key_heads"),
            "num_v_heads": text.int("linear_num_value_heads"),
            "k_head_dim": text.int("linear_key_head_dim"),
            "v_head_dim": text.int("linear_value_head_dim"),
            "conv_kernel": text.int("linear_conv_kernel_dim"),
        }
    draft.notes += [count_note(entries), f"Full attention from {text.prefix}{how}."]  # notes[0]: the layer count
    mtp = mtp_layers(text)
    if mtp and not serves_mtp:
        draft.notes.append(f"{mtp} MTP layer(s) in the config, which vLLM's model class for {cfg.model_type} neither "
                           "builds nor loads: not counted.")
        mtp = 0
    elif mtp:
        draft.notes.append(f"{mtp} MTP layer(s) from the config.")
    elif default_mtp:
        mtp = default_mtp
        draft.notes.append(f"{mtp} MTP layer: {cfg.model_type} checkpoints ship one and the config declares none "
                           "(vLLM reads num_nextn_predict_layers, default 1).")
    if mtp:
        draft.blocks["mtp"] = {"num_layers": mtp, "layer": f"attention+{'moe' if 'moe' in ffn else 'mlp'}"}
    return draft


def qwen3_next(cfg: Cfg) -> Draft:
    """GatedDeltaNet + gated attention; MoE with a shared expert; one MTP layer."""
    return _qwen(cfg, cfg, moe=True, default_mtp=1)


def qwen3_5(cfg: Cfg) -> Draft:
    """Qwen3.5 (dense): the text model's fields are nested in `text_config`; a multimodal config's vision tower."""
    return with_vision(_qwen(cfg, text_config(cfg), moe=False), cfg)


def qwen3_5_moe(cfg: Cfg) -> Draft:
    """Qwen3.5 MoE: like `qwen3_5`, with experts on every layer."""
    return with_vision(_qwen(cfg, text_config(cfg), moe=True), cfg)


def minicpmv4_6(cfg: Cfg) -> Draft:
    """MiniCPM-V 4.6: a dense Qwen3.5 text model (`text_config`, model_type qwen3_5_text) under a SigLIP tower (recorded,
    not weighed). Its text config's MTP layer is not served: vLLM's MiniCPMV4_6ForConditionalGeneration builds
    Qwen3_5ForCausalLM alone and its weight mapper drops `mtp.` (model_executor/models/minicpmv4_6.py, v0.24.0 -
    v0.34.0)."""
    return wrapped(lambda text: _qwen(text, text, moe=False, serves_mtp=False), cfg)


def olmo_hybrid(cfg: Cfg) -> Draft:
    """OLMo-Hybrid (OlmoHybridConfig, transformers configuration_olmo_hybrid.py): GatedDeltaNet layers with full
    attention where `i % 4 == 3` unless `layer_types` says; a dense gated MLP on every layer. The GDN sizes
    default to the attention heads, key dim `int(0.75 x hidden / key heads)`, value dim twice that."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    if cfg.given("layer_types"):
        mixers = cfg.layer_list("layer_types", n, QWEN_TYPES)
        how = "layer_types"
    else:
        mixers = ["attention" if i % 4 == 3 else "gdn" for i in range(n)]
        if "attention" not in mixers:
            mixers[-1] = "attention"  # OlmoHybridConfig makes the last layer full attention
        how = "i % 4 == 3"
    entries = [f"{m}+mlp" for m in mixers]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    heads = cfg.int("num_attention_heads")
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(cfg, hidden, head_dim_keys=())  # vLLM: hidden // heads
    if "gdn" in mixers:
        k_heads = cfg.int("linear_num_key_heads") if cfg.given("linear_num_key_heads") else heads
        v_heads = cfg.int("linear_num_value_heads") if cfg.given("linear_num_value_heads") else heads
        k_dim = cfg.int("linear_key_head_dim") if cfg.given("linear_key_head_dim") else int(0.75 * hidden / k_heads)
        v_dim = cfg.int("linear_value_head_dim") if cfg.given("linear_value_head_dim") else 2 * k_dim
        draft.blocks["gdn"] = {"num_k_heads": k_heads, "num_v_heads": v_heads, "k_head_dim": k_dim, "v_head_dim": v_dim,
                               "conv_kernel": cfg.int("linear_conv_kernel_dim")}
    draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    draft.notes.append(count_note(entries) + f" Full attention from {how}.")
    return draft


def kimi_linear(cfg: Cfg) -> Draft:
    """KDA and MLA layers from `linear_attn_config`'s 1-based `kda_layers`/`full_attn_layers`;
    dense MLP on the first `first_k_dense_replace` layers, MoE with shared experts after."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    lin = cfg.sub("linear_attn_config", required=False)
    if lin is None:
        mixers = ["mla"] * n
    else:
        kda = lin.indices("kda_layers", n, base=1)
        full = lin.indices("full_attn_layers", n, base=1) if lin.has("full_attn_layers") else set(range(n)) - kda
        if kda & full:
            first = min(kda & full) + 1
            raise lin.error("full_attn_layers", f"layers not also in kda_layers, got {first} in both (1-based)")
        missing = sorted(set(range(n)) - kda - full)
        if missing:
            raise lin.error("kda_layers", f"with full_attn_layers every layer 1..{n} (1-based), "
                                          f"missing {[i + 1 for i in missing]}")
        mixers = ["kda" if i in kda else "mla" for i in range(n)]
    experts = cfg.int(cfg.first_given("num_experts", "num_local_experts"), minimum=0)
    dense_first = cfg.int("first_k_dense_replace", minimum=0)
    freq = cfg.int("moe_layer_freq", 1)  # remote-code Kimi configs only; KimiLinearConfig puts MoE on every layer
    ffn = ["moe" if experts and i >= dense_first and i % freq == 0 else "mlp" for i in range(n)]
    entries = [f"{m}+{f}" for m, f in zip(mixers, ffn, strict=True)]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    if "mla" in mixers:
        q_lora = cfg.int("q_lora_rank", None)
        draft.blocks["mla"] = {
            "num_heads": cfg.int("num_attention_heads"),
            "kv_lora_rank": cfg.int("kv_lora_rank"),
            "qk_rope_head_dim": cfg.int("qk_rope_head_dim"),
            "qk_nope_head_dim": cfg.int("qk_nope_head_dim"),
            "v_head_dim": cfg.int("v_head_dim"),
            **({"q_lora_rank": q_lora} if q_lora else {}),
        }
    if "kda" in mixers:
        draft.blocks["kda"] = {
            "num_heads": lin.int("num_heads"),
            "head_dim": lin.int("head_dim"),
            "conv_kernel": lin.int("short_conv_kernel_size", 4),  # KimiLinearConfig.linear_conv_kernel_dim
        }
    if "mlp" in ffn:
        draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    if "moe" in ffn:
        top_k = cfg.first_given("num_experts_per_token", "num_experts_per_tok")
        shared = cfg.int(cfg.first_given("num_shared_experts", "n_shared_experts"), minimum=0)
        size = cfg.weight_int("moe_intermediate_size")
        draft.blocks["moe"] = moe_block(experts, cfg.int(top_k, None), size, size, shared)
        if cfg.given("routed_expert_hidden_size"):  # Kimi-K3's latent MoE (vLLM models/kimi_k3)
            draft.blocks["moe"]["latent_size"] = cfg.int("routed_expert_hidden_size")
            draft.notes.append(f"Routed experts work in a {cfg.int('routed_expert_hidden_size')}-wide latent space "
                               "(routed_expert_hidden_size).")
    draft.notes.append(
        count_note(entries) + " linear_attn_config.kda_layers/full_attn_layers are 1-based; "
        f"first_k_dense_replace {dense_first}. MLA caches kv_lora_rank + qk_rope_head_dim per token."
    )
    return draft


def kimi_k3(cfg: Cfg) -> Draft:
    """Kimi-K3: a multimodal wrapper whose `text_config` is a `kimi_linear` config, and its vision tower."""
    return wrapped(kimi_linear, cfg)


def minimax(cfg: Cfg) -> Draft:
    """Lightning (linear) and softmax attention from `layer_types` (transformers) or `attn_type_list`
    (0 = lightning, 1 = softmax; the remote-code `minimax_text_01` and `minimax_m1` configs, one layout); MoE on every
    layer."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    if cfg.has("layer_types"):
        key = "layer_types"
        mixers = cfg.layer_list(key, n, {"linear_attention": "lightning", "full_attention": "attention"})
    else:
        key = "attn_type_list"
        if not cfg.has(key):
            raise cfg.error("layer_types", "a value (or attn_type_list), missing")
        codes = cfg.list(key, int)
        if len(codes) != n:
            raise cfg.error(key, f"{n} entries (num_hidden_layers), got {len(codes)}")
        for i, c in enumerate(codes):
            if c not in (0, 1):
                raise cfg.error(f"{key}[{i}]", f"0 (lightning) or 1 (softmax attention), got {c!r}")
        mixers = ["attention" if c else "lightning" for c in codes]
    entries = [f"{m}+moe" for m in mixers]
    tie = cfg.bool("tie_word_embeddings", False)  # MiniMaxConfig; the remote MiniMaxText01Config too
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=tie)
    heads = cfg.int("num_attention_heads")
    head_dim = cfg.int("head_dim", hidden // heads)
    if "lightning" in mixers:
        draft.blocks["lightning"] = {"num_heads": heads, "head_dim": head_dim}
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(cfg, hidden)
    shared = cfg.int("shared_intermediate_size", 0, minimum=0)  # MiniMaxConfig has no shared expert
    draft.blocks["moe"] = moe_block(
        cfg.int("num_local_experts"), cfg.int("num_experts_per_tok", None), cfg.weight_int("intermediate_size"), shared
    )
    draft.notes.append(count_note(entries) + f" Layer types from {key}.")
    return draft


LFM2_TYPES = {"conv": "short_conv", "full_attention": "attention"}
LFM3_TYPES = {**LFM2_TYPES, "sliding_attention": "sliding_attention"}
LINEAR_TYPES = {"linear_attention": "linear", "full_attention": "mla"}


def bailing_hybrid(cfg: Cfg) -> Draft:
    """Ling 3.0 (BailingHybridConfig, transformers modeling_bailing_hybrid.py): KDA layers, with MLA where
    `(i + 1) % layer_group_size == 0` and on the layers past the last whole group (vLLM v0.34.0
    bailing_moe_v3.py `_is_kda_layer`; or as `layer_types` says); the remote-code Ling-2.6 / Ring-2.5
    (BailingMoeV2_5ForCausalLM) share the model type with lightning attention in place of KDA, MLA only where the
    group closes (bailing_moe_linear.py)."""
    n = cfg.num_layers()
    linear = "lightning" if cfg.architecture() == "BailingMoeV2_5ForCausalLM" else "kda"
    if cfg.given("layer_types"):
        mixers = [linear if m == "linear" else m for m in cfg.layer_list("layer_types", n, LINEAR_TYPES)]
    else:
        group = cfg.int("layer_group_size")
        tail = n // group * group if linear == "kda" else n  # a partial last group is all MLA (KDA models only)
        mixers = ["mla" if (i + 1) % group == 0 or i >= tail else linear for i in range(n)]
    entries, draft = _bailing_moe(cfg, n, mixers, "mla")
    heads = cfg.int("num_attention_heads")
    if linear in mixers:  # the linear layers' head dim is the config's head_dim (BailingHybridConfig.linear_head_dim)
        block = {"num_heads": heads, "head_dim": cfg.int("head_dim")}
        if linear == "kda":
            block["conv_kernel"] = cfg.int("short_conv_kernel_size")
            # transformers' BailingHybridDeltaAttention has only full-rank f_proj/g_proj; the checkpoints say so with
            # no_kda_lora true, and only an explicit false asks for Kimi's low-rank gates
            block["low_rank_gates"] = not cfg.bool("no_kda_lora", True)
            draft.notes.append("KDA gates " + ("low-rank (no_kda_lora false)." if block["low_rank_gates"] else
                                               "full-rank f_proj/g_proj (no_kda_lora)."))
        draft.blocks[linear] = block
    q_lora = cfg.int("q_lora_rank") if cfg.given("q_lora_rank") else None
    draft.blocks["mla"] = {"num_heads": heads, "kv_lora_rank": cfg.int("kv_lora_rank"),
                           "qk_rope_head_dim": cfg.int("qk_rope_head_dim"), "qk_nope_head_dim": cfg.int("qk_nope_head_dim"),
                           "v_head_dim": cfg.int("v_head_dim"), **({"q_lora_rank": q_lora} if q_lora else {})}
    draft.notes.append(count_note(entries) + f" {'Lightning' if linear == 'lightning' else 'KDA'} layers with MLA "
                       "every layer_group_size layers.")
    return draft


def _bailing_moe(cfg: Cfg, n: int, mixers: list[str], mtp_layer: str) -> tuple[list[str], Draft]:
    """Bailing (Ling/Ring) FFNs and the draft: a dense gated MLP on the first `first_k_dense_replace` layers,
    routed experts plus shared ones after; `num_nextn_predict_layers` MTP layers of `mtp_layer`."""
    dense = cfg.int("first_k_dense_replace", minimum=0)
    entries = [f"{m}+{'mlp' if i < dense else 'moe'}" for i, m in enumerate(mixers)]
    draft = Draft(cfg, cfg.int("hidden_size"), cfg.weight_int("vocab_size"), entries,
                  tie_embeddings=cfg.bool("tie_word_embeddings"))
    if dense:
        draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    if dense < n:
        size = cfg.weight_int("moe_intermediate_size")
        shared = cfg.int(cfg.first_given("num_shared_experts", "n_shared_experts"), minimum=0)
        shared_size = cfg.int("moe_shared_expert_intermediate_size") if cfg.given("moe_shared_expert_intermediate_size") else size
        draft.blocks["moe"] = moe_block(cfg.int(cfg.first_given("num_experts", "num_local_experts")),
                                        cfg.int("num_experts_per_tok", None), size, shared_size, shared)
    mtp = cfg.int(cfg.first_given("num_nextn_predict_layers", "num_mtp_layers"), minimum=0)
    if mtp:
        draft.blocks["mtp"] = {"num_layers": mtp, "layer": f"{mtp_layer}+moe"}
        draft.notes.append(f"{mtp} MTP layer(s) (num_nextn_predict_layers).")
    return entries, draft


def bailing_moe_linear(cfg: Cfg) -> Draft:
    """Ring-linear / Ling-linear (remote BailingMoeLinearV2): lightning attention, with softmax GQA attention
    where `(i + 1) % layer_group_size == 0` (vLLM and SGLang bailing_moe_linear.py); MoE after the dense layers."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    group = cfg.int("layer_group_size")
    mixers = ["attention" if (i + 1) % group == 0 else "lightning" for i in range(n)]
    entries, draft = _bailing_moe(cfg, n, mixers, "attention")
    heads = cfg.int("num_attention_heads")
    head_dim = cfg.int("head_dim") if cfg.has("head_dim") else hidden // heads
    if "lightning" in mixers:  # every head keeps a state: num_key_value_heads applies to softmax layers only
        draft.blocks["lightning"] = {"num_heads": heads, "head_dim": head_dim}
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(cfg, hidden)
    draft.notes.append(count_note(entries) + f" Softmax attention every {group} layers (layer_group_size), "
                       "lightning attention elsewhere.")
    return draft


def lfm2_moe(cfg: Cfg) -> Draft:
    """LFM2-MoE: short-conv and attention layers from `layer_types` (which Lfm2MoeConfig never derives); a dense
    gated MLP on the first `num_dense_layers` layers, experts after (transformers modeling_lfm2_moe.py)."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    mixers = cfg.layer_list("layer_types", n, LFM2_TYPES)
    dense = cfg.int("num_dense_layers", minimum=0)
    entries = [f"{m}+{'mlp' if i < dense else 'moe'}" for i, m in enumerate(mixers)]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(cfg, hidden)
    if "short_conv" in mixers:
        draft.blocks["short_conv"] = {"conv_kernel": cfg.int("conv_L_cache")}
    if dense:
        draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    if dense < n:
        draft.blocks["moe"] = moe_block(cfg.int("num_experts"), cfg.int("num_experts_per_tok", None),
                                        cfg.weight_int("moe_intermediate_size"), 0)
    draft.notes.append(count_note(entries) + f" Dense MLP on the first {dense} layers (num_dense_layers), "
                       "experts after (no shared expert).")
    return draft


def lfm2(cfg: Cfg) -> Draft:
    """Short-conv and attention layers from `layer_types` or `full_attn_idxs`; a gated MLP on every
    layer, its size adjusted as `Lfm2MLP` does (`block_auto_adjust_ff_dim`)."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    names = LFM2_TYPES
    from_list = cfg.layer_list("layer_types", n, names) if cfg.has("layer_types") else None
    if cfg.has("full_attn_idxs"):
        attn = cfg.indices("full_attn_idxs", n)
        mixers = ["attention" if i in attn else "short_conv" for i in range(n)]
        if from_list is not None and from_list != mixers:
            raise cfg.error("full_attn_idxs", "agreement with layer_types")
    elif from_list is None:
        raise cfg.error("layer_types", "a value (or full_attn_idxs), missing")
    else:
        mixers = from_list
    entries = [f"{m}+mlp" for m in mixers]
    tie = cfg.bool(cfg.first_given("tie_embedding", "tie_word_embeddings"))
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=tie)
    key = "block_ff_dim" if cfg.has("block_ff_dim") else "intermediate_size"
    size = ff = cfg.int(key)
    how = f"{key} {ff}"
    if cfg.bool("block_auto_adjust_ff_dim"):
        size = int(2 * ff / 3)
        mult = cfg.raw("block_ffn_dim_multiplier")
        if isinstance(mult, bool) or not isinstance(mult, int | float) or not 0 < mult < 1e6:
            raise cfg.error("block_ffn_dim_multiplier", f"a positive number below 1e6, got {mult!r}")
        size = int(mult * size)
        step = cfg.int("block_multiple_of")
        size = -(-size // step) * step
        how += f" adjusted by block_auto_adjust_ff_dim (x2/3, x{mult}, rounded up to {step}) to {size}"
    draft.blocks["mlp"] = {"intermediate_size": size}
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(cfg, hidden)
    if "short_conv" in mixers:
        draft.blocks["short_conv"] = {"conv_kernel": cfg.int("conv_L_cache")}
    draft.notes.append(count_note(entries) + f" MLP size: {how}.")
    return draft


def lfm3(cfg: Cfg) -> Draft:
    """LFM3 (vLLM's own Lfm3Config, transformers_utils/configs/lfm3.py, and models/lfm3.py, v0.34.0): short-conv,
    full and sliding-window attention layers from `layer_types`, which the class derives when absent (full where
    `i % 4 == 2`, windowed where `i % 4 == 0` past the first layer, short conv elsewhere); a windowed layer keeps
    `sliding_window` tokens (full length when the config sets none). A gated MLP of `intermediate_size` on every layer,
    a sigmoid gate per attention head (`use_attention_gate`)."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    if cfg.given("layer_types"):
        mixers, how = cfg.layer_list("layer_types", n, LFM3_TYPES), "layer_types"
    else:
        mixers = ["attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "short_conv"
                  for i in range(n)]
        how = "Lfm3Config's default layer_types (full where i % 4 == 2, windowed where i % 4 == 0 past layer 0)"
    # an explicit null is the class's None (no window), not its default
    window = None if "sliding_window" in cfg.data and not cfg.given("sliding_window") else cfg.int("sliding_window")
    if window is None:
        mixers = ["attention" if m == "sliding_attention" else m for m in mixers]
    entries = [f"{m}+mlp" for m in mixers]
    tie = cfg.bool(cfg.first_given("tie_embedding", "tie_word_embeddings"))
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=tie)
    attention = {"num_heads": cfg.int("num_attention_heads"), "num_kv_heads": cfg.int("num_key_value_heads"),
                 "head_dim": cfg.int("head_dim"), "head_gate": cfg.bool("use_attention_gate")}
    if "attention" in mixers:
        draft.blocks["attention"] = attention
    if "sliding_attention" in mixers:
        draft.blocks["sliding_attention"] = {**attention, "sliding_window": window}
    if "short_conv" in mixers:
        draft.blocks["short_conv"] = {"conv_kernel": cfg.int("conv_L_cache")}
    draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    windowed = f"windowed to sliding_window {window}" if window else "sliding_window unset: those layers at full length"
    draft.notes.append(count_note(entries) + f" Layer types from {how}; {windowed}. Not weighed: the q/k norms and, with "
                       "use_sandwich_norm, the post-operator and post-FFN norms (2 x hidden_size a layer).")
    return draft


def lfm3_vl(cfg: Cfg) -> Draft:
    """LFM3-VL (vLLM's Lfm3VlConfig, v0.34.0): a multimodal wrapper whose `text_config` is an `lfm3` config, and its
    vision tower (recorded, not weighed)."""
    return wrapped(lfm3, cfg)


def lfm2_vl(cfg: Cfg) -> Draft:
    """LFM2-VL: a multimodal wrapper whose `text_config` is an `lfm2` config, and its SigLIP2 vision tower (recorded,
    not weighed)."""
    return wrapped(lfm2, cfg)
