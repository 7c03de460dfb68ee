"""GLM-5.3-Flash (`glm5_next`): KDA and NoPE MLA with DeepSeek sparse attention's pooled indexer keys and mHC, worked
by hand from the checkpoint's config."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from msgspec.structs import replace
from paths import HF_CONFIGS_INDEXER

from mcache.cli.main import main
from mcache.core.engines import run_engine
from mcache.core.engines.common import EngineInputs
from mcache.core.errors import LayoutError, SpecError
from mcache.core.hf import import_hf
from mcache.core.kinds import KIND_MODULES
from mcache.core.load import load_spec
from mcache.core.numbers import cdiv
from mcache.core.sizing import weights
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext, resolve_dtypes
from mcache.core.spec.model import Layers, layer_kinds

FILE = HF_CONFIGS_INDEXER / "glm-5.3-flash-fp8.json"  # PROVENANCE.md there
CONFIG = json.loads(FILE.read_text())
TEXT = CONFIG["text_config"]
BF16, F32 = 2, 4
GIB = 1 << 30
KEY = 128 + 4  # an indexer key: 128 fp8 values and their float32 scale


@pytest.fixture(scope="module")
def spec():
    return import_hf(FILE)


def _import(tmp_path, **text):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "text_config": {**TEXT, **text}}))
    return import_hf(path)


def test_layers_kda_and_sparse_mla_with_mhc_on_every_layer(spec):
    assert Counter("+".join(k) for k in layer_kinds(spec)) == {
        "kda+mhc+mlp": 3, "kda+mhc+moe": 31, "mla+dsa_indexer+mhc+moe": 11}
    assert [i for i, k in enumerate(layer_kinds(spec)) if "mla" in k] == list(range(3, 45, 4))
    assert spec.mtp.layer == "mla+dsa_indexer+mhc+moe" and spec.mtp.num_layers == 1
    assert (spec.mla.kv_lora_rank, spec.mla.qk_rope_head_dim, spec.mla.q_lora_rank) == (512, 0, 1536)
    p = spec.dsa_indexer
    assert (p.num_heads, p.head_dim, p.q_rank, p.kpool, p.compress) == (32, 128, 1536, 4, True)
    assert (spec.kda.num_heads, spec.kda.head_dim, spec.kda.conv_kernel, spec.mhc.streams) == (64, 128, 4, 4)
    assert (spec.moe.num_experts, spec.moe.top_k, spec.moe.shared_experts) == (288, 8, 1)
    assert spec.architecture == "Glm5NextForConditionalGeneration" and spec.max_model_len == 1048576


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_cache_bytes_by_hand(spec, tp):
    """Per token, whole on every rank: 11 latents of 512 bf16 and 11 indexer keys of 132 B a 4-token pool (33 B a
    token). Per slot: 34 KDA windows of 3 x 64 x 128 / tp channels x 3 bf16 and the 11 indexer tails of 4 raw keys and
    4 gate scores of 128 bf16; 34 float32 states of 64 / tp heads x 128 x 128."""
    r = estimate(spec, ParallelLayout(tp=tp), RuntimeConfig(max_batch=8, max_seq_len=4096), resolve_dtypes(spec)).ranks[0]
    assert r.kv_bytes_per_token == 11 * 512 * BF16 + 11 * KEY // 4 == 11_627
    assert r.conv_bytes_per_slot == 34 * 3 * 64 * 128 // tp * 3 * BF16 + 11 * 4 * 2 * 128 * BF16
    assert r.ssm_bytes_per_slot == 34 * (64 // tp) * 128 * 128 * F32
    keys = next(c for c in r.components if c.decl.key == "dsa_indexer.keys")
    assert (keys.decl.dtype, keys.units, keys.total_bytes) == ("uint8", 8 * 4096, 11 * 8 * 4096 * KEY // 4)


def test_the_mtp_layer_keeps_its_latent_keys_and_tail_while_it_drafts(spec):
    runtime = RuntimeConfig(max_batch=8, max_seq_len=4096, draft_tokens=3, spec_scheme="replay")
    r = estimate(spec, ParallelLayout(), runtime, resolve_dtypes(spec)).ranks[0]
    mtp = {c.decl.name: c.decl.bytes_per_unit for c in r.components if c.decl.kind == "mtp"}
    assert mtp == {"kv": 512 * BF16, "keys": KEY // 4, "tail": 4 * 2 * 128 * BF16}
    assert r.kv_bytes_per_token == 12 * 512 * BF16 + 12 * KEY // 4


def test_new_weights_by_hand(spec):
    """The indexer: wq_b 1536 -> 32 x 128, wk 4096 -> 128, weights_proj 4096 -> 32; its LayerNorm (128 x 2), the
    pool's position embedding 4 x 128 and gate 128 x 4096. mHC: two a layer, each 24 mixes of 4 x 4096 inputs with
    their 24 biases and 3 scales."""
    assert KIND_MODULES["dsa_indexer"].weights(spec, spec.dsa_indexer) == {
        "proj": 1536 * 32 * 128 + 4096 * 128 + 4096 * 32, "other": 256 + 4 * 128 + 128 * 4096}
    assert KIND_MODULES["mhc"].weights(spec, spec.mhc) == {"other": 2 * (24 * 4 * 4096 + 24 + 3)}
    per_layer = {k: sum(KIND_MODULES[k].weights(spec, getattr(spec, k)).values()) for k in ("dsa_indexer", "mhc")}
    types = ["+".join(k for k in kinds if k not in ("dsa_indexer", "mhc")) for kinds in layer_kinds(spec)]
    plain = replace(spec, layers=Layers(types=types))
    assert weights.total_params(spec) - weights.total_params(plain) == 11 * per_layer["dsa_indexer"] + \
        45 * per_layer["mhc"]


def test_indexer_and_mhc_weights_are_whole_on_every_rank(spec):
    """vLLM builds the indexer's projections replicated (wq_b a ReplicatedLinear, wk and weights_proj with disable_tp)
    and mHC's weights are plain parameters: TP 8 holds them whole while it splits the attention's."""
    def unit(tp, kind, part):
        ctx = RankContext.build(spec, ParallelLayout(tp=tp), RuntimeConfig(max_batch=1, max_seq_len=64),
                             resolve_dtypes(spec), 0)
        return weights.shard_ways(ctx, kind, part)
    assert [unit(8, "dsa_indexer", "proj"), unit(8, "mhc", "other"), unit(8, "mla", "proj")] == [1, 1, 8]


def test_a_shared_indexer_layer_has_no_keys(tmp_path):
    """indexer_types `shared` reuses the previous full layer's selection (transformers Glm5NextTextAttention builds no
    indexer). Without indexer_types, transformers' rule: an `index_topk_pattern` (F / S a layer), else full where
    `max(i - offset + 1, 0) % index_topk_freq == 0` (offset 2): at freq 4 layers 0, 1, 5, 9, ..., no MLA layer (3, 7,
    ... are 2 past a multiple of 4)."""
    shared = ["shared" if i == 7 else "full" for i in range(45)]
    spec = _import(tmp_path, indexer_types=shared)
    assert layer_kinds(spec)[7] == ("mla", "mhc", "moe") and layer_kinds(spec)[11] == ("mla", "dsa_indexer", "mhc", "moe")
    text = {k: v for k, v in TEXT.items() if k != "indexer_types"}
    path = tmp_path / "freq.json"
    path.write_text(json.dumps({**CONFIG, "text_config": {**text, "index_topk_freq": 4}}))
    assert not any("dsa_indexer" in k for k in layer_kinds(import_hf(path)))
    path.write_text(json.dumps({**CONFIG, "text_config": {**text, "index_topk_pattern": "SSSF" * 11 + "S"}}))
    assert sum("dsa_indexer" in k for k in layer_kinds(import_hf(path))) == 11


def test_without_layer_types_every_fourth_layer_is_mla(tmp_path):
    text = {k: v for k, v in TEXT.items() if k not in ("layer_types", "mlp_layer_types")}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "text_config": text}))
    kinds = layer_kinds(import_hf(path))
    assert [i for i, k in enumerate(kinds) if "mla" in k] == list(range(3, 45, 4))
    assert [k[-1] for k in kinds[:4]] == ["mlp", "mlp", "mlp", "moe"]


@pytest.mark.parametrize(("text", "says"), [
    ({"linear_attn_config": {**TEXT["linear_attn_config"], "kda_layers": list(range(34))}},
     r"text_config\.linear_attn_config\.kda_layers: the layers layer_types makes KDA \(0-based; vLLM reads layer_types"),
    ({"indexer_types": ["full"] * 44 + ["half"]}, r"text_config\.indexer_types\[44\]: one of full, shared"),
    ({"indexer_types": ["full"] * 3}, r"text_config\.indexer_types: 45 entries"),
    ({"mlp_layer_types": ["dense"] * 44 + ["moe"]}, r"text_config\.mlp_layer_types\[44\]: one of dense, sparse"),
    ({"qk_rope_head_dim": -1}, r"text_config\.qk_rope_head_dim: an integer >= 0"),
])
def test_bad_fields_are_one_line(tmp_path, text, says):
    with pytest.raises(SpecError, match=says):
        _import(tmp_path, **text)


@pytest.mark.parametrize(("field", "value", "says"), [
    ("kpool", 16, r"dsa_indexer\.kpool: a divisor of a key's 132 bytes \(128 fp8 values and their scales\), got 16"),
    ("head_dim", 96, r"dsa_indexer\.head_dim: a multiple of 128 \(a float32 scale per 128 fp8 values\), got 96"),
])
def test_an_indexer_key_mcache_cannot_lay_out_is_refused(spec, field, value, says):
    odd = replace(spec, dsa_indexer=replace(spec.dsa_indexer, **{field: value}))
    with pytest.raises(LayoutError, match=says):
        estimate(odd, ParallelLayout(), RuntimeConfig(max_batch=1, max_seq_len=64), resolve_dtypes(odd))


def _sglang(spec, version: str, gpu: str = "h200", **given):
    stage = run_engine("sglang", EngineInputs(spec, ParallelLayout(), *lookup(gpu), None,
                                              {"weights_bytes": 30 << 30, **given}), version)
    return stage, stage.stages[0]


@pytest.mark.parametrize(("version", "cell", "page"), [
    ("0.5.23", 11 * (512 * BF16 + 33), 256),  # from 0.5.22 a token's share of a 132-byte key, pages of 64 keys
    ("0.5.21", 11 * (512 * BF16 + 132), 64),  # before, a whole key a token, pages of 64 tokens
])
def test_sglang_cell_and_page_by_hand(spec, version, cell, page):
    """SGLang sizes GLM-5.3-Flash on an H200 (sm90) with a bf16 latent (DeepSeek DSA's default below SM 10) and its
    indexer's fp8 keys in the cell, over the 11 MLA layers and whatever the TP; pages of 64 x index_kpool (64 before
    0.5.22), whatever --page-size says."""
    run, stage = _sglang(spec, version, page_size=1)
    assert stage.fields["cell_size_bytes"] == cell and run.settings["page_size"] == page
    assert run.settings["kv_cache_dtype"] == "bfloat16" and "DeepSeek DSA's on SM9" in run.sources["kv_cache_dtype"]
    assert stage.fields["max_total_num_tokens"] % page == 0


@pytest.mark.parametrize(("version", "cell"), [
    ("0.5.23", 11 * (1024 + 33) + 1024 + 33),  # the MTP layer's latent share and its own keys
    ("0.5.21", 11 * (1024 + 132) + 1024 + 132),  # the same form (DSA's) where other models scale the cell in floats
])
def test_sglang_charges_the_mtp_layers_latent_and_keys(spec, version, cell):
    assert _sglang(spec, version, speculative_num_steps=3)[1].fields["cell_size_bytes"] == cell


@pytest.mark.parametrize(("gpu", "given", "latent", "dtype"), [
    ("b200", {}, 512, "fp8_e4m3"),  # SM 10: fp8 by default, in the raw layout of the trtllm backends SGLang picks
    ("h200", {"kv_cache_dtype": "fp8_e4m3"}, 512 + 4 * 4, "fp8_e4m3"),  # sm90's flashmla: a float32 scale per 128
])
def test_sglang_fp8_latent_layouts(spec, gpu, given, latent, dtype):
    run, stage = _sglang(spec, "0.5.23", gpu, **given)
    assert run.settings["kv_cache_dtype"] == dtype and stage.fields["cell_size_bytes"] == 11 * (latent + 33)


def test_sglang_on_rocm_pages_of_one_token_which_pooled_keys_refuse_from_0_5_22(spec):
    """ROCm without aiter's preshuffle path: pages of 1, which DSATokenToKVPool refuses from 0.5.22 when a key pools
    four tokens (after the state pool is built); 0.5.21's pool takes them (a key a token)."""
    stage = _sglang(spec, "0.5.23", "mi300x")[1]
    assert stage.startup_error.startswith("page_size 1 must be a multiple of index_kpool 4 (SGLang's page for DeepSeek")
    run, stage = _sglang(spec, "0.5.21", "mi300x")
    assert run.settings["page_size"] == 1 and stage.startup_error is None and stage.fields["max_total_num_tokens"] > 0


