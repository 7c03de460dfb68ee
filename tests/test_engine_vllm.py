"""The vLLM profile against vLLM's own arithmetic and public boot logs (each test names its source)."""

from __future__ import annotations

import pytest
from engines_util import config_spec, gib, run
from msgspec.structs import replace
from paths import HF_CONFIGS_EXTRA

from mcache.core.engines import run_engine
from mcache.core.engines.common import EngineInputs, ServeArgs, pp_layout
from mcache.core.engines.vllm import VERSIONS, _group_size, _memory_words, serve_command
from mcache.core.errors import LayoutError
from mcache.core.hf import import_hf
from mcache.core.load import load_spec
from mcache.core.sizing import weights
from mcache.core.sizing.layout import ParallelLayout

QWEN35 = "qwen3.5-27b"  # 64 layers: 48 GDN (16 k heads, 48 v heads, 128 dims, K 4), 16 attention (4 KV heads x 256)
# per GDN layer: conv (2*16*128 + 48*128) x 3 rows = 30,720 elements; state 48 x 128 x 128 = 786,432 elements
CONV, STATE = 30_720, 786_432
ATTN_TOKEN = 2 * 4 * 256 * 2  # 4,096 B per token and attention layer (bf16)
# The last release whose block size is 16 (config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE, 64 from 0.34.0): the tests
# that reproduce a log or the arithmetic of a release before 0.34 run at it
V033 = "0.33.0"


def stage(engine_run):
    return engine_run.stages[0]


def qwen35(**settings):
    return stage(run("vllm", config_spec(QWEN35), **settings))


def test_qwen3_5_bf16_page_and_draft_rows_match_the_reference():
    # shared/reference/engines.md: page 1,634,304 B without drafts, +20,480 B per draft token (bf16 state)
    plain = qwen35(mamba_ssm_cache_dtype="bfloat16")
    assert plain.fields["state_page_bytes"] == CONV * 2 + STATE * 2 == 1_634_304
    one = qwen35(mamba_ssm_cache_dtype="bfloat16", num_speculative_tokens=1)
    assert one.fields["state_page_bytes"] - 1_634_304 == 10_240 * 2 == 20_480


def test_qwen3_5_seven_drafts_block_448_padding_3_23():
    # engines.md (public boot log): 7 drafts, bf16 state -> block 448, "Padding mamba page size by 3.23%"
    st = qwen35(mamba_ssm_cache_dtype="bfloat16", num_speculative_tokens=7)
    page = 1_634_304 + 7 * 20_480  # 1,777,664
    assert st.fields["state_page_bytes"] == page
    # align: lcm(16, FlashInfer's 64-token GDN checkpoints) = 64; 64 * ceil(1,777,664 / (64 * 4,096)) = 448
    assert st.fields["attention_block_size"] == 448
    assert st.fields["state_page_padding_pct"] == round(100 * (448 * ATTN_TOKEN - page) / page, 2) == 3.23
    assert "Setting attention block size to 448 tokens to ensure that attention page size is >= mamba page size." in st.log
    assert "Padding mamba page size by 3.23% to ensure that mamba page size and attention page size are exactly equal." in st.log


def test_qwen3_5_fifteen_drafts_and_a_float32_state():
    # github.com/syv-ai/qwen38-27b-rtx3090 issue #102 (a vLLM before 0.33: 16-token alignment): bf16 state,
    # 15 drafts -> 480 tokens and 1.27%; float32 state, 7 drafts -> 832 tokens
    st = qwen35(mamba_ssm_cache_dtype="bfloat16", num_speculative_tokens=15, gdn_prefill_backend="triton", version=V033)
    assert (st.fields["attention_block_size"], st.fields["state_page_padding_pct"]) == (480, 1.27)
    assert qwen35(num_speculative_tokens=7, gdn_prefill_backend="triton", version=V033).fields["attention_block_size"] == 832
    # 0.33 aligns to 64 tokens in align mode: 64 * ceil(1,941,504 / (64 * 4,096)) = 512
    assert qwen35(mamba_ssm_cache_dtype="bfloat16", num_speculative_tokens=15,
                  version=V033).fields["attention_block_size"] == 512


def test_qwen3_5_hook_reads_text_config_mamba_ssm_dtype():
    # models/config.py Qwen3_5ForConditionalGenerationConfig: the checkpoint's float32 is the state dtype
    r = run("vllm", config_spec(QWEN35))
    assert r.dtypes.ssm == "float32" and r.sources["mamba_ssm_cache_dtype"] == "default"
    assert stage(r).fields["state_page_bytes"] == CONV * 2 + STATE * 4 == 3_207_168
    # the flag wins over the hook
    assert run("vllm", config_spec(QWEN35), mamba_ssm_cache_dtype="bfloat16").dtypes.ssm == "bfloat16"


def test_qwen3_next_float32_block_1056_as_qwen3_6_35b_a3b():
    # engines.md: Qwen3.6-35B-A3B (Qwen3-Next's GDN and attention dims), float32 state, TP 1: block 1056.
    # page: conv (2*16*128 + 32*128) * 3 * 2 = 49,152 + state 32*128*128*4 = 2,097,152 -> 2,146,304 B;
    # attention 2 KV heads x 256 x 2 x 2 = 2,048 B/token; no prefix caching: 16 * ceil(2,146,304 / 32,768) = 1056
    st = stage(run("vllm", config_spec("qwen3-next-80b-a3b"), mamba_ssm_cache_dtype="float32",
                   enable_prefix_caching=False, version=V033))
    assert st.fields["state_page_bytes"] == 2_146_304
    assert st.fields["attention_block_size"] == 1056
    assert st.fields["state_page_padding_pct"] == 0.76  # a ROCm boot log (2026-03-23) reads "by 0.76%"


@pytest.mark.parametrize("arch", ["Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"])
def test_qwen3_5_hook_also_runs_for_the_flat_text_classes(arch):
    # models/config.py MODELS_CONFIG_MAP (v0.33.0) maps the flat text classes to Qwen3_5ForCausalLMConfig, which runs
    # Qwen3_5ForConditionalGenerationConfig's hook: the checkpoint's float32 mamba_ssm_dtype is the state dtype
    r = run("vllm", config_spec(QWEN35, architecture=arch))
    assert r.dtypes.ssm == "float32"
    assert stage(r).fields["state_page_bytes"] == CONV * 2 + STATE * 4


def test_qwen3_next_has_no_dtype_hook():
    # models/config.py registers the Qwen hook for the Qwen3_5* classes only: Qwen3-Next keeps the model dtype
    assert run("vllm", config_spec("qwen3-next-80b-a3b")).dtypes.ssm == "bfloat16"


def test_nemotron_h_defaults_to_a_float32_state_and_logs_it():
    # models/config.py NemotronHForCausalLMConfig: the config's mamba_ssm_cache_dtype, else float32
    r = run("vllm", config_spec("nemotron-h-8b-base-8k"))
    assert r.dtypes.ssm == "float32"
    assert "Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model" in stage(r).log
    # Nemotron-3-Nano's config says float32 too
    assert run("vllm", config_spec("nvidia-nemotron-3-nano-30b-a3b")).dtypes.ssm == "float32"


def test_issue_40691_concurrency_and_the_legacy_token_count():
    # github.com/vllm-project/vllm/issues/40691 (vLLM 0.19, H20): Qwen3.5-27B TP 1, float32 state, L 32768, no
    # prefix caching: "GPU KV cache size: 290,864 tokens", "Maximum concurrency for 32,768 tokens per request: 33.04x"
    per_block = 16 * 784 * ATTN_TOKEN  # group of 16 layers x a 784-token page
    st = qwen35(max_model_len=32_768, enable_prefix_caching=False, kv_cache_memory_bytes=1487 * per_block, version=V033)
    assert st.fields["attention_block_size"] == 784 and st.fields["num_blocks"] == 1487
    assert st.fields["groups"] == {"attention": 1, "gdn": 3}
    assert st.fields["blocks_per_request"] == 42 + 3  # ceil(32768 / 784) attention blocks + one per state group
    assert st.fields["max_concurrency"] == 33.04
    assert st.fields["kv_cache_tokens_legacy"] == 1487 // 4 * 784 == 290_864  # the old form: blocks // groups * block


def test_align_mode_before_0_33_reproduces_an_h200_log():
    # a vLLM H200 boot log of 2026-09-21 (Qwen3_5ForConditionalGeneration, prefix caching on by default):
    # "Mamba cache mode is set to 'align' ... by default", block 784, "GPU KV cache size: 1,400,832 tokens,
    # Maximum concurrency for 32,768 tokens per request: 42.75x". Before 0.33 GDN prefill ran on Triton (no
    # 64-token checkpoint alignment, no checkpoint block).
    per_block = 16 * 784 * ATTN_TOKEN
    st = qwen35(max_model_len=32_768, gdn_prefill_backend="triton", kv_cache_memory_bytes=2052 * per_block,
                version=V033)
    assert st.fields["mamba_cache_mode"] == "align" and st.fields["attention_block_size"] == 784
    assert st.fields["blocks_per_request"] == 42 + 3 * 2  # align: two state blocks per group
    assert "GPU KV cache size: 1,400,832 tokens, Maximum concurrency for 32,768 tokens per request: 42.75x" in st.log
    assert ("Mamba cache mode is set to 'align' for Qwen3_5ForConditionalGeneration by default when prefix caching "
            "is enabled") in st.log


