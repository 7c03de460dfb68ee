"""vLLM (V1 engine, hybrid KV-cache manager): state dtypes, pages, block alignment, KV-cache groups, blocks,
concurrency and the start-up checks, as vLLM computes them on an NVIDIA GPU at each release in `VERSIONS` (0.10.2 to
0.34.0; the rules that changed between them are keyed in `SINCE` and tested with `_since`); and the `vllm serve`
line that starts a deployment `mcache plan` found.

Sources (vllm-project/vllm at tag v0.34.0): `vllm/model_executor/layers/mamba/mamba_utils.py` (state shapes and
dtypes), `vllm/model_executor/models/config.py` (per-model hooks, mamba cache mode), `vllm/platforms/interface.py`
(`_align_hybrid_block_size`), `vllm/v1/kv_cache_interface.py` (page sizes, blocks per request),
`vllm/v1/core/kv_cache_planning.py` (groups, block counts, the memory check), `vllm/v1/core/kv_cache_utils.py`
(concurrency and its log line), `vllm/config/compilation.py` (the max_num_seqs check), `vllm/v1/worker/gpu_worker.py`
(available memory), `vllm/config/cache.py` and `vllm/engine/arg_utils.py` (defaults, flag names); an older release's
rule cites the file at that release (scripts/oracles/vllm_versions.md lists the diffs).
"""

from __future__ import annotations

import shlex
from math import ceil, gcd, lcm, prod

from msgspec import Struct
from msgspec.structs import replace

from mcache.core.engines.common import (
    ATTENTION_KINDS,
    GIB,
    EngineInputs,
    EngineRun,
    EngineStage,
    ServeArgs,
    Settings,
    asked_context,
    full_width_attention_dp,
    kv_heads_per_rank,
    mamba2_groups_unsplit,
    mamba2_quantized_tp_refused,
    mtp_attention_layers,
    nemotron_h_layers_error,
    pp_layout,
    recurrent_kinds,
    shapes_bytes,
    stage_contexts,
    state_bytes,
    state_dtype,
    unknown_model_type,
    unnamed_architecture_caveats,
    unrecognized_config,
    weights_overflow,
    whole_model,
    window_of,
    within_gpu,
)
from mcache.core.engines.versions import at_least
from mcache.core.errors import LayoutError
from mcache.core.files import json_text
from mcache.core.kinds import RECURRENT_KINDS
from mcache.core.kinds.base import CacheDtypes
from mcache.core.kinds.dsa_indexer import key_row_bytes
from mcache.core.numbers import cdiv
from mcache.core.sizing import drafter as drafter_sizing
from mcache.core.sizing.gpu_catalogue import AMD, NVIDIA
from mcache.core.sizing.gpus import capability, cuda_major_in, sm_major, vendor
from mcache.core.sizing.layout import ParallelLayout
from mcache.core.sizing.rank import RankContext, checkpoint_kv_format
from mcache.core.spec import dtypes as dtype_names
from mcache.core.spec.model import layer_kinds

NAME = "vllm"
# The releases this module models, oldest first (vllm-project/vllm tags): 0.10.2 and every later release where a rule
# below changed (found by diffing the wheels or by a golden table at a release between two modelled ones;
# scripts/oracles/vllm_versions.md lists them with their diffs).
VERSIONS = ("0.10.2", "0.11.0", "0.11.1", "0.12.0", "0.13.0", "0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0",
            "0.20.0", "0.20.1", "0.22.0", "0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
            "0.32.0", "0.33.0", "0.34.0")
# The first release of each changed rule (a rule holds from its version on; `_since` tests the run's version).
SINCE = {
    # config/speculative.py SpeculativeConfig: the `dflash` method and its drafter (model_executor/models/
    # qwen3_dflash.py DFlashQwen3ForCausalLM, registered as DFlashDraftModel) from 0.20.0; DFlash2DraftModel
    # (qwen3_dflash2.py) from 0.28.0. Every drafter layer is full attention until 0.25.0, where
    # _resolve_layer_attention windows them by `layer_types` / `dflash_config.use_swa`; a drafter mixing windowed and
    # full layers is refused at 0.25 (NotImplementedError, vllm#40898) and takes the V2 model runner from 0.26.0
    # (config/vllm.py _dflash_needs_multi_kv_group)
    "dflash": "0.20.0",
    "dflash2": "0.28.0",
    "dflash_windows": "0.25.0",
    "dflash_mixed_windows": "0.26.0",
    # models/qwen3_dflash.py passes its layers the cache config (so the KV cache dtype) from 0.22.0; before, their KV
    # is in the model dtype
    "dflash_cache_dtype": "0.22.0",
    # config/speculative.py max_num_new_slots_for_drafting: a DFlash request's extra scheduler slots, k - 1 (parallel
    # drafting) until 0.28.0, k from it, none from 0.33.0 (config/vllm.py _set_max_num_scheduled_tokens takes them),
    # which from it lowers max_num_active_seqs to the requests whose k + 1 draft queries fit a step
    "dflash_k_slots": "0.28.0",
    "dflash_no_slots": "0.33.0",
    # v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes: a windowed layer keeps one step's
    # max_num_batched_tokens beside its window, from 0.26.0 config/vllm.py max_in_flight_tokens (a step's for each
    # batch in flight, max_concurrent_batches); 0.34.0 runs only the V2 model runner (v1/worker/gpu/model_runner.py)
    "in_flight_tokens": "0.26.0",
    "v2_runner_only": "0.34.0",
    # model_executor/models/config.py MambaModelConfig: 0.10.2 - 0.11.0 turn prefix caching off for every Mamba model
    # ("... disabling prefix caching since it is not yet supported."); 0.11.1 - 0.14 keep it for the architectures
    # with SupportsMambaPrefixCaching (one state per block), turning it off for the others
    "mamba_prefix_caching": "0.11.1",
    # layers/mamba/mamba_mixer2.py MambaMixer2.__init__: the groups assertion's words name num_groups from 0.11.1
    # (num_heads at 0.10.2; read in every wheel 0.10.2 - 0.13.0 and at 0.17.0, 0.20.1, 0.24.0, 0.33.0)
    "mamba2_groups_words": "0.11.1",
    # engine/arg_utils.py: 0.11.1 turns prefix caching on by default for every model but hybrids (`not is_hybrid`),
    # attention-free Mamba models included, whose state block stays the max model length (config.py); from 0.12.0
    # by `is_prefix_caching_supported` (False for hybrid and attention-free models until 0.26)
    "attention_free_prefix_off": "0.12.0",
    # layers/mamba/mamba_mixer2.py MambaMixer2.__init__ with a quant config (every Mamba2 model class passes the
    # checkpoint's): 0.10.2 asserts `tp_size == 1 or quant_config is None` ("Tensor parallel currently not supported
    # for quantized models."), 0.11.1 - 0.15.x `n_groups % tp_size == 0 or tp_size == 1 or quant_config is None`
    # ("... supported for quantized models only if tensor parallel world size divides num groups."), 0.16.0 neither
    # (read in the 0.10.2, 0.11.1, 0.12.0, 0.14.0, 0.15.0, 0.16.0, 0.17.0 and 0.34.0 wheels): engines/common.py
    # mamba2_quantized_tp_refused (the extra tables' Bamba-9B-fp8, one group)
    "mamba2_quant_tp_groups": "0.11.1",
    "mamba2_quant_tp_free": "0.16.0",
    # v1/core/kv_cache_utils.py, the start-up check that one request at the max model length fits: before 0.14
    # check_enough_kv_cache_memory sums every layer's spec (max_memory_usage_bytes) on each worker; 0.14.0 - 0.18.x
    # _max_memory_usage_bytes_from_groups counts group size x page x the blocks of the first KV-cache group
    # (kv_cache_groups[0]) alone; from 0.19.0 the blocks of every group, padding layers included (0.33:
    # v1/core/kv_cache_planning.py). Its estimate_max_model_len searches the same sum.
    "one_request_first_group": "0.14.0",
    "one_request_every_group": "0.19.0",
    # v1/worker/gpu_model_runner.py get_kv_cache_spec stamps each attention layer's spec with its backend's
    # indexes_kv_by_block_stride (0.26.0 - 0.28.0; v1/kv_cache_interface.py AttentionSpec's field, which 0.29.0
    # drops), and FullAttentionSpec's equality keeps layers of the two kinds apart; the MTP drafter never inherits
    # --attention-backend (v1/spec_decode/llm_base_proposer.py: "we always independently autoselect"), so a drafter whose
    # own backend reads KV otherwise than the forced one keeps its attention layers in a spec of their own
    "block_stride_specs": "0.26.0",
    "no_block_stride_specs": "0.29.0",
    # v1/core/kv_cache_utils.py check_enough_kv_cache_memory, the words of its refusals: from 0.13.0 they end "See
    # https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."; from 0.14.0
    # (_check_enough_kv_cache_memory) the GiB are format_gib's round(x, 2) where 0.10.2 - 0.13 print two decimals
    # (:.2f), and the estimate sentence carries its own trailing space (before, one more space followed it: two
    # spaces without an estimate); from 0.22.0 "model's" (before, "models's") and the notes that
    # gpu_memory_utilization also controls CPU memory on the CPU backend
    "memory_docs_link": "0.13.0",
    "memory_format_gib": "0.14.0",
    "memory_cpu_note": "0.22.0",
    # v1/core/kv_cache_utils.py get_kv_cache_configs, with pipeline parallelism: 0.11.0 merges the workers' layer specs
    # and groups the whole model's layers (get_kv_cache_groups; the i-th group of a spec takes its layers
    # i, i + groups, ...), each worker keeps every group with only its own layers and sizes its blocks by the
    # largest such share; 0.10.2 (engine/core.py _initialize_kv_caches) grouped each worker's own layers
    # (get_kv_cache_config per worker, then unify_kv_cache_configs)
    "whole_model_groups": "0.11.0",
    # v1/core/kv_cache_utils.py get_kv_cache_config_from_groups: from 0.11.0 the "GPU KV cache size" line counts
    # num_blocks // groups x the smallest group block for every model; 0.10.2's _get_kv_cache_config_uniform_type
    # counted a model of one spec type (no attention) as num_blocks x cache_config.block_size
    "uniform_group_tokens": "0.11.0",
    # ... and logs it with each worker's own num_blocks, before get_kv_cache_configs gives every worker the smallest
    # count (0.10.2: get_kv_cache_config per worker); from 0.11.1 after it (_report_kv_cache_config)
    "agreed_blocks_logged": "0.11.1",
    # v1/core/kv_cache_utils.py, with PP, a worker holding no KV-cache layer (its layer specs empty): 0.11.1 keeps
    # every group with none of its layers and get_kv_cache_config_from_groups reads the page size of its specs
    # (get_uniform_page_size: `assert len(page_sizes) == 1` on none); from 0.12.0 it reads the groups' specs, then
    # `assert group_size > 0, "group_size must be greater than 0"`; from 0.29.0 the block pool's bytes per block
    # (_get_kv_cache_bytes_per_block: `assert bytes_per_block > 0`), which get_kv_cache_configs first takes to hold
    # the null block back, before any worker's one-request check; from 0.32.0 those bytes follow the KV-cache layout
    # (0 for FlashAttention's LBNHC, no assert) and the worker's config refuses the layout for its empty groups
    # (validate_kv_cache_layout, after the one-request checks); 0.33.0 (v1/core/kv_cache_planning.py) probes that
    # config to hold the null block back, so the layout refusal comes before them (0.10.2: the worker's own config,
    # one null block)
    "empty_stage_group_size": "0.12.0",
    "empty_stage_pool_bytes": "0.29.0",
    "empty_stage_layout": "0.32.0",
    "empty_stage_probe": "0.33.0",
    # platforms/interface.py update_block_size_for_backend: from 0.20.0 each worker aligns the block and pads the
    # state page itself (_align_hybrid_block_size, after load_model; before, HybridAttentionMambaModelConfig did it
    # once at config time), and only when its own layers hold an attention backend (_find_non_ssm_backend): with PP a
    # stage with recurrent layers and no attention keeps the unpadded page and the unaligned cache block as its
    # state block. v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size cannot scale that page to the padded one
    # (NotImplementedError, in other words from 0.24.0) until 0.26.0, which pads a smaller Mamba page to the largest
    # (`replace(layer_spec, page_size_padded=max_page_size)`); the stage's state specs then differ from the others'
    # by their block in 'all' and 'align' modes (the cache block against the aligned one), so they group apart
    "worker_padding": "0.20.0",
    "unify_words_layer": "0.24.0",
    "unify_pads_mamba": "0.26.0",
    # v1/core/kv_cache_utils.py get_kv_cache_configs: 0.14.0 - 0.16 run the one-request check once, on the whole
    # model's groups (their group size) against the smallest worker's memory; from 0.17.0 on each worker's share
    # of the groups (_project_kv_cache_groups_to_worker: its largest share as the group size) and its own memory
    "one_request_per_worker": "0.17.0",
    # v1/worker/gpu_model_runner.py (0.10 - 0.11.0), then layers/mamba/abstract.py get_kv_cache_spec (to 0.16):
    # NotImplementedError for Mamba layers with speculative decoding, Qwen3-Next apart
    "mamba_drafts": "0.17.0",
    # layers/mamba/mamba_utils.py gated_delta_net_state_dtype: the GDN recurrent state follows
    # --mamba-ssm-cache-dtype; before, it took the conv dtype
    "gdn_ssm_dtype": "0.17.0",
    # model_executor/models/config.py NemotronHForCausalLMConfig: the SSM state dtype from the config's
    # mamba_ssm_cache_dtype, else float16 (0.13 - 0.19; float32 since 0.20, update_mamba_ssm_cache_dtype); before
    # 0.13 no hook, so the model dtype
    "nemotron_ssm_hook": "0.13.0",
    # model_executor/models/config.py NemotronHNanoVLV2Config (MODELS_CONFIG_MAP's NemotronH_Nano_VL_V2): from 0.20.0 it
    # runs the NemotronH hook on the config's text_config (update_mamba_ssm_cache_dtype); 0.18 - 0.19's sets only the
    # video backend, and before 0.18 the architecture has no hook (read at 0.11.1 - 0.20.0 and 0.34.0)
    "nemotron_vl_ssm_hook": "0.20.0",
    # ... and MODELS_CONFIG_MAP names the Nemotron Omni V3 architectures (NemotronHNanoVLV2Config, the same hook) from
    # 0.34.0; 0.20.0 - 0.33.0 register them without a hook, so their state takes the model dtype (read at 0.20.0,
    # 0.28.0, 0.29.0, 0.30.0, 0.32.0, 0.33.0 and 0.34.0)
    "nemotron_omni_ssm_hook": "0.34.0",
    # config/cache.py mamba_cache_mode (none / align / all) and kv_cache_interface.py MambaSpec.max_memory_usage_bytes:
    # 1 + drafts state blocks (none), 2 + drafts (align); before, one block per request and no draft blocks
    "mamba_cache_mode": "0.15.0",
    # model_executor/models/config.py MambaModelConfig (0.15 - 0.16): align mode asserts no speculative decoding
    "align_with_drafts": "0.17.0",
    # v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: the group size is the largest layer count
    # when it is under 1.25 x the smallest (0.12 - 0.17), 1.5 x since 0.18.0; before 0.12 always the smallest
    "group_size_max": "0.12.0",
    "group_size_max_1_5": "0.18.0",
    # config/cache.py CacheConfig._apply_block_size_default: block_size is 16 from construction (before, None until
    # the platform set it), so an attention-free model with prefix caching takes mamba_block_size = 16 (config.py
    # MambaModelConfig) where 0.15 - 0.17 failed with a TypeError (the 0.17.0 and 0.18.0 tables)
    "block_size_default": "0.18.0",
    # config/cache.py CacheConfig.gpu_memory_utilization 0.9 -> 0.92; config/compilation.py
    # resolve_cudagraph_mode_and_sizes refuses max_num_seqs above the Mamba blocks (0.18 - 0.19 capped the capture
    # sizes instead); platforms/interface.py _align_hybrid_block_size takes the backend's kernel block sizes
    "v020": "0.20.0",
    # v1/core/kv_cache_utils.py _report_kv_cache_config: "GPU KV cache size" = int(max_concurrency * max_model_len);
    # before, num_blocks // groups * min block size
    "kv_tokens_from_concurrency": "0.20.1",
    # config/vllm.py: align mode asserts that the attention block fits one step's tokens ("In Mamba cache align mode,
    # block_size (B) must be <= max_num_batched_tokens (N)."): in VllmConfig.__post_init__ at 0.17, which pydantic
    # reports as a ValidationError (vllm#36734 met it at 0.17.1: Qwen3.5-122B-A10B at TP 2, a block of 2096 tokens
    # against 2048); from 0.18.0 in validate_block_size, which EngineCore._initialize_kv_caches calls once the KV cache
    # is sized; 0.27.0 dropped the assertion (Qwen3.5-122B-A10B in the extra tables of 0.17.0 - 0.34.0)
    "align_block_check": "0.17.0",
    "align_block_after_sizing": "0.18.0",
    "align_block_unchecked": "0.27.0",
    # config/speculative.py SpeculativeMethod: "mtp" from v0.11.0; v0.10.2 (config/__init__.py) names each model's own
    # MTP method, and Qwen3-Next's "qwen3_next_mtp" is the only one a hybrid drafts with there (another hybrid's MTP
    # layers are refused by SpeculativeConfig, `_draft_method_error`; other Mamba models refuse drafts before
    # "mamba_drafts")
    "mtp_method": "0.11.0",
    # ... where 0.11.0's SpeculativeConfig finds the draft's model type among its MTP_MODEL_TYPES (deepseek, mimo, glm4_moe,
    # ernie, qwen3_next, longcat_flash) or takes it for a draft model: "Speculative decoding with draft model is not
    # supported yet" for every other hybrid's MTP layers (Nemotron-3-Super: the 0.11.0 table); 0.11.1 drafts them
    "mtp_any_model": "0.11.1",
    # kv_cache_interface.py MambaSpec.max_memory_usage_bytes: 'all' counts the draft blocks too; config.py no longer
    # defaults to 'align' for SupportsMambaPrefixCaching models with speculative decoding (0.20.0 - 0.21)
    "all_mode_drafts": "0.22.0",
    # platforms/interface.py _align_hybrid_block_size: hybrid MLA models align blocks to 128 tokens
    "mla_align_128": "0.27.0",
    # engine/arg_utils.py: prefix caching on by default for hybrid models (is_prefix_caching_supported), align
    # mode by default ('all' only when asked); the HUGE-GPU batch tier; the "GPU KV cache size" line carries the
    # concurrency (kv_cache_utils.py update_kv_cache_capacity)
    "prefix_default_hybrid": "0.28.0",
    # models/kimi_k3/nvidia/kda.py get_kv_cache_spec: a prefill-checkpoint block with FlashKDA
    "kda_checkpoint": "0.29.0",
    # v1/core/kv_cache_utils.py get_kv_cache_configs: the memory check and the max-length estimate hold back the
    # block pool's null block ("Reserve the null block BlockPool permanently holds back"); 0.28 and older check the
    # whole available memory (_check_enough_kv_cache_memory(avail_mem, ...))
    "null_block_check": "0.29.0",
    # layers/mamba/mamba_utils.py kda_state_dtype: the KDA recurrent state follows --mamba-ssm-cache-dtype (auto,
    # float32, bfloat16; ValueError on others) where the caller passes it; before, always float32
    "kda_ssm_dtype": "0.30.0",
    # GLM-5.3-Flash (models/glm5next): at 0.30 - 0.31 kv_cache_utils.py _get_kv_cache_groups_glm5_next groups it (one
    # group of its MLA and indexer layers, one of its tails, its KDA layers over cdiv(KDA layers, MLA layers) groups,
    # bytes a block the MLA layers' pages and their indexers' unrounded, its KDA state float32 whatever
    # --mamba-ssm-cache-dtype, its tail ring index_kpool tokens at 0.30); from 0.32 the packed block-outer groups
    # (_get_packed_kv_cache_groups: the bytes a block rounded to the pages' alignment), the state following the flag,
    # a prefill-checkpoint block with FlashKDA (common/kda.py get_kv_cache_spec)
    "dsa_packed_groups": "0.32.0",
    "dsa_tail_ring": "0.31.0",
    # v1/attention/backends/mla/flashinfer_mla_sparse_sm120.py FlashInferMLASparseSM120Impl.get_fp8_ds_mla_row_bytes:
    # a NoPE latent of 512 in 528 B rows (0.34.0; every fp8_ds_mla row 656 B before: mla_attention.py)
    "ds_mla_nope_row": "0.34.0",
    # config/cache.py MambaCacheMode = Literal["align", "none"] ('all' refused); layers/mamba/mamba_mixer2.py
    # get_kv_cache_spec: Mamba2 specs take one prefill-checkpoint block
    "no_all_mode": "0.32.0",
    # gdn/qwen_gdn_linear_attn.py + gdn_attn.py: FlashInfer GDN prefill checkpoints (block alignment, one block);
    # engine/arg_utils.py: --mamba-cache-mode a deprecated no-op
    "gdn_checkpoints": "0.33.0",
    # config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE 16 -> 64: the block of an attention model, the block a hybrid's
    # attention block aligns to (platforms/interface.py _align_hybrid_block_size: the larger of the backend's
    # smallest kernel block, 16 for FlashAttention, and block_size) and the state block of an attention-free model
    "block_size_64": "0.34.0",
    # config/cache.py gpu_memory_utilization None -> resolved_gpu_memory_utilization: 1.0 with the extensible KV cache
    # (on by default on CUDA unless kv_cache_memory_bytes is set: config/vllm.py _resolve_extensible_kv_cache), 0.92
    # otherwise; v1/core/kv_cache_planning.py: the one-request refusal's advice follows (_more_kv_cache_memory_hint);
    # engine/arg_utils.py: --mamba-cache-mode's deprecation names v0.34.0 for its removal
    "extensible_kv_cache": "0.34.0",
    # config/cache.py CacheDType: int8_per_token_head and fp8_per_token_head from 0.20.0, int4_per_token_head from
    # 0.25.0 (read in the wheels of 0.17.0 - 0.34.0); v1/kv_cache_interface.py AttentionSpec: a float32 scale for K and V
    # per KV head and token beside the data, int4's data packed two values a byte (head_size // 2, 0.25.0 - 0.34.0)
    "per_token_head_kv": "0.20.0",
    "int4_per_token_head_kv": "0.25.0",
}
# The `SizeOptions` fields of `mcache size --engine vllm` and the vLLM setting each sets (vLLM's own flag is an alias of
# the option; an option vLLM lacks is refused with it).
FLAGS = {
    "max_seq_len": "max_model_len", "utilization": "gpu_memory_utilization", "draft": "num_speculative_tokens",
    "kv_dtype": "kv_cache_dtype", "ssm_dtype": "mamba_ssm_cache_dtype", "conv_dtype": "mamba_cache_dtype",
    "block_size": "block_size", "reserve": "non_kv_memory_bytes", "weights": "weights_bytes",
    "kv_cache_memory": "kv_cache_memory_bytes", "enable_prefix_caching": "enable_prefix_caching",
    "mamba_cache_mode": "mamba_cache_mode", "kernel_block_size": "kernel_block_size", "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens", "enforce_eager": "enforce_eager",
    "gdn_prefill_backend": "gdn_prefill_backend", "async_scheduling": "async_scheduling",
    "attention_backend": "attention_backend", "draft_attention_backend": "draft_attention_backend",
}
INSTEAD = {"max_batch": "max_num_seqs"}  # mcache options vLLM lacks -> its own option for what they mean (fields)
SETTINGS = ("max_model_len", "gpu_memory_utilization", "kv_cache_memory_bytes", "num_speculative_tokens",
            "mamba_cache_dtype", "mamba_ssm_cache_dtype", "kv_cache_dtype", "enable_prefix_caching", "mamba_cache_mode",
            "block_size", "kernel_block_size", "max_num_seqs", "max_num_batched_tokens", "enforce_eager",
            "gdn_prefill_backend", "async_scheduling", "attention_backend", "draft_attention_backend")
