"""Weights as checkpoints store them: bytes per parameter of each format by hand, a small quantized model
weighed by hand, and the `quantization_config` readers on real configs and on broken ones."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction

import pytest
from msgspec.structs import replace
from paths import HF_CONFIGS

from mcache.core.errors import SpecError
from mcache.core.hf import import_hf
from mcache.core.load import parse_spec
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext, resolve_dtypes
from mcache.core.sizing.vision import tower_params
from mcache.core.sizing.weights import format_bytes, rank_weight_bytes, stored_bytes
from mcache.core.spec.dump import spec_to_yaml
from mcache.core.spec.model import Quantization

TINY = """
name: tiny-q
source: hand-made
dtype: bfloat16
hidden_size: 64
vocab_size: 128
num_layers: 2
layers: {types: [attention+mlp, attention+mlp]}
attention: {num_heads: 4, num_kv_heads: 2, head_dim: 16}
mlp: {intermediate_size: 128}
"""


def tiny(quantization: str = "") -> str:
    return TINY + (f"quantization: {quantization}\n" if quantization else "")


@pytest.mark.parametrize(("fmt", "group", "zeros", "expected"), [
    ("nvfp4", None, False, Fraction(1, 2) + Fraction(1, 16)),  # e2m1 values + an fp8 scale per 16
    ("mxfp4", None, False, Fraction(1, 2) + Fraction(1, 32)),  # e2m1 values + an e8m0 scale per 32
    ("fp8", None, False, Fraction(1)),  # one per-tensor scale: nothing per parameter
    ("fp8_block", None, False, 1 + Fraction(4, 128 * 128)),  # an fp32 scale per 128 x 128 block
    ("int4", 128, False, Fraction(1, 2) + Fraction(2, 128)),  # a 16-bit scale per 128
    ("int4", 32, True, Fraction(1, 2) + Fraction(2, 32) + Fraction(1, 64)),  # and a 4-bit zero point per 32
    ("int8", None, False, Fraction(1)),
    ("nf4", None, False, Fraction(1, 2) + Fraction(4, 64)),  # bitsandbytes 4-bit codes + an fp32 absmax per 64
])
def test_bytes_per_parameter_by_hand(fmt, group, zeros, expected):
    assert format_bytes(Quantization(format=fmt, group_size=group, zero_points=zeros), fmt) == expected


def test_bitsandbytes_double_quant_by_hand():
    """The absmax of each 64 in 8 bits, and an fp32 scale per 256 of those: 1/2 + 1/64 + 4/(64 x 256) bytes."""
    q = Quantization(format="nf4", group_size=64, double_quant=True)
    assert format_bytes(q, "nf4") == Fraction(1, 2) + Fraction(1, 64) + Fraction(4, 16384)


def test_a_small_quantized_model_by_hand():
    """Per layer: attention q 64x64, k and v 64x32, o 64x64 = 12,288; gated MLP 3 x 64 x 128 = 24,576; two
    norms of 64. Embeddings 128 x 64 = 8,192, the untied head 8,192, the final norm 64."""
    plain = parse_spec(tiny(), "t.yaml")
    assert stored_bytes(plain) == 2 * (2 * (12288 + 24576 + 128) + 8192 + 8192 + 64)
    spec = parse_spec(tiny("{format: nvfp4, unquantized: [lm_head, attention@1]}"), "t.yaml")
    nvfp4 = Fraction(9, 16)
    layer0 = (12288 + 24576) * nvfp4 + 128 * 2  # the norms stay in bf16
    layer1 = 12288 * 2 + 24576 * nvfp4 + 128 * 2
    assert stored_bytes(spec) == layer0 + layer1 + (8192 + 64) * 2 + 8192 * 2
    mixed = parse_spec(tiny("{format: nvfp4, other_formats: {fp8: [mlp]}}"), "t.yaml")
    assert stored_bytes(mixed) == 2 * (12288 * nvfp4 + 24576 + 128 * 2) + (8192 + 64) * 2 + 8192 * nvfp4


def test_ranks_under_tp_and_pp_load_their_share_of_the_stored_bytes():
    spec = parse_spec(tiny("{format: nvfp4, unquantized: [lm_head]}"), "t.yaml")
    dtypes = resolve_dtypes(spec)

    def rank(tp: int, pp: int, stage: int) -> int:
        return rank_weight_bytes(RankContext.build(spec, ParallelLayout(tp=tp, pp=pp), RuntimeConfig(), dtypes, stage))

    layer = (12288 + 24576) * Fraction(9, 16) + 128 * 2
    assert rank(1, 2, 0) == layer + 8192 * 2  # the first stage: a layer and the embeddings
    assert rank(1, 2, 1) == layer + 8192 * 2 + 64 * 2  # the last: a layer, the (bf16) head and the final norm (hidden 64)
    # TP 2: half of everything, and the whole final norm on each rank
    assert rank(2, 1, 0) == (2 * (12288 + 24576) * Fraction(9, 16) + 2 * 128 * 2 + 8192 * 2 + 8192 * 2) // 2 + 64 * 2


@pytest.mark.parametrize(("block", "field"), [
    ("{format: nvfp5}", "quantization.format"),
    ("{format: nvfp4, unquantized: [gdn]}", "quantization.unquantized[0]"),
    ("{format: nvfp4, unquantized: ['attention@9']}", "quantization.unquantized[0]"),
    ("{format: nvfp4, unquantized: ['attention@x']}", "quantization.unquantized[0]"),
    ("{format: nvfp4, unquantized: ['attention@']}", "quantization.unquantized[0]"),  # '@' and no layers: not every layer
    ("{format: nvfp4, other_formats: {fp4: [mlp]}}", "quantization.other_formats"),
    ("{format: nvfp4, group_size: 0}", "quantization.group_size"),
])
def test_a_bad_quantization_block_names_its_field(block, field):
    with pytest.raises(SpecError) as err:
        parse_spec(tiny(block), "t.yaml")
    assert err.value.field == field and err.value.line is not None


def test_modelopt_nvfp4_in_the_config_and_beside_it(tmp_path):
    """Qwen3.6-27B NVFP4 (ModelOpt): everything but the conv1d layers (not linear layers here) and the vision
    tower is NVFP4, the head included (vLLM modelopt.py quantizes ParallelLMHead unless excluded)."""
    folder = HF_CONFIGS / "centml-qwen3.6-27b-nvfp4"
    spec = import_hf(folder)
    q = spec.quantization
    assert (q.format, q.group_size, q.unquantized, q.other_formats) == ("nvfp4", 16, [], {})
    assert "modelopt NVFP4" in spec.notes
    # the same checkpoint with its settings only in hf_quant_config.json
    data = json.loads((folder / "config.json").read_text())
    del data["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    shutil.copy(folder / "hf_quant_config.json", tmp_path)
    beside = import_hf(tmp_path)
    assert beside.quantization.format == "nvfp4" and stored_bytes(beside) == stored_bytes(spec)
    assert "hf_quant_config.json" in beside.notes


def test_compressed_tensors_int4_ignores_the_linear_attention_and_the_head():
    spec = import_hf(HF_CONFIGS / "redhatai-qwen3.5-9b-w4a16.json")
    q = spec.quantization
    assert (q.format, q.group_size, q.zero_points) == ("int4", 128, False)
    assert q.unquantized == ["gdn.gate_proj", "gdn.proj", "lm_head", "mtp"]


def test_compressed_tensors_mxfp4_quantizes_the_routed_experts_of_kimi_k3():
    q = import_hf(HF_CONFIGS / "kimi-k3.json").quantization
    assert (q.format, q.group_size) == ("mxfp4", 32)
    assert q.unquantized == ["kda.proj", "lm_head", "mla.proj", "mlp.proj", "moe.shared_experts"]


def test_fp8_block_leaves_the_head_and_the_listed_modules():
    """Qwen3-Next FP8 lists in_proj_ba (vLLM qwen_gdn_linear_attn.py: no block-FP8 for it) and the MTP layers."""
    q = import_hf(HF_CONFIGS / "qwen3-next-80b-a3b-instruct-fp8.json").quantization
    assert q.format == "fp8_block" and q.unquantized == ["gdn.gate_proj", "lm_head", "mtp"]


BASE = {"model_type": "nemotron_h", "hidden_size": 256, "num_hidden_layers": 4, "hybrid_override_pattern": "M*-E",
        "vocab_size": 1000, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "mamba_num_heads": 8,
        "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 1, "intermediate_size": 512, "n_routed_experts": 4,
        "moe_intermediate_size": 128, "n_shared_experts": 1, "moe_shared_expert_intermediate_size": 128,
        "torch_dtype": "bfloat16"}


def quantized(tmp_path, qc) -> Quantization | None:
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "quantization_config": qc}))
    return import_hf(tmp_path / "config.json").quantization


def test_modelopt_export_form_in_the_config_reads_as_the_flat_form(tmp_path):
    """A config.json `quantization_config` copied from hf_quant_config.json (ModelOpt's producer and its settings under
    `quantization`, no quant_method: vLLM sets quant_method modelopt for it) quantizes as the flat form does; a damaged
    one names the nested field."""
    settings = {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}
    flat = quantized(tmp_path, {"quant_method": "modelopt", **settings})
    nested = quantized(tmp_path, {"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": settings})
    assert (nested.format, nested.kv_cache, nested.unquantized) == ("fp8", "fp8", ["lm_head"])
    assert nested.source.startswith("quantization_config.quantization: modelopt FP8")
    assert replace(nested, source=flat.source) == flat
    # another producer, or no quant_algo, is not a ModelOpt checkpoint (vLLM leaves the method unset): not sized
    for qc in ({"producer": {"name": "other"}, "quantization": settings}, {"producer": {"name": "modelopt"},
                                                                         "quantization": {"kv_cache_quant_algo": "FP8"}}):
        assert quantized(tmp_path, qc) is None
    with pytest.raises(SpecError) as err:
        quantized(tmp_path, {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP9"}})
    assert err.value.field == "quantization_config.quantization.quant_algo"


def test_modelopt_0_30_flat_export_with_a_string_kv_scheme(tmp_path):
    """ModelOpt 0.30's config.json form (nvidia/Nemotron-H-47B-Reasoning-128K-FP8, as published): no quant_method, the
    producer beside a flat quant_algo FP8, compressed-tensors-like groups, an `ignore` list, and `kv_cache_scheme` the
    string "FP8". It was refused (kv_cache_scheme: expected an object); it reads as ModelOpt FP8 with an fp8 KV cache."""
    qc = {"config_groups": {"group_0": {"input_activations": {"dynamic": False, "num_bits": 8, "type": "float"},
                                        "weights": {"dynamic": False, "num_bits": 8, "type": "float"}}},
          "ignore": ["model.layers.backbone.layers.0.mixer.conv1d", "lm_head"], "quant_algo": "FP8",
          "kv_cache_scheme": "FP8", "producer": {"name": "modelopt", "version": "0.30.1.dev44+gd6269109"}}
    q = quantized(tmp_path, qc)
    assert (q.method, q.algo, q.format, q.kv_cache, q.unquantized) == ("modelopt", "FP8", "fp8", "fp8", ["lm_head"])
    assert q.source.startswith("quantization_config: modelopt FP8, 2 excluded module patterns")


def test_a_modelopt_exclusion_names_modules_as_vllm_matches_them(tmp_path):
    """vLLM's is_layer_excluded (0.34): exact, substring or wildcard. nvidia/Nemotron-H-47B-Reasoning-128K-FP8 excludes
    `model.layers.lm_head`, which does not match the head's name `lm_head`: vLLM gives the head its FP8 method, and
    mcache weighs it so (the checkpoint's own copy is bf16). A MIXED_PRECISION map quantizes what it names, the head
    included, and a module inside a named one."""
    q = quantized(tmp_path, {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["model.layers.lm_head"]})
    assert (q.format, q.unquantized) == ("fp8", [])
    q = quantized(tmp_path, {"quant_method": "modelopt", "quant_algo": "FP8", "exclude_modules": ["lm_head*"]})
    assert q.unquantized == ["lm_head"]
    layers = {"lm_head": {"quant_algo": "FP8"}, "backbone.layers.3.mixer": {"quant_algo": "NVFP4"}}
    q = quantized(tmp_path, {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers})
    assert q.other_formats == {"fp8": ["lm_head"]} and "moe.experts" not in q.unquantized


def test_compressed_tensors_groups_each_with_its_targets(tmp_path):
    """Two groups: NVFP4 for the routed experts by regex, FP8 for every other Linear; the head ignored."""
    q = quantized(tmp_path, {"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {
        "experts": {"targets": [r"re:.*\.experts\..*"], "weights": {"num_bits": 4, "type": "float", "group_size": 16}},
        "rest": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}})
    assert q.format == "fp8" and q.other_formats == {"nvfp4": ["moe.experts"]} and q.unquantized == ["lm_head"]


def test_modelopt_mixed_precision_by_module(tmp_path):
    layers = {f"backbone.layers.{i}.mixer.{p}": {"quant_algo": "FP8"} for i in (0, 1) for p in ("in_proj", "q_proj")}
    layers["backbone.layers.3.mixer.experts"] = {"quant_algo": "NVFP4"}
    q = quantized(tmp_path, {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": layers})
    assert q.format == "nvfp4"
    assert q.other_formats == {"fp8": ["attention.proj", "mamba2.proj"]}
    assert q.unquantized == ["lm_head", "mlp.proj", "moe.shared_experts"]


def test_gptq_quantizes_the_head_only_when_it_says_so(tmp_path):
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 64}
    assert quantized(tmp_path, gptq).unquantized == ["lm_head"]
    q = quantized(tmp_path, {**gptq, "lm_head": True})
    assert (q.format, q.group_size, q.zero_points, q.unquantized) == ("int4", 64, True, [])


def test_bitsandbytes_checkpoints(tmp_path):
    """tiiuae/falcon-mamba-7b-instruct-4bit's quantization_config (bitsandbytes fp4, no double quant, no skip list):
    every linear layer in 4 bits but the output head; a skip list replaces the head's default (module names that hold
    one of its entries), double quant is recorded, and 8 bits is int8."""
    qc = {"_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "float32",
          "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "fp4", "bnb_4bit_use_double_quant": False,
          "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False, "llm_int8_skip_modules": None,
          "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False, "quant_method": "bitsandbytes"}
    q = quantized(tmp_path, qc)
    assert (q.format, q.group_size, q.double_quant, q.unquantized) == ("nf4", 64, False, ["lm_head"])
    # layer 1 is the attention layer of BASE's "M*-E"; the head is quantized once a skip list leaves it out; a key
    # skips what lies under it, not a longer name it starts ("up" is not "up_proj")
    q = quantized(tmp_path, {**qc, "bnb_4bit_use_double_quant": True, "llm_int8_skip_modules": ["model.layers.1", "up"]})
    assert q.double_quant and q.unquantized == ["attention.proj"]
    assert quantized(tmp_path, {**qc, "load_in_4bit": False, "load_in_8bit": True}).format == "int8"
    # the notes name the codes the `nf4` format's bytes stand for (fp4 here, and BitsAndBytesConfig's default)
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "quantization_config": qc}))
    assert "bitsandbytes 4-bit (fp4 codes, the nf4 format's bytes)" in import_hf(tmp_path / "config.json").notes


def _auto_round_checkpoint(tmp_path, **changes):
    """Qwen3.5-27B with an AutoRound int4 quantization_config of the form its public exports write (auto_round:auto_gptq
    packing, groups of 128, the linear attention's small b / a gates and the MTP norms kept in 16 bits by
    `extra_config`, named under model.language_model)."""
    data = json.loads((HF_CONFIGS / "qwen3.5-27b.json").read_text())
    extra = {f"model.language_model.layers.{i}.linear_attn.in_proj_{g}": {"bits": 16, "data_type": "float"}
             for i in range(64) for g in "ab" if i % 4 != 3}
    extra["mtp.norm"] = {"bits": 16, "data_type": "float"}
    data["quantization_config"] = {"autoround_version": "0.9.0", "bits": 4, "data_type": "int", "extra_config": extra,
                                   "group_size": 128, "iters": 0, "packing_format": "auto_round:auto_gptq",
                                   "quant_method": "auto-round", "sym": True, **changes}
    (tmp_path / "config.json").write_text(json.dumps(data))
    return import_hf(tmp_path / "config.json")


def test_auto_round_int4_as_vllm_reads_it(tmp_path):
    """Every linear layer in int4 (groups of 128, GPTQ's packed zero points) but the head and the modules extra_config
    keeps in 16 bits; MTP quantized unless `block_name_to_quantize` leaves it out; a pattern key is searched; 8 bits
    for some modules are int8 beside the int4."""
    q = _auto_round_checkpoint(tmp_path).quantization
    assert (q.method, q.format, q.group_size, q.zero_points) == ("auto-round", "int4", 128, True)
    assert q.unquantized == ["gdn.gate_proj", "lm_head"]
    q = _auto_round_checkpoint(tmp_path, block_name_to_quantize="model.language_model.layers").quantization
    assert q.unquantized == ["gdn.gate_proj", "lm_head", "mtp"]
    q = _auto_round_checkpoint(tmp_path, extra_config={r".*self_attn\..*": {"bits": 8}}).quantization
    assert q.unquantized == ["lm_head"] and q.other_formats == {"int8": ["attention.proj", "mtp"]}  # MTP attention too
    with pytest.raises(SpecError) as err:
        _auto_round_checkpoint(tmp_path, bits=3)
    assert err.value.field == "quantization_config.bits"


def test_an_unknown_method_is_noted_and_weighed_in_the_model_dtype(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "quantization_config": {"quant_method": "bitsandbytes"}}))
    spec = import_hf(tmp_path / "config.json")
    assert spec.quantization is None and "'bitsandbytes' is not one mcache sizes" in spec.notes


@pytest.mark.parametrize(("qc", "field"), [
    ("nvfp4", "quantization_config"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP5"}, "quantization_config.quant_algo"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": "lm_head"},
     "quantization_config.exclude_modules"),
    ({"quant_method": "compressed-tensors", "config_groups": {}}, "quantization_config.config_groups"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 3}}}},
     "quantization_config.config_groups.g.weights"),
    ({"quant_method": "gptq", "bits": 3}, "quantization_config.bits"),
    ({"quant_method": "fp8", "weight_block_size": [0, 0]}, "quantization_config.weight_block_size[0]"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "quantization_config.load_in_8bit"),
])
def test_a_broken_quantization_config_is_one_error(tmp_path, qc, field):
    with pytest.raises(SpecError) as err:
        quantized(tmp_path, qc)
    assert err.value.field == field and "\n" not in str(err.value)


def test_quantization_round_trips_through_yaml():
    spec = import_hf(HF_CONFIGS / "kimi-k3.json")
    again = parse_spec(spec_to_yaml(spec), "dumped.yaml")
    assert again.quantization == spec.quantization and stored_bytes(again) == stored_bytes(spec)


def _modelopt_fp8_kv_checkpoint(tmp_path):
    """Qwen3.6-27B NVFP4 with its settings only in a ModelOpt hf_quant_config.json that says kv_cache_quant_algo FP8."""
    folder = HF_CONFIGS / "centml-qwen3.6-27b-nvfp4"
    data = json.loads((folder / "config.json").read_text())
    del data["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(data))
    quant = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                                                                "group_size": 16, "exclude_modules": ["model.visual*"]}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(quant))
    return tmp_path


def test_the_checkpoints_kv_format_is_recorded(tmp_path):
    """compressed-tensors-style kv_cache_scheme (8-bit float) and ModelOpt kv_cache_quant_algo FP8 both say fp8;
    a checkpoint that says nothing leaves it None, and it round-trips through the spec YAML."""
    ct = import_hf(HF_CONFIGS / "centml-qwen3.6-27b-nvfp4")
    assert ct.quantization.kv_cache == "fp8" and "KV cache stored as fp8" in ct.notes
    assert parse_spec(spec_to_yaml(ct), "x.yaml").quantization.kv_cache == "fp8"
    assert import_hf(_modelopt_fp8_kv_checkpoint(tmp_path)).quantization.kv_cache == "fp8"
    qc = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    (tmp_path / "plain").mkdir()
    assert quantized(tmp_path / "plain", qc).kv_cache is None


@pytest.mark.parametrize("engine,flag,value", [("vllm", "kv_cache_dtype", "fp8_e4m3"),
                                               ("sglang", "kv_cache_dtype", "fp8_e4m3"),
                                               ("trtllm", "kv_cache_dtype", "fp8")])
@pytest.mark.parametrize("form", ["kv_cache_scheme", "hf_quant_config.json"])
def test_engines_size_fp8_kv_for_a_checkpoint_that_stores_it(tmp_path, engine, flag, value, form):
    """--kv-cache-dtype auto takes the checkpoint's fp8 KV in each engine; a given dtype still wins; the neutral
    model keeps the model dtype and says why."""
    from mcache.core.engines import run_engine
    from mcache.core.engines.common import EngineInputs
    from mcache.core.sizing.rank import dtype_sources

    folder = HF_CONFIGS / "centml-qwen3.6-27b-nvfp4" if form == "kv_cache_scheme" else _modelopt_fp8_kv_checkpoint(tmp_path)
    spec = import_hf(folder)
    auto = run_engine(engine, EngineInputs(spec, ParallelLayout(tp=1)))
    assert auto.dtypes.kv == "float8_e4m3fn" and auto.settings[flag] == value
    given = run_engine(engine, EngineInputs(spec, ParallelLayout(tp=1), given={flag: "bfloat16" if engine != "trtllm"
                                                                               else "auto"}))
    assert given.dtypes.kv == ("bfloat16" if engine != "trtllm" else "float8_e4m3fn")
    assert resolve_dtypes(spec).kv == "float16"
    assert "the checkpoint stores KV as fp8" in dtype_sources(spec)["kv"]
    assert dtype_sources(spec, kv="fp8")["kv"] == "--kv-dtype"


def test_a_quant_file_counts_only_in_the_checkpoint_folder(tmp_path):
    """Issue 30: a bf16 config.json copied beside another checkpoint's hf_quant_config.json keeps its bf16 weights
    when given as a file (it was 50.89 GiB -> 16.02 GiB without a word) and says why; the folder given as a
    checkpoint takes the file."""
    plain = import_hf(HF_CONFIGS / "qwen3.5-27b.json")
    shutil.copy(HF_CONFIGS / "qwen3.5-27b.json", tmp_path / "config.json")
    shutil.copy(HF_CONFIGS / "centml-qwen3.6-27b-nvfp4" / "hf_quant_config.json", tmp_path)
    lone = import_hf(tmp_path / "config.json")
    assert lone.quantization is None and stored_bytes(lone) == stored_bytes(plain)
    tower = 2 * tower_params(lone.vision)  # the figures count the MTP layer and the text model only
    assert round((stored_bytes(lone, mtp=True) - tower) / 2**30, 2) == 50.89
    assert "hf_quant_config.json beside config.json was not read" in lone.notes and str(tmp_path) in lone.notes
    folder = import_hf(tmp_path)
    assert folder.quantization.format == "nvfp4" and round((stored_bytes(folder, mtp=True) - tower) / 2**30, 2) == 16.02
    assert "was not read" not in folder.notes and "was not read" not in plain.notes
