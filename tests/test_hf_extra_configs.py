"""Real configs of checkpoints the shared fixtures do not cover, each for a quirk of its own (tests/data/hf_configs_extra,
PROVENANCE.md there says where each came from). They live apart from tests/data/hf_configs so that no engine golden
table or transformers parameter table has to be made for them: each test here is worked by hand from the config."""

from __future__ import annotations

import json
from collections import Counter

import msgspec
import pytest
from paths import HERE

from mcache.cli.main import main
from mcache.core.hf import import_hf
from mcache.core.sizing import weights
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes
from mcache.core.spec.model import layer_kinds

EXTRA = HERE / "data" / "hf_configs_extra"
BF16 = 2

# stem -> (layer kinds, {tp: (conv bytes/slot, state bytes/slot, KV bytes/token)}, (published params, where))
CASES = {
    # MiniMax-M1 (remote code, model_type minimax_m1): attn_type_list 7 x 0 then 1, ten times: 70 lightning layers
    # with a [64, 128, 128] state (64 heads x head_dim 128), 10 softmax layers with 8 KV heads x 128; bf16
    "minimax-m1": ({"lightning+moe": 70, "attention+moe": 10}, {
        1: (0, 70 * 64 * 128 * 128 * BF16, 10 * 2 * 8 * 128 * BF16),
        8: (0, 70 * 8 * 128 * 128 * BF16, 10 * 2 * 1 * 128 * BF16),
    }, (456e9, "MiniMaxAI/MiniMax-M1-80k model card: 456B total")),
    # Mamba-Codestral-7B (Mamba2Config): 64 layers, 128 heads x 64, 8 groups x state 128: the conv runs over
    # x|B|C = 8192 + 2 x 8 x 128 = 10240 channels, K-1 = 3 rows; TP 2 splits heads and groups alike
    "mamba-codestral-7b": ({"mamba2": 64}, {
        1: (64 * 10240 * 3 * BF16, 64 * 128 * 64 * 128 * BF16, 0),
        2: (64 * 5120 * 3 * BF16, 64 * 64 * 64 * 128 * BF16, 0),
    }, (7.29e9, "mistralai/Mamba-Codestral-7B-v0.1 Hub safetensors count: 7.29B")),
    # LFM2.5-2.6B: 22 short-conv layers (hidden 2048, conv_L_cache 3 -> 2 rows), 8 attention layers with 8 KV heads x
    # 64 (2048 / 32 heads); no block_ff_dim, block_auto_adjust_ff_dim false: the MLP is intermediate_size 10752 wide
    "lfm2.5-2.6b": ({"short_conv+mlp": 22, "attention+mlp": 8}, {
        1: (22 * 2048 * 2 * BF16, 0, 8 * 2 * 8 * 64 * BF16),
        2: (22 * 1024 * 2 * BF16, 0, 8 * 2 * 4 * 64 * BF16),
    }, None),
    # LFM2-VL-1.6B: its text_config is LFM2-1.2B's, 10 short-conv layers (hidden 2048, conv_L_cache 3 -> 2 rows) and
    # 6 attention layers with 8 KV heads x 64 (2048 / 32 heads); the SigLIP2 tower holds no cache
    "lfm2-vl-1.6b": ({"short_conv+mlp": 10, "attention+mlp": 6}, {
        1: (10 * 2048 * 2 * BF16, 0, 6 * 2 * 8 * 64 * BF16),
        2: (10 * 1024 * 2 * BF16, 0, 6 * 2 * 4 * 64 * BF16),
    }, None),
    # Nemotron Nano 12B v2 VL: its llm_config, 28 Mamba2 layers of 128 heads x 80 (8 groups x state 128: the conv runs
    # over x|B|C = 10240 + 2 x 8 x 128 = 12288 channels, K-1 = 3 rows; no state dtype in the config, so the model's),
    # 6 attention layers with 8 KV heads x 128, 28 MLP layers
    "nvidia-nemotron-nano-12b-v2-vl": ({"mamba2": 28, "attention": 6, "mlp": 28}, {
        1: (28 * 12288 * 3 * BF16, 28 * 128 * 80 * 128 * BF16, 6 * 2 * 8 * 128 * BF16),
        2: (28 * 6144 * 3 * BF16, 28 * 64 * 80 * 128 * BF16, 6 * 2 * 4 * 128 * BF16),
    }, None),
    # LFM3 (no published checkpoint: Lfm3Config's defaults): its derived layer_types give 13 short-conv layers (hidden
    # 2048, conv_L_cache 7 -> 6 rows), full attention at 2, 6, ..., 22 (6) and windowed attention at 4, 8, ..., 20 (5),
    # all with 4 KV heads x 128; a windowed layer's KV per token is a full one's (the window caps the tokens)
    "lfm3-defaults": ({"short_conv+mlp": 13, "attention+mlp": 6, "sliding_attention+mlp": 5}, {
        1: (13 * 2048 * 6 * BF16, 0, 11 * 2 * 4 * 128 * BF16),
        2: (13 * 1024 * 6 * BF16, 0, 11 * 2 * 2 * 128 * BF16),
    }, None),
    # sliding_window null: its two sliding_attention layers keep full-length KV, as vLLM builds them (no window)
    "lfm3-no-window": ({"short_conv+mlp": 7, "attention+mlp": 5}, {
        1: (7 * 1024 * 2 * BF16, 0, 5 * 2 * 2 * 128 * BF16),
        2: (7 * 512 * 2 * BF16, 0, 5 * 2 * 1 * 128 * BF16),
    }, None),
    # state-spaces/mamba-2.8b-hf and 1.4b-hf (float32, as their configs say): 64 / 48 Mamba1 layers of 5120 / 4096
    # channels (expand 2), conv_kernel 4 -> 3 rows, state_size 16
    "mamba-2.8b-hf": ({"mamba1": 64}, {
        1: (64 * 5120 * 3 * 4, 64 * 5120 * 16 * 4, 0),
        2: (64 * 2560 * 3 * 4, 64 * 2560 * 16 * 4, 0),
    }, None),
    "mamba-1.4b-hf": ({"mamba1": 48}, {1: (48 * 4096 * 3 * 4, 48 * 4096 * 16 * 4, 0)}, None),
    # state-spaces/mamba-130m and mamba2-130m as the mamba_ssm library writes them (bfloat16 assumed: no dtype key):
    # 24 Mamba1 layers of 2 x 768 = 1536 channels (ssm_cfg {}: d_state 16, d_conv 4 -> 3 rows); 24 Mamba2 layers of
    # 1536 / headdim 64 = 24 heads, one group of state 128 (the library's defaults): the conv runs over x|B|C = 1536 +
    # 2 x 128 = 1792 channels
    "mamba-130m-mamba-ssm": ({"mamba1": 24}, {1: (24 * 1536 * 3 * BF16, 24 * 1536 * 16 * BF16, 0)}, None),
    "mamba2-130m-mamba-ssm": ({"mamba2": 24}, {1: (24 * 1792 * 3 * BF16, 24 * 24 * 64 * 128 * BF16, 0)}, None),
    # LFM3-VL (Lfm3VlConfig's defaults): its text_config is Lfm3Config's defaults, as lfm3-defaults above
    "lfm3-vl-defaults": ({"short_conv+mlp": 13, "attention+mlp": 6, "sliding_attention+mlp": 5}, {
        1: (13 * 2048 * 6 * BF16, 0, 11 * 2 * 4 * 128 * BF16),
    }, None),
}
# The multimodal wrappers: (architecture, max_model_len, vision tower as recorded: layers, width, its fields)
WRAPPERS = {
    "lfm3-vl-defaults": ("Lfm3VlForConditionalGeneration", 128000, (14, 1024, "num_hidden_layers", "hidden_size")),
    "lfm2-vl-1.6b": ("Lfm2VlForConditionalGeneration", 128000, (26, 1152, "num_hidden_layers", "hidden_size")),
    "nvidia-nemotron-nano-12b-v2-vl": ("NemotronH_Nano_VL_V2", 131072, (32, 1280, "args.model", "args.model")),
}


