"""SGLang: state dtypes, the split of the static memory between the state pool and the token pool, the state
slots each running request holds, speculative buffers, `max_total_num_tokens` and `max_running_requests`.

Sources (sgl-project/sglang, late-2026 main): `python/sglang/srt/configs/mamba_utils.py` (shapes, dtypes),
`python/sglang/srt/mem_cache/kv_cache_configurator.py` (`_profile_available_bytes`, `_handle_max_mamba_cache`,
`_calculate_mamba_ratio`, `resolve_max_num_reqs`), `python/sglang/srt/model_executor/pool_configurator.py` (cell
size), `python/sglang/srt/mem_cache/memory_pool.py` (`MambaPool`: one dummy slot), `python/sglang/srt/arg_groups/`
(`memory_hook.py`: the mem_fraction_static default; `overrides.py`: the radix-cache strategy; field defaults).
"""

from __future__ import annotations

from mcache.core.engines.common import (
    ATTENTION_KINDS,
    GIB,
    EngineInputs,
    EngineRun,
    EngineStage,
    Settings,
    mtp_attention_layers,
    stage_contexts,
    state_bytes,
    state_dtype,
    token_bytes,
    window_caveats,
)
from mcache.core.errors import LayoutError
from mcache.core.kinds.base import CacheDtypes
from mcache.core.spec import dtypes as dtype_names

NAME = "sglang"
# The mcache options of `mcache size --engine sglang` and the SGLang setting each sets (SGLang's own flag is an
# alias of the option; an option SGLang lacks is refused with it).
FLAGS = {
    "--max-seq-len": "context_length", "--draft": "speculative_num_steps", "--kv-dtype": "kv_cache_dtype",
    "--ssm-dtype": "mamba_ssm_dtype", "--block-size": "page_size", "--weights": "weights_bytes",
    "--mem-fraction-static": "mem_fraction_static", "--mamba-full-memory-ratio": "mamba_full_memory_ratio",
    "--max-mamba-cache-size": "max_mamba_cache_size", "--max-running-requests": "max_running_requests",
    "--disable-radix-cache": "disable_radix_cache", "--mamba-radix-cache-strategy": "mamba_radix_cache_strategy",
    "--disable-overlap-schedule": "disable_overlap_schedule", "--chunked-prefill-size": "chunked_prefill_size",
    "--max-total-tokens": "max_total_tokens", "--free-memory-before-load": "pre_model_load_memory_bytes",
}
# mcache options SGLang lacks -> its own option for what they mean
INSTEAD = {"--max-batch": "--max-running-requests", "--utilization": "--mem-fraction-static", "--reserve": "--mem-fraction-static"}
SETTINGS = ("context_length", "mem_fraction_static", "mamba_full_memory_ratio", "max_mamba_cache_size",
            "max_running_requests", "disable_radix_cache", "mamba_radix_cache_strategy", "disable_overlap_schedule",
            "mamba_ssm_dtype", "kv_cache_dtype", "page_size", "speculative_num_steps", "chunked_prefill_size",
            "max_total_tokens", "pre_model_load_memory_bytes")
STRATEGIES = ("auto", "no_buffer", "extra_buffer", "extra_buffer_lazy")
KV_DTYPES = {"auto": None, "bfloat16": "bfloat16", "float16": "float16", "fp8_e4m3": "float8_e4m3fn",
             "fp8_e5m2": "float8_e5m2"}  # server_args kv_cache_dtype choices with a plain per-token cell
MB = 1 << 20
CONTEXT_RESERVE = GIB // 2  # assumed: CUDA context and NCCL buffers, taken before the weights load
# arg_groups/overrides.py: architectures whose hybrid state works with the radix cache (_MAMBA_RADIX_CACHE_ARCHS),
# and those of them with the extra-buffer strategy (_MAMBA_EXTRA_BUFFER_ARCHS); the others run without radix cache.
EXTRA_BUFFER_ARCHS = ("KimiLinearForCausalLM", "KimiK3ForCausalLM", "Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration",
                      "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
                      "BailingMoeV2_5ForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
                      "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")
