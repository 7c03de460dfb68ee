"""What a config class fills in for the fields mcache reads when a `config.json` omits them, per model type.

Values are transformers 5.24.0's (`transformers/models/<x>/configuration_<x>.py`, the dataclass field defaults and
the `__post_init__` fallbacks that are constants); remote-code families take their checkpoint's configuration file.
`Cfg` reads a field from the config, else from this table (a note names every default used), else it is missing.
Defaults that depend on other fields (head_dim = hidden / heads, ...) are the converters' own rules.
"""

from __future__ import annotations

from typing import Any

# model type -> (config class and where it lives, {field: default})
CLASS_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "nemotron_h": ("NemotronHConfig (transformers/models/nemotron_h/configuration_nemotron_h.py)", {
        "vocab_size": 131072, "hidden_size": 4096, "tie_word_embeddings": False, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 4096, "intermediate_size": 21504,
        "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4,
        "chunk_size": 128, "n_routed_experts": 8, "n_shared_experts": 1, "moe_intermediate_size": 7688,
        "moe_shared_expert_intermediate_size": 7688, "num_experts_per_tok": 2, "num_nextn_predict_layers": 0,
    }),
    "bamba": ("BambaConfig (transformers/models/bamba/configuration_bamba.py)", {
        "vocab_size": 128000, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 262144,
        "intermediate_size": 14336, "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1,
        "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256,
    }),
    "falcon_h1": ("FalconH1Config (transformers/models/falcon_h1/configuration_falcon_h1.py)", {
        "vocab_size": 128000, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192,
        "intermediate_size": 14336, "mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": "auto",
        "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_chunk_size": 256,
    }),
    "granitemoehybrid": ("GraniteMoeHybridConfig (transformers/models/granitemoehybrid/configuration_granitemoehybrid.py)", {
        "vocab_size": 32000, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 32, "max_position_embeddings": 2048, "intermediate_size": 11008,
        "shared_intermediate_size": 1024, "num_local_experts": 8, "num_experts_per_tok": 2, "mamba_n_heads": 128,
        "mamba_d_head": "auto", "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
        "mamba_chunk_size": 256,
    }),
    "jamba": ("JambaConfig (transformers/models/jamba/configuration_jamba.py)", {
        "vocab_size": 65536, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 262144,
        "intermediate_size": 14336, "num_experts": 16, "num_experts_per_tok": 2, "attn_layer_period": 8,
        "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1, "mamba_d_state": 16,
        "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
    }),
    "zamba2": ("Zamba2Config (transformers/models/zamba2/configuration_zamba2.py)", {
        "vocab_size": 32000, "hidden_size": 2560, "tie_word_embeddings": True, "num_hidden_layers": 54,
        "num_attention_heads": 32, "max_position_embeddings": 4096, "num_mem_blocks": 1, "n_mamba_heads": 8,
        "mamba_ngroups": 1, "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2, "chunk_size": 256,
        "adapter_rank": 128, "use_shared_attention_adapter": False,
    }),
    "mamba": ("MambaConfig (transformers/models/mamba/configuration_mamba.py)", {
        "vocab_size": 50280, "hidden_size": 768, "tie_word_embeddings": True, "num_hidden_layers": 32,
        "state_size": 16, "conv_kernel": 4, "expand": 2, "time_step_rank": "auto",
    }),
    "falcon_mamba": ("FalconMambaConfig (transformers/models/falcon_mamba/configuration_falcon_mamba.py)", {
        "vocab_size": 50280, "hidden_size": 768, "tie_word_embeddings": True, "num_hidden_layers": 32,
        "state_size": 16, "conv_kernel": 4, "expand": 2, "time_step_rank": "auto",
    }),
    "mamba2": ("Mamba2Config (transformers/models/mamba2/configuration_mamba2.py)", {
        "vocab_size": 32768, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 64,
        "num_heads": 128, "head_dim": 64, "state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2,
        "chunk_size": 256,
    }),
    "qwen3_next": ("Qwen3NextConfig (transformers/models/qwen3_next/configuration_qwen3_next.py)", {
        "vocab_size": 151936, "hidden_size": 2048, "tie_word_embeddings": False, "num_hidden_layers": 48,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768,
        "intermediate_size": 5632, "full_attention_interval": 4, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4, "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "decoder_sparse_step": 1,
    }),
    "qwen3_5_text": ("Qwen3_5TextConfig (transformers/models/qwen3_5/configuration_qwen3_5.py)", {
        "vocab_size": 248320, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 32768,
        "intermediate_size": 12288, "full_attention_interval": 4, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
    }),
    "qwen3_5_moe_text": ("Qwen3_5MoeTextConfig (transformers/models/qwen3_5_moe/configuration_qwen3_5_moe.py)", {
        "vocab_size": 248320, "hidden_size": 2048, "tie_word_embeddings": False, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768,
        "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "num_experts": 256,
        "num_experts_per_tok": 8, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    }),
    "qwen4_exp_vision": ("Qwen4ExpVisionConfig (transformers/models/qwen4_exp/configuration_qwen4_exp.py)", {
        "depth": 27, "hidden_size": 1152,
    }),
    "kimi_linear": ("KimiLinearConfig (transformers/models/kimi_linear/configuration_kimi_linear.py)", {
        "vocab_size": 163840, "hidden_size": 2304, "tie_word_embeddings": False, "num_hidden_layers": 27,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 9216, "moe_intermediate_size": 1024,
        "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        # the attribute_map's checkpoint names (num_local_experts -> num_experts, ...) are what the file carries
        "num_experts": 256, "num_experts_per_token": 8, "num_shared_experts": 1, "first_k_dense_replace": 1,
        "model_max_length": 1048576,
    }),
    "lfm2": ("Lfm2Config (transformers/models/lfm2/configuration_lfm2.py)", {
        "vocab_size": 65536, "hidden_size": 2560, "tie_word_embeddings": True, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 128000,
        "intermediate_size": 12288, "conv_L_cache": 3, "block_auto_adjust_ff_dim": True,
        "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256,
    }),
    "lfm2_moe": ("Lfm2MoeConfig (transformers/models/lfm2_moe/configuration_lfm2_moe.py)", {
        "vocab_size": 65536, "hidden_size": 2048, "tie_word_embeddings": True, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 128000,
        "intermediate_size": 7168, "moe_intermediate_size": 1792, "num_experts": 32, "num_experts_per_tok": 4,
        "num_dense_layers": 2, "conv_L_cache": 3,
    }),
    # vLLM's own class (transformers has no lfm3): its `tie_embedding` key overrides tie_word_embeddings
    "lfm3": ("Lfm3Config (vllm/transformers_utils/configs/lfm3.py, v0.34.0)", {
        "vocab_size": 128000, "hidden_size": 2048, "tie_word_embeddings": True, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 4, "max_position_embeddings": 128000,
        "intermediate_size": 7680, "conv_L_cache": 7, "head_dim": 128, "sliding_window": 256, "use_attention_gate": True,
    }),
    "minimax": ("MiniMaxConfig (transformers/models/minimax/configuration_minimax.py)", {
        "vocab_size": 32000, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
        "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2,
    }),
    "olmo_hybrid": ("OlmoHybridConfig (transformers/models/olmo_hybrid/configuration_olmo_hybrid.py)", {
        "vocab_size": 100352, "hidden_size": 3840, "tie_word_embeddings": False, "num_hidden_layers": 32,
        "num_attention_heads": 30, "max_position_embeddings": 65536, "intermediate_size": 11008,
        "linear_conv_kernel_dim": 4,
    }),
    "bailing_hybrid": ("BailingHybridConfig (transformers/models/bailing_hybrid/configuration_bailing_hybrid.py)", {
        "vocab_size": 157184, "hidden_size": 2560, "tie_word_embeddings": False, "num_hidden_layers": 42,
        "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 262144,
        "intermediate_size": 6144, "moe_intermediate_size": 768, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "num_local_experts": 512, "num_experts_per_tok": 8,
        "n_shared_experts": 1, "first_k_dense_replace": 2, "short_conv_kernel_size": 4, "layer_group_size": 6,
        "num_mtp_layers": 1,
    }),
    "plamo2": ("Plamo2Config (remote code: configuration_plamo.py of the pfnet/plamo-2-* checkpoints)", {
        "vocab_size": 32000, "hidden_size": 4096, "tie_word_embeddings": True, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 4, "hidden_size_per_head": 128,
        "max_position_embeddings": 2048, "intermediate_size": 13312, "attention_window_size": 2048,
        "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_num_heads": 64, "mamba_step": 2, "mamba_chunk_size": 256,
        "mamba_enabled": True,
    }),
    "bailing_moe_linear": ("BailingMoeLinearV2Config (remote code: configuration_bailing_moe_linear_v2.py of the "
                           "inclusionAI Ring-*-linear-2.0 checkpoints)", {
        "vocab_size": 157184, "hidden_size": 2048, "tie_word_embeddings": False, "num_hidden_layers": 20,
        "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 32768,
        "intermediate_size": 5120, "moe_intermediate_size": 512, "num_experts": 256, "num_experts_per_tok": 8,
        "num_shared_experts": 1, "first_k_dense_replace": 1, "layer_group_size": 1, "num_nextn_predict_layers": 0,
    }),
    # vision towers of the multimodal wrappers (their `vision_config`; built from these when the config has none)
    "qwen3_5_vision": ("Qwen3_5VisionConfig (transformers/models/qwen3_5/configuration_qwen3_5.py)", {
        "depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3, "patch_size": 16,
        "temporal_patch_size": 2, "spatial_merge_size": 2, "num_position_embeddings": 2304, "out_hidden_size": 3584,
    }),
    "qwen3_5_moe_vision": ("Qwen3_5MoeVisionConfig (transformers/models/qwen3_5_moe/configuration_qwen3_5_moe.py)", {
        "depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "in_channels": 3, "patch_size": 16,
        "temporal_patch_size": 2, "spatial_merge_size": 2, "num_position_embeddings": 2304, "out_hidden_size": 3584,
    }),
    "lfm2_vl_vision": ("Siglip2VisionConfig (transformers/models/siglip2/configuration_siglip2.py), the tower "
                       "Lfm2VlConfig (transformers/models/lfm2_vl/configuration_lfm2_vl.py) builds without a "
                       "vision_config", {"num_hidden_layers": 12, "hidden_size": 768}),
    "lfm3_vl_vision": ("Lfm3VlVisionConfig (vllm/transformers_utils/configs/lfm3_vl.py, v0.34.0), the tower Lfm3VlConfig "
                       "builds without a vision_config", {"num_hidden_layers": 14, "hidden_size": 1024}),
    "minicpmv4_6_vision": ("MiniCPMV4_6VisionConfig (transformers/models/minicpmv4_6/configuration_minicpmv4_6.py), "
                           "the SigLIP tower MiniCPMV4_6Config builds without a vision_config",
                           {"num_hidden_layers": 12, "hidden_size": 768}),
    "kimi_k3_vision": ("KimiK3VisionConfig (SGLang's python/sglang/srt/configs/kimi_k3.py at v0.5.23, the class SGLang "
                       "builds the checkpoint's vision_config with)", {
        "vt_num_hidden_layers": 27, "vt_hidden_size": 1024, "vt_intermediate_size": 4096, "qkv_hidden_size": 1536,
        "patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64, "merge_kernel_size": [2, 2],
        "text_hidden_size": 2304, "norm_type": "rmsnorm", "attn_bias": False, "linear_bias": False,
        "patch_embed_proj_bias": False, "mm_projector_type": "patchmergerv2",
    }),
}
# Multimodal wrappers whose text config (`text_config`, or the key TEXT_KEYS names) is a config of this other model
# type (filled with its defaults). NemotronH_Nano_VL_V2 is remote code: the checkpoints' configuration.py builds its
# llm_config as a NemotronHConfig (so do SGLang's configs/nano_nemotron_vl.py and vLLM, which reads it as text_config:
# transformers_utils/config.py _CONFIG_ATTRS_MAPPING, v0.11.1 - v0.34.0). The Nemotron 3 Nano Omni checkpoints
# (model_type NemotronH_Nano_Omni_Reasoning_V3, remote code too) keep that layout and add a Parakeet `sound_config`;
# vLLM serves them with the same class (model_executor/models/registry.py: nano_nemotron_vl.py NemotronH_Nano_VL_V2),
# as it does the Nemotron 3.5 VL checkpoints (model_type nemotron_h_omni, architecture NemotronH_Omni_Reasoning_V3 from
# vLLM 0.29.0; their config nests a nemotron_h llm_config the same way: public processor and loader tests of them).
# MiniCPM-V 4.6's text_config is a Qwen3.5 text config (MiniCPMV4_6Config.sub_configs_defaults, transformers 5.7+).
NEMOTRON_VL_TYPES = ("NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3", "nemotron_h_omni")
# Qwen4ExpTextConfig (transformers/models/qwen4_exp/configuration_qwen4_exp.py): Qwen3.5-MoE's text defaults but for
# its experts, and its own streams, PLE and n-gram fields
CLASS_DEFAULTS["qwen4_exp_text"] = (
    "Qwen4ExpTextConfig (transformers/models/qwen4_exp/configuration_qwen4_exp.py)",
    {**CLASS_DEFAULTS["qwen3_5_moe_text"][1], "num_experts": 512, "num_experts_per_tok": 10, "hc_count": 4,
     "hc_lowrank": 320, "ple_conv_kernel_size": 4, "ngram_size": 3, "heads_per_ngram": 8,
     "ngram_vocab_size_base": 20_000_000, "make_ngram_vocab_size_divisible_by": 128})
