"""The newer hybrid families, each from a real config in tests/data/hf_configs or hf_configs_extra (PROVENANCE.md
there says where each came from): exact per-rank cache bytes at TP 1 and 2 worked by hand from the config's fields, and the
parameter count against the publisher's figure."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from paths import HF_CONFIGS, HF_CONFIGS_EXTRA

from mcache.core.errors import SpecError
from mcache.core.hf import import_hf
from mcache.core.load import parse_spec
from mcache.core.sizing import vision, weights
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes
from mcache.core.spec.dump import spec_to_yaml
from mcache.core.spec.model import Vision, layer_kinds

BF16, FP16, FP32 = 2, 2, 4

# stem -> (model_type, layer kinds, {tp: (conv bytes/slot, ssm bytes/slot, KV bytes/token)})
FAMILIES = {
    # Mamba1, 64 layers, d_inner 8192, d_state 16, d_conv 4: conv [8192, 3], ssm [8192, 16], bf16
    "falcon-mamba-7b": ("falcon_mamba", {"mamba1": 64}, {
        1: (64 * 8192 * 3 * BF16, 64 * 8192 * 16 * BF16, 0),
        2: (64 * 4096 * 3 * BF16, 64 * 4096 * 16 * BF16, 0),
    }),
    # Kimi-K3 wrapper over kimi_linear: 69 KDA layers (96 heads x 128, conv over q|k|v = 3*96*128, K-1 = 3,
    # float32 state [96, 128, 128]) and 24 MLA layers (latent 512 + rope 64, not split by TP)
    "kimi-k3": ("kimi_k3", {"kda+moe": 68, "kda+mlp": 1, "mla+moe": 24}, {
        1: (69 * 3 * 96 * 128 * 3 * BF16, 69 * 96 * 128 * 128 * FP32, 24 * (512 + 64) * BF16),
        2: (69 * 3 * 48 * 128 * 3 * BF16, 69 * 48 * 128 * 128 * FP32, 24 * (512 + 64) * BF16),
    }),
    # bailing_hybrid (Ling-3.0-tiny geometry): groups of 4 layers, the 4th MLA; 18 KDA (16 heads x 128), 6 MLA
    "edge0-8b-a1b-preview": ("bailing_hybrid", {"kda+mlp": 1, "kda+moe": 17, "mla+moe": 6}, {
        1: (18 * 3 * 16 * 128 * 3 * BF16, 18 * 16 * 128 * 128 * FP32, 6 * (512 + 64) * BF16),
        2: (18 * 3 * 8 * 128 * 3 * BF16, 18 * 8 * 128 * 128 * FP32, 6 * (512 + 64) * BF16),
    }),
    # bailing_moe_linear: softmax attention every 5th layer (4 of 20, 4 KV heads x 128); 16 lightning layers
    # with a [16, 128, 128] state in bf16, no conv
    "ring-mini-linear-2.0": ("bailing_moe_linear", {"lightning+mlp": 1, "lightning+moe": 15, "attention+moe": 4}, {
        1: (0, 16 * 16 * 128 * 128 * BF16, 4 * 2 * 4 * 128 * BF16),
        2: (0, 16 * 8 * 128 * 128 * BF16, 4 * 2 * 2 * 128 * BF16),
    }),
    # lfm2_moe: 18 short-conv layers (hidden 2048, L_cache 3 -> 2 rows), 6 attention (8 KV heads x 64)
    "lfm2-8b-a1b": ("lfm2_moe", {"short_conv+mlp": 2, "short_conv+moe": 16, "attention+moe": 6}, {
        1: (18 * 2048 * 2 * BF16, 0, 6 * 2 * 8 * 64 * BF16),
        2: (18 * 1024 * 2 * BF16, 0, 6 * 2 * 4 * 64 * BF16),
    }),
    # plamo2: Mamba2 and windowed attention alternate; 8 Mamba2 (32 heads x 128, state 64, no B/C in the conv:
    # conv over x only, 4096 wide), 8 sliding-window attention layers with 1 KV head (kept whole at TP 2)
    "plamo-2-1b": ("plamo2", {"mamba2+mlp": 8, "sliding_attention+mlp": 8}, {
        1: (8 * 4096 * 3 * BF16, 8 * 32 * 128 * 64 * BF16, 8 * 2 * 1 * 128 * BF16),
        2: (8 * 2048 * 3 * BF16, 8 * 16 * 128 * 64 * BF16, 8 * 2 * 1 * 128 * BF16),
    }),
    # Nemotron-3 Super: 40 Mamba2 (128 heads x 64, 8 groups x state 128: conv 8192 + 2*8*128 = 10240 wide),
    # mamba_ssm_cache_dtype float32; 8 attention layers with 2 KV heads x 128
    "nemotron-3-super-120b-a12b": ("nemotron_h", {"mamba2": 40, "moe": 40, "attention": 8}, {
        1: (40 * 10240 * 3 * BF16, 40 * 128 * 64 * 128 * FP32, 8 * 2 * 2 * 128 * BF16),
        2: (40 * 5120 * 3 * BF16, 40 * 64 * 64 * 128 * FP32, 8 * 2 * 1 * 128 * BF16),
    }),
    # Qwen3.6-35B-A3B: 30 GDN (16 k heads x 128, 32 v heads x 128: conv 2*2048 + 4096 = 8192 wide; float32 state
    # by mamba_ssm_dtype), 10 gated attention layers with 2 KV heads x 256
    "qwen3.6-35b-a3b": ("qwen3_5_moe", {"gdn+moe": 30, "attention+moe": 10}, {
        1: (30 * 8192 * 3 * BF16, 30 * 32 * 128 * 128 * FP32, 10 * 2 * 2 * 256 * BF16),
        2: (30 * 4096 * 3 * BF16, 30 * 16 * 128 * 128 * FP32, 10 * 2 * 1 * 256 * BF16),
    }),
    # Qwen3.5-9B (the RedHat w4a16 checkpoint): 24 GDN as above, 8 attention layers with 4 KV heads x 256
    "redhatai-qwen3.5-9b-w4a16": ("qwen3_5", {"gdn+mlp": 24, "attention+mlp": 8}, {
        1: (24 * 8192 * 3 * BF16, 24 * 32 * 128 * 128 * FP32, 8 * 2 * 4 * 256 * BF16),
        2: (24 * 4096 * 3 * BF16, 24 * 16 * 128 * 128 * FP32, 8 * 2 * 2 * 256 * BF16),
    }),
    # Qwen3-Next FP8 (transformers dump: layer_types, no state-dtype hint -> bf16 state)
    "qwen3-next-80b-a3b-instruct-fp8": ("qwen3_next", {"gdn+moe": 36, "attention+moe": 12}, {
        1: (36 * 8192 * 3 * BF16, 36 * 32 * 128 * 128 * BF16, 12 * 2 * 2 * 256 * BF16),
        2: (36 * 4096 * 3 * BF16, 36 * 16 * 128 * 128 * BF16, 12 * 2 * 1 * 256 * BF16),
    }),
    # Qwen3.6-27B NVFP4 (a checkpoint folder): 48 GDN with 48 v heads (conv 2*2048 + 6144 = 10240 wide), fp16
    # model dtype, float32 state; 16 attention layers with 4 KV heads x 256
    "centml-qwen3.6-27b-nvfp4": ("qwen3_5", {"gdn+mlp": 48, "attention+mlp": 16}, {
        1: (48 * 10240 * 3 * FP16, 48 * 48 * 128 * 128 * FP32, 16 * 2 * 4 * 256 * FP16),
        2: (48 * 5120 * 3 * FP16, 48 * 24 * 128 * 128 * FP32, 16 * 2 * 2 * 256 * FP16),
    }),
}
# The same, from tests/data/hf_configs_extra
EXTRA_FAMILIES = {
    # MiniCPM-V 4.6: a Qwen3.5 text_config, 18 GDN with 16 k and 16 v heads x 128 (conv 2*2048 + 2048 = 6144
    # wide, K-1 = 3 rows; float32 state by text_config.mamba_ssm_dtype), 6 gated attention layers with 2 KV heads x 256
    "minicpm-v-4.6": ("minicpmv4_6", {"gdn+mlp": 18, "attention+mlp": 6}, {
        1: (18 * 6144 * 3 * BF16, 18 * 16 * 128 * 128 * FP32, 6 * 2 * 2 * 256 * BF16),
        2: (18 * 3072 * 3 * BF16, 18 * 8 * 128 * 128 * FP32, 6 * 2 * 1 * 256 * BF16),
    }),
}
ALL_FAMILIES = FAMILIES | EXTRA_FAMILIES

# The vision tower of each multimodal config, as its vision_config names it: Qwen3.5/3.6's `depth` and `hidden_size`
# (transformers' Qwen3_5VisionConfig), Kimi-K3's `vt_num_hidden_layers` and `vt_hidden_size`; and what weighs it


def qwen_tower(out: int) -> Vision:
    """Qwen3.5's ViT as every Qwen3.5/3.6 config declares it, projecting to `out` (the text model's width)."""
    return Vision(num_layers=27, hidden_size=1152, layers_key="depth", tower="qwen3_5", intermediate_size=4304,
                  patch_size=16, temporal_patch_size=2, position_embeddings=2304, merge_size=4, out_hidden_size=out)


KIMI_TOWER = Vision(num_layers=27, hidden_size=1024, layers_key="vt_num_hidden_layers", hidden_key="vt_hidden_size",
                    tower="kimi_k3", intermediate_size=4096, attention_size=1536, patch_size=14,
                    position_embeddings=64 * 64, merge_size=4, out_hidden_size=7168)
VISION = {
    "qwen3.6-35b-a3b": qwen_tower(2048),
    "redhatai-qwen3.5-9b-w4a16": qwen_tower(4096),
    "centml-qwen3.6-27b-nvfp4": qwen_tower(5120),
    "kimi-k3": KIMI_TOWER,
    # recorded, not weighed: MiniCPM-V 4.6's SigLIP (MiniCPMV4_6VisionConfig's fields)
    "minicpm-v-4.6": Vision(num_layers=27, hidden_size=1152),
}

# Total parameters as the publisher states them (vision towers included where the model has one)
PUBLISHED = {
    "falcon-mamba-7b": (7.27e9, "tiiuae/falcon-mamba-7b: Hub safetensors count 7.27B ('7B' in the paper)"),
    "kimi-k3": (2.8e12, "moonshotai Kimi-K3 collection: 2.8T total"),
    "edge0-8b-a1b-preview": (7.9e9, "inclusionAI/Ling-3.0-tiny model card (same geometry): 7.9B total"),
    "ring-mini-linear-2.0": (16.4e9, "inclusionAI Ring-mini-linear-2.0 release: 16.4B total"),
    "lfm2-8b-a1b": (8.3e9, "transformers lfm2_moe docs on LFM2-8B-A1B: 8.3B total"),
    "nemotron-3-super-120b-a12b": (120e9, "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B model card: 120B total"),
    "qwen3.6-35b-a3b": (35e9, "Qwen3.6-35B-A3B: 35B total (3B activated)"),
    "redhatai-qwen3.5-9b-w4a16": (9e9, "Qwen/Qwen3.5-9B: 9B"),
    "qwen3-next-80b-a3b-instruct-fp8": (80e9, "Qwen/Qwen3-Next-80B-A3B: 80B total"),
    "centml-qwen3.6-27b-nvfp4": (27e9, "Qwen/Qwen3.5-27B model card (Qwen3.6-27B shares it): 27B"),
}
# Where a publisher's figure is further off than 2%, and why
WIDER = {
    "redhatai-qwen3.5-9b-w4a16": (0.05, "'9B' is the language model's round figure: 8.95B, and the vision tower adds "
                                        "0.456B (transformers' Qwen3_5ForConditionalGeneration: 9,409,813,744, "
                                        "tests/data/param_counts.json)"),
}
# plamo-2-1b: no publisher figure was found beyond the name; its count is checked by hand below.


def config(stem: str):
    """The config of `stem`: a checkpoint folder or a JSON file, in the shared fixtures or the extra configs."""
    folder = HF_CONFIGS / stem
    if folder.is_dir():
        return folder
    file = HF_CONFIGS / f"{stem}.json"
    return file if file.is_file() else HF_CONFIGS_EXTRA / f"{stem}.json"


def cache(stem: str, tp: int) -> tuple[int, int, int]:
    spec = import_hf(config(stem))
    r = estimate(spec, ParallelLayout(tp=tp), RuntimeConfig(), resolve_dtypes(spec)).ranks[0]
    return r.conv_bytes_per_slot, r.ssm_bytes_per_slot, r.kv_bytes_per_token


@pytest.mark.parametrize("stem", sorted(ALL_FAMILIES))
def test_family_imports_as_its_layer_layout(stem):
    model_type, layout, _ = ALL_FAMILIES[stem]
    spec = import_hf(config(stem))
    assert f"(model_type {model_type})" in spec.source
    assert Counter("+".join(k) for k in layer_kinds(spec)) == layout


@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("stem", sorted(ALL_FAMILIES))
def test_family_cache_bytes_by_hand(stem, tp):
    assert cache(stem, tp) == ALL_FAMILIES[stem][2][tp]


@pytest.mark.parametrize("stem", sorted(PUBLISHED))
def test_family_parameters_within_2_percent_of_the_published_count(stem):
    published, source = PUBLISHED[stem]
    estimated = weights.total_params(import_hf(config(stem)))
    error = estimated / published - 1
    tolerance = WIDER.get(stem, (0.02,))[0]
    assert abs(error) <= tolerance, f"{stem}: estimated {estimated:,} vs {published:,.0f} ({source}): {error:+.1%}"


@pytest.mark.parametrize("stem", sorted(ALL_FAMILIES))
def test_family_round_trips_through_yaml(stem):
    spec = import_hf(config(stem))
    again = parse_spec(spec_to_yaml(spec), "dumped.yaml")
    assert again == spec
    assert weights.stored_bytes(again) == weights.stored_bytes(spec)


def test_plamo2_parameters_by_hand():
    """PLaMo-2-1B, hidden 2048, 16 layers, vocab 100000 tied; Mamba2 layers: in_proj 2048 -> 2*4096, the
    B|C|dt projection 4096 -> 64+64+128 (dt rank max(64, 2048/16)), dt_proj 128 -> 32, out_proj, conv 4096 x 4,
    A/D/dt_bias 3*32 and the dt/B/C norms 128+64+64, no gated norm (vLLM 0.22 plamo2.py Plamo2MambaMixer);
    attention: q 16 x 128, k|v 1 x 128, o; MLP gated 8192. (The post-mixer and post-MLP norms and q/k norms,
    0.005% of the model, are not counted.)"""
    spec = import_hf(config("plamo-2-1b"))
    h, d = 2048, 4096
    mamba = h * 2 * d + d * (128 + 2 * 64) + 128 * 32 + d * h + d * 4 + 3 * 32 + (128 + 64 + 64)
    attention = h * 16 * 128 + 2 * h * 128 + 16 * 128 * h
    mlp = 3 * h * 8192
    norms = 16 * 2 * h + h  # two per layer, the final one
    assert weights.total_params(spec) == 8 * mamba + 8 * attention + 16 * mlp + norms + 100000 * h


@pytest.mark.parametrize("stem", sorted(ALL_FAMILIES))
def test_family_vision_tower_from_its_vision_config(stem):
    spec = import_hf(config(stem))
    assert spec.vision == VISION.get(stem)  # None for the text-only families
    if stem in VISION and VISION[stem].tower:
        assert "counted in the weights (on every PP stage, in the model dtype)" in spec.notes
        assert "not the text model's width" not in spec.notes  # each real config projects to its text model
    elif stem in VISION:
        assert "not counted in the weights (mcache does not weigh this tower" in spec.notes


def test_qwen_tower_parameters_by_hand():
    """Qwen3.6-27B's tower (transformers 5.23.0 Qwen3_5VisionModel), h 1152, i 4304, 27 blocks: a Conv3d of 3 x 2 x
    16 x 16 -> h with bias; 2304 x h position embeddings; per block two LayerNorms (2h each), qkv 3h x h + 3h, proj
    h x h + h, fc1 i x h + i, fc2 h x i + h; the merger: LayerNorm(h), fc1 4608 x 4608 + 4608 (2 x 2 patches of h),
    fc2 5120 x 4608 + 5120. Of it, TP splits the linears and the column-parallel biases (qkv, fc1, merger fc1)."""
    spec = import_hf(config("centml-qwen3.6-27b-nvfp4"))
    patch, pos = 3 * 2 * 16 * 16 * 1152 + 1152, 2304 * 1152
    block = 4 * 1152 + (3 * 1152 * 1152 + 3 * 1152) + (1152 * 1152 + 1152) + (1152 * 4304 + 4304) + (4304 * 1152 + 1152)
    merger = 2 * 1152 + (4608 * 4608 + 4608) + (4608 * 5120 + 5120)
    assert patch + pos + 27 * block + merger == 460_730_096  # = transformers' count, less the text model's
    assert vision.tower_params(spec.vision) == 460_730_096
    whole = patch + pos + 27 * (4 * 1152 + 1152 + 1152) + 2 * 1152 + 5120  # convs, embeddings, norms, row biases
    assert vision.rank_tower_params(spec.vision, 4) == (460_730_096 - whole) // 4 + whole


def test_kimi_tower_parameters_by_hand():
    """Kimi-K3's MoonViT3d (SGLang v0.5.23 kimi_k3_vl.py), h 1024, i 4096, q/k/v width 1536, 27 blocks, no biases: a
    Conv2d of 3 x 14 x 14 -> h; 64 x 64 x h position embeddings; per block two RMSNorms (h each), wqkv 3 x 1536 x h,
    wo h x 1536, fc0/fc1 i x h each; a final RMSNorm(h); the projector 4096 x 4096, 7168 x 4096 and RMSNorm(7168).
    Every TP rank holds it whole (SGLang replicates it). SGLang's own classes count the same
    (scripts/oracles/kimi_k3_vision.py)."""
    spec = import_hf(config("kimi-k3"))
    block = 2 * 1024 + 3 * 1536 * 1024 + 1536 * 1024 + 2 * 4096 * 1024
    total = 3 * 14 * 14 * 1024 + 64 * 64 * 1024 + 27 * block + 1024 + 4096 * 4096 + 4096 * 7168 + 7168
    assert total == vision.tower_params(spec.vision) == vision.rank_tower_params(spec.vision, 8) == 447_358_976


def test_the_tower_is_weighed_on_every_pp_stage_in_the_model_dtype():
    """vLLM and SGLang build the tower in the model class's `__init__`, on every pipeline stage."""
    spec = import_hf(config("qwen3.6-35b-a3b"))
    text = weights.total_params(msgspec.structs.replace(spec, vision=None))
    assert weights.total_params(spec) == text + vision.tower_params(spec.vision)
    ranks = estimate(spec, ParallelLayout(pp=2), RuntimeConfig(), resolve_dtypes(spec)).ranks
    bare = estimate(msgspec.structs.replace(spec, vision=None), ParallelLayout(pp=2), RuntimeConfig(),
                    resolve_dtypes(spec)).ranks
    for with_tower, without in zip(ranks, bare, strict=True):
        assert with_tower.weight_bytes - without.weight_bytes == 2 * vision.tower_params(spec.vision)  # bfloat16


