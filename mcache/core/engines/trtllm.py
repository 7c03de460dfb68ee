"""TensorRT-LLM (PyTorch backend) with its C++ hybrid cache manager: the state dtype, the fixed state cost of
`max_batch_size x pp + 1` slots, the budget `free_gpu_memory_fraction` takes of the memory left after the
profiled peak, the KV tokens left for attention, and the start-up failure when the fixed cost does not fit; and the
LLM-API options that start a deployment `mcache plan` found.

Sources (NVIDIA/TensorRT-LLM, main at commit 151c21c6a0034712a71fb0352cf7c75ea07b7b5b):
`tensorrt_llm/_torch/pyexecutor/_util.py` (`KvCacheCreator`, `CacheCost`, `_cal_max_memory` and its log lines),
`tensorrt_llm/_torch/pyexecutor/kv_cache/mamba_cache_manager.py` (`CppMambaHybridCacheManager.get_cache_size_per_token`:
the affine cost), `tensorrt_llm/_torch/pyexecutor/config_utils.py` (`MambaKVCacheParams`, `resolve_ssm_cache_dtype`),
`tensorrt_llm/_torch/modules/mamba/mamba2_tp.py` (Mamba2 groups replicated when tp > n_groups),
`tensorrt_llm/llmapi/llm_args.py` (`KvCacheConfig`, `BaseLlmArgs` defaults and option names). KV cache manager V2
(`use_kv_cache_manager_v2`, which splits the budget by a typical step) is not modelled: this is the V1 manager
(`use_kv_cache_manager_v2: false`).
"""

from __future__ import annotations

from msgspec import Struct

from mcache.core.engines.common import (
    ATTENTION_KINDS,
    GIB,
    EngineInputs,
    EngineRun,
    EngineStage,
    ServeArgs,
    Settings,
    asked_context,
    mtp_attention_layers,
    stage_contexts,
    state_bytes,
    state_dtype,
    token_bytes,
    window_caveats,
)
from mcache.core.errors import LayoutError
from mcache.core.files import json_text
from mcache.core.kinds.base import CacheDtypes
from mcache.core.numbers import cdiv
from mcache.core.sizing.rank import RankContext, checkpoint_kv_format
from mcache.core.spec import dtypes as dtype_names

NAME = "trtllm"
VERSIONS = ("main@151c21c",)  # what this module models, oldest first: main at commit 151c21c (V1 KV cache manager)
# The `SizeOptions` fields of `mcache size --engine trtllm` and the TensorRT-LLM setting each sets (its own name is an
# alias of the option; an option TensorRT-LLM lacks is refused with it).
FLAGS = {
    "max_seq_len": "max_seq_len", "draft": "max_draft_len", "kv_dtype": "kv_cache_dtype",
    "ssm_dtype": "mamba_ssm_cache_dtype", "block_size": "tokens_per_block", "max_batch": "max_batch_size",
    "reserve": "non_kv_memory_bytes", "weights": "weights_bytes",
    "free_gpu_memory_fraction": "free_gpu_memory_fraction", "max_tokens": "max_tokens",
}
INSTEAD = {"utilization": "free_gpu_memory_fraction"}  # mcache options it lacks -> its own option for them (fields)
SETTINGS = ("max_batch_size", "max_seq_len", "free_gpu_memory_fraction", "tokens_per_block", "mamba_ssm_cache_dtype",
            "kv_cache_dtype", "max_draft_len", "max_tokens")
KV_DTYPES = {"auto": None, "fp8": "float8_e4m3fn"}  # KvCacheConfig.dtype with a plain per-token cache
DEFAULT_MAX_BATCH_SIZE = 2048  # llmapi/llm_args.py: BaseLlmArgs.max_batch_size
DEFAULT_FREE_GPU_MEMORY_FRACTION = 0.9  # llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction
DEFAULT_TOKENS_PER_BLOCK = 32  # llmapi/llm_args.py: KvCacheConfig.tokens_per_block
DUMMY_SLOTS = 1  # mamba_cache_manager.py: one CUDA-graph padding slot, shared by every padded request
UNSUPPORTED_KINDS = ("mamba1", "short_conv", "lightning")  # no state manager in the hybrid cache manager


class Setup(Struct, frozen=True):
    """TensorRT-LLM's settings for the run: max_batch_size, the max sequence length and the context asked, the
    fraction of the free memory the KV cache takes, tokens per block, draft tokens, the `max_tokens` cap, the
    memory the profiling finds besides the weights, and the cache dtypes."""

    batch: int
    max_len: int
    context: int
    fraction: float
    block: int
    drafts: int
    max_tokens: int | None
    non_kv: int
    dtypes: CacheDtypes