def _rank(stem: str, tp: int):
    spec = import_hf(EXTRA / f"{stem}.json")
    return estimate(spec, ParallelLayout(tp=tp), RuntimeConfig(), resolve_dtypes(spec)).ranks[0]


@pytest.mark.parametrize("stem", sorted(CASES))
def test_layer_layout(stem):
    assert Counter("+".join(k) for k in layer_kinds(import_hf(EXTRA / f"{stem}.json"))) == CASES[stem][0]


@pytest.mark.parametrize(("stem", "tp"), [(stem, tp) for stem in sorted(CASES) for tp in CASES[stem][1]])
def test_cache_bytes_by_hand(stem, tp):
    r = _rank(stem, tp)
    assert (r.conv_bytes_per_slot, r.ssm_bytes_per_slot, r.kv_bytes_per_token) == CASES[stem][1][tp]


@pytest.mark.parametrize("stem", sorted(s for s in CASES if CASES[s][2]))
def test_parameters_within_1_percent_of_the_published_count(stem):
    published, source = CASES[stem][2]
    estimated = weights.total_params(import_hf(EXTRA / f"{stem}.json"))
    assert abs(estimated / published - 1) <= 0.01, f"{stem}: {estimated:,} vs {published:,.0f} ({source})"


def test_lfm2_parameters_are_the_checkpoint_tensors():
    """The LFM2.5-2.6B audit that lists this config also lists every checkpoint tensor (266): per layer
    operator_norm and ffn_norm [2048] and feed_forward w1/w3 [10752, 2048], w2 [2048, 10752]; per conv layer
    conv.in_proj [6144, 2048], conv.conv [2048, 1, 3], conv.out_proj [2048, 2048]; per attention layer q/out
    [2048, 2048], k/v [512, 2048], q/k layernorms [64]; embed_tokens [128000, 2048] (tied) and embedding_norm
    [2048]. mcache counts all of them but the q/k layernorms."""
    layer = 2 * 2048 + 3 * 10752 * 2048
    conv = 6144 * 2048 + 2048 * 3 + 2048 * 2048
    attention = 2 * 2048 * 2048 + 2 * 512 * 2048 + 2 * 64
    checkpoint = 30 * layer + 22 * conv + 8 * attention + 128000 * 2048 + 2048
    assert weights.total_params(import_hf(EXTRA / "lfm2.5-2.6b.json")) == checkpoint - 8 * 2 * 64