def test_a_multimodal_config_without_vision_config_gets_its_class_default_tower():
    # tests/data/hf_configs/qwen3.5-27b.json omits vision_config: Qwen3_5Config builds Qwen3_5VisionConfig() (depth 27,
    # hidden_size 1152), as the real Qwen/Qwen3.5-27B config.json also declares
    spec = import_hf(HF_CONFIGS / "qwen3.5-27b.json")
    # the class's out_hidden_size, which the real config sets to 5120; `defaulted`: no vision_config in the config
    assert spec.vision == msgspec.structs.replace(qwen_tower(3584), defaulted=True)
    assert "Qwen3_5VisionConfig's defaults: vision_config.depth 27, vision_config.hidden_size 1152" in spec.notes
    assert "projects to 3584 (vision_config.out_hidden_size), not the text model's width 5120" in spec.notes


def test_a_vision_config_sets_the_tower_and_a_bare_text_config_has_none(tmp_path):
    data = json.loads((HF_CONFIGS / "qwen3.6-35b-a3b.json").read_text())
    data["vision_config"].update(depth=32, hidden_size=1280)
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert import_hf(tmp_path / "config.json").vision == msgspec.structs.replace(qwen_tower(2048), num_layers=32,
                                                                                 hidden_size=1280)
    (tmp_path / "text.json").write_text(json.dumps(data["text_config"]))  # model_type qwen3_5_moe_text
    assert import_hf(tmp_path / "text.json").vision is None