DEFAULT_UTILIZATION = 0.92  # vllm/config/cache.py: CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION (since 0.20.0)
DEFAULT_UTILIZATION_BEFORE_020 = 0.9  # vllm/config/cache.py v0.10.2 - v0.19.1
# vllm/config/cache.py resolved_gpu_memory_utilization (since 0.34.0): the extensible KV cache, on by default on CUDA
# unless kv_cache_memory_bytes is set (config/vllm.py _resolve_extensible_kv_cache), takes all the memory it measures
EXTENSIBLE_UTILIZATION = 1.0
DEFAULT_BLOCK_SIZE = 64  # vllm/config/cache.py: CacheConfig.DEFAULT_BLOCK_SIZE (since 0.34.0)
DEFAULT_BLOCK_SIZE_BEFORE_034 = 16  # vllm/config/cache.py v0.10.2 - v0.33.0
DEFAULT_KERNEL_BLOCK_SIZE = 16  # FlashAttention's smallest kernel block (v1/attention/backends/flash_attn.py)
# --attention-backend names mcache knows, with whether the backend's KV cache is block-first under a layers dimension
# (v1/attention/backend.py indexes_kv_by_block_stride at 0.28.0: FlashAttention's, FlashInfer's, Triton's and Flex's
# get_kv_cache_stride_order put the blocks first; ROCm's own backends define no such order)
ATTENTION_BACKENDS = {"FLASH_ATTN": True, "FLASHINFER": True, "TRITON_ATTN": True, "FLEX_ATTENTION": True,
                      "ROCM_ATTN": False, "ROCM_AITER_FA": False, "ROCM_AITER_UNIFIED_ATTN": False}
# ... and what the platform picks for full attention when no backend is forced: on CUDA FlashAttention or FlashInfer,
# on ROCm ROCM_ATTN (or ROCm's aiter backends where enabled: platforms/rocm.py _get_backend_priorities), by vendor
AUTO_BLOCK_STRIDE = {NVIDIA: True, AMD: False}
DEFAULT_GDN_PREFILL_BACKEND = "flashinfer"  # `auto` on Hopper (SM 9.0); other GPUs: `_gdn_backend`
# engine/arg_utils.py --gdn-prefill-backend choices: flashinfer, triton, cutedsl, aiter_flydsl, sycl; mcache models the
# first two (FlashInfer exports prefill checkpoints on block boundaries, Triton does not).
GDN_PREFILL_BACKENDS = ("flashinfer", "triton")
# vllm/engine/arg_utils.py get_batch_defaults (API server): by GPU memory, 70 GiB and over counting as big unless an A100
BIG_GPU_BYTES = 70 * GIB
HUGE_GPU_BYTES = 160 * GIB
DEFAULT_MAX_NUM_SEQS = 256
DEFAULT_MAX_NUM_SEQS_BIG_GPU = 1024
DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048
DEFAULT_MAX_NUM_BATCHED_TOKENS_BIG_GPU = 8192
DEFAULT_MAX_NUM_BATCHED_TOKENS_HUGE_GPU = 16384
FLASHMLA_BLOCK = 64  # v1/attention/backends/mla/flashattn_mla.py: FlashMLA (the fp8 MLA backend) takes only 64
MLA_ALIGNMENT = 128  # platforms/interface.py: hybrid MLA models align blocks to 128 tokens (since 0.27)
# model_executor/models/config.py HybridAttentionMambaModelConfig (0.11.1 - 0.19): kernel_block_alignment_size 64 for
# MLA (128 only under CUTLASS_MLA), 16 otherwise; 0.10.2 aligns every model to 16
MLA_ALIGNMENT_0111 = 64
MAMBA1_CHUNK = 2048  # config/model.py get_mamba_chunk_size: the chunk of a config naming none ('all' mode alignment)
# model_executor/models/*.py classes with SupportsMambaPrefixCaching (0.11.1 - 0.31): prefix caching keeps one state
# per block ('all' mode) for these; FalconMamba loads as MambaForCausalLM (registry.py). Not nano_nemotron_vl.py's
# NemotronH_Nano_VL_V2 nor lfm2_vl.py's Lfm2VL class (read at 0.11.1, 0.14.0 and 0.22.1)
MAMBA_PREFIX_ARCHS = ("BambaForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "JambaForCausalLM",
                      "MambaForCausalLM", "FalconMambaForCausalLM", "Mamba2ForCausalLM", "NemotronHForCausalLM",
                      "Zamba2ForCausalLM")
GDN_CHECKPOINT_ALIGNMENT = 64  # v1/attention/backends/gdn_attn.py: FlashInfer GDN prefill checkpoints (0.33)
NO_LENGTH_KEY_LEN = 2048  # config/model.py _get_and_verify_max_len: a config naming no max length
KV_DTYPES = {"auto": None, "float16": "float16", "bfloat16": "bfloat16", "fp8": "float8_e4m3fn",
             "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "fp8_per_token_head": "float8_e4m3fn",
             "int8_per_token_head": "uint8", "int4_per_token_head": "uint8"}  # vllm/config/cache.py CacheDType
# (the ones with a plain page; int4's packed two a byte, `_kv_data_bytes`); the releases that take each mode
KV_DTYPE_SINCE = {"int8_per_token_head": "per_token_head_kv", "fp8_per_token_head": "per_token_head_kv",
                  "int4_per_token_head": "int4_per_token_head_kv"}
# --kv-cache-dtype auto for a checkpoint that stores fp8 KV (v0.33.0): utils/torch_utils.py
# resolve_kv_cache_dtype_string / get_kv_cache_quant_algo_string turn a ModelOpt `kv_cache_scheme` (static 8-bit float)
# or `kv_cache_quant_algo` FP8 (config.json, or hf_quant_config.json read by transformers_utils/config.py) into
# fp8_e4m3; for compressed-tensors, model_executor/layers/attention/attention.py sets cache_dtype "fp8" when the config
# has a kv_cache_scheme. Both are float8_e4m3fn pages.
CHECKPOINT_KV = "fp8_e4m3"
# engine/arg_utils.py: --mamba-cache-mode still takes these, but in 0.33 it is a deprecated no-op (the mode follows
# prefix caching); 'all' (per-block state prefix caching, 0.31 and older) is not modelled
MODES = ("none", "align", "all")
MODE_DEPRECATED = ("--mamba-cache-mode is deprecated and will be removed in v{removal}. It has no effect: Mamba prefix "
                   "caching follows --enable-prefix-caching.")

# model_executor/models/registry.py (v0.34.0): the Nemotron Omni V3 architectures load nano_nemotron_vl.py's
# NemotronH_Nano_VL_V2 class, so they follow its rules (state shape, drafts, no PP) unless a rule names them apart
NEMOTRON_OMNI = ("NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3")
# vllm/model_executor/models/config.py: NemotronHForCausalLMConfig sets the state dtype from the config's
# mamba_ssm_cache_dtype, else float32 (NemotronHNanoVLV2Config on the text_config); by architecture, the SINCE rule
# from which its MODELS_CONFIG_MAP entry runs that hook. Qwen3_5ForConditionalGenerationConfig copies
# text_config.mamba_ssm_dtype; MiniCPMV4_6ForConditionalGeneration, a Qwen3.5 text model too, has no entry (v0.22.0 -
# v0.34.0), so its config's mamba_ssm_dtype is not read.
NEMOTRON_SSM_HOOK = {"NemotronHForCausalLM": "nemotron_ssm_hook", "NemotronHPuzzleForCausalLM": "nemotron_ssm_hook",
                     "NemotronH_Nano_VL_V2": "nemotron_vl_ssm_hook",
                     **dict.fromkeys(NEMOTRON_OMNI, "nemotron_omni_ssm_hook")}
# The hook registry (MODELS_CONFIG_MAP) names the flat text classes too (Qwen3_5ForCausalLMConfig runs the same hook).
QWEN3_5 = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM",
           "Qwen3_5MoeForCausalLM")
# Kinds whose state shape takes num_spec (k more conv rows with drafts), by the release from which the layers pass it
# (layers/mamba/mamba_utils.py and the layers' get_state_shape): GDN always (gated_delta_net_state_shape), Mamba2
# since 0.17.0 (mamba_mixer2.py), KDA since 0.27.0 (kda_state_shape), short conv since 0.29.0 (short_conv.py);
# mamba1 and linear attention never.
CONV_DRAFT_SINCE = {"gdn": "0.10.2", "mamba2": "0.17.0", "kda": "0.27.0", "short_conv": "0.29.0"}
# The model classes' get_mamba_state_shape_from_config hooks (which size the padded page) pass num_spec for Mamba2
# from these releases: nemotron_h.py and mamba2.py since 0.17.0, falcon_h1.py, granitemoehybrid.py and zamba2.py since
# 0.32.0; bamba.py never (to 0.23, its last release); GDN and KDA hooks as their layers; LFM2's short-conv hooks never
# (LAYER_ONLY_DRAFT_KINDS). nano_nemotron_vl.py's hook hands its text_config to nemotron_h.py's (read at 0.11.1, 0.17.0
# and 0.34.0).
MAMBA2_HOOK_DRAFT_SINCE = {"NemotronHForCausalLM": "0.17.0", "NemotronHPuzzleForCausalLM": "0.17.0",
                           "NemotronH_Nano_VL_V2": "0.17.0", **dict.fromkeys(NEMOTRON_OMNI, "0.17.0"),
                           "Mamba2ForCausalLM": "0.17.0", "BambaForCausalLM": None}
MAMBA2_HOOK_DRAFT_DEFAULT = "0.32.0"
# KDA's recurrent state (mamba_utils.py kda_state_dtype): float32 under 'auto', else --mamba-ssm-cache-dtype. The model
# class's hook, which sizes the padded page, passes the flag for Kimi-Linear and Kimi-K3 alike (models/kimi_k3/nvidia/
# model.py KimiLinearForCausalLM.get_mamba_state_dtype_from_config); the layers differ: Kimi-K3's KimiK3DeltaAttention
# (models/kimi_k3/nvidia/kda.py) passes it, Kimi-Linear's KimiGatedDeltaNetAttention
# (layers/mamba/gdn/kimi_gdn_linear_attn.py) does not, so its state stays float32.
KDA_SSM_DTYPE_HOOK = ("KimiLinearForCausalLM", "KimiK3ForConditionalGeneration")
KDA_SSM_DTYPE_LAYER = ("KimiK3ForConditionalGeneration",)
GLM5_NEXT = "Glm5NextForConditionalGeneration"  # passes the flag in its layers and hook from 0.32 (`_kda_state_dtype`)
KDA_SSM_DTYPES = ("auto", "float32", "bfloat16")  # kda_state_dtype raises ValueError on any other
# config/cache.py MambaDType (the --mamba-cache-dtype / --mamba-ssm-cache-dtype choices): auto and float32 in
# 0.10.2 - 0.12, float16 from 0.13.0, bfloat16 from 0.22.0; pydantic refuses the others
MAMBA_DTYPES_SINCE = {"auto": "0.10.2", "float32": "0.10.2", "float16": "0.13.0", "bfloat16": "0.22.0"}
# Short conv's layer takes num_spec (layers/mamba/short_conv.py get_state_shape) but the LFM2 model classes' hooks do
# not (models/lfm2.py, lfm2_moe.py, lfm2_vl.py get_mamba_state_shape_from_config), so drafts grow the real page, not
# the one the padding is computed from.
LAYER_ONLY_DRAFT_KINDS = ("short_conv",)
# Kimi-K3's KDA layer (models/kimi_k3/nvidia/kda.py get_kv_cache_spec) takes a prefill-checkpoint block with the
# FlashKDA prefill backend, which it resolves to on Hopper
FLASHKDA_ARCHS = ("KimiK3ForConditionalGeneration",)
# ---- DeepSeek sparse attention: MLA with a DSA indexer (the spec's `dsa_indexer`, GLM-5.3-Flash), 0.30 on ----
MODELLED_KINDS = ("dsa_indexer",)  # engines/__init__.py UNMODELLED_KINDS: the DSA indexer's keys and tail (below)
# Its indexer's backend takes blocks of index_kpool x 32 tokens (x 64 on SM 12: platforms/cuda.py
# _get_indexer_block_alignment at 0.30 - 0.31, the indexer backend's kernel sizes after), which the attention block
# is a multiple of; the tail (Glm5NextTailCache) keeps a ring of raw keys and gate scores, 2 heads of the indexer's
# head dim in bf16, index_kpool x next_pow2(cdiv(index_kpool + drafts, index_kpool)) tokens (index_kpool at 0.30),
# one block a request; FlashKDA prefill (a checkpoint block, 0.32 on) on CUDA SM 9, 10 and 12 with a bf16 model and
# KDA heads of 128 (common/kda.py). The packed groups (0.32 on) round a block's bytes to the lcm of the latent's
# token (1,024 B) and the page of the indexer's MultipleOf(64 x index_kpool) stride over a block's tokens.
DSA_INDEXER_BLOCKS = 32
DSA_INDEXER_BLOCKS_SM12 = 64
DSA_STRIDE_TOKENS = 64
DSA_TAIL = "dsa_indexer:tail"  # the group name of the tails (one block a request: `BlockRule.per_request`)
FLASHKDA_CAPABILITIES = (9, 10, 12)
# SM 10 and up but SM 12: other sparse MLA backends (FlashInfer's TRTLLM-gen, FlashMLA, FA4), and from 0.33 an fp8
# default (model_executor/models/config.py Glm5NextModelConfig): refused, not modelled
DSA_FP8_FROM_SM = 10
# The KV modes of the sparse NoPE MLA backend each CUDA major picks (platforms/cuda.py; FlashInfer >= 0.6.18, which
# 0.30.0 - 0.34.0 pin): SM 9's FlashInferMLASparseSM90Backend (v1/attention/backends/mla/flashinfer_mla_sparse_sm90.py),
# where fp8 keeps the latent as plain E4M3 rows, 512 B a token (mla_attention.py _canonicalize_sparse_mla_kv_cache_dtype
# leaves it as it is); SM 12's FlashInferMLASparseSM120Backend (flashinfer_mla_sparse.py), which turns each into
# fp8_ds_mla rows (`_ds_mla_row`)
DSA_KV_MODES = {9: ("auto", "bfloat16", "fp8", "fp8_e4m3"), 12: ("auto", "fp8", "fp8_e4m3")}
DS_MLA, DS_MLA_ROW, DS_MLA_NOPE_ROW = "fp8_ds_mla", 656, 528
# v1/attention/backends/mla/flashinfer_mla_sparse.py _FlashInferMLASparseBackendBase.customize_spec (0.32 - 0.34): SM 12's
# sparse MLA backend reads the rows as pages of its kernel block (MultipleOf(64)), so a block's stride is a multiple of
# 64 rows (align_blocks_to_rows; SM 9's backend: one row)
DSA_SM12_ROWS = 64
# model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS (v0.33.0): hybrid architectures removed from vLLM,
# by the last release that served them; the registry refuses one by name, or (below) hands it to the Transformers
# backend, whose first recurrent layer stops start-up (models/transformers/base.py)
# registry.py `_try_resolve_transformers`: a removed architecture whose transformers class the Transformers backend
# takes goes there instead of being refused, by the first release that takes it: MiniMax's class is
# `is_backend_compatible()` (read at v0.24.0 - v0.29.0: the 0.24 - 0.29 tables), Bamba's only
# `_can_set_attn_implementation()`, which the check accepts from v0.30.0 (the 0.30 - 0.33 tables); the others'
# classes are remote code only (refused by name)
TRANSFORMERS_BACKEND_SINCE = {"BambaForCausalLM": "0.30.0", "MiniMaxForCausalLM": "0.24.0"}
# models/transformers/base.py: from v0.30.0 the backend refuses a layer that does not dispatch through the
# Transformers attention interface (a recurrent one); before (v0.24.0 - v0.29.0 read), create_attention_instances
# makes an Attention for every layer of the stage (get_pp_indices' range) with the config's attention geometry, so a
# hybrid served there is sized as that many full-attention layers (the 0.24 - 0.29 tables: MiniMax-Text-01 at 80)
TRANSFORMERS_LAYER_CHECK_SINCE = "0.30.0"
# ... and architectures the registry does not have yet but whose transformers class (in the release's transformers
# pin) the Transformers multimodal backend takes, by [first, registered) release: LFM2-VL from 0.11.1 (transformers
# 4.57, the first with lfm2_vl) to 0.14.0, which registers lfm2_vl.py; sized as every layer a full-attention one (the
# 0.13.0 extra table: 16 FullAttentionSpec layers), and refused over TP ranks (`TRANSFORMERS_NO_TP`)
TRANSFORMERS_BEFORE_ADDED = {"Lfm2VlForConditionalGeneration": "0.11.1"}
# ... whose model class (models/transformers/base.py, from transformers) has no tensor-parallel plan: the class named
TRANSFORMERS_NO_TP = {"Lfm2VlForConditionalGeneration": "transformers.models.lfm2_vl.modeling_lfm2_vl.Lfm2VlModel"}
REMOVED_ARCHS = {"BambaForCausalLM": "0.23.0", "MiniMaxForCausalLM": "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0",
                 "MiniMaxM1ForCausalLM": "0.23.0", "Plamo2ForCausalLM": "0.26.0"}
