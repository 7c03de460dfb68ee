"""The SGLang profile against SGLang's own arithmetic and public boot logs (each test names its source)."""

from __future__ import annotations

import pytest
from cli_util import one_line
from engines_util import config_spec, gib, run
from msgspec.structs import replace
from paths import HF_CONFIGS, HF_CONFIGS_EXTRA

from mcache.core.engines import run_engine, sglang
from mcache.core.engines.common import GIB, EngineInputs, ServeArgs, mtp_attention_layers, pp_layout, whole_model
from mcache.core.engines.options import option_for
from mcache.core.engines.sglang import (
    VERSIONS,
    _chunked_prefill,
    _decode_graph_max_bs,
    _incompatible,
    _mem_fraction,
    _mem_fraction_0_5_2,
    _prefill_graph_mb,
    serve_command,
)
from mcache.core.engines.versions import at_least
from mcache.core.errors import LayoutError
from mcache.core.hf import import_hf
from mcache.core.load import load_spec
from mcache.core.logs import read_log
from mcache.core.sizing import weights
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout

QWEN35 = "qwen3.5-27b"
MIB = 1 << 20
SLOT = 48 * (30_720 * 2 + 786_432 * 4)  # 48 GDN layers: bf16 conv + float32 state = 153,944,064 B (146.81 MiB)


def at(version: str | None = None, tp: int = 1) -> EngineInputs:
    """The inputs the version-gated heuristics read: the layout and the modelled release (None: the newest)."""
    return EngineInputs(spec=None, layout=ParallelLayout(tp=tp), version=version)


def stage(engine_run):
    return engine_run.stages[0]


def memory(rest_gib: float, mfs: float, pre_gib: float = 79.5) -> dict:
    """Free memory before load and weights that leave `rest_gib` for the pools: rest = pre x mfs - weights."""
    pre = gib(pre_gib)
    return {"mem_fraction_static": mfs, "pre_model_load_memory_bytes": pre,
            "weights_bytes": int(pre * mfs - rest_gib * GIB)}


def test_dtypes_bf16_conv_and_the_configs_mamba_ssm_dtype():
    # configs/mamba_utils.py mamba2_state_dtype: conv bfloat16 always; state: flag, else config mamba_ssm_dtype,
    # else float32 (vLLM's mamba_ssm_cache_dtype is not read, so Nemotron-H is float32 too)
    assert run("sglang", config_spec(QWEN35)).dtypes.ssm == "float32"
    assert run("sglang", config_spec("nemotron-h-8b-base-8k")).dtypes.ssm == "float32"
    assert run("sglang", config_spec(QWEN35), mamba_ssm_dtype="bfloat16").dtypes.ssm == "bfloat16"
    assert run("sglang", config_spec("falcon-h1-0.5b")).dtypes.conv == "bfloat16"


def test_h100_log_slots_tokens_and_the_cap():
    # SGLang 0.5.18 bring-up notes (Qwen3.8-27B-FP8 = Qwen3.5-27B's geometry, H100, TP 1,
    # --mem-fraction-static 0.85 --max-running-requests 32): "Mamba Cache is allocated. max_mamba_cache_size: 124,
    # conv_state size: 0.34GB, ssm_state size: 17.58GB", "#tokens: 330323, K size: 10.08 GB", "capped to 24".
    # The log gives avail 50.01 GB after weights; rest = 50.01 - pre x 0.15 = 38.08 GiB (pre 79.51 GiB). Its figures
    # leave no room for the 0.10 GB a multimodal model reserves (124 slots and 330,323 tokens come from all 38.08 GiB;
    # the reservation would give 328,726), so SGLang served that checkpoint as a text model: the text spec, no tower.
    st = stage(run("sglang", config_spec(QWEN35, vision=None), "h100", max_running_requests=32,
                   **memory(38.083, 0.85, 79.51)))
    assert st.fields["mamba_cache_per_req_bytes"] == SLOT
    # K = int((B - per) // per), B = rest x 0.9 / 1.9 (kv_cache_configurator.py: one dummy slot charged)
    assert st.fields["max_mamba_cache_size"] == 124
    assert "Mamba Cache is allocated. max_mamba_cache_size: 124, conv_state size: 0.34GB, ssm_state size: 17.58GB " in st.log
    assert st.fields["max_total_num_tokens"] == pytest.approx(330_323, rel=1e-3)  # the log rounds the memory
    assert st.fields["max_running_requests_logged"] == 124 // 5 == 24  # extra_buffer with overlap: 5 slots/request
    assert any(line.startswith("max_running_requests is capped to 24 by the mamba state cache (max_mamba_cache_size="
                               "124, 5 state slots per request).") for line in st.log)
    assert any("K size: 10.08 GB, V size: 10.08 GB" in line for line in st.log)


def test_negative_slots_error_matches_the_mi355x_log():
    # same notes, MI355X at --mem-fraction-static 0.25: "Not enough GPU memory for hybrid (mamba/linear-attention)
    # state cache. Computed max_mamba_cache_size=-28 (total_rest_memory=-7.96 GB, mamba_cache_per_req=146.81 MB)."
    # (the text model, as above)
    st = stage(run("sglang", config_spec(QWEN35, vision=None), gpu_bytes=gib(288), **memory(-7.96, 0.25, 258.78)))
    assert st.startup_error.startswith(
        "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=-28 "
        "(total_rest_memory=-7.96 GB, mamba_cache_per_req=146.81 MB).")
    assert st.max_running_requests == 0


def test_fixed_pool_caps_requests_by_the_slot_ratio():
    # github.com/sgl-project/sglang/issues/38846 (Qwen3.5-27B FP8, RTX 6000 Ada): "max_running_requests is capped to
    # 9 by the mamba state cache (max_mamba_cache_size=47, 5 state slots per request)"
    st = stage(run("sglang", config_spec(QWEN35), gpu_bytes=gib(48), context=8192, max_mamba_cache_size=47,
                   max_running_requests=32, **memory(30, 0.9, 47)))
    assert st.fields["max_running_requests_logged"] == 9 and st.binding == "state slots"


def test_extra_buffer_lazy_holds_four_slots_per_request():
    # github.com/sgl-project/sglang/pull/36310 (Qwen3.6-35B-A3B, extra_buffer_lazy): 149 slots -> 37 requests
    st = stage(run("sglang", config_spec(QWEN35), gpu_bytes=gib(96), max_mamba_cache_size=149,
                   mamba_radix_cache_strategy="extra_buffer_lazy", max_running_requests=64, **memory(60, 0.9, 95)))
    assert (st.fields["state_slots_per_request"], st.fields["max_running_requests_logged"]) == (4, 37)


@pytest.mark.parametrize(("settings", "ratio"), [
    ({}, 5),  # radix cache on, auto -> extra_buffer with the overlap scheduler
    ({"disable_overlap_schedule": True}, 4),
    ({"mamba_radix_cache_strategy": "no_buffer"}, 3),
    ({"disable_radix_cache": True}, 1),
])
def test_state_slots_per_running_request(settings, ratio):
    # kv_cache_configurator.py _calculate_mamba_ratio
    assert stage(run("sglang", config_spec(QWEN35), **settings)).fields["state_slots_per_request"] == ratio


def test_lfm2_has_no_extra_buffer():
    # arg_groups/overrides.py: LFM2 is a radix-cache architecture without the extra buffer -> no_buffer (3)
    st = stage(run("sglang", config_spec("lfm2-1.2b")))
    assert (st.fields["mamba_radix_cache_strategy"], st.fields["state_slots_per_request"]) == ("no_buffer", 3)


