"""HF config import: the shared real configs against the bundled specs, the YAML round trip, every
layout quirk of the supported model types, and broken configs (one clear `SpecError` each)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from paths import HF_CONFIGS, HF_CONFIGS_EXTRA
from test_hf_families import EXTRA_FAMILIES, FAMILIES

from mcache.core.errors import SpecError
from mcache.core.hf import import_hf, supported_model_types
from mcache.core.load import load_spec, parse_spec
from mcache.core.sizing import weights
from mcache.core.sizing.estimate import RankEstimate, estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes
from mcache.core.spec.dump import compact_layers, spec_to_yaml
from mcache.core.spec.model import ModelSpec, layer_kinds

# config file stem -> the bundled hand-written spec of the same model
BUNDLED = {
    "bamba-9b": "bamba-9b",
    "falcon-h1-0.5b": "falcon-h1-0.5b",
    "granite-4.0-h-tiny": "granite-4.0-h-tiny",
    "jamba-v0.1": "jamba-v0.1",
    "kimi-linear-48b-a3b-instruct": "kimi-linear-48b-a3b",
    "lfm2-1.2b": "lfm2-1.2b",
    "mamba-2.8b": "mamba-2.8b",
    "mamba2-2.7b": "mamba2-2.7b",
    "minimax-text-01": "minimax-text-01",
    "nemotron-h-56b-base-8k": "nemotron-h-56b",
    "nemotron-h-8b-base-8k": "nemotron-h-8b",
    "nvidia-nemotron-3-nano-30b-a3b": "nemotron-3-nano-30b-a3b",
    "qwen3-next-80b-a3b": "qwen3-next-80b-a3b",
    "qwen3.5-27b": "qwen3.5-27b",
    "zamba2-2.7b": "zamba2-2.7b",
}


def shared(stem: str) -> Path:
    """The config file of `stem` in the shared fixtures, else in the extra configs (a family test's)."""
    folder = HF_CONFIGS / stem
    if folder.is_dir():
        return folder / "config.json"
    return HF_CONFIGS_EXTRA / f"{stem}.json" if stem in EXTRA_FAMILIES else HF_CONFIGS / f"{stem}.json"


def shared_data(stem: str) -> dict:
    return json.loads(shared(stem).read_text())


def rank(spec: ModelSpec, tp: int = 1) -> RankEstimate:
    return estimate(spec, ParallelLayout(tp=tp), RuntimeConfig(), resolve_dtypes(spec)).ranks[0]


def cache_bytes(spec: ModelSpec, tp: int = 1) -> dict:
    """Everything the cache estimate says about one rank, comparable with `==`."""
    r = rank(spec, tp)
    return {
        "conv": r.conv_bytes_per_slot,
        "ssm": r.ssm_bytes_per_slot,
        "kv": r.kv_bytes_per_token,
        "components": sorted((c.decl.key, c.decl.shape, c.decl.dtype, c.decl.layers, c.total_bytes)
                             for c in r.components),
    }


def full_output(spec: ModelSpec, tp: int) -> dict:
    """Cache bytes plus the weight estimate."""
    r = rank(spec, tp)
    return {**cache_bytes(spec, tp), "weights": r.weight_bytes, "params": r.param_count}


def write(tmp_path: Path, data, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def imported(tmp_path: Path, data: dict, name: str = "config.json") -> ModelSpec:
    return import_hf(write(tmp_path, data, name))


def kinds(spec: ModelSpec) -> list[str]:
    return ["+".join(k) for k in layer_kinds(spec)]


# --- the shared real configs -------------------------------------------------------------------------------


def test_every_config_has_a_bundled_counterpart_or_its_family_test():
    configs = {p.name if p.is_dir() else p.stem for p in HF_CONFIGS.iterdir() if p.suffix == ".json" or p.is_dir()}
    assert configs == set(BUNDLED) | set(FAMILIES)


@pytest.mark.parametrize("stem", sorted(BUNDLED))
def test_shared_config_imports_with_source_and_type(stem):
    spec = import_hf(shared(stem))
    model_type = shared_data(stem)["model_type"]
    assert spec.source == f"{shared(stem)} (model_type {model_type})"
    assert spec.name == stem


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("stem", sorted(BUNDLED))
def test_imported_and_bundled_give_the_same_rank_bytes(stem, tp):
    assert cache_bytes(import_hf(shared(stem)), tp) == cache_bytes(load_spec(BUNDLED[stem]), tp)


@pytest.mark.parametrize("stem", sorted(set(BUNDLED) - {"zamba2-2.7b", "qwen3.5-27b"}))
def test_imported_and_bundled_give_the_same_weights(stem):
    """(Zamba2 differs: the config leaves tie_word_embeddings to Zamba2Config's default, true; the
    bundled spec unties them. Qwen3.5-27B differs by its vision tower's projector: the shared config omits
    vision_config, so Qwen3_5VisionConfig's out_hidden_size 3584 applies; the bundled spec takes the checkpoint's
    5120, the text model's width: 4608 x (5120 - 3584) + (5120 - 3584) parameters.)"""
    assert rank(import_hf(shared(stem))).param_count == rank(load_spec(BUNDLED[stem])).param_count


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("stem", sorted(BUNDLED))
def test_round_trip_import_yaml_load(stem, tp, tmp_path):
    spec = import_hf(shared(stem))
    text = spec_to_yaml(spec)
    again = parse_spec(text, "dumped.yaml")
    assert again == spec
    assert full_output(again, tp) == full_output(spec, tp)
    out = write(tmp_path, text, "spec.yaml")
    assert full_output(load_spec(str(out)), tp) == full_output(spec, tp)
    assert spec_to_yaml(again) == text  # the dump is canonical


@pytest.mark.parametrize("name", sorted(BUNDLED.values()))
def test_bundled_spec_dumps_to_the_same_estimate(name):
    spec = load_spec(name)
    again = parse_spec(spec_to_yaml(spec), "dumped.yaml")
    assert full_output(again, 2) == full_output(spec, 2)


def test_the_bundled_qwen3_5_tower_differs_from_the_class_default_by_its_projector_only():
    imported, bundled = rank(import_hf(shared("qwen3.5-27b"))), rank(load_spec("qwen3.5-27b"))
    assert bundled.param_count - imported.param_count == 4608 * (5120 - 3584) + (5120 - 3584)


def test_dump_omits_defaults_and_keeps_layers_compact():
    assert compact_layers(["gdn+moe"] * 3 + ["attention+moe"] + ["gdn+moe"] * 3 + ["attention+moe"]).repeat == [
        "gdn+moe", "gdn+moe", "gdn+moe", "attention+moe"]
    assert compact_layers(["mamba2", "mlp", "mamba2", "attention", "mamba2", "moe"]).pattern == "M-M*ME"
    layers = compact_layers(["kda+mlp", "kda+moe", "kda+moe", "mla+moe"])
    assert (layers.pattern, layers.legend) == ("KMML", {"K": "kda+mlp", "M": "kda+moe", "L": "mla+moe"})
    many = [f"attention+{k}" for k in ("mlp", "moe")] + ["mamba1", "mamba2", "gdn", "kda", "lightning", "short_conv",
                                                          "mla", "mlp", "moe"]
    assert compact_layers(many).types == many
    text = spec_to_yaml(load_spec("mamba2-2.7b"))
    assert "n_groups" not in text and "conv_kernel" not in text and "repeat: [mamba2]" in text


# --- layout quirks, as small configs ---------------------------------------------------------------------

NEMOTRON = {
    "model_type": "nemotron_h", "hidden_size": 256, "num_hidden_layers": 6, "vocab_size": 1000,
    "hybrid_override_pattern": "M*-EM-", "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16,
    "n_groups": 2, "conv_kernel": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "intermediate_size": 512, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
    "moe_shared_expert_intermediate_size": 256, "torch_dtype": "bfloat16",
}


def test_nemotron_layers_block_type_equals_the_pattern(tmp_path):
    listed = {k: v for k, v in NEMOTRON.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = ["mamba", "attention", "mlp", "moe", "mamba", "mlp"]
    a, b = imported(tmp_path, NEMOTRON, "a.json"), imported(tmp_path, listed, "b.json")
    assert kinds(a) == kinds(b) == ["mamba2", "attention", "mlp", "moe", "mamba2", "mlp"]
    assert full_output(a, 2) == full_output(b, 2)
    assert b.moe.gated is False and b.mlp.gated is False and b.moe.shared_intermediate_size == 256


def test_nemotron_attention_head_dim_spelling(tmp_path):
    data = {k: v for k, v in NEMOTRON.items() if k != "head_dim"}
    data["attention_head_dim"] = 48
    spec = imported(tmp_path, data)
    assert spec.attention.head_dim == 48  # not hidden / heads = 64
    assert rank(spec).kv_bytes_per_token == 2 * 2 * 48 * 2


def test_head_dim_is_the_class_default_else_width_over_heads(tmp_path):
    # Qwen3NextConfig.head_dim defaults to 256, not hidden / heads (configuration_qwen3_next.py)
    qwen = imported(tmp_path, {**QWEN_NEXT, "head_dim": None, "num_attention_heads": 8}, "q.json")
    assert (qwen.attention.num_heads, qwen.attention.num_kv_heads, qwen.attention.head_dim) == (8, 2, 256)
    assert "Qwen3NextConfig's defaults:" in qwen.notes and "head_dim 256" in qwen.notes
    zamba = imported(tmp_path, {**ZAMBA, "attention_head_dim": None, "num_key_value_heads": None}, "z.json")
    # Zamba2's attention reads the concatenated 2 x hidden input: 256 / 4 heads; KV heads default to the heads
    assert (zamba.attention.num_kv_heads, zamba.attention.head_dim) == (4, 64)


def test_nemotron_ssm_dtype_hint_is_recorded_and_no_engine_default_is_added(tmp_path):
    hinted = imported(tmp_path, {**NEMOTRON, "mamba_ssm_cache_dtype": "float32"}, "a.json")
    assert hinted.ssm_dtype_hints == {"mamba_ssm_cache_dtype": "float32"} and hinted.ssm_dtype is None
    assert "mamba_ssm_cache_dtype is float32" in hinted.notes
    plain = imported(tmp_path, NEMOTRON, "b.json")  # vLLM's float32 default is the vLLM profile's, not the spec's
    assert plain.ssm_dtype_hints == {} and plain.ssm_dtype is None and "engine's default" in plain.notes
    assert rank(hinted).ssm_bytes_per_slot == 2 * rank(plain).ssm_bytes_per_slot  # neutral: hint, else model dtype


QWEN_NEXT = {
    "model_type": "qwen3_next", "hidden_size": 256, "num_hidden_layers": 8, "vocab_size": 1000,
    "full_attention_interval": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
    "linear_conv_kernel_dim": 4, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
    "shared_expert_intermediate_size": 64, "intermediate_size": 512, "torch_dtype": "bfloat16",
}


def test_qwen3_next_interval_counts_only_every_fourth_layer_as_attention(tmp_path):
    spec = imported(tmp_path, QWEN_NEXT)
    assert kinds(spec) == ["gdn+moe"] * 3 + ["attention+moe"] + ["gdn+moe"] * 3 + ["attention+moe"]
    assert spec.attention.output_gate is True
    assert spec.mtp.num_layers == 1 and "ship one" in spec.notes  # the qwen3_next default MTP layer
    assert rank(spec).kv_bytes_per_token == 2 * (2 * 2 * 64 * 2)


def test_qwen3_next_layer_types_win_over_the_default(tmp_path):
    types = ["linear_attention", "full_attention"] * 4
    data = {k: v for k, v in QWEN_NEXT.items() if k != "full_attention_interval"}
    spec = imported(tmp_path, {**data, "layer_types": types, "mlp_only_layers": [0], "num_nextn_predict_layers": 2})
    assert kinds(spec) == ["gdn+mlp"] + ["attention+moe"] + ["gdn+moe", "attention+moe"] * 3
    assert spec.mtp.num_layers == 2


QWEN35_TEXT = {
    "model_type": "qwen3_5_text", "hidden_size": 256, "num_hidden_layers": 4, "vocab_size": 1000, "dtype": "bfloat16",
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "full_attention_interval": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "attn_output_gate": True, "linear_num_key_heads": 2, "linear_num_value_heads": 6, "linear_key_head_dim": 32,
    "linear_value_head_dim": 32, "intermediate_size": 512, "mamba_ssm_dtype": "float32", "mtp_num_hidden_layers": 1,
}


def test_qwen3_5_reads_text_config(tmp_path):
    spec = imported(tmp_path, {"model_type": "qwen3_5", "torch_dtype": "bfloat16", "text_config": QWEN35_TEXT})
    assert kinds(spec) == ["gdn+mlp"] * 3 + ["attention+mlp"]
    assert spec.gdn.num_v_heads == 6 and spec.mtp.layer == "attention+mlp"
    assert spec.ssm_dtype_hints == {"mamba_ssm_dtype": "float32"} and "text_config.mamba_ssm_dtype is float32" in spec.notes
    assert rank(spec).ssm_bytes_per_slot == 3 * 6 * 32 * 32 * 4
    assert imported(tmp_path, QWEN35_TEXT, "bare.json").layers == spec.layers  # a bare text config reads the same


def test_qwen3_5_moe_reads_text_config_experts(tmp_path):
    text = {**QWEN35_TEXT, "model_type": "qwen3_5_moe_text", "num_experts": 16, "num_experts_per_tok": 4,
            "moe_intermediate_size": 64, "shared_expert_intermediate_size": 128}
    spec = imported(tmp_path, {"model_type": "qwen3_5_moe", "text_config": text})
    assert kinds(spec) == ["gdn+moe"] * 3 + ["attention+moe"]
    assert (spec.moe.num_experts, spec.moe.shared_experts, spec.moe.shared_intermediate_size) == (16, 1, 128)


KIMI = {
    "model_type": "kimi_linear", "hidden_size": 256, "num_hidden_layers": 5, "vocab_size": 1000,
    "linear_attn_config": {"kda_layers": [1, 2, 3, 5], "full_attn_layers": [4], "num_heads": 4, "head_dim": 32,
                           "short_conv_kernel_size": 4},
    "num_attention_heads": 4, "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32,
    "v_head_dim": 32, "q_lora_rank": None, "first_k_dense_replace": 1, "intermediate_size": 512,
    "num_experts": 8, "num_experts_per_token": 2, "moe_intermediate_size": 64, "num_shared_experts": 1,
}


def test_kimi_layer_lists_are_one_based(tmp_path):
    spec = imported(tmp_path, KIMI)
    assert kinds(spec) == ["kda+mlp", "kda+moe", "kda+moe", "mla+moe", "kda+moe"]
    r = rank(spec)
    assert r.kv_bytes_per_token == 1 * (64 + 16) * 2  # one MLA layer, latent not sharded
    assert r.ssm_bytes_per_slot == 4 * 4 * 32 * 32 * 4  # KDA state float32
    assert spec.moe.top_k == 2 and spec.moe.shared_intermediate_size == 64


def test_kimi_zero_based_lists_are_refused(tmp_path):
    data = copy.deepcopy(KIMI)
    data["linear_attn_config"].update(kda_layers=[0, 1, 2, 4], full_attn_layers=[3])
    with pytest.raises(SpecError) as err:
        imported(tmp_path, data)
    assert err.value.field == "linear_attn_config.kda_layers[0]" and "1-based" in err.value.expected


JAMBA = {
    "model_type": "jamba", "hidden_size": 256, "num_hidden_layers": 8, "vocab_size": 1000,
    "attn_layer_period": 4, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 0,
    "num_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 512, "num_attention_heads": 4,
    "num_key_value_heads": 2, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
}


def test_jamba_period_and_offset(tmp_path):
    spec = imported(tmp_path, JAMBA)
    assert kinds(spec) == ["mamba1+moe", "attention+mlp", "mamba1+moe", "mamba1+mlp"] * 2
    assert spec.mamba1.dt_rank == 16 and spec.mamba1.intermediate_size == 512  # auto = ceil(256 / 16)


FALCON = {
    "model_type": "falcon_h1", "hidden_size": 256, "num_hidden_layers": 3, "vocab_size": 1000,
    "attn_layer_indices": None, "head_dim": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
    "mamba_d_ssm": 384, "mamba_n_heads": 6, "mamba_d_head": 64, "mamba_d_state": 16, "mamba_n_groups": 1,
    "mamba_d_conv": 4, "intermediate_size": 512,
}


def test_falcon_h1_every_layer_is_attention_and_mamba2(tmp_path):
    spec = imported(tmp_path, FALCON)
    assert kinds(spec) == ["mamba2+attention+mlp"] * 3
    r = rank(spec)
    assert r.kv_bytes_per_token == 3 * 2 * 2 * 32 * 2
    assert r.ssm_bytes_per_slot == 3 * 6 * 64 * 16 * 2  # d_ssm 384, not expand x hidden = 512


ZAMBA = {
    "model_type": "zamba2", "hidden_size": 128, "num_hidden_layers": 6, "vocab_size": 1000,
    "layers_block_type": ["mamba", "hybrid", "mamba", "mamba", "hybrid", "hybrid"],
    "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_headdim": 32, "mamba_ngroups": 1,
    "n_mamba_heads": 8, "num_attention_heads": 4, "num_key_value_heads": 4, "attention_head_dim": 64,
    "attention_hidden_size": 256, "intermediate_size": 512, "num_mem_blocks": 2,
}


def test_zamba2_each_hybrid_layer_keeps_its_own_kv(tmp_path):
    spec = imported(tmp_path, ZAMBA)
    assert kinds(spec).count("mamba2+attention+mlp") == 3
    r = rank(spec)
    assert r.kv_bytes_per_token == 3 * 2 * 4 * 64 * 2  # three hybrid layers, one shared block
    assert r.ssm_bytes_per_slot == 6 * 8 * 32 * 16 * 2  # every layer has Mamba2
    fewer = imported(tmp_path, {**ZAMBA, "layers_block_type": ["mamba"] * 5 + ["hybrid"]}, "b.json")
    shared_weights = rank(spec).param_count - rank(fewer).param_count
    # two more hybrid layers add their attention and MLP norms, their own hidden x hidden linear and the shared MLP's
    # gate_up LoRA adapter (adapter_rank 128 by Zamba2Config's default: 128 -> 128 -> 2 x 512), never the block
    assert shared_weights == 2 * (2 * 128 + 128 * 128 + 128 * (128 + 2 * 512))


def test_zamba2_per_layer_adapters_and_linear_by_hand(tmp_path):
    """Issue 30: transformers' Zamba2 (modeling_zamba2.py) gives each hybrid layer a hidden x hidden `linear` and the
    shared MLP one gate_up LoRA adapter per hybrid layer; with use_shared_attention_adapter, q, k and v adapters
    too (attention_hidden_size -> rank -> attention_hidden_size each). Three hybrid layers, two blocks, rank 8."""
    plain = imported(tmp_path, {**ZAMBA, "adapter_rank": 8}, "plain.json")
    attn = imported(tmp_path, {**ZAMBA, "adapter_rank": 8, "use_shared_attention_adapter": True}, "attn.json")
    h, attn_in, inter, rank_ = 128, 256, 512, 8
    blocks = 2 * (attn_in * 3 * 4 * 64 + 4 * 64 * h + 3 * h * inter)  # q, k, v read attn_in; o; the gated MLP
    per_hybrid = h * h + rank_ * (h + 2 * inter)
    mamba = weights.layer_params(plain, ("mamba2",))
    embeddings, final_norm = 1000 * h, h  # tied head
    expected = 6 * mamba + 3 * (per_hybrid + 2 * h) + blocks + embeddings + final_norm
    assert weights.total_params(plain) == expected
    assert weights.total_params(attn) - weights.total_params(plain) == 3 * 3 * 2 * attn_in * rank_
    assert plain.attention.layer_linear and plain.mlp.adapter_rank == 8 and plain.attention.adapter_rank is None


MAMBA2_SSM = {"d_model": 2560, "d_intermediate": 0, "n_layer": 64, "vocab_size": 50277, "ssm_cfg": {"layer": "Mamba2"},
              "attn_layer_idx": [], "attn_cfg": {}, "rms_norm": True, "residual_in_fp32": True,
              "fused_add_norm": True, "pad_vocab_size_multiple": 16, "tie_embeddings": True}
MAMBA1_SSM = {"d_model": 2560, "n_layer": 64, "vocab_size": 50277, "ssm_cfg": {}, "rms_norm": True,
              "residual_in_fp32": True, "fused_add_norm": True, "pad_vocab_size_multiple": 8}


@pytest.mark.parametrize(("ssm_config", "stem"), [(MAMBA2_SSM, "mamba2-2.7b"), (MAMBA1_SSM, "mamba-2.8b")])
def test_mamba_ssm_format_equals_the_transformers_format(tmp_path, ssm_config, stem):
    """The state-spaces configs leave the mixer at mamba_ssm's defaults; applied, they match the -hf form."""
    spec = imported(tmp_path, ssm_config)
    assert "mamba_ssm config" in spec.source and "defaults applied" in spec.notes
    for tp in (1, 2, 4):
        assert full_output(spec, tp) == full_output(import_hf(shared(stem)), tp)


def test_mamba_ssm_defaults_and_overrides(tmp_path):
    m2 = imported(tmp_path, {"d_model": 768, "n_layer": 4, "vocab_size": 50277, "ssm_cfg": {"layer": "Mamba2"}}, "a.json")
    assert (m2.mamba2.num_heads, m2.mamba2.head_dim, m2.mamba2.state_size, m2.mamba2.n_groups,
            m2.mamba2.conv_kernel) == (24, 64, 128, 1, 4)
    assert m2.vocab_size == 50280 and m2.tie_embeddings  # padded to a multiple of 8
    m1 = imported(tmp_path, {"d_model": 768, "n_layer": 4, "vocab_size": 50280}, "b.json")
    assert (m1.mamba1.intermediate_size, m1.mamba1.state_size, m1.mamba1.conv_kernel, m1.mamba1.dt_rank) == (
        1536, 16, 4, 48)
    custom = imported(tmp_path, {"d_model": 768, "n_layer": 4, "vocab_size": 50280, "d_intermediate": 1000,
                                 "ssm_cfg": {"layer": "Mamba2", "d_state": 64, "headdim": 32, "ngroups": 2},
                                 "attn_layer_idx": [3], "attn_cfg": {"num_heads": 12, "num_heads_kv": 4}}, "c.json")
    assert kinds(custom) == ["mamba2+mlp"] * 3 + ["attention+mlp"]
    assert (custom.mamba2.num_heads, custom.mamba2.state_size, custom.mamba2.n_groups) == (48, 64, 2)
    assert custom.attention.head_dim == 64 and custom.mlp.intermediate_size == 1024  # GatedMLP rounds to 128
    assert "attn_cfg.d_conv" not in custom.notes  # no conv over q|k|v unless attn_cfg asks for one


def test_mamba_ssm_attention_conv_is_noted(tmp_path):
    """state-spaces/mamba2attn-2.7b's attn_cfg (d_conv 4, 30 heads of 128, no num_heads_kv): mamba_ssm's MHA keeps a
    conv state over q|k|v, 128 x (30 + 2 x 30) = 11520 channels x 4, which mcache does not size: the notes say so."""
    config = {**MAMBA2_SSM, "attn_layer_idx": [9, 18, 27, 36, 45, 56],
              "attn_cfg": {"causal": True, "d_conv": 4, "head_dim": 128, "num_heads": 30, "out_proj_bias": False,
                           "qkv_proj_bias": False, "rotary_emb_dim": 64}}
    spec = imported(tmp_path, config)
    assert "attn_cfg.d_conv 4: mamba_ssm's attention layers also keep a conv state of 11520 channels x 4" in spec.notes


def test_lfm2_full_attn_idxs_alone(tmp_path):
    data = shared_data("lfm2-1.2b")
    del data["layer_types"]
    spec = imported(tmp_path, data)
    assert kinds(spec) == kinds(import_hf(shared("lfm2-1.2b")))
    assert [i for i, k in enumerate(kinds(spec)) if k.startswith("attention")] == [2, 5, 8, 10, 12, 14]
    assert spec.mlp.intermediate_size == 8192  # int(2 * 12288 / 3), rounded up to 256


def test_minimax_text_01_attn_type_list(tmp_path):
    data = shared_data("minimax-text-01")
    codes = [1 if t == "full_attention" else 0 for t in data.pop("layer_types")]
    data.update(model_type="minimax_text_01", attn_type_list=codes)
    spec = imported(tmp_path, data)
    assert "model_type minimax_text_01" in spec.source
    for tp in (1, 2, 4):
        assert full_output(spec, tp) == full_output(import_hf(shared("minimax-text-01")), tp)


def test_checkpoint_directory(tmp_path):
    folder = tmp_path / "Qwen3-Next-80B-A3B"
    folder.mkdir()
    (folder / "config.json").write_text(shared("qwen3-next-80b-a3b").read_text())
    spec = import_hf(folder)
    assert spec.name == "Qwen3-Next-80B-A3B" and spec.source.startswith(str(folder / "config.json"))
    assert load_spec(str(folder)) == spec


# --- broken configs ----------------------------------------------------------------------------------------

BROKEN = {
    "truncated-json": ('{"model_type": "nemotron_h", "hidden_size": 4', "json"),
    "empty-file": ("", "json"),
    "not-an-object": ([1, 2], "document"),
    "unknown-model-type": ({**NEMOTRON, "model_type": "llama"}, "model_type"),
    "no-model-type": ({k: v for k, v in NEMOTRON.items() if k != "model_type"}, "model_type"),
    "model-type-not-a-string": ({**NEMOTRON, "model_type": 3}, "model_type"),
    # remote-code types have no class defaults here: a missing field stays missing
    "missing-hidden-size": ({"model_type": "minimax_text_01", "num_hidden_layers": 2, "vocab_size": 100,
                             "attn_type_list": [0, 1]}, "hidden_size"),
    "nemotron-no-layout": ({k: v for k, v in NEMOTRON.items() if k != "hybrid_override_pattern"},
                           "hybrid_override_pattern"),
    "layers-as-string": ({**NEMOTRON, "num_hidden_layers": "6"}, "num_hidden_layers"),
    "bool-as-int": ({**NEMOTRON, "hidden_size": True}, "hidden_size"),
    "zero-heads": ({**NEMOTRON, "mamba_num_heads": 0}, "mamba_num_heads"),
    "pattern-too-short": ({**NEMOTRON, "hybrid_override_pattern": "M*-E"}, "hybrid_override_pattern"),
    "pattern-unknown-char": ({**NEMOTRON, "hybrid_override_pattern": "M*-XM-"}, "hybrid_override_pattern[3]"),
    "layer-types-too-long": ({**QWEN_NEXT, "layer_types": ["linear_attention"] * 9}, "layer_types"),
    "layer-type-unknown": ({**QWEN_NEXT, "full_attention_interval": None,
                            "layer_types": ["linear_attention", "sliding"] + ["full_attention"] * 6},
                           "layer_types[1]"),
    "interval-contradicts-layer-types": ({**QWEN_NEXT, "layer_types": ["full_attention"] * 8},
                                         "full_attention_interval"),
    "qwen3-5-text-config-list": ({"model_type": "qwen3_5", "text_config": [1]}, "text_config"),
    "kimi-overlap": ({**KIMI, "linear_attn_config": {**KIMI["linear_attn_config"], "full_attn_layers": [4, 5]}},
                     "linear_attn_config.full_attn_layers"),
    "kimi-out-of-range": ({**KIMI, "linear_attn_config": {**KIMI["linear_attn_config"], "full_attn_layers": [6]}},
                          "linear_attn_config.full_attn_layers[0]"),
    "jamba-offset-past-period": ({**JAMBA, "attn_layer_offset": 4}, "attn_layer_offset"),
    "mamba2-heads-contradict": ({"model_type": "mamba2", "hidden_size": 256, "num_hidden_layers": 2,
                                 "vocab_size": 100, "num_heads": 4, "head_dim": 64}, "num_heads"),
    "mamba-ssm-unknown-layer": ({"d_model": 256, "n_layer": 2, "ssm_cfg": {"layer": "Mamba3"}}, "ssm_cfg.layer"),
    "minimax-bad-code": ({"model_type": "minimax_text_01", "hidden_size": 256, "num_hidden_layers": 2,
                          "vocab_size": 100, "attn_type_list": [0, 2]}, "attn_type_list[1]"),
    "lfm2-index-out-of-range": ({"model_type": "lfm2", "hidden_size": 256, "num_hidden_layers": 2,
                                 "vocab_size": 100, "full_attn_idxs": [2]}, "full_attn_idxs[0]"),
    "unknown-torch-dtype": ({**NEMOTRON, "torch_dtype": "int4"}, "torch_dtype"),
    "unknown-ssm-dtype-hint": ({**NEMOTRON, "mamba_ssm_cache_dtype": "float64"}, "mamba_ssm_cache_dtype"),
    "a-billion-layers": ({**FALCON, "num_hidden_layers": 10**9}, "num_hidden_layers"),
    "list-entry-wrong-type": ({**ZAMBA, "layers_block_type": ["mamba", 1, "mamba", "mamba", "hybrid", "hybrid"]},
                              "layers_block_type[1]"),
    # no head dim given (and none in the class), and the heads do not divide the attention width
    "jamba-heads-do-not-divide": ({**JAMBA, "num_attention_heads": 3}, "num_attention_heads"),
    "zamba2-heads-do-not-divide": ({**ZAMBA, "attention_head_dim": None, "num_attention_heads": 3},
                                   "attention_head_dim"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_config_is_one_clear_error(case, tmp_path):
    data, field = BROKEN[case]
    path = write(tmp_path, data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(SpecError) as err:
        import_hf(path)
    assert err.value.file == str(path)
    assert err.value.field == field
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and f": {field}: " in message


def test_a_heads_mismatch_names_the_fields_the_class_filled_in(tmp_path):
    mamba2 = {"model_type": "mamba2", "hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 100, "head_dim": 64}
    with pytest.raises(SpecError) as err:  # num_heads and expand from Mamba2Config: 128 x 64 heads, 2 x 256 wide
        imported(tmp_path, mamba2)
    assert err.value.expected == ("heads x head dim equal to expand x hidden_size (512), got 128 x 64 = 8192 "
                                  "(not in the config, so Mamba2Config's defaults: num_heads 128, expand 2)")
    with pytest.raises(SpecError) as err:  # all given: no defaults to name
        imported(tmp_path, {**mamba2, "num_heads": 4, "expand": 2})
    assert err.value.expected == "heads x head dim equal to expand x hidden_size (512), got 4 x 64 = 256"


def test_unknown_model_type_names_the_closest_one_and_the_way_to_write_a_spec(tmp_path):
    with pytest.raises(SpecError) as err:
        imported(tmp_path, {**NEMOTRON, "model_type": "nemotron"})
    assert "got 'nemotron': the closest supported one is 'nemotron_h'" in err.value.expected
    assert "mcache spec schema" in err.value.expected
    with pytest.raises(SpecError) as err:  # nothing close: where the list is, not the list
        imported(tmp_path, {**NEMOTRON, "model_type": "llama"})
    assert "`mcache import-hf --help` lists the supported ones" in err.value.expected
    assert not any(t in err.value.expected for t in supported_model_types() if t != "mamba")


@pytest.mark.parametrize(("kind", "says"), [
    ("minimax_m3", "not a hybrid mcache sizes"),
    ("minimax_m3_vl", "not a hybrid mcache sizes"),
    ("rwkv", "RWKV is a recurrent model neither vLLM (0.34) nor SGLang (0.5.23) serves"),
    ("recurrent_gemma", "RecurrentGemma is a recurrent model neither"),
    ("xlstm", "xLSTM is a recurrent model neither"),
])
def test_a_known_family_mcache_does_not_model_is_refused_with_what_it_lacks(tmp_path, kind, says):
    """Not the closest supported type (minimax_m3 would be read as minimax; qwen4_exp, before mcache had its kinds, as
    qwen3_next, dropping its indexer caches without a word)."""
    with pytest.raises(SpecError) as err:
        imported(tmp_path, {**QWEN_NEXT, "model_type": kind})
    assert err.value.field == "model_type" and says in err.value.expected and "closest" not in err.value.expected


def test_import_hf_help_lists_the_model_types(capsys):
    from mcache.cli.main import main

    assert main(["import-hf", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert all(t in out for t in supported_model_types())


def test_missing_file_and_empty_folder(tmp_path):
    with pytest.raises(SpecError) as err:
        import_hf(tmp_path / "nope.json")
    assert err.value.field == "file"
    with pytest.raises(SpecError) as err:
        import_hf(tmp_path)
    assert err.value.field == "file" and err.value.file == str(tmp_path / "config.json")


def test_not_utf8(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "\xff"}')
    with pytest.raises(SpecError) as err:
        import_hf(path)
    assert err.value.field == "file"


def test_truncated_json_names_the_line(tmp_path):
    path = write(tmp_path, '{\n  "model_type": "jamba",\n  "hidden_size": ')
    with pytest.raises(SpecError) as err:
        import_hf(path)
    assert err.value.line == 3 and str(err.value).startswith(f"{path}:3: json: valid JSON")


MANGLED = [None, "x", -1, 0, 1.5, True, 10**30, [], {}, [1, "a"], {"a": 1}]
MANGLED_NESTED = [None, "x", -1, 1.5, 10**30, [], {"a": 1}]  # fewer inside nested configs, which hold most fields


@pytest.mark.parametrize("stem", sorted(set(BUNDLED) | set(FAMILIES) | set(EXTRA_FAMILIES)))
def test_any_single_field_damage_is_a_spec_error_or_imports(stem, tmp_path):
    """Drop or mangle each field (and each nested field) in turn: never anything but a `SpecError`."""
    base = shared_data(stem)
    variants = []
    for key, value in base.items():
        variants.append({k: v for k, v in base.items() if k != key})
        variants += [{**base, key: bad} for bad in MANGLED]
        if isinstance(value, dict):
            for sub in value:
                variants.append({**base, key: {k: v for k, v in value.items() if k != sub}})
                variants += [{**base, key: {**value, sub: bad}} for bad in MANGLED_NESTED]
    for i, data in enumerate(variants):
        path = write(tmp_path, data, f"v{i}.json")
        try:
            spec = import_hf(path)
        except SpecError as err:
            assert "\n" not in str(err) and err.file == str(path)
        else:
            parse_spec(spec_to_yaml(spec), "dumped.yaml")


def test_dtype_wins_over_torch_dtype(tmp_path):
    # transformers' PretrainedConfig keeps `dtype` when a config has both (configuration_utils.py)
    spec = imported(tmp_path, {**NEMOTRON, "dtype": "float16", "torch_dtype": "bfloat16"})
    assert spec.dtype == "float16"
    assert imported(tmp_path, {**NEMOTRON, "torch_dtype": "float16"}, "old.json").dtype == "float16"


def test_qwen3_5_state_dtype_hint_at_the_top_level(tmp_path):
    text = {k: v for k, v in QWEN35_TEXT.items() if k != "mamba_ssm_dtype"}
    spec = imported(tmp_path, {"model_type": "qwen3_5", "mamba_ssm_dtype": "float32", "text_config": text})
    assert spec.ssm_dtype_hints == {"mamba_ssm_dtype": "float32"} and "mamba_ssm_dtype is float32" in spec.notes


def test_integer_literal_too_long_to_parse_is_one_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "mamba", "hidden_size": ' + "9" * 5000 + "}")
    with pytest.raises(SpecError) as err:
        import_hf(path)
    assert err.value.field == "hidden_size" and err.value.expected == "a number mcache can read, got an integer of 5000 digits"


def test_nemotron_layout_from_layers_block_type_alone(tmp_path):
    # Nemotron-3 Ultra's config has layers_block_type and no num_hidden_layers (NemotronHConfig counts the list)
    data = {k: v for k, v in NEMOTRON.items() if k not in ("num_hidden_layers", "hybrid_override_pattern")}
    spec = imported(tmp_path, {**data, "layers_block_type": ["mamba", "attention", "mlp", "moe", "mamba", "mlp"]})
    assert spec.num_layers == 6 and kinds(spec) == ["mamba2", "attention", "mlp", "moe", "mamba2", "mlp"]
    with pytest.raises(SpecError, match="layers_block_type"):  # a count that contradicts the list
        imported(tmp_path, {**data, "num_hidden_layers": 5, "layers_block_type": ["mamba"] * 6}, "bad.json")


def test_fields_the_config_omits_take_their_class_defaults(tmp_path):
    # NemotronHConfig: head_dim 128 and num_key_value_heads 8 (not heads), conv_kernel 4
    data = {k: v for k, v in NEMOTRON.items() if k not in ("head_dim", "num_key_value_heads", "conv_kernel")}
    spec = imported(tmp_path, {**data, "num_attention_heads": 16})  # 8 KV heads serve 16 query heads, not the 4 given
    assert (spec.attention.head_dim, spec.attention.num_kv_heads, spec.mamba2.conv_kernel) == (128, 8, 4)
    note = next(n for n in spec.notes.split(". Not in") if "NemotronHConfig's defaults" in n)
    assert all(f in note for f in ("conv_kernel 4", "head_dim 128", "num_key_value_heads 8"))
    # a wrapper without text_config gets every text default, as Qwen3_5Config builds Qwen3_5TextConfig()
    bare = imported(tmp_path, {"model_type": "qwen3_5"}, "bare.json")
    assert bare.num_layers == 32 and bare.gdn.num_v_heads == 32 and bare.attention.head_dim == 256
    # the three configs the issue quotes: fields only the weights need
    jamba = imported(tmp_path, {k: v for k, v in JAMBA.items() if k != "intermediate_size"}, "jamba.json")
    assert jamba.mlp.intermediate_size == 14336  # JambaConfig
    falcon = imported(tmp_path, {k: v for k, v in shared_data("falcon-h1-0.5b").items() if k != "vocab_size"}, "f.json")
    assert falcon.vocab_size == 128000  # FalconH1Config


def test_sliding_window_caps_the_kv_of_those_layers(tmp_path):
    spec = imported(tmp_path, {**NEMOTRON, "sliding_window": 1024})
    assert spec.attention.sliding_window == 1024
    r = rank(spec)
    kv = next(c for c in r.components if c.decl.per == "token")
    assert kv.decl.window == 1024 and kv.units == 64 * 1024  # 64 sequences of 8192 tokens hold 1024 each
    assert r.kv_bytes_per_seq(8192) == r.kv_bytes_per_seq(1024)
    off = imported(tmp_path, {**NEMOTRON, "sliding_window": 1024, "use_sliding_window": False}, "off.json")
    assert off.attention.sliding_window is None


def test_nemotron_latent_moe_and_mtp_layers(tmp_path):
    """Nemotron-3 Super's two misses, on a small config: routed experts in a 64-wide latent space (with the
    projections into and out of it) and one MTP layer of attention + MoE."""
    plain = imported(tmp_path, NEMOTRON, "plain.json")
    spec = imported(tmp_path, {**NEMOTRON, "moe_latent_size": 64, "num_nextn_predict_layers": 1,
                               "mtp_hybrid_override_pattern": "*E"}, "super.json")
    assert spec.moe.latent_size == 64 and (spec.mtp.num_layers, spec.mtp.layer) == (1, "attention+moe")
    full_experts = 4 * 2 * 256 * 128  # 4 experts, up and down (not gated), hidden 256 x 128
    latent_experts = 4 * 2 * 64 * 128 + 2 * 256 * 64  # the same in the latent space, and its two projections
    attention = 256 * 4 * 64 + 2 * 256 * 2 * 64 + 4 * 64 * 256
    moe = latent_experts + 2 * 256 * 256 + 256 * 4  # one shared expert of 256, the router
    mtp = attention + moe + 2 * 256 + 2 * 256 * 256 + 2 * 256  # two norms, the [2h, h] input projection, its norms
    assert weights.total_params(spec, mtp=True) - weights.total_params(plain) == latent_experts - full_experts + mtp
    assert weights.total_params(spec) - weights.total_params(plain) == latent_experts - full_experts  # not drafting


OLMO = {"model_type": "olmo_hybrid", "hidden_size": 256, "num_hidden_layers": 8, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512, "dtype": "bfloat16"}


def test_olmo_hybrid_gdn_dims_follow_the_attention_heads(tmp_path):
    """OlmoHybridConfig: full attention where i % 4 == 3; GDN with the attention's head count, key dim
    int(0.75 x 256 / 4) = 48 and value dim 96; attention head dim 256 / 4 = 64."""
    spec = imported(tmp_path, OLMO)
    assert kinds(spec) == ["gdn+mlp"] * 3 + ["attention+mlp"] + ["gdn+mlp"] * 3 + ["attention+mlp"]
    conv = 6 * (2 * 4 * 48 + 4 * 96) * 3 * 2  # six GDN layers, conv over q|k|v, K-1 = 3 rows, bf16
    state = 6 * 4 * 96 * 48 * 2
    kv = 2 * 2 * 2 * 64 * 2  # two attention layers, K and V of 2 heads x 64
    assert (rank(spec).conv_bytes_per_slot, rank(spec).ssm_bytes_per_slot, rank(spec).kv_bytes_per_token) == (conv, state, kv)
    half = rank(spec, 2)
    assert (half.conv_bytes_per_slot, half.ssm_bytes_per_slot, half.kv_bytes_per_token) == (conv // 2, state // 2, kv // 2)
    sized = imported(tmp_path, {**OLMO, "linear_num_key_heads": 2, "linear_key_head_dim": 32}, "sized.json")
    assert (sized.gdn.num_k_heads, sized.gdn.k_head_dim, sized.gdn.num_v_heads, sized.gdn.v_head_dim) == (2, 32, 4, 64)


def minimax_text_01(**changes) -> dict:
    """MiniMax-Text-01 in its remote-code form (no config class, so no defaults to fall back on)."""
    data = shared_data("minimax-text-01")
    codes = [1 if t == "full_attention" else 0 for t in data.pop("layer_types")]
    data.update(model_type="minimax_text_01", attn_type_list=codes, **changes)
    return {k: v for k, v in data.items() if v is not None}


def test_a_field_only_the_weights_need_never_blocks_the_cache(tmp_path):
    """MiniMax-M1-style: without num_experts_per_tok (no weight needs it) everything is known; without
    vocab_size (and no class default) the caches are sized exactly and the weights are unknown, by name."""
    full = import_hf(shared("minimax-text-01"))
    no_top_k = imported(tmp_path, minimax_text_01(num_experts_per_tok=None), "m1.json")
    assert no_top_k.moe.top_k is None and weights.total_params(no_top_k) == weights.total_params(full)
    spec = imported(tmp_path, minimax_text_01(vocab_size=None), "novocab.json")
    assert spec.vocab_size is None and weights.unknown_fields(spec) == ["vocab_size"]
    assert "Weights unknown: vocab_size not in the config" in spec.notes
    assert weights.total_params(spec) is None and weights.stored_bytes(spec) is None
    for tp in (1, 2):
        assert cache_bytes(spec, tp) == cache_bytes(full, tp)
        assert rank(spec, tp).weight_bytes is None
    again = parse_spec(spec_to_yaml(spec), "dumped.yaml")
    assert again == spec