# Releases whose model class of an architecture does not build (the error vLLM raises while loading): 0.12.0's
# models/kimi_linear.py builds MLAModules without the indexer_rotary_emb its layers/mla.py requires (0.13.0 fixed it)
BROKEN_ARCHS = {("KimiLinearForCausalLM", "0.12.0"):
                "TypeError: MLAModules.__init__() missing 1 required positional argument: 'indexer_rotary_emb'"}
# ... and with pipeline parallelism: 0.11.1's models/qwen3_next.py Qwen3NextForCausalLM.set_moe_parameters raises
# inside its loop over model.layers when the first is not a decoder layer, as on every PP rank but the first (a
# PPMissingLayer); 0.12.0 moved the check after the loop (the 0.11.1 table's PP cases)
BROKEN_PP_ARCHS = {("Qwen3NextForCausalLM", "0.11.1"): "RuntimeError: No Qwen3Next layer found in the model.layers.",
                   # 0.10.2 - 0.11.0's models/lfm2.py Lfm2ForCausalLM.__init__ sets unpadded_vocab_size on the last PP
                   # rank only and reads it for the LogitsProcessor on every rank (the 0.10.2 and 0.11.0 tables'
                   # LFM2-1.2B PP cases)
                   **{("Lfm2ForCausalLM", v): "AttributeError: 'Lfm2ForCausalLM' object has no attribute "
                                              "'unpadded_vocab_size'" for v in ("0.10.2", "0.11.0")}}
# ... and for a quantized checkpoint that leaves a unit unquantized: 0.10.2's models/qwen3_next.py fuses the GDN
# in_proj_qkvz and in_proj_ba into one in_proj, and layers/quantization/utils/quant_utils.py is_layer_skipped refuses
# a fused layer whose shards differ (Qwen3-Next-80B-A3B-Instruct-FP8 ignores in_proj_ba, mcache's gdn.gate_proj; the
# 0.10.2 table); 0.11.1 builds the two apart
BROKEN_QUANT_ARCHS = {("Qwen3NextForCausalLM", "0.10.2"): (
    "gdn.gate_proj", "ValueError: Detected some but not all shards of model.layers.0.linear_attn.in_proj are "
                     "quantized. All shards of fused layers to have the same precision.")}
# ... and the first Nemotron-H class (models/nemotron_h.py at v0.10.2; 0.11.1 reads layer_norm_epsilon and adds the
# "E" MoE layer): every layer reads config.rms_norm_eps, which the published NVIDIA-Nemotron-3-Nano-30B-A3B and
# Nemotron-3-Super-120B-A12B config.json do not set (they name layer_norm_epsilon and norm_eps), and only the letters
# M, - and * have a class: engines/common.py nemotron_h_layers_error (the 0.10.2 table)
NEMOTRON_H_LAYERS_UNTIL = "0.11.1"
# ... and at a TP size that neither splits the Mamba2 groups nor meets one group, which every rank holds whole:
# layers/mamba/mamba_mixer2.py MambaMixer2.__init__, every Mamba2 hybrid's mixer (Bamba, FalconH1, GraniteMoeHybrid,
# Mamba2, NemotronH, Zamba2), asserts `n_groups % tp_size == 0 or n_groups == 1` (read at v0.10.2 and v0.33.0; its
# words: SINCE "mamba2_groups_words"): engines/common.py mamba2_groups_unsplit (Falcon-H1-34B's 2 groups at TP 4, the
# extra tables)
MAMBA2_GROUPS_ERROR = "If tensor parallel world size does not divide {}, then num_groups must equal 1."
# ... then a quantized checkpoint's TP size (SINCE "mamba2_quant_tp_groups", "mamba2_quant_tp_free"), in 0.10.2's words
# and then 0.11.1 - 0.15.x's
MAMBA2_QUANT_TP_ERRORS = ("Tensor parallel currently not supported for quantized models.",
                          "Tensor parallel currently supported for quantized models only if tensor parallel world size "
                          "divides num groups.")
# model_executor/models/registry.py: hybrid architectures by the first release that registers them (diffed from
# v0.10.2 on); an older release does not load them. NemotronH_Nano_VL_V2 from 0.11.0 (0.10.2 registers the v1
# NemotronH_Nano_VL only), Lfm2VlForConditionalGeneration from 0.14.0 (not in 0.13.0's registry)
ADDED_ARCHS = {"KimiLinearForCausalLM": "0.11.1", "Lfm2MoeForCausalLM": "0.11.1", "NemotronH_Nano_VL_V2": "0.11.0",
               "Lfm2VlForConditionalGeneration": "0.14.0",
               "Qwen3_5ForConditionalGeneration": "0.17.0", "Qwen3_5MoeForConditionalGeneration": "0.17.0",
               "Qwen3_5ForCausalLM": "0.17.0", "Qwen3_5MoeForCausalLM": "0.17.0",
               "KimiK3ForConditionalGeneration": "0.27.0", "BailingMoeV3ForCausalLM": "0.28.0",
               # registry.py: the Nano and Super Omni V3 names from 0.20.0 (not in 0.19.0), NemotronH_Omni_Reasoning_V3
               # from 0.29.0 (not in 0.28.0)
               "NemotronH_Nano_Omni_Reasoning_V3": "0.20.0", "NemotronH_Super_Omni_Reasoning_V3": "0.20.0",
               "NemotronH_Omni_Reasoning_V3": "0.29.0",
               # models/lfm3.py (short conv, full and sliding-window attention) and lfm3_vl.py from 0.34.0 (not in
               # 0.33.0)
               "Lfm3ForCausalLM": "0.34.0", "Lfm3VlForConditionalGeneration": "0.34.0",
               # models/qwen4_exp (Qwen3.8-Flash-Next) from 0.29.0 (not in 0.28.0's registry)
               "Qwen4ExpForCausalLM": "0.29.0", "Qwen4ExpForConditionalGeneration": "0.29.0",
               # models/glm5next (GLM-5.3-Flash) from 0.30.0 (not in 0.29.0's registry)
               "Glm5NextForCausalLM": "0.30.0", "Glm5NextForConditionalGeneration": "0.30.0"}

# transformers_utils/config.py HFConfigParser.parse and _CONFIG_REGISTRY (read at v0.11.1 and v0.17.0): a config whose model type
# neither vLLM's own config registry (_CONFIG_REGISTRY) nor the transformers it runs with knows, from a checkpoint that
# ships no configuration code (no auto_map), fails in AutoConfig.from_pretrained ("... does not recognize this
# architecture"), which ModelConfig's validation reports before anything else is checked; by architecture, its model
# type and the first release that loads it: vLLM's Lfm2MoeConfig from v0.11.1 (v0.10.2 runs transformers 4.56, which
# has no lfm2_moe), Qwen3_5Config and Qwen3_5MoeConfig from v0.17.0 (transformers 4.57, the pin of v0.11.1 - v0.22.0,
# has neither). The 0.10.2 - 0.15.0 tables. MiniCPM-V 4.6's MiniCPMV4_6Config is transformers' own (5.7.0, the first
# modelled pin with it, is v0.24.0's; models/minicpmv4_6.py imports it): registry.py has the architecture from 0.22.0
# (not in 0.20.0), whose transformers 4.57 does not know minicpmv4_6. LFM3's Lfm3Config and Lfm3VlConfig are vLLM's
# own (transformers_utils/configs/lfm3.py, lfm3_vl.py, in _CONFIG_REGISTRY from v0.34.0; no transformers has them).
CONFIG_CLASS_SINCE = {"Lfm2MoeForCausalLM": ("lfm2_moe", "0.11.1"), "Lfm3ForCausalLM": ("lfm3", "0.34.0"),
                      # transformers 4.57 (0.11.1's pin) is the first with lfm2_vl (the 0.11.0 extra table)
                      "Lfm2VlForConditionalGeneration": ("lfm2_vl", "0.11.1"),
                      "Lfm3VlForConditionalGeneration": ("lfm3_vl", "0.34.0"),
                      "Qwen3_5ForConditionalGeneration": ("qwen3_5", "0.17.0"),
                      "Qwen3_5MoeForConditionalGeneration": ("qwen3_5_moe", "0.17.0"),
                      "MiniCPMV4_6ForConditionalGeneration": ("minicpmv4_6", "0.24.0")}

# transformers_utils/model_arch_config_convertor.py (v0.14.0 - v0.17.x; new in 0.14.0, read by ModelConfig's
# get_model_arch_config): ModelArchConfigConvertorBase.get_total_num_kv_heads falls back to
# `hf_text_config.num_attention_heads`, which an attention-free config whose model_type has no convertor of its own
# (only "mamba" and "falcon_mamba" have one) lacks: transformers 4.x's Mamba2Config, so every Mamba2ForCausalLM fails
# before sizing; v0.18.0 falls back to get_total_num_attention_heads (0 when absent). The 0.14.0, 0.15.0 and 0.17.0
# golden tables have it at every TP.
NO_HEADS_RELEASES = ("0.14.0", "0.18.0")
OWN_CONVERTOR_ARCHS = ("MambaForCausalLM", "FalconMambaForCausalLM")
# Model classes that assert prefix caching off while they are built, by [first, fixed) release: models/lfm2_moe.py
# Lfm2MoeForCausalLM.__init__ (v0.11.1 - v0.15.x; v0.16.0 refuses only --mamba-cache-mode all, which
# MambaModelConfig has already made 'align' for it: the 0.16.0 table). Before 0.15 MambaModelConfig has already turned
# prefix caching off for it (not SupportsMambaPrefixCaching), so it fires from 0.15.0 (the 0.11.1 / 0.15.0 tables)
NO_PREFIX_ARCHS = {"Lfm2MoeForCausalLM": ("0.11.1", "0.16.0")}
# model_executor/models/registry.py (read at v0.10.2, v0.22.0 and v0.33.0): hybrid architectures mcache imports that
# no modelled release registers; ModelRegistry refuses them ("Model architectures [...] are not supported for now"),
# with --trust-remote-code too (the Ring-linear checkpoints' auto_map names only their configuration class)
UNREGISTERED_ARCHS = ("BailingMoeLinearV2ForCausalLM",
                      # Qwen3.8-Flash-Next's first name, which registry.py never had (Qwen4Exp from 0.29.0 on)
                      "Qwen3_8FlashNextForConditionalGeneration")
# Hybrid architectures whose model class lacks the SupportsPP interface (models/mamba2.py, zamba2.py and
# minimax_text_01.py, which registry.py maps the MiniMax names to; read at v0.13.0 and v0.33.0; nano_nemotron_vl.py's
# NemotronH_Nano_VL_V2, read at v0.11.1, v0.14.0, v0.22.1 and v0.34.0): config/model.py
# ModelConfig.verify_with_parallel_config refuses them with pipeline parallelism (NotImplementedError), called by
# VllmConfig.__post_init__ after the config hooks (try_verify_and_update_config)
NO_PP_ARCHS = ("Mamba2ForCausalLM", "Zamba2ForCausalLM", "MiniMaxForCausalLM", "MiniMaxText01ForCausalLM",
               "MiniMaxM1ForCausalLM", "NemotronH_Nano_VL_V2", *NEMOTRON_OMNI)

# config/model.py _resolve_auto_dtype (read at v0.10.2 and v0.34.0): --dtype auto serves a float32 config (transformers'
# dtype for one naming none) in the platform's first dtype (platforms/cuda.py supported_dtypes), bfloat16 from compute
# capability 8.0 and on ROCm: every card of mcache's catalogue (a --gpu-memory card is taken as one of them)
FLOAT32_SERVED_AS = "bfloat16"

# Hybrids whose model class builds its attention layers without the config's sliding window, so every attention layer
# keeps a full-length KV cache (a FullAttentionSpec): models/plamo2.py Plamo2AttentionMixer never reads
# attention_window_size (read at v0.10.2, v0.11.1 and v0.24.0; served to v0.26.0, `REMOVED_ARCHS`)
WINDOWLESS_ARCHS = ("Plamo2ForCausalLM",)

# Hybrids whose model class builds every attention layer before its first layer (models/zamba2.py Zamba2Model: the
# shared transformer blocks first), so their attention group is the first KV-cache group (`_first_group`)
ATTENTION_BUILT_FIRST = ("Zamba2ForCausalLM",)

# The name tag of the states of a PP stage whose worker aligns nothing (no attention layer; SINCE "worker_padding"):
# "mamba2:unaligned" is a KV-cache spec of its own
UNALIGNED = "unaligned"


class BlockRule(Struct, frozen=True):
    """How many blocks a request holds (kv_cache_interface.py max_memory_usage_bytes): the attention block size,
    the mamba cache mode, the state blocks drafts add, the recurrent kinds whose specs take a prefill-checkpoint
    block (`num_prefill_checkpoint_blocks`) and the tokens in flight (`_in_flight`: a windowed layer keeps that many
    beside its window)."""

    block: int
    mode: str
    drafts: int
    checkpoint_kinds: tuple[str, ...]
    batched: int  # the tokens in flight a windowed layer keeps beside its window (`_in_flight`)
    state_drafts: int = 0  # the draft blocks a state holds ('none'/'align': drafts since 0.15; 'all': since 0.22)
    mamba_block: int = 0  # tokens per state block in 'all' mode (the attention block; attention-free: block_size)
    cache_block: int = 0  # the cache block before alignment: the 'all' state block of an unaligned stage's states
    drafter_scale: int = 1  # a DFlash drafter's own specs: their blocks hold this many times the tokens (`_drafter_pages`)

    def per_request(self, groups: dict[str, int], tokens: int, ctx: RankContext) -> int:
        """Blocks one request of `tokens` tokens holds over all `groups`: attention `ceil(tokens / block)` (windowed:
        the window plus a batch of new tokens, and one more), state `1 + drafts` (none), `2 + drafts` and a
        checkpoint block where the kind takes one (align), or one per state block of the request (all: per cache
        block for the states of a stage whose worker does not align, `UNALIGNED`)."""
        total = 0
        for name, n in groups.items():
            kind, _, tag = name.partition(":")
            if kind in RECURRENT_KINDS:
                per = 1 + self.state_drafts
                if self.mode == "align":
                    per += 1 + (kind in self.checkpoint_kinds)
                elif self.mode == "all":
                    block = self.cache_block if tag == UNALIGNED else self.mamba_block
                    per = cdiv(tokens, block) + self.state_drafts
            elif name == DSA_TAIL:  # a ring a request, one block (CircularBufferSpec / KpoolTailSpec)
                per = 1
            else:  # a drafter's own specs hold `drafter_scale` times the tokens a block
                block = self.block * (self.drafter_scale if kind == drafter_sizing.NAME else 1)
                per = (cdiv(min(_window(ctx, name) - 1 + self.batched, tokens), block) + 1 if name.endswith(":window")
                       else cdiv(tokens, block))
            total += n * per
        return total


class Setup(Struct, frozen=True):
    """What vLLM resolves once for the whole model before it sizes a stage: its settings, the state page (`page`,
    padded to `padded`), the KV bytes of one token in one attention layer, the block rule, why vLLM refuses
    the model or its settings before sizing anything (`refusal`, None: it goes on), and why it refuses the block
    once the KV cache is sized (`block_refusal`)."""

    dtypes: CacheDtypes
    max_len: int
    context: int
    drafts: int
    rule: BlockRule
    page: int
    padded: int
    attn_tok: int
    max_num_seqs: int
    eager: bool
    utilization: float
    kv_memory: int | None
    non_kv: int
    log: list[str]
    refusal: str | None = None
    version: str = ""  # the modelled release
    extensible: bool = False  # the extensible KV cache sizes the memory (since 0.34, without kv_cache_memory_bytes)
    active_seqs: int = 0  # the requests the scheduler admits at once (max_num_active_seqs; 0: max_num_seqs)
    block_refusal: str | None = None
    draft_apart: bool = False  # the MTP drafter's attention layers keep a spec of their own (`_draft_apart`)
    dsa_ring: int = 0  # a DSA indexer's tail ring in tokens (`_dsa_ring`; 0: no DSA indexer)
    dsa_rows: int = 1  # the latent rows a DSA model's block stride is a multiple of (`DSA_SM12_ROWS`)


