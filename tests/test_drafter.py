"""DFlash drafters (`--draft-model`): their configs read as vLLM builds the drafter, their layers' KV and weights in
the neutral model (hand-computed), vLLM's rules for them (the golden tables of tests/data/engine_golden/drafters, made
by scripts/oracles/vllm.py --drafters), the other engines' caveat, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_util import one_line, size_json
from msgspec.structs import replace
from oracle_util import load_oracle
from paths import HERE, HF_CONFIGS

from mcache.cli.main import main
from mcache.core.engines import run_engine
from mcache.core.engines.common import EngineInputs
from mcache.core.errors import LayoutError, SpecError
from mcache.core.hf.drafter import read_drafter
from mcache.core.kinds.base import CacheDtypes
from mcache.core.load import load_spec, parse_spec, with_drafter
from mcache.core.sizing import drafter
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.gpus import find_gpu
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig

DRAFTERS = HERE / "data" / "hf_configs_drafters"
QWEN35_27B = str(HF_CONFIGS / "qwen3.5-27b.json")
Q35, Q36, Q38 = (str(DRAFTERS / n) for n in ("qwen3.5-27b-dflash.json", "qwen3.6-27b-dflash.json",
                                             "qwen3.8-27b-dflash2.json"))
BF16 = CacheDtypes(model="bfloat16", kv="bfloat16", conv="bfloat16", ssm="float32")
# One layer of the Qwen3.6-27B drafter: q 5120 x 32 x 128, k and v 5120 x 8 x 128 each, o 32 x 128 x 5120, a gated MLP
# of 3 x 5120 x 17408; two RMSNorms of 5120 and q/k norms of 128; the fc reads 5 target layers of 5120
LAYER = 5120 * 4096 + 2 * 5120 * 1024 + 4096 * 5120 + 3 * 5120 * 17408  # 319,815,680
NORMS = 2 * 5120 + 2 * 128
FC = 5 * 5120 * 5120
DRAFTER_PARAMS = 5 * (LAYER + NORMS) + FC + 2 * 5120  # 1,730,213,120


def _write(tmp_path: Path, base: str, **changes) -> str:
    cfg = json.loads(Path(base).read_text())
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


# --- the config ---------------------------------------------------------------------------------------------------

def test_a_dflash_config_reads_as_vllm_builds_the_drafter():
    d = read_drafter(Q36)
    assert (d.architecture, d.num_layers, d.hidden_size, d.intermediate_size, d.target_layers, d.fc) == (
        "DFlashDraftModel", 5, 5120, 17408, 5, True)
    assert (d.attention.num_heads, d.attention.num_kv_heads, d.attention.head_dim) == (32, 8, 128)
    assert drafter.windows(d) == [2048, 2048, 2048, 2048, None]
    assert drafter.windows(d, honoured=False) == [None] * 5  # vLLM before 0.27: every layer full attention
    assert drafter.windows(read_drafter(Q35)) == [None] * 5
    d2 = read_drafter(Q38)
    assert (d2.architecture, drafter.windows(d2)) == ("DFlash2DraftModel", [2048] * 5)


def test_a_qwen3_drafter_keeps_its_window_only_with_use_sliding_window(tmp_path):
    # transformers' Qwen3Config sets sliding_window to None unless use_sliding_window: vLLM then finds no window
    d = read_drafter(_write(tmp_path, Q36, use_sliding_window=None))
    assert d.sliding_window is None and drafter.windows(d) == [None] * 5 and drafter.windowed(d) == [True] * 4 + [False]


@pytest.mark.parametrize(("changes", "windows"), [
    ({"max_window_layers": 2}, [None, None, 2048, 2048, 2048]),  # Qwen3Config: windowed from max_window_layers
    ({}, [None] * 5),  # max_window_layers defaults to 28, past the drafter's five layers
    ({"max_window_layers": 2, "use_sliding_window": False}, [None] * 5),  # no window kept, none windowed
])
def test_a_qwen3_drafter_without_layer_types_gets_its_config_class_list(tmp_path, changes, windows):
    d = read_drafter(_write(tmp_path, Q36, layer_types=None, **changes))
    assert drafter.windows(d) == windows
    assert len(d.layer_types) == 5


@pytest.mark.parametrize(("layer_types", "dflash", "windowed"), [
    (None, {"use_swa": True}, [True, True]),  # no types: use_swa windows every layer
    (None, {}, [False, False]),
    (["full_attention", "full_attention"], {"use_swa": True}, [True, True]),  # use_swa over an all-full list
    (["sliding_attention", "full_attention"], {"use_swa": True}, [True, False]),  # the list when it names a window
    (["sliding_attention", "full_attention"], {}, [True, False]),
])
def test_which_layers_are_windowed_follows_vllm(tmp_path, layer_types, dflash, windowed):
    path = _write(tmp_path, Q36, num_hidden_layers=2, layer_types=layer_types,
                  dflash_config={"target_layer_ids": [1, 2], "swa_window_size": 512, **dflash})
    d = read_drafter(path)
    assert drafter.windowed(d) == windowed
    assert drafter.windows(d) == [512 if w else None for w in windowed]  # swa_window_size before sliding_window


def test_the_fc_reads_the_target_layers_and_the_dflash_config_wins(tmp_path):
    path = _write(tmp_path, Q36, eagle_config={"target_layer_ids": [1, 2, 3], "use_aux_hidden_state": True},
                  dflash_config={"target_layer_ids": [4, 5], "use_aux_hidden_state": False}, target_hidden_size=4096)
    d = read_drafter(path)
    assert (d.target_layers, d.fc, d.target_hidden_size) == (2, False, 4096)


@pytest.mark.parametrize(("changes", "field"), [
    ({"architectures": ["Qwen3ForCausalLM"]}, "architectures"),
    ({"layer_types": ["full_attention"] * 4}, "layer_types"),
    ({"layer_types": ["full_attention"] * 4 + ["linear_attention"]}, "layer_types[4]"),
    ({"dflash_config": [1, 2]}, "dflash_config"),
    ({"num_key_value_heads": 0}, "num_key_value_heads"),
])
def test_a_bad_drafter_config_names_its_field(tmp_path, changes, field):
    with pytest.raises(SpecError) as err:
        read_drafter(_write(tmp_path, Q36, **changes))
    assert err.value.field == field


def test_a_spec_can_carry_a_drafter_and_a_bad_one_names_its_line():
    text = (HERE / "specs" / "tiny-hybrid.yaml").read_text()
    good = text + ("drafter:\n  num_layers: 2\n  attention: {num_heads: 4, num_kv_heads: 2, head_dim: 64}\n"
                   "  hidden_size: 256\n  intermediate_size: 512\n  target_layers: 2\n")
    assert parse_spec(good, "x.yaml").drafter.num_layers == 2
    with pytest.raises(SpecError) as err:
        parse_spec(good + "  layer_types: [full_attention]\n", "x.yaml")
    assert err.value.field == "drafter.layer_types" and err.value.line is not None


# --- the neutral model --------------------------------------------------------------------------------------------

def _estimate(spec, draft: int, tp: int = 1, pp: int = 1, max_seq_len: int = 131072):
    runtime = RuntimeConfig(max_batch=4, max_seq_len=max_seq_len, draft_tokens=draft,
                            spec_scheme="intermediate" if draft else "none")
    return estimate(spec, ParallelLayout(tp=tp, pp=pp), runtime, BF16)


def test_the_drafter_keeps_kv_and_weights_only_while_it_drafts():
    spec = with_drafter(load_spec(QWEN35_27B), Q36)
    plain = load_spec(QWEN35_27B)
    drafting, idle = _estimate(spec, 5).ranks[0], _estimate(spec, 0).ranks[0]
    # five layers of 2 x 8 x 128 bf16 a token (4,096 B), four of them windowed at 2,048 tokens
    assert drafting.kv_bytes_per_token - idle.kv_bytes_per_token == 5 * 4096
    assert drafting.kv_bytes_per_seq(131072) - idle.kv_bytes_per_seq(131072) == 4096 * (4 * 2048 + 131072)
    assert idle.kv_bytes_per_token == _estimate(plain, 0).ranks[0].kv_bytes_per_token
    # its weights in the model dtype, in place of the MTP layer the model drafts with otherwise
    assert drafting.param_count - idle.param_count == DRAFTER_PARAMS == 1_730_213_120
    assert drafting.weight_bytes - idle.weight_bytes == 2 * DRAFTER_PARAMS
    assert _estimate(plain, 5).ranks[0].param_count > idle.param_count  # without a drafter, the MTP layer


def test_under_tp_its_kv_heads_and_layers_split_but_not_its_fc():
    spec = with_drafter(load_spec(QWEN35_27B), Q36)
    drafting, idle = _estimate(spec, 5, tp=2).ranks[0], _estimate(spec, 0, tp=2).ranks[0]
    assert drafting.kv_bytes_per_token - idle.kv_bytes_per_token == 5 * 2 * 4 * 128 * 2
    assert drafting.param_count - idle.param_count == 5 * (LAYER + NORMS) // 2 + FC + 2 * 5120 // 2


def test_under_pp_the_drafter_sits_on_the_last_stage():
    est = _estimate(with_drafter(load_spec(QWEN35_27B), Q36), 5, pp=2)
    kinds = [{c.decl.kind for c in r.components} for r in est.ranks]
    assert "drafter" not in kinds[0] and {"drafter", "drafter_window"} <= kinds[1]


def test_the_mtp_layer_keeps_kv_while_it_drafts_and_a_drafter_takes_its_place():
    """Qwen3.5-27B's MTP layer is full attention (4 KV heads of 256, bf16: 2 x 4 x 256 x 2 = 4,096 B a token): while
    it drafts, the last stage keeps its KV beside the model's 16 attention layers (17 x 4,096 B), split over TP like
    theirs; a DFlash drafter drafting in its place keeps its own KV, not the MTP layer's."""
    plain = load_spec(QWEN35_27B)
    assert _estimate(plain, 0).ranks[0].kv_bytes_per_token == 16 * 4096
    assert _estimate(plain, 2).ranks[0].kv_bytes_per_token == 17 * 4096
    assert _estimate(plain, 2, tp=2).ranks[0].kv_bytes_per_token == 17 * 2048
    first, last = _estimate(plain, 2, pp=2).ranks
    assert "mtp" not in {c.decl.kind for c in first.components} and {"mtp"} <= {c.decl.kind for c in last.components}
    drafting = _estimate(with_drafter(plain, Q36), 5).ranks[0]
    assert "mtp" not in {c.decl.kind for c in drafting.components}