def run(inputs: EngineInputs) -> EngineRun:
    """TensorRT-LLM's sizing of every PP stage."""
    spec = inputs.spec
    s = Settings(inputs.given, SETTINGS, "TensorRT-LLM")
    unsupported = sorted({k for k in UNSUPPORTED_KINDS if getattr(spec, k) is not None})
    if unsupported:
        raise LayoutError("engine", f"a model TensorRT-LLM's hybrid cache manager serves (Mamba2, GatedDeltaNet or KDA "
                                    f"states); this one has {', '.join(unsupported)} layers")
    setup = _setup(inputs, s)
    contexts = stage_contexts(spec, inputs.layout, setup.dtypes)
    weights = s.weights(contexts)
    stages = [_stage(ctx, weight, inputs, setup) for ctx, weight in zip(contexts, weights, strict=True)]
    _share_tokens(stages, setup, inputs.layout.pp)
    caveats = window_caveats(spec, "TensorRT-LLM", "per-window KV pools (max_attention_window)")
    return EngineRun(NAME, setup.max_len, setup.context, s.values, s.sources, setup.dtypes, stages, caveats)


def serve_command(args: ServeArgs) -> str:
    """The LLM-API options of a deployment, as JSON (tensorrt_llm/llmapi/llm_args.py: `LLM(...)` keyword arguments
    and `KvCacheConfig` fields)."""
    cache = {"dtype": args.kv_dtype} if args.kv_dtype else {}
    cache |= {"mamba_ssm_cache_dtype": args.ssm_dtype} if args.ssm_dtype else {}
    options = {"tensor_parallel_size": args.tp, "pipeline_parallel_size": args.pp, "max_seq_len": args.context}
    options |= {"kv_cache_config": cache} if cache else {}
    options |= {"speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": args.draft}} if args.draft else {}
    return json_text(options, indent=None)


def _setup(inputs: EngineInputs, s: Settings) -> Setup:
    """The settings of the run: given, else TensorRT-LLM's defaults (a `LayoutError` for a fraction out of range)."""
    batch = s.take("max_batch_size", DEFAULT_MAX_BATCH_SIZE)
    max_len = s.model_length("max_seq_len", inputs.spec)
    fraction = s.take("free_gpu_memory_fraction", DEFAULT_FREE_GPU_MEMORY_FRACTION)
    block = s.take("tokens_per_block", DEFAULT_TOKENS_PER_BLOCK)
    drafts = s.take("max_draft_len", 0)
    max_tokens = s.take("max_tokens", None)
    non_kv = s.non_kv_memory("TensorRT-LLM profiles its activation peak and non-torch memory at start-up")
    if not 0 < fraction <= 1:
        raise LayoutError("free_gpu_memory_fraction", f"a fraction in (0, 1], got {fraction}")
    dtypes = _dtypes(inputs.spec, s)
    return Setup(batch, max_len, asked_context(inputs, max_len), fraction, block, drafts, max_tokens, non_kv, dtypes)