class StagePool(Struct, frozen=True):
    """One stage's KV-cache groups before the workers agree on a block count: its layers per cache spec
    (`buckets`), the groups per spec it keeps, its layers per group (`group`: its largest share of one group), the
    padding layers, the bytes of one layer's block (`unit`), the memory for the blocks (None without a GPU), and
    the group size and memory the one-request check counts (`check_group`, `check_available`)."""

    ctx: RankContext
    buckets: dict[str, int]
    groups: dict[str, int]
    group: int
    padding_layers: int
    unit: int
    available: int | None
    log: list[str]
    check_group: int = 0
    check_available: int | None = None
    packed_block: int = 0  # bytes of a block where the groups are packed and rounded (`_dsa_pool`; 0: group x unit)

    @property
    def block_bytes(self) -> int:
        """Bytes of one block over a group's layers."""
        return self.packed_block or self.group * self.unit

    @property
    def num_blocks(self) -> int:
        """The blocks this stage's memory holds (0 without memory). A stage without cache layers has one, the block
        pool's null block (v0.10.2 v1/core/kv_cache_utils.py get_kv_cache_config: its worker's attention-free
        config), and since every worker then takes the smallest count, such a stage leaves the others one block
        (later releases refuse it: `_planning_error`)."""
        if not self.groups:
            return 1
        return self.available // self.block_bytes if self.available is not None and self.available > 0 else 0


def extensible_kv_cache(version: str, kv_memory_set: bool) -> bool:
    """Whether the extensible KV cache sizes vLLM's memory at `version`: from 0.34 unless kv_cache_memory_bytes is set
    (`kv_memory_set`)."""
    return not kv_memory_set and _since(version, "extensible_kv_cache")


def default_utilization(version: str, extensible: bool) -> float:
    """vLLM's default gpu_memory_utilization at `version`, with the extensible KV cache on or not (`extensible`)."""
    if extensible:
        return EXTENSIBLE_UTILIZATION
    return DEFAULT_UTILIZATION if _since(version, "v020") else DEFAULT_UTILIZATION_BEFORE_020


def run(inputs: EngineInputs) -> EngineRun:
    """vLLM's sizing of every PP stage (its workers agree on the smallest block count); under attention DP, of one
    data-parallel engine core (`engine_core_layout`)."""
    layout = inputs.layout
    full_width_attention_dp(layout, "vLLM", FULL_WIDTH_ATTENTION_DP)
    s = Settings(inputs.given, SETTINGS, "vLLM")
    if dtype_names.canonical(inputs.spec.dtype) == "float32":  # weights and caches in the dtype vLLM loads
        inputs = replace(inputs, spec=replace(inputs.spec, dtype=FLOAT32_SERVED_AS))
    checkpoint, expert_shards = inputs.spec, inputs.layout.attention_dp_ranks
    inputs = replace(inputs, layout=engine_core_layout(inputs.layout),
                     spec=_served_spec(inputs.spec, inputs.version or VERSIONS[-1]))
    setup = _setup(inputs, s)
    caveats = unnamed_architecture_caveats(checkpoint, "vLLM")
    # distributed/utils.py get_pp_indices (v0.10.2 to v0.33.0): the remainder to the stages before the last, the last but
    # one first
    layout = pp_layout(inputs.layout, inputs.spec.num_layers, spared=1)
    contexts = stage_contexts(inputs.spec, layout, setup.dtypes)
    # the checkpoint's weights, whatever layers the cache is sized for (`_served_spec`)
    weights = s.weights(contexts if checkpoint is inputs.spec else stage_contexts(checkpoint, layout, setup.dtypes),
                        expert_shards)
    if setup.refusal is not None:
        stages = [EngineStage(ctx.stage, 0, setup.refusal, setup.log + [setup.refusal], "start-up") for ctx in contexts]
        return EngineRun(NAME, setup.max_len, setup.context, s.values, s.sources, setup.dtypes, stages, caveats)
    pools = _pools(contexts, weights, inputs, setup)
    # the workers load the weights before they profile: a rank's weights beyond the GPU's memory stop the load (a KV
    # budget given, or measured by a log, says the weights loaded); else vLLM stops while it plans the KV caches
    overflow = weights_overflow(weights, inputs.gpu_bytes, "the GPU's memory") if setup.kv_memory is None else None
    refusal = overflow or _planning_error(pools, setup)
    if refusal is not None:  # no cache is made
        stages = [EngineStage(p.ctx.stage, 0, refusal, p.log + [refusal], "start-up",
                              _fields(p, None, setup.rule.per_request(p.groups, setup.max_len, p.ctx), setup))
                  for p in pools]
        return EngineRun(NAME, setup.max_len, setup.context, s.values, s.sources, setup.dtypes, stages, caveats)
    # Every worker computes its blocks; vLLM then gives all of them the smallest count (kv_cache_utils.py).
    num_blocks = min(p.num_blocks for p in pools) if all(p.available is not None for p in pools) else None
    stages = [_stage(pool, num_blocks, setup) for pool in pools]
    s.values["max_num_seqs"] = setup.max_num_seqs
    return EngineRun(NAME, setup.max_len, setup.context, s.values, s.sources, setup.dtypes, stages, caveats)


# Attention data parallelism. vLLM has no attention-DP flag: `--data-parallel-size N` (vllm/config/parallel.py
# ParallelConfig.data_parallel_size, v0.33.0 line 147, v0.10.2 line 69) starts N engine cores, each an EngineCore with
# its own TP x PP workers, scheduler (max_num_seqs) and KV cache, which it sizes and logs itself
# (`_initialize_kv_caches`: "GPU KV cache size", "Maximum concurrency"). v1/engine/core.py run_engine_core: at v0.10.2
# (line 699) every DP rank is a DPEngineCoreProc; at v0.33.0 (lines 1546-1555) a MoE model's are, and a dense model's
# are plain EngineCoreProcs ("Non-MoE DP ranks are completely independent, so treat like DP=1"). A MoE's routed
# experts form one group over the DP x TP ranks (model_executor/layers/fused_moe/config.py
# FusedMoEParallelConfig.make: v0.10.2 lines 267-280 `flatten_tp_across_dp`, v0.33.0 lines 1106-1112 and 1198-1209
# `flatten_tp_across_dp_and_pcp`: each expert sharded over them, or with --enable-expert-parallel 1/(DP x TP) of the
# experts on each: the same bytes); attention, dense MLPs, shared experts, embeddings and the head are the engine
# core's, TP-sharded only. (vllm-project/vllm#36240, which would keep DP ranks' experts whole without expert
# parallelism, was closed.) So mcache's `--tp T --attention-dp` (T ranks a stage, each with whole KV heads and state
# and a batch of its own) is vLLM's `--data-parallel-size T --tensor-parallel-size 1`: each rank an engine core of TP
# 1 with the routed experts split T ways, at every release mcache models (read in the 0.10.2 and 0.33.0 wheels).
def engine_core_layout(layout: ParallelLayout) -> ParallelLayout:
    """The layout one vLLM engine core runs: `layout` itself, or TP 1 under attention DP (its PP stages kept)."""
    return replace(layout, tp=1, attention_dp=False, attention_dp_size=None) if layout.attention_dp else layout


def serve_command(args: ServeArgs) -> str:
    """The `vllm serve` line of a deployment (vllm/engine/arg_utils.py flag names); under attention DP its TP ranks
    are data-parallel engine cores of TP 1 (`engine_core_layout`), one replica's: `--data-parallel-size` times the
    replicas is the fleet's."""
    tp = 1 if args.attention_dp else args.tp
    line = ["vllm", "serve", args.model, "--tensor-parallel-size", tp, "--pipeline-parallel-size", args.pp,
            "--max-model-len", args.context]
    line += ["--kv-cache-dtype", args.kv_dtype] if args.kv_dtype else []
    line += ["--mamba-ssm-cache-dtype", args.ssm_dtype] if args.ssm_dtype else []
    if args.prefix != "default":
        line += ["--enable-prefix-caching" if args.prefix == "on" else "--no-enable-prefix-caching"]
    if args.draft:  # vllm/config/speculative.py: a DFlash drafter, MTP heads when the model has them, else n-gram lookup
        mtp = "mtp" if _since(args.version or VERSIONS[-1], "mtp_method") else "qwen3_next_mtp"
        method = {"method": mtp if args.mtp else "ngram", "num_speculative_tokens": args.draft}
        if args.drafter:
            method = {"method": "dflash", "model": args.drafter, "num_speculative_tokens": args.draft}
        line += ["--speculative-config", json_text(method, indent=None)]
    engine_cores = (args.tp if args.attention_dp else 1) * args.replicas
    line += [REPLICA_FLAG, engine_cores] if engine_cores > 1 else []
    return shlex.join(str(a) for a in line)


def _setup(inputs: EngineInputs, s: Settings) -> Setup:
    """The settings of the run (given or vLLM's defaults, in the order vLLM resolves them) and the model-wide page
    and block alignment, with the lines vLLM logs while it resolves them."""
    spec = inputs.spec
    arch = spec.architecture or ""
    log: list[str] = []
    max_len = _max_len(s, spec, log)
    k = s.take("num_speculative_tokens", 0)
    version = inputs.version or VERSIONS[-1]
    dtypes = _dtypes(spec, s, arch, version, log)
    kv_mode = s.values["kv_cache_dtype"]
    if spec.dsa_indexer is not None:
        _dsa_scope(inputs, kv_mode, dtypes)
    recurrent = recurrent_kinds(spec)
    hybrid = bool(recurrent) and any(getattr(spec, kind) is not None for kind in ATTENTION_KINDS)
    # arg_utils.py: prefix caching is on by default for hybrid models since 0.28 (PR #50991), off for attention-free
    # models; before 0.28 off for every hybrid (`default_prefix_caching = ... and not model_config.is_hybrid`)
    prefix = s.take("enable_prefix_caching", hybrid and _since(version, "prefix_default_hybrid") or (
        bool(recurrent) and not hybrid and not _since(version, "attention_free_prefix_off")
        and _since(version, "mamba_prefix_caching")))
    mode, refusal = _mode(s, prefix, arch, recurrent, k, version, log)
    # in vLLM's order: ModelConfig (config/model.py __post_init__: the architecture config, the registry, then the
    # length), CacheConfig's validation, the config hooks, VllmConfig's verify_with_parallel_config (the heads, then
    # pipeline parallelism), then loading the model (a removed architecture through the Transformers backend, a class
    # that does not build) and its layers' specs (drafts on Mamba layers)
    batched, max_num_seqs = _batch_limits(s, inputs, version)
    refusal = (_config_error(spec, version) or _length_error(s, spec) or _mamba_dtype_error(s, version)
               or _draft_method_error(spec, k, version) or _drafter_error(spec, k, version)
               or _scheduler_error(batched, max_num_seqs) or refusal
               or _heads_error(spec, inputs.layout.tp)
               or _pp_error(spec, inputs.layout, version)
               or _build_error(spec, version, inputs.layout.pp, inputs.layout.tp))
    refusal = refusal or _prefix_assert(arch, s.values.get("enable_prefix_caching", prefix), version)
    if recurrent and k and not _since(version, "mamba_drafts") and arch != "Qwen3NextForCausalLM":
        refusal = refusal or "NotImplementedError: Mamba with speculative decoding is not supported yet."
    uses_mla = spec.mla is not None
    fp8_mla = uses_mla and kv_mode.startswith("fp8")
    block_size = s.take("block_size", FLASHMLA_BLOCK if fp8_mla else DEFAULT_BLOCK_SIZE if _since(version, "block_size_64")
                        else DEFAULT_BLOCK_SIZE_BEFORE_034)
    kernel_block = s.take("kernel_block_size", FLASHMLA_BLOCK if fp8_mla else DEFAULT_KERNEL_BLOCK_SIZE)
    gdn_backend = s.take("gdn_prefill_backend", *_gdn_backend(spec, inputs.gpu_name)) if "gdn" in recurrent else None
    draft_apart = _draft_apart(s, spec, k, inputs.gpu_name, version)
    if s.given.get("gdn_prefill_backend", GDN_PREFILL_BACKENDS[0]) not in GDN_PREFILL_BACKENDS:
        raise LayoutError("gdn_prefill_backend", f"one of {', '.join(GDN_PREFILL_BACKENDS)} (the backends mcache models), "
                                                 f"got {s.given['gdn_prefill_backend']!r}")
    checkpoints = (mode == "align" and gdn_backend == "flashinfer" and recurrent == ["gdn"]
                   and _since(version, "gdn_checkpoints"))
    refusal = refusal or _scheduled_tokens(spec, k, batched, max_num_seqs, version, log)
    refusal = refusal or _drafter_layers_error(spec, k, version)  # the drafter is built after the model
    active = _active_seqs(spec, k, batched, max_num_seqs, version, log)
    eager = s.take("enforce_eager", False)
    kv_memory = within_gpu("kv_cache_memory_bytes", s.take("kv_cache_memory_bytes", None), inputs.gpu_bytes)
    extensible = extensible_kv_cache(version, kv_memory is not None)
    util = s.take("gpu_memory_utilization", default_utilization(version, extensible))
    non_kv = s.non_kv_memory("vLLM profiles its activation peak, non-torch memory and CUDA graphs at start-up")
    if not 0 < util <= 1:
        raise LayoutError("gpu_memory_utilization", f"a fraction in (0, 1], got {util}")

    model = whole_model(spec, inputs.layout, dtypes)
    if refusal is not None and not _lays_out(model):  # vLLM refused in its config, before it laid out a layer
        rule = BlockRule(block_size, mode, k, (), batched, 0, block_size, block_size)
        return Setup(dtypes, max_len, asked_context(inputs, max_len), k, rule, 0, 0, 0, max_num_seqs, eager, util,
                     kv_memory, non_kv, log, refusal, version, extensible)
    ssm_flag = s.values["mamba_ssm_cache_dtype"]
    if "kda" in recurrent and ssm_flag not in KDA_SSM_DTYPES and (arch in KDA_SSM_DTYPE_HOOK and _since(
            version, "kda_ssm_dtype") or arch == GLM5_NEXT and _since(version, "dsa_packed_groups")):
        refusal = refusal or f"KDA recurrent state supports only auto, float32, and bfloat16; got {ssm_flag}"
    page = _state_page(model, dtypes, arch, k, ssm_flag, True, version)  # what the layers' MambaSpecs hold
    hook_page = _state_page(model, dtypes, arch, k, ssm_flag, False, version)  # what the model class's hook says
    attn_kind = next((kind for kind in ATTENTION_KINDS if kind in model.kinds), None)
    attn_tok = _token_bytes(model, attn_kind, kv_mode, dtypes) if attn_kind else 0
    align_tok, dsa_rows = attn_tok, 1  # what the hybrid alignment takes a token of attention to hold
    if spec.dsa_indexer is not None and sm_major(inputs.gpu_name) == 12:
        # FLASHINFER_MLA_SPARSE_SM120 (0.30 - 0.34): MLAAttention rewrites the cache dtype to fp8_ds_mla as the layers
        # are built, so the alignment (platforms/interface.py _align_hybrid_block_size, after load_model) counts the
        # latent at a byte a value; the layers' pages hold its rows, scales and all
        dtypes = replace(dtypes, kv="float8_e4m3fn")
        s.values["kv_cache_dtype"], s.sources["kv_cache_dtype"] = DS_MLA, "default"  # the line below says why
        log.append(f"Using {DS_MLA} KV cache format for FLASHINFER_MLA_SPARSE_SM120 backend.")
        align_tok, attn_tok = _token_bytes(model, attn_kind, "fp8", dtypes), _ds_mla_row(spec, version)
        dsa_rows = DSA_SM12_ROWS
    drafter_refusal, drafter_scale = _drafter_pages(model, k, kv_mode, dtypes, attn_tok, page, version)
    refusal = refusal or drafter_refusal
    block, padded = block_size, page
    mamba_block = block_size  # 'all' mode without attention: a state per cache block (MambaModelConfig)
    block_refusal = None
    if page and attn_tok:
        align = max(kernel_block, block_size, _mla_alignment(version) if uses_mla else 1)
        if spec.dsa_indexer is not None:  # the indexer's blocks of index_kpool x 32 tokens (`DSA_INDEXER_BLOCKS`)
            align = lcm(align, spec.dsa_indexer.kpool * _dsa_indexer_blocks(inputs.gpu_name))
        if checkpoints:  # FlashInfer's GDN prefill checkpoints land on block boundaries
            align = lcm(align, GDN_CHECKPOINT_ALIGNMENT)
        if mode == "all":  # aligned to the Mamba2 scan chunk (config/model.py get_mamba_chunk_size)
            align = lcm(_chunk_size(spec), align)
        block, padded = _align(hook_page, align_tok, block_size, align, log)
        mamba_block = block
        align_error = _align_block_error(block, batched, mode, version)
        if _since(version, "align_block_after_sizing"):
            block_refusal = align_error
        else:  # 0.17: while the config is made
            refusal = refusal or align_error
        if padded == hook_page:  # no padding set (page_size_padded None): each layer keeps its own page
            padded = page
        refusal = refusal or _padding_error(page, padded)
    elif page:
        block = max_len  # attention-free: one state page per block (mamba_block_size = max_model_len)
        if mode == "all" and not _since(version, "mamba_cache_mode"):
            mamba_block = max_len  # 0.11.1 - 0.14: config.py keeps mamba_block_size = max_model_len (one state)
        elif mode != "none" and not _since(version, "block_size_default"):
            # 0.15 - 0.17: MambaModelConfig sets mamba_block_size = cache_config.block_size, still None before the
            # platform sets it, and the Mamba spec divides by it (the 0.15 and 0.17 tables; 0.18.0 sizes it)
            refusal = refusal or "TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'"
    state_drafts = k if _since(version, "all_mode_drafts" if mode == "all" else "mamba_cache_mode") else 0
    in_flight = _in_flight(spec, k, batched, inputs.layout.pp, version, s.take("async_scheduling", True))
    flashkda = _flashkda(spec, dtypes, inputs.gpu_name)
    ring = _dsa_ring(spec, k, version)
    if ring and block % ring:  # models/glm5next/common/attention.py Glm5NextTailCache
        refusal = refusal or f"AssertionError: assert cache_config.block_size % ring == 0 ({block} % {ring})"
    rule = BlockRule(block, mode, k, _checkpoint_kinds(recurrent, checkpoints, arch, version, flashkda), in_flight,
                     state_drafts,
                     mamba_block, block_size, drafter_scale)
    return Setup(dtypes, max_len, asked_context(inputs, max_len), k, rule, page, padded, attn_tok, max_num_seqs, eager, util,
                 kv_memory, non_kv, log, refusal, version, extensible, active, block_refusal, draft_apart, ring, dsa_rows)


def _align_block_error(block: int, batched: int, mode: str, version: str) -> str | None:
    """config/vllm.py (0.17 - 0.26, `align_block_check`): align mode asserts the attention block fits one step's
    tokens; 0.17 while the config is made, which pydantic reports, 0.18 on in validate_block_size."""
    if mode != "align" or block <= batched or not _since(version, "align_block_check") or \
            _since(version, "align_block_unchecked"):
        return None
    said = "AssertionError: " if _since(version, "align_block_after_sizing") else \
        "ValidationError: 1 validation error for VllmConfig: Assertion failed, "
    return f"{said}In Mamba cache align mode, block_size ({block}) must be <= max_num_batched_tokens ({batched})."