def test_pure_mamba_keeps_the_radix_cache_at_three_slots_per_request():
    # arg_groups/overrides.py _mamba_radix_cache_resolution: MambaForCausalLM is not in _MAMBA_RADIX_CACHE_ARCHS, so
    # its radix cache stays on with the strategy unresolved; _calculate_mamba_ratio: 3 (no extra buffer), 1 without
    # the radix cache. SGLang 0.5.23 on mamba-2.8b, H200: 2135 slots, "capped to 711" (tests/data/engine_golden).
    st = stage(run("sglang", config_spec("mamba-2.8b"), "h200"))
    assert (st.fields["state_slots_per_request"], st.fields["max_running_requests_logged"]) == (
        3, st.fields["max_mamba_cache_size"] // 3)
    assert stage(run("sglang", config_spec("mamba-2.8b"), disable_radix_cache=True)).fields[
        "state_slots_per_request"] == 1


def test_minimax_text_01_runs_on_the_transformers_backend():
    # model_loader/utils.py resolve_transformers_arch: no MiniMaxForCausalLM in SGLang 0.5.23's models/; the
    # Transformers backend keeps K and V on all 80 layers (8 KV heads x 128 x 2 x bf16) and no state pool
    result = run("sglang", config_spec("minimax-text-01"), "h200", weights_bytes=100 * GIB)  # TP 1's 849.5 do not load
    st = stage(result)
    assert st.fields["cell_size_bytes"] == 80 * 8 * 128 * 2 * 2
    assert st.fields["mamba_cache_per_req_bytes"] == 0 and st.fields["max_mamba_cache_size"] is None
    assert st.log[0].startswith("MiniMaxForCausalLM has no SGLang implementation, falling back to Transformers")
    assert any("Transformers backend" in caveat for caveat in result.caveats)


def test_lfm2_700m_16gb_log():
    # SGLang 0.5.6 notes (LFM2-700M: LFM2-1.2B's layers at hidden 1536, a 16 GB GPU of 16,303 MiB, heuristic
    # mem_fraction_static 0.771): "Load weight begin. avail mem=15.33 GB", "Load weight end ... avail mem=13.81 GB",
    # "Mamba Cache is allocated. max_mamba_cache_size: 85292, conv_state size: 4.88GB", "#tokens: 473854,
    # K size: 2.71 GB"
    # SGLang 0.5.23's heuristic also reserves its prefill CUDA graphs (42 sizes up to the 2048-token chunk, 8 MiB each:
    # arg_groups/memory_hook.py reserve_for_graph_mb), so it takes 0.751 where 0.5.6 took 0.771; the log is replayed
    # with 0.5.6's fraction.
    gpu = 16_303 << 20
    assert _mem_fraction(16_303, _chunked_prefill(16_303, at()), at(), None, 0) == 0.771
    assert _mem_fraction(16_303, _chunked_prefill(16_303, at()), at(), None, 42 * 8) == 0.751
    spec = config_spec("lfm2-1.2b", hidden_size=1536)
    st = stage(run("sglang", spec, gpu_bytes=gpu, pre_model_load_memory_bytes=gib(15.33),
                   weights_bytes=gib(15.33 - 13.81), mem_fraction_static=0.771))
    assert st.fields["mem_fraction_static"] == 0.771
    assert st.fields["mamba_cache_per_req_bytes"] == 10 * 1536 * 2 * 2  # 61,440 B: ten short convs
    assert st.fields["max_mamba_cache_size"] == pytest.approx(85_292, rel=2e-3)
    assert st.fields["max_total_num_tokens"] == pytest.approx(473_854, rel=2e-3)


def test_token_pool_counts_only_full_attention_layers():
    # pool_configurator.py: cell = kv heads per rank x (head + v head) x full-attention layers x itemsize
    st = stage(run("sglang", config_spec("qwen3-next-80b-a3b"), tp=4))
    assert st.fields["cell_size_bytes"] == 1 * (256 + 256) * 12 * 2  # 2 KV heads over TP 4: one per rank


def test_max_running_requests_default_is_clamped_and_halved():
    # resolve_max_num_reqs: clamp(tokens / context x 512, 2048, 4096), at most tokens // 2, at most slots // ratio
    st = stage(run("sglang", config_spec("lfm2-1.2b"), "h200", context_length=8192))
    tokens = st.fields["max_total_num_tokens"]
    assert st.fields["max_running_requests_logged"] == min(max(min(int(tokens / 8192 * 512), 4096), 2048), tokens // 2)


def test_drafts_reserve_intermediate_states_per_running_request():
    # _handle_max_mamba_cache with speculative decoding: K = (B - per (1 + D)) // (per (1 + D / ratio)), and
    # (min(requests, K // ratio) + 1) x D states come out of the token pool; requests default to 48
    per, ratio, steps = SLOT, 5, 3
    drafts = steps + 1
    rest = 60 * GIB - 100 * MIB  # less the multimodal embedding cache (mm_runtime_reservation_gb)
    st = stage(run("sglang", config_spec(QWEN35), "h200", speculative_num_steps=steps, **memory(60, 0.9, 139)))
    budget = rest * 0.9 / 1.9
    slots = int((budget - per * (1 + drafts)) // (per * (1 + drafts / ratio)))
    assert st.fields["max_mamba_cache_size"] == slots
    kv_rest = rest - per * (min(48, slots // ratio) + 1) * drafts - (slots + 1) * per
    cell = 16 * 4096  # Qwen3.5's config names its MTP layer mtp_num_hidden_layers: not charged (next test)
    assert st.fields["cell_size_bytes"] == cell
    assert st.fields["max_total_num_tokens"] == int(kv_rest) // cell


def test_the_mtp_layer_is_charged_only_where_the_config_declares_num_nextn_predict_layers():
    # spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state: a path-less draft charges the target config's
    # num_nextn_predict_layers to the KV pool (pool_configurator.py eagle_draft_num_layers): Nemotron-3-Super declares
    # 1 (cell x (1 + 1 / attention layers)); Qwen3-Next declares none (SGLang 0.5.23's table agrees)
    spec = config_spec("nemotron-3-super-120b-a12b")
    result = run("sglang", spec)
    plain, layers = stage(result).fields["cell_size_bytes"], whole_model(spec, ParallelLayout(), result.dtypes).counts[
        "attention"]
    assert mtp_attention_layers(spec) == 1
    assert stage(run("sglang", spec, speculative_num_steps=3)).fields["cell_size_bytes"] == plain + plain // layers
    spec = config_spec("qwen3-next-80b-a3b")
    assert (stage(run("sglang", spec, speculative_num_steps=3)).fields["cell_size_bytes"]
            == stage(run("sglang", spec)).fields["cell_size_bytes"])


@pytest.mark.parametrize(("version", "charged"), [("0.5.18", False), ("0.5.19", False), ("0.5.20", True)])
def test_a_path_less_draft_is_charged_its_mtp_layers_from_0_5_20(version, charged):
    # spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state at v0.5.18 and v0.5.19 reads the draft's layers only
    # from --speculative-draft-model-path (none here, and Nemotron-H is not among the architectures whose draft path
    # speculative_hook.py sets to the model's): the cell stays the target's. v0.5.20 falls back to the target config.
    # The 0.5.18 table: 6,683,208 tokens where 0.5.23's has 5,940,629, x 8 / 9 (8 attention layers and the MTP's one)
    spec = config_spec("nemotron-3-super-120b-a12b")
    plain, layers = stage(run("sglang", spec)).fields["cell_size_bytes"], 8

    def drafting(v):
        inputs = EngineInputs(spec, ParallelLayout(), "h200", lookup("h200")[1], given={"speculative_num_steps": 3})
        return stage(run_engine("sglang", inputs, v)).fields["cell_size_bytes"]

    assert drafting(version) == (plain + plain // layers if charged else plain)


def test_mem_fraction_heuristic_on_an_h200():
    # arg_groups/memory_hook.py: 512 + 8192 x 1.5 + 1/8 x 1024 + 256 x 2 = 13,440 MB reserved of 143,771 MB, and 8 MiB
    # for each of the 58 prefill-graph sizes up to 8192 tokens (SGLang 0.5.23's table: 0.903 for Nemotron-H)
    assert _prefill_graph_mb(config_spec("nemotron-h-8b-base-8k"), 8192, None) == 58 * 8
    assert _mem_fraction(143_771, 8192, at(), None, 58 * 8) == round((143_771 - 13_904) / 143_771, 3) == 0.903
    # from 0.5.22 the decode graphs' max batch is cut to --max-running-requests: 64 x 2 MB instead of 256 x 2 MB
    # (memory_hook.py at v0.5.22; v0.5.21's keeps 256: both in their golden tables)
    assert _mem_fraction(143_771, 8192, at("0.5.22"), 64, 58 * 8) == _mem_fraction(143_771, 8192, at(), 64, 58 * 8) == 0.906
    assert _mem_fraction(143_771, 8192, at("0.5.21"), 64, 58 * 8) == 0.903
    # an MLA backend reserves 1.5 GiB for prefill graphs; KDA configs capture none (cuda_graph_hook.py)
    assert _prefill_graph_mb(config_spec("kimi-linear-48b-a3b-instruct"), 8192, None) == 0
    # ... from 0.5.20: 0.5.19's cuda_graph_hook.py has no KDA rule, so Kimi-Linear's MLA prefill graphs take 1.5 GiB
    # (its golden table: mem_fraction_static 0.896 where 0.5.20's says 0.907)
    assert _prefill_graph_mb(config_spec("kimi-linear-48b-a3b-instruct"), 8192, None, at("0.5.19")) == 1536


def h200_fraction(spec, version: str) -> float:
    """SGLang's default mem_fraction_static for `spec` on an H200 at `version`."""
    inputs = EngineInputs(spec, ParallelLayout(), "H200", lookup("h200")[1], given={"weights_bytes": 30 * GIB})
    return run_engine("sglang", inputs, version).settings["mem_fraction_static"]


@pytest.mark.parametrize("version", [v for v in VERSIONS if at_least(v, "0.5.14")])  # before: no multimodal hybrid
def test_a_multimodal_model_lowers_the_default_mem_fraction_by_its_vision_tower(version):
    # arg_groups/memory_hook.py adjust_mem_fraction_for_vlm (v0.5.19 to v0.5.23): the rounded default times 0.95 x
    # clamp(1 - 0.1 x (L H^2 / (24 x 1024^2) - 1), 0.8, 1.05), unrounded. Qwen3.5's vision config names its depth
    # `depth`, so SGLang reads num_hidden_layers' default 24 with hidden_size 1152: 0.95 x 0.9734375; SGLang's own
    # KimiK3VisionConfig (configs/kimi_k3.py) aliases vt_num_hidden_layers 27 and vt_hidden_size 1024: 0.95 x 0.9875.
    # The golden tables: 0.903 x 0.924765625 = 0.835063359375 for every Qwen3.5/3.6 config on an H200 (0.5.20-0.5.23)
    assert h200_fraction(config_spec(QWEN35, vision=None), version) == 0.903
    # (releases before 0.5.16 capture no prefill graphs for a multimodal model: 0.907 x 0.924765625, their tables'
    # 0.83876...)
    qwen_base = 0.907 if not at_least(version, "0.5.16") else 0.903
    assert h200_fraction(config_spec(QWEN35), version) == qwen_base * (0.95 * 0.9734375)
    inputs = EngineInputs(config_spec(QWEN35), ParallelLayout(), "H200", lookup("h200")[1])
    assert run_engine("sglang", inputs, version).sources["mem_fraction_static"].startswith(
        "default: lowered for the vision tower")
    if not at_least(version, "0.5.17"):
        return  # Kimi-K3 has no SGLang class before 0.5.17 (models/kimi_k3.py)
    kimi = config_spec("kimi-k3")
    base = h200_fraction(replace(kimi, vision=None), version)  # 0.907; 0.896 in 0.5.19 (its MLA prefill graphs)
    assert base == (0.896 if version in ("0.5.18", "0.5.19") else 0.907)  # MLA prefill graphs: 0.5.18-0.5.19 only
    assert h200_fraction(kimi, version) == base * (0.95 * 0.9875)
    # a tower of more than twice ViT-L/14's L x H^2 takes the floor 0.8, a much smaller one the ceiling 1.05
    for layers, hidden, factor in ((64, 2048, 0.8), (12, 512, 1.05)):
        tower = replace(kimi.vision, num_layers=layers, hidden_size=hidden)
        assert h200_fraction(replace(kimi, vision=tower), version) == base * (0.95 * factor)


def test_a_multimodal_architecture_without_its_tower_says_so():
    caveats = run("sglang", config_spec(QWEN35, vision=None), "h200").caveats
    assert any("is a multimodal model to SGLang" in c and "no `vision` block" in c for c in caveats)
    assert not any("multimodal" in c for c in run("sglang", config_spec(QWEN35), "h200").caveats)


def test_a_given_mem_fraction_stays_and_the_multimodal_cache_is_reserved_anyway():
    # the adjustment lowers only SGLang's default; mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb takes
    # SGLANG_VLM_CACHE_SIZE_MB (100) off the budget of every multimodal model, before the state pool, and logs it
    settings = {"gpu": "h200", "max_mamba_cache_size": 100, **memory(60, 0.9, 139)}
    vlm, text = (stage(run("sglang", config_spec(QWEN35, **tower), **settings)) for tower in ({}, {"vision": None}))
    assert vlm.fields["mem_fraction_static"] == text.fields["mem_fraction_static"] == 0.9
    cell = vlm.fields["cell_size_bytes"]
    rest = 60 * GIB - 101 * SLOT  # 100 slots and the dummy one
    assert text.fields["max_total_num_tokens"] == rest // cell
    assert vlm.fields["max_total_num_tokens"] == (rest - 100 * MIB) // cell
    reserving = ("Reserving 0.10 GB of the KV budget for post-sizing multimodal allocations (feature-transport pools + "
                 "embedding cache).")
    assert vlm.log[0] == reserving and reserving not in text.log
    # ... from 0.5.18: 0.5.17's _profile_available_bytes has no mm_runtime_reservation_gb (its golden table agrees)
    inputs = EngineInputs(config_spec(QWEN35), ParallelLayout(), *lookup("h200"), None,
                          {k: v for k, v in settings.items() if k != "gpu"})
    older = stage(run_engine("sglang", inputs, "0.5.17"))
    assert older.fields["max_total_num_tokens"] == rest // cell and reserving not in older.log


@pytest.mark.parametrize(("stem", "fractions"), [
    ("nemotron-h-8b-base-8k", {"0.5.14": 0.903, "0.5.16": 0.903, "0.5.17": 0.907, "0.5.18": 0.903}),
    ("kimi-linear-48b-a3b-instruct", {"0.5.14": 0.896, "0.5.16": 0.907, "0.5.17": 0.907, "0.5.18": 0.896}),
    ("qwen3-next-80b-a3b", {"0.5.14": 0.907, "0.5.15": 0.903}),
])
def test_prefill_cuda_graphs_before_0_5_18(stem, fractions):
    # server_args.py _disable_breakable_cudagraph_if_incompatible turns the prefill graphs off for an MLA backend at
    # v0.5.16 and v0.5.17, and for NemotronH at v0.5.17; v0.5.18 names neither. Nemotron-H's 58 graphs of 8 MiB:
    # 512 + 8192 x 1.5 + 128 + 512 = 13,440 MiB reserved of 143,771 without them (0.907), 13,904 with (0.903);
    # Kimi-Linear's MLA graphs take 1.5 GiB (0.896). At v0.5.14 the default backend is tc_piecewise, whose rules
    # (_disable_tc_piecewise_cudagraph_if_incompatible) spare MLA and turn off the graphs of Qwen3-Next
    # (model_config.py piecewise_cuda_graph_disabled_model_archs). The golden tables of these releases agree.
    for version, fraction in fractions.items():
        assert h200_fraction(config_spec(stem), version) == fraction


@pytest.mark.parametrize(("version", "slots"), [("0.5.16", 198), ("0.5.17", 197)])
def test_the_state_budget_counts_the_dummy_slot_from_0_5_17(version, slots):
    # kv_cache_configurator.py _handle_max_mamba_cache: 60 GiB left, the share 0.9 / 1.9 = 30,516,872,892 B for slots of
    # 153,944,064 B: v0.5.16 takes budget // per = 198 and charges 198 slots; v0.5.17 takes (budget - per) // per = 197
    # and charges 197 + 1 (memory_pool.py allocates the dummy slot in both): the token pool is the same
    spec = config_spec(QWEN35, vision=None)
    inputs = EngineInputs(spec, ParallelLayout(), *lookup("h200"), None, memory(60, 0.9, 139))
    st = stage(run_engine("sglang", inputs, version))
    assert st.fields["max_mamba_cache_size"] == slots
    # resolve_max_num_reqs logs the cap by the state slots from v0.5.17 only (the golden tables' log lines)
    assert any("by the mamba state cache" in line for line in st.log) == (version == "0.5.17")
    assert st.fields["max_total_num_tokens"] == (60 * GIB - 198 * SLOT) // st.fields["cell_size_bytes"]


def test_a_given_context_caps_the_prefill_graphs_at_0_5_16():
    # server_args.py _handle_gpu_memory_settings at v0.5.16 cuts the prefill graphs' max_bs to a given context_length
    # (gone in v0.5.17): Nemotron-H at 4096 tokens captures 50 sizes of 8 MiB, not 58: 13,840 MiB reserved (0.904)
    spec = config_spec("nemotron-h-8b-base-8k")
    inputs = EngineInputs(spec, ParallelLayout(), *lookup("h200"), None, {"context_length": 4096, "weights_bytes": 30 * GIB})
    assert run_engine("sglang", inputs, "0.5.16").settings["mem_fraction_static"] == round((143_771 - 13_840) / 143_771, 3)
    assert h200_fraction(spec, "0.5.16") == 0.903


def test_the_lazy_extra_buffer_with_drafts_is_refused_at_0_5_16():
    # server_args.py _validate_mamba_extra_buffer at v0.5.16: "extra_buffer_lazy unsupported with spec." (v0.5.17 drops it)
    given = {"mamba_radix_cache_strategy": "extra_buffer_lazy", "speculative_num_steps": 3, "weights_bytes": 30 * GIB}
    inputs = EngineInputs(config_spec("qwen3-next-80b-a3b"), ParallelLayout(), *lookup("h200"), None, given)
    assert stage(run_engine("sglang", inputs, "0.5.16")).startup_error == "extra_buffer_lazy unsupported with spec."
    assert stage(run_engine("sglang", inputs, "0.5.17")).startup_error is None


def test_unknown_setting_is_refused():
    from mcache.core.errors import LayoutError

    with pytest.raises(LayoutError, match="not a setting of SGLang"):
        run("sglang", config_spec(QWEN35), max_num_seqs=8)


def test_serve_command_spells_sglangs_flags():
    line = serve_command(ServeArgs("org/model", 1, 2, 32768, None, "bfloat16", draft=3, prefix="off"))
    assert line == ("python -m sglang.launch_server --model-path org/model --tp-size 1 --pp-size 2 --context-length "
                    "32768 --mamba-ssm-dtype bfloat16 --disable-radix-cache --speculative-algorithm EAGLE "
                    "--speculative-num-steps 3")


def test_refusal_when_the_weights_leave_no_kv_memory():
    # kv_cache_configurator.py _profile_available_bytes: rest after the state pool <= 0 -> SGLang's ValueError, with
    # 1 - available / pre; SGLang 0.5.23 on Nemotron-H-56B, H200, weights 30 GiB, EAGLE 3 steps, no radix cache
    st = stage(run("sglang", config_spec("nemotron-h-56b-base-8k"), "h200", disable_radix_cache=True,
                   speculative_num_steps=3, weights_bytes=32_212_254_720, pre_model_load_memory_bytes=150_217_949_184))
    assert st.startup_error == (
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.903. Raise "
        "--mem-fraction-static above 0.215 (minimum viable = 1 - available/pre = 0.2144). If using speculative "
        "decoding, draft weights are now counted.")
    assert st.max_running_requests == 0


def test_a_model_without_attention_is_not_bound_by_its_token_pool():
    """Issue 28: a pure-Mamba model's token pool is the context's length (kv_cache_configurator.py) and holds no KV,
    so what runs at once is what SGLang logs as max_running_requests (here the state slots bind), not one sequence."""
    stage = run("sglang", config_spec("mamba-2.8b"), "h200").stages[0]
    assert stage.fields["max_total_num_tokens"] == 2048
    assert (stage.max_running_requests, stage.binding) == (stage.fields["max_running_requests_logged"], "state slots")
    assert stage.max_running_requests == 895 and stage.log[-1].endswith("max_running_requests=895, context_len=2048")


def test_a_mamba2_config_without_intermediate_size_is_refused_from_0_5_20():
    """configs/mamba2.py (v0.5.20-v0.5.23) reads intermediate_size, which transformers' Mamba2Config never writes:
    the published mamba2-2.7b config (as converted) fails; one that declares it starts, as 0.5.19 fails on either."""
    def error(spec, version):
        return stage(sglang.run(EngineInputs(spec, ParallelLayout(), *lookup("h200"), None, {},
                                             version=version))).startup_error

    spec = config_spec("mamba2-2.7b")
    assert spec.mamba2.intermediate_size is None
    for version in ("0.5.20", "0.5.23"):
        assert error(spec, version) == "'Mamba2Config' object has no attribute 'intermediate_size'"
    declared = replace(spec, mamba2=replace(spec.mamba2, intermediate_size=5120))
    assert error(declared, "0.5.23") is None
    assert "num_attention_heads" in error(declared, "0.5.19")


def pp_run(stem: str, pp: int, version: str | None = None, partition: tuple[int, ...] | None = None, **settings):
    """SGLang's run at `version` of the config `stem` at `pp` stages (split as `partition`, if given) on an H200 with
    30 GiB of weights a stage."""
    layout = ParallelLayout(pp=pp, pp_partition=partition)
    return run_engine("sglang", EngineInputs(config_spec(stem), layout, *lookup("h200"), None,
                                             {"weights_bytes": 30 * GIB, **settings}), version)


def pp_error(stem: str, pp: int, version: str | None = None, **settings) -> str | None:
    return stage(pp_run(stem, pp, version, **settings)).startup_error


def test_models_that_assert_one_stage_are_refused_with_pipeline_parallelism():
    """models/qwen3_next.py (falcon_h1.py, lfm2.py, lfm2_moe.py) assert a single PP stage in __init__, reported as the
    assertion's source line (Python's traceback); Nemotron-H splits its layers (make_pp_layers) and starts at PP 2."""
    assert pp_error("qwen3-next-80b-a3b", 2).startswith("assert self.pp_group.is_first_rank and "
                                                        "self.pp_group.is_last_rank, in Qwen3NextForCausalLM.__init__")
    assert pp_error("lfm2-1.2b", 2).startswith("assert self.pp_group.is_first_rank and self.pp_group.is_last_rank, "
                                               "in Lfm2ForCausalLM.__init__")
    assert pp_error("lfm2-1.2b", 1) is None
    assert pp_error("nemotron-h-8b-base-8k", 2) is None


def test_a_model_whose_forward_takes_no_pp_proxy_tensors_is_refused_at_pp():
    """model_executor/model_runner.py: at PP > 1 the runner asserts support_pp (models/mamba.py's forward takes no
    pp_proxy_tensors); before 0.5.20 ModelConfig fails on the Mamba config first."""
    assert pp_error("mamba-2.8b", 2, "0.5.20").startswith("Pipeline Parallel is not compatible with this model.")
    assert pp_error("mamba-2.8b", 1, "0.5.20") is None
    assert pp_error("mamba-2.8b", 2, "0.5.19") == "'MambaConfig' object has no attribute 'num_attention_heads'"


def test_mamba2_groups_the_mixers_tp_cannot_split_stop_sglang_as_the_model_is_built():
    """layers/attention/mamba/mamba.py MambaMixer2.__init__ (0.5.3 - 0.5.23) asserts `n_groups % tp_size == 0 or n_groups
    == 1`, its TP size the attention-TP group's under attention DP from 0.5.14 and the TP group's before: Falcon-H1-34B's
    2 groups (the extra golden tables)."""
    falcon = load_spec(str(HF_CONFIGS_EXTRA / "falcon-h1-34b.json"))

    def refusal(version: str, tp: int, dp: int | None = None) -> str | None:
        layout = ParallelLayout(tp=tp, attention_dp=dp is not None, attention_dp_size=dp)
        return stage(run_engine("sglang", EngineInputs(falcon, layout, *lookup("h200"), None, {}), version)).startup_error

    words = "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
    assert refusal("0.5.23", 4).startswith(words)
    assert refusal("0.5.23", 2) is None  # one group a rank
    assert refusal("0.5.23", 4, 2) is None and refusal("0.5.23", 8, 2).startswith(words)  # 2 and 4 attention-TP ranks
    assert refusal("0.5.9", 4, 2).startswith(words)  # the whole TP group's 4


def test_the_first_nemotron_h_class_reads_rms_norm_eps_and_builds_no_moe_layer():
    """models/nemotron_h.py v0.5.3.post1-v0.5.5.post3: every layer reads config.rms_norm_eps (the Nano-30B config sets
    none: the release tables), only M, - and * layers have a class (KeyError 'E'), and a Mamba2 mixer before the first
    MoE layer checks its groups first; 0.5.6 reads layer_norm_epsilon and builds MoE layers."""
    nano = config_spec("nvidia-nemotron-3-nano-30b-a3b")  # "MEMEM*E...": a Mamba2 layer first, MoE from layer 1
    assert nano.norm_eps_keys == []

    def refusal(spec, version: str, tp: int = 1) -> str | None:
        return stage(run("sglang", spec, "h200", tp=tp, version=version)).startup_error

    words = "'NemotronHConfig' object has no attribute 'rms_norm_eps'"
    assert refusal(nano, "0.5.3.post1").startswith(words) and refusal(nano, "0.5.5.post3").startswith(words)
    assert sglang.architecture_error(nano, "0.5.4").startswith(words)
    assert refusal(nano, "0.5.6") is None and sglang.architecture_error(nano, "0.5.6") is None
    with_eps = replace(nano, norm_eps_keys=["rms_norm_eps"])
    assert refusal(with_eps, "0.5.4").startswith("'E' (layer 1 is an MoE layer")
    two_groups = replace(with_eps, mamba2=replace(nano.mamba2, n_groups=2))  # unsplit at TP 4, split at TP 2
    assert refusal(two_groups, "0.5.4", tp=4).startswith("If tensor parallel world size does not divide num_groups")
    assert refusal(two_groups, "0.5.4", tp=2).startswith("'E'")
    dense = config_spec("nemotron-h-8b-base-8k")  # sets rms_norm_eps
    assert dense.norm_eps_keys == ["rms_norm_eps"] and refusal(dense, "0.5.4") is None
    assert refusal(replace(dense, norm_eps_keys=None), "0.5.4") is None  # a hand-written spec: assumed set


def test_a_quantized_checkpoints_mamba2_mixer_takes_a_tp_size_that_divides_its_groups():
    """layers/attention/mamba/mamba.py MambaMixer2.__init__ (0.5.3.post1 - 0.5.23): `n_groups % tp_size == 0 or
    tp_size == 1 or quant_config is None`, after the groups' own assertion; models/falcon_h1.py passes no quant config."""
    fp8 = load_spec(str(HF_CONFIGS_EXTRA / "bamba-9b-fp8.json")).quantization
    granite = config_spec("granite-4.0-h-tiny", quantization=fp8)  # one group

    def refusal(spec, version: str = "0.5.23", tp: int = 2) -> str | None:
        return stage(run("sglang", spec, "h200", tp=tp, version=version)).startup_error

    words = "Tensor parallel currently supported for quantized models only if tensor parallel world size divides num groups."
    assert refusal(granite).startswith(f"{words} (MambaMixer2 of GraniteMoeHybridForCausalLM: its 1 Mamba2 group over")
    assert refusal(granite, tp=1) is None and refusal(config_spec("granite-4.0-h-tiny")) is None
    assert refusal(config_spec("falcon-h1-0.5b", quantization=fp8)) is None
    assert refusal(config_spec("nemotron-h-8b-base-8k", quantization=fp8), tp=4) is None  # 8 groups
    nemotron_one = config_spec("nemotron-h-8b-base-8k", quantization=fp8)
    nemotron_one = replace(nemotron_one, mamba2=replace(nemotron_one.mamba2, n_groups=1))
    assert refusal(nemotron_one, "0.5.3.post1").startswith(words) and refusal(nemotron_one, "0.5.3") is not None


@pytest.mark.parametrize(("version", "refusal"), [
    ("0.5.14", "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"),
    ("0.5.20", "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"),
    ("0.5.21", "PP + speculative decoding (MTP) is only supported on prefill nodes (disaggregation-mode=prefill)"),
    ("0.5.23", "PP + speculative decoding (MTP) is only supported on prefill nodes (disaggregation-mode=prefill)"),
])
def test_drafts_at_pp_are_refused(version, refusal):
    """check_server_args at launch (server_args.py, arg_groups/validation_hook.py): PP > 1 asserts no speculative
    decoding up to 0.5.20; from 0.5.21 check_pipeline_parallel_compat runs drafts on a PD prefill node only. The
    server args' check comes before the model class's own assert (Qwen3-Next)."""
    assert pp_error("nemotron-h-8b-base-8k", 2, version, speculative_num_steps=3) == refusal
    assert pp_error("qwen3-next-80b-a3b", 2, version, speculative_num_steps=3) == refusal
    assert pp_error("nemotron-h-8b-base-8k", 1, version, speculative_num_steps=3) is None


@pytest.mark.parametrize(("layers", "pp", "split"), [(52, 3, [17, 17, 18]), (27, 4, [6, 7, 7, 7]), (32, 2, [16, 16]),
                                                     (33, 2, [16, 17]), (64, 3, [21, 21, 22])])
def test_pp_stages_split_the_layers_as_get_pp_indices(layers, pp, split):
    # distributed/utils.py get_pp_indices: layers // pp each, the last layers % pp stages one more; a given
    # --pp-partition is SGLANG_PP_LAYER_PARTITION and kept
    assert [len(r) for r in pp_layout(ParallelLayout(pp=pp), layers, spared=0).stages(layers)] == split
    given = ParallelLayout(pp=2, pp_partition=(1, layers - 1))
    assert pp_layout(given, layers, spared=0) is given


def test_every_stage_is_charged_the_state_of_the_stage_with_the_most_recurrent_layers():
    """kv_cache_configurator.py _handle_max_mamba_cache (0.5.17 on): int(per_req * most / all) on every stage.
    Nemotron-H-8B (24 Mamba layers of 4,255,744 B at TP 1) at PP 3 is split 17/17/18 (layers 0-16, 17-33, 34-51):
    8 Mamba layers each, 34,045,952 B (the first stages' extra layer would put 9 on stage 0). Kimi-Linear (20 KDA
    layers of 2,170,880 B) at PP 3, 9/9/9: 7 at most, and 43,417,600 x 0.35 in floating point is one byte short of
    7 x 2,170,880 = 15,196,160. Before 0.5.17 every stage is charged the whole model's bytes."""
    def per_slot(stem, pp, version=None):
        return {st.fields["mamba_cache_per_req_bytes"] for st in pp_run(stem, pp, version).stages}

    assert per_slot("nemotron-h-8b-base-8k", 3) == {8 * 4_255_744}
    assert per_slot("nemotron-h-8b-base-8k", 3, "0.5.16") == {24 * 4_255_744}
    assert per_slot("kimi-linear-48b-a3b-instruct", 2) == {10 * 2_170_880}
    assert per_slot("kimi-linear-48b-a3b-instruct", 3) == {7 * 2_170_880 - 1}


def test_a_stage_without_attention_layers_leaves_the_token_pool_to_the_others():
    """pool_configurator.py (0.5.17 on): a stage with no full-attention layer offers int64 max tokens, and the stages'
    MIN (_apply_token_constraints) gives every stage the other's pool; 0.5.14-0.5.16 divide by its zero cell.
    Nemotron-H-8B at PP 2 with SGLANG_PP_LAYER_PARTITION=1,51: stage 0 holds Mamba layer 0 alone."""
    def stages(version):
        return pp_run("nemotron-h-8b-base-8k", 2, version, partition=(1, 51)).stages

    first, second = stages("0.5.23")
    assert first.fields["cell_size_bytes"] == 0 and second.fields["cell_size_bytes"] == 4 * 2 * 8 * 128 * 2
    assert first.fields["max_total_num_tokens"] == second.fields["max_total_num_tokens"] > 0
    assert first.startup_error is None
    assert stages("0.5.16")[0].startup_error == "integer division or modulo by zero"
    assert stages("0.5.16")[1].startup_error is None


@pytest.mark.parametrize(("version", "fraction"), [("0.5.14", 0.906), ("0.5.18", 0.902), ("0.5.19", 0.906),
                                                   ("0.5.23", 0.906)])
def test_prefill_cuda_graphs_are_off_at_pp_in_0_5_14_and_from_0_5_19(version, fraction):
    """Nemotron-H-8B on an H200 (143,771 MiB) at PP 2: 512 + 8192 x 1.5 + 1 x 2 / 8 x 1024 + 256 x 2 = 13,568 MiB
    reserved without prefill graphs, 0.906; 0.5.18 also captures them (58 sizes to 8192, 8 MiB each: 464 MiB), 0.902.
    server_args.py _disable_tc_piecewise_cudagraph_if_incompatible (0.5.14), arg_groups/cuda_graph_hook.py
    apply_cuda_graph_compatibility (0.5.19 on)."""
    assert pp_run("nemotron-h-8b-base-8k", 2, version).settings["mem_fraction_static"] == fraction


def test_pp_turns_the_overlap_scheduler_off():
    """arg_groups/overrides.py _pipeline_parallel_overlap_disable: extra_buffer without overlap keeps 4 slots."""
    result = run("sglang", config_spec(QWEN35), pp=2)
    assert result.settings["disable_overlap_schedule"] is True
    assert {st.fields["state_slots_per_request"] for st in result.stages} == {4}


@pytest.mark.parametrize("stem", ["plamo-2-1b", "ring-mini-linear-2.0"])
def test_an_architecture_neither_sglang_nor_transformers_has_is_refused(stem):
    """model_loader/utils.py resolve_transformers_arch: no SGLang class, no transformers class, no auto_map.AutoModel."""
    st = stage(run("sglang", config_spec(stem), "h200"))
    assert st.startup_error.startswith(f"Cannot find model module. '{config_spec(stem).architecture}' is not a registered")


def test_gpus_of_20_to_35_gb_by_version():
    # arg_groups/memory_hook.py handle_gpu_memory_settings: v0.5.20 raised the 20-35 GB row from a 2048-token chunk
    # and decode graphs up to 24 (TP < 4) / 80 (TP >= 4) to 4096 and 48 / 160; the other rows did not change
    rtx_5090 = 32_607
    assert [_chunked_prefill(rtx_5090, at(v)) for v in VERSIONS] == [2048] * VERSIONS.index("0.5.20") + [4096] * 4
    assert [_decode_graph_max_bs(rtx_5090, at(v), None) for v in ("0.5.19", "0.5.20")] == [24, 48]
    assert [_decode_graph_max_bs(rtx_5090, at(v, tp=4), None) for v in ("0.5.19", "0.5.20")] == [80, 160]
    assert {_chunked_prefill(143_771, at(v)) for v in VERSIONS} == {8192}


def test_extra_buffer_without_the_mamba_radix_cache_by_version():
    # arg_groups/model_hook.py handle_mamba_radix_cache: from v0.5.21 it refuses; v0.5.20 runs a pure Mamba model with
    # the base 3 slots plus the buffer's 2 tracking slots (its golden table: 2135 slots, 427 requests)
    spec = config_spec("mamba-2.8b")
    refused = stage(run("sglang", spec, "h200", mamba_radix_cache_strategy="extra_buffer")).startup_error
    assert refused == "--mamba-radix-cache-strategy extra_buffer needs mamba state, got MambaForCausalLM."
    older = run_engine("sglang", EngineInputs(spec, ParallelLayout(), "h200", 143_771 << 20,
                                              given={"mamba_radix_cache_strategy": "extra_buffer"}), "0.5.20")
    assert older.stages[0].startup_error is None and older.stages[0].fields["state_slots_per_request"] == 5


@pytest.mark.parametrize(("stem", "config_class"), [("mamba-2.8b", "MambaConfig"),
                                                    ("falcon-mamba-7b", "FalconMambaConfig")])
def test_pure_mamba_starts_from_0_5_20(stem, config_class):
    # configs/model_config.py at v0.5.18 and v0.5.19 reads hf_text_config.num_attention_heads, which a Mamba config
    # lacks (their golden tables: every mamba-2.8b and falcon-mamba-7b case fails so); v0.5.20 reads it only where
    # present and has models/mamba.py and models/falcon_mamba.py
    inputs = EngineInputs(config_spec(stem), ParallelLayout(), "h200", 143_771 << 20)
    for version in ("0.5.18", "0.5.19"):
        assert run_engine("sglang", inputs, version).stages[0].startup_error == (
            f"'{config_class}' object has no attribute 'num_attention_heads'")
    assert run_engine("sglang", inputs, "0.5.20").stages[0].startup_error is None


def test_kimi_linear_has_no_extra_buffer_at_0_5_15():
    # arg_groups/overrides.py at v0.5.15 names KimiLinearForCausalLM in _MAMBA_RADIX_CACHE_ARCHS, not in
    # _MAMBA_EXTRA_BUFFER_ARCHS (v0.5.16 adds it): auto resolves to no_buffer, 3 slots per request, overlap off
    inputs = EngineInputs(config_spec("kimi-linear-48b-a3b-instruct"), ParallelLayout(), *lookup("h200"), None,
                          {"weights_bytes": 30 * GIB})
    older, newer = (stage(run_engine("sglang", inputs, v)).fields for v in ("0.5.15", "0.5.16"))
    assert (older["mamba_radix_cache_strategy"], older["state_slots_per_request"]) == ("no_buffer", 3)
    assert (newer["mamba_radix_cache_strategy"], newer["state_slots_per_request"]) == ("extra_buffer", 5)


def test_kimi_k3_is_served_from_0_5_17():
    # models/kimi_k3.py is new in v0.5.17: v0.5.16 refuses it as it does BailingMoeV3 before v0.5.19 (its golden table)
    inputs = EngineInputs(config_spec("kimi-k3"), ParallelLayout(), *lookup("h200"), None, {"weights_bytes": 30 * GIB})
    assert stage(run_engine("sglang", inputs, "0.5.16")).startup_error.startswith(
        "Cannot find model module. 'KimiK3ForConditionalGeneration' is not a registered model in the Transformers "
        "library, and SGLang 0.5.16 has no class of its own for it (models/kimi_k3.py comes with 0.5.17)")
    assert stage(run_engine("sglang", inputs, "0.5.17")).startup_error is None


def test_bailing_moe_v3_is_served_from_0_5_19():
    # models/bailing_moe_v3.py is new in v0.5.19; at v0.5.18 neither SGLang nor transformers has the class, and
    # arg_groups/overrides.py names it in neither radix-cache list, so no strategy check runs before the refusal
    # (the 0.5.18 table: every edge0 case, no_buffer with the overlap scheduler too)
    inputs = EngineInputs(config_spec("edge0-8b-a1b-preview"), ParallelLayout(), "h200", 143_771 << 20,
                          given={"mamba_radix_cache_strategy": "no_buffer"})
    refused = stage(run_engine("sglang", inputs, "0.5.18"))
    assert refused.startup_error.startswith("Cannot find model module. 'BailingMoeV3ForCausalLM' is not a registered "
                                            "model in the Transformers library, and SGLang 0.5.18 has no class")
    assert refused.fields["state_slots_per_request"] == 3  # the radix cache unresolved, as for a pure Mamba model
    assert stage(run_engine("sglang", inputs, "0.5.19")).startup_error == (
        "no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.")


def test_a_release_before_the_oldest_modelled_is_refused_in_one_line(capsys):
    err = one_line(["size", "nemotron-h-8b", "--engine", "sglang", "--engine-version", "0.5.1"], capsys)
    assert f"SGLang {VERSIONS[0]} or later" in err and "got 0.5.1" in err


# --- SGLang 0.5.2 to 0.5.9: the first hybrid releases (model_executor/model_runner.py, managers/tp_worker.py) -------

QWEN3_NEXT = "qwen3-next-80b-a3b"
NEXT_SLOT = 36 * (8192 * 3 * 2 + 32 * 128 * 128 * 4)  # 36 GDN layers at TP 1: bf16 conv + float32 state, 77,266,944 B
NEXT_CELL = 12 * 2 * 256 * 2 * 2  # 12 attention layers, 2 KV heads of 256, K and V in bf16: 24,576 B a token


def first_line(version: str, rest_gib: float = 100, **settings):
    """Qwen3-Next at TP 1 on an H200 at `version`, with `rest_gib` GiB left for the pools (mem_fraction_static 0.9)."""
    inputs = EngineInputs(config_spec(QWEN3_NEXT), ParallelLayout(), "H200", lookup("h200")[1],
                          given={**memory(rest_gib, 0.9, 130), **settings})
    return stage(run_engine("sglang", inputs, version))


def run_at(config: str, version: str, **given):
    """`config` at TP 1 on an H200 at `version`, its weights 30 GiB."""
    inputs = EngineInputs(config_spec(config), ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": 30 * GIB, **given})
    return stage(run_engine("sglang", inputs, version))


def test_0_5_2_mem_fraction_static_by_its_gpu_rows():
    # server_args.py __post_init__ at v0.5.2: reserve (12 + TP x PP / 2) GiB below 160 GB, (9.5 + TP x PP / 2) below
    # 90 GB, 32 GiB above 160 GB; 2 GiB more with a draft. H200 (143,771 MiB): (143,771 - 12,800) / 143,771 = 0.911, with a
    # draft 0.897; a 48 GB card at TP 4: (49,140 - 11,776) / 49,140 = 0.760; 190,000 MiB: (190,000 - 32,768) / 190,000
    assert _mem_fraction_0_5_2(143_771, at("0.5.2"), 0) == 0.911
    assert _mem_fraction_0_5_2(143_771, at("0.5.2"), 4) == 0.897
    assert _mem_fraction_0_5_2(49_140, at("0.5.2", tp=4), 0) == 0.760
    assert _mem_fraction_0_5_2(190_000, at("0.5.2"), 0) == 0.828
    assert [_chunked_prefill(mb, at("0.5.2")) for mb in (32_607, 49_140, 143_771, 190_000)] == [2048, 8192, 8192, 16384]


def test_0_5_2_state_pool_of_512_slots_or_the_running_requests():
    # model_runner.py v0.5.2: the radix cache off for Qwen3-Next, max_mamba_cache_size = --max-running-requests or 512,
    # its slots off the rest: (100 GiB - 512 x 77,266,944 B) // 24,576 = 2,759,338 tokens; the request pool
    # min(clamp(tokens / 262,144 x 512, 2048, 4096), 512) = 512, the scheduler min(tokens // 2, 512)
    st = first_line("0.5.2")
    assert st.fields["mamba_cache_per_req_bytes"] == NEXT_SLOT
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"]) == (
        512, 2_759_338, 512)
    assert st.fields["state_slots_per_request"] == 1
    assert st.log[0] == "Mamba Cache is allocated. conv_state size: 0.85GB, ssm_state size: 36.07GB "  # 513 slots
    st = first_line("0.5.2", max_running_requests=64)  # (100 GiB - 64 slots) // 24,576
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"]) == (
        64, 4_167_850, 64)


def test_0_5_2_a_draft_adds_its_tokens_to_the_pool_and_48_slots():
    # server_args.py: EAGLE's default max_running_requests 48, so 48 slots; init_memory_pool: (100 GiB - 48 slots) //
    # 24,576 = 4,218,154 profiled tokens, + 48 x (3 steps + 4 draft tokens) + 100 = 4,218,590; no draft state counted
    st = first_line("0.5.2", speculative_num_steps=3)
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"]) == (
        48, 4_218_590, 48)


def test_0_5_2_refuses_what_it_does_not_have():
    # server_args.py v0.5.2: no mamba_full_memory_ratio and no radix-cache strategy field (ServerArgs refuses them)
    for setting, value in (("mamba_full_memory_ratio", 0.5), ("mamba_radix_cache_strategy", "no_buffer")):
        with pytest.raises(LayoutError, match=f"{setting}: not a setting of SGLang 0.5.2"):
            first_line("0.5.2", **{setting: value})
    # model_runner.py init_memory_pool: auto / fp8_e5m2 / fp8_e4m3 only; configs/qwen3_next.py: float32 / bfloat16 states
    assert first_line("0.5.2", kv_cache_dtype="bfloat16").startup_error == "Unsupported kv_cache_dtype: bfloat16."
    assert first_line("0.5.2", mamba_ssm_dtype="float16").startup_error == "'float16'"
    # no SGLang class for the other hybrids: transformers 4.56.1 has Falcon-H1's, which the backend cannot serve;
    # none for Nemotron-H
    assert stage(run_engine("sglang", EngineInputs(config_spec("falcon-h1-0.5b"), ParallelLayout()), "0.5.2")
                 ).startup_error.startswith("FalconH1ForCausalLM has no SGlang implementation")
    assert stage(run_engine("sglang", EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout()), "0.5.2")
                 ).startup_error.startswith("Cannot find model module. 'NemotronHForCausalLM'")


def test_0_5_3_mem_fraction_static_reserves_2_gib_for_a_draft_past_the_floor():
    # server_args.py _handle_gpu_memory_settings at v0.5.3: 512 + 8192 x 1.5 + TP / 8 GiB + 256 graphs x 2 = 13,440 MiB
    # on an H200 (above the 10 GiB floor), no prefill graphs: (143,771 - 13,440) / 143,771 = 0.907; a draft 2,048 more:
    # (143,771 - 15,488) / 143,771 = 0.892 (v0.5.2's rows gave 0.911 / 0.897)
    assert _mem_fraction(143_771, 8192, at("0.5.3"), None, _prefill_graph_mb(
        config_spec(QWEN3_NEXT), 8192, None, at("0.5.3"))) == 0.907
    assert _mem_fraction(143_771, 8192, at("0.5.3"), None, 0, drafts=4) == 0.892
    # 20-35 GB GPUs: decode graphs up to 16 at TP < 4 (24 from v0.5.5)
    assert _decode_graph_max_bs(32_607, at("0.5.3"), None) == 16


def test_0_5_3_falcon_h1_holds_512_slots_without_the_radix_cache():
    # models/falcon_h1.py is new in v0.5.3 and model_runner.py is_hybrid_gdn names it: the radix cache off, one slot a
    # request, 512 slots; v0.5.2 refuses it (transformers 4.56.1's class is not backend-compatible)
    inputs = EngineInputs(config_spec("falcon-h1-0.5b"), ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": GIB})
    st = stage(run_engine("sglang", inputs, "0.5.3"))
    assert (st.startup_error, st.fields["max_mamba_cache_size"], st.fields["state_slots_per_request"]) == (None, 512, 1)
    assert stage(run_engine("sglang", inputs, "0.5.2")).startup_error.startswith("FalconH1ForCausalLM has no SGlang")
    # init_memory_pool's refusal names the value from v0.5.3 (its f-string `{self.server_args.mem_fraction_static=}`)
    assert first_line("0.5.3", rest_gib=-5).startup_error == (
        "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
        "self.server_args.mem_fraction_static=0.9")


def test_0_5_4_qwen3_next_keeps_the_radix_cache_and_takes_its_share():
    # model_runner.py handle_max_mamba_cache at v0.5.4: with the radix cache (GDN) the state pool takes r / (1 + r) of the
    # rest: 100 GiB x 0.9 / 1.9 // 77,266,944 B = 658 slots, the tokens (100 GiB - 658 slots) // 24,576 = 2,300,314; each
    # request holds 3 slots (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO): the request pool min(4096, 658 // 3) = 219
    st = first_line("0.5.4")
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"],
            st.fields["max_running_requests_logged"], st.fields["state_slots_per_request"]) == (658, 2_300_314, 219, 3)
    # MambaPool sized max_mamba_cache_size from v0.5.4, and named: 659 slots x 36 layers x 49,152 B (conv) = 1.09 GB,
    # x 2,097,152 B (state) = 46.34 GB
    assert st.log[0] == ("Mamba Cache is allocated. max_mamba_cache_size: 658, conv_state size: 1.09GB, ssm_state size: "
                         "46.34GB ")
    # a draft of D = 4 tokens: each slot holds 1 + D states, 100 GiB x 0.9 / 1.9 // per // 5 = 131 slots, (100 GiB -
    # 131 x 5 x per) // 24,576 = 2,309,746 tokens; 48 requests (the draft's default) capped at 131 // 3 = 43, whose draft
    # tokens add 43 x (3 + 4) + 100 = 401
    st = first_line("0.5.4", speculative_num_steps=3)
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"],
            st.fields["max_running_requests_logged"]) == (131, 2_310_147, 43)
    # a given --max-mamba-cache-size is overwritten with the radix cache, and honoured without (one slot a request)
    assert first_line("0.5.4", max_mamba_cache_size=200).fields["max_mamba_cache_size"] == 658
    st = first_line("0.5.4", disable_radix_cache=True)
    assert (st.fields["max_mamba_cache_size"], st.fields["state_slots_per_request"]) == (512, 1)


def test_0_5_4_mamba2_hybrids_run_without_the_radix_cache():
    # models/nemotron_h.py is new in v0.5.4; initialize turns the radix cache off for mamba2_config (Nemotron-H,
    # Falcon-H1): --max-running-requests or 512 slots, one a request; v0.5.3 has no class for Nemotron-H
    inputs = EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": 16 * GIB})
    st = stage(run_engine("sglang", inputs, "0.5.4"))
    assert (st.startup_error, st.fields["max_mamba_cache_size"], st.fields["state_slots_per_request"]) == (None, 512, 1)
    assert stage(run_engine("sglang", replace(inputs, given={**inputs.given, "max_running_requests": 64}), "0.5.4")
                 ).fields["max_mamba_cache_size"] == 64
    assert stage(run_engine("sglang", inputs, "0.5.3")).startup_error.startswith("Cannot find model module.")


def test_0_5_5_kimi_linear_holds_512_slots_and_the_20_35_gb_row_draws_24_graphs():
    # models/kimi_linear.py is new in v0.5.5 (model_runner.py mambaish_config: kimi_linear_config), and
    # server_args.py _handle_model_specific_adjustments turns its radix cache off: 512 slots, one a request; v0.5.4 has
    # no class for it (transformers 4.57.1 none either)
    inputs = EngineInputs(config_spec("kimi-linear-48b-a3b-instruct"), ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": 30 * GIB})
    st = stage(run_engine("sglang", inputs, "0.5.5"))
    assert (st.startup_error, st.fields["max_mamba_cache_size"], st.fields["state_slots_per_request"]) == (None, 512, 1)
    assert stage(run_engine("sglang", inputs, "0.5.4")).startup_error.startswith(
        "Cannot find model module. 'KimiLinearForCausalLM'")
    # server_args.py _handle_gpu_memory_settings: decode graphs up to 24 on 20-35 GB at TP < 4 from v0.5.5 (16 before)
    assert [_decode_graph_max_bs(32_607, at(v), None) for v in ("0.5.4", "0.5.5")] == [16, 24]


def test_0_5_13_reserves_4_gib_for_a_draft_past_the_10_gib_floor():
    # server_args.py _handle_gpu_memory_settings at v0.5.13: an H200 at --chunked-prefill-size 2048 reserves 512 + 2048
    # x 1.5 + 1 x 1 / 8 x 1024 + 256 x 2 = 4,224 MiB, lifted to the 10,240 MiB floor; an EAGLE draft adds 4,096 after
    # it: (143,771 - 14,336) / 143,771 = 0.900 (before the floor it would vanish in it: 0.929). v0.5.14 adds nothing
    assert _mem_fraction(143_771, 2048, at("0.5.13"), None, 0, drafts=4) == 0.900
    assert _mem_fraction(143_771, 2048, at("0.5.14"), None, 0, drafts=4) == _mem_fraction(
        143_771, 2048, at("0.5.13"), None, 0) == 0.929
    # the H200's own chunk (8192): 512 + 12,288 + 128 + 512 = 13,440 MiB, + 4,096 = 17,536: 0.878 (0.907 without)
    assert _mem_fraction(143_771, 8192, at("0.5.13"), None, 0, drafts=4) == 0.878
    assert _mem_fraction(143_771, 8192, at("0.5.13"), None, 0) == 0.907


@pytest.mark.parametrize(("given", "old", "new"), [(2000, 2000, 1500), (3000, 2048, 1500)])
def test_0_5_13_caps_a_given_max_running_requests_at_the_estimate_not_at_half_the_tokens(given, old, new):
    # model_runner_kv_cache_mixin.py _resolve_max_num_reqs at v0.5.13: min(given, clamp(int(tokens / context x 512),
    # 2048, 4096)); v0.5.14's: min(given, tokens // 2). 3,000 tokens (--max-total-tokens) at Falcon-H1's 16,384:
    # int(93.75) clamped up to 2048, half the tokens 1500; without the radix cache the state pool holds the requests
    # given, a slot each, so no state cap
    inputs = EngineInputs(config_spec("falcon-h1-0.5b"), ParallelLayout(), *lookup("h200"), None,
                          {"max_total_tokens": 3000, "disable_radix_cache": True, "max_running_requests": given,
                           "weights_bytes": 2 * GIB})
    logged = [stage(run_engine("sglang", inputs, v)).fields["max_running_requests_logged"] for v in ("0.5.13", "0.5.14")]
    assert logged == [old, new]


def test_0_5_13_names_the_strategy_mamba_scheduler_strategy_and_resolves_auto_to_no_buffer():
    # server_args.py at v0.5.13: --mamba-scheduler-strategy (0.5.14: --mamba-radix-cache-strategy); auto is no_buffer
    # for every model (_handle_missing_default_values), and _handle_mamba_radix_cache turns the overlap scheduler off
    # for no_buffer with the radix cache (3 slots a request), where 0.5.14 resolves auto to extra_buffer (5)
    inputs = EngineInputs(config_spec("qwen3-next-80b-a3b"), ParallelLayout(), *lookup("h200"), None,
                          {"weights_bytes": 30 * GIB})
    old, new = run_engine("sglang", inputs, "0.5.13"), run_engine("sglang", inputs, "0.5.14")
    assert (old.settings["mamba_scheduler_strategy"], old.settings["disable_overlap_schedule"]) == ("no_buffer", True)
    assert "mamba_radix_cache_strategy" not in old.settings and "mamba_scheduler_strategy" not in new.settings
    assert (stage(old).fields["mamba_scheduler_strategy"], stage(old).fields["state_slots_per_request"]) == ("no_buffer", 3)
    assert (stage(new).fields["mamba_radix_cache_strategy"], stage(new).fields["state_slots_per_request"]) == (
        "extra_buffer", 5)
    # a 0.5.13 boot log's setting is read under its name and fed to mcache's option
    log = read_log("server_args=ServerArgs(model_path='m', mamba_scheduler_strategy='extra_buffer', tp_size=1)")
    assert log.settings["mamba_scheduler_strategy"] == "extra_buffer"
    assert option_for("sglang", "mamba_scheduler_strategy") == "mamba_radix_cache_strategy"


@pytest.mark.parametrize(("stem", "given", "refusal"), [
    ("qwen3-next-80b-a3b", {"speculative_num_steps": 3},
     "Speculative decoding for Qwen3NextForCausalLM is not compatible with radix cache when using "
     "--mamba-scheduler-strategy no_buffer.To use radix cache"),
    ("qwen3-next-80b-a3b", {"mamba_radix_cache_strategy": "extra_buffer", "disable_radix_cache": True},
     "mamba extra_buffer is not compatible with --disable-radix-cache."),
    ("qwen3-next-80b-a3b", {"mamba_radix_cache_strategy": "extra_buffer_lazy", "speculative_num_steps": 3},
     "extra_buffer_lazy is not yet supported with speculative decoding."),
    ("lfm2-1.2b", {"mamba_radix_cache_strategy": "extra_buffer"},
     "mamba extra_buffer is not supported for Lfm2ForCausalLM model"),
])
def test_0_5_13_refuses_the_strategies_its_radix_cache_cannot_run(stem, given, refusal):
    # server_args.py _handle_mamba_radix_cache at v0.5.13 (0.5.14 runs each: no_buffer is not auto's pick with drafts,
    # the radix-cache check returns first without the radix cache, lazy with drafts is its own message)
    inputs = EngineInputs(config_spec(stem), ParallelLayout(), *lookup("h200"), None, {"weights_bytes": 30 * GIB, **given})
    assert stage(run_engine("sglang", inputs, "0.5.13")).startup_error.startswith(refusal)


def test_0_5_13_turns_kimi_linears_radix_cache_off():
    # server_args.py _handle_model_specific_adjustments at v0.5.13: KimiLinearForCausalLM's branch passes
    # support_mamba_cache=False, so the radix cache is off whatever the strategy: 1 slot a request, and with drafts
    # the state pool holds the 48 requests the speculative hook sets (0.5.14: the radix cache on, 3 slots)
    inputs = EngineInputs(config_spec("kimi-linear-48b-a3b-instruct"), ParallelLayout(), *lookup("h200"), None,
                          {"weights_bytes": 30 * GIB, "speculative_num_steps": 3})
    old, new = run_engine("sglang", inputs, "0.5.13"), run_engine("sglang", inputs, "0.5.14")
    assert old.settings["disable_radix_cache"] is True and stage(old).fields["state_slots_per_request"] == 1
    assert stage(old).fields["max_mamba_cache_size"] == 48
    assert new.settings["disable_radix_cache"] is False and stage(new).fields["state_slots_per_request"] == 3


def test_0_5_12_takes_every_requests_draft_states_off_the_rest_before_the_slots():
    # model_runner_kv_cache_mixin.py handle_max_mamba_cache at v0.5.12: 48 requests (the speculative hook's) x 4 draft
    # tokens x 153,944,064 B = 29,557,260,288 B off the 60 GiB first; the slots are then (rest x 0.9 / 1.9) // per =
    # 107, the tokens (64,424,509,440 - 29,557,260,288 - 107 x per) // 65,536 = 280,689. v0.5.13 solves jointly:
    # (60 GiB x 0.9 / 1.9) // (per x (1 + 4 / 5)) = 110 slots, draft states for min(48, 110 // 5) = 22 requests:
    # (64,424,509,440 - 22 x 4 x per - 110 x per) // 65,536 = 517,938
    inputs = EngineInputs(config_spec(QWEN35, vision=None), ParallelLayout(), *lookup("h200"), None,
                          {**memory(60, 0.9, 139), "speculative_num_steps": 3, "mamba_radix_cache_strategy": "extra_buffer"})
    figures = [(st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"])
               for st in (stage(run_engine("sglang", inputs, v)) for v in ("0.5.12", "0.5.13"))]
    assert figures == [(107, 280_689), (110, 517_938)]


def test_0_5_12_neither_refuses_a_state_pool_too_small_for_a_request_nor_knows_the_lazy_buffer():
    # model_runner_kv_cache_mixin.py _resolve_max_num_reqs at v0.5.12 caps the requests at 2 slots // 3 = 0 and says
    # nothing (v0.5.13 refuses: "Hybrid ... too small to serve any requests"); managers/tp_worker.py asserts it then
    inputs = EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(), *lookup("h200"), None,
                          {"weights_bytes": 30 * GIB, "max_mamba_cache_size": 2, "disable_overlap_schedule": True})
    assert stage(run_engine("sglang", inputs, "0.5.12")).startup_error == "max_running_request is zero"
    assert stage(run_engine("sglang", inputs, "0.5.13")).startup_error.startswith(
        "Hybrid (mamba/linear-attention) state cache is too small to serve any requests.")
    # server_args.py MAMBA_SCHEDULER_STRATEGY_CHOICES at v0.5.12: auto, no_buffer, extra_buffer
    from mcache.core.errors import LayoutError

    lazy = EngineInputs(config_spec(QWEN35), ParallelLayout(), given={"mamba_radix_cache_strategy": "extra_buffer_lazy"})
    with pytest.raises(LayoutError, match="one of auto, no_buffer, extra_buffer, got 'extra_buffer_lazy'"):
        run_engine("sglang", lazy, "0.5.12")


def test_0_5_12_gives_the_extra_buffer_to_qwen3_next_and_qwen3_5_alone():
    # server_args.py _handle_model_specific_adjustments at v0.5.12: support_mamba_cache_extra_buffer=False for NemotronH
    # (arg_groups/nemotron_h_hook.py), FalconH1, JetNemotron, GraniteMoeHybrid and Lfm2; v0.5.13 passes the default True
    # to all of them but Lfm2
    given = {"weights_bytes": 30 * GIB, "mamba_radix_cache_strategy": "extra_buffer"}
    inputs = EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(), *lookup("h200"), None, given)
    assert stage(run_engine("sglang", inputs, "0.5.12")).startup_error == (
        "mamba extra_buffer is not supported for NemotronHForCausalLM model")
    assert stage(run_engine("sglang", inputs, "0.5.13")).fields["state_slots_per_request"] == 5
    # with --disable-radix-cache the refusal lacks its full stop at v0.5.12
    inputs = EngineInputs(config_spec("qwen3-next-80b-a3b"), ParallelLayout(), *lookup("h200"), None,
                          {**given, "disable_radix_cache": True})
    assert stage(run_engine("sglang", inputs, "0.5.12")).startup_error.startswith(
        "mamba extra_buffer is not compatible with --disable-radix-cache Overlap scheduling")


def test_a_given_context_caps_the_prefill_graphs_from_0_5_13_to_0_5_16():
    # server_args.py _handle_gpu_memory_settings: v0.5.13 clamps piecewise_cuda_graph_max_tokens to a given
    # --context-length (v0.5.12's does not; v0.5.17's no longer): Nemotron-H at 4096 captures 50 graphs of 8 MiB
    # (13,840 MiB reserved: 0.904), 58 without the clamp (13,904: 0.903); v0.5.17 turns its prefill graphs off (0.907)
    spec = config_spec("nemotron-h-8b-base-8k")
    inputs = EngineInputs(spec, ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": 30 * GIB, "context_length": 4096})
    assert [run_engine("sglang", inputs, v).settings["mem_fraction_static"] for v in ("0.5.12", "0.5.13", "0.5.16",
                                                                                     "0.5.17")] == [0.903, 0.904, 0.904, 0.907]


def test_0_5_10_captures_no_prefill_graphs_with_a_draft():
    # server_args.py _handle_piecewise_cuda_graph at v0.5.10 turns the piecewise (prefill) CUDA graphs off for
    # speculative decoding (v0.5.11's rules do not). Nemotron-H on an H200 with an EAGLE draft: 512 + 8192 x 1.5 + 128
    # + 256 x 2 = 13,440 MiB, + 4,096 for the draft (before v0.5.14) = 17,536: 0.878; v0.5.11 adds its 58 graphs of
    # 8 MiB: 18,000 MiB, (143,771 - 18,000) / 143,771 = 0.875
    inputs = EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": 30 * GIB, "speculative_num_steps": 3, "disable_radix_cache": True})
    assert [run_engine("sglang", inputs, v).settings["mem_fraction_static"] for v in ("0.5.10", "0.5.11")] == [0.878, 0.875]


def test_0_5_10_runs_an_eagle_draft_without_the_overlap_scheduler():
    # environ.py SGLANG_ENABLE_SPEC_V2 is False at v0.5.10 (True from v0.5.11): server_args.py
    # _handle_speculative_decoding turns the overlap scheduler off for EAGLE, so the extra buffer holds 3 + 1 slots a
    # request (_calculate_mamba_ratio), not 3 + 2: Qwen3.5's slots run min(48, 215 // 4) = 48 requests at v0.5.10,
    # 214 // 5 = 42 at v0.5.11 (one slot fewer: its prefill graphs take 464 MiB more of the static memory)
    inputs = EngineInputs(config_spec(QWEN35, vision=None), ParallelLayout(), *lookup("h200"), None,
                          {"weights_bytes": 30 * GIB, "speculative_num_steps": 3, "mamba_radix_cache_strategy": "extra_buffer"})
    old, new = run_engine("sglang", inputs, "0.5.10"), run_engine("sglang", inputs, "0.5.11")
    assert old.settings["disable_overlap_schedule"] is True and new.settings["disable_overlap_schedule"] is False
    assert [(st.fields["state_slots_per_request"], st.fields["max_mamba_cache_size"], st.fields["max_running_requests_logged"])
            for st in (stage(old), stage(new))] == [(4, 215, 48), (5, 214, 42)]


def test_0_5_10_says_the_fraction_when_no_token_fits():
    # MemoryPoolConfig.__post_init__ appends "Current value: mem_fraction_static=..." when given one: v0.5.10's
    # _resolve_memory_pool_config gives it, v0.5.11's pool configurator does not (the tables: 0.725941015625 for
    # Qwen3.5 on an H100 with 8 GiB of weights, 7 draft steps, no radix cache: (81,559 - 13,440 - 4,096) / 81,559
    # rounds to 0.785, x 0.95 x 0.9734375 for its vision tower; the draft states of 48 requests leave no token)
    inputs = EngineInputs(config_spec(QWEN35), ParallelLayout(), *lookup("h100"), None,
                          {"weights_bytes": 8 * GIB, "pre_model_load_memory_bytes": lookup("h100")[1] - GIB // 2,
                           "speculative_num_steps": 7, "disable_radix_cache": True})
    errors = [stage(run_engine("sglang", inputs, v)).startup_error for v in ("0.5.10", "0.5.11")]
    assert errors == ["Not enough memory. Please try to increase --mem-fraction-static. Current value: "
                      "mem_fraction_static=0.725941015625", "Not enough memory. Please try to increase --mem-fraction-static."]


@pytest.mark.parametrize("version", ["0.5.2", "0.5.13"])
def test_pipeline_parallelism_before_its_modelled_release_is_refused_as_not_modelled(version):
    # the PP rules were read, and checked by the oracle's PP cases, from 0.5.14 on (PP_MODELLED_FROM)
    with pytest.raises(LayoutError) as err:
        pp_run("nemotron-h-8b-base-8k", 2, version)
    assert err.value.field == "pp" and "mcache models SGLang's pipeline parallelism from 0.5.14" in str(err.value)
    assert pp_error("nemotron-h-8b-base-8k", 2, "0.5.14") is None


def test_0_5_6_jetnemotron_keeps_the_radix_cache_and_the_nemotron_h_vl_config_does_not():
    # model_runner.py v0.5.6: hybrid_gdn_config takes JetNemotronConfig and JetVLMConfig beside Qwen3NextConfig (the radix
    # cache kept, the share r / (1 + r), 3 slots a request), mamba2_config the Nemotron-H Nano VL config's llm_config (the
    # radix cache off, 512 slots, one a request); v0.5.5 has no class for any of them. A Qwen3-Next layout under the
    # JetNemotron name: 100 GiB x 0.9 / 1.9 // 77,266,944 B = 658 slots, (100 GiB - 658 slots) // 24,576 = 2,300,314
    # tokens, min(4096, 658 // 3) = 219 requests, as Qwen3-Next at v0.5.4
    def jet(version, arch):
        inputs = EngineInputs(replace(config_spec(QWEN3_NEXT), architecture=arch), ParallelLayout(), "H200",
                              lookup("h200")[1], given=memory(100, 0.9, 130))
        return stage(run_engine("sglang", inputs, version))

    for arch in ("JetNemotronForCausalLM", "JetVLMForConditionalGeneration"):
        st = jet("0.5.6", arch)
        assert (st.startup_error, st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"],
                st.fields["max_running_requests_logged"], st.fields["state_slots_per_request"]) == (
            None, 658, 2_300_314, 219, 3)
        assert jet("0.5.5", arch).startup_error.startswith(f"SGLang 0.5.5 has no model class for {arch}")
    inputs = EngineInputs(replace(config_spec("nemotron-h-8b-base-8k"), architecture="NemotronH_Nano_VL_V2"),
                          ParallelLayout(), "H200", lookup("h200")[1], given={"weights_bytes": 30 * GIB})
    st = stage(run_engine("sglang", inputs, "0.5.6"))
    assert (st.startup_error, st.fields["max_mamba_cache_size"], st.fields["state_slots_per_request"]) == (None, 512, 1)
    assert stage(run_engine("sglang", inputs, "0.5.5")).startup_error.startswith(
        "SGLang 0.5.5 has no model class for NemotronH_Nano_VL_V2")
    # 0.5.6's Qwen3-Next is sized as 0.5.5's (the same handle_max_mamba_cache and init_memory_pool)
    assert first_line("0.5.6").fields == first_line("0.5.5").fields


def test_0_5_7_the_mixin_honours_a_given_state_pool_and_takes_the_draft_states_first():
    # model_executor/model_runner_kv_cache_mixin.py at v0.5.7, Qwen3-Next with 100 GiB for the pools:
    # handle_max_mamba_cache 100 GiB x 0.9 / 1.9 // 77,266,944 B = 658 slots, (100 GiB - 658 slots) // 24,576 =
    # 2,300,314 tokens (as v0.5.4-v0.5.6), but init_memory_pool holds 3 + 2 slots a request with the radix cache
    # (MAMBA_CACHE_V2_ADDITIONAL_RATIO_OVERLAP, whatever the strategy): min(4096, 658 // 5) = 131 requests (219 at v0.5.6)
    st = first_line("0.5.7")
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"],
            st.fields["state_slots_per_request"], st.fields["mamba_scheduler_strategy"]) == (
        658, 2_300_314, 131, 5, "no_buffer")  # auto is no_buffer (server_args.py __post_init__)
    # a draft of D = 4: its intermediate states for the 48 requests of the speculative default come off first,
    # (100 GiB - 48 x 4 x per) x 0.9 / 1.9 // per = 567 slots of one state (v0.5.6: 131 of 1 + D), (100 GiB - 48 x 4 x per
    # - 567 x per) // 24,576 = 1,982,770 tokens, no draft tokens added; min(48, 567 // 5) = 48 requests
    st = first_line("0.5.7", speculative_num_steps=3)
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"],
            st.fields["max_running_requests_logged"]) == (567, 1_982_770, 48)
    # an extra buffer with a draft holds 3 + 1 slots a request (MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_OVERLAP)
    assert first_line("0.5.7", speculative_num_steps=3, mamba_radix_cache_strategy="extra_buffer").fields[
        "state_slots_per_request"] == 4
    # a given --max-mamba-cache-size is honoured with the radix cache (v0.5.6 overwrote it): (100 GiB - 200 slots) //
    # 24,576 = 3,740,266 tokens, 200 // 5 = 40 requests
    st = first_line("0.5.7", max_mamba_cache_size=200)
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"],
            st.fields["max_running_requests_logged"]) == (200, 3_740_266, 40)
    # the strategy is a setting from v0.5.7 (mamba_scheduler_strategy), refused before
    with pytest.raises(LayoutError, match="mamba_radix_cache_strategy: not a setting of SGLang 0.5.6"):
        first_line("0.5.6", mamba_radix_cache_strategy="no_buffer")


