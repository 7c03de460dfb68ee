"""The TensorRT-LLM profile against its code's arithmetic, reproduced by hand, at the 1.2 release (MambaHybridCacheManager,
its state outside free_gpu_memory_fraction) and on main (the C++ and Mixed V1 managers, MambaHybridCacheManagerV2)."""

from __future__ import annotations

import math

import pytest
from engines_util import config_spec, gib
from paths import HERE

from mcache.core.engines import run_engine
from mcache.core.engines.common import EngineInputs, ServeArgs
from mcache.core.engines.trtllm import serve_command
from mcache.core.errors import LayoutError
from mcache.core.load import load_spec
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout

H200 = 143_771 << 20
F32_09 = 0.8999999761581421  # 0.9 as the 1.2 line reads it back from the C++ KvCacheConfig (a float)


def run(engine, spec, gpu=None, *, engine_version=None, tp=1, pp=1, context=None, **settings):
    """`engines_util.run` at an engine version (None: the newest modelled)."""
    spec = load_spec(spec) if isinstance(spec, str) else spec
    name, memory = lookup(gpu) if gpu else (None, None)
    inputs = EngineInputs(spec, ParallelLayout(tp=tp, pp=pp), name, memory, context, settings)
    return run_engine(engine, inputs, engine_version)


def stage(engine_run):
    return engine_run.stages[0]


def test_dtype_rule_reads_only_mamba_ssm_cache_dtype():
    # model_loader.py validate_and_set_mamba_ssm_cache_dtype / config_utils.resolve_ssm_cache_dtype: Qwen3.5's
    # mamba_ssm_dtype is deliberately not read (bf16 state); Nemotron-3-Nano's mamba_ssm_cache_dtype float32 is
    assert run("trtllm", config_spec("qwen3.5-27b")).dtypes.ssm == "bfloat16"
    assert run("trtllm", config_spec("nvidia-nemotron-3-nano-30b-a3b")).dtypes.ssm == "float32"
    assert run("trtllm", config_spec("nemotron-h-8b-base-8k")).dtypes.ssm == "bfloat16"  # no hint: model dtype
    assert run("trtllm", config_spec("qwen3.5-27b"), mamba_ssm_cache_dtype="float32").dtypes.ssm == "float32"
    assert run("trtllm", "kimi-linear-48b-a3b").dtypes.ssm == "bfloat16"  # KDA itself is float32 below
    kda = stage(run("trtllm", "kimi-linear-48b-a3b")).fields["state_slot_bytes"]
    assert kda == 20 * (3 * 32 * 128 * 3 * 2 + 32 * 128 * 128 * 4)


def test_nemotron_h_8b_slot_is_pr_5371s_50_mb():
    # github.com/NVIDIA/TensorRT-LLM/pull/5371 review: "Each mamba cache entry is pretty large (~50MB for 8B model)"
    # 24 layers x (conv (128*64 + 2*8*128) x 3 x 2 + state 128*64*128 x 2) = 51,806,208 B
    slot = stage(run("trtllm", config_spec("nemotron-h-8b-base-8k"))).fields["state_slot_bytes"]
    assert slot == 24 * (10_240 * 3 * 2 + 128 * 64 * 128 * 2) == 51_806_208
    assert slot == pytest.approx(50e6, rel=0.05)


def test_groups_replicate_when_tp_exceeds_n_groups():
    # modules/mamba/mamba2_tp.py: with tp > n_groups each rank keeps one whole group of B and C:
    # Nemotron-H-8B (8 groups) at TP 16: (128 / 16) x 64 + 2 x 1 x 128 = 768 conv rows, not (8192 + 2048) / 16 = 640
    slot = stage(run("trtllm", "nemotron-h-8b", tp=16)).fields["state_slot_bytes"]
    assert slot == 24 * ((8 * 64 + 2 * 128) * 3 * 2 + 8 * 64 * 128 * 2)