def _max_len(s: Settings, spec, log: list[str]) -> int:
    """The max model length: given, else the config's (config/model.py _get_and_verify_max_len), else 2048 with
    vLLM's warning."""
    if spec.max_model_len is None and "max_model_len" not in s.given:
        log.append("The model's config.json does not contain any of the keys to determine the original maximum length "
                   f"of the model. Assuming the model's maximum length is {NO_LENGTH_KEY_LEN}.")
    return s.take("max_model_len", spec.max_model_len or NO_LENGTH_KEY_LEN)


def architecture_error(spec, version: str) -> str | None:
    """Why vLLM at `version` cannot load the model, in its words (None: it can): not registered yet, removed since,
    or a class that does not build at that release; or, for a removed hybrid the Transformers backend starts with
    every layer a full-attention one (`_as_attention`: it is sized so, as the golden tables show), that its
    recurrent layers keep no state there, so it is not served."""
    if _as_attention(spec, version):
        native = (f"registered from vLLM {ADDED_ARCHS[spec.architecture]}" if _before_added(spec, version) else
                  f"served natively until vLLM {REMOVED_ARCHS[spec.architecture]}")
        return (f"{spec.architecture} was {native}; vLLM {version} starts it through the Transformers backend, which "
                "gives every layer a full-attention KV cache (models/transformers/base.py create_attention_instances) "
                "and its recurrent layers no state.")
    return _config_error(spec, version) or _build_error(spec, version)


def _gdn_backend(spec, gpu_name: str | None) -> tuple[str, str]:
    """(backend, source) of vLLM's `auto` GDN prefill backend on the GPU (model_executor/layers/mamba/gdn/
    qwen_gdn_linear_attn.py `_resolve_gdn_prefill_backend`, v0.33.0): FlashInfer on Hopper (SM 9.0), and on
    Blackwell (SM 10.x, 12.x) when the key head dim is 128 (with a CUDA 13 runtime, assumed); Triton on other CUDA
    GPUs and on AMD. A GPU outside the catalogue is taken for a Hopper one, and the source says so. Before 0.33 only
    the FlashInfer checkpoints' block alignment depends on it, and that rule is gated on its own."""
    cap = capability(gpu_name)
    if cap == "unknown":
        return DEFAULT_GDN_PREFILL_BACKEND, "assumed: a Hopper GPU (the GPU is not in the catalogue)"
    blackwell = cap is not None and cap[0] in (10, 12) and spec.gdn.k_head_dim == 128
    if cap == (9, 0) or blackwell:
        return "flashinfer", "assumed: a CUDA 13 runtime (Blackwell)" if blackwell else "default"
    return "triton", "default"


def _dsa_scope(inputs: EngineInputs, kv_mode: str, dtypes: CacheDtypes) -> None:
    """A DSA model (GLM-5.3-Flash: MLA and KDA) as mcache sizes it under vLLM: a bf16 model with the KV modes its sparse
    MLA backend takes (`DSA_KV_MODES`) on one CUDA pipeline stage of SM 9 or SM 12 without attention DP (the layouts
    vLLM's own code sized in the golden tables: the H200's and the RTX PRO 6000's); the rest is refused in one line."""
    why = None
    spec = inputs.spec
    major = sm_major(inputs.gpu_name) or 0
    modes = DSA_KV_MODES[12] if major == 12 else DSA_KV_MODES[9]
    if recurrent_kinds(spec) != ["kda"] or spec.mla is None or spec.attention or spec.sliding_attention:
        why = "its DSA indexer beside other layers than MLA and KDA alone (GLM-5.3-Flash's grouping is what mcache models)"
    elif spec.drafter is not None:
        why = "a drafter of its own (its layers' KV groups)"
    elif kv_mode not in modes or dtypes.model != "bfloat16":
        why = (f"a {kv_mode} KV cache (its sparse MLA backend takes {', '.join(modes)})" if kv_mode not in modes else
               f"a {dtypes.model} model (its sparse MLA backends take bf16 alone)")
    elif major >= DSA_FP8_FROM_SM and major != 12:
        why = (f"SM {major} (its sparse MLA backends' layouts there, fp8 by default from 0.33: model_executor/models/"
               "config.py Glm5NextModelConfig)")
    elif inputs.layout.pp > 1:
        # models/glm5next (0.30 - 0.34): "PP is gated off for GLM-5.3-Flash (no make_empty_intermediate_tensors)", which
        # the runner's dummy run asks a later stage for: the config passes, the profile run does not
        why = ("pipeline parallelism (its model has no make_empty_intermediate_tensors, which a later stage's first "
               "forward pass needs: 'PP is gated off', models/glm5next)")
    elif inputs.layout.attention_dp:
        why = "attention DP"
    elif vendor(inputs.gpu_name) == AMD:
        why = "ROCm (models/glm5next/amd)"
    if why:
        model = inputs.spec.architecture or inputs.spec.name
        raise LayoutError("engine", f"a DSA model whose caches mcache sizes as vLLM does: how vLLM sizes {model} with "
                                    f"{why} is not modelled yet (`mcache size` without --engine sizes it in mcache's "
                                    "own model)")


def _ds_mla_row(spec, version: str) -> int:
    """Bytes of a token's fp8_ds_mla row (the latent in E4M3 with its scales and the rope part in bf16): 656; from 0.34
    FLASHINFER_MLA_SPARSE_SM120's NoPE form of a 512 latent, 528 (SINCE "ds_mla_nope_row")."""
    p = spec.mla
    nope = (p.kv_lora_rank, p.qk_rope_head_dim) == (512, 0) and _since(version, "ds_mla_nope_row")
    return DS_MLA_NOPE_ROW if nope else DS_MLA_ROW


def _dsa_indexer_blocks(gpu_name: str | None) -> int:
    """Tokens of an indexer key block over index_kpool (`DSA_INDEXER_BLOCKS`): 64 on SM 12, else 32."""
    return DSA_INDEXER_BLOCKS_SM12 if sm_major(gpu_name) == 12 else DSA_INDEXER_BLOCKS


def _dsa_ring(spec, k: int, version: str) -> int:
    """Tokens of a DSA indexer's tail ring (0 without one): index_kpool at 0.30; from 0.31 index_kpool x
    next_pow2(cdiv(index_kpool + k, index_kpool)), room for the drafts (models/glm5next/common/attention.py)."""
    p = spec.dsa_indexer
    if p is None:
        return 0
    if not _since(version, "dsa_tail_ring"):
        return p.kpool
    return p.kpool * (1 << (cdiv(p.kpool + k, p.kpool) - 1).bit_length())


def _flashkda(spec, dtypes: CacheDtypes, gpu_name: str | None) -> bool:
    """Whether GLM-5.3-Flash's KDA prefills with FlashKDA (models/glm5next/common/kda.py, 0.32 on): a CUDA card of
    `FLASHKDA_CAPABILITIES`, a bf16 model, KDA heads of 128 (a GPU outside the catalogue: assumed such a card)."""
    return (cuda_major_in(gpu_name, FLASHKDA_CAPABILITIES) and dtypes.model == "bfloat16" and spec.kda is not None
            and spec.kda.head_dim == 128)


def _draft_apart(s: Settings, spec, k: int, gpu_name: str | None, version: str) -> bool:
    """Whether the MTP drafter's attention layers keep a spec of their own (SINCE "block_stride_specs" to
    "no_block_stride_specs"): the model's backend (--attention-backend, else the platform's) and the drafter's (its
    speculative config's attention_backend, else the platform's: it never inherits the model's) differ in whether
    their KV layout is block-first (`ATTENTION_BACKENDS`, `AUTO_BLOCK_STRIDE`; a GPU outside the catalogue: the same
    as the other's, assumed). A backend given is checked whatever the release."""
    backends = {name: s.take(name, None) for name in ("attention_backend", "draft_attention_backend")}
    for name, backend in backends.items():  # vLLM takes the enum's names in any case (--attention-backend flashinfer)
        if backend is not None and str(backend).upper() not in ATTENTION_BACKENDS:
            raise LayoutError(name, f"one of {', '.join(ATTENTION_BACKENDS)} (the backends mcache knows), got "
                                    f"{backend!r}")
        backends[name] = None if backend is None else str(backend).upper()
    if not k or not mtp_attention_layers(spec) or spec.drafter is not None:
        return False
    if not _since(version, "block_stride_specs") or _since(version, "no_block_stride_specs"):
        return False
    auto = AUTO_BLOCK_STRIDE.get(vendor(gpu_name))
    model, draft = (auto if backend is None else ATTENTION_BACKENDS[backend] for backend in backends.values())
    return None not in (model, draft) and model != draft


def _since(version: str, rule: str) -> bool:
    """Whether the changed rule `rule` (a key of SINCE) holds at the modelled `version`."""
    return at_least(version, SINCE[rule])


def _config_error(spec, version: str) -> str | None:
    """What ModelConfig refuses before the length check (config/model.py __post_init__, in its order): a config
    whose model type the release cannot load (`CONFIG_CLASS_SINCE`), an attention-free config the release's
    ModelArchConfigConvertor cannot read (NO_HEADS_RELEASES), then the registry
    (model_executor/models/registry.py `inspect_model_cls`): an architecture registered after `version`
    (`ADDED_ARCHS`) or by no modelled release (`UNREGISTERED_ARCHS`), or one removed since (`REMOVED_ARCHS`) that the
    release does not hand to the Transformers backend (`_removed_by_registry`); None for the others."""
    arch = spec.architecture
    # transformers_utils/config.py get_config (0.10.2 - 0.34.0): a config without a model type goes to AutoConfig,
    # which refuses it (a mamba_ssm library config; its transformers-format conversion loads)
    if (unrecognized := unrecognized_config(spec)) is not None:
        return f"ValidationError: 1 validation error for ModelConfig: Value error, {unrecognized}"
    model_type, loaded = CONFIG_CLASS_SINCE.get(arch, (None, None))
    if model_type is not None and not at_least(version, loaded):
        return (f"ValidationError: 1 validation error for ModelConfig: Value error, {unknown_model_type(model_type)}. "
                f"(vLLM {version}: neither its transformers nor its own config classes know `{model_type}` before vLLM "
                f"{loaded}.)")
    if at_least(version, NO_HEADS_RELEASES[0]) and not at_least(version, NO_HEADS_RELEASES[1]) and \
            arch not in OWN_CONVERTOR_ARCHS and not any(set(kinds) & set(ATTENTION_KINDS) for kinds in layer_kinds(spec)):
        config = f"'{arch.removesuffix('ForCausalLM')}Config' object" if arch else "the model's config (named by no architecture)"
        return f"AttributeError: {config} has no attribute 'num_attention_heads'"
    if arch in UNREGISTERED_ARCHS:
        return (f"Model architectures ['{arch}'] are not supported for now (vLLM {version}; no release from "
                f"{VERSIONS[0]} to {VERSIONS[-1]} registers it).")
    added = ADDED_ARCHS.get(arch)
    if added is not None and not at_least(version, added) and not _before_added(spec, version):
        return f"Model architectures ['{arch}'] are not supported for now (vLLM {version}; registered from {added} on)."
    if _removed(spec, version) and _removed_by_registry(spec, version):
        return (f"Model architecture {arch} was supported in vLLM until v{REMOVED_ARCHS[arch]}, and is not supported "
                "anymore. Please use an older version of vLLM if you want to use this model architecture.")
    return None


def _lays_out(ctx: RankContext) -> bool:
    """Whether every kind of `ctx` splits over its TP ranks (a `LayoutError` is bad input unless the engine refused
    the layout first)."""
    try:
        for kind in ctx.kinds:
            ctx.states(kind)
    except LayoutError:
        return False
    return True


def _heads_error(spec, tp: int) -> str | None:
    """config/model.py verify_with_parallel_config (v0.34.0 line 1577; the same check and words at v0.10.2, the extra
    0.10.2 and 0.34.0 tables: Falcon-H1-3B's 10 heads at TP 4): the config's attention heads (num_attention_heads:
    the heads of its softmax, MLA or lightning attention; 0 without any) must divide by the TP size, checked in
    VllmConfig (a pydantic dataclass: ValidationError) before any layer is built; None when they do."""
    block = next((getattr(spec, kind) for kind in (*ATTENTION_KINDS, "lightning") if getattr(spec, kind) is not None),
                 None)
    heads = block.num_heads if block is not None else 0
    if heads % tp == 0:
        return None
    return f"ValidationError: Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})."


def _pp_error(spec, layout, version: str) -> str | None:
    """config/model.py verify_with_parallel_config: pipeline parallelism for a natively served class without
    SupportsPP (`NO_PP_ARCHS`; a removed architecture is the registry's or the Transformers backend's); None when it
    is allowed."""
    if layout.pp == 1 or spec.architecture not in NO_PP_ARCHS or _removed(spec, version):
        return None
    return ("NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement "
            "the `SupportsPP` interface.")


def _prefix_assert(arch: str, prefix: bool, version: str) -> str | None:
    """The assertion a model class that refuses prefix caching raises while it is built (`NO_PREFIX_ARCHS`), with
    prefix caching still on after the config hooks; None otherwise."""
    since, fixed = NO_PREFIX_ARCHS.get(arch, (None, None))
    if not prefix or since is None or not at_least(version, since) or at_least(version, fixed):
        return None
    return f"AssertionError: {arch.removesuffix('ForCausalLM')} currently does not support prefix caching"


def _removed(spec, version: str) -> bool:
    """Whether `version` is past the last release that served the architecture natively (`REMOVED_ARCHS`)."""
    last = REMOVED_ARCHS.get(spec.architecture)
    return last is not None and at_least(version, _next_minor(last))


def _removed_by_registry(spec, version: str) -> bool:
    """registry.py `_raise_for_unsupported`: a removed architecture is refused by name unless the release hands its
    transformers class to the Transformers backend (`_try_resolve_transformers`: `TRANSFORMERS_BACKEND_SINCE`; the
    0.24 - 0.29 tables: Bamba refused, MiniMax served; the 0.33 table: Plamo2 refused)."""
    since = TRANSFORMERS_BACKEND_SINCE.get(spec.architecture)
    return since is None or not at_least(version, since)


def _before_added(spec, version: str) -> bool:
    """Whether vLLM at `version` serves a hybrid it does not register yet through the Transformers backend
    (`TRANSFORMERS_BEFORE_ADDED`)."""
    first = TRANSFORMERS_BEFORE_ADDED.get(spec.architecture)
    return first is not None and at_least(version, first) and not at_least(version, ADDED_ARCHS[spec.architecture])


def _as_attention(spec, version: str) -> bool:
    """Whether vLLM at `version` starts a hybrid through the Transformers backend before that backend checked its
    layers (`TRANSFORMERS_LAYER_CHECK_SINCE`), each layer then a full-attention layer: a removed one, or one not
    registered yet (`_before_added`)."""
    removed = _removed(spec, version) and not _removed_by_registry(spec, version)
    return (removed or _before_added(spec, version)) and spec.attention is not None and \
        not at_least(version, TRANSFORMERS_LAYER_CHECK_SINCE)


def _served_spec(spec, version: str):
    """The model vLLM sizes at `version`: a removed hybrid the Transformers backend starts before it checked its
    layers (`_as_attention`) is every layer an attention layer of the config's attention geometry
    (models/transformers/base.py create_attention_instances); a class that builds its attention without the window
    (`WINDOWLESS_ARCHS`), its windowed layers at full length; any other, `spec` itself."""
    if spec.architecture in WINDOWLESS_ARCHS and spec.sliding_attention is not None:
        types = ["+".join("attention" if kind == "sliding_attention" else kind for kind in kinds)
                 for kinds in layer_kinds(spec)]
        return replace(spec, layers=replace(spec.layers, pattern=None, legend=None, types=types, repeat=None),
                       attention=spec.attention or replace(spec.sliding_attention, sliding_window=None),
                       sliding_attention=None)
    if not _as_attention(spec, version):
        return spec
    recurrent = recurrent_kinds(spec)
    types = ["+".join("attention" if kind in recurrent else kind for kind in kinds) for kinds in layer_kinds(spec)]
    return replace(spec, layers=replace(spec.layers, pattern=None, legend=None, types=types, repeat=None),
                   **dict.fromkeys(recurrent))


def _build_error(spec, version: str, pp: int = 1, tp: int = 1) -> str | None:
    """What stops vLLM while it builds the model: a removed architecture the Transformers backend takes
    (models/transformers/base.py refuses its first layer that is not attention, from TRANSFORMERS_LAYER_CHECK_SINCE;
    before, it builds: `_served_spec`), or a model class that does not build at `version` (BROKEN_ARCHS; with `pp`
    stages, BROKEN_PP_ARCHS too; the first Nemotron-H class's layers, `NEMOTRON_H_LAYERS_UNTIL`; what its Mamba2 mixers
    assert over `tp` ranks, `_mixer_error`); None for the others."""
    if tp > 1 and _before_added(spec, version):
        return (f"ValueError: <class '{TRANSFORMERS_NO_TP[spec.architecture]}'> does not support tensor parallel. See "
                "https://docs.vllm.ai/en/latest/models/supported_models.html#writing-custom-models for instructions on "
                "how to add support yourself.")
    mixer = _mixer_error(spec, version, tp)
    first_nemotron_h = spec.architecture == "NemotronHForCausalLM" and not at_least(version, NEMOTRON_H_LAYERS_UNTIL)
    if first_nemotron_h and (found := nemotron_h_layers_error(spec, mixer)) is not None:
        return f"{found[0]}: {found[1]}"
    if mixer is not None:
        return f"AssertionError: {mixer}"
    if (spec.architecture, version) in BROKEN_ARCHS:
        return BROKEN_ARCHS[spec.architecture, version]
    if pp > 1 and (spec.architecture, version) in BROKEN_PP_ARCHS:
        return BROKEN_PP_ARCHS[spec.architecture, version]
    unit, words = BROKEN_QUANT_ARCHS.get((spec.architecture, version), (None, None))
    if unit is not None and spec.quantization is not None and unit in spec.quantization.unquantized:
        return words
    if not _removed(spec, version) or _removed_by_registry(spec, version) or \
            not at_least(version, TRANSFORMERS_LAYER_CHECK_SINCE):
        return None
    first = next(i for i, kinds in enumerate(layer_kinds(spec)) if not set(kinds) & set(ATTENTION_KINDS))
    return (f"Layer {first} does not dispatch through the Transformers attention interface and vLLM has no other way "
            f"to handle it. ({spec.architecture} was served natively until vLLM {REMOVED_ARCHS[spec.architecture]}.)")


def _mixer_error(spec, version: str, tp: int) -> str | None:
    """What the first Mamba2 mixer asserts over `tp` ranks, in MambaMixer2.__init__'s order (None: nothing): groups TP
    neither splits nor meets as one (MAMBA2_GROUPS_ERROR), then a quantized checkpoint's TP (MAMBA2_QUANT_TP_ERRORS)."""
    if mamba2_groups_unsplit(spec, tp):
        return MAMBA2_GROUPS_ERROR.format("num_groups" if _since(version, "mamba2_groups_words") else "num_heads")
    by_groups = _since(version, "mamba2_quant_tp_groups")
    if _since(version, "mamba2_quant_tp_free") or not mamba2_quantized_tp_refused(spec, tp, any_tp=not by_groups):
        return None
    return MAMBA2_QUANT_TP_ERRORS[by_groups]


