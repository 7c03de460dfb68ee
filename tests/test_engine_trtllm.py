"""The TensorRT-LLM profile against its code's arithmetic (V1 C++ hybrid cache manager) and public figures."""

from __future__ import annotations

import pytest
from engines_util import config_spec, gib, run

from mcache.core.engines.common import ServeArgs
from mcache.core.engines.trtllm import serve_command
from mcache.core.errors import LayoutError

H200 = 143_771 << 20


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
                   non_kv_memory_bytes=gib(2), context=8192))
    slot, slope = 51_806_208, 4 * 2 * 8 * 128 * 2
    budget = int((H200 - gib(17)) * 0.9)
    assert st.fields["kv_cache_budget_bytes"] == budget
    assert st.fields["fixed_cost_bytes"] == 257 * slot
    tokens = (budget - 257 * slot) // slope // 32 * 32
    assert st.fields["max_tokens"] == tokens
    assert st.max_running_requests == min(256, tokens // 8192)
    assert any(line == f"Estimated max memory in KV cache : {budget / (1 << 30):.2f} GiB" for line in st.log)
    assert any(f"kv size per token is {slope} bytes/token + {257 * slot} bytes fixed cost" in line for line in st.log)


def test_default_max_batch_size_leaves_qwen3_5_and_kimi_unable_to_start_on_an_h200():
    # llm_args.py: max_batch_size 2048 -> 2049 state slots; Qwen3.5-27B's bf16 slot is 74.81 MiB (149.7 GiB)
    for name in ("qwen3.5-27b", "kimi-linear-48b-a3b"):
        st = stage(run("trtllm", name, "h200", context=8192))
        assert st.startup_error is not None and st.max_running_requests == 0
        assert st.startup_error.startswith("Impossible to fit in any sequence in kvCache")
        largest = st.fields["largest_max_batch_size"]
        assert f"max_batch_size {largest} fits" in st.startup_error
        # the largest max_batch_size does start, one more does not
        ok = stage(run("trtllm", name, "h200", context=8192, max_batch_size=largest))
        assert ok.startup_error is None and ok.max_running_requests >= 1
        assert stage(run("trtllm", name, "h200", context=8192, max_batch_size=largest + 1)).max_running_requests == 0


def test_best_max_batch_size_runs_the_most_sequences():
    st = stage(run("trtllm", "nemotron-h-8b", "h200", context=8192))
    best = st.fields["best_max_batch_size"]
    running = [stage(run("trtllm", "nemotron-h-8b", "h200", context=8192, max_batch_size=b)).max_running_requests
               for b in (best - 1, best, best + 1)]
    assert running[1] == max(running) == best


def test_models_without_a_trtllm_state_manager_are_refused():
    with pytest.raises(LayoutError, match="lightning"):
        run("trtllm", "minimax-text-01")
    with pytest.raises(LayoutError, match="mamba1"):
        run("trtllm", "jamba-v0.1")


def test_without_a_gpu_only_the_memory_free_figures():
    st = stage(run("trtllm", "nemotron-h-8b"))
    assert st.fields["fixed_cost_bytes"] == 2049 * 51_806_208
    assert st.fields["max_tokens"] is None and st.max_running_requests is None


def test_serve_command_is_llm_api_options():
    options = serve_command(ServeArgs("org/model", 4, 1, 8192, "fp8", draft=1, mtp=True))
    assert options == ('{"tensor_parallel_size": 4, "pipeline_parallel_size": 1, "max_seq_len": 8192, "kv_cache_config": '
                       '{"dtype": "fp8"}, "speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 1}}')