def test_size_reports_the_drafter():
    data = size_json([QWEN35_27B, "--draft", "5", "--draft-model", Q36])
    d = data["model"]["drafter"]
    assert (d["architecture"], d["windows"], d["param_count"]) == ("DFlashDraftModel", [2048] * 4 + [None],
                                                                  DRAFTER_PARAMS)
    assert {c["kind"] for c in data["ranks"][0]["components"]} >= {"drafter", "drafter_window"}


# --- vLLM -----------------------------------------------------------------------------------------------------

compare = load_oracle("compare")
TABLES = compare.golden.tables("vllm", compare.golden.DRAFTERS)


def test_the_drafter_tables_cover_every_drafter_at_releases_on_each_side_of_its_rules():
    versions = {compare.golden.read(t)["version"] for t in TABLES}
    assert versions >= {"0.20.0", "0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.33.0", "0.34.0"}
    for table in TABLES:
        drafters = {c["flags"]["draft_model"] for c in compare.golden.read(table)["cases"]}
        assert drafters == {p.name for p in DRAFTERS.glob("*.json")}


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_drafter_case_matches_vllm(table):
    data = compare.golden.read(table)
    sized = 0
    for case in data["cases"]:
        rows = compare.compare_case(HF_CONFIGS, case, data["version"])
        assert [r for r in rows if r[3] is not None] == [], compare.flag_text(case["flags"])
        sized += case["error"] is None
    assert sized >= 10  # the tables size the drafters, not only their refusals


