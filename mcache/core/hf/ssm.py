"""Pure SSMs and the Mamba1 hybrid: `mamba`, `mamba2` (transformers format and the `mamba_ssm`
library's `d_model`/`n_layer`/`ssm_cfg` format), `jamba`."""

from __future__ import annotations

from mcache.core.hf.common import Cfg, Draft, attention_block, check_product, count_note, mamba1_block, mamba2_block

# Mixer defaults of the mamba_ssm library: a config's `ssm_cfg` only lists what differs from them.
MAMBA_SSM_DEFAULTS = {
    "Mamba1": {"d_state": 16, "d_conv": 4, "expand": 2, "dt_rank": "auto"},
    "Mamba2": {"d_state": 128, "d_conv": 4, "expand": 2, "headdim": 64, "ngroups": 1},
}
MAMBA_SSM_CONFIG = {"vocab_size": 50277, "pad_vocab_size_multiple": 8, "tie_embeddings": True, "d_intermediate": 0}


def mamba(cfg: Cfg) -> Draft:
    """transformers `MambaConfig` (and `FalconMambaConfig`, the same cache): Mamba1 on every layer, of the
    config's `intermediate_size`, else `expand x hidden` (the class sets that first and the config's value
    overrides it, configuration_mamba.py: Falcon-Mamba-7B ships expand 16 beside intermediate_size 8192)."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    inner = cfg.int("intermediate_size") if cfg.given("intermediate_size") else cfg.int("expand") * hidden
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), ["mamba1"] * n, tie_embeddings=cfg.bool("tie_word_embeddings"))
    draft.blocks["mamba1"] = mamba1_block(cfg, inner, hidden, "state_size", "conv_kernel", "time_step_rank")
    draft.notes.append(f"{n} Mamba1 layers (transformers {'FalconMambaConfig' if cfg.model_type == 'falcon_mamba' else 'MambaConfig'}"
                       "; Falcon-Mamba's extra RMS norms carry no weights and no state).")
    return draft


def mamba2(cfg: Cfg) -> Draft:
    """transformers `Mamba2Config`: Mamba2 on every layer; class defaults for the small fields."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    heads, head_dim = cfg.int("num_heads"), cfg.int("head_dim")
    check_product(cfg, "num_heads", heads, head_dim, cfg.int("expand") * hidden, "expand x hidden_size")
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), ["mamba2"] * n, tie_embeddings=cfg.bool("tie_word_embeddings"))
    draft.blocks["mamba2"] = mamba2_block(cfg, heads, head_dim, "state_size", "n_groups", "conv_kernel")
    if cfg.has("intermediate_size"):  # not a Mamba2Config field; SGLang's Mamba2Config reads it (spec provenance)
        draft.blocks["mamba2"]["intermediate_size"] = cfg.int("intermediate_size")
    draft.notes.append(f"{n} Mamba2 layers (transformers Mamba2Config).")
    return draft