# Glm5NextTextConfig / Glm5NextVisionConfig (transformers 5.22.2 models/glm5_next/configuration_glm5_next.py)
CLASS_DEFAULTS["glm5_next_text"] = ("Glm5NextTextConfig (transformers/models/glm5_next/configuration_glm5_next.py)", {
    "vocab_size": 154880, "hidden_size": 4096, "tie_word_embeddings": False, "num_hidden_layers": 45,
    "num_attention_heads": 64, "max_position_embeddings": 1048576, "intermediate_size": 12288,
    "moe_intermediate_size": 2048, "n_routed_experts": 288, "num_experts_per_tok": 8, "n_shared_experts": 1,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 0, "qk_nope_head_dim": 256, "v_head_dim": 256,
    "index_head_dim": 128, "index_n_heads": 32, "index_kpool": 16, "linear_num_heads": 64, "linear_head_dim": 128,
    "linear_conv_kernel_dim": 4, "hc_mult": 4,
})
CLASS_DEFAULTS["glm5_next_vision"] = ("Glm5NextVisionConfig (transformers/models/glm5_next/configuration_glm5_next.py)",
                                      {"depth": 24, "hidden_size": 1024})
TEXT_TYPES = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text", "qwen4_exp": "qwen4_exp_text",
              "glm5_next": "glm5_next_text",
              "kimi_k3": "kimi_linear", "lfm2_vl": "lfm2",
              "lfm3_vl": "lfm3",
              "minicpmv4_6": "qwen3_5_text", **dict.fromkeys(NEMOTRON_VL_TYPES, "nemotron_h")}
