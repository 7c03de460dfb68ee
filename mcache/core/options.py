"""The options of one sizing, as the core takes them: one field per option of `mcache size` (its name without the
dashes), None when not given. The CLI builds a `SizeOptions` from its parameters; the core never sees a flag."""

from __future__ import annotations

from msgspec import Struct

from mcache.core.errors import LayoutError


class SizeOptions(Struct, frozen=True):
    """What sizes the caches, besides the layout and the GPU (a `Deployment` holds those, and the context and
    concurrency the capacity figures are asked at). Sizes are in bytes. The neutral model's options
    come first (`engines.options.NEUTRAL` lists them), then each engine's own; options are checked in this order, so
    the first of two bad ones is the one reported."""

    max_seq_len: int | None = None
    utilization: float | None = None
    draft: int | None = None
    kv_dtype: str | None = None
    ssm_dtype: str | None = None
    conv_dtype: str | None = None
    block_size: int | None = None
    max_batch: int | None = None
    kv_tokens: int | None = None
    reserved_slots: int | None = None
    snapshot_slots: int | None = None
    spec_scheme: str | None = None
    # the model's: how its weights are stored (`sizing.weights.weighed_as`), for every engine and the neutral model
    weight_format: str | None = None
    # vLLM
    enable_prefix_caching: bool | None = None
    mamba_cache_mode: str | None = None
    kernel_block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool | None = None
    gdn_prefill_backend: str | None = None
    async_scheduling: bool | None = None
    attention_backend: str | None = None
    draft_attention_backend: str | None = None
    # SGLang
    mem_fraction_static: float | None = None
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size: int | None = None
    max_running_requests: int | None = None
    disable_radix_cache: bool | None = None
    mamba_radix_cache_strategy: str | None = None
    disable_overlap_schedule: bool | None = None
    chunked_prefill_size: int | None = None
    max_total_tokens: int | None = None
    draft_kv_dtype: str | None = None
    qsa_indexer_dtype: str | None = None
    # TensorRT-LLM
    free_gpu_memory_fraction: float | None = None
    max_tokens: int | None = None
    kv_cache_manager: str | None = None
    # sizes (the neutral model's reserve and weights, vLLM's KV budget, SGLang's free memory before load)
    reserve: int | None = None
    weights: int | None = None
    kv_cache_memory: int | None = None
    free_memory_before_load: int | None = None


class OptionError(LayoutError):
    """An option the engine (or the neutral model) does not take: `field` is its `SizeOptions` field, `instead` the
    field of the option that does what it means (None: none)."""

    def __init__(self, field: str, expected: str, instead: str | None = None):
        super().__init__(field, expected)
        self.instead = instead
