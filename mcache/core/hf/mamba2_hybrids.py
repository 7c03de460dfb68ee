"""Mamba2 hybrids: `nemotron_h` (and its `NemotronH_Nano_VL_V2` / `NemotronH_Nano_Omni_Reasoning_V3` wrappers),
`bamba`, `granitemoehybrid`, `falcon_h1`, `zamba2`, `plamo2`."""

from __future__ import annotations

from mcache.core.hf.common import Cfg, Draft, attention_block, check_product, count_note, mamba2_block, moe_block
from mcache.core.hf.multimodal import wrapped
from mcache.core.spec.model import NEMOTRON_LEGEND

# layers_block_type names: the legacy ones, and transformers 5's NemotronHConfig names (configuration_nemotron_h.py
# validate_layer_type: full_attention, linear_attention, moe, mlp), which the Nemotron 3.5 exports write
NEMOTRON_NAMES = {"mamba": "mamba2", "attention": "attention", "mlp": "mlp", "moe": "moe",
                  "linear_attention": "mamba2", "full_attention": "attention"}
MIXER_NAMES = {"mamba": "mamba2", "attention": "attention", "linear_attention": "mamba2",
               "full_attention": "attention"}


def _inner_heads(cfg: Cfg, hidden: int, prefix: str = "mamba_") -> dict:
    """Bamba/Granite/Zamba-style `mamba_*` fields: d_inner = expand x hidden split into heads."""
    inner = cfg.int(f"{prefix}expand") * hidden
    heads = cfg.int(f"{prefix}n_heads")
    head_dim = cfg.int_or_auto(f"{prefix}d_head", inner // heads)
    check_product(cfg, f"{prefix}n_heads", heads, head_dim, inner, f"{prefix}expand x hidden_size")
    return mamba2_block(cfg, heads, head_dim, f"{prefix}d_state", f"{prefix}n_groups", f"{prefix}d_conv")


def nemotron_h(cfg: Cfg) -> Draft:
    """One kind per layer from `hybrid_override_pattern` (M * - E) or `layers_block_type`; the layer count is
    the layout's when the config gives no `num_hidden_layers` (NemotronHConfig derives it the same way)."""
    hidden = cfg.int("hidden_size")
    if cfg.has("hybrid_override_pattern"):
        pattern = cfg.str("hybrid_override_pattern")
        n = cfg.num_layers() if cfg.has("num_hidden_layers") else len(pattern)
        if len(pattern) != n:
            raise cfg.error("hybrid_override_pattern", f"{n} characters (num_hidden_layers), got {len(pattern)}")
        for i, ch in enumerate(pattern):
            if ch not in NEMOTRON_LEGEND:
                raise cfg.error(f"hybrid_override_pattern[{i}]", f"one of M * - E, got {ch!r}")
        entries = [NEMOTRON_LEGEND[ch] for ch in pattern]
    else:
        if not cfg.has("layers_block_type"):
            raise cfg.error("hybrid_override_pattern", "a value (or layers_block_type), missing")
        n = cfg.num_layers() if cfg.has("num_hidden_layers") else len(cfg.list("layers_block_type", str))
        entries = cfg.layer_list("layers_block_type", n, NEMOTRON_NAMES)
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    mtp = _nemotron_mtp(cfg)
    kinds = set(entries) | (set(mtp["layer"].split("+")) if mtp else set())
    if mtp:
        draft.blocks["mtp"] = mtp
    if "mamba2" in kinds:
        draft.blocks["mamba2"] = mamba2_block(cfg, cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim"), "ssm_state_size",
                                              "n_groups", "conv_kernel")
    if "attention" in kinds:
        head_dim = cfg.first_given("attention_head_dim", "head_dim")  # the v1 remote-code spelling, else the field
        draft.blocks["attention"] = attention_block(cfg, hidden, head_dim_keys=(head_dim,))
    if "mlp" in kinds:
        draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size"), "gated": False}
    if "moe" in kinds:
        shared = cfg.int("moe_shared_expert_intermediate_size", minimum=0)
        latent = cfg.int("moe_latent_size") if cfg.has("moe_latent_size") else None
        draft.blocks["moe"] = moe_block(
            cfg.int("n_routed_experts"), cfg.int("num_experts_per_tok", None), cfg.weight_int("moe_intermediate_size"), shared,
            cfg.int("n_shared_experts", minimum=0), gated=False, **({"latent_size": latent} if latent else {}),
        )
        if latent:
            draft.notes.append(f"Routed experts work in a {latent}-wide latent space (moe_latent_size).")
    draft.notes.append(count_note(entries) + " MLP and experts are squared-ReLU up/down (not gated).")
    if mtp:
        draft.notes.append(f"{mtp['num_layers']} MTP layer(s) of {mtp['layer']} (num_nextn_predict_layers, "
                           "mtp_layers_block_type / mtp_hybrid_override_pattern), counted in the weights.")
    return draft


def nemotron_h_nano_vl(cfg: Cfg) -> Draft:
    """Nemotron Nano VL v2 and Nemotron 3 Nano Omni (remote code): a multimodal wrapper whose `llm_config` is a
    `nemotron_h` config, and its RADIO vision tower (recorded, not weighed); an Omni config's Parakeet sound encoder
    (`sound_config`) keeps no cache and is not weighed either."""
    draft = wrapped(nemotron_h, cfg)
    if cfg.given("sound_config"):
        draft.notes.append("Sound encoder (sound_config, Parakeet): no cache, not counted in the weights (give "
                           "--weights for the checkpoint's size).")
    return draft


def _nemotron_mtp(cfg: Cfg) -> dict | None:
    """The MTP block: `num_nextn_predict_layers` layers of `mtp_layers_block_type` (NemotronHConfig's default:
    attention then MoE), or of the legacy `mtp_hybrid_override_pattern` (vLLM nemotron_h_mtp.py reads it)."""
    layers = cfg.int("num_nextn_predict_layers", minimum=0)
    if not layers:
        return None
    if cfg.given("mtp_layers_block_type"):
        kinds = cfg.layer_list("mtp_layers_block_type", len(cfg.list("mtp_layers_block_type", str)), NEMOTRON_NAMES)
    elif cfg.given("mtp_hybrid_override_pattern"):
        pattern = cfg.str("mtp_hybrid_override_pattern")
        for i, ch in enumerate(pattern):
            if ch not in NEMOTRON_LEGEND:
                raise cfg.error(f"mtp_hybrid_override_pattern[{i}]", f"one of M * - E, got {ch!r}")
        kinds = [NEMOTRON_LEGEND[ch] for ch in pattern]
    else:
        kinds = ["attention", "moe"]
    if len(set(kinds)) != len(kinds):
        raise cfg.error("mtp_layers_block_type", f"each layer type once in an MTP layer, got {kinds}")
    return {"num_layers": layers, "layer": "+".join(kinds)}


def bamba(cfg: Cfg) -> Draft:
    """Mamba2 layers with attention at `attn_layer_indices`; a gated MLP on every layer."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    attn = cfg.indices("attn_layer_indices", n) if cfg.has("attn_layer_indices") else set()
    entries = ["attention+mlp" if i in attn else "mamba2+mlp" for i in range(n)]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    draft.blocks["mamba2"] = _inner_heads(cfg, hidden)
    if attn:
        draft.blocks["attention"] = attention_block(cfg, hidden)
    draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    draft.notes.append(count_note(entries) + " Attention layers from attn_layer_indices (0-based).")
    return draft


def granitemoehybrid(cfg: Cfg) -> Draft:
    """Mamba2/attention mixers from `layer_types`; each layer has a MoE plus a shared expert
    (a dense shared MLP alone when `num_local_experts` is 0)."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    key = "layer_types" if cfg.has("layer_types") else "layers_block_type"
    mixers = cfg.layer_list(key, n, MIXER_NAMES)
    experts = cfg.int("num_local_experts", minimum=0)
    ffn = "moe" if experts else "mlp"
    entries = [f"{m}+{ffn}" for m in mixers]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    if "mamba2" in mixers:
        draft.blocks["mamba2"] = _inner_heads(cfg, hidden)
    if "attention" in mixers:
        draft.blocks["attention"] = attention_block(cfg, hidden)
    shared = cfg.int("shared_intermediate_size", minimum=0)
    if experts:
        draft.blocks["moe"] = moe_block(experts, cfg.int("num_experts_per_tok", None), cfg.weight_int("intermediate_size"), shared)
    else:
        draft.blocks["mlp"] = {"intermediate_size": shared or cfg.weight_int("intermediate_size")}
    draft.notes.append(count_note(entries) + f" Mixers from {key}.")
    return draft


def falcon_h1(cfg: Cfg) -> Draft:
    """Parallel hybrid: every layer runs Mamba2 and attention side by side, then a gated MLP."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    heads = cfg.int("mamba_n_heads")
    inner = cfg.int("mamba_d_ssm")  # FalconH1Config: mamba_expand x hidden only where mamba_d_ssm is null
    head_dim = cfg.int_or_auto("mamba_d_head", inner // heads)
    check_product(cfg, "mamba_n_heads", heads, head_dim, inner, "mamba_d_ssm")
    entries = ["mamba2+attention+mlp"] * n
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    draft.blocks["mamba2"] = mamba2_block(cfg, heads, head_dim, "mamba_d_state", "mamba_n_groups", "mamba_d_conv")
    draft.blocks["attention"] = attention_block(cfg, hidden)
    draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    draft.notes.append(f"{n} layers, each Mamba2 and attention in parallel, then a gated MLP (falcon_h1).")
    return draft


def zamba2(cfg: Cfg) -> Draft:
    """Mamba2 layers and hybrid layers (Mamba2 + the shared attention/MLP block); every hybrid
    layer keeps its own KV cache, while the block's weights exist `num_mem_blocks` times."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    types = cfg.layer_list("layers_block_type", n, {"mamba": "mamba2", "hybrid": "mamba2+attention+mlp"})
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), types, tie_embeddings=cfg.bool("tie_word_embeddings"))
    inner = cfg.int("mamba_expand") * hidden
    heads = cfg.int("n_mamba_heads")
    head_dim = cfg.int("mamba_headdim", inner // heads)
    check_product(cfg, "n_mamba_heads", heads, head_dim, inner, "mamba_expand x hidden_size")
    draft.blocks["mamba2"] = mamba2_block(cfg, heads, head_dim, "mamba_d_state", "mamba_ngroups", "mamba_d_conv")
    if "mamba2+attention+mlp" in types:
        blocks = cfg.int("num_mem_blocks")
        attn_in = cfg.int("attention_hidden_size", 2 * hidden)  # Zamba2Config: 2 x hidden unless the config says
        rank = cfg.int("adapter_rank")
        attention = attention_block(cfg, attn_in, head_dim_keys=("attention_head_dim",), input_size=attn_in,
                                    shared_blocks=blocks)
        attention["layer_linear"] = True  # modeling_zamba2.py Zamba2HybridLayer: its own hidden x hidden `linear`
        if cfg.bool("use_shared_attention_adapter"):
            attention["adapter_rank"] = rank
        draft.blocks["attention"] = attention
        draft.blocks["mlp"] = {"intermediate_size": cfg.int("intermediate_size", 4 * hidden),  # Zamba2Config: 4 x hidden
                               "shared_blocks": blocks, "adapter_rank": rank}
        adapters = "q/k/v and gate_up" if cfg.bool("use_shared_attention_adapter") else "gate_up"
        draft.notes.append(f"Each hybrid layer has its own {adapters} LoRA adapters (adapter_rank {rank}) and a "
                           "hidden x hidden linear after the shared block.")
    draft.notes.insert(0, count_note(types) + " Hybrid layers run the shared attention + MLP block (weights counted "
                          "num_mem_blocks times) and each keeps its own KV cache.")
    return draft


def plamo2(cfg: Cfg) -> Draft:
    """PLaMo-2 (remote Plamo2Config, vLLM plamo2.py `is_mamba`): Mamba2 without groups in its conv where
    `i % mamba_step != mamba_step // 2` (every layer but the last when there are fewer layers than half a step),
    attention elsewhere, windowed to `attention_window_size` except the `full_attention_idx` layers; a gated MLP
    on every layer."""
    n, hidden = cfg.num_layers(), cfg.int("hidden_size")
    step = cfg.int("mamba_step")

    def is_mamba(i: int) -> bool:
        if not cfg.bool("mamba_enabled"):
            return False
        return i != n - 1 if n <= step // 2 else i % step != step // 2

    full = cfg.indices("full_attention_idx", n) if cfg.given("full_attention_idx") else set()
    mixers = ["mamba2" if is_mamba(i) else "attention" if i in full else "sliding_attention" for i in range(n)]
    entries = [f"{m}+mlp" for m in mixers]
    draft = Draft(cfg, hidden, cfg.weight_int("vocab_size"), entries, tie_embeddings=cfg.bool("tie_word_embeddings"))
    head_dim = cfg.int("hidden_size_per_head")
    attention = {"num_heads": cfg.int("num_attention_heads"), "num_kv_heads": cfg.int("num_key_value_heads"),
                 "head_dim": head_dim}
    if "attention" in mixers:
        draft.blocks["attention"] = attention
    if "sliding_attention" in mixers:
        draft.blocks["sliding_attention"] = {**attention, "sliding_window": cfg.int("attention_window_size")}
    if "mamba2" in mixers:
        draft.blocks["mamba2"] = {"num_heads": cfg.int("mamba_num_heads"), "head_dim": head_dim,
                                  "state_size": cfg.int("mamba_d_state"), "n_groups": 0,
                                  "conv_kernel": cfg.int("mamba_d_conv"), "chunk_size": cfg.int("mamba_chunk_size")}
    draft.blocks["mlp"] = {"intermediate_size": cfg.weight_int("intermediate_size")}
    draft.notes.append(count_note(entries) + f" Mamba2 where i % {step} != {step // 2} (mamba_step); its conv "
                       "holds x only (B and C come after it, one group). Attention windowed to "
                       f"attention_window_size {cfg.int('attention_window_size')} except full_attention_idx.")
    return draft
