"""The SGLang profile against SGLang's own arithmetic and public boot logs (each test names its source)."""

from __future__ import annotations

import pytest
from cli_util import one_line
from engines_util import config_spec, gib, run
from msgspec.structs import replace

from mcache.core.engines import run_engine, sglang
from mcache.core.engines.common import GIB, EngineInputs, ServeArgs, mtp_attention_layers, pp_layout, whole_model
from mcache.core.engines.sglang import (
    VERSIONS,
    _chunked_prefill,
    _decode_graph_max_bs,
    _mem_fraction,
    _prefill_graph_mb,
    serve_command,
)
from mcache.core.engines.versions import at_least
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
    result = run("sglang", config_spec("minimax-text-01"), "h200")
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


@pytest.mark.parametrize("version", VERSIONS)
def test_a_multimodal_model_lowers_the_default_mem_fraction_by_its_vision_tower(version):
    # arg_groups/memory_hook.py adjust_mem_fraction_for_vlm (v0.5.19 to v0.5.23): the rounded default times 0.95 x
    # clamp(1 - 0.1 x (L H^2 / (24 x 1024^2) - 1), 0.8, 1.05), unrounded. Qwen3.5's vision config names its depth
    # `depth`, so SGLang reads num_hidden_layers' default 24 with hidden_size 1152: 0.95 x 0.9734375; SGLang's own
    # KimiK3VisionConfig (configs/kimi_k3.py) aliases vt_num_hidden_layers 27 and vt_hidden_size 1024: 0.95 x 0.9875.
    # The golden tables: 0.903 x 0.924765625 = 0.835063359375 for every Qwen3.5/3.6 config on an H200 (0.5.20-0.5.23)
    assert h200_fraction(config_spec(QWEN35, vision=None), version) == 0.903
    # (0.5.14-0.5.15 capture no prefill graphs for a multimodal model: 0.907 x 0.924765625, their tables' 0.83876...)
    qwen_base = 0.907 if version in ("0.5.14", "0.5.15") else 0.903
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
    err = one_line(["size", "nemotron-h-8b", "--engine", "sglang", "--engine-version", "0.5.13"], capsys)
    assert "SGLang 0.5.14 or later" in err and "got 0.5.13" in err