def test_a_bad_vision_depth_is_refused_naming_the_field(tmp_path):
    data = json.loads((HF_CONFIGS / "kimi-k3.json").read_text())
    data["vision_config"]["vt_num_hidden_layers"] = 0
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match=r"vision_config\.vt_num_hidden_layers: .*positive integer"):
        import_hf(tmp_path / "config.json")


@pytest.mark.parametrize(("stem", "field", "value", "expected"), [
    ("qwen3.6-35b-a3b", "intermediate_size", "4304", r"vision_config\.intermediate_size: a positive integer"),
    ("qwen3.6-35b-a3b", "spatial_merge_size", 0, r"vision_config\.spatial_merge_size: a positive integer"),
    ("kimi-k3", "norm_type", "layernorm", r"vision_config\.norm_type: 'rmsnorm' \(the Kimi-K3 tower mcache weighs\)"),
    ("kimi-k3", "linear_bias", True, r"vision_config\.linear_bias: False"),
    ("kimi-k3", "merge_kernel_size", [2], r"vision_config\.merge_kernel_size: two positive integers"),
    ("kimi-k3", "mm_hidden_size", 1152, r"vision_config\.mm_hidden_size: the tower's width 1024"),
])
def test_a_malformed_vision_config_field_is_refused_naming_it(tmp_path, stem, field, value, expected):
    data = json.loads(config(stem).read_text())
    data["vision_config"][field] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match=expected):
        import_hf(tmp_path / "config.json")