def test_0_5_7_mamba2_hybrids_keep_the_radix_cache_and_refuse_an_extra_buffer():
    # model_runner.py initialize at v0.5.7 no longer turns the Mamba2 hybrids' radix cache off: Nemotron-H holds 3 + 2
    # slots a request (1 at v0.5.6); server_args.py _handle_model_specific_adjustments asserts against an extra buffer
    # for NemotronH and FalconH1 (and JetNemotron / JetVLM), and still turns Kimi-Linear's radix cache off

    assert [run_at("nemotron-h-8b-base-8k", v).fields["state_slots_per_request"] for v in ("0.5.6", "0.5.7")] == [1, 5]
    for config, arch in (("nemotron-h-8b-base-8k", "NemotronHForCausalLM"), ("falcon-h1-0.5b", "FalconH1ForCausalLM")):
        assert run_at(config, "0.5.7", mamba_radix_cache_strategy="extra_buffer").startup_error == (
            f"mamba extra_buffer is not supported for {arch} model")
    st = run_at("kimi-linear-48b-a3b-instruct", "0.5.7", mamba_radix_cache_strategy="extra_buffer")
    assert (st.startup_error, st.fields["state_slots_per_request"], st.fields["max_mamba_cache_size"]) == (None, 1, 512)


def test_0_5_8_draft_states_come_off_in_every_branch_and_no_buffer_holds_3_slots():
    # model_runner_kv_cache_mixin.py at v0.5.8: handle_max_mamba_cache takes a draft's intermediate states (48 requests x
    # D = 4) off the rest before any branch: without the radix cache, 48 slots, (100 GiB - 48 x 5 x 77,266,944 B) //
    # 24,576 = 3,614,506 tokens (v0.5.7, which took them off with the radix cache only: (100 GiB - 48 slots) // 24,576 =
    # 4,218,154)
    assert [first_line(v, speculative_num_steps=3, disable_radix_cache=True).fields["max_total_num_tokens"]
            for v in ("0.5.7", "0.5.8")] == [4_218_154, 3_614_506]
    # init_memory_pool adds 2 slots a request (1 with a draft) for an extra buffer only: no_buffer holds 3, min(4096,
    # 658 // 3) = 219 requests (v0.5.7: 5, 131), an extra buffer 5 (4 with a draft)
    st = first_line("0.5.8")
    assert (st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"],
            st.fields["state_slots_per_request"]) == (658, 2_300_314, 219, 3)
    assert [first_line("0.5.8", mamba_radix_cache_strategy="extra_buffer", **d).fields["state_slots_per_request"]
            for d in ({}, {"speculative_num_steps": 3})] == [5, 4]
    # server_args.py _handle_model_specific_adjustments: Nemotron-H turns its radix cache off with a draft from v0.5.8
    inputs = EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(), "H200", lookup("h200")[1],
                          given={"weights_bytes": 30 * GIB, "speculative_num_steps": 3})
    assert [stage(run_engine("sglang", inputs, v)).fields["state_slots_per_request"] for v in ("0.5.7", "0.5.8")] == [5, 1]