def _length_error(s: Settings, spec) -> str | None:
    """config/model.py _get_and_verify_max_len: a given max_model_len above the length the config allows stops
    vLLM before it sizes anything (VLLM_ALLOW_LONG_MAX_MODEL_LEN unset); None when it is allowed."""
    given, allowed = s.given.get("max_model_len"), spec.max_model_len
    if given is None or allowed is None or given <= allowed:
        return None
    return (f"User-specified max_model_len ({given}) is greater than the derived max_model_len ({float(allowed)} in "
            "model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position "
            "encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute "
            "position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.")


def _mamba_dtype_error(s: Settings, version: str) -> str | None:
    """config/cache.py CacheConfig: a Mamba state dtype the release's MambaDType does not list (None: allowed)."""
    allowed = [name for name, since in MAMBA_DTYPES_SINCE.items() if at_least(version, since)]
    for flag in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
        value = s.values.get(flag, "auto")
        if value in MAMBA_DTYPES_SINCE and value not in allowed:
            return (f"ValidationError: 1 validation error for CacheConfig {flag}: Input should be "
                    f"{', '.join(repr(a) for a in allowed[:-1])} or {allowed[-1]!r} (vLLM {version})")
    return None


def _draft_method_error(spec, k: int, version: str) -> str | None:
    """config/__init__.py SpeculativeConfig (v0.10.2): MTP drafts name the model's own method, and Qwen3-Next's
    ('qwen3_next_mtp') is the only hybrid's, so drafts with another hybrid's MTP layers are refused before the model
    is built (the 0.10.2 table: Nemotron-3-Super); 'mtp' from v0.11.0 (SINCE "mtp_method"), which 0.11.0 still takes
    for a draft model with another hybrid's MTP layers (SINCE "mtp_any_model"). None otherwise."""
    if not k or spec.mtp is None or spec.architecture == "Qwen3NextForCausalLM" or _since(version, "mtp_any_model"):
        return None
    if _since(version, "mtp_method"):
        return ("NotImplementedError: Speculative decoding with draft model is not supported yet. Please consider using "
                "other speculative decoding methods such as ngram, medusa, eagle, or mtp.")
    return ("ValidationError: 1 validation error for SpeculativeConfig method: Input should be 'ngram', 'eagle', "
            "'eagle3', 'medusa', 'mlp_speculator', 'draft_model', 'deepseek_mtp', 'ernie_mtp' or 'qwen3_next_mtp' "
            f"(vLLM {version} has no MTP method for {spec.architecture})")


def _drafter_error(spec, k: int, version: str) -> str | None:
    """What vLLM says of the spec's DFlash drafter while it makes its config (None: it takes it): no `dflash` method
    before 0.20 (config/speculative.py SpeculativeConfig), no DFlash2 drafter class before 0.28 (models/registry.py)."""
    d = spec.drafter
    if d is None or not k:
        return None
    if not _since(version, "dflash"):
        return ("ValidationError: 1 validation error for SpeculativeConfig method: Input should be one of the release's "
                f"methods (vLLM {version} has no 'dflash' method; it has from 0.20.0)")
    if d.architecture == "DFlash2DraftModel" and not _since(version, "dflash2"):
        return (f"ValueError: Model architectures ['DFlash2DraftModel'] are not supported for now. (vLLM {version} "
                "registers the DFlash2 drafter from 0.28.0)")
    return None


def _drafter_layers_error(spec, k: int, version: str) -> str | None:
    """What vLLM says of the DFlash drafter's layers while it builds them, after its config's checks (None: it builds
    them): from 0.25 (qwen3_dflash.py _resolve_layer_attention) windowed layers beside full ones at 0.25 and a windowed
    layer without a window (transformers' Qwen3Config drops `sliding_window` unless `use_sliding_window`)."""
    d = spec.drafter
    if d is None or not k or not _since(version, "dflash_windows"):
        return None
    sliding = sum(t == "sliding_attention" for t in d.layer_types)
    if not _since(version, "dflash_mixed_windows") and 0 < sliding < d.num_layers:
        return ("NotImplementedError: DFlash does not yet support mixed sliding/full attention via layer_types; see "
                "https://github.com/vllm-project/vllm/issues/40898.")
    if d.sliding_window is None and any(drafter_sizing.windowed(d)):
        return ("ValueError: DFlash sliding attention requires a window size configured in dflash_config.swa_window_size "
                "or the top-level sliding_window.")
    return None


def _drafter_pages(model: RankContext, k: int, kv_mode: str, dtypes: CacheDtypes, attn_tok: int, page: int,
                   version: str) -> tuple[str | None, int]:
    """(what vLLM says of a DFlash drafter whose KV a token differs from the model's attention's, None where it goes
    on; how many times the tokens a block of the drafter's own specs holds). Its layers keep KV in the cache dtype
    from 0.22 (qwen3_dflash.py passes them the cache config), in the model dtype before. v1/core/kv_cache_utils.py
    unify_kv_cache_spec_page_size brings every spec to the largest page by multiplying its block size: a drafter of
    narrower KV (at a TP that leaves the model one KV head of a larger dim) takes blocks of that many times the tokens;
    a wider one (fp8 KV before 0.22) makes the others follow it, which a state page (`page`) cannot before 0.26 (its
    assertion; from 0.26 the state page is padded to it, SINCE "unify_pads_mamba"; mcache does not model the model's
    attention blocks following it), and a page that does not divide the largest is refused."""
    if not drafter_sizing.drafts_with(model.spec, k):
        return None, 1
    shapes = drafter_sizing.states(model, None)
    dtype = dtypes.kv if _since(version, "dflash_cache_dtype") else dtypes.model
    if dtype == dtypes.kv:  # the cache's mode, with the drafter's heads
        own = _kv_data_bytes(shapes, dtype, kv_mode) + _scale_bytes(shapes[0].shape[shapes[0].axes.index("Hkv")], kv_mode)
    else:
        own = shapes_bytes(shapes, dtype)
    if not attn_tok:
        raise LayoutError("draft_model", "a model with attention layers: mcache's vLLM profile aligns a drafter's KV "
                                         "pages to the model's attention pages")
    if max(own, attn_tok) % min(own, attn_tok):
        return ("NotImplementedError: The page size of the layer is not divisible by the maximum page size. Cannot "
                f"unify by adjusting block_size. (the drafter's KV takes {own} B a token, the model's {attn_tok} B)"), 1
    if own > attn_tok and (not page or _since(version, "unify_pads_mamba")):
        raise LayoutError("draft_model", f"a drafter whose KV a token ({own} B) is at most the model's attention's "
                                         f"({attn_tok} B) where the model keeps no state or at vLLM 0.26 and later: "
                                         "mcache's vLLM profile does not scale the model's attention blocks")
    if own > attn_tok:
        return ("AssertionError: assert new_spec.page_size_bytes == max_page_size (v1/core/kv_cache_utils.py "
                f"unify_kv_cache_spec_page_size: the drafter's KV takes {own} B a token, the model's {attn_tok} B, and a "
                "state page cannot grow with the blocks)"), 1
    return None, attn_tok // own


def _scheduled_tokens(spec, k: int, batched: int, max_num_seqs: int, version: str, log: list[str]) -> str | None:
    """config/vllm.py _set_max_num_scheduled_tokens (from 0.20) with `k` drafts. 0.20 - 0.27 take a DFlash drafter's
    parallel-drafting queries, `k - 1` scheduler slots a request (SpeculativeConfig max_num_new_slots_for_drafting;
    none for MTP or n-gram drafts), off every step's tokens for each of max_num_seqs requests; from 0.28 a step keeps
    max_num_batched_tokens, which must exceed a DFlash drafter's slots a request (`k` in 0.28 - 0.32; 0.33 on, the
    lookahead tokens, `k + 1`). A step left fewer than 8,192 tokens is logged as a warning, whatever drafts (the run
    goes on); the refusal is vLLM's words, or None."""
    if not k or not _since(version, "dflash"):
        return None
    dflash = drafter_sizing.drafts_with(spec, k)
    if _since(version, "dflash_k_slots"):
        left, slots, tail = batched, k + 1 if _since(version, "dflash_no_slots") else k, "."
        if dflash and batched <= slots:
            got = f"num_lookahead_tokens={slots}" if _since(version, "dflash_no_slots") else f"scheduled_token_delta={slots}"
            return ("ValidationError: VllmConfig does not have enough slots to schedule a token and support the "
                    f"speculative decoding settings. Got max_num_batched_tokens={batched} and {got}.")
    else:
        left, tail = batched - (k - 1 if dflash else 0) * max_num_seqs, " or max_num_seqs."
        if left <= 0:
            return (f"ValidationError: max_num_scheduled_tokens is set to {left} based on the speculative decoding "
                    "settings, which does not allow any tokens to be scheduled. Increase max_num_batched_tokens to "
                    f"accommodate the additional draft token slots, or decrease num_speculative_tokens{tail}")
    if left < 8192:
        log.append(f"max_num_scheduled_tokens is set to {left} based on the speculative decoding settings. This may "
                   "lead to suboptimal performance. Consider increasing max_num_batched_tokens to accommodate the "
                   f"additional draft token slots, or decrease num_speculative_tokens{tail}")
    return None


def _next_minor(version: str) -> str:
    """The first release after `version`'s minor series (0.23.0 -> 0.24.0)."""
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


def _checkpoint_kinds(recurrent: list[str], gdn_checkpoints: bool, arch: str, version: str,
                      flashkda: bool = False) -> tuple[str, ...]:
    """The recurrent kinds whose MambaSpec takes one prefill-checkpoint block (counted in align mode): Mamba2 since
    0.32 (layers/mamba/mamba_mixer2.py get_kv_cache_spec), GDN when FlashInfer exports checkpoints (0.33,
    gdn/qwen_gdn_linear_attn.py), Kimi-K3's KDA with FlashKDA (0.29, models/kimi_k3/nvidia/kda.py), GLM-5.3-Flash's
    where it prefills with FlashKDA (`flashkda`, 0.32 on); Mamba1, short conv, lightning and Kimi-Linear's KDA never."""
    kinds = {"mamba2": _since(version, "no_all_mode"), "gdn": gdn_checkpoints,
             "kda": arch in FLASHKDA_ARCHS and _since(version, "kda_checkpoint")
             or arch == GLM5_NEXT and flashkda and _since(version, "dsa_packed_groups")}
    return tuple(kind for kind in recurrent if kinds.get(kind, False))


def _mla_alignment(version: str) -> int:
    """The block alignment of a hybrid MLA model: 128 since 0.27 (platforms/interface.py _align_hybrid_block_size);
    for 0.20 - 0.26 the MLA backend's smallest kernel block (16: the same function, before the 128 floor); 64 for
    0.11.1 - 0.19 (model_executor/models/config.py HybridAttentionMambaModelConfig); 16 in 0.10.2."""
    if _since(version, "mla_align_128"):
        return MLA_ALIGNMENT
    if _since(version, "v020") or not _since(version, "mamba_prefix_caching"):
        return DEFAULT_KERNEL_BLOCK_SIZE
    return MLA_ALIGNMENT_0111


def _chunk_size(spec) -> int:
    """config/model.py get_mamba_chunk_size: the config's mamba_chunk_size or chunk_size, else 2048 (Mamba1)."""
    kind = spec.mamba2 or spec.mamba1
    return getattr(kind, "chunk_size", None) or MAMBA1_CHUNK


def _active_seqs(spec, k: int, batched: int, max_num_seqs: int, version: str, log: list[str]) -> int:
    """The requests vLLM admits at once (max_num_active_seqs): from 0.33, a DFlash drafter's draft pass takes `k + 1`
    queries a request within max_num_batched_tokens (num_lookahead_tokens), so config/vllm.py
    _set_max_num_scheduled_tokens lowers it to the requests that fit and logs it; 0 (max_num_seqs) otherwise."""
    if not drafter_sizing.drafts_with(spec, k) or not _since(version, "dflash_no_slots"):
        return 0
    fits = batched // (k + 1)
    if fits >= max_num_seqs:
        return 0
    words = (f"fits at most {fits} requests" if _since(version, "v2_runner_only")
             else f"needs {k + 1} query tokens per request")
    log.append(f"The dflash draft pass {words} within max_num_batched_tokens={batched}. Overriding max_num_active_seqs "
               f"from {max_num_seqs} to {fits}.")
    return fits


def _in_flight(spec, k: int, batched: int, pp: int, version: str, async_on: bool) -> int:
    """The tokens a windowed layer keeps beside its window: one step's (`batched`), and from 0.26 one for each batch in
    flight (config/vllm.py max_concurrent_batches, read at 0.26.0 and 0.34.0): 2 with async scheduling, which the V1
    model runner turns off for n-gram lookups (no EAGLE-type method: the model has no MTP layers and no drafter), or the
    PP stages, one more on the V2 model runner, whose async scheduling n-gram drafts keep (0.34, which runs only it;
    earlier, a DFlash drafter mixing windowed and full layers or, from 0.28, a DFlash2 one): the 0.34 extra table's LFM3
    cases. With `--no-async-scheduling` (`async_on` False) the PP stages alone."""
    if not _since(version, "in_flight_tokens"):
        return batched
    if not async_on:
        return pp * batched
    d = spec.drafter if k else None
    v2 = _since(version, "v2_runner_only") or d is not None and (
        len(set(drafter_sizing.windowed(d))) > 1 or d.architecture == "DFlash2DraftModel" and _since(version, "dflash2"))
    if k and d is None and spec.mtp is None and not v2:  # n-gram drafts on the V1 runner: no async scheduling
        return pp * batched
    return (pp + 1 if v2 else 2 if pp == 1 else pp) * batched


def _batch_limits(s: Settings, inputs: EngineInputs, version: str) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs): given, else arg_utils.py get_batch_defaults by the GPU's memory (the
    160 GiB tier since 0.28); a default max_num_seqs is at most the batched tokens (`_scheduler_error` refuses a given
    one above them)."""
    gpu = inputs.gpu_bytes or 0
    big_gpu = gpu >= BIG_GPU_BYTES and "a100" not in (inputs.gpu_name or "").lower()
    huge_gpu = gpu >= HUGE_GPU_BYTES and _since(version, "prefix_default_hybrid")
    by_gpu = "default" if gpu else "assumed: no GPU given, so the defaults of one under 70 GiB"
    batched = s.take("max_num_batched_tokens", DEFAULT_MAX_NUM_BATCHED_TOKENS_HUGE_GPU if huge_gpu
                     else DEFAULT_MAX_NUM_BATCHED_TOKENS_BIG_GPU if big_gpu else DEFAULT_MAX_NUM_BATCHED_TOKENS, by_gpu)
    seqs = s.take("max_num_seqs", DEFAULT_MAX_NUM_SEQS_BIG_GPU if big_gpu or huge_gpu else DEFAULT_MAX_NUM_SEQS,
                  by_gpu)
    return batched, seqs if "max_num_seqs" in s.given else min(seqs, batched)


def _scheduler_error(batched: int, max_num_seqs: int) -> str | None:
    """config/scheduler.py SchedulerConfig._verify_args (0.10 - 0.34; config.py before the config package): a step
    schedules a token a sequence at least, so a given max_num_seqs above max_num_batched_tokens stops the engine while
    its config is made (a default max_num_seqs is lowered to the batched tokens instead: arg_utils.py)."""
    if max_num_seqs <= batched:
        return None
    return (f"ValueError: max_num_batched_tokens ({batched}) must be greater than or equal to max_num_seqs "
            f"({max_num_seqs}).")


def _pools(contexts: list[RankContext], weights: list[int], inputs: EngineInputs, setup: Setup) -> list[StagePool]:
    """Every stage's KV-cache groups and the memory its blocks get (`_plans`); the one-request check counts a
    stage's share and its memory (since 0.17.0), the whole model's group size and the smallest worker's memory
    (0.14.0 - 0.16)."""
    own = [_buckets(ctx, inputs.spec, setup.drafts, setup.version, setup.draft_apart) for ctx in contexts]
    rule = setup.rule
    if _since(setup.version, "worker_padding") and rule.mode != "none" and rule.block != rule.cache_block:
        # a stage without attention keeps its states' unaligned block: a spec of its own (SINCE "worker_padding")
        own = [{f"{name}:{UNALIGNED}": n for name, n in buckets.items()} if _without_attention(buckets) else buckets
               for buckets in own]
    logs = [list(setup.log) if ctx.stage == 0 else [] for ctx in contexts]
    unit = setup.padded if setup.page else setup.rule.block * setup.attn_tok
    available = [_available(weight, inputs, setup) for weight in weights]
    whole_check = _since(setup.version, "one_request_first_group") and not _since(setup.version, "one_request_per_worker")
    pools = []
    if setup.dsa_ring:  # one stage (`_dsa_scope`)
        pool = _dsa_pool(contexts[0], own[0], setup, available[0], logs[0])
        if pool.groups and pool.available is not None:
            pool.log.append(f"Available KV cache memory: {round(pool.available / GIB, 2)} GiB")
        return [pool]
    for ctx, buckets, (groups, share, group, padding), memory, log in zip(
            contexts, own, _plans(own, logs, setup.version), available, logs, strict=True):
        check_group, check_memory = (group, min(available)) if whole_check and None not in available else (share, memory)
        if groups and memory is not None:  # gpu_worker.py, before the KV-cache planning (none without cache layers)
            log.append(f"Available KV cache memory: {round(memory / GIB, 2)} GiB")
        pools.append(StagePool(ctx, buckets, groups, share, padding, unit, memory, log, check_group, check_memory))
    return pools


def _dsa_pool(ctx, buckets: dict[str, int], setup: Setup, memory: int | None, log: list[str]) -> StagePool:
    """GLM-5.3-Flash's groups (SINCE "dsa_packed_groups"): its N MLA layers with their indexers in one group, a unit
    being a layer's latent and keys over a block; its tails in one group; its KDA layers over cdiv(KDA, N) groups, or
    from 0.32 as the packed planner spreads them (`_approximate_gcd` of the layer counts, at most as many layers a
    group as the widest group's bytes hold), a block then rounded to the pages' alignment."""
    spec, block = ctx.spec, setup.rule.block
    p = spec.dsa_indexer
    key = key_row_bytes(p)
    n, kda = buckets.get("mla", 0), buckets.get("kda", 0)
    unit = block * setup.attn_tok + block // p.kpool * key
    tail = 2 * setup.dsa_ring * p.head_dim * dtype_names.itemsize(setup.dtypes.model)
    if not _since(setup.version, "dsa_packed_groups"):
        groups = {"mla": 1, "kda": cdiv(kda, n), DSA_TAIL: 1}
        return StagePool(ctx, buckets, groups, n, 0, unit, memory, log, n, memory)
    rep = _approximate_gcd([kda, n, n], n)
    anchor = max(setup.padded, n * unit, tail)
    kda_groups = max(cdiv(kda, rep), cdiv(kda, max(anchor // setup.padded, 1)))
    tail_groups = max(cdiv(n, rep), cdiv(n, max(anchor // tail, 1)))
    widest = max(n * unit, cdiv(kda, kda_groups) * setup.padded, cdiv(n, tail_groups) * tail)
    stride = gcd(DSA_STRIDE_TOKENS * p.kpool, block)
    align = lcm(setup.dsa_rows * setup.attn_tok, 1 if stride == block else stride // p.kpool * key)
    groups = {"mla": 1, "kda": kda_groups, DSA_TAIL: tail_groups}
    return StagePool(ctx, buckets, groups, n, 0, unit, memory, log, n, memory, cdiv(widest, align) * align)


def _approximate_gcd(values: list[int], lower: int) -> int:
    """v1/core/kv_cache_utils.py _approximate_gcd (0.32; kv_cache_planning.py 0.33 on): the layers a group, from
    `lower` up, that pad the counts least, the larger on a tie."""
    best, waste = lower, None
    for d in range(max(1, lower), max(values) + 1):
        pad = sum(-x % d for x in values)
        if waste is None or pad <= waste:
            best, waste = d, pad
    return best


def _plans(own: list[dict[str, int]], logs: list[list[str]], version: str) -> list[tuple[dict[str, int], int, int, int]]:
    """Each stage's (groups per spec, its layers per group, the whole grouping's layers per group, padding layers)
    from its layers per spec (`own`): since 0.11.1 the whole model's groups, the stage keeping its share of each
    (its largest share sizes its blocks) and the padding logged once; in 0.10.2 the stage's own groups."""
    if _since(version, "whole_model_groups"):
        group, groups, shares = _grouping(own, version)
        padding = _padding(_merged(own), group, logs[0])
        # a stage without cache layers keeps every group with none of its layers (shown as none): `_planning_error`
        return [(groups if share else {}, share, group, padding) for share in shares]
    plans = []
    for buckets, log in zip(own, logs, strict=True):
        group, groups, _ = _grouping([buckets], version)
        plans.append((groups, group, group, _padding(buckets, group, log)))
    return plans