def mamba_ssm(cfg: Cfg) -> Draft:
    """A config written by the `mamba_ssm` library: its mixer and model defaults applied."""
    d = {**MAMBA_SSM_CONFIG, **cfg.data}
    top = Cfg(d, cfg.file, cfg.model_type, cfg.prefix)
    n, hidden = top.num_layers("n_layer"), top.int("d_model")
    ssm = top.sub("ssm_cfg", required=False) or Cfg({}, cfg.file, cfg.model_type, "ssm_cfg.")
    layer = ssm.str("layer", "Mamba1")
    if layer not in MAMBA_SSM_DEFAULTS:
        raise ssm.error("layer", f"Mamba1 or Mamba2, got {layer!r}")
    mixer = Cfg({**MAMBA_SSM_DEFAULTS[layer], **ssm.data}, cfg.file, cfg.model_type, "ssm_cfg.")
    inner = mixer.int("expand") * hidden
    attn = set(top.indices("attn_layer_idx", n)) if top.has("attn_layer_idx") else set()
    ffn = top.int("d_intermediate", minimum=0)
    kind = layer.lower()
    entries = [("attention" if i in attn else kind) + ("+mlp" if ffn else "") for i in range(n)]
    vocab, multiple = top.int("vocab_size"), top.int("pad_vocab_size_multiple")
    padded = -(-vocab // multiple) * multiple
    draft = Draft(cfg, hidden, padded, entries, tie_embeddings=top.bool("tie_embeddings", True))
    if kind == "mamba2":
        head_dim = mixer.int("headdim")
        d_ssm = mixer.int("d_ssm", inner)
        if d_ssm % head_dim:
            raise mixer.error("headdim", f"a divisor of d_ssm {d_ssm}, got {head_dim}")
        draft.blocks["mamba2"] = mamba2_block(mixer, d_ssm // head_dim, head_dim, "d_state", "ngroups", "d_conv")
    else:
        draft.blocks["mamba1"] = mamba1_block(mixer, inner, hidden, "d_state", "d_conv", "dt_rank")
    if attn:
        draft.blocks["attention"] = attention_block(top.sub("attn_cfg"), hidden, heads_key="num_heads", kv_key="num_heads_kv")
    if ffn:
        draft.blocks["mlp"] = {"intermediate_size": -(-ffn // 128) * 128}  # GatedMLP rounds up to 128
    given = ", ".join(f"{k} {v}" for k, v in ssm.data.items() if k != "layer") or "none"
    defaults = ", ".join(f"{k} {v}" for k, v in MAMBA_SSM_DEFAULTS[layer].items() if k not in ssm.data)
    draft.notes.append(
        count_note(entries) + f" mamba_ssm config: ssm_cfg.layer {layer}; mixer values given: {given}; "
        f"mamba_ssm defaults applied: {defaults or 'none'}. vocab_size {vocab} padded to {padded} "
        f"(pad_vocab_size_multiple {multiple})."
    )
    if attn and (width := top.sub("attn_cfg").int("d_conv", 0, minimum=0)) > 0:  # modules/mha.py MHA's causal conv1d
        a = draft.blocks["attention"]
        channels = a["head_dim"] * (a["num_heads"] + 2 * a["num_kv_heads"])
        draft.notes.append(f"attn_cfg.d_conv {width}: mamba_ssm's attention layers also keep a conv state of "
                           f"{channels} channels x {width} per request (mha.py allocate_inference_cache), which "
                           "mcache does not size.")
    return draft


def jamba(cfg: Cfg) -> Draft:
    """Attention where `i % attn_layer_period == attn_layer_offset`, Mamba1 elsewhere; MoE where
    `i % expert_layer_period == expert_layer_offset`, a gated MLP elsewhere."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    a_period, e_period = cfg.int("attn_layer_period"), cfg.int("expert_layer_period")
    a_offset = cfg.int("attn_layer_offset", minimum=0)
    e_offset = cfg.int("expert_layer_offset", minimum=0)
    if a_offset >= a_period:
        raise cfg.error("attn_layer_offset", f"less than attn_layer_period {a_period}, got {a_offset}")
    if e_offset >= e_period:
        raise cfg.error("expert_layer_offset", f"less than expert_layer_period {e_period}, got {e_offset}")
    experts = cfg.int("num_experts")
    entries = [
        ("attention" if i % a_period == a_offset else "mamba1")
        + ("+moe" if experts > 1 and i % e_period == e_offset else "+mlp")
        for i in range(n)
    ]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    if any(e.startswith("attention") for e in entries):
        draft.blocks["attention"] = attention_block(cfg, hidden, head_dim_keys=())
    draft.blocks["mamba1"] = mamba1_block(cfg, cfg.int("mamba_expand") * hidden, hidden, "mamba_d_state", "mamba_d_conv",
                                          "mamba_dt_rank")
    if any(e.endswith("+mlp") for e in entries):
        draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    if any(e.endswith("+moe") for e in entries):
        draft.blocks["moe"] = {"num_experts": experts, "top_k": cfg.int("num_experts_per_tok", None),
                               "expert_intermediate_size": cfg.int("intermediate_size")}
    draft.notes.append(
        count_note(entries) + f" Attention where i % {a_period} == {a_offset} (attn_layer_period/offset), "
        f"MoE where i % {e_period} == {e_offset} (expert_layer_period/offset)."
    )
    return draft
