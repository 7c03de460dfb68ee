"""Which `mcache size` option sets which engine setting: mcache's options that mean the same as an engine's (and
accept its name), and the options only one engine has. An option an engine does not have is refused with it."""

from __future__ import annotations

from typing import Any

from mcache.core.engines import TITLES
from mcache.core.errors import McacheError

ALL = ("vllm", "sglang", "trtllm")
# mcache option -> the setting it is in each engine that has it (the engines' own option names are its aliases).
SHARED = {
    "--max-seq-len": {"vllm": "max_model_len", "sglang": "context_length", "trtllm": "max_seq_len"},
    "--utilization": {"vllm": "gpu_memory_utilization"},
    "--draft": {"vllm": "num_speculative_tokens", "sglang": "speculative_num_steps", "trtllm": "max_draft_len"},
    "--kv-dtype": {"vllm": "kv_cache_dtype", "sglang": "kv_cache_dtype", "trtllm": "kv_cache_dtype"},
    "--ssm-dtype": {"vllm": "mamba_ssm_cache_dtype", "sglang": "mamba_ssm_dtype", "trtllm": "mamba_ssm_cache_dtype"},
    "--conv-dtype": {"vllm": "mamba_cache_dtype"},
    "--block-size": {"vllm": "block_size", "sglang": "page_size", "trtllm": "tokens_per_block"},
    "--max-batch": {"trtllm": "max_batch_size"},
    "--reserve": {"vllm": "non_kv_memory_bytes", "trtllm": "non_kv_memory_bytes"},
    "--weights": dict.fromkeys(ALL, "weights_bytes"),
}
# Options of one engine only.
ENGINE_ONLY = {
    "--kv-cache-memory": ("vllm", "kv_cache_memory_bytes"),
    "--enable-prefix-caching": ("vllm", "enable_prefix_caching"),
    "--mamba-cache-mode": ("vllm", "mamba_cache_mode"),
    "--kernel-block-size": ("vllm", "kernel_block_size"),
    "--max-num-seqs": ("vllm", "max_num_seqs"),
    "--max-num-batched-tokens": ("vllm", "max_num_batched_tokens"),
    "--enforce-eager": ("vllm", "enforce_eager"),
    "--gdn-prefill-backend": ("vllm", "gdn_prefill_backend"),
    "--mem-fraction-static": ("sglang", "mem_fraction_static"),
    "--mamba-full-memory-ratio": ("sglang", "mamba_full_memory_ratio"),
    "--max-mamba-cache-size": ("sglang", "max_mamba_cache_size"),
    "--max-running-requests": ("sglang", "max_running_requests"),
    "--disable-radix-cache": ("sglang", "disable_radix_cache"),
    "--mamba-radix-cache-strategy": ("sglang", "mamba_radix_cache_strategy"),
    "--disable-overlap-schedule": ("sglang", "disable_overlap_schedule"),
    "--chunked-prefill-size": ("sglang", "chunked_prefill_size"),
    "--max-total-tokens": ("sglang", "max_total_tokens"),
    "--free-memory-before-load": ("sglang", "pre_model_load_memory_bytes"),
    "--free-gpu-memory-fraction": ("trtllm", "free_gpu_memory_fraction"),
    "--max-tokens": ("trtllm", "max_tokens"),
}
# mcache options that only size the neutral model's own pool (refused with an engine, which has its own rule).
NEUTRAL_ONLY = ("--kv-tokens", "--reserved-slots", "--snapshot-slots", "--spec-scheme")


def engine_settings(engine: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """The settings `engine` gets from the options the user gave (`given`: option -> value, None when not given);
    a one-line error for an option the engine (or the neutral model, without `--engine`) does not have."""
    given = {option: value for option, value in given.items() if value is not None}
    if engine is None:
        for option in given:
            if option in ENGINE_ONLY:
                owner = ENGINE_ONLY[option][0]
                raise McacheError(f"{option}: an option of {TITLES[owner]} (add --engine {owner})")
        return {}
    settings = {}
    for option, value in given.items():
        if option in SHARED:
            name = SHARED[option].get(engine)
        elif option in ENGINE_ONLY:
            owner, name = ENGINE_ONLY[option]
            if owner != engine:
                raise McacheError(f"{option}: an option of {TITLES[owner]}, not of {TITLES[engine]}")
        elif option in NEUTRAL_ONLY:
            raise McacheError(f"{option}: sizes mcache's neutral pool; {TITLES[engine]} sizes its own (drop --engine)")
        else:
            continue
        if name is None:
            raise McacheError(f"{option}: {TITLES[engine]} has no such setting"
                              f"{_instead(engine, option)}")
        settings[name] = value
    return settings


# (engine, mcache option) -> the engine's own option for what the mcache option means there.
INSTEAD = {("vllm", "--max-batch"): "--max-num-seqs", ("sglang", "--max-batch"): "--max-running-requests",
           ("sglang", "--utilization"): "--mem-fraction-static", ("trtllm", "--utilization"): "--free-gpu-memory-fraction",
           ("sglang", "--reserve"): "--mem-fraction-static"}
# The engines' flags for the parallel layout: vllm/engine/arg_utils.py (--tensor-parallel-size,
# --pipeline-parallel-size), sglang/srt/server_args.py (--tp-size, --pp-size).
PARALLEL = {"--tensor-parallel-size": "--tp", "--tp-size": "--tp", "--pipeline-parallel-size": "--pp", "--pp-size": "--pp"}


def _instead(engine: str, option: str) -> str:
    """Where the engine's own setting for what `option` means lives, if it has one."""
    other = INSTEAD.get((engine, option))
    return f" (use {other})" if other else ""


def mcache_option_for(flag: str) -> str | None:
    """The mcache option that means what an engine's `flag` (e.g. `--max-num-seqs`, `--max-model-len`) means."""
    setting = flag.removeprefix("--").replace("-", "_")
    shared = next((option for option, names in SHARED.items() if setting in names.values()), None)
    instead = next((option for (_, option), other in INSTEAD.items() if other == flag), None)
    return PARALLEL.get(flag) or shared or instead


def option_for(engine: str, setting: str) -> str:
    """The option a user types for `engine`'s `setting` (for error messages)."""
    for option, names in SHARED.items():
        if names.get(engine) == setting:
            return option
    return next((o for o, (e, name) in ENGINE_ONLY.items() if e == engine and name == setting), f"--{setting}")