RADIX_ARCHS = EXTRA_BUFFER_ARCHS + ("Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "JetNemotronForCausalLM")


def run(inputs: EngineInputs) -> EngineRun:
    """SGLang's sizing of every PP stage."""
    spec, layout = inputs.spec, inputs.layout
    s = Settings(inputs.given, SETTINGS, "SGLang")
    arch = spec.architecture or ""
    context_len = s.model_length("context_length", spec)
    context = inputs.context or context_len
    dtypes = _dtypes(spec, s)
    steps = s.take("speculative_num_steps", 0)
    drafts = steps + 1 if steps else 0  # EAGLE with topk 1: num_draft_tokens = num_steps + 1 (server_args.py)
    page = s.take("page_size", 1)
    ratio_name, ratio = _ratio(s, arch)
    user_requests = s.take("max_running_requests", 48 if drafts else None)  # reset to 48 for speculative decoding
    r = s.take("mamba_full_memory_ratio", 0.9)
    fixed_slots = s.take("max_mamba_cache_size", None)
    total_tokens_cap = s.take("max_total_tokens", None)
    gpu_mb = inputs.gpu_bytes // MB if inputs.gpu_bytes else None
    chunked = s.take("chunked_prefill_size", _chunked_prefill(gpu_mb))
    mfs = s.take("mem_fraction_static", _mem_fraction(gpu_mb, chunked, layout) if gpu_mb else None)
    pre = s.take("pre_model_load_memory_bytes", inputs.gpu_bytes - CONTEXT_RESERVE if inputs.gpu_bytes else None,
                 "assumed: the free memory before weights load, the GPU's less 0.5 GiB of CUDA context")
    contexts = stage_contexts(spec, layout, dtypes)
    weights = s.weights(contexts)
    # kv_cache_configurator.py: every stage sizes its slots for the stage with the most recurrent layers
    # (pp_layer_scale), and the stages agree on the smallest token pool (_apply_token_constraints, an all-reduce MIN)
    per_slot = max(_slot_bytes(ctx, dtypes)[0] for ctx in contexts)
    pools = []
    for ctx, weight in zip(contexts, weights, strict=True):
        if pre is None or mfs is None:
            pools.append((None, 0, None))
            continue
        rest = pre * mfs - weight  # kv_cache_configurator.py: available after weights - pre * (1 - mfs)
        error, slots, rest = _state_pool(rest, per_slot, fixed_slots, user_requests, ratio, drafts, r, s)
        cell = _cell(ctx, spec, dtypes, drafts)
        tokens = None
        if error is None:
            tokens = int(rest) // cell // page * page if cell else context_len
            if total_tokens_cap is not None:
                tokens = min(tokens, total_tokens_cap)
        pools.append((error, slots, tokens))
    known = [tokens for _, _, tokens in pools if tokens is not None]
    shared_tokens = min(known) if known else None
    stages = [_stage(ctx, spec, dtypes, pool, shared_tokens, per_slot, drafts, page, ratio, ratio_name, mfs, chunked,
                     context_len, context, user_requests) for ctx, pool in zip(contexts, pools, strict=True)]
    caveats = window_caveats(spec, "SGLang", "SWA pool (swa_memory_pool.py, swa_full_tokens_ratio)")
    return EngineRun(NAME, context_len, context, s.values, s.sources, dtypes, stages, caveats)


def _stage(ctx, spec, dtypes, pool, tokens, per_slot, drafts, page, ratio, ratio_name, mfs, chunked, context_len,
           context, user_requests) -> EngineStage:
    """One stage's figures, log lines and verdict from its state pool and the stages' common token pool."""
    error, slots, own_tokens = pool
    cell = _cell(ctx, spec, dtypes, drafts)
    fields = {"mamba_cache_per_req_bytes": per_slot, "cell_size_bytes": cell, "state_slots_per_request": ratio,
              "mamba_radix_cache_strategy": ratio_name, "mem_fraction_static": mfs,
              "max_total_num_tokens": None, "max_mamba_cache_size": None}
    if mfs is None or (error is None and own_tokens is None):
        return EngineStage(ctx.stage, None, None, [], None, fields)
    log: list[str] = []
    _, conv, ssm = _slot_bytes(ctx, dtypes)
    if error is None and per_slot and ctx.recurrent_kinds:
        log.append(f"Mamba Cache is allocated. max_mamba_cache_size: {slots}, conv_state size: "
                   f"{ctx_layers(ctx) * (slots + 1) * conv / GIB:.2f}GB, ssm_state size: "
                   f"{ctx_layers(ctx) * (slots + 1) * ssm / GIB:.2f}GB ")
    if error is None and tokens <= 0:
        error = f"Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static={mfs}"
    requests, binding = 0, "start-up"
    if error is None:
        if cell:
            log.append(_kv_log(ctx, dtypes, tokens, page))
        requests, binding, warning = _max_requests(tokens, context_len, user_requests, slots, ratio, per_slot)
        if warning:
            log.append(warning)
        if requests <= 0:
            error = ("Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                     f"max_mamba_cache_size={slots}, mamba_ratio={ratio}, resulting max_num_reqs={requests}. Try: "
                     "(1) reduce --max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with "
                     "more memory.")
    if error is not None:
        log.append(error)
        return EngineStage(ctx.stage, 0, error, log, "start-up", fields)
    log.append(f"max_total_num_tokens={tokens}, chunked_prefill_size={chunked}, max_prefill_tokens=16384, "
               f"max_running_requests={requests}, context_len={context_len}")
    fields.update(max_total_num_tokens=tokens, max_mamba_cache_size=slots if per_slot else None,
                  max_running_requests_logged=requests)
    if tokens // context < requests:  # what runs at once at the context: the token pool admits this many
        requests, binding = tokens // context, "KV tokens"
    return EngineStage(ctx.stage, requests, None, log, binding, fields)


def ctx_layers(ctx) -> int:
    """Recurrent layers the stage's state pool stacks."""
    return sum(ctx.counts[k] for k in ctx.recurrent_kinds)


def _dtypes(spec, s: Settings) -> CacheDtypes:
    """configs/mamba_utils.py mamba2_state_dtype: the conv state is bfloat16 whatever the model dtype; the recurrent
    state is --mamba-ssm-dtype, else the config's mamba_ssm_dtype (not vLLM's mamba_ssm_cache_dtype), else float32,
    for KDA too."""
    model = dtype_names.canonical(spec.dtype)
    hint = spec.ssm_dtype_hints.get("mamba_ssm_dtype", "float32")
    ssm = s.take("mamba_ssm_dtype", None)
    ssm = state_dtype(ssm, "mamba_ssm_dtype") if ssm is not None else hint
    s.values["mamba_ssm_dtype"] = ssm
    kv_flag = s.take("kv_cache_dtype", "auto")
    if kv_flag not in KV_DTYPES:
        raise LayoutError("kv_cache_dtype", f"one of {', '.join(KV_DTYPES)}, got {kv_flag!r}")
    return CacheDtypes(model=model, kv=KV_DTYPES[kv_flag] or model, conv="bfloat16", ssm=ssm)


def _slot_bytes(ctx, dtypes: CacheDtypes) -> tuple[int, int, int]:
    """(bytes of one slot over the stage's recurrent layers, conv bytes of one layer, state bytes of one layer):
    BaseLinearStateParams.mamba_cache_per_req, the conv window without draft rows."""

    def dtype_of(kind, state):
        return dtypes.conv if state.component == "conv" else dtypes.ssm

    conv = sum(state_bytes(ctx, k, dtype_of, component="conv") * ctx.counts[k] for k in ctx.recurrent_kinds)
    ssm = sum(state_bytes(ctx, k, dtype_of, component="ssm") * ctx.counts[k] for k in ctx.recurrent_kinds)
    layers = ctx_layers(ctx) or 1
    return conv + ssm, conv // layers, ssm // layers


def _cell(ctx, spec, dtypes: CacheDtypes, drafts: int) -> int:
    """KV bytes per token over the stage's full-attention layers (pool_configurator.py); a drafting MTP head's layers
    scale it by (1 + draft layers / layers)."""
    cell = sum(token_bytes(ctx, kind, dtypes.kv) * ctx.counts[kind] for kind in ctx.kinds if kind in ATTENTION_KINDS)
    layers = sum(ctx.counts[kind] for kind in ctx.kinds if kind in ATTENTION_KINDS)
    drafter = mtp_attention_layers(spec) if drafts and ctx.stage == ctx.layout.pp - 1 else 0
    return cell + (cell * drafter // layers if layers else 0)


def _ratio(s: Settings, arch: str) -> tuple[str, int]:
    """State slots per running request (kv_cache_configurator.py _calculate_mamba_ratio): 1 without the radix
    cache; with it 3 (no_buffer), 4 (extra_buffer without overlap, extra_buffer_lazy) or 5 (extra_buffer with the
    overlap scheduler). `auto` picks extra_buffer where the architecture has it, else no_buffer (overrides.py)."""
    no_radix = s.take("disable_radix_cache", arch not in RADIX_ARCHS)
    strategy = s.take("mamba_radix_cache_strategy", "auto")
    if strategy not in STRATEGIES:
        raise LayoutError("mamba_radix_cache_strategy", f"one of {', '.join(STRATEGIES)}, got {strategy!r}")
    no_overlap = s.take("disable_overlap_schedule", False)
    if no_radix:
        return "none (no radix cache)", 1
    if strategy == "auto":
        strategy = "extra_buffer" if arch in EXTRA_BUFFER_ARCHS else "no_buffer"
        s.values["mamba_radix_cache_strategy"] = strategy
    if strategy == "no_buffer":
        s.values["disable_overlap_schedule"] = True  # no_buffer turns the overlap scheduler off
        return strategy, 3
    if strategy == "extra_buffer_lazy":
        return strategy, 4
    return strategy, 4 if no_overlap else 5


def _state_pool(rest: float, per: int, fixed: int | None, requests: int | None, ratio: int, drafts: int, r: float,
                s: Settings) -> tuple[str | None, int, float]:
    """(error, slots, bytes left for the token pool): kv_cache_configurator.py _handle_max_mamba_cache. The slots are
    --max-mamba-cache-size, or the running requests without radix cache, or the share r / (1 + r) of the memory;
    drafts reserve their intermediate states per running request; the pool has one dummy slot more."""
    if not per:
        return None, 0, rest
    if fixed is not None:
        slots = fixed
        if drafts:
            rest -= per * (min(requests, slots // ratio) + 1) * drafts
    elif s.values["disable_radix_cache"] and s.given.get("max_running_requests") is not None:
        slots = requests
        if drafts:
            rest -= per * (slots + 1) * drafts
    else:
        budget = rest * r / (1 + r)
        if drafts:
            slots = int((budget - per * (1 + drafts)) // (per * (1 + drafts / ratio)))
            rest -= per * (min(requests, slots // ratio) + 1) * drafts
        else:
            slots = int((budget - per) // per)
    if slots <= 0:
        return (f"Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size="
                f"{slots} (total_rest_memory={rest / GIB:.2f} GB, mamba_cache_per_req={per / MB:.2f} MB). Try: (1) reduce "
                "--max-running-requests, (2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, "
                "or (4) use GPUs with more memory."), slots, rest
    return None, slots, rest - (slots + 1) * per


def _max_requests(tokens: int, context_len: int, user: int | None, slots: int, ratio: int,
                  per_slot: int) -> tuple[int, str, str | None]:
    """kv_cache_configurator.py resolve_max_num_reqs: the user's value or clamp(tokens / context * 512, 2048, 4096),
    at most half the tokens, and at most the state slots / ratio; with what binds and the warning SGLang logs."""
    estimated = max(min(int(tokens / context_len * 512), 4096), 2048)
    requests, binding = (min(user, tokens // 2), "max_running_requests") if user else (min(estimated, tokens // 2),
                                                                                       "default max_running_requests")
    if requests == tokens // 2 and requests < (user or estimated):
        binding = "KV tokens"
    warning = None
    if per_slot and slots // ratio < requests:
        warning = (f"max_running_requests is capped to {slots // ratio} by the mamba state cache (max_mamba_cache_size="
                   f"{slots}, {ratio} state slots per request). To raise it: increase --mamba-full-memory-ratio or "
                   "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.")
        requests, binding = slots // ratio, "state slots"
    return requests, binding, warning


def _kv_log(ctx, dtypes: CacheDtypes, tokens: int, page: int) -> str:
    """memory_pool.py MHATokenToKVPool: K and V buffers of `tokens + page` rows per full-attention layer."""
    layers = sum(ctx.counts[k] for k in ctx.kinds if k in ATTENTION_KINDS)
    half = sum(token_bytes(ctx, k, dtypes.kv) * ctx.counts[k] for k in ctx.kinds if k in ATTENTION_KINDS) // 2
    size = half * (tokens + page) / GIB if layers else 0
    torch_name = {"bfloat16": "bfloat16", "float16": "float16"}.get(dtypes.kv, dtypes.kv)
    return f"KV Cache is allocated. dtype: torch.{torch_name}, #tokens: {tokens}, K size: {size:.2f} GB, V size: {size:.2f} GB"


def _chunked_prefill(gpu_mb: int | None) -> int:
    """arg_groups/memory_hook.py: the chunked prefill size by GPU memory."""
    if gpu_mb is None:
        return 4096
    for limit, size in ((20480, 2048), (61440, 4096), (163840, 8192)):
        if gpu_mb < limit:
            return size
    return 16384


def _mem_fraction(gpu_mb: int, chunked: int, layout) -> float:
    """arg_groups/memory_hook.py handle_gpu_memory_settings: what the activations, TP buffers and decode CUDA graphs
    reserve (at least 10 GiB on GPUs over 60 GB), as a fraction of the GPU (prefill graphs not counted)."""
    graphs = 8 if gpu_mb < 20480 else 48 if gpu_mb < 35840 else 32 if gpu_mb < 61440 else 256
    if gpu_mb >= 20480 and layout.tp >= 4:
        graphs = 512 if gpu_mb >= 61440 else 160
    if gpu_mb >= 163840:
        graphs = 512
    reserved = 512 + max(chunked, 2048) * 1.5 + layout.tp * layout.pp / 8 * 1024 + graphs * 2
    if gpu_mb > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mb - reserved) / gpu_mb, 3)