def test_lfm3_parameters_by_hand():
    """vLLM's models/lfm3.py (v0.34.0) at Lfm3Config's defaults: per layer operator and FFN norms [2048] and the
    gated MLP w13 [2 x 7680, 2048], w2 [2048, 7680]; per short-conv layer in_proj [6144, 2048], conv [2048, 1, 7] (no
    bias), out_proj [2048, 2048]; per attention layer q and o [2048, 2048], k and v [512, 2048] and the head gate
    [16, 2048]; the tied embedding [128000, 2048] and the final norm. The q/k norms and the sandwich norms are not
    weighed (the notes say so)."""
    layer = 2 * 2048 + 3 * 7680 * 2048
    conv = 6144 * 2048 + 2048 * 7 + 2048 * 2048
    attention = 2 * 2048 * 2048 + 2 * 512 * 2048 + 16 * 2048
    spec = import_hf(EXTRA / "lfm3-defaults.json")
    assert weights.total_params(spec) == 24 * layer + 13 * conv + 11 * attention + 128000 * 2048 + 2048
    assert spec.sliding_attention.sliding_window == 256 and spec.attention.head_gate
    assert "sandwich norms" in spec.notes or "use_sandwich_norm" in spec.notes


def test_lfm3_explicit_layer_types_must_name_its_kinds(tmp_path, capsys):
    data = json.loads((EXTRA / "lfm3-no-window.json").read_text())
    data["layer_types"][3] = "linear_attention"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    assert main(["size", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"mcache: {path}: layer_types[3]: one of conv, full_attention, sliding_attention, got 'linear_attention'")


def test_an_old_zyphra_zamba2_config_is_refused_naming_the_defaulted_fields(capsys):
    """Zamba2-7B's config as Zyphra's own transformers fork wrote it (state_size, conv_dimension, expansion_factor,
    mamba_headdim 64, no n_mamba_heads): transformers' Zamba2Config fills n_mamba_heads 8 and mamba_expand 2, so 8 x
    64 heads cannot cover 2 x 3584 channels. One line that says which values were the class's, not a sizing."""
    path = str(EXTRA / "zamba2-7b-zyphra-format.json")
    assert main(["size", path, "--gpu", "h200"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.strip() == (
        f"mcache: {path}: n_mamba_heads: heads x head dim equal to mamba_expand x hidden_size (7168), got 8 x 64 = 512 "
        "(not in the config, so Zamba2Config's defaults: n_mamba_heads 8, mamba_expand 2)")


@pytest.mark.parametrize("stem", sorted(WRAPPERS))
def test_a_multimodal_wrapper_keeps_its_architecture_and_records_its_tower(stem):
    """The wrapper's architecture (the engines key their rules on it), the text model's length, and the vision tower
    recorded without a `tower` (not weighed: the weights are the text model's)."""
    spec = import_hf(EXTRA / f"{stem}.json")
    arch, length, (layers, hidden, layers_key, hidden_key) = WRAPPERS[stem]
    assert (spec.architecture, spec.max_model_len) == (arch, length)
    assert (spec.vision.num_layers, spec.vision.hidden_size, spec.vision.layers_key, spec.vision.hidden_key,
            spec.vision.tower) == (layers, hidden, layers_key, hidden_key, None)
    assert weights.total_params(spec) == weights.total_params(msgspec.structs.replace(spec, vision=None))
    assert "not counted in the weights" in spec.notes


def test_a_nemotron_vl_state_dtype_hint_is_read_from_its_llm_config(tmp_path):
    data = json.loads((EXTRA / "nvidia-nemotron-nano-12b-v2-vl.json").read_text())
    data["llm_config"]["mamba_ssm_cache_dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert import_hf(tmp_path / "config.json").ssm_dtype_hints == {"mamba_ssm_cache_dtype": "float32"}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["vision_config"]["args"].update(model="vit_giant_patch14"),
     "vision_config.args.model: one of vit_small_patch16_224, vit_base_patch16_224, vit_large_patch16_224, "
     "vit_huge_patch16_224 (the RADIO ViTs whose sizes mcache knows), got 'vit_giant_patch14'"),
    (lambda d: d.pop("vision_config"),
     "vision_config: a mapping (required for model_type NemotronH_Nano_VL_V2), missing"),
    (lambda d: d["llm_config"].pop("hybrid_override_pattern"),
     "llm_config.hybrid_override_pattern: a value (or layers_block_type), missing"),
])
def test_a_broken_nemotron_vl_config_is_one_line(tmp_path, capsys, edit, message):
    data = json.loads((EXTRA / "nvidia-nemotron-nano-12b-v2-vl.json").read_text())
    edit(data)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    assert main(["import-hf", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"mcache: {path}: {message}"


def test_an_lfm2_vl_config_without_vision_config_gets_the_class_default_tower(tmp_path):
    # Lfm2VlConfig builds Siglip2VisionConfig() (12 layers of 768) when the config has none
    data = json.loads((EXTRA / "lfm2-vl-1.6b.json").read_text())
    del data["vision_config"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = import_hf(tmp_path / "config.json")
    assert (spec.vision.num_layers, spec.vision.hidden_size) == (12, 768)
    assert "Siglip2VisionConfig's defaults: vision_config.hidden_size 768, vision_config.num_hidden_layers 12" in spec.notes


def test_a_converted_mamba_config_is_read_by_its_transformers_fields(tmp_path):
    """state-spaces/mamba-1.4b-hf keeps mamba_ssm's d_model / n_layer / ssm_cfg beside the fields MambaConfig (and the
    engines) read: those decide. With its state_size set to 32 the state is 48 layers x 4096 x 32 x 4 bytes (the
    config's float32)."""
    data = json.loads((EXTRA / "mamba-1.4b-hf.json").read_text())
    assert {"d_model", "n_layer", "ssm_cfg", "hidden_size"} <= data.keys()
    spec = import_hf(EXTRA / "mamba-1.4b-hf.json")
    assert "transformers MambaConfig" in spec.notes and spec.mamba1.state_size == 16
    data["state_size"] = 32
    (tmp_path / "config.json").write_text(json.dumps(data))
    r = estimate(import_hf(tmp_path / "config.json"), ParallelLayout(), RuntimeConfig(), resolve_dtypes(spec)).ranks[0]
    assert r.ssm_bytes_per_slot == 48 * 4096 * 32 * 4


@pytest.mark.parametrize("stem", ["mamba-130m-mamba-ssm", "mamba2-130m-mamba-ssm"])
def test_a_mamba_ssm_config_is_marked_as_one_autoconfig_does_not_read(stem):
    spec = import_hf(EXTRA / f"{stem}.json")
    assert (spec.config_format, spec.architecture) == ("mamba_ssm", None)
    assert import_hf(EXTRA / "mamba-1.4b-hf.json").config_format is None  # the mamba_ssm keys beside transformers' own