def _merged(stage_buckets: list[dict[str, int]]) -> dict[str, int]:
    """The whole model's layers per cache spec (the workers' specs merged, the first stage's first)."""
    total: dict[str, int] = {}
    for buckets in stage_buckets:
        for name, n in buckets.items():
            total[name] = total.get(name, 0) + n
    return total


def _grouping(stage_buckets: list[dict[str, int]], version: str) -> tuple[int, dict[str, int], list[int]]:
    """(layers per group, groups per spec, each stage's largest share of one group) of the layers of `stage_buckets`
    grouped together (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: the i-th of a spec's groups takes
    its layers i, i + groups, i + 2 x groups, ..., in the merged order, stage by stage)."""
    total = _merged(stage_buckets)
    group = _group_size(total, version)
    groups = {name: cdiv(n, group) for name, n in total.items()}
    shares, start = [], dict.fromkeys(total, 0)
    for buckets in stage_buckets:
        share = 0
        for name, n in buckets.items():
            first, step = start[name], groups[name]
            share = max(share, *(_members(i, step, first, first + n) for i in range(step)))
            start[name] += n
        shares.append(share)
    return group, groups, shares


def _members(i: int, step: int, first: int, end: int) -> int:
    """How many of the positions i, i + step, i + 2 x step, ... lie in [first, end)."""
    return max(0, cdiv(end - i, step)) - max(0, cdiv(first - i, step))


def _padding(buckets: dict[str, int], group: int, log: list[str]) -> int:
    """The padding layers that fill each spec's last group to `group` layers, logged as vLLM logs them."""
    padding = {name: group - n % group for name, n in buckets.items() if n % group}
    for name, missing in padding.items():
        log.append(f"Add {missing} padding layers, may waste at most {missing / buckets[name] * 100:.2f}% KV cache memory")
    return sum(padding.values())


# vLLM's KV-cache spec classes (v1/kv_cache_interface.py, v0.10.2) of mcache's group names: MLA is a
# FullAttentionSpec there (use_mla), every recurrent kind a MambaSpec
SPEC_CLASSES = {"attention": "FullAttentionSpec", "mla": "FullAttentionSpec", "sliding_attention": "FullAttentionSpec"}


def _spec_class(name: str) -> str:
    """The KV-cache spec class of a group name (a `_buckets` name) in 0.10.2."""
    if name.endswith(":window"):
        return "SlidingWindowSpec"
    return SPEC_CLASSES.get(name, "MambaSpec")


def _without_attention(buckets: dict[str, int]) -> bool:
    """Whether a stage's layers per cache spec hold recurrent layers and no attention."""
    return bool(buckets) and all(name.partition(":")[0] in RECURRENT_KINDS for name in buckets)


def _planning_error(pools: list[StagePool], setup: Setup) -> str | None:
    """What stops vLLM while it plans the workers' KV caches (v1/core/kv_cache_utils.py get_kv_cache_configs; 0.10.2:
    get_kv_cache_config per worker, then unify_kv_cache_configs), in its order; None: it goes on. From 0.20 (SINCE
    "worker_padding") a PP stage with recurrent layers and no attention keeps its state page unpadded, which the
    whole model's grouping cannot unify with the padded one before 0.26. Then the one-request check of each worker
    in rank order (`_memory_error`; the first to fail stops every one), and a worker holding no KV-cache layer
    refuses after it (`_empty_stage_error`), or before it in 0.29 - 0.31 and from 0.33. 0.10.2 then asserts that each
    worker's own groups, sorted by spec class, are those of worker 0 pair by pair (as far as the shorter list
    goes), so a stage without attention beside one with it fails (a worker without cache layers has no group and
    passes)."""
    version = setup.version
    unpadded = next((p.ctx.stage for p in pools if _without_attention(p.buckets)), None)
    if _since(version, "worker_padding") and not _since(version, "unify_pads_mamba") and unpadded is not None and \
            setup.attn_tok and setup.padded % setup.page:
        words = ("Layer <PP rank {unpadded}'s first recurrent layer>: page size is not divisible by the maximum page size "
                 "and cannot be padded. Padding is only supported for attention layers whose backend indexes KV pages "
                 "by the block stride (indexes_kv_by_block_stride is True)." if _since(version, "unify_words_layer")
                 else "The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting "
                      "block_size.")
        return (f"NotImplementedError: {words.format(unpadded=unpadded)} (PP rank {unpadded} holds recurrent layers and "
                f"no attention, so its worker keeps the state page unpadded, {setup.page} bytes, beside the padded "
                f"{setup.padded}: platforms/interface.py update_block_size_for_backend finds no attention backend there)")
    empty = next((p.ctx.stage for p in pools if not p.buckets), None)
    before_check = _since(version, "empty_stage_pool_bytes") and not _since(version, "empty_stage_layout") or \
        _since(version, "empty_stage_probe")
    if empty is not None and before_check:
        return _empty_stage_error(empty, version)
    memory = next((error for p in pools if p.groups and p.available is not None and
                   (error := _memory_error(p, setup))), None)
    if memory is not None or _since(version, "whole_model_groups"):
        return memory or (None if empty is None else _empty_stage_error(empty, version))
    first = sorted(_spec_class(name) for name, n in pools[0].groups.items() for _ in range(n))
    for pool in pools[1:]:
        other = sorted(_spec_class(name) for name, n in pool.groups.items() for _ in range(n))
        differ = next(((a, b) for a, b in zip(first, other, strict=False) if a != b), None)
        if differ is not None:
            return ("AssertionError: assert group_rank_0.kv_cache_spec == group_rank_i.kv_cache_spec "
                    f"(v1/core/kv_cache_utils.py unify_kv_cache_configs: PP rank {pool.ctx.stage}'s KV-cache groups, "
                    f"sorted by spec, are not PP rank 0's: a {differ[1]} group where PP rank 0 has a {differ[0]} one)")
    return None


def _empty_stage_error(stage: int, version: str) -> str:
    """What get_kv_cache_configs (v1/core/kv_cache_utils.py; 0.33: kv_cache_planning.py) raises for PP rank `stage`,
    which holds no KV-cache layer (SINCE "empty_stage_group_size" ... "empty_stage_layout")."""
    why = f"PP rank {stage} holds no KV-cache layer, so its worker keeps every KV-cache group empty"
    if _since(version, "empty_stage_layout"):  # the layout FlashAttention's backend resolves to, as on an H200
        return ("ValueError: KV cache layout LBNHC cannot express this model's mixed page sizes ([]); a backend should "
                "declare block-outermost supported layouts (e.g. BLHNC), or set VLLM_KV_CACHE_LAYOUT=BLHNC. "
                f"(validate_kv_cache_layout: {why}, and no page size)")
    if _since(version, "empty_stage_pool_bytes"):
        return f"AssertionError: assert bytes_per_block > 0 (v1/core/kv_cache_utils.py _get_kv_cache_bytes_per_block: {why})"
    if _since(version, "empty_stage_group_size"):
        return f"AssertionError: group_size must be greater than 0 ({why})"
    return f"AssertionError: assert len(page_sizes) == 1 (v1/core/kv_cache_utils.py get_uniform_page_size: {why})"


def _available(weight: int, inputs: EngineInputs, setup: Setup) -> int | None:
    """The memory a worker's blocks get: --kv-cache-memory-bytes, else gpu_worker.py determine_available_memory
    (None without a GPU)."""
    if setup.kv_memory is not None:
        return setup.kv_memory
    if inputs.gpu_bytes is not None:
        return ceil(inputs.gpu_bytes * setup.utilization) - weight - setup.non_kv
    return None


def _stage(pool: StagePool, num_blocks: int | None, setup: Setup) -> EngineStage:
    """One stage's figures, log lines and verdict once the workers agreed on `num_blocks` (None without memory)."""
    rule, max_len, log = setup.rule, setup.max_len, pool.log
    per_request = rule.per_request(pool.groups, max_len, pool.ctx)
    fields = _fields(pool, num_blocks, per_request, setup)
    if not pool.groups:  # no cache layer (0.10.2; later releases refuse it): no memory check, the scheduler's limit
        return EngineStage(pool.ctx.stage, None if num_blocks is None else setup.max_num_seqs, None, log,
                           "max_num_seqs", fields)
    # EngineCore._initialize_kv_caches validates the block once the KV cache is sized (0.18 - 0.26), whatever the
    # memory; then the workers capture the CUDA graphs
    error, running, binding = setup.block_refusal, None, None
    if num_blocks is not None:
        concurrency = num_blocks / per_request
        # 0.10.2 - 0.11.0 (kv_cache_utils.py get_kv_cache_config, then get_kv_cache_config_from_groups) log each
        # worker's own blocks, before every worker takes the smallest count; from 0.11.1 the agreed blocks
        logged = num_blocks if _since(setup.version, "agreed_blocks_logged") else pool.num_blocks
        legacy = _legacy_tokens(pool, logged, setup)
        tokens = int(concurrency * max_len) if _since(setup.version, "kv_tokens_from_concurrency") else legacy
        fields.update(max_concurrency=round(concurrency, 2), kv_cache_tokens=tokens, kv_cache_tokens_legacy=legacy)
        log += _capacity_lines(tokens, max_len, logged / per_request, setup.version)
        error = error or (_graph_error(pool, num_blocks, setup) if _since(setup.version, "v020") else None)
        at_context = num_blocks // rule.per_request(pool.groups, setup.context, pool.ctx)
        active = setup.active_seqs or setup.max_num_seqs
        running, binding = ((at_context, "KV cache blocks") if at_context < active
                            else (active, "max_num_seqs" if active == setup.max_num_seqs else "max_num_active_seqs"))
    if error is not None:
        log.append(error)
        running, binding = 0, "start-up"
    return EngineStage(pool.ctx.stage, running, error, log, binding, fields)


def _fields(pool: StagePool, num_blocks: int | None, per_request: int, setup: Setup) -> dict:
    """vLLM's own figures of the stage (the concurrency ones filled once it starts)."""
    page, padded = setup.page, setup.padded
    return {
        "attention_block_size": setup.rule.block if setup.attn_tok else None,
        "mamba_cache_mode": setup.rule.mode,
        "state_page_bytes": page or None,
        "state_page_padded_bytes": padded or None,
        "state_page_padding_pct": round(100 * (padded - page) / page, 2) if page else None,
        "group_size": pool.group,
        "groups": pool.groups,
        "padding_layers": pool.padding_layers,
        "block_bytes": pool.block_bytes,
        "available_kv_cache_memory_bytes": pool.available,
        "num_blocks": num_blocks,
        "blocks_per_request": per_request,
        "max_concurrency": None,
        "kv_cache_tokens": None,
        "kv_cache_tokens_legacy": None,
    }


def _legacy_tokens(pool: StagePool, num_blocks: int, setup: Setup) -> int:
    """The "GPU KV cache size" of v1/core/kv_cache_utils.py before 0.20.1 (_report_kv_cache_config): num_blocks //
    groups x the smallest group block, the max model length for a Mamba group without prefix caching, its state
    block (the aligned attention block, larger than a short max model length: the 0.20.0 table's Nemotron-H-56B and
    Nemotron-3-Super at 4,096 tokens) with it; in 0.10.2 a model of one spec type (no attention) counts num_blocks x
    cache_config.block_size (_get_kv_cache_config_uniform_type)."""
    if not setup.attn_tok and not _since(setup.version, "uniform_group_tokens"):
        return num_blocks * DEFAULT_BLOCK_SIZE_BEFORE_034
    block = min(setup.rule.block, setup.max_len) if setup.rule.mode == "none" else setup.rule.block
    if not setup.attn_tok and setup.rule.mode != "none":  # attention-free with prefix caching: the state block
        block = setup.rule.mamba_block
    return num_blocks // sum(pool.groups.values()) * block


def _capacity_lines(tokens: int, max_len: int, concurrency: float, version: str) -> list[str]:
    """v1/core/kv_cache_utils.py: one line since 0.28 (update_kv_cache_capacity), two before
    (_report_kv_cache_config)."""
    size = f"GPU KV cache size: {tokens:,} tokens"
    most = f"Maximum concurrency for {max_len:,} tokens per request: {concurrency:.2f}x"
    return [f"{size}, {most}"] if _since(version, "prefix_default_hybrid") else [size, most]


def _graph_error(pool: StagePool, num_blocks: int, setup: Setup) -> str | None:
    """compilation.py: CUDA-graph capture needs one state block per decode sequence (None: it has them)."""
    has_state = any(name.partition(":")[0] in RECURRENT_KINDS for name in pool.groups)
    if not has_state or setup.eager or setup.max_num_seqs <= num_blocks:
        return None
    return (f"max_num_seqs ({setup.max_num_seqs}) exceeds available Mamba cache blocks ({num_blocks}). Each "
            "decode sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. "
            f"Please lower max_num_seqs to at most {num_blocks} or increase gpu_memory_utilization.")


def _dtypes(spec, s: Settings, arch: str, version: str, log: list[str]) -> CacheDtypes:
    """Conv state: --mamba-cache-dtype, else the model dtype; recurrent state: --mamba-ssm-cache-dtype, else the
    model's hook, else the conv dtype (mamba_utils.py MambaStateDtypeCalculator, models/config.py)."""
    model = dtype_names.canonical(spec.dtype)
    conv_flag = s.take("mamba_cache_dtype", "auto")
    conv = model if conv_flag == "auto" else state_dtype(conv_flag, "mamba_cache_dtype")
    ssm_flag = s.take("mamba_ssm_cache_dtype", "auto")
    hints = spec.ssm_dtype_hints
    if ssm_flag != "auto":
        ssm = state_dtype(ssm_flag, "mamba_ssm_cache_dtype")
    elif arch in NEMOTRON_SSM_HOOK and _since(version, NEMOTRON_SSM_HOOK[arch]):
        ssm = hints.get("mamba_ssm_cache_dtype", "float32" if _since(version, "v020") else "float16")
        log.append(f"Updating mamba_ssm_cache_dtype to '{ssm}' for NemotronH model")
    elif arch in QWEN3_5 and "mamba_ssm_dtype" in hints:
        ssm = hints["mamba_ssm_dtype"]
    else:
        ssm = conv
    if "kda" in recurrent_kinds(spec):  # the state its layers allocate, whatever the flag asked
        ssm = _kda_state_dtype(ssm_flag, arch, True, version)
    kv_flag = s.take("kv_cache_dtype", "auto")
    if kv_flag not in KV_DTYPES:
        raise LayoutError("kv_cache_dtype", f"one of {', '.join(KV_DTYPES)}, got {kv_flag!r}")
    if kv_flag in KV_DTYPE_SINCE and not _since(version, KV_DTYPE_SINCE[kv_flag]):
        raise LayoutError("kv_cache_dtype", f"a KV cache dtype of vLLM {version}: {kv_flag} is one from "
                                            f"{SINCE[KV_DTYPE_SINCE[kv_flag]]} (config/cache.py CacheDType)")
    if kv_flag == "auto" and checkpoint_kv_format(spec) == "fp8":
        kv_flag = CHECKPOINT_KV
        s.values["kv_cache_dtype"], s.sources["kv_cache_dtype"] = kv_flag, "default: the checkpoint's KV format"
    return CacheDtypes(model=model, kv=KV_DTYPES[kv_flag] or model, conv=conv, ssm=dtype_names.canonical(ssm))



def _mode(s: Settings, prefix: bool, arch: str, recurrent: list[str], k: int, version: str,
          log: list[str]) -> tuple[str, str | None]:
    """(the mamba cache mode, a refusal or None) as models/config.py MambaModelConfig.verify_and_update_config
    resolves it at `version`; prefix caching turned off there is recorded in the settings."""
    given = s.take("mamba_cache_mode", None)
    if given is not None and given not in MODES:
        raise LayoutError("mamba_cache_mode", f"one of {', '.join(MODES)}, got {given!r}")
    if given is not None and not _since(version, "mamba_cache_mode"):
        raise LayoutError("mamba_cache_mode", f"not a vLLM {version} option (--mamba-cache-mode came in 0.15.0)")
    if given == "all" and _since(version, "no_all_mode") and not _since(version, "gdn_checkpoints"):
        return "none", "ValidationError: mamba_cache_mode: Input should be 'align' or 'none'"
    if given is not None and _since(version, "gdn_checkpoints"):
        log.append(MODE_DEPRECATED.format(removal="0.34.0" if _since(version, "extensible_kv_cache") else "0.33.0"))
        given = None
    if not recurrent:
        s.values["mamba_cache_mode"] = "none"
        return "none", None
    if not _since(version, "mamba_cache_mode"):
        mode = _legacy_mode(s, prefix, arch, version, log)
    else:
        mode = _cache_mode(prefix, given or "none", arch, k, version, log)
    s.values["mamba_cache_mode"] = mode
    refusal = None
    if mode == "align" and k and not _since(version, "align_with_drafts"):
        # the assert runs in VllmConfig.__post_init__ (try_verify_and_update_config), which pydantic reports as a
        # ValidationError (the 0.15.0 table: Qwen3-Next-80B-A3B-Instruct-FP8, align with 7 drafts)
        refusal = ("ValidationError: 1 validation error for VllmConfig\n  Assertion failed, Mamba cache mode 'align' is "
                   "currently not compatible with speculative decoding.")
    return mode, refusal