def _vllm(spec, version: str, tp: int = 1, **given):
    inputs = EngineInputs(spec, ParallelLayout(tp=tp), "NVIDIA H200", 143771140096, None,
                          {"num_speculative_tokens": 5, "kv_cache_memory_bytes": 20 << 30, "max_model_len": 32768, **given})
    return run_engine("vllm", inputs, version)


def test_vllm_refuses_a_drafter_its_release_has_no_rule_for():
    spec = with_drafter(load_spec(QWEN35_27B), Q38)
    assert "no 'dflash' method" in _vllm(spec, "0.19.0").stages[0].startup_error
    assert "['DFlash2DraftModel'] are not supported" in _vllm(spec, "0.27.0").stages[0].startup_error
    assert _vllm(spec, "0.28.0").stages[0].startup_error is None


def test_vllm_from_028_refuses_a_step_that_holds_fewer_tokens_than_the_drafts():
    spec = with_drafter(load_spec(QWEN35_27B), Q35)
    error = _vllm(spec, "0.28.0", max_num_batched_tokens=5, max_num_seqs=5).stages[0].startup_error
    assert error.endswith("Got max_num_batched_tokens=5 and scheduled_token_delta=5.")
    error = _vllm(spec, "0.33.0", max_num_batched_tokens=6, max_num_seqs=6).stages[0].startup_error
    assert error.endswith("Got max_num_batched_tokens=6 and num_lookahead_tokens=6.")


def test_a_drafter_of_narrower_kv_takes_blocks_of_more_tokens():
    # at TP 8 the model keeps one KV head of 256 a layer (1,024 B a token in bf16), the drafter one of 128 (512 B):
    # unify_kv_cache_spec_page_size doubles the drafter's block size (the 35B drafter's TP 4 cases of the tables)
    from mcache.core.engines.vllm import _drafter_pages
    from mcache.core.sizing.rank import RankContext

    spec = with_drafter(load_spec(QWEN35_27B), Q36)
    ctx = RankContext.build(spec, ParallelLayout(tp=8), RuntimeConfig(), BF16, 0)
    assert _drafter_pages(ctx, 5, "auto", BF16, 1024, 1, "0.34.0") == (None, 2)
    assert _drafter_pages(ctx, 5, "auto", BF16, 768, 1, "0.34.0")[0].startswith("NotImplementedError")
    # a wider drafter: a state page cannot follow it before 0.26 (the assertion); from 0.26 it is padded to it and the
    # model's attention blocks follow the drafter's, as they do beside a model without state: not modelled
    assert _drafter_pages(ctx, 5, "auto", BF16, 256, 1, "0.24.0")[0].startswith("AssertionError")
    for page, version in ((1, "0.26.0"), (1, "0.34.0"), (0, "0.24.0")):
        with pytest.raises(LayoutError) as err:
            _drafter_pages(ctx, 5, "auto", BF16, 256, page, version)
        assert err.value.field == "draft_model"
    run = _vllm(spec, "0.34.0", tp=8)
    assert run.stages[0].startup_error is None and "drafter" in run.stages[0].fields["groups"]