TEXT_KEYS = dict.fromkeys(NEMOTRON_VL_TYPES, "llm_config")
# Multimodal wrappers and their vision tower: (the defaults' model type, the `vision_config` fields of its depth and
# width). Each wrapper class builds a default tower when the config has no `vision_config`, but the Nemotron-H VL ones
# (None: their class asserts a vision_config dict), whose RADIO tower has no depth or width fields: the ViT that
# `vision_config.args.model` names sets both (RADIO_VITS).
VISION_TYPES = {"qwen3_5": ("qwen3_5_vision", "depth", "hidden_size"),
                "qwen3_5_moe": ("qwen3_5_moe_vision", "depth", "hidden_size"),
                "qwen4_exp": ("qwen4_exp_vision", "depth", "hidden_size"),
                "glm5_next": ("glm5_next_vision", "depth", "hidden_size"),
                "kimi_k3": ("kimi_k3_vision", "vt_num_hidden_layers", "vt_hidden_size"),
                "lfm2_vl": ("lfm2_vl_vision", "num_hidden_layers", "hidden_size"),
                "lfm3_vl": ("lfm3_vl_vision", "num_hidden_layers", "hidden_size"),
                "minicpmv4_6": ("minicpmv4_6_vision", "num_hidden_layers", "hidden_size"),
                **dict.fromkeys(NEMOTRON_VL_TYPES, (None, "args.model", "args.model"))}
# RADIO's ViTs by timm name -> (layers, width): SGLang's configs/radio.py VIT_TIMM_DIM_BY_NAME (v0.5.23), the table its
# RadioConfig (and vLLM's, transformers_utils/configs/radio.py) sizes the tower from
RADIO_VITS = {"vit_small_patch16_224": (12, 384), "vit_base_patch16_224": (12, 768),
              "vit_large_patch16_224": (24, 1024), "vit_huge_patch16_224": (32, 1280)}


def defaults_of(model_type: str) -> tuple[str, dict[str, Any]]:
    """(class, defaults) of `model_type`; a type without a table has none."""
    return CLASS_DEFAULTS.get(model_type, ("", {}))