def test_a_weighed_tower_without_its_sizes_is_a_spec_error():
    text = (Path(__file__).parents[1] / "model_specs" / "qwen3.5-27b.yaml").read_text()
    with pytest.raises(SpecError, match=r"vision\.intermediate_size: a size"):
        parse_spec(text.replace("intermediate_size: 4304,", ""), "spec.yaml")


@pytest.mark.parametrize(("arch", "mla"), [
    # vLLM bailing_moe_v3.py _is_kda_layer: the layers past the last whole group are MLA too (Ling 3.0, KDA)
    ("BailingMoeV3ForCausalLM", [3, 7, 8, 9]),
    # bailing_moe_linear.py (Ring-2.5, lightning): only where a group closes
    ("BailingMoeV2_5ForCausalLM", [3, 7]),
])
def test_a_partial_last_bailing_group(tmp_path, arch, mla):
    cfg = json.loads((HF_CONFIGS / "edge0-8b-a1b-preview.json").read_text())
    cfg.update(num_hidden_layers=10, layer_group_size=4, architectures=[arch])
    cfg.pop("layer_types", None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    kinds = layer_kinds(import_hf(path))
    assert [i for i, k in enumerate(kinds) if "mla" in k] == mla


def test_a_ling_3_export_without_model_type_or_with_its_remote_type_reads_as_bailing_hybrid(tmp_path):
    """An MLX export of Edge0-8B-A1B names no model_type, only BailingMoeV3ForCausalLM (engines pick the model by
    architecture), and the remote-code class's own type is bailing_moe_v3: both read as bailing_hybrid, and say so.
    Its MLX `quantization_config` (bits 4, group_size 64, no quant_method) is named as such, weights in bf16."""
    cfg = json.loads((HF_CONFIGS / "edge0-8b-a1b-preview.json").read_text())
    base = layer_kinds(import_hf(HF_CONFIGS / "edge0-8b-a1b-preview.json"))
    mlx = {"group_size": 64, "bits": 4, "mode": "affine"}
    for i, (change, label) in enumerate([
        ({"model_type": None, "quantization_config": mlx}, "no model_type, architecture BailingMoeV3ForCausalLM read as"),
        ({"model_type": "bailing_moe_v3"}, "model_type bailing_moe_v3, read as bailing_hybrid"),
    ]):
        data = {k: v for k, v in {**cfg, **change}.items() if v is not None}
        path = tmp_path / f"c{i}.json"
        path.write_text(json.dumps(data))
        spec = import_hf(path)
        assert layer_kinds(spec) == base and label in spec.source
    assert "an MLX export's 4-bit groups of 64 (no quant_method)" in import_hf(tmp_path / "c0.json").notes
    cfg.pop("model_type")
    cfg["architectures"] = ["LlamaForCausalLM"]  # an architecture mcache does not read as a type: still refused
    (tmp_path / "c2.json").write_text(json.dumps(cfg))
    with pytest.raises(SpecError, match="model_type: a model type"):
        import_hf(tmp_path / "c2.json")


def test_minicpm_v_4_6_text_parameters_by_hand_without_its_mtp_layer():
    """MiniCPM-V 4.6's text_config declares mtp_num_hidden_layers 1, but vLLM's MiniCPMV4_6ForConditionalGeneration
    builds Qwen3_5ForCausalLM alone and drops `mtp.` weights: no MTP block. Its text model, h 1024, MLP 3584 (gated),
    24 layers; each GDN layer (16 k and 16 v heads x 128): in_proj q|k|v|z h x (2*2048 + 2*2048), out_proj 2048 x h,
    in_proj b|a h x 2*16, conv (2*2048 + 2048) x 4, A/dt_bias 2*16 and the norm 128; each gated attention layer
    (8 heads, 2 KV heads x 256): q h x 2*8*256, k|v h x 2*2*256, o 8*256 x h; two norms a layer; the tied embedding
    248094 x h and the final norm. The SigLIP tower is not weighed."""
    spec = import_hf(config("minicpm-v-4.6"))
    assert spec.mtp is None and "which vLLM's model class for minicpmv4_6 neither builds nor loads" in spec.notes
    assert spec.ssm_dtype_hints == {"mamba_ssm_dtype": "float32"}
    h, mlp, norms = 1024, 3 * 1024 * 3584, 2 * 1024
    gdn = h * (4096 + 4096) + 2048 * h + h * 2 * 16 + 6144 * 4 + 2 * 16 + 128
    attention = h * 2 * 8 * 256 + h * 2 * 2 * 256 + 8 * 256 * h
    total = 18 * (gdn + mlp + norms) + 6 * (attention + mlp + norms) + 248094 * h + h
    assert total == weights.total_params(spec) == weights.total_params(spec, mtp=True) == 752_158_528


def test_nemotron_omni_reads_its_llm_config_and_notes_the_sound_encoder():
    # No Nemotron 3 Omni config.json is published whole where this repository can cite it: the Omni checkpoints keep
    # Nemotron Nano VL v2's layout (llm_config, a RADIO vision_config) under their own model type, with a Parakeet
    # sound_config, so the real Nano VL v2 config under the Omni names stands in for one
    data = json.loads((HF_CONFIGS_EXTRA / "nvidia-nemotron-nano-12b-v2-vl.json").read_text())
    nano = import_hf_data(data)
    omni = import_hf_data({**data, "model_type": "NemotronH_Nano_Omni_Reasoning_V3", "sound_config": {"d_model": 1024},
                           "architectures": ["NemotronH_Nano_Omni_Reasoning_V3"]})
    assert omni.architecture == "NemotronH_Nano_Omni_Reasoning_V3"
    assert "The text model is its llm_config (model_type nemotron_h)." in omni.notes
    assert "Sound encoder (sound_config, Parakeet): no cache, not counted in the weights" in omni.notes
    assert (omni.layers, omni.mamba2, omni.attention, omni.vision) == (nano.layers, nano.mamba2, nano.attention,
                                                                      nano.vision)
    # Nemotron 3.5 VL: model_type nemotron_h_omni, architecture NemotronH_Omni_Reasoning_V3, the same nesting
    v35 = import_hf_data({**data, "model_type": "nemotron_h_omni", "architectures": ["NemotronH_Omni_Reasoning_V3"]})
    assert v35.architecture == "NemotronH_Omni_Reasoning_V3"
    assert (v35.layers, v35.mamba2, v35.attention, v35.vision) == (nano.layers, nano.mamba2, nano.attention, nano.vision)


def test_nemotron_h_layers_block_type_takes_the_transformers_5_names(tmp_path):
    """transformers 5's NemotronHConfig writes layers_block_type as full_attention / linear_attention / moe / mlp
    (configuration_nemotron_h.py _pattern_to_list); they name the same layers as the legacy letters."""
    data = json.loads((HF_CONFIGS / "nemotron-3-super-120b-a12b.json").read_text())
    legend = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
    pattern = data.pop("hybrid_override_pattern")
    data["layers_block_type"] = [legend[ch] for ch in pattern]
    assert layer_kinds(import_hf_data(data)) == layer_kinds(import_hf(config("nemotron-3-super-120b-a12b")))
    data["layers_block_type"][0] = "sliding_attention"
    with pytest.raises(SpecError, match=r"layers_block_type\[0\]: one of .*full_attention.*got 'sliding_attention'"):
        import_hf_data(data)


def import_hf_data(data: dict):
    """The spec of a config given as a mapping (written to a temporary file)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(data))
        return import_hf(path)