def test_the_drafter_joins_the_model_attention_spec_when_its_kv_is_the_same(tmp_path):
    # a drafter of the model's own KV geometry (4 KV heads of 256): vLLM's specs are equal (is_draft is left out of
    # the comparison), so its layers join the model's attention group
    spec = with_drafter(load_spec(QWEN35_27B), _write(tmp_path, Q35, num_key_value_heads=4, head_dim=256))
    groups = _vllm(spec, "0.34.0").stages[0].fields["groups"]
    assert "drafter" not in groups and "attention" in groups


def test_vllm_serves_the_drafter_in_its_serve_command():
    from mcache.core.engines.common import ServeArgs
    from mcache.core.engines.vllm import serve_command

    line = serve_command(ServeArgs("Qwen/Qwen3.6-27B", 2, 1, 65536, draft=5, mtp=True, drafter="z-lab/Qwen3.6-27B-DFlash"))
    assert '{"method": "dflash", "model": "z-lab/Qwen3.6-27B-DFlash", "num_speculative_tokens": 5}' in line


def test_tensorrt_llm_says_the_drafter_cache_is_not_modelled():
    data = size_json([QWEN35_27B, "--engine", "trtllm", "--draft", "5", "--draft-model", Q36, "--gpu", "h200", "--tp", "2"])
    assert any("DFlash drafter's KV cache" in c for c in data["engine"]["caveats"])


# --- SGLang -------------------------------------------------------------------------------------------------------

sglang_compare = load_oracle("sglang_compare")
SGLANG_TABLES = compare.golden.tables("sglang", compare.golden.DRAFTERS)
Q36_35B = str(DRAFTERS / "qwen3.6-35b-a3b-dflash.json")


def test_the_sglang_drafter_tables_span_every_release_with_dflash():
    from mcache.core.engines import sglang
    from mcache.core.engines.versions import at_least

    versions = {compare.golden.read(t)["version"] for t in SGLANG_TABLES}
    assert versions == {v for v in sglang.VERSIONS if at_least(v, sglang.DFLASH_FROM)}
    for table in SGLANG_TABLES:
        assert {c["drafter"] for c in compare.golden.read(table)["cases"]} == {p.name for p in DRAFTERS.glob("*.json")}