def _stage(ctx: RankContext, weight: int, inputs: EngineInputs, setup: Setup) -> EngineStage:
    """One stage's affine cost (fixed state slots + KV per token), its budget, its tokens before the ranks agree, and
    its start-up failure (the running requests are filled once the ranks agree)."""
    pp, block = inputs.layout.pp, setup.block
    slot = _slot_bytes(ctx, setup.dtypes)
    slope = _token_bytes(ctx, inputs.spec, setup.dtypes, setup.drafts)
    fixed_slots = setup.batch * pp + DUMMY_SLOTS
    intercept = fixed_slots * slot
    fields = {"max_batch_size": setup.batch, "state_slot_bytes": slot, "kv_token_bytes": slope,
              "fixed_state_slots": fixed_slots, "fixed_cost_bytes": intercept, "kv_cache_budget_bytes": None,
              "max_tokens": None, "largest_max_batch_size": None, "best_max_batch_size": None}
    if inputs.gpu_bytes is None:
        return EngineStage(ctx.stage, None, None, [], None, fields)
    peak = weight + setup.non_kv
    budget = int((inputs.gpu_bytes - peak) * setup.fraction)  # _util.py _cal_max_memory
    seq_tokens = cdiv(setup.context, block) * block
    largest = _largest_batch(budget, slot, slope * seq_tokens, pp)
    fields.update(kv_cache_budget_bytes=budget, largest_max_batch_size=largest,
                  best_max_batch_size=_best_batch(budget, slot, slope * seq_tokens, pp))
    log = [f"Peak memory during memory usage profiling (torch + non-torch): {peak / GIB:.2f} GiB, available KV cache "
           f"memory when calculating max tokens: {budget / GIB:.2f} GiB, fraction is set {setup.fraction}, kv size per "
           f"token is {slope} bytes/token + {intercept} bytes fixed cost. device total memory "
           f"{inputs.gpu_bytes / GIB:.2f} GiB, temporary kv cache memory during profiling 0.00 GiB"]
    if setup.max_tokens is not None:
        budget = min(budget, slope * setup.max_tokens + intercept)
    log.append(f"Estimated max memory in KV cache : {budget / GIB:.2f} GiB")
    tokens = max((budget - intercept) // slope, 0) if slope else 0  # CacheCost.tokens_for_budget
    if setup.max_tokens is not None:
        tokens = min(tokens, setup.max_tokens)
    fields["max_tokens"] = tokens // block * block
    error = None
    if budget < intercept + slope * block:
        error = (f"Impossible to fit in any sequence in kvCache: the fixed cost of {fixed_slots} state slots "
                 f"(max_batch_size {setup.batch} x pp {pp} + {DUMMY_SLOTS}) is {intercept / GIB:.2f} GiB of the "
                 f"{budget / GIB:.2f} GiB KV cache budget; "
                 + (f"max_batch_size {largest} fits" if largest else "no max_batch_size fits"))
        log.append(error)
    return EngineStage(ctx.stage, 0, error, log, "start-up", fields)


def _share_tokens(stages: list[EngineStage], setup: Setup, pp: int) -> None:
    """resource_manager.py: the ranks that start agree on the smallest KV pool (an allgather of blocks per window);
    each logs its allocation and runs what that pool holds at the context, at most max_batch_size x pp."""
    started = [st for st in stages if st.startup_error is None and st.fields["max_tokens"] is not None]
    shared = min((st.fields["max_tokens"] for st in started), default=None)
    batch = setup.batch * pp
    for st in started:
        st.fields["max_tokens"] = shared
        slope, intercept = st.fields["kv_token_bytes"], st.fields["fixed_cost_bytes"]
        st.log.append(f"[MemUsageChange] Allocated {(shared * slope + intercept) / GIB:.2f} GiB for max tokens in paged "
                      f"KV cache ({shared}).")
        fit = shared // (cdiv(setup.context, setup.block) * setup.block) if slope else batch
        st.max_running_requests, st.binding = (fit, "KV tokens") if fit < batch else (batch, "max_batch_size")


def _dtypes(spec, s: Settings) -> CacheDtypes:
    """model_loader.py validate_and_set_mamba_ssm_cache_dtype: KvCacheConfig.mamba_ssm_cache_dtype, else the config's
    mamba_ssm_cache_dtype (its mamba_ssm_dtype is not read), else the model dtype; conv in the model dtype; KDA float32
    (config_utils.py)."""
    model = dtype_names.canonical(spec.dtype)
    flag = s.take("mamba_ssm_cache_dtype", "auto")
    hint = spec.ssm_dtype_hints.get("mamba_ssm_cache_dtype", model)
    ssm = hint if flag == "auto" else state_dtype(flag, "mamba_ssm_cache_dtype")
    kv_flag = s.take("kv_cache_dtype", "auto")
    if kv_flag not in KV_DTYPES:
        raise LayoutError("kv_cache_dtype", f"one of {', '.join(KV_DTYPES)}, got {kv_flag!r}")
    if kv_flag == "auto" and checkpoint_kv_format(spec) == "fp8":
        # _torch/model_config.py (ModelConfig loading hf_quant_config.json / a quantization_config): ModelOpt
        # kv_cache_quant_algo FP8, or an 8-bit float kv_cache_scheme, sets QuantConfig.kv_cache_quant_algo FP8, and
        # the KV cache manager then allocates float8_e4m3fn pages. Read through the search tool, not at a pinned
        # commit: the exact file and line are not verified.
        kv_flag = "fp8"
        s.values["kv_cache_dtype"], s.sources["kv_cache_dtype"] = kv_flag, "default: the checkpoint's KV format"
    return CacheDtypes(model=model, kv=KV_DTYPES[kv_flag] or model, conv=model, ssm=ssm)


def _slot_bytes(ctx, dtypes: CacheDtypes) -> int:
    """One slot over the stage's recurrent layers (MambaKVCacheParams.get_states_bytes_per_layer)."""

    def dtype_of(kind, state):
        if state.component == "conv":
            return dtypes.conv
        return "float32" if kind == "kda" else dtypes.ssm

    return sum(state_bytes(ctx, k, dtype_of) * ctx.counts[k] for k in ctx.recurrent_kinds)


def _token_bytes(ctx, spec, dtypes: CacheDtypes, drafts: int) -> int:
    """KV bytes per token over the stage's attention layers (KVCacheManager.get_cache_size_per_token), the MTP
    drafter's attention layers included on the last stage when it drafts."""
    kinds = [k for k in ctx.kinds if k in ATTENTION_KINDS]
    per_layer = token_bytes(ctx, kinds[0], dtypes.kv) if kinds else 0
    drafter = mtp_attention_layers(spec) if drafts and ctx.stage == ctx.layout.pp - 1 else 0
    return sum(token_bytes(ctx, k, dtypes.kv) * ctx.counts[k] for k in kinds) + per_layer * drafter


def _largest_batch(budget: int, slot: int, seq_bytes: int, pp: int) -> int:
    """The largest max_batch_size whose fixed cost leaves room for one sequence of the context (0: none)."""
    if not slot:
        return 0
    return max(0, ((budget - seq_bytes) // slot - DUMMY_SLOTS) // pp)


def _best_batch(budget: int, slot: int, seq_bytes: int, pp: int) -> int:
    """The max_batch_size that runs the most sequences of the context: every slot's request with its KV fits."""
    if not slot and not seq_bytes:
        return 0
    return max(0, (budget - DUMMY_SLOTS * slot) // (pp * (slot + seq_bytes)))