def test_sglang_takes_only_bf16_or_fp8_e4m3_for_dsa(spec):
    with pytest.raises(LayoutError, match=r"kv_cache_dtype: bfloat16 or fp8_e4m3 for a DeepSeek DSA model"):
        _sglang(spec, "0.5.23", kv_cache_dtype="fp8_e5m2")


def test_sglang_lowers_the_fraction_only_for_a_tower_the_config_names(tmp_path, spec):
    """SGLang's Glm5NextConfig builds no tower without a vision_config (the fraction stays 0.896 on an H200); with one,
    adjust_mem_fraction_for_vlm lowers it by 0.95 (24 layers of 1024: the baseline ViT-L). The 100 MiB multimodal
    cache is reserved either way."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "vision_config": {"depth": 24, "hidden_size": 1024}}))
    assert spec.vision.defaulted and _sglang(spec, "0.5.23")[1].fields["mem_fraction_static"] == 0.896
    assert _sglang(import_hf(path), "0.5.23")[1].fields["mem_fraction_static"] == pytest.approx(0.896 * 0.95)


def _vllm(version: str, tp: int = 8, **given):
    return run_engine("vllm", EngineInputs(load_spec(str(FILE)), ParallelLayout(tp=tp), *lookup("h100"), None,
                                           given), version).stages[0].fields


def test_vllm_reproduces_the_public_h100_boot():
    """tests/data/engine_logs/vllm/glm53-flash-fp8-8xh100-tp8ep-262k-0.31dev.log (vLLM 0.31.1rc1.dev50, TP 8, no prefix
    caching, 262,144 tokens, 28.73 GiB): KDA's page at TP 8 is 3 x 3,072 bf16 + 8 x 128 x 128 float32 = 542,720 B, so
    blocks of 128 x cdiv(542,720, 128 x 1,024) = 640 tokens (20.75% padding); a block holds 11 latents of 640 x 1,024
    B and 11 indexers' 160 keys of 132 B, 7,441,280 B; 4,145 blocks; a request takes 410 + 1 tail + 4 KDA groups x 1
    = 415: 9.99x, 2,618,281 tokens."""
    f = _vllm("0.31.0", max_model_len=262_144, enable_prefix_caching=False, kv_cache_memory_bytes=int(28.73 * GIB),
              max_num_seqs=64, max_num_batched_tokens=8192)
    assert (f["attention_block_size"], f["state_page_bytes"], f["block_bytes"]) == (640, 542_720, 11 * (655_360 + 21_120))
    assert (f["num_blocks"], f["blocks_per_request"], f["kv_cache_tokens"]) == (4145, 410 + 1 + 4, 2_618_281)


@pytest.mark.parametrize(("version", "block_bytes", "per_request"), [
    ("0.31.0", 11 * (655_360 + 21_120), 410 + 1 + 4 * 2),  # align: 2 blocks a KDA group
    ("0.32.0", 221 * 33_792, 410 + 1 + 4 * 3),  # packed: rounded to lcm(1,024, 4,224); FlashKDA's checkpoint block
])
def test_vllm_groups_by_release_with_prefix_caching(version, block_bytes, per_request):
    f = _vllm(version, max_model_len=262_144, kv_cache_memory_bytes=int(28.73 * GIB), max_num_seqs=64)
    assert (f["block_bytes"], f["blocks_per_request"], f["groups"]) == (
        block_bytes, per_request, {"mla": 1, "kda": 4, "dsa_indexer:tail": 1})


def test_vllm_reproduces_the_public_h100_boot_with_an_fp8_kv_cache():
    """tests/data/engine_logs/vllm/glm53-flash-fp8-8xh100-tp8ep-262k-fp8kv-0.30dev.log (a main build before 0.30, TP 8,
    fp8 KV, blocks of 128, prefix caching on, 22.05 GiB): FLASHINFER_MLA_SPARSE_SM90 keeps the latent as E4M3 rows of
    512 B, so blocks of 128 x cdiv(542,720, 128 x 512) = 1,152 tokens (8.68% padding); a block holds 11 latents of
    1,152 x 512 B and 11 indexers' 288 keys of 132 B, 6,906,240 B; 3,428 blocks; a request takes cdiv(262,144, 1,152)
    = 228 + 1 tail + 4 KDA groups x 2 (align) = 237."""
    f = _vllm("0.30.0", max_model_len=262_144, kv_cache_dtype="fp8", block_size=128, max_num_seqs=256,
              kv_cache_memory_bytes=int(22.05 * GIB))
    assert (f["attention_block_size"], f["state_page_bytes"], f["block_bytes"]) == (1152, 542_720, 11 * (589_824 + 38_016))
    assert (f["num_blocks"], f["blocks_per_request"]) == (3428, 228 + 1 + 4 * 2)
    assert f["state_page_padded_bytes"] == 1152 * 512


@pytest.mark.parametrize(("gpu", "version", "given", "says"), [
    ("h100", "0.33.0", {"kv_cache_dtype": "fp8_e5m2"},
     "with a fp8_e5m2 KV cache (its sparse MLA backend takes auto, bfloat16, fp8, fp8_e4m3)"),
    ("rtx-pro-6000", "0.34.0", {"kv_cache_dtype": "bfloat16"},
     "with a bfloat16 KV cache (its sparse MLA backend takes auto, fp8, fp8_e4m3)"),
    ("b200", "0.33.0", {}, "with SM 10 (its sparse MLA backends' layouts there"),
    ("b200", "0.31.0", {}, "with SM 10 (its sparse MLA backends' layouts there"),
    ("mi300x", "0.33.0", {}, "with ROCm (models/glm5next/amd)"),
])
def test_vllm_refuses_what_it_does_not_model_in_one_line(gpu, version, given, says):
    with pytest.raises(LayoutError, match=re.escape(says)):
        run_engine("vllm", EngineInputs(load_spec(str(FILE)), ParallelLayout(), *lookup(gpu), None, given), version)


@pytest.mark.parametrize(("version", "block_bytes", "blocks"), [
    # 0.31: vLLM's own grouping, a block 11 x (2,304 rows of 656 B + 576 keys of 132 B) unrounded
    ("0.31.0", 11 * (2304 * 656 + 576 * 132), 1229),
    # 0.34: rows of 528 B; the packed block rounded to lcm(64 rows, the indexer's stride page: 64 keys) = 33,792 B
    ("0.34.0", 33_792 * cdiv(11 * (2304 * 528 + 576 * 132), 33_792), 1509),
])
def test_vllm_on_sm12_keeps_the_latent_as_fp8_ds_mla_rows(version, block_bytes, blocks):
    """RTX PRO 6000 (SM 12), TP 4, no prefix caching, 20 GiB: FLASHINFER_MLA_SPARSE_SM120 turns `auto` into fp8_ds_mla,
    rows of 656 B (528 for a NoPE latent of 512 from 0.34), while the hybrid alignment counts the latent at a byte a
    value: KDA's page at TP 4, 1,085,440 B, over 256 x 512 B gives blocks of 256 x 9 = 2,304 tokens and the state
    padded to 2,304 x 512 = 1,179,648 B. The blocks are vLLM's own (tests/data/engine_golden/indexer/rtx-pro-6000/)."""
    run = run_engine("vllm", EngineInputs(load_spec(str(FILE)), ParallelLayout(tp=4), *lookup("rtx-pro-6000"), None,
                                          {"max_model_len": 131_072, "enable_prefix_caching": False,
                                           "kv_cache_memory_bytes": 20 * GIB}), version)
    f = run.stages[0].fields
    assert (f["attention_block_size"], f["state_page_bytes"], f["state_page_padded_bytes"]) == (2304, 1_085_440, 1_179_648)
    assert (f["block_bytes"], f["num_blocks"]) == (block_bytes, blocks)
    assert (run.dtypes.kv, run.settings["kv_cache_dtype"]) == ("float8_e4m3fn", "fp8_ds_mla")
    assert "Using fp8_ds_mla KV cache format for FLASHINFER_MLA_SPARSE_SM120 backend." in run.stages[0].log