def test_fixed_cost_budget_and_tokens_hand_computed():
    # _util.py: budget = (total - peak) x free_gpu_memory_fraction; mamba_cache_manager.py: intercept =
    # (max_batch_size x pp + 1) x state; tokens = (budget - intercept) // slope, whole blocks of 32
    st = stage(run("trtllm", "nemotron-h-8b", "h200", max_batch_size=256, weights_bytes=gib(15),
                   non_kv_memory_bytes=gib(2), context=8192, use_kv_cache_manager_v2="v1"))
    slot, slope = 51_806_208, 4 * 2 * 8 * 128 * 2
    budget = int((H200 - gib(17)) * 0.9)
    assert st.fields["kv_cache_budget_bytes"] == budget
    assert st.fields["fixed_cost_bytes"] == 257 * slot
    tokens = (budget - 257 * slot) // slope // 32 * 32
    assert st.fields["max_tokens"] == tokens
    assert st.max_running_requests == min(256, tokens // 8192)
    assert any(line == f"Estimated max memory in KV cache : {budget / (1 << 30):.2f} GiB" for line in st.log)
    assert any(f"kv size per token is {slope} bytes/token + {257 * slot} bytes fixed cost" in line for line in st.log)


def test_default_max_batch_size_leaves_qwen3_5_unable_to_start_under_v1_on_an_h200():
    # llm_args.py: max_batch_size 2048 -> 2049 state slots; Qwen3.5-27B's bf16 slot is 74.81 MiB (149.7 GiB)
    st = stage(run("trtllm", "qwen3.5-27b", "h200", context=8192, use_kv_cache_manager_v2="v1"))
    assert st.fields["cache_manager"] == "CppMambaHybridCacheManager"
    assert st.startup_error is not None and st.max_running_requests == 0
    assert st.startup_error.startswith("Impossible to fit in any sequence in kvCache")
    largest = st.fields["largest_max_batch_size"]
    assert f"max_batch_size {largest} fits" in st.startup_error
    # the largest max_batch_size does start, one more does not
    ok = stage(run("trtllm", "qwen3.5-27b", "h200", context=8192, max_batch_size=largest, use_kv_cache_manager_v2="v1"))
    assert ok.startup_error is None and ok.max_running_requests >= 1
    assert stage(run("trtllm", "qwen3.5-27b", "h200", context=8192, max_batch_size=largest + 1,
                     use_kv_cache_manager_v2="v1")).max_running_requests == 0


def test_best_max_batch_size_runs_the_most_sequences():
    for manager in ("auto", "v1"):
        st = stage(run("trtllm", "nemotron-h-8b", "h200", context=8192, use_kv_cache_manager_v2=manager))
        best = st.fields["best_max_batch_size"]
        running = [stage(run("trtllm", "nemotron-h-8b", "h200", context=8192, max_batch_size=b,
                             use_kv_cache_manager_v2=manager)).max_running_requests for b in (best - 1, best, best + 1)]
        assert running[1] == max(running) == best


@pytest.mark.parametrize("manager", ["auto", "v1"])
def test_best_max_batch_size_counts_each_pp_stage_s_batch(manager):
    """A stage runs max_batch_size x pp (resource_manager.py, `_share_tokens`): at PP 2 the value that runs the most
    is about half the sequences, and the values beside it run no more."""
    def running(b: int | None = None) -> tuple[int, list]:
        given = {} if b is None else {"max_batch_size": b}
        r = run("trtllm", "qwen3-next-80b-a3b", "h200", tp=2, pp=2, context=32768, use_kv_cache_manager_v2=manager,
                **given)
        return min(st.max_running_requests for st in r.stages), r.stages

    _, stages = running()
    best = min(st.fields["best_max_batch_size"] for st in stages)
    most = [running(b)[0] for b in (best - 1, best, best + 1)]
    assert most[1] == max(most) and most[1] in (2 * best, 2 * best - 1)


@pytest.mark.parametrize("version", ["1.2.0", "main"])
@pytest.mark.parametrize("name", ["jamba-v0.1", "minimax-text-01", "granite-4.0-h-tiny", "falcon-h1-0.5b", "bamba-9b",
                                  "zamba2-2.7b", "mamba2-2.7b", "lfm2-1.2b"])
def test_architectures_trtllm_does_not_register_stop_start_up_in_its_words(name, version):
    # models/modeling_auto.py AutoModelForCausalLM.from_config; models/_arch_index.py (main) and models/__init__.py
    # (1.2) register none of these. Falcon-H1's PR #8135 was closed unmerged; Granite-4.0-H was never added.
    arch = load_spec(name).architecture
    st = stage(run("trtllm", name, "h200", engine_version=version))
    assert st.startup_error == f"Unknown architecture for AutoModelForCausalLM: {arch}"
    assert st.max_running_requests == 0 and st.binding == "start-up"


@pytest.mark.parametrize("name", ["qwen3.5-27b", "kimi-linear-48b-a3b"])
def test_the_1_2_release_does_not_load_qwen3_5_or_kimi_linear(name):
    # 1.2 release notes: its new hybrids are Nemotron Nano V3 and Qwen3-Next; Qwen3.5 came in 1.3.0rc9
    st = stage(run("trtllm", name, "h200", engine_version="1.2.0"))
    assert st.startup_error.startswith("Unknown architecture for AutoModelForCausalLM: ")
    assert stage(run("trtllm", name, "h200", engine_version="main")).startup_error != st.startup_error


NEMOTRON_SLOT, NEMOTRON_CONV, NEMOTRON_SSM = 51_806_208, 24 * 10_240 * 3 * 2, 24 * 128 * 64 * 128 * 2
NEMOTRON_SLOPE = 4 * 2 * 8 * 128 * 2  # 4 attention layers x K and V x 8 KV heads x 128 x bf16
FIXED = {"weights_bytes": gib(15), "non_kv_memory_bytes": gib(2)}


def test_1_2_allocates_max_batch_size_state_slots_outside_the_fraction():
    # 1.2 _util.py _cal_max_memory: the estimation run's MambaHybridCacheManager (mamba_cache_manager.py
    # MambaCacheManager: torch.empty of max_batch_size slots) is in the profiled peak, so the budget is
    # (total - weights - peak - 2048 slots) x float32(0.9); KVCacheManager rounds the tokens up to a block.
    st = stage(run("trtllm", "nemotron-h-8b", "h200", engine_version="1.2.0", context=8192, **FIXED))
    budget = int((H200 - gib(17) - 2048 * NEMOTRON_SLOT) * F32_09)
    tokens = budget // NEMOTRON_SLOPE
    assert st.fields["cache_manager"] == "MambaHybridCacheManager" and not st.fields["state_in_kv_budget"]
    assert st.fields["fixed_state_slots"] == 2048 and st.fields["fixed_cost_bytes"] == 2048 * NEMOTRON_SLOT
    assert st.fields["kv_cache_budget_bytes"] == budget
    assert st.fields["max_tokens"] == math.ceil(tokens / 32) * 32
    assert st.max_running_requests == math.ceil(tokens / 32) * 32 // 8192 == 177  # 176 with mcache's own weight and peak estimate
    assert st.binding == "KV tokens"
    peak = (gib(17) + 2048 * NEMOTRON_SLOT) / 2**30
    assert st.log == [
        f"Mamba Cache is allocated. max_mamba_cache_size: 2048, conv_state size: {2048 * NEMOTRON_CONV / 2**30:.2f}GB, "
        f"ssm_state size: {2048 * NEMOTRON_SSM / 2**30:.2f}GB",
        f"Peak memory during memory usage profiling (torch + non-torch): {peak:.2f} GiB, available KV cache memory "
        f"when calculating max tokens: {budget / 2**30:.2f} GiB, fraction is set 0.8999999761581421, kv size is 16384. "
        "device total memory 140.40 GiB, , tmp kv_mem 0.00 GiB",
        f"Estimated max memory in KV cache : {budget / 2**30:.2f} GiB",
        st.log[3],  # the final manager's Mamba line again
        f"Both free_gpu_memory_fraction and max_tokens are set (to 0.8999999761581421 and {tokens}, respectively). "
        "The smaller value will be used.",
        f"[MemUsageChange] Allocated {math.ceil(tokens / 32) * 32 * 16384 / 2**30:.2f} GiB for max tokens in paged KV "
        f"cache ({math.ceil(tokens / 32) * 32}).",
    ]
    assert st.log[3] == st.log[0]


def test_1_2_takes_v1_and_v2_alike_and_refuses_auto():
    # 1.2 _util.py get_kv_cache_manager_cls: hybrids go to MambaHybridCacheManager before use_kv_cache_manager_v2 is
    # read; llm_args.py: it is a bool there
    v1 = run("trtllm", "nemotron-h-8b", "h200", engine_version="1.2.0", context=8192, use_kv_cache_manager_v2="v1")
    v2 = run("trtllm", "nemotron-h-8b", "h200", engine_version="1.2.0", context=8192, use_kv_cache_manager_v2="v2")
    assert stage(v1).fields == stage(v2).fields
    assert any("v2 sizes as v1 there" in c for c in v2.caveats)
    with pytest.raises(LayoutError, match="auto came after it"):
        run("trtllm", "nemotron-h-8b", "h200", engine_version="1.2.0", use_kv_cache_manager_v2="auto")


def test_1_2_state_that_does_not_fit_is_torchs_out_of_memory():
    # MambaCacheManager allocates conv_states then ssm_states: 4096 slots x 24 layers x 2 MiB = 192 GiB of SSM state
    st = stage(run("trtllm", "nemotron-h-8b", "h200", engine_version="1.2.0", max_batch_size=4096, **FIXED))
    assert st.startup_error == f"CUDA out of memory. Tried to allocate {4096 * NEMOTRON_SSM / 2**30:.2f} GiB."
    assert st.max_running_requests == 0


@pytest.mark.parametrize(("name", "manager", "expected"), [
    ("nemotron-h-8b", "auto", "MambaHybridCacheManagerV2"), ("qwen3.5-27b", "auto", "MambaHybridCacheManagerV2"),
    ("kimi-linear-48b-a3b", "auto", "MixedMambaHybridCacheManager"),
    ("nemotron-h-8b", "v1", "CppMambaHybridCacheManager"), ("qwen3.5-27b", "v1", "CppMambaHybridCacheManager"),
    ("kimi-linear-48b-a3b", "v1", "MixedMambaHybridCacheManager"), ("kimi-linear-48b-a3b", "v2", "MambaHybridCacheManagerV2"),
])
def test_main_picks_the_manager_as_llm_utils_and_util_do(name, manager, expected):
    # llm_utils.py _resolve_kv_cache_manager_v2_auto (model defaults), _util.py get_kv_cache_manager_cls
    st = stage(run("trtllm", name, engine_version="main", use_kv_cache_manager_v2=manager))
    assert st.fields["cache_manager"] == expected


def test_main_auto_sends_qwen3_next_and_kimi_k3_to_v2():
    for stem in ("qwen3-next-80b-a3b", "kimi-k3"):
        assert stage(run("trtllm", config_spec(stem))).fields["cache_manager"] == "MambaHybridCacheManagerV2"


def _grains(slots, pools, g):
    return sum(-(-slots * p // g) for p in pools)


def _most_slots(grains, pools, g):
    n = 0
    while _grains(n + 1, pools, g) <= grains:
        n += 1
    return n


def test_main_v2_pools_split_the_quota_by_a_typical_step():
    # kv_cache_manager_v2.py: quota = max_gpu_total_bytes = (total - peak) x 0.9; _storage_manager.py: 32 MiB grains
    # past 16 GiB; mamba_cache_manager.py _build_cache_config: a typical step of 256 requests of max_seq_len / 2
    # = 4096 tokens (128 pages of 32 x 16384 B = 512 KiB) and 257 state slots (256 + one CUDA-graph dummy), one pool
    # of 24 x 2 MiB SSM states and one of 24 x 61440 B conv windows
    st = stage(run("trtllm", "nemotron-h-8b", "h200", context=8192, max_batch_size=256, **FIXED))
    quota, g = int((H200 - gib(17)) * 0.9), 32 << 20
    ssm_pools = [24 * 2 * 128 * 64 * 128, 24 * 10_240 * 3 * 2]
    attention_need = 256 * 128 * 512 * 1024 // g  # 512 grains
    state_need = -(-257 * ssm_pools[0] // g) + -(-257 * ssm_pools[1] // g)  # 386 + 12 grains
    assert (attention_need, state_need) == (512, 398)
    grains = -(-quota // g)
    state_grains = round(grains * state_need / (state_need + attention_need))  # the smaller share is split first
    slots = _most_slots(state_grains, ssm_pools, g)
    pages = (grains - _grains(slots, ssm_pools, g)) * (g // (512 * 1024))
    assert st.fields["cache_manager"] == "MambaHybridCacheManagerV2"
    assert st.fields["state_slots"] == slots and st.fields["max_tokens"] == pages * 32
    assert st.max_running_requests == 256 and st.binding == "max_batch_size"
    assert f"KV cache manager v2 device quota set to {quota / 2**30}GiB" in st.log
    assert ("KVCacheManagerV2: IndexMapper capacity=257 (max_num_sequences=256, is_disagg=False, "
            "num_reserved_index_slots=1, max_beam_width=1)") in st.log


def test_main_v2_default_pins_the_state_pool_at_its_floor():
    # 2048 live + 1 dummy slots need 3074 + 91 grains, more than their share of the typical step: the state pool is
    # pinned at 2049 slots and the attention pool gets the rest (64 pages of 32 tokens a grain)
    st = stage(run("trtllm", "nemotron-h-8b", "h200", context=8192, **FIXED))
    quota, g = int((H200 - gib(17)) * 0.9), 32 << 20
    floor = -(-2049 * 24 * (2 << 20) // g) + -(-2049 * 24 * 61440 // g)
    assert floor == 3074 + 91
    tokens = (-(-quota // g) - floor) * 64 * 32
    assert st.fields["state_slots"] == 2049 and st.fields["max_tokens"] == tokens
    assert st.max_running_requests == tokens // 8192 == 97  # 96 with mcache's own weight and peak estimate


def test_main_v2_quota_too_small_is_its_own_error():
    # mamba_cache_manager.py _minimum_live_gpu_quota: (2048 + 1) slots of 48 GDN layers x (conv 10240 x 3 x 2 +
    # state 48 x 128 x 128 x 2) and one page of 16 attention layers x 2 x 4 x 256 x 2 B x 32 tokens
    st = stage(run("trtllm", "qwen3.5-27b", "h200", context=8192, weights_bytes=gib(52), non_kv_memory_bytes=gib(3)))
    slot, slope = 48 * (10_240 * 3 * 2 + 48 * 128 * 128 * 2), 16 * 2 * 4 * 256 * 2
    assert slot == 78_446_592
    got, need = int((H200 - gib(55)) * 0.9), 2049 * slot + slope * 32
    assert st.startup_error == ("The V2 Mamba GPU cache quota is too small for live recurrent states and attention "
                                f"pages: got {got} bytes, need at least {need} bytes.")
    assert st.max_running_requests == 0 and st.binding == "start-up"


def test_main_v2_max_tokens_caps_the_quota():
    # KVCacheManagerV2.__init__: quota = min(quota, ceil(quota_from_max_tokens / max_util_for_resume 0.95))
    st = stage(run("trtllm", "nemotron-h-8b", "h200", context=8192, max_batch_size=64, max_tokens=100_000, **FIXED))
    allowed = math.ceil((100_000 * NEMOTRON_SLOPE + 65 * NEMOTRON_SLOT) / 0.95)
    assert (f"max_tokens 100000 is provided. Allowed quota from max_tokens is {allowed / 2**30}GiB. New quota is "
            f"{allowed / 2**30}GiB") in st.log


def test_main_kimi_linear_v1_is_the_mixed_managers_torch_state():
    # _util.py: Kimi under V1 -> MixedMambaHybridCacheManager, (max_batch_size + 1) torch slots of 20 KDA layers x
    # (conv 3 x 4096 x 3 x bf16 + float32 32 x 128 x 128 state) outside the fraction; KV: 7 MLA layers x 576 x bf16
    slot, slope = 20 * (3 * 4096 * 3 * 2 + 32 * 128 * 128 * 4), 7 * 576 * 2
    fixed = {"weights_bytes": gib(60), "non_kv_memory_bytes": gib(2)}
    st = stage(run("trtllm", "kimi-linear-48b-a3b", "h200", context=8192, **fixed))
    assert st.startup_error == f"CUDA out of memory. Tried to allocate {2049 * 20 * 32 * 128 * 128 * 4 / 2**30:.2f} GiB."
    st = stage(run("trtllm", "kimi-linear-48b-a3b", "h200", context=8192, max_batch_size=64, **fixed))
    budget = int((H200 - gib(62) - 65 * slot) * 0.9)
    assert st.fields["kv_cache_budget_bytes"] == budget
    assert st.fields["max_tokens"] == budget // slope // 32 * 32
    assert st.max_running_requests == 64


def test_max_tokens_lines_are_each_versions():
    # 1.2 _util.py: "max_tokens=N is provided, max_memory is set to X GiB"; main: "... It limits max memory to ..."
    old = stage(run("trtllm", "nemotron-h-8b", "h200", engine_version="1.2.0", max_tokens=50_000, **FIXED))
    assert f"max_tokens=50000 is provided, max_memory is set to {50_000 * NEMOTRON_SLOPE / 2**30:.2f} GiB" in old.log
    assert old.fields["max_tokens"] == 50_016  # rounded up to whole blocks of 32
    new = stage(run("trtllm", "nemotron-h-8b", "h200", max_tokens=50_000, max_batch_size=8,
                    use_kv_cache_manager_v2="v1", **FIXED))
    cap = (50_000 * NEMOTRON_SLOPE + 9 * NEMOTRON_SLOT) / 2**30
    assert f"max_tokens=50000 is provided. It limits max memory to {cap:.2f} GiB. New max_memory is set to {cap:.2f} GiB" in new.log
    assert new.fields["max_tokens"] == 49_984


def test_without_a_gpu_only_the_memory_free_figures():
    st = stage(run("trtllm", "nemotron-h-8b"))
    assert st.fields["fixed_cost_bytes"] == 2049 * 51_806_208
    assert st.fields["max_tokens"] is None and st.max_running_requests is None


def test_serve_command_is_llm_api_options():
    options = serve_command(ServeArgs("org/model", 4, 1, 8192, "fp8", draft=1, mtp=True))
    assert options == ('{"tensor_parallel_size": 4, "pipeline_parallel_size": 1, "max_seq_len": 8192, "kv_cache_config": '
                       '{"dtype": "fp8"}, "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 1}}')


def test_the_1_1_release_does_not_load_qwen3_next():
    # 1.2 release notes: Qwen3-Next is one of the hybrids 1.2 adds, so the 1.1 line does not register it
    st = stage(run("trtllm", "qwen3-next-80b-a3b", "h200", engine_version="1.1.0rc3", tp=4))
    assert st.startup_error == "Unknown architecture for AutoModelForCausalLM: Qwen3NextForCausalLM"
    assert stage(run("trtllm", "qwen3-next-80b-a3b", "h200", engine_version="1.2.0", tp=4)).startup_error is None
    assert stage(run("trtllm", "nemotron-h-8b", "h200", engine_version="1.1.0rc3")).startup_error is None


GPT_OSS = str(HERE / "data" / "model_specs" / "gpt-oss-120b.yaml")
GPT_OSS_SLOPE = 36 * 2 * 8 * 64 * 2  # 36 attention layers (sliding ones at full length) x K and V x 8 heads x 64 x bf16


@pytest.mark.parametrize("version", ["1.1.0rc3", "1.2.0"])
def test_a_model_without_recurrent_layers_gets_the_plain_kv_cache_manager(version):
    # _util.py get_kv_cache_manager_cls: neither Nemotron-H nor Qwen3-Next -> KVCacheManager: no state slots, no
    # Mamba lines; the creator's budget (total - weights - peak) x float32(0.9), max_tokens rounded up to a block
    st = stage(run("trtllm", GPT_OSS, "h200", engine_version=version, context=8192, max_batch_size=64, **FIXED))
    budget = int((H200 - gib(17)) * F32_09)
    tokens = budget // GPT_OSS_SLOPE
    assert GPT_OSS_SLOPE == 73_728  # the public 1.1.0rc3 boot's "kv size is 73728"
    assert st.fields["cache_manager"] == "KVCacheManager" and st.fields["fixed_state_slots"] == 0
    assert st.fields["kv_token_bytes"] == GPT_OSS_SLOPE and st.fields["kv_cache_budget_bytes"] == budget
    assert st.fields["max_tokens"] == math.ceil(tokens / 32) * 32
    assert st.fields["largest_max_batch_size"] is None  # without state the pool does not depend on max_batch_size
    assert st.max_running_requests == 64 and st.binding == "max_batch_size"  # 1,564,320 tokens hold 190 x 8192
    assert not any("Mamba" in line for line in st.log)
    assert st.log[-1] == (f"[MemUsageChange] Allocated {math.ceil(tokens / 32) * 32 * GPT_OSS_SLOPE / 2**30:.2f} GiB "
                          f"for max tokens in paged KV cache ({math.ceil(tokens / 32) * 32}).")
    caveats = run("trtllm", GPT_OSS, "h200", engine_version=version, **FIXED).caveats
    assert not any("block reuse" in c for c in caveats)


def test_main_gives_a_model_without_recurrent_layers_kv_cache_manager_and_no_hybrid_line():
    # main _util.py _non_hybrid_kv_cache_manager_cls: KVCacheManager unless use_kv_cache_manager_v2 is True
    # (KVCacheManagerV2, not modelled: refused); "auto" is False for a class that declares no default
    st = stage(run("trtllm", GPT_OSS, "h200", engine_version="main", context=8192, **FIXED))
    assert st.fields["cache_manager"] == "KVCacheManager"
    assert not any(line.startswith("Selected hybrid KV cache manager") for line in st.log)
    with pytest.raises(LayoutError, match="KVCacheManagerV2 is not modelled"):
        run("trtllm", GPT_OSS, "h200", engine_version="main", use_kv_cache_manager_v2="v2")


def _adp_weights(cfg: str, version: str, attention_dp: bool = True) -> int:
    """The weights one rank loads of `cfg` at TP 4 (with attention DP unless told), as TensorRT-LLM `version` sizes it."""
    inputs = EngineInputs(config_spec(cfg), ParallelLayout(tp=4, attention_dp=attention_dp))
    return run_engine("trtllm", inputs, version).settings["weights_bytes"]


def test_attention_dp_keeps_qwen3_next_whole_but_its_routed_experts_on_main():
    """Qwen3-Next-80B-A3B at TP 4, bf16. Main builds the embedding, head, attention, GDN mixers and the shared expert
    (`overridden_tp_size=1`) at TP 1 under attention DP; only the routed experts split, 48 x 512 x 3 x 2,048 x 512 =
    77,309,411,328 parameters over 4 ranks: a rank holds the TP-1 model's 159,348,573,696 B less 3/4 of them,
    57,982,058,496 x 2 B = 115,964,116,992 B, i.e. 43,384,456,704 B (without attention DP, every part over 4:
    39,837,146,496 B). The 1.2 line (modeling_qwen3_next.py at b93e14ca) splits the shared expert too: 48 x 3 x 2,048 x
    512 = 150,994,944 parameters, 3/4 of them 113,246,208 x 2 B = 226,492,416 B fewer."""
    main = _adp_weights("qwen3-next-80b-a3b", "main")
    assert main == 159_348_573_696 - 115_964_116_992 == 43_384_456_704
    assert _adp_weights("qwen3-next-80b-a3b", "main", attention_dp=False) == 39_837_146_496
    assert _adp_weights("qwen3-next-80b-a3b", "1.2.0") == main - 226_492_416


@pytest.mark.parametrize("version", ["main", "1.2.0"])
def test_attention_dp_still_splits_nemotron_h_s_dense_mlp_layers(version):
    """Nemotron-H-8B at TP 4, bf16: modeling_nemotron_h.py's MLPLayer takes the model's TP mapping even under attention
    DP, so its 24 MLP layers' up/down projections, 24 x 2 x 4,096 x 21,504 = 4,227,858,432 parameters, stay split 4
    ways; everything else is whole. A rank: the TP-1 model's 16,201,705,472 B less 3/4 of the MLPs, 3,170,893,824 x 2 B
    = 6,341,787,648 B: 9,859,917,824 B."""
    assert _adp_weights("nemotron-h-8b-base-8k", version) == 16_201_705_472 - 6_341_787_648 == 9_859_917_824