def test_vllm_0_33_gdn_checkpoints_align_blocks_to_64_and_take_a_block():
    # vllm 0.33 qwen_gdn_linear_attn.py: FlashInfer's GDN prefill exports checkpoints on 64-token boundaries
    # (gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT); kv_cache_interface.py: align mode holds 2 + k + 1 blocks
    st = qwen35(max_model_len=32_768)
    assert st.fields["attention_block_size"] == 64 * -(-3_207_168 // (64 * ATTN_TOKEN)) == 832
    assert st.fields["blocks_per_request"] == -(-32_768 // 832) + 3 * 3


def test_club_3090_612_fp8_kv_exact_fit_has_no_padding_line():
    # github.com/noonghunna/club-3090 issue #612 (vLLM 0.24, RTX 5090): Qwen3.6-35B-A3B (Qwen3-Next's dims in 40
    # layers: 10 attention, 30 GDN), fp8 KV, float32 state, L 131072, prefix caching (align):
    # "Available KV cache memory: 5.98 GiB", "GPU KV cache size: 567,978 tokens", "... 131,072 tokens per request: 4.33x"
    spec = config_spec("qwen3-next-80b-a3b", num_layers=40, architecture="Qwen3_5MoeForConditionalGeneration",
                       ssm_dtype_hints={"mamba_ssm_dtype": "float32"})
    st = stage(run("vllm", spec, max_model_len=131_072, kv_cache_dtype="fp8", gdn_prefill_backend="triton",
                   kv_cache_memory_bytes=gib(5.98), version=V033))
    # attention 2 x 2 x 256 x 1 = 1,024 B/token: 2,146,304 / 1,024 = 2,096 tokens exactly, so no padding
    assert st.fields["attention_block_size"] == 2096 and st.fields["state_page_padding_pct"] == 0.0
    assert not any(line.startswith("Padding mamba page size") for line in st.log)
    assert st.fields["num_blocks"] == gib(5.98) // (10 * 2096 * 1024) == 299
    assert "GPU KV cache size: 567,978 tokens, Maximum concurrency for 131,072 tokens per request: 4.33x" in st.log
    assert "Available KV cache memory: 5.98 GiB" in st.log


def test_l40s_log_max_num_seqs_start_up_failure():
    # a public deployment write-up (Modal, L40S 48 GB): Qwen3.5-27B-class, block 784, TP 1, L 131072, no prefix
    # caching: "Available KV cache memory: 8.82 GiB", "GPU KV cache size: 141,036 tokens", "... 1.08x", then
    # "ValueError: max_num_seqs (256) exceeds available Mamba cache blocks (184)."
    st = stage(run("vllm", config_spec(QWEN35), "l40s", max_model_len=131_072, enable_prefix_caching=False,
                   kv_cache_memory_bytes=gib(8.82), version=V033))
    assert st.fields["num_blocks"] == 184
    assert "GPU KV cache size: 141,036 tokens, Maximum concurrency for 131,072 tokens per request: 1.08x" in st.log
    assert st.startup_error == (
        "max_num_seqs (256) exceeds available Mamba cache blocks (184). Each decode sequence requires one Mamba cache "
        "block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most 184 or increase "
        "gpu_memory_utilization.")
    assert st.max_running_requests == 0
    # with --max-num-seqs 16 it starts; eager mode skips the check
    fixed = stage(run("vllm", config_spec(QWEN35), "l40s", max_model_len=131_072, enable_prefix_caching=False,
                      kv_cache_memory_bytes=gib(8.82), max_num_seqs=16, version=V033))
    assert fixed.startup_error is None and fixed.max_running_requests == 1  # 184 // 171 blocks per request
    eager = stage(run("vllm", config_spec(QWEN35), "l40s", max_model_len=131_072, enable_prefix_caching=False,
                      kv_cache_memory_bytes=gib(8.82), enforce_eager=True, version=V033))
    assert eager.startup_error is None


def test_mtp_drafter_joins_the_attention_group_with_padding_layers():
    # kv_cache_planning.py: Qwen3.5-27B's MTP layer makes 17 attention layers; 48 GDN layers are more than 1.5 x 17,
    # so the group size is the smallest, 17: GDN takes 3 groups with 3 padding layers, 3 / 48 = 6.25%
    st = qwen35(num_speculative_tokens=3)
    assert st.fields["group_size"] == 17 and st.fields["groups"] == {"attention": 1, "gdn": 3}
    assert st.fields["padding_layers"] == 3
    assert "Add 3 padding layers, may waste at most 6.25% KV cache memory" in st.log


def test_group_size_takes_the_largest_bucket_under_one_and_a_half_times_the_smallest():
    # Falcon-H1 puts attention and Mamba2 in every layer: 36 + 36 -> one group each of 36
    st = stage(run("vllm", config_spec("falcon-h1-0.5b")))
    assert st.fields["group_size"] == 36 and st.fields["groups"] == {"attention": 1, "mamba2": 1}


def test_mamba_cache_mode_all_is_a_deprecated_no_op_and_mamba2_takes_a_checkpoint_block():
    # engine/arg_utils.py (v0.33.0, v0.34.0): --mamba-cache-mode only logs its deprecation, the mode follows prefix
    # caching; layers/mamba/mamba_mixer2.py get_kv_cache_spec: num_prefill_checkpoint_blocks=1, so
    # kv_cache_interface.py MambaSpec.max_memory_usage_bytes counts 2 + 0 drafts + 1 blocks per Mamba2 group in align
    # mode. Nemotron-H-8B's Mamba2 page: conv (128*64 + 2*8*128) * (4 - 1) * 2 = 61,440 + state 128*64*128*4 =
    # 4,194,304; attention 4,096 B/token, so the block is 64 * ceil(4,255,744 / (64 * 4,096)) = 1,088 tokens (0.34's
    # 64-token block; 16 * ... = 1,040 before)
    st = stage(run("vllm", "nemotron-h-8b", mamba_cache_mode="all", max_model_len=8192))
    assert st.fields["mamba_cache_mode"] == "align"
    assert ("--mamba-cache-mode is deprecated and will be removed in v0.34.0. It has no effect: Mamba prefix caching "
            "follows --enable-prefix-caching.") in st.log
    assert st.fields["attention_block_size"] == 1088
    assert stage(run("vllm", "nemotron-h-8b", mamba_cache_mode="all", max_model_len=8192,
                     version=V033)).fields["attention_block_size"] == 1040
    # 1 attention group: ceil(8,192 / 1,088) = 8 blocks; 6 Mamba2 groups (24 / 4): 3 blocks each
    assert st.fields["blocks_per_request"] == 8 + 6 * 3 == 26


def test_max_model_len_above_the_config_s_is_a_start_up_refusal():
    # config/model.py _get_and_verify_max_len: Nemotron-H-8B's max_position_embeddings is 8,192
    r = run("vllm", "nemotron-h-8b", max_model_len=16_384)
    assert not r.starts
    assert stage(r).startup_error.startswith("User-specified max_model_len (16384) is greater than the derived "
                                             "max_model_len (8192.0")


@pytest.mark.parametrize("version", ["0.10.2", "0.34.0"])
def test_a_given_max_num_seqs_above_the_batched_tokens_stops_the_engine(version):
    # config/scheduler.py SchedulerConfig._verify_args; arg_utils.py lowers only a default max_num_seqs to them
    r = run("vllm", "nemotron-h-8b", "h200", version=version, max_num_seqs=1024, max_num_batched_tokens=512)
    assert not r.starts and stage(r).startup_error == (
        "ValueError: max_num_batched_tokens (512) must be greater than or equal to max_num_seqs (1024).")
    lowered = run("vllm", "nemotron-h-8b", "h200", version=version, max_num_batched_tokens=128)
    assert lowered.starts and lowered.settings["max_num_seqs"] == 128  # the default 1024 (a big GPU's), lowered


def test_a_config_without_a_length_key_means_2048():
    # config/model.py _get_and_verify_max_len: none of the keys, so 2048 with a warning (Mamba-2.8B)
    r = run("vllm", config_spec("mamba-2.8b"))
    assert r.max_len == 2048
    assert any("Assuming the model's maximum length is 2048" in line for line in stage(r).log)


def test_num_blocks_from_memory_and_the_running_requests_at_a_context():
    # gpu_worker.py: available = ceil(total x utilization) - weights - non-KV memory
    st = qwen35(gpu_memory_utilization=0.9, weights_bytes=gib(50), non_kv_memory_bytes=gib(2), max_model_len=32_768,
                enable_prefix_caching=False, version=V033)
    r = run("vllm", config_spec(QWEN35), "h200", gpu_memory_utilization=0.9, weights_bytes=gib(50),
            non_kv_memory_bytes=gib(2), max_model_len=32_768, enable_prefix_caching=False, context=8192, version=V033)
    available = -(-(143_771 << 20) * 9 // 10) - gib(50) - gib(2)
    per_block = 16 * 784 * ATTN_TOKEN
    assert stage(r).fields["num_blocks"] == available // per_block
    assert stage(r).max_running_requests == available // per_block // (11 + 3)  # ceil(8192 / 784) + 3 at 8K
    assert st.fields["num_blocks"] is None  # no GPU: the memory figures stay unknown


def test_memory_too_small_for_one_request_names_the_longest_model_length():
    # kv_cache_planning.py check_enough_kv_cache_memory: one request at L needs its blocks beside the null block
    per_block = 16 * 784 * ATTN_TOKEN
    st = qwen35(max_model_len=262_144, enable_prefix_caching=False, kv_cache_memory_bytes=100 * per_block, version=V033)
    assert st.startup_error.startswith("To serve at least one request with the model's max seq len (262144), (")
    # 99 usable blocks: 96 attention blocks (75,264 tokens) + 3 state blocks
    assert "the estimated maximum model length is 75264." in st.startup_error


def test_before_0_29_the_memory_check_counts_the_null_block_in():
    # vllm/issues/49064: 2x RX 7900 XT, TP 2, 0.23.1, Qwen3.8-27B (the Qwen3.5-27B geometry): a KV pool of 3.86 GiB,
    # and at --max-model-len 132000 "estimated maximum model length is 123872" = 158 blocks of 784. Up to 0.28
    # kv_cache_utils.py checks the whole memory; from 0.29 it holds the null block back (16 layers x one 784-token
    # block), one block less
    given = dict(max_model_len=132_000, enable_prefix_caching=False, kv_cache_memory_bytes=gib(3.86))
    inputs = EngineInputs(config_spec(QWEN35), ParallelLayout(tp=2), given=given)
    for version, tokens in (("0.23.1", 123_872), ("0.28.0", 123_872), ("0.29.0", 123_088), ("0.33.0", 123_088)):
        st = stage(run_engine("vllm", inputs, version))
        assert f"the estimated maximum model length is {tokens}." in st.startup_error, version


@pytest.mark.parametrize(("tp", "block"), [(1, 544), (2, 544), (4, 272), (8, 144)])
def test_qwen3_next_blocks_over_tp_with_replicated_kv_heads(tp, block):
    # bf16 state, no prefix caching: per rank the page shrinks with TP; the 2 KV heads replicate from TP 2 up
    # (max(1, 2 // tp)), so the attention token stops shrinking: TP 4 -> 16 * ceil(268,288 / (16 * 1,024)) = 272
    st = stage(run("vllm", config_spec("qwen3-next-80b-a3b"), tp=tp, enable_prefix_caching=False, version=V033))
    assert st.fields["attention_block_size"] == block


def test_kimi_linear_mla_aligns_to_128_tokens():
    # platforms/interface.py (0.29+): hybrid MLA models align blocks to 128; MLA token = (512 + 64) x 2 = 1,152 B;
    # KDA page: conv 3 x 32 x 128 x 3 x 2 = 73,728 + float32 state 32 x 128 x 128 x 4 = 2,097,152 -> 2,170,880
    st = stage(run("vllm", "kimi-linear-48b-a3b", max_model_len=8192))
    assert st.fields["state_page_bytes"] == 2_170_880
    assert st.fields["attention_block_size"] == 128 * -(-2_170_880 // (128 * 1152)) == 1920


@pytest.mark.parametrize("tp", [1, 4])
def test_kimi_linear_bf16_ssm_dtype_fails_the_padded_page_assertion(tp):
    # the model class's hook (models/kimi_k3/nvidia/model.py KimiLinearForCausalLM.get_mamba_state_dtype_from_config)
    # sizes the padding with a bf16 KDA state, but Kimi-Linear's layer (layers/mamba/gdn/kimi_gdn_linear_attn.py)
    # keeps it float32: TP 4 pads 280,576 B to 256 x 1,152 = 294,912 B, under the layer's 542,720 B, so
    # v1/kv_cache_interface.py MambaSpec.page_size_bytes asserts at start-up (vLLM 0.33.0's own run, golden table)
    st = stage(run("vllm", config_spec("kimi-linear-48b-a3b-instruct"), tp=tp, mamba_ssm_cache_dtype="bfloat16"))
    assert st.startup_error.startswith("AssertionError: assert self.page_size_padded >= page_size")
    assert st.binding == "start-up" and st.max_running_requests == 0


def test_the_reported_state_dtype_is_the_one_kdas_layers_allocate():
    # mamba_utils.py kda_state_dtype: float32 under 'auto' (the page maths above), so the run's state dtype, its
    # per-slot state and the "vLLM dtypes" line say float32 too; Kimi-K3's layers take a bf16 flag, Kimi-Linear's
    # keep float32 whatever it says; before 0.30 every KDA state is float32
    auto = run("vllm", config_spec("kimi-k3"), tp=4)
    assert auto.dtypes.ssm == "float32" and stage(auto).fields["state_page_bytes"] == 1_628_160
    assert run("vllm", config_spec("kimi-k3"), tp=4, mamba_ssm_cache_dtype="bfloat16").dtypes.ssm == "bfloat16"
    assert run("vllm", config_spec("kimi-k3"), tp=4, mamba_ssm_cache_dtype="bfloat16",
               version="0.29.0").dtypes.ssm == "float32"
    assert run("vllm", config_spec("kimi-linear-48b-a3b-instruct"), mamba_ssm_cache_dtype="bfloat16").dtypes.ssm == "float32"


def test_kimi_k3_kda_state_takes_the_ssm_cache_dtype():
    # models/kimi_k3/nvidia/kda.py KimiK3DeltaAttention passes --mamba-ssm-cache-dtype to kda_state_dtype: TP 4,
    # bf16 state 841,728 B and block 768 (float32: 1,628,160 B and 1536), as vLLM 0.33.0 sized them (golden table)
    bf16 = stage(run("vllm", config_spec("kimi-k3"), tp=4, mamba_ssm_cache_dtype="bfloat16"))
    assert (bf16.fields["state_page_bytes"], bf16.fields["attention_block_size"]) == (841_728, 768)
    auto = stage(run("vllm", config_spec("kimi-k3"), tp=4))
    assert (auto.fields["state_page_bytes"], auto.fields["attention_block_size"]) == (1_628_160, 1536)
    # any other dtype: kda_state_dtype's ValueError, from the hook _align_hybrid_block_size calls at start-up
    half = stage(run("vllm", config_spec("kimi-k3"), tp=4, mamba_ssm_cache_dtype="float16"))
    assert half.startup_error == "KDA recurrent state supports only auto, float32, and bfloat16; got float16"


def test_short_conv_drafts_grow_the_layer_page_not_the_padding():
    # layers/mamba/short_conv.py get_state_shape passes num_spec, models/lfm2_moe.py's hook does not: LFM2-8B at TP 4,
    # 3 drafts -> conv 512 x (2 + 3) x 2 = 5,120 B, padded to the 16-token attention page the hook's 2,048 B gave
    st = stage(run("vllm", config_spec("lfm2-8b-a1b"), tp=4, num_speculative_tokens=3, version=V033))
    assert st.fields["state_page_bytes"] == 5120
    assert (st.fields["attention_block_size"], st.fields["state_page_padded_bytes"]) == (16, 8192)
    # TP 1, 7 drafts: 2,048 x 9 x 2 = 36,864 B outgrow the 32,768 B page -> the start-up assertion
    st = stage(run("vllm", config_spec("lfm2-8b-a1b"), num_speculative_tokens=7, version=V033))
    assert st.startup_error.startswith("AssertionError") and "36864 bytes" in st.startup_error


def test_per_token_head_scales_add_eight_bytes_per_kv_head():
    # kv_cache_interface.py: fp8_per_token_head adds a float32 scale for K and V per KV head and token
    st = stage(run("vllm", config_spec("qwen3-next-80b-a3b"), kv_cache_dtype="fp8_per_token_head",
                   enable_prefix_caching=False, version=V033))
    token = 2 * 2 * 256 * 1 + 2 * 2 * 4  # 1,040 B
    page = 8192 * 3 * 2 + 32 * 128 * 128 * 2  # bf16 state: 1,097,728 B
    assert st.fields["attention_block_size"] == 16 * -(-page // (16 * token)) == 1056


def test_int4_per_token_head_packs_two_values_a_byte_beside_the_scales():
    # kv_cache_interface.py (0.25 - 0.34): int4 data takes head_size // 2 bytes for K and V, plus the float32 scales
    st = stage(run("vllm", config_spec("qwen3-next-80b-a3b"), kv_cache_dtype="int4_per_token_head",
                   enable_prefix_caching=False, version=V033))
    token = 2 * (128 + 128) * 1 + 2 * 2 * 4  # 528 B: 2 KV heads of 256, halved
    page = 8192 * 3 * 2 + 32 * 128 * 128 * 2  # bf16 state: 1,097,728 B
    assert st.fields["attention_block_size"] == 16 * -(-page // (16 * token)) == 2080


def test_per_token_head_kv_dtypes_are_refused_before_the_release_that_added_them():
    from mcache.core.errors import LayoutError

    # config/cache.py CacheDType: int8 / fp8 per token head from 0.20.0, int4 from 0.25.0
    for dtype, before, since in (("int8_per_token_head", "0.19.0", "0.20.0"), ("fp8_per_token_head", "0.19.0", "0.20.0"),
                                 ("int4_per_token_head", "0.24.0", "0.25.0")):
        with pytest.raises(LayoutError, match=f"{dtype} is one from {since}"):
            run("vllm", config_spec("qwen3-next-80b-a3b"), kv_cache_dtype=dtype, version=before)
        assert stage(run("vllm", config_spec("qwen3-next-80b-a3b"), kv_cache_dtype=dtype, version=since)).fields


def test_no_async_scheduling_keeps_one_batch_of_tokens_beside_a_window():
    # config/vllm.py max_concurrent_batches (0.26.0, 0.34.0): PP + 1 batches in flight with async scheduling (the V2
    # model runner of 0.34), PP without; a windowed layer keeps each batch's max_num_batched_tokens beside its window, so
    # turning it off frees 2,048 / 64 = 32 blocks a request of LFM3's one window group
    spec = vl_spec("lfm3-defaults")
    on, off = (stage(run("vllm", spec, gpu_bytes=80 << 30, version="0.34.0", max_model_len=32768,
                         max_num_batched_tokens=2048, async_scheduling=a)) for a in (True, False))
    assert on.fields["blocks_per_request"] - off.fields["blocks_per_request"] == 2048 // 64
    assert stage(run("vllm", spec, gpu_bytes=80 << 30, version="0.34.0", max_model_len=32768,
                     max_num_batched_tokens=2048)).fields["blocks_per_request"] == on.fields["blocks_per_request"]


def test_unknown_settings_are_refused():
    from mcache.core.errors import LayoutError

    with pytest.raises(LayoutError, match="kv_cache_dtype"):
        qwen35(kv_cache_dtype="fp4")
    with pytest.raises(LayoutError, match="mamba_cache_mode"):
        qwen35(mamba_cache_mode="sometimes")
    with pytest.raises(LayoutError, match="not a setting of vLLM"):
        qwen35(mem_fraction_static=0.8)


def test_serve_command_spells_vllms_flags():
    line = serve_command(ServeArgs("org/model", 2, 1, 8192, "fp8", "float32", draft=2, mtp=True, prefix="off"))
    assert line == ("vllm serve org/model --tensor-parallel-size 2 --pipeline-parallel-size 1 --max-model-len 8192 "
                    "--kv-cache-dtype fp8 --mamba-ssm-cache-dtype float32 --no-enable-prefix-caching "
                    "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'")


@pytest.mark.parametrize(("version", "method"), [("0.10.2", "qwen3_next_mtp"), ("0.11.1", "mtp"), (None, "mtp")])
def test_serve_command_names_the_mtp_method_as_the_release_spells_it(version, method):
    """vLLM 0.10.2's SpeculativeMethod has no "mtp" (config/__init__.py: deepseek_mtp, ernie_mtp, qwen3_next_mtp, the
    last the only one a hybrid drafts with there); 0.11.1's config/speculative.py adds "mtp"; n-gram drafts either way."""
    mtp = serve_command(ServeArgs("Qwen/Qwen3-Next-80B-A3B-Instruct", 1, 1, 8192, draft=3, mtp=True, version=version))
    ngram = serve_command(ServeArgs("org/model", 1, 1, 8192, draft=3, version=version))
    assert f'"method": "{method}"' in mtp and '"method": "ngram"' in ngram


def test_plan_pastes_the_mtp_method_of_the_release_it_sized():
    from mcache.core.load import load_spec
    from mcache.core.plan import Axes, catalogue_gpu, sweep

    spec = load_spec("qwen3-next-80b-a3b")
    lines = {}
    for version in ("0.10.2", "0.33.0"):
        axes = Axes(gpus=(catalogue_gpu("h200"),), contexts=(8192,), tps=(4,), pps=(1,), kv_dtypes=(None,),
                    drafts=(3,), engine_version=version)
        lines[version] = sweep(spec, "qwen3-next-80b-a3b", "vllm", axes).candidates[0].settings
    assert '"method": "qwen3_next_mtp"' in lines["0.10.2"] and '"method": "mtp"' in lines["0.33.0"]


@pytest.mark.parametrize(("gpu", "backend", "source"), [
    ("h200", "flashinfer", "default"),  # Hopper: FlashInfer, no condition
    ("b200", "flashinfer", "assumed: a CUDA 13 runtime (Blackwell)"),  # SM 10.0, key head dim 128
    ("rtx-5090", "flashinfer", "assumed: a CUDA 13 runtime (Blackwell)"),  # SM 12.0
    ("a100-80gb", "triton", "default"),  # Ampere: Triton
    ("l40s", "triton", "default"),  # Ada
    ("mi300x", "triton", "default"),  # ROCm: not CUDA (AITER's FlyDSL path is not modelled)
    (None, "flashinfer", "assumed: a Hopper GPU (the GPU is not in the catalogue)"),
])
def test_the_gdn_prefill_backend_follows_the_gpu(gpu, backend, source):
    """qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend at v0.33.0 ('auto'): FlashInfer on SM 9.0, and on SM 10.x
    / 12.x with a key head dim of 128; Triton on other GPUs."""
    result = run("vllm", "qwen3-next-80b-a3b", gpu)
    assert (result.settings["gdn_prefill_backend"], result.sources["gdn_prefill_backend"]) == (backend, source)


def test_a_blackwell_gpu_with_other_key_heads_takes_triton():
    from msgspec.structs import replace

    spec = config_spec("qwen3-next-80b-a3b")
    spec = replace(spec, gdn=replace(spec.gdn, k_head_dim=64))
    assert run("vllm", spec, "b200").settings["gdn_prefill_backend"] == "triton"


def test_triton_takes_no_prefill_checkpoint_alignment():
    # 0.33: align mode with FlashInfer makes the attention block a multiple of the checkpoints' 64 tokens (576 on an
    # H200); with Triton only the kernel block's 16 counts: the smallest multiple of 16 whose page holds a state page,
    # 544. From 0.34 the 64-token block_size aligns both to 576
    hopper, ampere = (run("vllm", "qwen3-next-80b-a3b", gpu, version=V033).stages[0].fields
                      for gpu in ("h200", "a100-80gb"))
    assert (hopper["attention_block_size"], ampere["attention_block_size"]) == (576, 544)
    assert run("vllm", "qwen3-next-80b-a3b", "a100-80gb").stages[0].fields["attention_block_size"] == 576


@pytest.mark.parametrize("version", ["0.10.2", "0.22.0", "0.33.0"])
def test_an_architecture_no_release_registers_is_refused(version):
    # model_executor/models/registry.py: Ring-mini-linear-2.0's BailingMoeLinearV2ForCausalLM is in no modelled
    # release's registry; the 0.33.0 golden table (trust_remote_code) has vLLM's "are not supported for now"
    from mcache.core.engines.vllm import architecture_error

    error = architecture_error(config_spec("ring-mini-linear-2.0"), version)
    assert error.startswith("Model architectures ['BailingMoeLinearV2ForCausalLM'] are not supported for now")
    assert architecture_error(config_spec("qwen3-next-80b-a3b"), version) is None  # registered in every one


def test_the_first_nemotron_h_class_reads_rms_norm_eps_and_builds_no_moe_layer():
    # models/nemotron_h.py at 0.10.2: every layer reads config.rms_norm_eps (the MoE checkpoints and the 56B fixture set
    # none: the 0.10.2 table), only M, - and * have a class; 0.11.1 reads layer_norm_epsilon and adds the MoE layer
    from mcache.core.engines.vllm import architecture_error

    nano, dense = config_spec("nvidia-nemotron-3-nano-30b-a3b"), config_spec("nemotron-h-56b-base-8k")
    words = "AttributeError: 'NemotronHConfig' object has no attribute 'rms_norm_eps'"
    assert architecture_error(nano, "0.10.2").startswith(words) and architecture_error(dense, "0.10.2").startswith(words)
    assert architecture_error(nano, "0.11.1") is None and architecture_error(dense, "0.11.1") is None
    assert architecture_error(config_spec("nemotron-h-8b-base-8k"), "0.10.2") is None  # sets rms_norm_eps
    with_eps = config_spec("nvidia-nemotron-3-nano-30b-a3b", norm_eps_keys=["rms_norm_eps"])
    assert architecture_error(with_eps, "0.10.2").startswith("KeyError: 'E' (layer 1 is an MoE layer")


@pytest.mark.parametrize(("version", "tp", "refusal"), [
    ("0.10.2", 2, "AssertionError: Tensor parallel currently not supported for quantized models."),
    ("0.11.1", 2, "AssertionError: Tensor parallel currently supported for quantized models only if tensor parallel "
                  "world size divides num groups."),
    ("0.15.0", 4, "AssertionError: Tensor parallel currently supported for quantized models only if tensor parallel "
                  "world size divides num groups."),
    ("0.16.0", 2, None), ("0.10.2", 1, None)])
def test_a_quantized_mamba2_checkpoint_at_tp_above_one(version, tp, refusal):
    # layers/mamba/mamba_mixer2.py MambaMixer2.__init__ with the checkpoint's quant config: 0.10.2 refuses any TP > 1,
    # 0.11.1 - 0.15.x a TP that does not divide the groups (Bamba-9B-fp8's one group), 0.16.0 neither (the extra tables)
    fp8 = load_spec(str(HF_CONFIGS_EXTRA / "bamba-9b-fp8.json"))
    assert fp8.mamba2.n_groups == 1 and fp8.quantization.format == "fp8"
    assert stage(run("vllm", fp8, "h200", tp=tp, version=version)).startup_error == refusal
    assert stage(run("vllm", replace(fp8, quantization=None), "h200", tp=tp, version=version)).startup_error is None


def test_a_quantized_mamba2_checkpoint_whose_groups_tp_divides_starts_from_0_11_1():
    eight = config_spec("nemotron-h-8b-base-8k", quantization=load_spec(str(HF_CONFIGS_EXTRA / "bamba-9b-fp8.json")).quantization)
    assert stage(run("vllm", eight, "h200", tp=2, version="0.11.1")).startup_error is None
    assert stage(run("vllm", eight, "h200", tp=2, version="0.10.2")).startup_error.endswith(
        "not supported for quantized models.")


@pytest.mark.parametrize(("config", "model_type", "refused", "loaded"), [
    ("qwen3.5-27b", "qwen3_5", "0.15.0", "0.17.0"), ("qwen3.6-35b-a3b", "qwen3_5_moe", "0.10.2", "0.17.0"),
    ("lfm2-8b-a1b", "lfm2_moe", "0.10.2", "0.11.1")])
def test_a_model_type_the_release_cannot_load_is_transformers_refusal(config, model_type, refused, loaded):
    # transformers_utils/config.py: neither vLLM's config registry nor its transformers knows the model type and the
    # checkpoint ships no configuration code, so AutoConfig refuses it first (the 0.10.2 - 0.15.0 golden tables)
    from mcache.core.engines.vllm import architecture_error

    error = architecture_error(config_spec(config), refused)
    assert error.startswith("ValidationError: 1 validation error for ModelConfig: Value error, The checkpoint you are "
                            f"trying to load has model type `{model_type}` but Transformers does not recognize this "
                            "architecture.")
    assert architecture_error(config_spec(config), loaded) is None


@pytest.mark.parametrize("version", ["0.11.1", "0.24.0"])
def test_plamo2_attention_keeps_the_whole_length(version):
    # models/plamo2.py never reads attention_window_size: every attention layer is a FullAttentionSpec (0.11.1 table)
    inputs = EngineInputs(config_spec("plamo-2-1b"), ParallelLayout(), "NVIDIA H200", gib(140), None,
                          {"max_model_len": 131072, "kv_cache_memory_bytes": gib(20)})
    fields = run_engine("vllm", inputs, version).stages[0].fields
    assert fields["groups"] == {"attention": 1, "mamba2": 1}


@pytest.mark.parametrize(("version", "fails"), [("0.13.0", False), ("0.15.0", True), ("0.17.0", True),
                                                ("0.20.0", False)])
def test_mamba2_fails_where_the_arch_convertor_reads_attention_heads(version, fails):
    # transformers_utils/model_arch_config_convertor.py v0.15.0 - v0.17.x (0.15.0 / 0.17.0 golden tables: every
    # mamba2-2.7b case); Mamba-1 has its own convertor and loads
    from mcache.core.engines.vllm import architecture_error

    error = architecture_error(config_spec("mamba2-2.7b"), version)
    assert (error == "AttributeError: 'Mamba2Config' object has no attribute 'num_attention_heads'") is fails
    assert fails or error is None
    assert architecture_error(config_spec("mamba-2.8b"), version) is None


@pytest.mark.parametrize(("version", "refused"), [("0.11.1", False), ("0.15.0", True), ("0.17.0", False)])
def test_lfm2_moe_asserts_prefix_caching_off_until_0_17(version, refused):
    # models/lfm2_moe.py Lfm2MoeForCausalLM.__init__ (v0.11.1 - v0.15.0): before 0.15 the config hook has turned
    # prefix caching off already ("without support for prefix caching: disabling"); the 0.11.1 / 0.15.0 tables
    from mcache.core.engines import run_engine
    from mcache.core.engines.common import EngineInputs
    from mcache.core.sizing.layout import ParallelLayout

    given = {"max_model_len": 4096, "enable_prefix_caching": True, "kv_cache_memory_bytes": gib(20)}
    r = run_engine("vllm", EngineInputs(config_spec("lfm2-8b-a1b"), ParallelLayout(tp=1), None, None, None, given),
                   version)
    error = stage(r).startup_error
    assert (error == "AssertionError: Lfm2Moe currently does not support prefix caching") is refused
    assert refused or error is None


@pytest.mark.parametrize(("version", "expected"), [("0.11.1", 12), ("0.12.0", 13), ("0.17.0", 13), ("0.18.0", 13)])
def test_group_size_heuristic_by_release_near_even_counts(version, expected):
    # v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size, vLLM's own example (gpt-oss-20b + eagle:
    # 12 sliding + 13 full): the smallest count before 0.12.0, the largest when under 1.25 x (0.12 - 0.17) or 1.5 x
    assert _group_size({"attention:window": 12, "attention": 13}, version) == expected


@pytest.mark.parametrize(("version", "expected"), [("0.11.1", 12), ("0.12.0", 12), ("0.17.0", 12), ("0.18.0", 16)])
def test_group_size_between_one_and_a_quarter_and_one_and_a_half(version, expected):
    # 16 / 12 = 1.33: grouped by the smallest count until 0.17, by the largest from 0.18.0 (the 1.25 -> 1.5 change)
    assert _group_size({"attention:window": 12, "attention": 16}, version) == expected


@pytest.mark.parametrize(("version", "sized"), [("0.17.0", False), ("0.18.0", True)])
def test_attention_free_prefix_caching_sized_from_0_18(version, sized):
    # config/cache.py (v0.18.0) CacheConfig._apply_block_size_default: block_size is 16 from construction, so
    # MambaModelConfig's mamba_block_size = block_size is no longer None (0.17's TypeError; the 0.17.0 / 0.18.0 tables)
    inputs = EngineInputs(config_spec("falcon-mamba-7b"), ParallelLayout(tp=1), "test GPU", gib(80), None,
                          {"enable_prefix_caching": True, "mamba_cache_mode": "align", "max_model_len": 4096,
                           "kv_cache_memory_bytes": gib(20)})
    error = stage(run_engine("vllm", inputs, version)).startup_error
    assert (error is None) == sized and (sized or error.startswith("TypeError"))


# Nemotron-H-8B at TP 1 (0.13 - 0.19: float16 SSM state): Mamba2 page conv (8,192 + 2 * 8 * 128) * 3 * 2 = 61,440 +
# state 128 * 64 * 128 * 2 = 2,097,152 = 2,158,592 B; attention 2 * 8 * 128 * 2 = 4,096 B per token, so the block is
# 16 * ceil(2,158,592 / 65,536) = 528 tokens and the page padded to 528 * 4,096 = 2,162,688 B. 24 Mamba2 layers and
# 4 attention layers: group size 4, 6 Mamba2 groups and 1 attention group; the first layer is Mamba2.
NEMOTRON_PAGE = 528 * 4_096


@pytest.mark.parametrize(("version", "starts"), [("0.13.0", False), ("0.14.0", True), ("0.18.0", True),
                                                 ("0.19.0", False)])
def test_the_one_request_check_counts_every_layer_then_the_first_group_then_every_group(version, starts):
    # v1/core/kv_cache_utils.py: one request at 4,096 tokens holds 1 block per Mamba2 layer and ceil(4,096 / 528) = 8
    # per attention layer. Before 0.14 every layer's spec: (24 + 4 * 8) pages = 0.11 GiB, over 64 MiB; 0.14 - 0.18
    # only kv_cache_groups[0], the Mamba2 group: 4 layers x 1 page = 8.25 MiB, so it starts (7 blocks of 4 pages,
    # half a request); from 0.19 every group: 4 x (6 + 8) pages, the same 0.11 GiB. The estimate: 31.03 pages fit,
    # 24 for the states and 4 for one attention block of 528 tokens
    st = stage(run_engine("vllm", EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(tp=1), given=dict(
        max_model_len=4096, enable_prefix_caching=False, kv_cache_memory_bytes=64 << 20)), version))
    if starts:
        assert st.startup_error is None
        assert st.fields["num_blocks"] == (64 << 20) // (4 * NEMOTRON_PAGE) == 7
        assert st.fields["max_concurrency"] == round(7 / (6 + 8), 2) == 0.5
    else:
        assert "(4096), (0.11 GiB KV cache is needed" in st.startup_error
        assert "estimated maximum model length is 528." in st.startup_error


@pytest.mark.parametrize(("version", "starts"), [("0.13.0", True), ("0.18.0", True), ("0.19.0", False)])
def test_from_0_19_the_one_request_check_counts_the_padding_layers(version, starts):
    # Bamba-9B at TP 1: Mamba2 page (8,192 + 2 * 128) * 3 * 2 + 128 * 64 * 128 * 2 = 2,147,840 B, block 528, padded
    # page 2,162,688 B; 29 Mamba2 layers and 3 attention layers: group size 3, 10 Mamba2 groups (one padding layer).
    # The memory is exactly every layer's blocks at 4,096 tokens: (29 + 3 * 8) pages. 0.13 counts those and starts
    # (17 blocks of 3 pages, 18 per request); from 0.19 group size x page x (10 + 8) blocks is one page more, and
    # 17 blocks hold the 10 state blocks and 7 attention blocks: 3,696 tokens
    memory = (29 + 3 * 8) * NEMOTRON_PAGE
    st = stage(run_engine("vllm", EngineInputs(config_spec("bamba-9b"), ParallelLayout(tp=1), given=dict(
        max_model_len=4096, enable_prefix_caching=False, kv_cache_memory_bytes=memory)), version))
    if starts:
        assert st.startup_error is None and st.fields["num_blocks"] == memory // (3 * NEMOTRON_PAGE) == 17
    else:
        assert "(4096), (0.11 GiB KV cache is needed" in st.startup_error
        assert "estimated maximum model length is 3696." in st.startup_error


def test_a_parallel_hybrid_layer_puts_its_attention_group_first():
    # models/falcon_h1.py FalconH1ParallelHybrid builds self_attn before mamba, so 0.14 - 0.18 count the attention
    # group. Falcon-H1-0.5B at TP 1: Mamba2 page (1,536 + 2 * 128) * 3 * 2 + 24 * 64 * 128 * 2 = 403,968 B; attention
    # 2 * 2 * 64 * 2 = 512 B per token, block 16 * ceil(403,968 / 8,192) = 800, padded page 409,600 B; 36 + 36 layers,
    # one group each of 36. At 4,096 tokens: 36 pages x ceil(4,096 / 800) = 6 blocks = 0.08 GiB, over 64 MiB (the
    # Mamba2 group's one block, 36 pages, would fit); 4 blocks of 36 pages fit: 3,200 tokens (what vLLM 0.18.0's own
    # code says for this case through the oracle's run_build: scripts/oracles/vllm_versions.md)
    st = stage(run_engine("vllm", EngineInputs(config_spec("falcon-h1-0.5b"), ParallelLayout(tp=1), given=dict(
        max_model_len=4096, kv_cache_memory_bytes=64 << 20)), "0.18.0"))
    assert "(4096), (0.08 GiB KV cache is needed" in st.startup_error
    assert "estimated maximum model length is 3200." in st.startup_error


# Bamba-9B at PP 2 (vllm/distributed/utils.py get_pp_indices: layers 0-15 and 16-31): stage 0 holds 15 Mamba2 layers
# and 1 attention layer, stage 1 14 and 2. The whole model (29 + 3): group size 3, 10 Mamba2 groups, the i-th taking
# Mamba2 layers i, i + 10, i + 20 (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size), and 1 attention group.
def bamba_pp2(version, memory, **given):
    return run_engine("vllm", EngineInputs(config_spec("bamba-9b"), ParallelLayout(tp=1, pp=2), given=dict(
        max_model_len=4096, enable_prefix_caching=False, kv_cache_memory_bytes=memory, **given)), version)


@pytest.mark.parametrize(("version", "groups", "per_request"), [("0.10.2", {"attention": 1, "mamba2": 15}, 15 + 8),
                                                                ("0.13.0", {"attention": 1, "mamba2": 10}, 10 + 8)])
def test_pp_stages_keep_their_share_of_the_whole_models_groups_from_0_11(version, groups, per_request):
    # 0.10.2 (engine/core.py: get_kv_cache_config per worker) groups stage 0's own layers: 15 Mamba2 and 1 attention,
    # group size 1, 16 groups. From 0.11.1 (get_kv_cache_configs) every stage keeps the whole model's 11 groups
    # with its own layers: stage 0 holds Mamba2 layers i and i + 10 of groups 0-4 and 1 of the attention group, so 2
    # layers share a block: 20 GiB // (2 x 2,162,688 B) = 4,964 blocks (stage 1's too: 2 of groups 5-8, 2 attention)
    st = stage(bamba_pp2(version, 20 << 30))
    assert st.fields["groups"] == groups and st.fields["blocks_per_request"] == per_request
    assert st.fields["group_size"] == (1 if version == "0.10.2" else 2)
    assert st.fields["num_blocks"] == (20 << 30) // (2 * NEMOTRON_PAGE) == 4964
    assert st.fields["max_concurrency"] == round(4964 / per_request, 2)


@pytest.mark.parametrize(("version", "starts"), [("0.15.0", False), ("0.17.0", True)])
def test_pp_one_request_check_counts_the_whole_group_then_each_stages_share(version, starts):
    # 0.14 - 0.16 check once, the whole model's group size (3) x page x the first group's blocks (Mamba2: 1) = 3 pages,
    # over 2.5 pages; from 0.17 each stage's share (2 layers) x page x 1 = 2 pages fits, and 1 block of 2 pages is made
    memory = int(2.5 * NEMOTRON_PAGE)
    stages = bamba_pp2(version, memory).stages
    if starts:
        assert [st.startup_error for st in stages] == [None, None] and stages[0].fields["num_blocks"] == 1
    else:
        assert all("(4096), (0.01 GiB KV cache is needed" in st.startup_error for st in stages)


@pytest.mark.parametrize(("arch", "refused"), [("Mamba2ForCausalLM", True), ("Zamba2ForCausalLM", True),
                                               ("NemotronHForCausalLM", False)])
def test_pp_is_refused_for_classes_without_supports_pp(arch, refused):
    # config/model.py verify_with_parallel_config: NotImplementedError for a class without SupportsPP
    spec = config_spec("nemotron-h-8b-base-8k")
    spec = type(spec)(**{**{f: getattr(spec, f) for f in spec.__struct_fields__}, "architecture": arch})
    error = stage(run_engine("vllm", EngineInputs(spec, ParallelLayout(pp=2), given=dict(kv_cache_memory_bytes=20 << 30)),
                             "0.19.0")).startup_error
    assert (error is not None and error.startswith("NotImplementedError: Pipeline parallelism")) == refused


@pytest.mark.parametrize(("layers", "pp", "split"), [(52, 3, [17, 18, 17]), (27, 4, [7, 7, 7, 6]), (32, 2, [16, 16]),
                                                     (33, 2, [17, 16])])
def test_pp_stages_split_the_layers_as_get_pp_indices(layers, pp, split):
    # distributed/utils.py get_pp_indices: layers // pp each, then one more for partitions[-2], [-3], ... (the
    # remainder never goes to the last stage); a given --pp-partition is VLLM_PP_LAYER_PARTITION and kept
    assert [len(r) for r in pp_layout(ParallelLayout(pp=pp), layers, spared=1).stages(layers)] == split
    given = ParallelLayout(pp=2, pp_partition=(1, layers - 1))
    assert pp_layout(given, layers, spared=1) is given


@pytest.mark.parametrize(("version", "pp", "refused"), [("0.11.1", 2, True), ("0.11.1", 1, False), ("0.12.0", 2, False)])
def test_qwen3_next_does_not_build_on_a_later_pp_rank_in_0_11(version, pp, refused):
    # 0.11.1 models/qwen3_next.py set_moe_parameters: "No Qwen3Next layer found" raised inside the loop when the first
    # of model.layers is a PPMissingLayer (every PP rank but the first); 0.12.0 checks after the loop
    error = stage(run_engine("vllm", EngineInputs(config_spec("qwen3-next-80b-a3b"), ParallelLayout(pp=pp), given=dict(
        max_model_len=4096, kv_cache_memory_bytes=20 << 30)), version)).startup_error
    assert (error == "RuntimeError: No Qwen3Next layer found in the model.layers.") == refused


# Bamba-9B, TP 1, 4,096 tokens, no prefix caching: 3 attention layers (8 KV heads x 128 x 2 x 2 B = 4,096 B a token),
# 29 Mamba2 layers of one 2,162,688 B page (528 tokens of attention); 100 MiB = 48.5 pages. Every layer (0.10.2 -
# 0.13): 3 x ceil(4096 / 528) + 29 = 53 pages (0.11 GiB), and 3 x 6 + 29 = 47 fit: 6 x 528 = 3168 tokens. Every
# group (0.19+): group size 3, 1 attention and 10 Mamba2 groups, 3 x (8 + 10) = 54 pages, 3 x (6 + 10) = 48 fit.
BAMBA_WORDS = {
    "0.10.2": "To serve at least one request with the models's max seq len (4096), (0.11 GiB KV cache is needed, which "
              "is larger than the available KV cache memory (0.10 GiB). Based on the available memory, the estimated "
              "maximum model length is 3168. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
              "when initializing the engine.",
    "0.13.0": "To serve at least one request with the models's max seq len (4096), (0.11 GiB KV cache is needed, which "
              "is larger than the available KV cache memory (0.10 GiB). Based on the available memory, the estimated "
              "maximum model length is 3168. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
              "when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for "
              "more details.",
    "0.19.0": "To serve at least one request with the models's max seq len (4096), (0.11 GiB KV cache is needed, which "
              "is larger than the available KV cache memory (0.1 GiB). Based on the available memory, the estimated "
              "maximum model length is 3168. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
              "when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for "
              "more details.",
    "0.22.0": "To serve at least one request with the model's max seq len (4096), (0.11 GiB KV cache is needed, which "
              "is larger than the available KV cache memory (0.1 GiB). Based on the available memory, the estimated "
              "maximum model length is 3168. Try increasing `gpu_memory_utilization` (which also controls CPU memory "
              "on the CPU backend) or decreasing `max_model_len` when initializing the engine. See "
              "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
}


def bamba_refusal(version, memory):
    return stage(run_engine("vllm", EngineInputs(config_spec("bamba-9b"), ParallelLayout(), given=dict(
        max_model_len=4096, enable_prefix_caching=False, kv_cache_memory_bytes=memory)), version)).startup_error


@pytest.mark.parametrize("version", list(BAMBA_WORDS))
def test_the_one_request_refusal_in_each_releases_words(version):
    # v1/core/kv_cache_utils.py check_enough_kv_cache_memory: "models's" and :.2f GiB (0.10.2); the docs link (0.13.0);
    # format_gib's round(x, 2), 0.1 not 0.10 (0.14.0); "model's" and the CPU-backend note (0.22.0)
    assert bamba_refusal(version, 100 << 20) == BAMBA_WORDS[version]


def test_before_0_14_a_refusal_without_an_estimate_keeps_two_spaces():
    # 0.10.2: f"... GiB). {estimated_msg} Try ...", the estimate empty when no length fits: 64 MiB = 31 pages, under
    # the 29 Mamba2 pages and 3 attention blocks of one token; 0.22.0 joins "GiB). {estimated_msg}Try"
    assert "(0.06 GiB).  Try increasing" in bamba_refusal("0.10.2", 64 << 20)
    assert "(0.06 GiB). Try increasing" in bamba_refusal("0.22.0", 64 << 20)


@pytest.mark.parametrize(("version", "words"), [
    ("0.10.2", "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
               "the engine."),
    ("0.13.0", "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
               "the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."),
    ("0.22.0", "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
               "the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See "
               "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")])
def test_no_memory_for_the_blocks_in_each_releases_words(version, words):
    assert _memory_words(version) == words


# Nemotron-H-8B ("M-M-M-M*-M-M-M-M-M*-...-M-": 24 Mamba2, 4 attention and 24 MLP layers, a padded page of 528 tokens
# of attention, NEMOTRON_PAGE) split by VLLM_PP_LAYER_PARTITION / --pp-partition
def nemotron_split(version, partition, memory=20 << 30, prefix=False):
    return run_engine("vllm", EngineInputs(config_spec("nemotron-h-8b-base-8k"), ParallelLayout(pp=2, pp_partition=partition),
                                           given=dict(max_model_len=4096, enable_prefix_caching=prefix,
                                                      kv_cache_memory_bytes=memory)), version)


def test_0_10_2_refuses_a_stage_without_attention_beside_one_with_it():
    # 7 / 45: stage 0 holds Mamba2 layers 0, 2, 4, 6 and no attention. 0.10.2 groups each worker's own layers (stage 0:
    # one Mamba2 group; stage 1: 4 attention and 20 Mamba2 layers, 1 + 5 groups) and unify_kv_cache_configs asserts
    # the sorted specs agree pair by pair: [MambaSpec] against [FullAttentionSpec, MambaSpec x 5]
    run = nemotron_split("0.10.2", (7, 45))
    assert not run.starts and {st.startup_error for st in run.stages} == {
        "AssertionError: assert group_rank_0.kv_cache_spec == group_rank_i.kv_cache_spec (v1/core/kv_cache_utils.py "
        "unify_kv_cache_configs: PP rank 1's KV-cache groups, sorted by spec, are not PP rank 0's: a FullAttentionSpec "
        "group where PP rank 0 has a MambaSpec one)"}
    # 0.11.1+: the whole model's 6 Mamba2 groups of 4 (layers i, i + 6, ...) and 1 attention group; stage 0 holds one
    # layer of groups 0 - 3, stage 1 four of groups 4, 5 and the attention group: 20 GiB // (4 x page) blocks
    stages = nemotron_split("0.13.0", (7, 45)).stages
    assert [st.fields["group_size"] for st in stages] == [1, 4]
    assert stages[0].fields["groups"] == {"mamba2": 6, "attention": 1}
    assert {st.fields["num_blocks"] for st in stages} == {(20 << 30) // (4 * NEMOTRON_PAGE)} == {2482}


def test_0_10_2_logs_each_workers_own_blocks_and_a_stage_without_cache_layers_has_the_null_block():
    # 51 / 1: the last stage holds layer 51, an MLP. 0.10.2's get_kv_cache_config gives that worker no group and one
    # block, and logs stage 0's own blocks before unify_kv_cache_configs takes the smallest: 4 attention and 24
    # Mamba2 layers, group size 4, 7 groups, 20 GiB // (4 x page) = 2482 blocks, 2482 // 7 x 528 = 186,912 tokens
    first, last = nemotron_split("0.10.2", (51, 1)).stages
    assert first.startup_error is last.startup_error is None
    assert first.fields["num_blocks"] == last.fields["num_blocks"] == 1
    assert (last.fields["groups"], last.fields["group_size"]) == ({}, 0)
    assert first.fields["kv_cache_tokens"] == 2482 // 7 * 528 == 186_912
    assert "GPU KV cache size: 186,912 tokens" in first.log
    assert first.fields["max_concurrency"] == round(1 / (8 + 6), 2)  # the scheduler's: 1 block over 8 + 6 a request


@pytest.mark.parametrize(("version", "error"), [
    ("0.11.1", "AssertionError: assert len(page_sizes) == 1 (v1/core/kv_cache_utils.py get_uniform_page_size: "),
    ("0.12.0", "AssertionError: group_size must be greater than 0 ("),
    ("0.28.0", "AssertionError: group_size must be greater than 0 ("),
    ("0.29.0", "AssertionError: assert bytes_per_block > 0 (v1/core/kv_cache_utils.py _get_kv_cache_bytes_per_block: "),
    ("0.30.0", "AssertionError: assert bytes_per_block > 0 (v1/core/kv_cache_utils.py _get_kv_cache_bytes_per_block: "),
    *((version, "ValueError: KV cache layout LBNHC cannot express this model's mixed page sizes ([]); a backend should "
                "declare block-outermost supported layouts (e.g. BLHNC), or set VLLM_KV_CACHE_LAYOUT=BLHNC. "
                "(validate_kv_cache_layout: ") for version in ("0.32.0", "0.33.0"))])
def test_from_0_11_1_a_stage_without_cache_layers_fails_to_start(version, error):
    # get_kv_cache_configs keeps every group on each worker; PP rank 1 holds none of their layers
    run = nemotron_split(version, (51, 1))
    why = "PP rank 1 holds no KV-cache layer, so its worker keeps every KV-cache group empty"
    assert {st.startup_error for st in run.stages} == {error + why + (", and no page size)" if "Value" in error else ")")}
    assert run.max_running_requests == 0


@pytest.mark.parametrize(("version", "first"), [("0.28.0", "To serve"), ("0.29.0", "AssertionError"),
                                              ("0.32.0", "To serve"), ("0.33.0", "ValueError: KV cache layout")])
def test_the_empty_stage_refuses_before_or_after_the_one_request_check(version, first):
    # 64 MiB: from 0.20 Nemotron-H's SSM state is float32, a page of 4,259,840 B (1,040 tokens of attention); stage
    # 0's share (4 layers a block) x page x (4 attention + 6 Mamba2 blocks) = 170,393,600 B (0.16 GiB) does not fit.
    # 0.29 - 0.31 first take every worker's bytes per block to hold the null block back (the empty worker asserts),
    # 0.32 takes 0 for the empty worker (LBNHC) and refuses its layout after the checks, 0.33 probes its config first
    error = nemotron_split(version, (51, 1), 64 << 20).stages[0].startup_error
    assert error.startswith(first)
    if first == "To serve":
        assert "max seq len (4096), (0.16 GiB KV cache is needed" in error


@pytest.mark.parametrize(("version", "words"), [
    ("0.20.0", "The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting "
               "block_size."),
    ("0.24.0", "Layer <PP rank 0's first recurrent layer>: page size is not divisible by the maximum page size and "
               "cannot be padded. Padding is only supported for attention layers whose backend indexes KV pages by "
               "the block stride (indexes_kv_by_block_stride is True).")])
def test_0_20_to_0_26_refuse_a_stage_without_attention_its_unpadded_state_page(version, words):
    # 7 / 45: stage 0 holds 4 Mamba2 layers and no attention. 0.19 pads the page once at config time
    # (HybridAttentionMambaModelConfig); from 0.20 each worker pads its own (update_block_size_for_backend), only with
    # an attention backend among its layers, so stage 0 keeps the float32 state's 4,255,744 B beside stage 1's
    # 1,040 x 4,096 = 4,259,840 B, which it does not divide (unify_kv_cache_spec_page_size)
    assert nemotron_split("0.19.0", (7, 45)).starts
    run = nemotron_split(version, (7, 45))
    assert {st.startup_error for st in run.stages} == {
        f"NotImplementedError: {words} (PP rank 0 holds recurrent layers and no attention, so its worker keeps the "
        "state page unpadded, 4255744 bytes, beside the padded 4259840: platforms/interface.py "
        "update_block_size_for_backend finds no attention backend there)"}
    fields = run.stages[1].fields
    assert (fields["state_page_bytes"], fields["state_page_padded_bytes"]) == (4_255_744, 1040 * 4096)


@pytest.mark.parametrize(("prefix", "groups", "shares", "per_request"), [
    (False, {"mamba2": 6, "attention": 1}, [1, 4], 4 + 6),
    (True, {"mamba2:unaligned": 1, "mamba2": 5, "attention": 1}, [4, 4], 4 + 6 * 2)])
def test_from_0_27_the_unpadded_stage_pads_and_groups_apart_in_align_mode(prefix, groups, shares, per_request):
    # 0.27 unify_kv_cache_spec_page_size pads the smaller Mamba page to the largest. Without prefix caching every state
    # block is the max model length, so stage 0's specs equal stage 1's (6 Mamba2 groups of 4, the i-th taking layers
    # i, i + 6, ...: stage 0 one of each of groups 0 - 3). With it (0.28: align), stage 0's states keep the unaligned
    # 16-token cache block against the aligned 1,040: a spec of its own, 4 / 20 / 4 layers, group size 4: 1 + 5 + 1
    # groups. A request: ceil(4096 / 1040) = 4 attention blocks + 2 per Mamba2 group (align)
    stages = nemotron_split("0.28.0", (7, 45), prefix=prefix).stages
    assert stages[0].fields["groups"] == groups
    assert [st.fields["group_size"] for st in stages] == shares
    assert stages[0].fields["blocks_per_request"] == per_request
    assert {st.fields["num_blocks"] for st in stages} == {(20 << 30) // (4 * 4_259_840)} == {1260}


@pytest.mark.parametrize(("version", "sized_as"), [("0.22.0", "native"), ("0.24.0", "attention"), ("0.29.0", "attention"),
                                                   ("0.30.0", "refused")])
def test_minimax_on_the_transformers_backend_is_sized_as_attention_layers_before_0_30(version, sized_as):
    # registry.py _try_resolve_transformers (v0.24.0 - v0.29.0): MiniMaxForCausalLM, removed after 0.23, goes to the
    # Transformers backend (is_backend_compatible), whose create_attention_instances (models/transformers/base.py)
    # makes an Attention for each of its 80 layers; the 0.29.0 golden table: one FullAttentionSpec group, 20 GiB ->
    # 4,096 blocks of 16 tokens (80 layers x 8 KV heads x 128 x 2 x 2 B = 327,680 B a token). From 0.30.0 the backend
    # refuses layer 0 (linear attention)
    from mcache.core.engines.vllm import architecture_error

    spec = config_spec("minimax-text-01")
    inputs = EngineInputs(spec, ParallelLayout(), "NVIDIA H200", 143771140096, None,
                          {"max_model_len": 4096, "kv_cache_memory_bytes": gib(20), "weights_bytes": 0})
    st = run_engine("vllm", inputs, version).stages[0]
    if sized_as == "refused":
        assert st.startup_error.startswith("Layer 0 does not dispatch through the Transformers attention interface")
        return
    groups = {"attention": 1} if sized_as == "attention" else st.fields["groups"]
    assert st.startup_error is None and st.fields["groups"] == groups
    if sized_as == "attention":
        assert (st.fields["num_blocks"], st.fields["blocks_per_request"], st.fields["state_page_bytes"]) == (4096, 256, None)
        assert "starts it through the Transformers backend" in architecture_error(spec, version)  # not served
    else:
        assert st.fields["state_page_bytes"] and architecture_error(spec, version) is None


@pytest.mark.parametrize(("stem", "pp", "error"), [
    ("lfm2-1.2b", 2, "AttributeError: 'Lfm2ForCausalLM' object has no attribute 'unpadded_vocab_size'"),
    ("lfm2-1.2b", 1, None),
    ("qwen3-next-80b-a3b-instruct-fp8", 1, "ValueError: Detected some but not all shards of model.layers.0.linear_attn"),
    ("qwen3-next-80b-a3b", 1, None)])
def test_models_0_10_2_does_not_build(stem, pp, error):
    # the 0.10.2 golden table: models/lfm2.py sets unpadded_vocab_size on the last PP rank only; models/qwen3_next.py
    # fuses in_proj_qkvz and in_proj_ba, which the FP8 checkpoint quantizes apart (quant_utils.py is_layer_skipped);
    # 0.11.1 builds both
    inputs = EngineInputs(config_spec(stem), ParallelLayout(pp=pp), "NVIDIA H200", 143771140096, None,
                          {"max_model_len": 4096, "kv_cache_memory_bytes": gib(20), "weights_bytes": 0})
    for version, refused in (("0.10.2", error), ("0.11.1", None)):
        got = run_engine("vllm", inputs, version).stages[0].startup_error
        assert (got or "").startswith(refused or "") and (got is None) is (refused is None), (version, got)


def test_zamba2_attention_group_is_first_in_the_first_group_check():
    # models/zamba2.py builds the shared attention blocks first; the 0.18.0 table: Zamba2-2.7B, TP 1, 4,096 tokens,
    # 64 MiB: 0.71 GiB needed (the attention group), estimated maximum model length 336
    inputs = EngineInputs(config_spec("zamba2-2.7b"), ParallelLayout(), "NVIDIA H200", 143771140096, None,
                          {"max_model_len": 4096, "kv_cache_memory_bytes": 64 << 20, "weights_bytes": 0})
    error = run_engine("vllm", inputs, "0.18.0").stages[0].startup_error
    assert "(0.71 GiB KV cache is needed" in error and "estimated maximum model length is 336." in error


def test_0_34_utilization_defaults_to_all_memory_with_the_extensible_kv_cache():
    # config/cache.py resolved_gpu_memory_utilization (v0.34.0): 1.0 with the extensible KV cache, which
    # config/vllm.py _resolve_extensible_kv_cache turns on on CUDA unless kv_cache_memory_bytes is set; else 0.92
    sized = dict(weights_bytes=gib(50), non_kv_memory_bytes=gib(2), max_model_len=32_768, enable_prefix_caching=False)
    r = run("vllm", config_spec(QWEN35), "h200", **sized)
    assert r.settings["gpu_memory_utilization"] == 1.0
    per_block = 16 * 832 * ATTN_TOKEN  # 64 * ceil(3,207,168 / (64 * 4,096)) = 832 tokens
    assert stage(r).fields["num_blocks"] == ((143_771 << 20) - gib(52)) // per_block
    given = run("vllm", config_spec(QWEN35), "h200", kv_cache_memory_bytes=gib(20))
    assert given.settings["gpu_memory_utilization"] == 0.92
    assert run("vllm", config_spec(QWEN35), "h200", version=V033, **sized).settings["gpu_memory_utilization"] == 0.92


def test_0_34_refusals_advise_by_how_the_kv_cache_was_sized():
    # v1/core/kv_cache_planning.py _more_kv_cache_memory_hint (v0.34.0): kv_cache_memory_bytes given, the
    # utilization advice of 0.22 - 0.33; the extensible KV cache at 1.0 or below it, its own
    docs = " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    assert _memory_words("0.34.0") == _memory_words(V033)
    assert _memory_words("0.34.0", utilization=1.0) == (
        "No available memory for the cache blocks. The extensible KV cache already takes all device memory left after "
        "the model and its activations; decrease `max_model_len` or `max_num_seqs`, or the model needs a device with "
        "more memory." + docs)
    short = (4096, 1 << 30, 1 << 29, 2048)
    assert _memory_words("0.34.0", short, 0.9) == (
        "To serve at least one request with the model's max seq len (4096), (1.0 GiB KV cache is needed, which is "
        "larger than the available KV cache memory (0.5 GiB). Based on the available memory, the estimated maximum "
        "model length is 2048. The KV cache gets what is left after the model and its activations within "
        "`gpu_memory_utilization`=0.9; increase it (with the extensible KV cache it defaults to 1.0) or decrease "
        "`max_model_len` or `max_num_seqs`. Decreasing `max_model_len` also reduces what is needed." + docs)
    assert _memory_words("0.34.0", short).endswith(
        "Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU memory "
        "reservation on the CPU backend, despite its name). Decreasing `max_model_len` also reduces what is needed."
        + docs)


def test_mamba2_groups_tp_cannot_split_stop_vllm_as_its_mixer_asserts():
    # layers/mamba/mamba_mixer2.py MambaMixer2.__init__ (0.10.2 - 0.33.0): `n_groups % tp_size == 0 or n_groups == 1`;
    # Falcon-H1-34B's 2 groups at TP 4 (the extra golden tables), in 0.10.2's words "num_heads"
    falcon = str(HF_CONFIGS_EXTRA / "falcon-h1-34b.json")
    words = "AssertionError: If tensor parallel world size does not divide {}, then num_groups must equal 1."
    assert stage(run("vllm", falcon, "h200", tp=4, max_model_len=4096)).startup_error == words.format("num_groups")
    old = run_engine("vllm", EngineInputs(load_spec(falcon), ParallelLayout(tp=4), "NVIDIA H200", gib(141), None,
                                          {"max_model_len": 4096}), "0.10.2")
    assert stage(old).startup_error == words.format("num_heads")
    assert stage(run("vllm", falcon, "h200", tp=2, max_model_len=4096)).startup_error is None  # 1 group a rank


def vl_spec(stem: str):
    """The spec of a multimodal hybrid of tests/data/hf_configs_extra."""
    return import_hf(HF_CONFIGS_EXTRA / f"{stem}.json")


@pytest.mark.parametrize(("stem", "first"), [("nvidia-nemotron-nano-12b-v2-vl", "0.11.0")])
def test_a_multimodal_hybrid_loads_from_the_release_that_registers_it(stem, first):
    # model_executor/models/registry.py: NemotronH_Nano_VL_V2 from 0.11.0 (0.10.2 registers only the v1
    # NemotronH_Nano_VL)
    spec = vl_spec(stem)
    before = VERSIONS[VERSIONS.index(first) - 1]
    given = dict(kv_cache_memory_bytes=20 << 30, max_model_len=8192)
    assert stage(run("vllm", spec, version=before, **given)).startup_error == (
        f"Model architectures ['{spec.architecture}'] are not supported for now (vLLM {before}; registered from {first} "
        "on).")
    assert stage(run("vllm", spec, version=first, **given)).startup_error is None


def test_lfm2_vl_before_its_registration_runs_on_the_transformers_backend_as_attention_only():
    """registry.py registers Lfm2VlForConditionalGeneration from 0.14.0; 0.11.1 - 0.13.x hand its transformers class
    to the Transformers multimodal backend (the 0.11.1 and 0.13.0 extra tables): every one of its 16 layers a
    full-attention one of 8 KV heads x 64 (2,048 bytes a token), no state. 20 GiB in 16-token blocks of the 16 layers
    (524,288 bytes) hold 40,960 blocks, 655,360 tokens, 80 requests of 8,192. Over TP ranks that class has no plan."""
    spec, given = vl_spec("lfm2-vl-1.6b"), dict(kv_cache_memory_bytes=20 << 30, max_model_len=8192)
    tp1 = stage(run("vllm", spec, version="0.13.0", **given))
    assert tp1.startup_error is None and tp1.fields["groups"] == {"attention": 1}
    assert (tp1.fields["kv_cache_tokens"], tp1.fields["max_concurrency"]) == (655_360, 80.0)
    assert stage(run("vllm", spec, version="0.13.0", tp=2, **given)).startup_error == (
        "ValueError: <class 'transformers.models.lfm2_vl.modeling_lfm2_vl.Lfm2VlModel'> does not support tensor "
        "parallel. See https://docs.vllm.ai/en/latest/models/supported_models.html#writing-custom-models for "
        "instructions on how to add support yourself.")
    assert stage(run("vllm", spec, version="0.14.0", **given)).fields["groups"] != {"attention": 1}


@pytest.mark.parametrize(("version", "ssm", "logged"), [("0.19.0", "bfloat16", False), ("0.20.0", "float32", True),
                                                         ("0.34.0", "float32", True)])
def test_nemotron_vl_takes_the_nemotron_h_state_dtype_hook_from_0_20(version, ssm, logged):
    # models/config.py NemotronHNanoVLV2Config: from 0.20.0 update_mamba_ssm_cache_dtype on its text_config (float32
    # unless the config says); 0.18 - 0.19's sets the video backend only, so the state takes the model dtype
    r = run("vllm", vl_spec("nvidia-nemotron-nano-12b-v2-vl"), version=version, kv_cache_memory_bytes=20 << 30,
            max_model_len=8192)
    assert r.dtypes.ssm == ssm
    assert ("Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model" in stage(r).log) == logged


VL_GIVEN = dict(kv_cache_memory_bytes=20 << 30, max_model_len=8192)


def omni_spec(arch: str = "NemotronH_Nano_Omni_Reasoning_V3"):
    """A Nemotron Omni V3 architecture: Nemotron Nano VL v2's real config under its name (vLLM builds both with
    nano_nemotron_vl.py's class; no Omni config.json is published whole where this repository can cite it)."""
    return replace(vl_spec("nvidia-nemotron-nano-12b-v2-vl"), architecture=arch)


@pytest.mark.parametrize(("arch", "first"), [("NemotronH_Nano_Omni_Reasoning_V3", "0.20.0"),
                                             ("NemotronH_Super_Omni_Reasoning_V3", "0.20.0"),
                                             ("NemotronH_Omni_Reasoning_V3", "0.29.0")])
def test_a_nemotron_omni_architecture_loads_from_the_release_that_registers_it(arch, first):
    # model_executor/models/registry.py maps each to nano_nemotron_vl.py's NemotronH_Nano_VL_V2: the Nano and Super
    # Omni names from 0.20.0 (not in 0.19.0), NemotronH_Omni_Reasoning_V3 from 0.29.0 (not in 0.28.0)
    spec = omni_spec(arch)
    before = VERSIONS[VERSIONS.index(first) - 1]
    assert stage(run("vllm", spec, version=before, **VL_GIVEN)).startup_error == (
        f"Model architectures ['{arch}'] are not supported for now (vLLM {before}; registered from {first} on).")
    assert stage(run("vllm", spec, version=first, **VL_GIVEN)).startup_error is None


@pytest.mark.parametrize(("version", "ssm", "logged"), [("0.20.0", "bfloat16", False), ("0.33.0", "bfloat16", False),
                                                         ("0.34.0", "float32", True)])
def test_nemotron_omni_takes_the_nemotron_h_state_dtype_hook_from_0_34(version, ssm, logged):
    # models/config.py MODELS_CONFIG_MAP names the Omni V3 architectures (NemotronHNanoVLV2Config) only from 0.34.0:
    # before, no hook runs, so the state takes the model dtype (where NemotronH_Nano_VL_V2 has float32 from 0.20.0).
    # A Mamba2 layer's page: conv (128 x 80 + 2 x 8 x 128) x 3 rows in bf16, state 128 heads x 80 x 128 in bf16 or
    # float32
    r = run("vllm", omni_spec(), version=version, **VL_GIVEN)
    assert r.dtypes.ssm == ssm
    assert stage(r).fields["state_page_bytes"] == 12288 * 3 * 2 + 128 * 80 * 128 * (4 if ssm == "float32" else 2)
    assert ("Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model" in stage(r).log) == logged


def test_nemotron_omni_refuses_pipeline_parallelism_as_nemotron_vl():
    # the same class, without SupportsPP (nano_nemotron_vl.py, v0.34.0)
    omni = run_engine("vllm", EngineInputs(omni_spec(), ParallelLayout(pp=2), given=VL_GIVEN), "0.34.0")
    assert stage(omni).startup_error.startswith("NotImplementedError: Pipeline parallelism is not supported")


def test_minicpm_v_4_6_loads_from_0_24_and_its_state_dtype_hint_is_not_read():
    # models/minicpmv4_6.py imports transformers' MiniCPMV4_6Config (transformers 5.7, v0.24.0's; 0.22.0 registers the
    # architecture but runs transformers 4.57); no MODELS_CONFIG_MAP entry copies text_config.mamba_ssm_dtype
    # (float32) as Qwen3.5's does, so the GDN state is bfloat16: a layer's page is conv (2 x 2048 + 2048) x 3 rows and
    # state 16 x 128 x 128, both bf16
    spec = vl_spec("minicpm-v-4.6")
    assert stage(run("vllm", spec, version="0.22.0", **VL_GIVEN)).startup_error.startswith(
        "ValidationError: 1 validation error for ModelConfig: Value error, The checkpoint you are trying to load has "
        "model type `minicpmv4_6` but Transformers does not recognize this architecture.")
    for version in ("0.24.0", "0.34.0"):
        r = run("vllm", spec, version=version, **VL_GIVEN)
        assert stage(r).startup_error is None and r.dtypes.ssm == "bfloat16"
        assert stage(r).fields["state_page_bytes"] == 6144 * 3 * 2 + 16 * 128 * 128 * 2 == 561_152
    as_qwen = run("vllm", replace(spec, architecture="Qwen3_5ForConditionalGeneration"), **VL_GIVEN)
    assert as_qwen.dtypes.ssm == "float32"


def test_nemotron_vl_refuses_pipeline_parallelism_and_lfm2_vl_takes_it():
    # nano_nemotron_vl.py NemotronH_Nano_VL_V2 lacks SupportsPP (0.11.1 - 0.34.0); lfm2_vl.py's class has it
    given = dict(kv_cache_memory_bytes=20 << 30, max_model_len=8192)
    nemotron = run_engine("vllm", EngineInputs(vl_spec("nvidia-nemotron-nano-12b-v2-vl"), ParallelLayout(pp=2),
                                               given=given), "0.34.0")
    assert stage(nemotron).startup_error.startswith("NotImplementedError: Pipeline parallelism is not supported")
    lfm2 = run_engine("vllm", EngineInputs(vl_spec("lfm2-vl-1.6b"), ParallelLayout(pp=2), given=given), "0.34.0")
    assert all(st.startup_error is None for st in lfm2.stages)


def test_nemotron_vl_conv_state_takes_the_draft_rows_from_0_17_as_nemotron_h():
    # nano_nemotron_vl.py get_mamba_state_shape_from_config hands its text_config to nemotron_h.py's, which passes
    # num_spec from 0.17.0: the padded page grows with the drafts as NemotronH's does
    spec = vl_spec("nvidia-nemotron-nano-12b-v2-vl")
    text = replace(spec, architecture="NemotronHForCausalLM", vision=None)
    for version in ("0.17.0", "0.34.0"):
        pages = [stage(run("vllm", s, version=version, kv_cache_memory_bytes=20 << 30, max_model_len=8192,
                           num_speculative_tokens=2)).fields["state_page_bytes"] for s in (spec, text)]
        assert pages[0] == pages[1]


def test_a_float32_config_is_served_in_bfloat16_weights_and_caches():
    """config/model.py _resolve_auto_dtype (v0.10.2 - v0.34.0): --dtype auto downcasts a float32 config to the
    platform's first dtype, bfloat16 on every card mcache knows. state-spaces/mamba-2.8b-hf says float32: vLLM loads
    parameters at 2 bytes (5.16 GiB, not 10.31) and keeps conv and state in bfloat16: a layer's state page is
    (5120 x 3 + 5120 x 16) x 2 = 194,560 bytes."""
    spec = import_hf(HF_CONFIGS_EXTRA / "mamba-2.8b-hf.json")
    assert spec.dtype == "float32"
    out = run("vllm", spec, "h200")
    assert (out.dtypes.model, out.dtypes.conv, out.dtypes.ssm) == ("bfloat16", "bfloat16", "bfloat16")
    assert out.settings["weights_bytes"] == 2 * weights.total_params(spec)
    assert stage(out).fields["state_page_bytes"] == (5120 * 3 + 5120 * 16) * 2


def test_align_mode_refuses_a_block_larger_than_a_step_from_0_17_to_0_26():
    # vllm#36734 (0.17.1): Qwen3.5-122B-A10B-GPTQ-Int4 at TP 2 with prefix caching failed "In Mamba cache align mode,
    # block_size (2096) must be <= max_num_batched_tokens (2048)". A rank's GDN state: 32 value heads x 128 x 128 in
    # float32 (the config's mamba_ssm_dtype) + conv (2*8*128 + 32*128) x 3 rows in bf16 = 2,097,152 + 36,864 bytes; an
    # attention token on a rank: K and V of 1 head x 256 in bf16 = 1,024 B; 16 * ceil(2,134,016 / (16 * 1,024)) = 2096
    spec = import_hf(HF_CONFIGS_EXTRA / "qwen3.5-122b-a10b.json")
    refused = stage(run("vllm", spec, "l40s", tp=2, weights_bytes=gib(33), enable_prefix_caching=True,
                           version="0.17.0"))  # 2048 tokens a step under 70 GiB
    assert "Setting attention block size to 2096 tokens to ensure that attention page size is >= mamba page size." in \
        refused.log
    said = "In Mamba cache align mode, block_size (2096) must be <= max_num_batched_tokens (2048)."
    # 0.17: VllmConfig.__post_init__, which pydantic reports; 0.18 - 0.26: validate_block_size, after the KV sizing
    assert refused.startup_error == f"ValidationError: 1 validation error for VllmConfig: Assertion failed, {said}"
    assert stage(run("vllm", spec, "l40s", tp=2, weights_bytes=gib(33), enable_prefix_caching=True,
                     version="0.26.0")).startup_error == f"AssertionError: {said}"
    for version, settings in (("0.27.0", {}), ("0.17.0", {"max_num_batched_tokens": 4096}),
                              ("0.17.0", {"enable_prefix_caching": False})):
        ok = stage(run("vllm", spec, "l40s", tp=2, weights_bytes=gib(33), version=version,
                        **{"enable_prefix_caching": True, **settings}))
        assert ok.startup_error is None, (version, settings)
    assert stage(run("vllm", spec, "h100-80gb", tp=2, weights_bytes=gib(33), enable_prefix_caching=True,
                        version="0.17.0")).startup_error is None  # 8192 a step


@pytest.mark.parametrize(("gpu", "settings", "version", "apart"), [
    ("mi300x", {"attention_backend": "TRITON_ATTN"}, "0.28.0", True),  # ROCm's drafter: ROCM_ATTN, not block-first
    ("mi300x", {"attention_backend": "TRITON_ATTN"}, "0.26.0", True),
    ("mi300x", {"attention_backend": "TRITON_ATTN"}, "0.29.0", False),  # 0.29 drops the spec's field
    ("mi300x", {"attention_backend": "TRITON_ATTN"}, "0.25.0", False),
    ("mi300x", {"attention_backend": "ROCM_AITER_FA"}, "0.28.0", False),  # the same kind of layout as ROCM_ATTN
    ("mi300x", {}, "0.28.0", False),  # both take the platform's choice
    ("h200", {"attention_backend": "TRITON_ATTN"}, "0.28.0", False),  # CUDA's FlashAttention is block-first too
    (None, {"attention_backend": "TRITON_ATTN"}, "0.28.0", False),  # a GPU outside the catalogue: assumed alike
    (None, {"attention_backend": "TRITON_ATTN", "draft_attention_backend": "ROCM_ATTN"}, "0.28.0", True),
])
def test_an_mtp_drafter_on_another_kv_layout_keeps_a_spec_of_its_own(gpu, settings, version, apart):
    """vLLM 0.26-0.28 stamp each attention spec with its backend's indexes_kv_by_block_stride and never give the MTP
    drafter the model's --attention-backend (llm_base_proposer.py): where the two differ the MTP layer is a bucket of
    its own, so the grouping takes one layer a group (buckets of 16, 1 and 48) and no padding layers."""
    st = stage(run("vllm", config_spec(QWEN35), gpu, gpu_bytes=None if gpu else gib(80), version=version,
                   num_speculative_tokens=1, kv_cache_memory_bytes=gib(18.53), **settings))
    assert ("attention:draft" in st.fields["groups"]) == apart
    assert st.fields["group_size"] == (1 if apart else 17)
    assert not any("padding layers" in line for line in st.log) if apart else True


def test_the_gfx1151_mtp_boot_is_one_layer_a_group():
    """The public gfx1151 MTP boot (tests/data/engine_logs/vllm/qwen38-27b-bf16-gfx1151-triton-262k-mtp1-0.28dev.log):
    18.53 GiB / 3,276,800 B pages = 6,071 pages; a request takes 17 x cdiv(262,144, 800) + 48 x 3 = 5,720; 6,071 /
    5,720 x 262,144 = 278,230 tokens (mcache's grouping of 17 attention layers gives 277,701)."""
    st = stage(run("vllm", config_spec(QWEN35), gpu_bytes=gib(80), version="0.28.0", num_speculative_tokens=1,
                   kv_cache_memory_bytes=int(18.53 * (1 << 30)), max_num_seqs=256, max_num_batched_tokens=2048,
                   attention_backend="TRITON_ATTN", draft_attention_backend="ROCM_ATTN"))
    assert st.fields["attention_block_size"] == 800
    assert st.fields["kv_cache_tokens"] == 6071 * 262_144 // 5720 == 278_230


@pytest.mark.parametrize("name", ["attention_backend", "draft_attention_backend"])
def test_an_unknown_attention_backend_is_one_line(name):
    with pytest.raises(LayoutError, match=rf"{name}: one of FLASH_ATTN, .* \(the backends mcache knows\), got 'FAST'"):
        run("vllm", config_spec(QWEN35), "h200", **{name: "FAST"})