def test_vllm_refuses_a_dsa_indexer_beside_other_layers(spec):
    """vLLM's GLM-5.3-Flash grouping is what mcache models: a spec of MLA with DSA indexers and no KDA (DeepSeek-V3.2's
    shape) is refused in one line, not sized by it."""
    types = ["+".join(k for k in kinds if k not in ("kda", "mhc")) or "mlp" for kinds in layer_kinds(spec)]
    bare = replace(spec, layers=Layers(types=types), kda=None, name="dsa-only")
    with pytest.raises(LayoutError, match=r"how vLLM sizes Glm5NextForConditionalGeneration with its DSA indexer beside"):
        run_engine("vllm", EngineInputs(bare, ParallelLayout(), *lookup("h200"), None, {}), "0.33.0")


@pytest.mark.parametrize(("engine", "version", "says"), [
    ("trtllm", None, "Unknown architecture for AutoModelForCausalLM: Glm5NextForConditionalGeneration"),
    ("vllm", "0.29.0", "(vLLM 0.29.0; registered from 0.30.0 on)"),
    ("sglang", "0.5.19", "models/glm5_next.py comes with 0.5.20"),
])
def test_engines_refuse_in_one_line(capsys, engine, version, says):
    code = main(["size", str(FILE), "--engine", engine] + (["--engine-version", version] if version else []))
    err = capsys.readouterr().err.strip()
    assert code != 0 and says in err and len(err.splitlines()) == 1