def test_0_5_9_the_share_without_the_radix_cache_and_the_radix_cache_off_with_a_draft():
    # model_runner_kv_cache_mixin.py at v0.5.9: handle_max_mamba_cache gives the state pool the share r / (1 + r) of the
    # rest without the radix cache too, unless --max-running-requests is given (v0.5.8: 512 slots): 100 GiB x 0.9 / 1.9
    # // 77,266,944 B = 658 slots, (100 GiB - 658 x 77,266,944 B) // 24,576 = 2,300,314 tokens, one slot a request:
    # min(clamp(2,300,314 / 262,144 x 512, 2048, 4096), 658 // 1) = 658 requests (v0.5.8: 512 of 512)
    assert [(st.fields["max_mamba_cache_size"], st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"])
            for st in (first_line(v, disable_radix_cache=True) for v in ("0.5.8", "0.5.9"))] == [
        (512, 2_759_338, 512), (658, 2_300_314, 658)]
    # server_args.py _handle_mamba_radix_cache: no_buffer with the radix cache and a draft turns the radix cache off for
    # Qwen3-Next (v0.5.8: Nemotron-H only): one slot a request, the speculative default's 48 slots, (100 GiB - 48 x 5 x
    # 77,266,944 B) // 24,576 = 3,614,506 tokens; v0.5.8 keeps it: 3 slots a request
    st8, st9 = (first_line(v, speculative_num_steps=3) for v in ("0.5.8", "0.5.9"))
    assert (st8.fields["state_slots_per_request"], st9.fields["state_slots_per_request"]) == (3, 1)
    assert (st9.fields["max_mamba_cache_size"], st9.fields["max_total_num_tokens"]) == (48, 3_614_506)
    # an extra buffer keeps it with a draft: 3 + 1 slots a request
    assert first_line("0.5.9", speculative_num_steps=3, mamba_radix_cache_strategy="extra_buffer").fields[
        "state_slots_per_request"] == 4


def test_0_5_9_registers_lfm2_granite_and_qwen3_5_as_state_models():
    # models/granitemoehybrid.py is new at v0.5.9 (v0.5.8: the Transformers class the backend cannot serve), and its
    # branch of _handle_model_specific_adjustments refuses an extra buffer; models/lfm2.py replaces v0.5.8's
    # Transformers fallback (no state pool): its state pool is sized
    assert run_at("granite-4.0-h-tiny", "0.5.8").startup_error == _incompatible("GraniteMoeHybridForCausalLM")
    assert run_at("granite-4.0-h-tiny", "0.5.9", mamba_radix_cache_strategy="extra_buffer").startup_error == (
        "mamba extra_buffer is not supported for GraniteMoeHybridForCausalLM model")
    assert run_at("lfm2-1.2b", "0.5.8").fields["max_mamba_cache_size"] is None
    lfm2 = run_at("lfm2-1.2b", "0.5.9")
    assert lfm2.startup_error is None and lfm2.fields["max_mamba_cache_size"] > 0
    assert lfm2.fields["state_slots_per_request"] == 3
    assert run_at("qwen3.5-27b", "0.5.9").startup_error is None


def test_before_0_5_9_a_qwen3_5_checkpoint_is_refused_by_autoconfig_in_transformers_words():
    # v0.5.2-v0.5.8 pin transformers 4.56-4.57, which knows no qwen3_5 / qwen3_5_moe, and SGLang registers its own config
    # from v0.5.9 (configs/qwen3_5.py); the checkpoints ship no configuration code, so AutoConfig refuses them first,
    # even before a context above the model's (the 0.5.2-0.5.8 tables)
    for config, model_type in (("qwen3.5-27b", "qwen3_5"), ("qwen3.6-35b-a3b", "qwen3_5_moe")):
        for given in ({}, {"context_length": 1 << 21}):
            assert run_at(config, "0.5.8", **given).startup_error.startswith(
                f"The checkpoint you are trying to load has model type `{model_type}` but Transformers does not "
                "recognize this architecture. This could be because of an issue with the checkpoint")
        assert run_at(config, "0.5.9").startup_error is None
    assert sglang.architecture_error(config_spec("qwen3.5-27b"), "0.5.8").startswith("The checkpoint you are trying")


def test_an_nvfp4_checkpoint_needs_a_blackwell_card_until_0_5_13_and_its_own_name_from_0_5_10():
    # model_loader/loader.py _get_quantization_config: ModelOptFp4Config.get_min_capability is 100 to v0.5.12, 80 from
    # v0.5.13 (layers/quantization/modelopt_quant.py); the H200 is sm90, the RTX 5090 sm120
    nvfp4 = import_hf(HF_CONFIGS / "centml-qwen3.6-27b-nvfp4")

    def on(gpu, version, weights):
        name, memory = lookup(gpu)
        inputs = EngineInputs(nvfp4, ParallelLayout(), name, memory, given={"weights_bytes": weights * GIB})
        return stage(run_engine("sglang", inputs, version)).startup_error

    assert on("h200", "0.5.12", 30) == ("The quantization method modelopt_fp4 is not supported for the current GPU. "
                                        "Minimum capability: 100. Current capability: 90.")
    assert on("h200", "0.5.13", 30) is None
    assert on("rtx-5090", "0.5.12", 2) is None
    # before 0.5.10 configs/model_config.py names a config.json ModelOpt quantization_config `modelopt`
    # (ModelOptFp8Config), which refuses an NVFP4 algo as the model loads, on any CUDA card
    assert on("rtx-5090", "0.5.9", 2).startswith("ModelOptFp8Config only supports static FP8 quantization in SGLang.")



# ---- ROCm: an AMD card (gpu_catalogue.py vendor AMD) ----
MI300X_MIB = 196_592  # 206,141,652,992 B (gpu_catalogue.py): above SGLang's last GPU row (chunked 16384, 512 graphs)
ROCM_RESERVE_MIB = 512 + 16_384 * 1.5 + 1024 / 8 + 512 * 2  # memory_hook.py at TP 1, no prefill graphs on ROCm


def on_amd(config: str, version: str, gpu: str = "mi300x", tp: int = 1, **given):
    """`config` at `version` on an AMD catalogue card, its weights 30 GiB."""
    name, memory = lookup(gpu)
    inputs = EngineInputs(config_spec(config), ParallelLayout(tp=tp), name, memory,
                          given={"weights_bytes": 30 * GIB, **given})
    return stage(run_engine("sglang", inputs, version))


def test_rocm_aiter_lowers_mem_fraction_static_above_8192_tokens_from_0_5_4_post1():
    # the aiter backend (HIP's default for an MHA model) x 0.85 above 8,192 tokens (x 0.90 at v0.5.4.post1): server_args.py
    # _handle_attention_backend_compatibility (v0.5.4.post1-v0.5.18), arg_groups/attention_hook.py (v0.5.19 on). The MI300X
    # reserves 26,240 MiB (no prefill CUDA graphs on ROCm; an H200-class card of its size would capture them)
    base = round((MI300X_MIB - ROCM_RESERVE_MIB) / MI300X_MIB, 3)
    assert base == 0.867
    assert on_amd("qwen3-next-80b-a3b", "0.5.23").fields["mem_fraction_static"] == pytest.approx(0.867 * 0.85)
    assert on_amd("qwen3-next-80b-a3b", "0.5.5").fields["mem_fraction_static"] == pytest.approx(0.867 * 0.85)
    assert on_amd("qwen3-next-80b-a3b", "0.5.23", context_length=4096).fields["mem_fraction_static"] == 0.867
    assert on_amd("nemotron-h-8b-base-8k", "0.5.23").fields["mem_fraction_static"] == 0.867  # 8,192 tokens: not above
    assert on_amd("qwen3-next-80b-a3b", "0.5.4").fields["mem_fraction_static"] == 0.867  # 0.5.4: no such rule
    assert on_amd("qwen3-next-80b-a3b", "0.5.4.post1").fields["mem_fraction_static"] == pytest.approx(0.867 * 0.90)
    assert on_amd("qwen3-next-80b-a3b", "0.5.4.post2").fields["mem_fraction_static"] == pytest.approx(0.867 * 0.85)
    # a given fraction is lowered too (SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION, off by default, would keep it)
    assert on_amd("qwen3-next-80b-a3b", "0.5.23", mem_fraction_static=0.8).fields["mem_fraction_static"] == \
        pytest.approx(0.8 * 0.85)


def test_rocm_mla_takes_aiter_only_at_16_or_128_kv_heads_a_rank():
    # get_default_attn_backend (model_override_base.py; server_args.py before v0.5.19): MLA on HIP is aiter where
    # get_num_kv_heads(tp) is 16 or 128, else triton; Kimi-Linear's config has 32 KV heads
    assert on_amd("kimi-linear-48b-a3b-instruct", "0.5.23").fields["mem_fraction_static"] == 0.867
    at_tp2 = round((MI300X_MIB - ROCM_RESERVE_MIB - 1024 / 8) / MI300X_MIB, 3)
    assert on_amd("kimi-linear-48b-a3b-instruct", "0.5.23", tp=2).fields["mem_fraction_static"] == \
        pytest.approx(at_tp2 * 0.85)


@pytest.mark.parametrize(("version", "refusal"), [
    ("0.5.13", "Mamba extra_buffer is only supported on CUDA and MUSA and NPU devices with FLA backend"),
    ("0.5.11", "Mamba extra_buffer is only supported on CUDA and MUSA devices with FLA backend"),
    ("0.5.10", "Mamba extra_buffer is only supported on CUDA devices with FLA backend"),
    ("0.5.7", "Mamba extra_buffer is only supported on CUDA devices with FLA backend"),
])
def test_rocm_refuses_an_asked_extra_buffer_before_0_5_14(version, refusal):
    assert on_amd("qwen3-next-80b-a3b", version, mamba_radix_cache_strategy="extra_buffer").startup_error == refusal
    assert on_amd("qwen3-next-80b-a3b", version).startup_error is None  # auto is no_buffer there


def test_rocm_refuses_autos_extra_buffer_at_0_5_14_and_0_5_15():
    # overrides.py _mamba_radix_cache_resolution picks extra_buffer by the architecture alone, then
    # _validate_mamba_extra_buffer asserts the platform ("CUDA/MUSA/NPU/ROCm" from v0.5.16)
    for version in ("0.5.14", "0.5.15"):
        assert on_amd("qwen3-next-80b-a3b", version).startup_error == "extra_buffer needs CUDA/MUSA/NPU (FLA)."
        assert on_amd("qwen3-next-80b-a3b", version, disable_radix_cache=True).startup_error is None
    assert on_amd("qwen3-next-80b-a3b", "0.5.16").fields["state_slots_per_request"] == 5
    assert on_amd("qwen3-next-80b-a3b", "0.5.8", mamba_radix_cache_strategy="extra_buffer").startup_error is None


def test_rocm_refuses_a_modelopt_checkpoint_by_the_name_of_its_release():
    # configs/model_config.py ModelConfig._verify_quantization: no ModelOpt method in rocm_supported_quantization; from
    # v0.5.10 _parse_quant_hf_config names a config.json ModelOpt NVFP4 checkpoint modelopt_fp4, before it `modelopt`
    # (SGLang 0.5.22's and 0.5.9's own refusals in their golden tables)
    nvfp4 = import_hf(HF_CONFIGS / "centml-qwen3.6-27b-nvfp4")
    name, memory = lookup("mi300x")
    for version, refusal in (("0.5.22", "modelopt_fp4 quantization is currently not supported in ROCm."),
                             ("0.5.9", "modelopt quantization is currently not supported in ROCm.")):
        inputs = EngineInputs(nvfp4, ParallelLayout(), name, memory, given={"weights_bytes": 30 * GIB})
        assert stage(run_engine("sglang", inputs, version)).startup_error == refusal
    cuda = EngineInputs(nvfp4, ParallelLayout(), *lookup("h200"), given={"weights_bytes": 30 * GIB})
    assert stage(run_engine("sglang", cuda, "0.5.22")).startup_error is None


def test_pp_drafts_are_refused_before_the_architecture_and_after_modelconfig():
    # arg_groups/validation_hook.py check_pipeline_parallel_compat runs at launch, before model_loader/utils.py refuses
    # Bamba's class; ModelConfig's failure on a Mamba config (before v0.5.20) comes first (SGLang 0.5.22's and 0.5.19's
    # golden tables)
    for config, version, refusal in (
            ("bamba-9b", "0.5.22", "PP + speculative decoding (MTP) is only supported on prefill nodes"),
            ("bamba-9b", "0.5.19", "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"),
            ("mamba-2.8b", "0.5.19", "'MambaConfig' object has no attribute 'num_attention_heads'")):
        inputs = EngineInputs(config_spec(config), ParallelLayout(pp=2), *lookup("h200"),
                              given={"weights_bytes": 30 * GIB, "speculative_num_steps": 3})
        assert stage(run_engine("sglang", inputs, version)).startup_error.startswith(refusal)
    inputs = EngineInputs(config_spec("bamba-9b"), ParallelLayout(pp=2), *lookup("h200"), given={"weights_bytes": 30 * GIB})
    assert stage(run_engine("sglang", inputs, "0.5.22")).startup_error == _incompatible("BambaForCausalLM")


def test_rocm_turns_the_radix_cache_off_for_a_draft_at_0_5_11_to_0_5_13():
    # server_args.py _handle_mamba_radix_cache: no_buffer with the radix cache and a draft, refused on CUDA, runs
    # without the radix cache on ROCm ("... not compatible with radix cache on ROCm devices. Automatically disabling")
    refusal = "Speculative decoding for Qwen3NextForCausalLM is not compatible with radix cache when using"
    for version in ("0.5.10", "0.5.14"):
        assert on_amd("qwen3-next-80b-a3b", version, speculative_num_steps=3).startup_error.startswith(
            refusal if version == "0.5.10" else "extra_buffer needs CUDA/MUSA/NPU (FLA).")
    st = on_amd("qwen3-next-80b-a3b", "0.5.13", speculative_num_steps=3)
    assert st.startup_error is None and st.fields["state_slots_per_request"] == 1
    assert run_at("qwen3-next-80b-a3b", "0.5.13", speculative_num_steps=3).startup_error.startswith(refusal)
def dp_run(version: str | None, tp: int = 4, **given):
    """Qwen3-Next at TP `tp` with attention DP (SGLang's --dp-size = --tp-size) on an H200 with 30 GiB of weights."""
    inputs = EngineInputs(config_spec(QWEN3_NEXT), ParallelLayout(tp=tp, attention_dp=True), *lookup("h200"), None,
                          {"weights_bytes": 30 * GIB, **given})
    return run_engine("sglang", inputs, version)


def test_attention_dp_reserves_its_padding_per_dp_rank_in_mem_fraction_static():
    # arg_groups/memory_hook.py reserve_for_graph_mb (v0.5.23): max_bs x dp x 3 MiB more, and x 1.5 more above a max_bs
    # of 300. H200 at TP 4 (decode max_bs 512): 512 + 8192 x 1.5 + 512 + 512 x 2 + 512 x 4 x 4.5 = 23,552 MiB, (143,771 -
    # 23,552) / 143,771 = 0.836 (0.900 without); at TP 2 (max_bs 256): 13,568 + 256 x 2 x 3 = 15,104 MiB, 0.895
    dp4, dp2 = (EngineInputs(spec=None, layout=ParallelLayout(tp=tp, attention_dp=True)) for tp in (4, 2))
    assert _mem_fraction(143_771, 8192, dp4, None, 0) == 0.836
    assert _mem_fraction(143_771, 8192, at(tp=4), None, 0) == 0.900
    assert _mem_fraction(143_771, 8192, dp2, None, 0) == 0.895


def test_attention_dp_splits_the_requests_state_pool_and_chunked_prefill_over_the_dp_ranks():
    # v0.5.23, each attention-DP rank: arg_groups/parallel_hook.py handle_data_parallelism 8192 // 4 = 2048 chunked
    # prefill; kv_cache_configurator.py _handle_max_mamba_cache without the radix cache max(1, 64 // 4) = 16 slots, and
    # resolve_max_num_reqs 16 requests; the state and the KV heads whole on every rank (attention TP 1)
    st = stage(dp_run(None, max_running_requests=64, disable_radix_cache=True))
    assert (st.fields["max_mamba_cache_size"], st.fields["max_running_requests_logged"]) == (16, 16)
    assert st.fields["mamba_cache_per_req_bytes"] == NEXT_SLOT and st.fields["cell_size_bytes"] == NEXT_CELL
    assert "chunked_prefill_size=2048," in st.log[-1]
    # a given --max-mamba-cache-size: 200 // 4 = 50 slots, 5 a request (extra buffer), min(48 // 4, 50 // 5) = 10
    st = stage(dp_run(None, max_mamba_cache_size=200, speculative_num_steps=3))
    assert (st.fields["max_mamba_cache_size"], st.fields["max_running_requests_logged"]) == (50, 10)


def test_attention_dp_turns_the_prefill_cuda_graphs_off_before_0_5_17():
    # server_args.py v0.5.14 _disable_tc_piecewise_cudagraph_if_incompatible: "DP attention" turns them off (the 0.5.14
    # table: Nemotron-H at TP 4 on an H200 0.836, 0.833 with its 58 graphs of 8 MiB); v0.5.17's rules drop it
    nemotron = config_spec("nemotron-h-8b-base-8k")
    dp = ParallelLayout(tp=4, attention_dp=True)
    assert [_prefill_graph_mb(nemotron, 8192, None, EngineInputs(nemotron, dp, version=v)) for v in ("0.5.14", "0.5.23")
            ] == [0, 58 * 8]


def test_0_5_2_attention_dp_reserves_4_gib_and_divides_the_default_512_slots():
    # server_args.py __post_init__ at v0.5.2: 4 GiB more with DP attention, H200 at TP 4: (143,771 - (12 + 4 / 2) x 1024
    # - 4096) / 143,771 = 0.872; model_runner.py initialize: max_mamba_cache_size (512 without a given one) // dp_size,
    # 128 slots a DP rank, one a request (radix cache off), the 0.5.2 table's figures
    assert _mem_fraction_0_5_2(143_771, EngineInputs(spec=None, layout=ParallelLayout(tp=4, attention_dp=True)), 0) == 0.872
    st = stage(dp_run("0.5.2"))
    assert (st.fields["mem_fraction_static"], st.fields["max_mamba_cache_size"], st.fields["max_running_requests_logged"]
            ) == (0.872, 128, 128)


def test_0_5_3_to_0_5_6_attention_dp_divides_the_state_pool_of_gdn_models_alone():
    # model_runner.py handle_max_mamba_cache at v0.5.4-v0.5.6: the replica's state pool (without the radix cache 512
    # slots), divided by dp for the GDN models alone (hybrid_gdn_config): Falcon-H1 at TP 2 keeps 512 slots a DP rank,
    # Qwen3-Next's share (626 slots) is halved to 313, 313 // 3 = 104 requests; v0.5.3's initialize divides every
    # model's (256). configs/falcon_h1.py shards Falcon-H1's state over the whole TP group at v0.5.3-v0.5.4 (1 / tp a
    # rank), over the attention-TP group (whole) from v0.5.5: fewer tokens at 0.5.5. The DP tables' figures (H200, 30 GiB)
    def dp(config, version):
        inputs = EngineInputs(config_spec(config), ParallelLayout(tp=2, attention_dp=True), *lookup("h200"), None,
                              {"weights_bytes": 30 * GIB})
        st = stage(run_engine("sglang", inputs, version))
        return (st.fields["max_total_num_tokens"], st.fields["max_running_requests_logged"],
                st.fields["max_mamba_cache_size"])

    assert dp("falcon-h1-0.5b", "0.5.3") == (5_346_804, 256, 256)
    assert dp("falcon-h1-0.5b", "0.5.4") == (5_147_124, 512, 512)
    assert dp("falcon-h1-0.5b", "0.5.5") == (4_749_300, 512, 512)
    assert dp("qwen3-next-80b-a3b", "0.5.3") == (3_354_999, 256, 256)
    assert dp("qwen3-next-80b-a3b", "0.5.6") == (3_175_791, 104, 313)


def on_h200(config: str, version: str, **given):
    """`config` at `version` on an H200, its weights 30 GiB."""
    name, memory = lookup("h200")
    inputs = EngineInputs(config_spec(config), ParallelLayout(tp=1), name, memory,
                          given={"weights_bytes": 30 * GIB, **given})
    return stage(run_engine("sglang", inputs, version))


def test_the_main_branch_post_releases_carry_rules_early():
    # SGLang cut 0.5.3.post1-0.5.6.post2 from its main branch (scripts/oracles/sglang_versions.md "Post releases",
    # each checked by its golden table): Kimi-Linear registered at 0.5.4.post2 (models/kimi_linear.py), not 0.5.5
    assert "Cannot find model module" in on_h200("kimi-linear-48b-a3b-instruct", "0.5.4.post1").startup_error
    assert on_h200("kimi-linear-48b-a3b-instruct", "0.5.4.post2").startup_error is None
    # 0.5.6.post1 alone pins transformers 5.0.0rc0, whose Transformers backend serves Granite-4.0-H: no state pool
    assert on_h200("granite-4.0-h-tiny", "0.5.6.post1").fields["max_mamba_cache_size"] is None
    for version in ("0.5.6", "0.5.6.post2"):
        assert on_h200("granite-4.0-h-tiny", version).startup_error == _incompatible("GraniteMoeHybridForCausalLM")
    # from 0.5.6.post1 a Mamba2 hybrid keeps its radix cache: 3 slots a running request (model_runner.py initialize)
    kept = on_h200("falcon-h1-0.5b", "0.5.6.post1")
    assert kept.fields["max_mamba_cache_size"] // 3 == kept.fields["max_running_requests_logged"]  # 1,717 -> 572
    assert kept.fields["max_mamba_cache_size"] > 512
    assert on_h200("falcon-h1-0.5b", "0.5.6").fields["max_mamba_cache_size"] == 512  # radix off: FIRST_LINE_SLOTS
    # mamba_full_memory_ratio's default: 0.2 at 0.5.3.post2, 0.9 from 0.5.3.post3 (server_args.py), the state's share
    # r / (1 + r) of the same rest: 1/6 against 9/19
    low = on_h200("qwen3-next-80b-a3b", "0.5.3.post2").fields["max_mamba_cache_size"]
    high = on_h200("qwen3-next-80b-a3b", "0.5.3.post3").fields["max_mamba_cache_size"]
    assert low == pytest.approx(high * (1 / 6) / (9 / 19), rel=0.01)


def vl_spec(stem: str):
    """The spec of a multimodal hybrid of tests/data/hf_configs_extra."""
    return import_hf(HF_CONFIGS_EXTRA / f"{stem}.json")


@pytest.mark.parametrize("version", ["0.5.18", "0.5.23"])
def test_lfm2_vl_lowers_the_fraction_by_its_siglip2_tower_and_nemotron_vl_does_not(version):
    # adjust_mem_fraction_for_vlm reads the vision config's num_hidden_layers and hidden_size: LFM2-VL-1.6B's SigLIP2
    # (transformers Siglip2VisionConfig), 26 x 1152^2 / (24 x 1024^2) = 1.37109375, so 0.95 x (1 - 0.037109375);
    # SGLang's NemotronH_Nano_VL_V2_Config keeps its tower as raw_vision_config (no vision_config attribute): unchanged.
    # Neither is in multimodal_breakable_cuda_graph_supported_model_archs, so neither captures prefill graphs: the
    # rounded default is 0.907 (0.903 with them, as the same model without its tower)
    lfm2 = vl_spec("lfm2-vl-1.6b")
    assert h200_fraction(replace(lfm2, vision=None), version) == 0.903
    assert h200_fraction(lfm2, version) == 0.907 * (0.95 * 0.962890625)
    nemotron = vl_spec("nvidia-nemotron-nano-12b-v2-vl")
    assert h200_fraction(nemotron, version) == 0.907
    # ... both are multimodal to SGLang (multimodal_model_archs): the 100 MiB multimodal cache comes off the budget
    for spec in (lfm2, nemotron):
        assert stage(run("sglang", spec, "h200", version=version)).log[0].startswith("Reserving 0.10 GB of the KV budget")


def test_lfm2_vl_has_an_sglang_class_from_0_5_10():
    # models/lfm2_vl.py and configs/lfm2_vl.py come with v0.5.10 (none in v0.5.9's wheel)
    spec = vl_spec("lfm2-vl-1.6b")
    assert stage(run("sglang", spec, "h200", version="0.5.9")).startup_error.startswith(
        "SGLang 0.5.9 has no model class for Lfm2VlForConditionalGeneration")
    assert stage(run("sglang", spec, "h200", version="0.5.10")).startup_error is None


def test_the_vl_wrappers_refuse_pipeline_parallelism_where_their_classes_do():
    # models/lfm2_vl.py builds lfm2.py's Lfm2ForCausalLM, whose __init__ asserts one stage; models/nano_nemotron_vl.py's
    # forward takes no pp_proxy_tensors, which model_runner.py asserts at PP > 1
    def error(stem: str) -> str:
        return stage(run_engine("sglang", EngineInputs(vl_spec(stem), ParallelLayout(pp=2), *lookup("h200"), None,
                                                       {"weights_bytes": 10 * GIB}))).startup_error
    assert error("lfm2-vl-1.6b").startswith("assert self.pp_group.is_first_rank and self.pp_group.is_last_rank, in "
                                            "Lfm2ForCausalLM.__init__")
    assert error("nvidia-nemotron-nano-12b-v2-vl").startswith("Pipeline Parallel is not compatible with this model.")


def test_lfm2_vl_shards_its_language_model_under_dp_attention_as_lfm2():
    # lfm2_vl.py builds lfm2.py's Lfm2ForCausalLM: its embedding, attention projections and short conv stay on the TP group
    spec = vl_spec("lfm2-vl-1.6b")
    assert sglang._dp_sharded(spec, "0.5.23") == sglang._dp_sharded(replace(spec, architecture="Lfm2ForCausalLM"),
                                                                    "0.5.23")
    assert "short_conv" in sglang._dp_sharded(spec, "0.5.23")


def test_minicpm_v_4_6_runs_as_qwen3_5_from_0_5_12_and_a_config_naming_no_dtype_in_float16():
    # models/minicpmv.py and configs/minicpmv4_6.py come with 0.5.12 (v0.5.11's transformers 5.6 does not know the
    # model type); its Qwen3.5 GDN backbone gets Qwen3.5's radix-cache handling (extra_buffer, 5 slots a request with
    # the overlap scheduler), its forward takes no pp_proxy_tensors, and its config names no dtype: SGLang serves float16
    from mcache.core.hf import import_hf

    spec = import_hf(HF_CONFIGS_EXTRA / "minicpm-v-4.6.json")
    assert "does not recognize this architecture" in run("sglang", spec, "h200", version="0.5.11").stages[0].startup_error
    r = run("sglang", spec, "h200", version="0.5.23", weights_bytes=gib(2))
    assert (r.settings["mamba_radix_cache_strategy"], r.stages[0].fields["state_slots_per_request"]) == ("extra_buffer", 5)
    assert r.dtypes.model == r.dtypes.kv == "float16"
    assert "Pipeline Parallel is not compatible" in run("sglang", spec, "h200", pp=2).stages[0].startup_error


def test_nemotron_omni_is_sized_as_nemotron_nano_vl_from_0_5_11():
    # models/nano_nemotron_vl.py: NemotronH_Nano_Omni_Reasoning_V3 subclasses NemotronH_Nano_VL_V2 from 0.5.11 (no
    # Omni config.json is published whole where it can be cited: the real Nano VL v2 config under the Omni name)
    from mcache.core.hf import import_hf

    nano = import_hf(HF_CONFIGS_EXTRA / "nvidia-nemotron-nano-12b-v2-vl.json")
    omni = replace(nano, architecture="NemotronH_Nano_Omni_Reasoning_V3")
    assert run("sglang", omni, "h200", version="0.5.10").stages[0].startup_error.startswith("Cannot find model module.")
    for version in ("0.5.11", "0.5.23"):
        a, b = (run("sglang", s, "h200", version=version, weights_bytes=gib(30)) for s in (nano, omni))
        assert a.stages[0].startup_error is None and a.stages[0].fields == b.stages[0].fields
        assert a.settings == b.settings
    assert "Pipeline Parallel is not compatible" in run("sglang", omni, "h200", pp=2).stages[0].startup_error


@pytest.mark.parametrize(("version", "conv_window"), [("0.5.11", "0.10"), ("0.5.23", "0.05")])
def test_the_state_pool_line_names_the_draft_states_by_hand(version, conv_window):
    # memory_pool.py MambaPool with 3 EAGLE steps (4 draft tokens), 8 requests, no radix cache: the intermediate cache
    # keeps (8 + 1) slots of every draft token's state over Qwen3.5-27B's 48 GDN layers, 48 heads x 128 x 128 float32:
    # 48 x 9 x 4 x 3,145,728 B = 5.06 GiB; its conv windows (10,240 channels, K - 1 = 3 columns in bf16) are 4 x 3
    # columns a slot before 0.5.14 (48 x 9 x 10,240 x 12 x 2 B = 0.0989 GiB) and one shared window of 4 + 3 - 1 = 6
    # columns from it (0.0494 GiB)
    r = run("sglang", config_spec("qwen3.5-27b"), "h200", version=version, weights_bytes=gib(54),
            speculative_num_steps=3, max_running_requests=8, disable_radix_cache=True)
    line = next(line for line in r.stages[0].log if line.startswith("Mamba Cache is allocated."))
    assert line.endswith(f"intermediate_ssm_state_cache size: {48 * 9 * 4 * 3145728 / GIB:.2f}GB "
                         f"intermediate_conv_window_cache size: {conv_window}GB ")
    assert f"{48 * 9 * 10240 * (12 if version == '0.5.11' else 6) * 2 / GIB:.2f}" == conv_window


def test_a_float32_config_is_served_in_float16_weights_and_kv():
    """configs/model_config.py _get_and_verify_dtype (v0.5.2 - v0.5.23): --dtype auto serves a float32 config in
    float16, as one naming no dtype. state-spaces/mamba-2.8b-hf says float32: its weights load at 2 bytes a parameter,
    and a request's state is 64 layers x (bf16 conv 5120 x 3 x 2 + float32 state 5120 x 16 x 4) = 22,937,600 bytes."""
    spec = import_hf(HF_CONFIGS_EXTRA / "mamba-2.8b-hf.json")
    out = run("sglang", spec, "h200")
    assert (out.dtypes.model, out.dtypes.kv, out.dtypes.conv, out.dtypes.ssm) == ("float16", "float16", "bfloat16",
                                                                                 "float32")
    assert out.settings["weights_bytes"] == 2 * weights.total_params(spec)
    assert stage(out).fields["mamba_cache_per_req_bytes"] == 64 * (5120 * 3 * 2 + 5120 * 16 * 4)


@pytest.mark.parametrize(("config", "version", "refused"), [
    ("lfm2-1.2b", "0.5.6.post1", True), ("lfm2-1.2b", "0.5.6.post2", True), ("lfm2-1.2b", "0.5.6", False),
    ("lfm2-1.2b", "0.5.7", False), ("kimi-linear-48b-a3b-instruct", "0.5.6.post1", False)])
def test_0_5_6_post1_picks_a_backend_it_refuses_on_sm12(config, version, refused):
    # server_args.py at v0.5.6.post1 / post2: an MHA model's default backend is trtllm_mha on every Blackwell card
    # (is_blackwell: SM 10 and 12), refused below SM 100 (is_sm100_supported); an MLA model (Kimi-Linear) gets triton.
    # The tables' RTX 5090 cases, run as SM 12, stop so at those two releases alone
    error = stage(run("sglang", config_spec(config), "rtx-5090", version=version, weights_bytes=GIB)).startup_error
    words = "TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different backend."
    assert (error == words) is refused
    h200 = stage(run("sglang", config_spec(config), "h200", version=version, weights_bytes=GIB)).startup_error
    assert h200 != words


def test_sm10_cards_say_the_token_pool_may_round_to_64_token_pages():
    # the oracle's B200 cases (sglang_versions.md, "SM 10"): SGLang's default backend there is trtllm_mha / trtllm_mla
    # for many models (page_size 64), which rounds max_total_num_tokens down to a multiple of 64; not modelled, said
    words = "takes pages of 64 tokens"
    assert any(words in c for c in run("sglang", config_spec("nemotron-h-8b-base-8k"), "b200").caveats)
    assert not any(words in c for c in run("sglang", config_spec("nemotron-h-8b-base-8k"), "h200").caveats)
    assert not any(words in c for c in run("sglang", config_spec("nemotron-h-8b-base-8k"), "b200", page_size=64).caveats)