def _legacy_mode(s: Settings, prefix: bool, arch: str, version: str, log: list[str]) -> str:
    """Before 0.15 (models/config.py MambaModelConfig): 0.10.2 turns prefix caching off for every Mamba model; 0.11.1
    - 0.14 keep it for SupportsMambaPrefixCaching models (one state per block, what 0.15 calls 'all') and turn it
    off for the others; the prefix setting records the outcome."""
    if not _since(version, "mamba_prefix_caching"):
        log.append("Hybrid or mamba-based model detected: disabling prefix caching since it is not yet supported.")
        s.values["enable_prefix_caching"] = False
        return "none"
    if not prefix:
        return "none"
    if arch in MAMBA_PREFIX_ARCHS:
        log.append("Warning: Prefix caching is currently enabled. Its support for Mamba layers is experimental. "
                   "Please report any issues you may observe.")
        return "all"
    log.append("Hybrid or mamba-based model detected without support for prefix caching: disabling.")
    s.values["enable_prefix_caching"] = False
    return "none"


def _cache_mode(prefix: bool, given: str, arch: str, k: int, version: str, log: list[str]) -> str:
    """0.15+ (models/config.py MambaModelConfig): with prefix caching, the given mode or by default 'all' for
    SupportsMambaPrefixCaching models ('align' with drafts in 0.20.0 - 0.21; 'align' for every model since 0.28),
    'all' falling back to 'align' for the others; without it, 'none'."""
    if not prefix:
        if given != "none":
            log.append("Mamba cache mode is set to 'none' when prefix caching is disabled")
        return "none"
    supported = arch in MAMBA_PREFIX_ARCHS and not _since(version, "no_all_mode")
    mode = given
    if given == "none":
        drafts_to_align = k and _since(version, "v020") and not _since(version, "all_mode_drafts")
        keep_all = supported and not _since(version, "prefix_default_hybrid") and not drafts_to_align
        mode = "all" if keep_all else "align"
        if supported and drafts_to_align:
            log.append(f"Mamba cache mode is set to 'align' for {arch} by default when prefix caching and "
                       "speculative decoding are enabled")
        else:
            log.append(f"Mamba cache mode is set to '{mode}' for {arch or 'this model'} by default when prefix "
                       "caching is enabled")
    if mode == "all" and not supported:
        mode = "align"
        log.append("Hybrid or mamba-based model detected without support for prefix caching with Mamba cache 'all' "
                   "mode: falling back to 'align' mode.")
    if not _since(version, "prefix_default_hybrid"):
        log.append(f"Warning: Prefix caching in Mamba cache '{mode}' mode is currently enabled. Its support for Mamba "
                   "layers is experimental. Please report any issues you may observe.")
    return mode


def _conv_drafts(kind: str, arch: str, layer: bool, version: str) -> bool:
    """Whether `kind`'s conv state grows by the draft rows at `version`, in the layer (`layer`) or in the model
    class's hook (CONV_DRAFT_SINCE, MAMBA2_HOOK_DRAFT_SINCE)."""
    since = CONV_DRAFT_SINCE.get(kind)
    if since is None or not at_least(version, since):
        return False
    if layer:
        return True
    if kind == "mamba2":
        hook = MAMBA2_HOOK_DRAFT_SINCE.get(arch, MAMBA2_HOOK_DRAFT_DEFAULT)
        return hook is not None and at_least(version, hook)
    return kind not in LAYER_ONLY_DRAFT_KINDS


def _state_page(ctx, dtypes: CacheDtypes, arch: str, k: int, ssm_flag: str, layer: bool, version: str) -> int:
    """Bytes of one recurrent layer's state for one request, unpadded: as the layers' MambaSpecs hold it (`layer`)
    or as the model class's get_mamba_state_shape/dtype_from_config hooks say, which platforms/interface.py
    _align_hybrid_block_size pads to the attention page (they differ for short conv with drafts and Kimi-Linear's
    KDA dtype); with several recurrent kinds, the largest (kv_cache_utils.py unify_kv_cache_spec_page_size pads the
    others to it)."""
    kda_ssm = _kda_state_dtype(ssm_flag, arch, layer, version)

    def dtype_of(kind, state):
        if state.component == "conv" or kind in ("short_conv", "lightning"):
            return dtypes.conv  # linear attention and short conv keep one state in the conv dtype
        if kind == "gdn" and not _since(version, "gdn_ssm_dtype"):
            return dtypes.conv
        return kda_ssm if kind == "kda" else dtypes.ssm

    def rows(kind: str) -> int:
        return k if _conv_drafts(kind, arch, layer, version) else 0

    return max((state_bytes(ctx, kind, dtype_of, rows(kind)) for kind in ctx.recurrent_kinds), default=0)


def _kda_state_dtype(ssm_flag: str, arch: str, layer: bool, version: str) -> str:
    """The KDA recurrent state's dtype in the model's layers (`layer`) or in its class's hook (layers/mamba/
    mamba_utils.py kda_state_dtype): --mamba-ssm-cache-dtype where the caller passes it (from 0.30.0:
    KDA_SSM_DTYPE_LAYER / KDA_SSM_DTYPE_HOOK), float32 otherwise and under 'auto'."""
    passes = _since(version, "kda_ssm_dtype") and arch in (KDA_SSM_DTYPE_LAYER if layer else KDA_SSM_DTYPE_HOOK) or \
        arch == GLM5_NEXT and _since(version, "dsa_packed_groups")
    return state_dtype(ssm_flag, "mamba_ssm_cache_dtype") if passes and ssm_flag != "auto" else "float32"


def _padding_error(page: int, padded: int) -> str | None:
    """v1/kv_cache_interface.py MambaSpec.page_size_bytes asserts `page_size_padded >= page_size`: the padded page
    comes from the model class's hook, so a layer whose state is larger (draft rows in short conv, Kimi-Linear's
    float32 KDA state under a bfloat16 --mamba-ssm-cache-dtype) stops start-up when it outgrows the padding; None
    when it fits."""
    if page <= padded:
        return None
    return (f"AssertionError: assert self.page_size_padded >= page_size (the layer's state page, {page} bytes, exceeds "
            f"the page padded to the attention page, {padded} bytes, that the model class's state hooks gave)")


def _token_bytes(ctx, kind: str, kv_mode: str, dtypes: CacheDtypes) -> int:
    """KV bytes one token adds to one attention layer (AttentionSpec.page_size_bytes / block_size)."""
    return _kv_data_bytes(ctx.states(kind), dtypes.kv, kv_mode) + _scale_bytes(kv_heads_per_rank(ctx), kv_mode)


def _kv_data_bytes(shapes, dtype: str, kv_mode: str) -> int:
    """The data of one token's KV of `shapes` in `dtype`: int4_per_token_head packs two values a byte, so each head's
    K and V take head_size // 2 bytes (v1/kv_cache_interface.py real_page_size_bytes, 0.25.0 - 0.34.0)."""
    if kv_mode != "int4_per_token_head":
        return shapes_bytes(shapes, dtype)
    return sum(prod(s.shape[:-1]) * (s.shape[-1] // 2) for s in shapes) * dtype_names.itemsize(dtype)


def _scale_bytes(kv_heads: int, kv_mode: str) -> int:
    """What a per-token-head KV mode adds to a token of a layer of `kv_heads` KV heads: a float32 scale for K and V
    per head (none otherwise)."""
    return 2 * kv_heads * 4 if kv_mode.endswith("_per_token_head") else 0


def _align(page: int, attn_tok: int, block_size: int, align: int, log: list[str]) -> tuple[int, int]:
    """The attention block size and padded state page (platforms/interface.py _align_hybrid_block_size): the
    smallest multiple of the alignment whose attention page holds a state page, which is padded to equal it."""
    attn_block = align * cdiv(page, align * attn_tok)
    block = block_size
    if block < attn_block:
        block = attn_block
        log.append(f"Setting attention block size to {block} tokens to ensure that attention page size is >= mamba "
                   "page size.")
    padded = block * attn_tok
    if padded != page:
        log.append(f"Padding mamba page size by {100 * (padded - page) / page:.2f}% to ensure that mamba page size "
                   "and attention page size are exactly equal.")
    return block, padded


def _buckets(ctx, spec, k: int, version: str, draft_apart: bool = False) -> dict[str, int]:
    """Layers of each cache spec on the stage (kv_cache_utils.py groups equal specs), in the order vLLM builds their
    first layer (`_build_order`: the order it logs their padding in): full and windowed attention apart, each
    recurrent kind apart; the MTP drafter's attention layers join the last stage's attention (or keep a spec of their
    own, `attention:draft`, where their backend reads KV otherwise: `_draft_apart`), and a DFlash drafter's
    layers (last stage, built after the model's) the bucket of the model's attention whose spec is theirs, else one of
    their own (`drafter`, `drafter:window`: AttentionSpec's `is_draft`, 0.33 on, is left out of its equality)."""
    buckets = {}
    for kind in _build_order(ctx.spec, ctx.layers):
        if kind in RECURRENT_KINDS:
            buckets[kind] = ctx.counts[kind]
        else:
            buckets[_bucket_name(ctx, kind)] = ctx.counts[kind]
    if k and ctx.stage == ctx.layout.pp - 1 and (drafter := mtp_attention_layers(spec)):
        key = next((name for name in buckets if name in ATTENTION_KINDS), "attention")
        key = f"{key}:{DRAFT_APART}" if draft_apart else key
        buckets[key] = buckets.get(key, 0) + drafter
    for window, n in drafter_sizing.layer_windows(ctx, k, _since(version, "dflash_windows")).items():
        own = drafter_sizing.states(ctx, window)
        same = next((kind for kind in ctx.kinds if kind in ATTENTION_KINDS and ctx.states(kind) == own), None)
        key = _bucket_name(ctx, same) if same else drafter_sizing.NAME + ("" if window is None else ":window")
        buckets[key] = buckets.get(key, 0) + n
    return buckets


DRAFT_APART = "draft"  # the tag of a bucket of the MTP drafter's attention layers apart from the model's (`_buckets`)


def _window(ctx, name: str) -> int | None:
    """The sliding window of a bucket's layers (`_buckets`: a kind's, or the drafter's)."""
    kind = name.partition(":")[0]
    return ctx.spec.drafter.sliding_window if kind == drafter_sizing.NAME else window_of(ctx, kind)


def _bucket_name(ctx, kind: str) -> str:
    """The cache spec of an attention kind's layers: windowed layers apart (a SlidingWindowSpec)."""
    return kind if window_of(ctx, kind) is None else f"{kind}:window"


def _group_size(buckets: dict[str, int], version: str) -> int:
    """Layers per KV-cache group (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): the smallest bucket,
    or the largest when that is under 1.5 x the smallest (1.25 x in 0.12 - 0.17; never before 0.12); 0 without
    cache layers (a worker whose layer specs are empty keeps no group)."""
    if not buckets:
        return 0
    smallest, largest = min(buckets.values()), max(buckets.values())
    if not _since(version, "group_size_max"):
        return smallest
    return largest if largest < (1.5 if _since(version, "group_size_max_1_5") else 1.25) * smallest else smallest


def _memory_error(pool: StagePool, setup: Setup) -> str | None:
    """kv_cache_planning.py check_enough_kv_cache_memory: one request at the max model length (`_one_request_bytes`)
    in the memory left beside the block pool's null block (since 0.29; before, in the whole available memory), else
    the longest model length that fits (estimate_max_model_len), in the release's words (`_memory_words`)."""
    rule, max_len, version = setup.rule, setup.max_len, setup.version
    utilization = setup.utilization if setup.extensible else None
    usable = pool.check_available - (pool.block_bytes if _since(version, "null_block_check") else 0)
    if usable <= 0:
        return _memory_words(version, utilization=utilization)

    def needed(tokens: int) -> int:
        return _one_request_bytes(pool, rule, tokens, version)

    if needed(max_len) <= usable:
        return None
    lo, hi = 0, max_len  # estimate_max_model_len: the longest model length one request fits at
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if needed(mid) <= usable else (lo, mid)
    return _memory_words(version, (max_len, needed(max_len), usable, lo), utilization)


def _memory_words(version: str, short: tuple[int, int, int, int] | None = None, utilization: float | None = None) -> str:
    """check_enough_kv_cache_memory's refusal as `version` words it (v1/core/kv_cache_utils.py at v0.10.2, v0.13.0,
    v0.14.0 and v0.22.0; kv_cache_planning.py at v0.33.0 and v0.34.0): no memory at all (`short` None), or one request
    of `short` = (max model length, bytes needed, bytes available, estimated maximum model length or 0) not fitting;
    `utilization` is gpu_memory_utilization where the extensible KV cache sized the memory (since 0.34; None: given
    kv_cache_memory_bytes), whose advice differs."""
    docs = (" See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
            if _since(version, "memory_docs_link") else "")
    cpu = _since(version, "memory_cpu_note")
    note = " (this flag also controls CPU memory reservation on the CPU backend, despite its name)" if cpu else ""
    advice = f"Try increasing `gpu_memory_utilization` when initializing the engine{note}."
    if utilization is not None:  # kv_cache_planning.py _more_kv_cache_memory_hint (v0.34.0)
        advice = ("The KV cache gets what is left after the model and its activations within "
                  f"`gpu_memory_utilization`={utilization}; increase it (with the extensible KV cache it defaults to "
                  "1.0) or decrease `max_model_len` or `max_num_seqs`." if utilization < EXTENSIBLE_UTILIZATION else
                  "The extensible KV cache already takes all device memory left after the model and its activations; "
                  "decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more memory.")
    if short is None:
        return f"No available memory for the cache blocks. {advice}{docs}"
    max_len, needed, available, estimate = short
    format_gib = _since(version, "memory_format_gib")

    def gib(n: int) -> str:
        return str(round(n / GIB, 2)) if format_gib else f"{n / GIB:.2f}"

    sentence = f"Based on the available memory, the estimated maximum model length is {estimate}." if estimate else ""
    estimated = f"{sentence} " if sentence or not format_gib else ""  # before 0.14 a space follows even no sentence
    if _since(version, "extensible_kv_cache"):  # the advice, then a word on the length
        advice += " Decreasing `max_model_len` also reduces what is needed."
    else:
        note = " (which also controls CPU memory on the CPU backend)" if cpu else ""
        advice = (f"Try increasing `gpu_memory_utilization`{note} or decreasing `max_model_len` when initializing the "
                  "engine.")
    return (f"To serve at least one request with the {'model' if cpu else 'models'}'s max seq len ({max_len}), "
            f"({gib(needed)} GiB KV cache is needed, which is larger than the available KV cache memory "
            f"({gib(available)} GiB). {estimated}{advice}{docs}")


def _one_request_bytes(pool: StagePool, rule: BlockRule, tokens: int, version: str) -> int:
    """The bytes vLLM's start-up check counts for one request of `tokens` tokens (v1/core/kv_cache_utils.py): every
    layer's blocks at a layer's page (0.10.2 - 0.13.x, check_enough_kv_cache_memory); group size x page x the blocks
    of the first KV-cache group alone (0.14.0 - 0.18.x, _max_memory_usage_bytes_from_groups reads
    kv_cache_groups[0]); group size x page x the blocks of every group, padding layers included (since 0.19.0)."""
    if not _since(version, "one_request_first_group"):
        return pool.unit * rule.per_request(pool.buckets, tokens, pool.ctx)
    every = _since(version, "one_request_every_group")
    groups = pool.groups if every else {_first_group(pool.ctx): 1}
    return (pool.packed_block or pool.check_group * pool.unit) * rule.per_request(groups, tokens, pool.ctx)


def _build_order(spec, layers) -> list[str]:
    """The cache kinds of `layers` (indices) in the order vLLM builds their first layer, which orders the KV-cache
    groups (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: each spec's first layer in get_kv_cache_spec's
    order, the first stage's first) and their padding lines: a parallel hybrid layer builds its attention before its
    Mamba mixer (models/falcon_h1.py FalconH1ParallelHybrid), and Zamba2 builds its shared attention blocks, which
    hold the Attention layers of every hybrid layer, before its first layer (models/zamba2.py Zamba2Model.__init__,
    read at v0.14.0, v0.17.0 and v0.18.0: the 0.17.0 and 0.18.0 tables)."""
    cached = (*ATTENTION_KINDS, *RECURRENT_KINDS)  # within a layer, attention first
    kinds = layer_kinds(spec)
    stage = [kinds[i] for i in layers]
    if spec.architecture in ATTENTION_BUILT_FIRST:
        stage = [tuple(k for k in layer if k in ATTENTION_KINDS) for layer in stage] + stage
    order: list[str] = []
    for layer in stage:
        order += [k for k in sorted((k for k in layer if k in cached), key=cached.index) if k not in order]
    return order


def _first_group(ctx: RankContext) -> str:
    """The cache spec (a `_buckets` name) of the model's first cache layer, whose KV-cache group comes first
    (`_build_order` over every layer)."""
    kind = _build_order(ctx.spec, range(ctx.spec.num_layers))[0]
    return _bucket_name(ctx, kind) if kind in ATTENTION_KINDS else kind


# ------------------------------------------------------------------------------------------ mcache plan's hooks -----
# What `mcache plan` reads of vLLM (`engines.plan_hooks`). Replicas: vllm/engine/arg_utils.py (v0.33.0)
# EngineArgs.data_parallel_size runs R copies of the layout from one command (since 0.8; across nodes with
# --data-parallel-size-local and --data-parallel-address). The batch setting solved for: vllm/config/scheduler.py
# SchedulerConfig.max_num_seqs, which config/compilation.py refuses above the Mamba blocks (one per decode sequence).
REPLICA_FLAG = "--data-parallel-size"
SOLVED = "max_num_seqs"
SOLVE_HINT_EXACT = True  # the concurrency of the blocks the workers agreed on: one more is KV-bound
# Attention DP at a width of tp alone (`run` refuses another, in these words; `mcache plan` sweeps no other)
FULL_WIDTH_ATTENTION_DP = ("whose data parallelism is separate engine cores, each of TP 1 under --attention-dp "
                           "(engine_core_layout), with no attention-TP group")


def solve_hint(run: EngineRun) -> int | None:
    """The smallest max_num_seqs at which a run's replica runs the most sequences of its max model length: the whole
    part of vLLM's "Maximum concurrency" (num_blocks // blocks_per_request, v1/core/kv_cache_utils.py) on the tightest
    stage. The blocks do not depend on max_num_seqs, so a larger value runs no more sequences of that length, and it
    costs memory mcache's reserve does not follow (v1/worker/gpu_model_runner.py _dummy_sampler_run warms the sampler
    up over max_num_seqs requests); it is within the blocks the CUDA-graph check allows, and at most
    max_num_batched_tokens (config/scheduler.py SchedulerConfig._verify_args refuses a max_num_seqs above it). None
    when no value starts the replica (no blocks), or when the run started with a max_num_seqs that runs as many."""
    if any(not st.fields.get("num_blocks") for st in run.stages):
        return None
    held = [st.fields["num_blocks"] // st.fields["blocks_per_request"] for st in run.stages
            if st.fields.get("blocks_per_request")]  # a stage without cache layers holds no request's blocks
    most = min(min(held, default=0), run.settings["max_num_batched_tokens"])
    return None if most < 1 or (run.starts and run.settings["max_num_seqs"] >= most) else most


def solve_settings(n: int, run: EngineRun) -> dict[str, int]:
    """max_num_seqs n: vLLM's batch, its only setting a replica's sequences hinge on."""
    return {SOLVED: n}