@pytest.mark.parametrize("table", SGLANG_TABLES, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_drafter_case_matches_sglang(table):
    data = compare.golden.read(table)
    sized = 0
    for case in data["cases"]:
        mine = sglang_compare.mcache_case(case, data["version"])
        assert sglang_compare.differences(case, mine) == [], (case["drafter"], case["flags"], case["inputs"]["gpu"])
        sized += case["error"] is None
    assert sized >= 10  # the tables size the drafters, not only their refusals


def _sglang(spec, version: str, tp: int = 1, **given):
    inputs = EngineInputs(spec, ParallelLayout(tp=tp), "NVIDIA H200", 143771140096, None,
                          {"speculative_num_steps": 15, "weights_bytes": 30 << 30, **given})
    return run_engine("sglang", inputs, version)


def test_sglang_charges_the_drafter_kv_to_the_token_cell():
    # Qwen3.6-35B-A3B at TP 4: its 10 full-attention layers keep one KV head of 256 a rank (two heads, replicated):
    # 10 x 2 x 256 x 2 B = 10,240 B a token; its drafter's 8 layers one head of 128 (four heads over four ranks):
    # 8 x 2 x 128 x 2 B = 4,096 B. From 0.5.18 the cell is their sum; 0.5.11-0.5.17 scale the model's by (10 + 8) / 10
    spec = with_drafter(load_spec(str(HF_CONFIGS / "qwen3.6-35b-a3b.json")), Q36_35B)
    assert _sglang(spec, "0.5.18", tp=4).stages[0].fields["cell_size_bytes"] == 10240 + 4096
    assert _sglang(spec, "0.5.17", tp=4).stages[0].fields["cell_size_bytes"] == 10240 * 18 // 10
    # an fp8 KV cache holds the drafter's KV in fp8 too, unless --speculative-draft-kv-cache-dtype says otherwise (auto:
    # the drafter's own bf16); without drafts the drafter keeps none
    assert _sglang(spec, "0.5.23", tp=4, kv_cache_dtype="fp8_e4m3").stages[0].fields["cell_size_bytes"] == 7168
    assert _sglang(spec, "0.5.23", tp=4, kv_cache_dtype="fp8_e4m3", speculative_draft_kv_cache_dtype="auto").stages[
        0].fields["cell_size_bytes"] == 5120 + 4096
    assert _sglang(spec, "0.5.23", tp=4, speculative_draft_kv_cache_dtype="fp8_e4m3").stages[0].fields[
        "cell_size_bytes"] == 10240 + 2048
    assert _sglang(spec, "0.5.23", tp=4, speculative_num_steps=0).stages[0].fields["cell_size_bytes"] == 10240


def test_sglang_refuses_the_drafter_where_its_launch_does():
    spec = with_drafter(load_spec(QWEN35_27B), Q36)
    assert "invalid choice: 'DFLASH'" in _sglang(spec, "0.5.10").stages[0].startup_error
    pp = EngineInputs(spec, ParallelLayout(pp=2), "NVIDIA H200", 143771140096, None, {"speculative_num_steps": 15})
    assert run_engine("sglang", pp, "0.5.23").stages[0].startup_error == (
        "Currently DFLASH speculative decoding only supports pp_size == 1.")
    dp = EngineInputs(spec, ParallelLayout(tp=2, attention_dp=True), "NVIDIA H200", 143771140096, None,
                      {"speculative_num_steps": 15})
    assert run_engine("sglang", dp, "0.5.19").stages[0].startup_error == (
        "Currently DFLASH speculative decoding does not support dp attention.")
    assert run_engine("sglang", dp, "0.5.22").stages[0].startup_error == (
        "Currently DFLASH speculative decoding does not support dp attention on non-NPU devices.")
    assert run_engine("sglang", dp, "0.5.23").stages[0].startup_error == (
        "DFLASH with dp attention requires --enable-dp-lm-head.")


def test_sglang_builds_a_dflash2_drafter_from_0_5_19():
    # models/dflash.py registers DFlash2DraftModel from 0.5.19: before, the draft worker (built once the target's pools
    # are sized) finds no class for it, in model_loader/utils.py's words (a table case at every release)
    spec = with_drafter(load_spec(QWEN35_27B), Q38)
    assert _sglang(spec, "0.5.18", speculative_num_steps=7).stages[0].startup_error.startswith(
        "Cannot find model module. 'DFlash2DraftModel' is not a registered model in the Transformers library")
    assert _sglang(spec, "0.5.19", speculative_num_steps=7).stages[0].startup_error is None


def test_sglang_refuses_a_drafter_made_for_another_target():
    # the 27B drafter reads the target's layers 1, 16, 31, 46 and 61 of 64; Qwen3.6-35B-A3B has 40 (a table case too)
    spec = with_drafter(load_spec(str(HF_CONFIGS / "qwen3.6-35b-a3b.json")), Q36)
    assert read_drafter(Q36).target_layer_ids == [1, 16, 31, 46, 61]
    assert _sglang(spec, "0.5.23").stages[0].startup_error == (
        "DFLASH target_layer_ids contains an out-of-range layer id. target_layer_ids[3]=46, target_num_layers=40.")
    own = with_drafter(load_spec(str(HF_CONFIGS / "qwen3.6-35b-a3b.json")), Q36_35B)
    assert _sglang(own, "0.5.23").stages[0].startup_error is None


def test_sglang_serves_the_drafter_in_its_serve_command():
    from mcache.core.engines.common import ServeArgs
    from mcache.core.engines.sglang import serve_command

    line = serve_command(ServeArgs("Qwen/Qwen3.6-27B", 2, 1, 65536, draft=15, mtp=True, drafter="z-lab/Qwen3.6-27B-DFlash"))
    assert ("--speculative-algorithm DFLASH --speculative-draft-model-path z-lab/Qwen3.6-27B-DFlash "
            "--speculative-num-draft-tokens 16") in line


def test_explain_reads_an_sglang_dflash_launch(tmp_path, capsys):
    # SGLang's server_args of a DFLASH launch: 16 draft tokens a step (mcache's --draft 15) by the drafter its path
    # names; the target's and the draft worker's KV lines are the ones mcache gives for the measured memory
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(Path(Q36).read_text())
    spec = with_drafter(load_spec(QWEN35_27B), Q36)
    given = {"speculative_num_steps": 15, "weights_bytes": 54 << 30, "pre_model_load_memory_bytes": 132 << 30,
             "speculative_draft_kv_cache_dtype": "fp8_e4m3"}
    h200 = find_gpu("h200")
    run = run_engine("sglang", EngineInputs(spec, ParallelLayout(), h200.name, h200.memory, None, given), "0.5.23")
    kv = [line for line in run.stages[0].log if line.startswith("KV Cache")]
    assert len(kv) == 2 and "float8_e4m3fn" in kv[1]  # the target's pool, then the drafter's (in fp8)
    log = tmp_path / "boot.log"
    log.write_text(
        f"[2026-12-01 10:00:00] server_args=ServerArgs(model_path='x', tp_size=1, speculative_algorithm='DFLASH', "
        f"speculative_draft_model_path='{folder}', speculative_num_steps=1, speculative_num_draft_tokens=16, "
        "speculative_draft_kv_cache_dtype='fp8_e4m3')\n"
        "[2026-12-01 10:00:05 TP0] Load weight end. type=Qwen3_5ForConditionalGeneration, avail mem=78.00 GB, "
        "mem usage=54.00 GB.\n" + "".join(f"[2026-12-01 10:00:06 TP0] {line}\n" for line in kv))
    argv = [str(log), "--model", QWEN35_27B, "--gpu", "h200", "--engine-version", "0.5.23", "--format", "json"]
    assert main(["explain", *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["figure"]: c["verdict"] for c in data["comparisons"]} == {
        "kv_tokens": "agree", "k_size_gb": "agree", "v_size_gb": "agree", "kv_dtype": "agree", "draft_kv_tokens": "agree",
        "draft_k_size_gb": "agree", "draft_v_size_gb": "agree", "draft_kv_dtype": "agree"}


def test_a_drafter_block_size_is_its_dflash_config_s_else_its_own(tmp_path):
    assert read_drafter(Q36).block_size == 16
    assert read_drafter(Q38).block_size == 8  # dflash_config.block_size
    assert read_drafter(_write(tmp_path, Q36, block_size=None)).block_size is None
    with pytest.raises(SpecError) as err:
        read_drafter(_write(tmp_path, Q36, block_size=0))
    assert err.value.field == "block_size"


# --- the command line ---------------------------------------------------------------------------------------------

def test_a_missing_drafter_is_one_line(capsys):
    assert "draft_model" in one_line(["size", QWEN35_27B, "--draft", "5", "--draft-model", "no/such/file.json"], capsys)


def test_a_config_that_is_not_a_drafter_is_one_line(capsys):
    line = one_line(["size", QWEN35_27B, "--draft", "5", "--draft-model", QWEN35_27B], capsys)
    assert "architectures" in line and "DFlashDraftModel" in line


def test_plan_refuses_a_drafter_under_an_engine_that_does_not_size_it(capsys):
    assert "--draft-model" in one_line(["plan", QWEN35_27B, "--engine", "trtllm", "--draft-model", Q36], capsys)


def test_explain_reads_the_drafter_its_log_names(tmp_path, capsys):
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(Path(Q36).read_text())
    log = tmp_path / "boot.log"
    args = ("{'model': 'x', 'tensor_parallel_size': 2, 'max_model_len': 180000, 'enable_prefix_caching': True, "
            f"'max_num_seqs': 1, 'speculative_config': {{'method': 'dflash', 'model': '{folder}', "
            "'num_speculative_tokens': 5}}")
    source = (HERE / "data" / "engine_logs" / "vllm" / "qwen36-27b-dflash-noviz-2x4090-180k.log").read_text()
    log.write_text(f"(APIServer pid=1) INFO 05-04 01:00:00 [utils.py:233] non-default args: {args}\n{source}")
    argv = [str(log), "--model", QWEN35_27B, "--gpu", "rtx-4090", "--engine-version", "0.20.0", "--format", "json"]
    assert main(["explain", *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["verdict"] for c in data["comparisons"]} == {"agree"}
    (folder / "config.json").unlink()  # not readable: sized without it, and a note says how to give it
    assert main(["explain", *argv]) == 1
    data = json.loads(capsys.readouterr().out)
    assert any("--draft-model" in n for n in data["notes"])


def test_a_drafter_equal_to_the_spec_is_replaced():
    spec = with_drafter(load_spec(QWEN35_27B), Q35)
    assert with_drafter(spec, Q36).drafter.layer_types[0] == "sliding_attention"
    assert with_drafter(spec, None) is spec
    assert replace(spec, drafter=None).drafter is None


def test_vllm_from_033_admits_the_requests_whose_draft_queries_fit_a_step():
    # 160 tokens a step, 16 draft queries a request (15 drafts and the bonus): 10 requests, not max_num_seqs' 100
    spec = with_drafter(load_spec(QWEN35_27B), Q36)
    given = {"num_speculative_tokens": 15, "max_num_batched_tokens": 160, "max_num_seqs": 100, "max_model_len": 4096}
    run = _vllm(spec, "0.34.0", tp=2, **given)
    assert (run.stages[0].max_running_requests, run.stages[0].binding) == (10, "max_num_active_seqs")
    assert ("The dflash draft pass fits at most 10 requests within max_num_batched_tokens=160. Overriding "
            "max_num_active_seqs from 100 to 10.") in run.stages[0].log
    assert "needs 16 query tokens per request" in " ".join(_vllm(spec, "0.33.0", tp=2, **given).stages[0].log)
    assert _vllm(spec, "0.28.0", tp=2, **given).stages[0].binding != "max_num_active_seqs"


def test_a_drafter_whose_heads_do_not_split_is_one_line_and_plan_skips_that_layout_while_drafting(tmp_path, capsys):
    path = _write(tmp_path, Q36, num_attention_heads=30, num_key_value_heads=3)
    line = one_line(["size", QWEN35_27B, "--draft", "5", "--draft-model", path, "--tp", "4"], capsys)
    assert line.startswith("mcache: --draft-model: a drafter whose heads split") and "tp=4" in line
    from cli_util import plan_json

    data = plan_json(QWEN35_27B, "--draft", "0,5", "--draft-model", path, "--tp", "1,4", "--pp", "1", "--gpu", "h200",
                     "--context", "8192", "--kv-dtype", "default")
    assert [s for s in data["skipped"] if s.startswith("tp 4 pp 1, drafting: ")]
    assert {(c["tp"], c["draft"]) for c in data["candidates"]} == {(1, 0), (1, 5), (4, 0)}


def test_plan_serves_the_drafter_under_sglang():
    from cli_util import plan_json

    data = plan_json(QWEN35_27B, "--engine", "sglang", "--draft", "15", "--draft-model", Q36, "--tp", "2", "--pp", "1",
                     "--gpu", "h200", "--context", "32768", "--kv-dtype", "default")
    settings = data["candidates"][0]["settings"]
    assert (f"--speculative-algorithm DFLASH --speculative-draft-model-path {Path(Q36).parent} "
            "--speculative-num-draft-tokens 16") in settings


def test_explain_notes_a_hub_drafter_it_cannot_read_offline(tmp_path, capsys):
    args = ("{'model': 'x', 'tensor_parallel_size': 2, 'max_model_len': 180000, 'enable_prefix_caching': True, "
            "'max_num_seqs': 1, 'speculative_config': {'method': 'dflash', 'model': 'z-lab/Qwen3.6-27B-DFlash', "
            "'num_speculative_tokens': 5}}")
    source = (HERE / "data" / "engine_logs" / "vllm" / "qwen36-27b-dflash-noviz-2x4090-180k.log").read_text()
    log = tmp_path / "boot.log"
    log.write_text(f"(APIServer pid=1) INFO 05-04 01:00:00 [utils.py:233] non-default args: {args}\n{source}")
    argv = [str(log), "--model", QWEN35_27B, "--gpu", "rtx-4090", "--engine-version", "0.20.0", "--format", "json"]
    assert main(["explain", *argv]) == 1  # the tests' Hub cache is empty and offline: sized without the drafter
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("z-lab/Qwen3.6-27B-DFlash" in n and "--draft-model" in n for n in notes)


def test_plan_from_a_dflash_log_drafts_with_its_drafter(tmp_path):
    from cli_util import plan_json

    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(Path(Q36).read_text())
    args = ("{'model': 'x', 'tensor_parallel_size': 2, 'max_model_len': 180000, 'enable_prefix_caching': True, "
            f"'max_num_seqs': 1, 'speculative_config': {{'method': 'dflash', 'model': '{folder}', "
            "'num_speculative_tokens': 5}}")
    source = (HERE / "data" / "engine_logs" / "vllm" / "qwen36-27b-dflash-noviz-2x4090-180k.log").read_text()
    log = tmp_path / "boot.log"
    log.write_text(f"(APIServer pid=1) INFO 05-04 01:00:00 [utils.py:233] non-default args: {args}\n{source}")
    data = plan_json(QWEN35_27B, "--from-log", str(log), "--log-gpu", "rtx-4090", "--gpu", "rtx-4090", "--engine-version",
                     "0.20.0", "--context", "180000", "--tp", "2", "--pp", "1", "--kv-dtype", "default", "--draft", "5",
                     "--weight-format", "int4")
    assert f'"method": "dflash", "model": "{folder}"' in data["candidates"][0]["settings"]


def test_a_drafter_config_given_as_the_model_says_which_option_takes_it(capsys):
    line = one_line(["size", Q36], capsys)
    assert "architectures" in line and "DFlashDraftModel" in line and "--draft-model" in line


def test_a_speculators_format_drafter_reads_as_vllm_converts_it(tmp_path):
    # vllm-project/speculators: the layers under transformer_layer_config, the target layers 1-based
    # (transformers_utils/configs/speculators/algos.py update_dflash), as vllm-project/vllm#50722 quotes one
    layer = json.loads(Path(DRAFTERS / "qwen3.6-35b-a3b-dflash.json").read_text())
    for key in ("architectures", "dflash_config", "block_size"):
        layer.pop(key)
    cfg = {"architectures": ["DFlashDraftModel"], "speculators_model_type": "dflash", "block_size": 16,
           "aux_hidden_state_layer_ids": [2, 11, 20, 29, 38], "mask_token_id": 248070, "target_hidden_size": None,
           "speculators_config": {"algorithm": "dflash", "proposal_methods": [{"speculative_tokens": 15}]},
           "transformer_layer_config": layer}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    d = read_drafter(path)
    assert d == replace(read_drafter(DRAFTERS / "qwen3.6-35b-a3b-dflash.json"), source=str(path))
    path.write_text(json.dumps({**cfg, "speculators_model_type": "eagle3"}))
    with pytest.raises(SpecError) as err:
        read_drafter(path)
    assert err.value.field == "speculators_model_type"
    path.write_text(json.dumps({**cfg, "transformer_layer_config": {**layer, "num_hidden_layers": 0}}))
    with pytest.raises(SpecError) as err:
        read_drafter(path)
    assert err.value.field == "transformer_layer_config.num_hidden_layers"


def test_the_engine_line_names_the_drafter_explain_reads(tmp_path, capsys):
    folder = tmp_path / "drafter"
    folder.mkdir()
    (folder / "config.json").write_text(Path(Q36).read_text())
    engine = ("(EngineCore pid=109) INFO 05-04 01:02:40 [core.py:107] Initializing a V1 LLM engine (v0.20.1rc1.dev16) "
              "with config: model='x', speculative_config=SpeculativeConfig(method='dflash', "
              f"model='{folder}', num_spec_tokens=5), tokenizer='x', max_seq_len=180000, tensor_parallel_size=2, "
              "enable_prefix_caching=True")
    source = (HERE / "data" / "engine_logs" / "vllm" / "qwen36-27b-dflash-noviz-2x4090-180k.log").read_text()
    log = tmp_path / "boot.log"
    log.write_text(f"{engine}\n{source}")
    from mcache.core.logs import read_log

    parsed = read_log(log.read_text(), "boot.log")
    assert parsed.other_settings["speculative_config"] == {"method": "dflash", "num_speculative_tokens": 5,
                                                           "model": str(folder)}
    argv = [str(log), "--model", QWEN35_27B, "--gpu", "rtx-4090", "--engine-version", "0.20.0", "--max-num-seqs", "1",
            "--format", "json"]
    assert main(["explain", *argv]) == 0
    assert {c["verdict"] for c in json.loads(capsys.readouterr().out)["comparisons"]} == {"agree"}


def test_import_hf_writes_the_drafter_into_the_spec_and_it_loads_back_equal(tmp_path):
    from mcache.core.spec.dump import spec_to_yaml

    out = tmp_path / "spec.yaml"
    assert main(["import-hf", QWEN35_27B, "--draft-model", Q36, "-o", str(out)]) == 0
    spec = parse_spec(out.read_text(), str(out))
    assert spec.drafter == replace(read_drafter(Q36), source=Q36)
    assert parse_spec(spec_to_yaml(spec), "x.yaml") == spec


def test_vllm_from_020_warns_of_a_short_step_with_any_drafts():
    # config/vllm.py _set_max_num_scheduled_tokens (0.20 on): MTP drafts take no slots, so the step keeps its 2,048
    # tokens (a GPU under 70 GiB), below 8,192: the warning, with 0.20 - 0.27's words and 0.28's
    spec = load_spec(QWEN35_27B)
    given = {"num_speculative_tokens": 3, "max_model_len": 8192}

    def warning(version: str) -> list[str]:
        inputs = EngineInputs(spec, ParallelLayout(tp=2), "NVIDIA GeForce RTX 4090", 24 << 30, None, given)
        return [line for line in run_engine("vllm", inputs, version).stages[0].log if "max_num_scheduled_tokens" in line]

    assert warning("0.19.0") == []
    assert warning("0.24.0") == ["max_num_scheduled_tokens is set to 2048 based on the speculative decoding settings. "
                                 "This may lead to suboptimal performance. Consider increasing max_num_batched_tokens "
                                 "to accommodate the additional draft token slots, or decrease num_speculative_tokens "
                                 "or max_num_seqs."]
    assert warning("0.28.0")[0].endswith("or decrease num_speculative_tokens.")


@pytest.mark.parametrize("command", ["size", "plan", "import-hf"])
def test_no_command_writes_over_the_drafter_it_reads(tmp_path, capsys, command):
    drafter = tmp_path / "config.json"
    drafter.write_text(Path(Q36).read_text())
    before = drafter.read_text()
    line = one_line([command, QWEN35_27B, "--draft-model", str(drafter), "-o", str(drafter)], capsys)
    assert "which it would overwrite" in line and drafter.read_text() == before