def test_the_table_says_a_key_serves_four_tokens(capsys):
    assert main(["size", str(FILE)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "dsa_indexer" in line and "keys" in line)
    assert "uint8" in row and "132 per 4" in row and "363 B" in row


def test_a_vllm_plan_skips_the_candidates_vllm_s_profile_does_not_model(spec):
    """vLLM's profile sizes GLM-5.3-Flash on one stage below SM 10: a plan's PP candidates are skipped, one line a
    reason with their count, and the rest ranked (bf16 and fp8 KV); a plan of none it models says why in the engine's
    words."""
    from mcache.core.plan import Axes, catalogue_gpu, sweep

    axes = Axes(gpus=(catalogue_gpu("h200"),), contexts=(32768,), tps=(4, 8), pps=(1, 2))
    plan = sweep(spec, "glm-5.3-flash", "vllm", axes, 64)
    assert {c.kv_dtype for c in plan.candidates} == {"bfloat16", "float8_e4m3fn"} and plan.best.pp == 1
    assert [line.split(":")[0] for line in plan.skipped] == ["4 candidates"]
    assert "with pipeline parallelism" in plan.skipped[0]
    with pytest.raises(LayoutError, match=r"with SM 10 \(its sparse MLA backends. layouts there"):
        sweep(spec, "glm-5.3-flash", "vllm", Axes(gpus=(catalogue_gpu("b200"),), contexts=(32768,), tps=(4,), pps=(1,),
                                                  kv_dtypes=("fp8",)), 64)


@pytest.mark.parametrize(("engine", "gpu"), [("vllm", "rtx-pro-6000"), ("sglang", "b200")])
def test_a_plan_sizes_a_deployment_once_where_the_engine_keeps_both_kv_dtypes_alike(spec, engine, gpu):
    """vLLM keeps `auto` as fp8_ds_mla on SM 12, SGLang's DSA defaults to fp8 from SM 10: the bf16 and fp8 candidates
    are one deployment, planned once (the default's, with the fewer settings)."""
    from mcache.core.plan import Axes, catalogue_gpu, sweep

    plan = sweep(spec, "glm-5.3-flash", engine, Axes(gpus=(catalogue_gpu(gpu),), contexts=(32768,), tps=(8,), pps=(1,)), 8)
    assert [c.kv_dtype for c in plan.candidates] == ["float8_e4m3fn"]
    assert "--kv-cache-dtype" not in plan.candidates[0].settings


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_dsa_indexer_beside_gqa_attention_is_refused_in_one_line(spec, engine):
    """Both engines keep DSA keys beside MLA latents (vLLM's GLM grouping, SGLang's DSATokenToKVPool): a hand-written
    spec whose indexer sits on a GQA attention layer is refused, not sized by rules that are not its."""
    from mcache.core.spec.model import Attention

    types = ["+".join("attention" if k == "mla" else k for k in kinds) for kinds in layer_kinds(spec)]
    gqa = replace(spec, layers=Layers(types=types), attention=Attention(num_heads=64, num_kv_heads=8, head_dim=128),
                  mla=None, mtp=None, name="dsa-gqa")
    with pytest.raises(LayoutError, match="engine: .*(other layers than MLA and KDA alone|other attention layers)"):
        run_engine(engine, EngineInputs(gqa, ParallelLayout(), *lookup("h200"), None, {}), "0.33.0" if engine == "vllm"
                   else "0.5.23")
