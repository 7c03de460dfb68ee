"""SGLang: state dtypes, the split of the static memory between the state pool and the token pool, the state
slots each running request holds, speculative buffers, `max_total_num_tokens` and `max_running_requests`; and the
`sglang.launch_server` line that starts a deployment `mcache plan` found.

Sources (sgl-project/sglang at tag v0.5.23): `python/sglang/srt/configs/mamba_utils.py` (shapes, dtypes),
`python/sglang/srt/mem_cache/kv_cache_configurator.py` (`_profile_available_bytes`, `_handle_max_mamba_cache`,
`_calculate_mamba_ratio`, `resolve_max_num_reqs`), `python/sglang/srt/model_executor/pool_configurator.py` (cell
size), `python/sglang/srt/mem_cache/memory_pool.py` (`MambaPool`: one dummy slot), `python/sglang/srt/arg_groups/`
(`memory_hook.py`: the mem_fraction_static default; `overrides.py`: the radix-cache strategy; field defaults),
`python/sglang/srt/server_args.py` (flag names), `python/sglang/srt/model_loader/utils.py` (the Transformers backend),
`python/sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py` (the draft layers charged),
`python/sglang/srt/layers/attention/mamba/mamba.py` (`MambaMixer2.__init__`: the Mamba2 groups its TP size splits).

Versions: the rules hold from 0.5.10 to 0.5.23 unless a rule says otherwise; a rule that changed in between reads
`inputs.version` through `_since` and cites the files on each side (before 0.5.16 the pools are sized in
`python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py`, before 0.5.19 the memory settings and the
radix-cache strategy resolve in `server_args.py`). The first hybrid releases, 0.5.2 to 0.5.9, size the pools in
`python/sglang/srt/model_executor/model_runner.py` itself (0.5.7-0.5.9: its kv-cache mixin) and give the scheduler
`python/sglang/srt/managers/tp_worker.py`'s request count: their rules are the `_first_line` branches beside the
rules they replace (`FIRST_LINE_UNTIL`). Attention DP (`--attention-dp`: SGLang's --dp-size = --tp-size with
--enable-dp-attention; narrower than TP, `--attn-dp-size N`: --dp-size N < --tp-size) is sized at every modelled
release, every figure one attention-DP rank's. What changed
where, and what did not change, is in scripts/oracles/sglang_versions.md.
"""

from __future__ import annotations

import math
import shlex

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
    token_bytes,
    unknown_model_type,
    unnamed_architecture_caveats,
    unrecognized_config,
    weights_overflow,
    whole_model,
    window_caveats,
    windowed_kinds,
    within_gpu,
)
from mcache.core.engines.versions import at_least, key
from mcache.core.errors import LayoutError
from mcache.core.kinds.base import CacheDtypes
from mcache.core.kinds.dsa_indexer import SCALE_BLOCK, key_row_bytes
from mcache.core.sizing import drafter as drafter_sizing
from mcache.core.sizing.gpu_catalogue import AMD
from mcache.core.sizing.gpus import capability, cuda_major_in, sm_major, vendor
from mcache.core.sizing.rank import RankContext, checkpoint_kv_format
from mcache.core.spec import dtypes as dtype_names
from mcache.core.spec.dtypes import itemsize
from mcache.core.spec.model import QUANT_FILE, layer_kinds

NAME = "sglang"
# The releases this module models, oldest first (sgl-project/sglang tags): each one where a rule below changed, and the
# newest: 0.5.2 (the first hybrid, Qwen3-Next), 0.5.3 (Falcon-H1), 0.5.4 (the state share, Nemotron-H), 0.5.5
# (Kimi-Linear, the 20-35 GB row), 0.5.6 (JetNemotron and the Nemotron-H VL config state models), 0.5.7 (the pools in
# the runner's kv-cache mixin: the strategy setting, the drafts' states before the share, 5 slots a request), 0.5.8
# (the drafts' states in every branch, 3 slots a request without an extra buffer), 0.5.9 (the last of the first line:
# the memory share without the radix cache too, the per-architecture radix rules, Lfm2 / Lfm2Moe / GraniteMoeHybrid /
# Qwen3.5 / BailingMoeV2_5 state models, the config's state dtype), then 0.5.10 on. 0.5.1 and older have no hybrid
# and are refused.
VERSIONS = ("0.5.2", "0.5.3", "0.5.3.post1", "0.5.3.post2", "0.5.3.post3", "0.5.4", "0.5.4.post1", "0.5.4.post2",
            "0.5.4.post3", "0.5.5", "0.5.5.post1", "0.5.5.post2", "0.5.5.post3", "0.5.6", "0.5.6.post1", "0.5.6.post2",
            "0.5.7", "0.5.8", "0.5.9", "0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17",
            "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
# The first release after the first hybrid line (v0.5.2-v0.5.9), whose sizing lives in model_executor/model_runner.py
# (profile_max_num_token, init_memory_pool; from v0.5.3.post2 handle_max_mamba_cache; at v0.5.7-v0.5.9 in its kv-cache mixin,
# model_runner_kv_cache_mixin.py, which has no _resolve_memory_pool_config before v0.5.10) and managers/tp_worker.py
# (v0.5.7-v0.5.9: model_runner.py initialize): `_first_line`
FIRST_LINE_UNTIL = "0.5.10"
# server_args.py: ServerArgs fields a release lacks before the one named: v0.5.2-v0.5.3.post1 have no mamba_full_memory_ratio,
# and no release up to v0.5.6 has a radix-cache strategy (v0.5.7 adds mamba_scheduler_strategy). SGLang refuses a flag
# its ServerArgs lacks (the CLI: "unrecognized arguments"); so does mcache, naming the release
SETTING_SINCE = {"mamba_full_memory_ratio": "0.5.3.post2", "mamba_radix_cache_strategy": "0.5.7",
                 "speculative_draft_kv_cache_dtype": "0.5.18", "qsa_indexer_dtype": "0.5.22"}
# The `SizeOptions` fields of `mcache size --engine sglang` and the SGLang setting each sets (SGLang's own flag is an
# alias of the option; an option SGLang lacks is refused with it).
FLAGS = {
    "max_seq_len": "context_length", "draft": "speculative_num_steps", "kv_dtype": "kv_cache_dtype",
    "ssm_dtype": "mamba_ssm_dtype", "block_size": "page_size", "weights": "weights_bytes",
    "mem_fraction_static": "mem_fraction_static", "mamba_full_memory_ratio": "mamba_full_memory_ratio",
    "max_mamba_cache_size": "max_mamba_cache_size", "max_running_requests": "max_running_requests",
    "disable_radix_cache": "disable_radix_cache", "mamba_radix_cache_strategy": "mamba_radix_cache_strategy",
    "disable_overlap_schedule": "disable_overlap_schedule", "chunked_prefill_size": "chunked_prefill_size",
    "max_total_tokens": "max_total_tokens", "free_memory_before_load": "pre_model_load_memory_bytes",
    "draft_kv_dtype": "speculative_draft_kv_cache_dtype", "qsa_indexer_dtype": "qsa_indexer_dtype",
}
# mcache options SGLang lacks -> its own option for what they mean (fields)
INSTEAD = {"max_batch": "max_running_requests", "utilization": "mem_fraction_static", "reserve": "mem_fraction_static"}
SETTINGS = ("context_length", "mem_fraction_static", "mamba_full_memory_ratio", "max_mamba_cache_size",
            "max_running_requests", "disable_radix_cache", "mamba_radix_cache_strategy", "disable_overlap_schedule",
            "mamba_ssm_dtype", "kv_cache_dtype", "page_size", "speculative_num_steps", "chunked_prefill_size",
            "max_total_tokens", "pre_model_load_memory_bytes", "speculative_draft_kv_cache_dtype", "qsa_indexer_dtype")
STRATEGIES = ("auto", "no_buffer", "extra_buffer", "extra_buffer_lazy")
LAZY_FROM = "0.5.13"  # server_args.py MAMBA_SCHEDULER_STRATEGY_CHOICES: v0.5.12's lack extra_buffer_lazy
# server_args.py: v0.5.14 names the radix-cache strategy mamba_radix_cache_strategy (--mamba-radix-cache-strategy);
# v0.5.7-v0.5.13 name the same setting mamba_scheduler_strategy (--mamba-scheduler-strategy), resolves `auto` to no_buffer for
# every model (_handle_missing_default_values) and validates it otherwise (_handle_mamba_radix_cache: `_scheduler_strategy`)
STRATEGY_RENAMED = "0.5.14"
# SGLang settings an older release names otherwise -> the setting of this module (SETTINGS) they are: what a boot log of
# that release prints is read under its own name (core/logs/sglang.py), and `engines/options.py option_for` finds the
# mcache option for it; a run at that release reports the setting under the release's name (`_named`)
RENAMED = {"mamba_scheduler_strategy": "mamba_radix_cache_strategy"}
# server_args.py _handle_model_specific_adjustments before v0.5.14: these architectures' branches pass
# support_mamba_cache=False (the radix cache is turned off, "Disabling Radix Cache for ... as it is not yet supported.")
# before the release named: Kimi-Linear's to v0.5.13, BailingMoeV2_5's to v0.5.12 (v0.5.13's passes True for both buffers)
RADIX_OFF_UNTIL = {"KimiLinearForCausalLM": "0.5.14", "BailingMoeV2_5ForCausalLM": "0.5.13"}
# ... and support_mamba_cache_extra_buffer: v0.5.13's JetNemotron branch the default True (v0.5.14's
# _support_mamba_cache_extra_buffer lists it not); v0.5.12's True for the Qwen3-Next and Qwen3.5 branch and MiniCPM-V
# 4.6's alone (False for NemotronH, FalconH1, JetNemotron, GraniteMoeHybrid, Lfm2)
EXTRA_BUFFER_TO_0_5_13 = ("JetNemotronForCausalLM",)
# environ.py SGLANG_ENABLE_SPEC_V2: True from v0.5.11; False at v0.5.10, whose server_args.py _handle_speculative_decoding
# then turns the overlap scheduler off for an EAGLE-family draft (after the radix-cache checks; an extra buffer then
# takes 4 slots a request, not 5)
SPEC_V2_FROM = "0.5.11"
EXTRA_BUFFER_TO_0_5_12 = ("Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                          "MiniCPMV4_6ForConditionalGeneration")
KV_DTYPES = {"auto": None, "bfloat16": "bfloat16", "float16": "float16", "fp8_e4m3": "float8_e4m3fn",
             "fp8_e5m2": "float8_e5m2"}  # server_args kv_cache_dtype choices with a plain per-token cell
MB = 1 << 20
DEFAULT_PAGE_SIZE = 1  # server_args.py: ServerArgs.page_size (a token pool of single tokens)
NO_BUFFER_PAGE_CHECK_FROM = "0.5.17"  # no_buffer refuses pages of more than one token (read at v0.5.17-v0.5.23)
QSA_PAGE_SIZE = 64  # a QSA indexer's model: arg_groups/model_overrides/qwen4_exp.py sets page_size 64 (v0.5.20-v0.5.23)
# --qsa-indexer-dtype (v0.5.22-v0.5.23: arg_groups/fields/model.py, mem_cache/qsa_kv_pool.py resolve_qsa_indexer_dtype):
# the dtype of the compressed QSA keys; fp8 scores on TileLang fp8 GEMMs, which model_overrides/qwen4_exp.py takes on
# CUDA SM 9 and SM 10 alone (platform is_sm90 / is_sm100)
QSA_INDEXER_DTYPES = {"auto": "bfloat16", "bfloat16": "bfloat16", "fp8_e4m3": "float8_e4m3fn"}
QSA_FP8_MAJORS = (9, 10)
# The layer kinds beyond attention and the Mamba pool this profile sizes (engines/__init__.py UNMODELLED_KINDS): a QSA
# or DSA indexer's keys join the KV cell; the QSA raw-key ring, the DSA tail and the PLE window are pools outside the
# budget
MODELLED_KINDS = ("indexer", "dsa_indexer", "ple")
# Recurrent kinds whose state has a pool of its own beside the Mamba pool, which no budget term counts: the PLE window
# (mem_cache/ple_state_pool.py, v0.5.20-v0.5.23; kv_cache_configurator.py never sets extra_mamba_cache_bytes_per_req)
UNPOOLED_KINDS = ("ple",)
# ---- DeepSeek sparse attention: MLA with a DSA indexer (the spec's `dsa_indexer`, GLM-5.3-Flash), v0.5.20 on ----
# arg_groups/overrides.py _dsa_kv_cache_dtype_default (v0.5.20-v0.5.23): --kv-cache-dtype auto is fp8_e4m3 on a CUDA
# device of compute capability 10 or more, else bfloat16 (ROCm's cards report 9.x), and it takes only those two
DSA_FP8_FROM_SM = 10
DSA_KV_DTYPES = ("bfloat16", "fp8_e4m3")
# model_overrides/deepseek_v2.py: pages of 64 x index_kpool tokens from v0.5.22 (a page owns whole pooled keys), of 64
# before, whatever --page-size says; on ROCm without aiter's preshuffle paged-MQA path (Triton < 3.5 without
# AITER_ENABLE_AOT_GLUON_PA_MQA_LOGITS=1), pages of 1, which from v0.5.22 memory_pool.py DSATokenToKVPool refuses when a
# key pools tokens (mcache assumes that path is missing, as SGLang's code finds it without aiter)
DSA_PAGE = 64
DSA_ROCM_PAGE = 1
# ... and from v0.5.22 pool_configurator.py _compute_dsa_indexer_cell_size charges a token its share of a pooled key,
# ceil(key bytes / index_kpool) a layer; before, a whole key a token a layer
DSA_KPOOL_FROM = "0.5.22"
# server_args.py: ServerArgs.mamba_full_memory_ratio's default, by the release it holds from (0.2 at v0.5.3.post2, its
# first; 0.9 from v0.5.3.post3), in order
DEFAULT_MAMBA_FULL_MEMORY_RATIOS = (("0.5.3.post2", 0.2), ("0.5.3.post3", 0.9))
DEFAULT_STRATEGY = "auto"  # server_args.py: ServerArgs.mamba_radix_cache_strategy
SPECULATIVE_MAX_RUNNING_REQUESTS = 48  # arg_groups/overrides.py: max_running_requests with speculative decoding
MAX_PREFILL_TOKENS = 16384  # server_args.py: ServerArgs.max_prefill_tokens (logged at start-up)
# arg_groups/memory_hook.py handle_gpu_memory_settings, by GPU memory: (MiB below which the row holds,
# chunked_prefill_size, decode CUDA-graph max_bs at TP < 4, at TP >= 4); above the last row the largest. From v0.5.20;
# v0.5.19's memory_hook.py gave GPUs of 20-35 GB chunked_prefill_size 2048 and max_bs 24 / 80 (GPU_ROWS_0_5_19).
GPU_ROWS = ((20480, 2048, 8, 8), (35840, 4096, 48, 160), (61440, 4096, 32, 160), (163840, 8192, 256, 512))
GPU_ROWS_0_5_19 = ((20480, 2048, 8, 8), (35840, 2048, 24, 80), (61440, 4096, 32, 160), (163840, 8192, 256, 512))
GPU_LARGEST = (16384, 512, 512)
CHUNKED_PREFILL_WITHOUT_GPU = 4096
CONTEXT_RESERVE = GIB // 2  # assumed: CUDA context and NCCL buffers, taken before the weights load
# arg_groups/overrides.py: architectures whose hybrid state works with the radix cache (_MAMBA_RADIX_CACHE_ARCHS),
# and those of them with the extra-buffer strategy (_MAMBA_EXTRA_BUFFER_ARCHS); the others keep the radix cache unresolved.
EXTRA_BUFFER_ARCHS = ("KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "Qwen3NextForCausalLM",
                      "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM",
                      "Qwen3_5MoeForCausalLM", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "FalconH1ForCausalLM",
                      "GraniteMoeHybridForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
                      "MiniCPMV4_6ForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
                      "Glm5NextForConditionalGeneration")
RADIX_ARCHS = EXTRA_BUFFER_ARCHS + ("Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "JetNemotronForCausalLM")
# MiniCPM-V 4.6 (models/minicpmv.py MiniCPMV4_6ForConditionalGeneration, configs/minicpmv4_6.py), from v0.5.12: a
# Qwen3.5 GDN text model under a SigLIP tower, given Qwen3.5's mamba radix-cache handling (server_args.py's branch of
# its own at v0.5.12-v0.5.14, "4.6 wraps a Qwen3.5 hybrid GDN backbone"; arg_groups/overrides.py's lists from v0.5.15,
# read at v0.5.23); a multimodal model (multimodal/processors/minicpmv4_6.py) whose forward takes no pp_proxy_tensors
MINICPM_V_4_6_FROM = "0.5.12"
# The release from which arg_groups/overrides.py names an architecture in those lists: v0.5.18's names neither BailingMoeV3,
# which has no SGLang class yet, nor the text-only Qwen3.5 entries of models/qwen3_5_text.py, which it registers; v0.5.16's
# names neither KimiK3 (not registered before v0.5.17) nor Lfm2Moe (registered, models/lfm2_moe.py)
RADIX_SINCE = {"BailingMoeV3ForCausalLM": "0.5.19", "Qwen3_5ForCausalLM": "0.5.19", "Qwen3_5MoeForCausalLM": "0.5.19",
               "Qwen4ExpForConditionalGeneration": "0.5.20", "Glm5NextForConditionalGeneration": "0.5.20",
               "KimiK3ForConditionalGeneration": "0.5.17", "Lfm2MoeForCausalLM": "0.5.17",
               "MiniCPMV4_6ForConditionalGeneration": MINICPM_V_4_6_FROM}
# ... and in the extra-buffer list only (v0.5.15's names Kimi-Linear in the radix list alone: auto resolves to no_buffer)
EXTRA_BUFFER_SINCE = {"KimiLinearForCausalLM": "0.5.16"}
# model_loader/utils.py resolve_transformers_arch: hybrids with no SGLang model class, which the Transformers backend
# cannot serve either (SGLang refuses them at start-up)
UNSUPPORTED_ARCHS = ("JambaForCausalLM", "BambaForCausalLM", "Zamba2ForCausalLM")
# models/mamba.py, models/mamba2.py and models/falcon_mamba.py (new in v0.5.20), with configs/model_config.py reading
# num_attention_heads only where the config has it ("Mamba2 has no num_attention_heads"): before, ModelConfig fails on
# these configs, which name no attention heads (configs/model_config.py at v0.5.10 to v0.5.19:
# self.hf_text_config.num_attention_heads), by the transformers config class of each
NATIVE_FROM_0_5_20 = {"MambaForCausalLM": "MambaConfig", "Mamba2ForCausalLM": "Mamba2Config",
                      "FalconMambaForCausalLM": "FalconMambaConfig"}
# server_args.py _handle_attention_backend_compatibility (v0.5.6.post1 - v0.5.6.post2): without --attention-backend an
# MHA model (not MLA) gets trtllm_mha on every Blackwell card (utils/common.py is_blackwell: SM 10 and SM 12, drafts of
# topk 1 included), which the same function then refuses below SM 100 (is_sm100_supported): such a start on an SM 12
# card stops; v0.5.6 and v0.5.7 pick another backend there (the tables' RTX 5090 cases, run as SM 12)
SM12_TRTLLM_MHA = ("0.5.6.post1", "0.5.7")
# utils/hf_transformers/config.py _try_load_raw_mamba_config (v0.5.20 to v0.5.23): a config with d_model and ssm_cfg and
# neither model_type nor architectures (a mamba_ssm library config) is built as SGLang's MambaConfig, MambaForCausalLM:
# its d_model, n_layer and ssm_cfg.d_state (16 unset), transformers' MambaConfig defaults otherwise (expand 2,
# conv_kernel 4, time_step_rank ceil(d_model / 16)); before, AutoConfig refuses it
RAW_MAMBA_SINCE = "0.5.20"
RAW_MAMBA_ARCH = "MambaForCausalLM"
# configs/mamba2.py (v0.5.20 to v0.5.23): SGLang's Mamba2Config.mamba2_cache_params reads self.intermediate_size, which
# transformers' Mamba2Config never sets (no such field in transformers/models/mamba2/configuration_mamba2.py, 5.12 and
# 5.19, the releases' pins): a Mamba2ForCausalLM config that declares none fails when ModelConfig reads its state
# shape, "'Mamba2Config' object has no attribute 'intermediate_size'" (spec: mamba2.intermediate_size is None)
MAMBA2_NEEDS_INTERMEDIATE = "Mamba2ForCausalLM"
# model_loader/utils.py resolve_transformers_arch (v0.5.10 to v0.5.23): an architecture with no SGLang class (none in
# models/) and none in transformers, whose config's auto_map names no AutoModel, is refused before anything is sized.
# These checkpoints need remote code (--trust-remote-code); their configs (tests/data/hf_configs: no auto_map, or
# AutoConfig only) name no AutoModel. (Where an auto_map names one, SGLang loads that remote class and refuses it as
# "not compatible" unless the class declares attention-backend support; not modelled.) The remote-code MiniMax
# checkpoints (MiniMax-Text-01's and MiniMax-M1's own config.json, model_type minimax_text_01 / minimax_m1: AutoConfig
# and AutoModelForCausalLM in their auto_map) too: SGLang has no MiniMax class before M2 (models/ at 0.5.23), and
# transformers has only MiniMaxForCausalLM (the extra table's MiniMax-M1, tests/data/hf_configs_extra)
REMOTE_ONLY_ARCHS = ("Plamo2ForCausalLM", "BailingMoeLinearV2ForCausalLM", "MiniMaxText01ForCausalLM",
                     "MiniMaxM1ForCausalLM",
                     # Qwen3.8-Flash-Next's first name (model_type qwen3_8_flash_next), which some quantized uploads
                     # keep: SGLang registers the model as Qwen4Exp only (no class of this name in v0.5.20-v0.5.23)
                     "Qwen3_8FlashNextForConditionalGeneration")
# models/qwen3_next.py, falcon_h1.py, lfm2.py and lfm2_moe.py (v0.5.10 to v0.5.23): each class's __init__ asserts
# `self.pp_group.is_first_rank and self.pp_group.is_last_rank`, so pipeline parallelism fails while the model is built
# (the other hybrids split their layers with make_pp_layers; scripts/oracles/sglang_versions.md, read from the source);
# models/lfm2_vl.py (v0.5.10 to v0.5.23) builds lfm2.py's Lfm2ForCausalLM as its language model, which asserts so too:
# by architecture, the class whose __init__ asserts
NO_PP_ARCHS = {"Qwen3NextForCausalLM": "Qwen3NextForCausalLM", "FalconH1ForCausalLM": "FalconH1ForCausalLM",
               "Lfm2ForCausalLM": "Lfm2ForCausalLM", "Lfm2MoeForCausalLM": "Lfm2MoeForCausalLM",
               "Lfm2VlForConditionalGeneration": "Lfm2ForCausalLM"}
# layers/attention/mamba/mamba.py MambaMixer2.__init__ (v0.5.3 to v0.5.23), the mixer of every Mamba2 model SGLang
# builds (models/falcon_h1.py from v0.5.3, nemotron_h.py from v0.5.3.post1, granitemoehybrid.py from v0.5.9, mamba2.py
# from v0.5.20; the others are refused before), asserts `n_groups % self.tp_size == 0 or n_groups == 1` after its
# heads' check (`num_heads % self.tp_size == 0`: mcache refuses heads the state's TP cannot split, kinds/mamba2.py), so
# groups its TP size neither splits nor meets as one stop SGLang while the model is built (engines/common.py
# mamba2_groups_unsplit). Its TP size: from v0.5.14 the attention-TP group's under attention DP
# (get_parallel().attn_tp_size), else the TP group's; before, get_tensor_model_parallel_world_size(), the TP group's at
# every attention-DP width (`MIXER_ATTENTION_TP_FROM`). Not modelled: the next assertion (v0.5.3.post1 on), which
# refuses a quantized checkpoint of nemotron_h.py, granitemoehybrid.py or mamba2.py whose groups TP does not divide,
# one group included (no such checkpoint in the tables)
MAMBA2_GROUPS_ERROR = "If tensor parallel world size does not divide num_groups, then num_groups must equal 1."
MIXER_ATTENTION_TP_FROM = "0.5.14"
# ... and then, from v0.5.3.post1 (read in every wheel to v0.5.23), `n_groups % self.tp_size == 0 or self.tp_size == 1
# or quant_config is None`: a quantized checkpoint's mixer at a TP size that does not divide its groups, one group
# included (engines/common.py mamba2_quantized_tp_refused); models/falcon_h1.py builds its mixers without a quant config
MAMBA2_QUANT_TP_ERROR = ("Tensor parallel currently supported for quantized models only if tensor parallel world size "
                         "divides num groups.")
MAMBA2_QUANT_TP_FROM = "0.5.3.post1"
UNQUANTIZED_MIXER_ARCHS = ("FalconH1ForCausalLM",)
# ... and models/nemotron_h.py from v0.5.3.post1 (its first release) to v0.5.5.post3 builds its layers as vLLM 0.10.2's
# does: config.rms_norm_eps read by every layer (SGLang's configs/nemotron_h.py NemotronHConfig defines
# layer_norm_epsilon only, which v0.5.6 reads), a class for M, - and * only (the "E" MoE layer comes with v0.5.6; the
# config's pattern check, r"^[*-M]+$", is a character range that admits "E"): engines/common.py nemotron_h_layers_error
NEMOTRON_H_LAYERS_UNTIL = "0.5.6"
# models/nano_nemotron_vl.py NemotronH_Nano_Omni_Reasoning_V3 (from v0.5.11, read at v0.5.11 and v0.5.23): Nemotron
# Nano VL v2's class under the Omni name (configs/nano_nemotron_vl.py's config likewise), so every rule of the VL class
# holds for it (NEMOTRON_VL_ARCHS)
NEMOTRON_OMNI_FROM = "0.5.11"
NEMOTRON_VL_ARCHS = ("NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3")
# model_executor/model_runner.py (v0.5.14 to v0.5.23): once the model is built, at PP > 1 the runner asserts
# support_pp, whether the class's forward takes pp_proxy_tensors; these classes' forward does not (models/mamba.py,
# mamba2.py and falcon_mamba.py, from v0.5.20: before, their configs fail first; models/jet_nemotron.py;
# models/nano_nemotron_vl.py, read at v0.5.10 and v0.5.23), so they fail there ("Pipeline Parallel is not compatible
# with this model.")
NO_PP_PROXY_ARCHS = ("MambaForCausalLM", "Mamba2ForCausalLM", "FalconMambaForCausalLM", "JetNemotronForCausalLM",
                     *NEMOTRON_VL_ARCHS, "MiniCPMV4_6ForConditionalGeneration")
# ... and these until the release named: models/qwen4_exp.py's Qwen4ExpForConditionalGeneration.forward(*args,
# **kwargs) at v0.5.20, with pp_proxy_tensors from v0.5.21
PP_PROXY_FROM = {"Qwen4ExpForConditionalGeneration": "0.5.21"}
# Drafts at PP > 1, refused by the launch's check_server_args at every release, in two wordings: server_args.py
# (v0.5.14-v0.5.18) and arg_groups/validation_hook.py (v0.5.19-v0.5.20) assert no speculative decoding on CUDA; from
# v0.5.21 validation_hook.py check_pipeline_parallel_compat runs EAGLE drafts only on a PD prefill node
# (--disaggregation-mode prefill) or with SGLANG_ENABLE_PP_SPEC (an environment variable, off by default), neither
# an mcache setting
PP_DRAFTS_PREFILL_ONLY_FROM = "0.5.21"
# The oldest release whose pipeline-parallel rules are modelled (and checked: the PP cases of the 0.5.14 table); before
# it, the stages' split, state charge and pool agreement were not read, and a run at PP > 1 is refused as not modelled
PP_MODELLED_FROM = "0.5.14"
# The prefill CUDA graphs at PP > 1: off at v0.5.14 (server_args.py _disable_tc_piecewise_cudagraph_if_incompatible,
# "pipeline parallelism (pp_size > 1)") and from v0.5.19 (arg_groups/cuda_graph_hook.py apply_cuda_graph_compatibility:
# "Disabling breakable prefill CUDA graph by default for pipeline parallelism"; memory_hook.py's PP cap on their max_bs
# holds only for graphs asked for, --cuda-graph-backend-prefill, not an mcache setting); v0.5.15-v0.5.18's breakable
# rules (server_args.py _disable_breakable_cudagraph_if_incompatible) have no PP rule, so they capture them
PP_PREFILL_GRAPHS_OFF_FROM = "0.5.19"
# model_executor/pool_configurator.py DefaultPoolConfigurator (v0.5.17 to v0.5.23): a PP stage without a full-attention
# layer, in a model that has some (has_kv_on_another_pp_stage), offers int64 max tokens to the stages' MIN; before,
# calculate_pool_sizes divides the memory by its zero cell (v0.5.16: the same file; v0.5.14-v0.5.15 too, called by
# model_runner_kv_cache_mixin.py _resolve_memory_pool_config)
KV_LESS_STAGE_FROM = "0.5.17"
INT64_MAX = (1 << 63) - 1
# SGLang's class of these architectures comes with the release named, and its file: before it neither SGLang nor
# transformers has one, so model_loader/utils.py resolve_transformers_arch (v0.5.12-v0.5.18) loads the checkpoint's
# remote model (auto_map.AutoModel) and refuses it or serves it through the Transformers backend, as that code declares;
# mcache sizes neither and refuses, in SGLang's opening words for a model module it cannot find
NATIVE_SINCE = {"BailingMoeV3ForCausalLM": ("0.5.19", "models/bailing_moe_v3.py"),
                "KimiK3ForConditionalGeneration": ("0.5.17", "models/kimi_k3.py"),
                "NemotronHPuzzleForCausalLM": ("0.5.13", "models/nemotron_h.py"),
                "NemotronH_Nano_Omni_Reasoning_V3": (NEMOTRON_OMNI_FROM, "models/nano_nemotron_vl.py"),
                # Qwen3.8-Flash-Next: models/qwen4_exp.py and mem_cache/qsa_kv_pool.py from 0.5.20 (not in 0.5.19)
                "Qwen4ExpForCausalLM": ("0.5.20", "models/qwen4_exp.py"),
                "Qwen4ExpForConditionalGeneration": ("0.5.20", "models/qwen4_exp.py"),
                # GLM-5.3-Flash: models/glm5_next.py and configs/glm5_next.py from 0.5.20 (not in 0.5.19)
                "Glm5NextForConditionalGeneration": ("0.5.20", "models/glm5_next.py")}
# model_loader/utils.py resolve_transformers_arch: hybrids with no SGLang model class (none in models/) that the
# Transformers backend serves; their config declares no linear-attention state (configs/model_config.py), so there is no
# state pool and the token pool keeps K and V for every layer (MHATokenToKVPool over num_hidden_layers)
TRANSFORMERS_ARCHS = ("MiniMaxForCausalLM",)
# v0.5.6.post1 alone pins transformers==5.0.0rc0 (its wheel's Requires-Dist; 4.57.1 at v0.5.6 and v0.5.6.post2), which
# knows the lfm2_moe model type and whose GraniteMoeHybrid and Lfm2Moe classes declare attention-backend support
# (is_backend_compatible), so resolve_transformers_arch serves both through the Transformers backend there, as
# TRANSFORMERS_ARCHS: the release and the architectures
TRANSFORMERS_RC_SERVES = ("0.5.6.post1", ("GraniteMoeHybridForCausalLM", "Lfm2MoeForCausalLM"))
DEFAULT_CONTEXT_LEN = 2048  # utils/hf_transformers/common.py get_context_length: a config without a length key
# configs/model_config.py uses_kda_attention reads linear_attn_config.kda_layers: the configs of these architectures
KDA_CONFIG_ARCHS = ("KimiLinearForCausalLM", "KimiK3ForConditionalGeneration")
GLM5_NEXT = "Glm5NextForConditionalGeneration"
# arg_groups/cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible's "KDA hybrid linear attention" rule (from
# v0.5.20) spares GLM-5.3-Flash from v0.5.22 ("BCG-validated"); v0.5.20's and v0.5.21's keep its prefill graphs off by
# default like the other KDA models' (configs/glm5_next.py always declares linear_attn_config.kda_layers)
KDA_PREFILL_GRAPHS_SPARED = {GLM5_NEXT: "0.5.22"}
# model_runner_components/spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state (v0.5.20 on): a path-less draft
# charges the KV pool the target config's num_nextn_predict_layers (pool_configurator.py eagle_draft_num_layers), nothing
# where it declares none (at v0.5.14 to v0.5.19 only a --speculative-draft-model-path draft is charged, a path-less
# one never: DRAFTER_KV_FROM; at v0.5.10 to v0.5.13 the token pool's cell counts no draft layer); these architectures'
# configs (configs/qwen3_next.py Qwen3NextConfig, configs/qwen3_5.py Qwen3_5TextConfig) name their MTP layers
# mtp_num_hidden_layers or not at all
NO_NEXTN_ARCHS = ("Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                  "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM")
DRAFTER_KV_FROM = "0.5.20"
DRAFT_CELL_ADDED_FROM = "0.5.22"  # the draft layers' share added to the cell, not the cell scaled (`_cell`)
# A DFlash drafter (`spec.drafter`) drafts as DFLASH from v0.5.11 (server_args.py --speculative-algorithm choices;
# arg_groups/speculative_hook.py _handle_dflash from v0.5.13): one step of `--speculative-num-draft-tokens` draft
# tokens, the drafter's block size when not given (`DFLASH_DEFAULT_BLOCK` when it names none); mcache's `draft` N is N + 1
# draft tokens, as an EAGLE chain's. Its KV shares the target's token pool: model_executor/pool_configurator.py with
# speculative/dflash_utils.py scale_kv_cell_size_per_token_for_dflash scales the cell by (layers + drafter layers) /
# layers, rounded up, at v0.5.11-v0.5.17; from v0.5.18 the drafter's own cell is added (`DRAFTER_CELL_FROM`: its KV
# heads over the TP, K and V, its layers, in the KV dtype given, else the drafter's own dtype:
# model_runner_components/spec_aux_hidden_state.py _resolve_dflash_draft_cell_size, mem_cache/draft_kv_budget.py at
# v0.5.23). The launch refuses it at more than one stage and under attention DP (`_dflash_error`).
DFLASH_FROM = "0.5.11"
DRAFTER_CELL_FROM = "0.5.18"
# models/dflash.py registers DFlash2DraftModel from v0.5.19 (EntryClass; v0.5.11 - v0.5.18 only DFlashDraftModel): before,
# the draft worker, built once the target's pools are sized, finds no class for a DFlash2 drafter and
# model_loader/utils.py resolve_transformers_arch refuses it (`_drafter_class_error`)
DFLASH2_FROM = "0.5.19"
DFLASH_DEFAULT_BLOCK = 16
# speculative_hook.py _handle_dflash refuses attention DP (v0.5.20 - v0.5.22: "on non-NPU devices"; v0.5.23 serves it
# with --enable-dp-lm-head, which mcache does not model: refused in its words)
DFLASH_DP_NPU_FROM = "0.5.20"
DFLASH_DP_LM_HEAD_FROM = "0.5.23"
# mem_cache/kv_cache_configurator.py _handle_max_mamba_cache from v0.5.17: the state budget counts the pool's dummy slot
# (memory_pool.py MambaPool allocates size + 1 slots in every release) and one draft state more, (slots + 1) x per_req,
# solving (budget - per_req) // per_req, with drafts (budget - per_req x (1 + D)) // (per_req x (1 + D / ratio)); and it
# charges a PP stage the per-request bytes of the stage with the most state layers (pp_layer_scale). v0.5.10-v0.5.16 count
# slots x per_req, solve budget // per_req (budget // (per_req x (1 + D / ratio))), and charge every stage the whole
# model's per-request bytes
DUMMY_SLOT_FROM = "0.5.17"
# kv_cache_configurator.py resolve_max_num_reqs logs "max_running_requests is capped to ... by the mamba state cache"
# from v0.5.17 (v0.5.16's, and the model runner's before, cap silently)
CAPPED_WARNING_FROM = "0.5.17"
MLA_PREFILL_GRAPH_MB = 1536  # arg_groups/memory_hook.py reserve_for_graph_mb: prefill graphs with an MLA backend
# server_args.py _handle_gpu_memory_settings at v0.5.13 reserves, past the 10 GiB floor, 4 GiB more for an EAGLE-family
# draft model and its CUDA graphs (6 GiB for STANDALONE, none for NGRAM: algorithms mcache's drafts are not); v0.5.14's
# reserves nothing for drafts
DRAFT_RESERVE_MB, DRAFT_RESERVE_UNTIL = 4096, "0.5.14"
# kv_cache_configurator.py resolve_max_num_reqs caps a given --max-running-requests at half the tokens from v0.5.14
# (model_runner_kv_cache_mixin.py _resolve_max_num_reqs); v0.5.13's caps it at the default's estimate,
# clamp(tokens / context x 512, 2048, 4096), and not at the tokens; v0.5.14 also refuses, first, weights that leave no
# static memory (_profile_available_bytes, `_no_kv_memory`): v0.5.13 sizes on, and refuses the pool that results
REQUESTS_CAP_FROM = "0.5.14"
# model_runner_kv_cache_mixin.py handle_max_mamba_cache from v0.5.13: a draft's intermediate states come out of the state
# budget, solved jointly with the slots (budget // (per x (1 + D / ratio))), for at most the requests the slots hold, and a
# state pool of no slot is refused ("Not enough GPU memory for hybrid ...", then _resolve_max_num_reqs's "... too small
# to serve any requests"); v0.5.12's takes the states of every --max-running-requests (the speculative hook's 48) off
# the rest first, sizes the slots from what is left, and checks neither
JOINT_DRAFTS_FROM = "0.5.13"
# model_executor/pool_configurator.py (new in v0.5.11) sizes the token pool; v0.5.10's model runner did
# (model_runner_kv_cache_mixin.py profile_max_num_token, the same arithmetic)
POOL_CONFIGURATOR_FROM = "0.5.11"
# server_args.py _disable_breakable_cudagraph_if_incompatible before v0.5.18 turns the prefill CUDA graphs off for an
# MLA backend (v0.5.17: unless DeepSeek sparse attention, which no hybrid mcache imports has) and, at v0.5.17, for
# NemotronH (configs/model_config.py is_nemotron_h); v0.5.18's rules name neither, so both capture them from then on
PREFILL_GRAPHS_FROM = "0.5.18"
NEMOTRON_H_ARCHS = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")
# ... and before v0.5.16 for every multimodal model (v0.5.16 on: only one whose ModelConfig lacks breakable-CUDA-graph
# support, which the multimodal hybrids mcache imports have)
MULTIMODAL_GRAPHS_FROM = "0.5.16"
# ... which is configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs (arg_groups/cuda_graph_hook.py
# disable_breakable_cudagraph_if_incompatible, server_args.py's before v0.5.19: "multimodal model"): these multimodal
# hybrids are in no release's list (read at v0.5.16, v0.5.17, v0.5.20 and v0.5.23), so they capture no prefill graphs
NO_BREAKABLE_MULTIMODAL = ("Lfm2VlForConditionalGeneration", *NEMOTRON_VL_ARCHS, "MiniCPMV4_6ForConditionalGeneration")
# ... and these join the list at the release named (Qwen4Exp: not in v0.5.20's or v0.5.21's, in v0.5.22's and v0.5.23's)
BREAKABLE_MULTIMODAL_FROM = {"Qwen4ExpForConditionalGeneration": "0.5.22"}
# Before v0.5.15 the prefill graphs' default backend is tc_piecewise (server_args.py _apply_cuda_graph_compatibility), whose
# rules (_disable_tc_piecewise_cudagraph_if_incompatible) spare MLA but turn the graphs off for a multimodal model and for
# configs/model_config.py piecewise_cuda_graph_disabled_model_archs (v0.5.10 to v0.5.14; before v0.5.14 the rules are
# server_args.py _handle_piecewise_cuda_graph's, the same for these models)
BREAKABLE_GRAPHS_FROM = "0.5.15"
PIECEWISE_DISABLED_ARCHS = ("Qwen3NextForCausalLM", "BailingMoeV2_5ForCausalLM")
# server_args.py _handle_piecewise_cuda_graph at v0.5.10 also turns them off for speculative decoding; v0.5.11's does not
DRAFT_PREFILL_GRAPHS_FROM = "0.5.11"
# Multimodal checkpoints (configs/model_config.py ModelConfig.is_multimodal: an architecture of multimodal_model_archs,
# or a config whose text model is a sub-config, hf_config is not hf_text_config; a spec with a `vision` tower), v0.5.10
# to v0.5.23. arg_groups/memory_hook.py adjust_mem_fraction_for_vlm (server_args.py's before v0.5.19) lowers a default
# mem_fraction_static (not a given one) by VLM_BASE_FACTOR x clamp(1 - 0.1 x (L x H^2 / (24 x 1024^2) - 1), 0.8, 1.05),
# L and H the vision config's `num_hidden_layers` and `hidden_size` attributes (VLM_DEFAULT_LAYERS and VLM_DEFAULT_HIDDEN
# where the config class has none), after rounding the default, without rounding the product; it logs nothing.
# (v0.5.10 to v0.5.19 multiply in the memory settings' handler itself, v0.5.20 on returns the product from the function;
# with post-capture KV sizing, SGLANG_ENABLE_POST_CAPTURE_KV_SIZING, off by default and not modelled, v0.5.20 on
# subtracts 8 GiB instead.)
VLM_BASE_FACTOR = 0.95
VLM_DEFAULT_LAYERS, VLM_DEFAULT_HIDDEN = 24, 1024  # getattr's defaults, also the baseline ViT-L/14
VLM_SENSITIVITY, VLM_FACTOR_RANGE = 0.1, (0.8, 1.05)
# Vision config classes of SGLang's own that expose the tower's depth and width as num_hidden_layers and hidden_size
# whatever the config calls them: configs/kimi_k3.py KimiK3VisionConfig (vt_num_hidden_layers, vt_hidden_size). Others
# keep the config's names: Qwen3.5's `depth` (configs/qwen3_5.py Qwen3_5VisionConfig, transformers' likewise) is not
# read, so SGLang takes 24 layers.
VISION_ALIAS_ARCHS = ("KimiK3ForConditionalGeneration",)
# ... and a config class of SGLang's own that keeps the tower's dict as `raw_vision_config`, with no `vision_config`
# attribute: configs/nano_nemotron_vl.py NemotronH_Nano_VL_V2_Config (v0.5.6 to v0.5.23), so adjust_mem_fraction_for_vlm
# returns the fraction as it was (the multimodal cache is still reserved: the architecture is in multimodal_model_archs)
NO_VISION_CONFIG_ARCHS = NEMOTRON_VL_ARCHS
# Architectures mcache imports that SGLang serves as multimodal whatever the spec says (configs/model_config.py:
# Qwen3.5's, LFM2-VL's and Nemotron-H VL's in multimodal_model_archs; Kimi-K3's config wraps a text_config): a spec of
# theirs without a `vision` tower is sized without the VLM rules, with a caveat
MULTIMODAL_ARCHS = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                    "KimiK3ForConditionalGeneration", "Lfm2VlForConditionalGeneration", *NEMOTRON_VL_ARCHS,
                    "MiniCPMV4_6ForConditionalGeneration", GLM5_NEXT)
# ... of which these build no tower where the config has no vision_config (configs/glm5_next.py Glm5NextConfig keeps
# vision_config None, v0.5.20-v0.5.23): the fraction stays as it was, the multimodal cache is reserved all the same
NO_DEFAULT_TOWER_ARCHS = (GLM5_NEXT,)
# mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb (new in v0.5.18, the same to v0.5.23): a multimodal
# model's embedding cache (environ.py SGLANG_VLM_CACHE_SIZE_MB, 100) comes off the KV budget before the state pool is
# sized (feature-transport pools add SGLANG_MM_FEATURE_CACHE_MB only with --mm-feature-transport cuda_ipc / cuda_vmm,
# which a single node does not pick: arg_groups/serving_hook.py resolves it to cpu); v0.5.17's _profile_available_bytes
# takes nothing off
VLM_CACHE_MB, VLM_CACHE_FROM = 100, "0.5.18"
# ---- ROCm: an AMD card (gpu_catalogue.py Gpu.vendor `AMD`), where SGLang's is_hip() holds (`_rocm`) ----
# The default attention backend on HIP is aiter for an MHA model and, for an MLA one, where the KV heads per rank
# (ModelConfig.get_num_kv_heads(tp): the config's num_key_value_heads over TP, which Kimi-Linear's config sets to its
# num_attention_heads, the MLA block's num_heads) are 16 or 128, else triton: server_args.py
# _handle_attention_backend_compatibility (v0.5.4.post1 to v0.5.18), arg_groups/model_override_base.py
# get_default_attn_backend (v0.5.19 to v0.5.23). With aiter a model context above
# 8,192 tokens multiplies mem_fraction_static, the default or a given one, by 0.90 at v0.5.4.post1 and by 0.85 from
# v0.5.4.post2 (server_args.py _handle_attention_backend_compatibility, arg_groups/attention_hook.py from v0.5.19)
AITER_MLA_HEADS, AITER_CONTEXT = (16, 128), 8192
AITER_FRACTIONS = (("0.5.4.post1", 0.90), ("0.5.4.post2", 0.85))  # (release, factor), in order
# An extra buffer (the strategy asked for, or `auto`'s) is refused on HIP before v0.5.16, in each release's words
# (server_args.py: _handle_model_specific_adjustments v0.5.7-v0.5.8, _handle_mamba_radix_cache v0.5.9-v0.5.13,
# _validate_mamba_extra_buffer v0.5.14-v0.5.15); v0.5.16's adds ROCm ("extra_buffer needs CUDA/MUSA/NPU/ROCm (FLA).")
ROCM_EXTRA_BUFFER_REFUSED = (("0.5.7", "Mamba extra_buffer is only supported on CUDA devices with FLA backend"),
                             ("0.5.11", "Mamba extra_buffer is only supported on CUDA and MUSA devices with FLA backend"),
                             ("0.5.12", "Mamba extra_buffer is only supported on CUDA and MUSA and NPU devices with FLA "
                                        "backend"),
                             ("0.5.14", "extra_buffer needs CUDA/MUSA/NPU (FLA)."), ("0.5.16", None))
# A draft with no_buffer and the radix cache, which SGLang refuses on CUDA (`_scheduler_strategy`), turns the radix
# cache off on HIP at v0.5.11-v0.5.13 ("Speculative decoding for {arch} is not compatible with radix cache on ROCm
# devices. Automatically disabling radix cache.": server_args.py _handle_mamba_radix_cache; v0.5.10 refuses as on CUDA)
ROCM_DRAFT_NO_RADIX = ("0.5.11", "0.5.14")
# A ModelOpt checkpoint is refused on HIP ("{method} quantization is currently not supported in ROCm.":
# configs/model_config.py ModelConfig._verify_quantization, whose rocm_supported_quantization lists no ModelOpt method in
# the releases read, v0.5.4 to v0.5.23), by the method name SGLang gives it (`_modelopt_method`)
ROCM_MODELOPT_REFUSED_FROM = "0.5.4"
# configs/model_config.py _parse_quant_hf_config names a ModelOpt checkpoint by its quant_algo (_parse_modelopt_quant_config:
# one with FP4 in it modelopt_fp4, FP8 modelopt_fp8): a hf_quant_config.json at every release read (v0.5.4 on), a
# config.json `quantization_config` with quant_method modelopt from v0.5.10; before, the latter keeps the method
# `modelopt`, QUANTIZATION_METHODS' ModelOptFp8Config, whose from_config (layers/quantization/modelopt_quant.py) refuses
# an algo without FP8 in it as the model loads
MODELOPT_CONFIG_NAMED_FROM = "0.5.10"
# model_loader/loader.py _get_quantization_config, as the model loads: a quant method needing a newer GPU than the
# card's CUDA compute capability (major x 10 + minor, torch.cuda.get_device_capability) is refused; ModelOpt NVFP4's
# minimum (layers/quantization/modelopt_quant.py ModelOptFp4Config.get_min_capability) is 100 (Blackwell) from v0.5.2
# to v0.5.12, 80 from v0.5.13: (release, minimum), in order
MODELOPT_FP4_MIN_CAPABILITY = (("0.5.2", 100), ("0.5.13", 80))
# No prefill CUDA graphs on HIP (`_prefill_graph_mb`): v0.5.10-v0.5.13's server_args.py _handle_piecewise_cuda_graph
# ("Non-CUDA hardware") and v0.5.14's _disable_tc_piecewise_cudagraph_if_incompatible ("non-CUDA hardware
# (HIP/NPU/CPU/MPS/XPU)") turn them off; from v0.5.15 model_executor/cuda_graph_config.py picks the breakable backend
# only where is_cuda(), else tc_piecewise (v0.5.15-v0.5.21, whose rules, server_args.py and from v0.5.19
# arg_groups/cuda_graph_hook.py, turn it off there by the same "non-CUDA hardware" rule) or none (v0.5.22 on)
# ---- attention data parallelism (`--dp-size N --enable-dp-attention`: mcache's --attn-dp-size N) ----
# Modelled at every release, each checked by the DP cases of its table (scripts/oracles/sglang.py _dp_grid). A rank
# of attention DP N runs its own scheduler over its own pools: every figure here is one attention-DP rank's.
# Attention DP narrower than TP (--dp-size N < --tp-size: an attention-TP group of tp / N ranks, mcache's
# --attn-dp-size N) is sized by the same rules at every release, the KV heads and the state split over the attention-TP
# group (ParallelLayout.state_tp), each release checked by its table's cases (sglang.py _narrow_dp_grid)
# Attention DP at PP > 1 (SGLang's PP, from `PP_MODELLED_FROM`): each stage sized by the same rules as at PP 1 and
# without attention DP (no rule of either names the other), each release checked by its table's cases
# (sglang.py _pp_dp_grid)
DP_REQUESTS_FLOOR_FROM = "0.5.23"  # kv_cache_configurator.py: max(1, max_running_requests // attn_dp_size); before, n // dp
# server_args.py before v0.5.17: the prefill CUDA graphs' rules turn them off under DP attention
# (_handle_piecewise_cuda_graph at v0.5.10-v0.5.13, "DP attention" in _disable_tc_piecewise_cudagraph_if_incompatible at
# v0.5.14 and _disable_breakable_cudagraph_if_incompatible at v0.5.15-v0.5.16); v0.5.17's rules name it no more, so it
# captures them
DP_PREFILL_GRAPHS_FROM = "0.5.17"
DP_RESERVE_MB_0_5_2 = 4096  # server_args.py __post_init__ at v0.5.2: 4 GiB more reserved with DP attention
# model_runner.py handle_max_mamba_cache at v0.5.3.post2-v0.5.6 (v0.5.3.post1: initialize's mambaish_config and
# hybrid_gdn_config blocks): the state pool is the replica's (a given --max-mamba-cache-size, else without the radix
# cache --max-running-requests, else FIRST_LINE_SLOTS; with it the share), divided by the attention-DP width for the GDN
# models alone (hybrid_gdn_config, FIRST_LINE_RADIX_ARCHS); initialize's is_hybrid_gdn block (v0.5.2-v0.5.3) and the
# kv-cache mixin (from v0.5.7) divide it for every model: [from, until)
GDN_SLOTS_BY_DP = ("0.5.3.post1", "0.5.7")
# configs/falcon_h1.py mamba2_cache_params at v0.5.3-v0.5.4.post2 shards Falcon-H1's state over the whole TP group
# (get_tensor_model_parallel_world_size), not the attention-TP group, so under attention DP each rank holds 1 / tp of it;
# from v0.5.4.post3 over get_attention_tp_size, as every other config. configs/mamba.py (MambaConfig, FalconMambaConfig) and
# configs/mamba2.py (Mamba2Config), new in v0.5.20 (`NATIVE_FROM_0_5_20`), build the pure Mamba models' state over
# get_parallel().tp_size (read to v0.5.23): the architectures and their releases, [from, until; None: still so)
STATE_OVER_TP = {"FalconH1ForCausalLM": ("0.5.3", "0.5.4.post3"), "MambaForCausalLM": ("0.5.20", None),
                 "FalconMambaForCausalLM": ("0.5.20", None), "Mamba2ForCausalLM": ("0.5.20", None)}
# ---- v0.5.2 to v0.5.9 (`_first_line`) ----
# The hybrids whose state the model runner sizes, from the release that registers each (model_runner.py is_hybrid_gdn:
# models/qwen3_next.py at v0.5.2, models/falcon_h1.py from v0.5.3; v0.5.3.post1's mambaish_config adds
# models/nemotron_h.py, v0.5.4.post2's models/kimi_linear.py, its kimi_linear_config; v0.5.5.post1's hybrid_gdn_config
# models/jet_nemotron.py, v0.5.6's jet_vlm.py, its mamba2_config the Nemotron-H Nano VL config's llm_config,
# models/nano_nemotron_vl.py; v0.5.9's mamba2_config adds models/lfm2.py, lfm2_moe.py and granitemoehybrid.py (a config
# with a mamba layer), its hybrid_gdn_config models/qwen3_5.py (get_text_config()), its hybrid_lightning_config
# models/bailing_moe_linear.py). SGLang cut its post releases of v0.5.3-v0.5.6 from its main branch, so a class can
# come with one (scripts/oracles/sglang_versions.md)
FIRST_LINE_NATIVE = {"Qwen3NextForCausalLM": "0.5.2", "FalconH1ForCausalLM": "0.5.3",
                     "NemotronHForCausalLM": "0.5.3.post1", "KimiLinearForCausalLM": "0.5.4.post2",
                     "JetNemotronForCausalLM": "0.5.5.post1", "JetVLMForConditionalGeneration": "0.5.6",
                     "NemotronH_Nano_VL_V2": "0.5.6",
                     "Lfm2ForCausalLM": "0.5.9", "Lfm2MoeForCausalLM": "0.5.9", "GraniteMoeHybridForCausalLM": "0.5.9",
                     "Qwen3_5ForConditionalGeneration": "0.5.9", "Qwen3_5MoeForConditionalGeneration": "0.5.9",
                     "BailingMoeV2_5ForCausalLM": "0.5.9"}
# model_runner.py initialize: the radix cache is turned off for every state model at v0.5.2-v0.5.3.post1 ("Hybrid GDN
# model detected, disable radix cache"; v0.5.3.post1: "{class} model detected, ..."), for the Mamba2 ones (mamba2_config:
# Falcon-H1, Nemotron-H, from v0.5.6 the Nemotron-H VL config) from v0.5.3.post2 and for Kimi-Linear from v0.5.4.post2
# (server_args.py _handle_model_specific_adjustments: "Disabling Radix Cache"), where a GDN model (hybrid_gdn_config:
# Qwen3-Next, from v0.5.5.post1 JetNemotron, from v0.5.6 JetVLM) keeps it and holds
# MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO slots per running request
FIRST_LINE_RADIX_FROM, FIRST_LINE_RADIX_RATIO = "0.5.3.post2", 3
FIRST_LINE_RADIX_ARCHS = ("Qwen3NextForCausalLM", "JetNemotronForCausalLM", "JetVLMForConditionalGeneration")
# v0.5.7 sizes the pools in model_executor/model_runner_kv_cache_mixin.py (init_memory_pool, handle_max_mamba_cache; the
# request count in model_runner.py initialize): initialize no longer turns the Mamba2 hybrids' radix cache off, the
# strategy setting is new (server_args.py mamba_scheduler_strategy), and the state pool's rules change (`_first_line_pool`)
MIXIN_POOL_FROM = "0.5.7"
# ... but initialize stopped turning the Mamba2 hybrids' radix cache off before: at v0.5.6.post1 (model_runner.py), where
# model_runner.py handle_max_mamba_cache still sizes the pool (the share with the radix cache, FIRST_LINE_RADIX_RATIO
# slots a request); Kimi-Linear's stays off (server_args.py, FIRST_LINE_RADIX_OFF)
MAMBA2_RADIX_KEPT_FROM = "0.5.6.post1"
# server_args.py _handle_model_specific_adjustments at v0.5.4.post2-v0.5.9: "Disabling Radix Cache for KimiLinearForCausalLM"
# (v0.5.9: _handle_mamba_radix_cache(support_mamba_cache=False), for BailingMoeV2_5 too)
FIRST_LINE_RADIX_OFF = ("KimiLinearForCausalLM", "BailingMoeV2_5ForCausalLM")
# ... and at v0.5.7-v0.5.9 its NemotronH and FalconH1 / JetNemotron / JetVLM branches (v0.5.9: GraniteMoeHybrid and
# Lfm2 too, which are state models from v0.5.9 only) assert "mamba extra_buffer is not supported for {model_arch} model"
# (an AssertionError at start-up, whether or not the radix cache is on)
NO_EXTRA_BUFFER_0_5_7 = ("NemotronHForCausalLM", "FalconH1ForCausalLM", "JetNemotronForCausalLM",
                         "JetVLMForConditionalGeneration", "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM")
# v0.5.8, model_runner_kv_cache_mixin.py: handle_max_mamba_cache takes a draft's intermediate states off the rest in
# every branch (v0.5.7: with the radix cache and no given size only), init_memory_pool adds the extra slots per request
# for an extra buffer only (v0.5.7: for no_buffer too); server_args.py _handle_model_specific_adjustments turns the radix
# cache off for these architectures with a draft ("speculative decoding for NemotronHForCausalLM is not supported with
# radix cache yet")
MIXIN_0_5_8 = "0.5.8"
DRAFT_NO_RADIX_0_5_8 = ("NemotronHForCausalLM",)
# v0.5.9, server_args.py _handle_mamba_radix_cache (called by the architecture branches of
# _handle_model_specific_adjustments): no_buffer with the radix cache and a draft turns the radix cache off ("speculative
# decoding for {model_arch} is not supported with radix cache yet") for every architecture of those branches that keeps
# it (Lfm2Moe has no branch); model_runner_kv_cache_mixin.py handle_max_mamba_cache: without the radix cache and
# without --max-running-requests the state pool takes the memory share r / (1 + r) (v0.5.7-v0.5.8: FIRST_LINE_SLOTS)
RADIX_HANDLER_0_5_9 = "0.5.9"
DRAFT_NO_RADIX_0_5_9 = ("Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                        "NemotronHForCausalLM", "FalconH1ForCausalLM", "JetNemotronForCausalLM",
                        "JetVLMForConditionalGeneration", "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM")
# ... and on an AMD card those releases refuse an extra buffer (`ROCM_EXTRA_BUFFER_REFUSED`) only where their check
# is reached: at v0.5.7 it sits in the Qwen3-Next branch of server_args.py _handle_model_specific_adjustments, at v0.5.8
# in its Glm4Moe branch (no hybrid's), at v0.5.9 in _handle_mamba_radix_cache, which the branches of these
# architectures call (those of NO_EXTRA_BUFFER_0_5_7 refuse the extra buffer first)
ROCM_EXTRA_BUFFER_CHECKED = (("0.5.7", ("Qwen3NextForCausalLM",)), ("0.5.8", ()), ("0.5.9", DRAFT_NO_RADIX_0_5_9))
# hf_transformers_utils.py get_config at v0.5.2-v0.5.8 (utils/hf_transformers_utils.py from v0.5.4) reads the checkpoint's
# config with AutoConfig under transformers 4.56.1-4.57.1, which has no Qwen3.5 nor LFM2-MoE model type, and SGLang's
# config registry has none before v0.5.9 (configs/qwen3_5.py, configs/lfm2_moe.py); these checkpoints ship no
# configuration code (no auto_map), so AutoConfig.from_pretrained (transformers/models/auto/configuration_auto.py)
# refuses them as the server args resolve, before anything else is checked: by architecture, the model type, the
# release whose registry first has it and the file it comes in
UNKNOWN_TYPE_UNTIL = {"Qwen3_5ForConditionalGeneration": ("qwen3_5", "0.5.9", "configs/qwen3_5.py"),
                      "Qwen3_5MoeForConditionalGeneration": ("qwen3_5_moe", "0.5.9", "configs/qwen3_5.py"),
                      "Lfm2MoeForCausalLM": ("lfm2_moe", "0.5.9", "configs/lfm2_moe.py"),
                      # transformers 5.6, v0.5.11's pin, has no minicpmv4_6 (5.7 on does)
                      "MiniCPMV4_6ForConditionalGeneration": ("minicpmv4_6", MINICPM_V_4_6_FROM,
                                                              "configs/minicpmv4_6.py")}
# ... and by architecture, the model types no modelled release knows: LFM3's lfm3 and lfm3_vl are vLLM's own config
# classes (vLLM v0.34.0 transformers_utils/configs/lfm3.py, lfm3_vl.py); SGLang's configs/ (read at v0.5.23) and
# transformers have none
UNKNOWN_TYPES = {"Lfm3ForCausalLM": "lfm3", "Lfm3VlForConditionalGeneration": "lfm3_vl"}
# model_runner.py: without the radix cache the state pool holds --max-mamba-cache-size, else --max-running-requests
# (the speculative default's 48 included), else (to v0.5.8) this many slots
FIRST_LINE_SLOTS = 512
# model_loader/utils.py resolve_transformers_arch at v0.5.2-v0.5.9, with each release's transformers (4.56.1, 4.57.0,
# 4.57.1 at v0.5.4 to v0.5.9): for the hybrids without an SGLang class, a transformers class the backend cannot serve
# (is_backend_compatible is False: "has no SGlang implementation and the Transformers implementation is not compatible") ...
FIRST_LINE_INCOMPATIBLE = ("FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM") + UNSUPPORTED_ARCHS
# ... one it serves (as TRANSFORMERS_ARCHS: no state pool, K and V on every layer; to v0.5.8, models/lfm2.py comes
# with v0.5.9) ...
FIRST_LINE_TRANSFORMERS = ("Lfm2ForCausalLM",)
# ... and none at all, no auto_map.AutoModel either (REMOTE_ONLY_ARCHS' refusal; LFM2-MoE's config fails before,
# UNKNOWN_TYPE_UNTIL)
FIRST_LINE_NO_CLASS = ("NemotronHForCausalLM", "KimiLinearForCausalLM")
# server_args.py __post_init__ at v0.5.2 (v0.5.3 moved the defaults to _handle_gpu_memory_settings, below): the reserve
# by GPU memory, (MiB below which the row holds, GiB reserved, and TP x PP / this many GiB more), above the last 32 GiB;
# 2 GiB more with a draft model (EAGLE; STANDALONE 6, not an mcache draft); the chunked prefill by GPU memory
RESERVE_ROWS_0_5_2 = ((35840, 2.8, 10), (92160, 9.5, 2), (163840, 12, 2))
RESERVE_LARGEST_0_5_2 = 32
CHUNKED_ROWS_0_5_2 = ((35840, 2048), (163840, 8192))
CHUNKED_LARGEST_0_5_2 = 16384
# server_args.py _handle_gpu_memory_settings at v0.5.3-v0.5.4: the rows of GPU_ROWS_0_5_19 but decode max_bs 16 at TP < 4
# on GPUs of 20-35 GB (v0.5.4.post1-v0.5.8: 24, GPU_ROWS_0_5_19's); to v0.5.8, past the 10 GiB floor 2 GiB more for a draft
# model and no prefill CUDA graphs reserved
GPU_ROWS_0_5_4 = ((20480, 2048, 8, 8), (35840, 2048, 16, 80), (61440, 4096, 32, 160), (163840, 8192, 256, 512))
FIRST_LINE_DRAFT_RESERVE_MB = 2048
# model_runner.py init_memory_pool: the KV dtypes it takes (v0.5.2-v0.5.3: auto, fp8_e5m2, fp8_e4m3; v0.5.4 adds bf16 /
# bfloat16, v0.5.5 fp4_e2m1, which mcache does not size; the same at v0.5.6 and in v0.5.7-v0.5.8's configure_kv_cache_dtype);
# another raises "Unsupported kv_cache_dtype"
FIRST_LINE_KV_DTYPES = {"auto": "0.5.2", "fp8_e5m2": "0.5.2", "fp8_e4m3": "0.5.2", "bfloat16": "0.5.4"}
# configs/qwen3_next.py, falcon_h1.py hybrid_gdn_params (v0.5.2-v0.5.3), configs/mamba_utils.py mamba2_state_dtype
# (v0.5.4-v0.5.8): the state dtype is --mamba-ssm-dtype (default float32; the config's mamba_ssm_dtype is not read),
# looked up in {float32, bfloat16}: another fails, KeyError. From v0.5.9 mamba2_state_dtype(config) reads the config's
# (text config's) mamba_ssm_dtype, --mamba-ssm-dtype overriding it (SGLANG_MAMBA_SSM_DTYPE), float16 taken too
FIRST_LINE_SSM_DTYPES = ("float32", "bfloat16")
CONFIG_SSM_DTYPE_FROM = "0.5.9"
# configs/model_config.py _get_and_verify_dtype (v0.5.2 - v0.5.23): --dtype auto takes the config's dtype, float32 where
# it names none, and serves float32 in float16 (bfloat16 for Gemma, which mcache does not size): its weights too
FLOAT32_SERVED_AS = "float16"


class Setup(Struct, frozen=True):
    """SGLang's settings for the run, as it resolved them: the context length and the context asked, the cache
    dtypes, draft tokens, the page size, the state slots per running request (`ratio`, by the radix-cache strategy
    `strategy`), the requests asked for, the state share `r` (None before v0.5.3.post2), the fixed state pool and token cap, the chunked
    prefill, `mem_fraction_static` and the free memory before the weights load (`pre`; None without a GPU), and
    whether the state pool follows the requests asked for (without radix cache), the dummy slot the state budget
    counts (`DUMMY_SLOT_FROM`); SGLang's refusal, whether the Transformers backend serves the model (KV on every layer,
    no state pool), whether a drafting MTP head's attention layers are charged to the token pool (`_cell`), and the
    requests asked for the replica (`user_requests` is one attention-DP rank's share: `_setup`); whether the state is
    sharded over the whole TP group under attention DP (`STATE_OVER_TP`); the dtype of a DFlash drafter's KV
    (`DRAFTER_CELL_FROM`); a DSA model's bytes a token of one layer's latent and of one indexer layer's keys
    (`_dsa_rows`); the MTP layers the state pool stacks beside the model's while drafting (`DRAFT_STATE_LAYERS`)."""

    context_len: int
    context: int
    dtypes: CacheDtypes
    drafts: int
    page: int
    strategy: str
    ratio: int
    user_requests: int | None
    r: float | None
    fixed_slots: int | None
    total_tokens_cap: int | None
    chunked: int
    mfs: float | None
    pre: int | None
    slots_follow_requests: bool
    dummy: int = 1
    refusal: str | None = None
    transformers: bool = False
    drafter_kv: bool = False
    drafter_kv_dtype: str = "bfloat16"
    replica_requests: int | None = None
    state_over_tp: bool = False
    dsa_latent: int = 0
    dsa_index: int = 0
    draft_state_layers: int = 0
    qsa_indexer_dtype: str = "auto"


class StatePool(Struct, frozen=True):
    """One stage's state pool and token pool: why it fails (None: it fits), its slots, the tokens its memory holds
    (None without a GPU) and, at v0.5.2-v0.5.9, the requests the request pool holds (`_first_line_pool`)."""

    error: str | None = None
    slots: int = 0
    tokens: int | None = None
    requests: int | None = None


# What an architecture's SGLang model builds on the TP group under --enable-dp-attention (`_dp_sharded`)
DP_TP_GROUP = {
    # kimi_linear.py: KimiDeltaAttention on the TP group (shard_on_attn_tp=False from 0.5.19; 0.5.9-0.5.18 shard
    # its unquantized fused projections by the TP size; 0.5.7-0.5.8 know no attention TP)
    "KimiLinearForCausalLM": {"embedding", "kda"},
    # lfm2.py, lfm2_moe.py: QKVParallelLinear, Lfm2ShortConv and its conv on the TP group
    "Lfm2ForCausalLM": {"embedding", "attention.proj", "short_conv"},
    "Lfm2MoeForCausalLM": {"embedding", "attention.proj", "short_conv"},
    # lfm2_vl.py (0.5.10-0.5.23): its language model is lfm2.py's Lfm2ForCausalLM
    "Lfm2VlForConditionalGeneration": {"embedding", "attention.proj", "short_conv"},
    "GraniteMoeHybridForCausalLM": {"embedding", "attention.proj"},  # granitemoehybrid.py: the TP size
    "Mamba2ForCausalLM": {"embedding"},  # mamba2.py
    # falcon_mamba.py (mamba.py subclasses it): MambaMixer on the TP group (layers/attention/mamba/mamba1.py)
    "MambaForCausalLM": {"embedding", "mamba1"},
    "FalconMambaForCausalLM": {"embedding", "mamba1"},
    # models/transformers.py: the backend swaps in a VocabParallelEmbedding (what the config's TP plan shards: not read)
    "MiniMaxForCausalLM": {"embedding"},
}


# What an architecture's SGLang model keeps whole on every rank under --enable-dp-attention (`weights.shard_ways`'s
# dp_whole; the rest not on the TP group is split over the attention-TP group, `use_attn_tp_group`): the embedding built
# with `enable_tp=not is_dp_attention_enabled()` in models/qwen3_5.py (its text classes too, through
# models/qwen3_5_text.py), bailing_moe_linear.py and bailing_moe_v3.py (read at v0.5.9-v0.5.23, from the release that
# registers each: Qwen3.5 and BailingMoeV2_5 v0.5.9, BailingMoeV3 v0.5.19; at dp = tp both are whole)
DP_WHOLE = {arch: frozenset({"embedding"}) for arch in (
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForCausalLM",
    "Qwen3_5MoeForCausalLM", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM")}


def _dp_sharded(spec, version: str) -> frozenset[str]:
    """The weights SGLang at `version` still splits over a stage's TP ranks under --enable-dp-attention
    (`weights.shard_ways` names; the rest but the routed experts is split over the attention-TP group, whole at a width
    of tp, or whole on each rank, `DP_WHOLE`), as sglang/srt/models/*.py build
    them (read at 0.5.2-0.5.23): at every release the LM head (`ParallelLMHead(use_attn_tp_group=
    enable_dp_lm_head)`, False by default in server_args.py / arg_groups), the dense MLPs and shared experts (Qwen2MoeMLP,
    NemotronHMLP, FalconH1MLP, KimiMLP, Lfm2MLP, BailingMLP, GraniteMoeSharedMLP on the TP group; the routers and latent
    projections are ReplicatedLinear, the attention, GDN, MLA and lightning mixers on the attention-TP group), and the
    embedding where it is a plain VocabParallelEmbedding rather than `use_attn_tp_group=is_dp_attention_enabled()` or
    `enable_tp=not is_dp_attention_enabled()`, with the mixers a model builds on the TP group (`DP_TP_GROUP`)."""
    sharded = {"lm_head", "mlp.proj", "moe.shared_experts"} | DP_TP_GROUP.get(spec.architecture, set())
    if not at_least(version, "0.5.14"):
        # layers/attention/mamba/mamba.py MambaMixer2 takes the attention-TP size under DP attention from 0.5.14 (the
        # TP size before); nemotron_h.py builds its attention and embedding on the attention-TP group from 0.5.14
        sharded.add("mamba2")
        if spec.architecture in NEMOTRON_H_ARCHS:
            sharded |= {"embedding", "attention.proj"}
    return frozenset(sharded)


def run(inputs: EngineInputs) -> EngineRun:
    """SGLang's sizing of every PP stage."""
    if inputs.layout.pp > 1 and not _since(inputs, PP_MODELLED_FROM):
        raise LayoutError("pp", f"1 with SGLang {inputs.version}: mcache models SGLang's pipeline parallelism from "
                                f"{PP_MODELLED_FROM} (scripts/oracles/sglang_versions.md), got {inputs.layout.pp}")
    _check_attention_dp(inputs)
    for name, since in SETTING_SINCE.items():
        if inputs.given.get(name) is not None and not _since(inputs, since):
            raise LayoutError(name, f"not a setting of SGLang {inputs.version} (server_args.py ServerArgs has it from "
                                    f"{since})")
    inputs = replace(inputs, spec=_as_read(inputs.spec, inputs.version or VERSIONS[-1]))
    spec = inputs.spec
    if spec.dsa_indexer is not None and (spec.mla is None or spec.attention or spec.sliding_attention):
        raise LayoutError("engine", "a DSA indexer beside MLA layers alone, as SGLang's DeepSeek sparse attention keeps "
                                    f"it (memory_pool.py DSATokenToKVPool): {spec.name} has other attention layers, "
                                    "which mcache does not size as SGLang does")
    s = Settings(inputs.given, SETTINGS, "SGLang")
    if not inputs.spec.dtype_named or dtype_names.canonical(inputs.spec.dtype) == "float32":  # float32 to SGLang
        inputs = replace(inputs, spec=replace(inputs.spec, dtype=FLOAT32_SERVED_AS))
    setup = _setup(inputs, s)
    # distributed/utils.py get_pp_indices (v0.5.14 to v0.5.23, through utils/common.py make_pp_layers): the remainder
    # of the even split one layer each to the last stages; SGLANG_PP_LAYER_PARTITION is a given --pp-partition
    contexts = stage_contexts(inputs.spec, pp_layout(inputs.layout, inputs.spec.num_layers, spared=0), setup.dtypes)
    weights = s.weights(contexts, dp_sharded=_dp_sharded(inputs.spec, inputs.version or VERSIONS[-1]),
                        dp_whole=DP_WHOLE.get(inputs.spec.architecture, frozenset()), host=_host_units(inputs))
    caveats = unnamed_architecture_caveats(inputs.spec, "SGLang")
    if inputs.spec.config_format == "mamba_ssm" and inputs.spec.architecture == RAW_MAMBA_ARCH:  # `_as_read`'s
        caveats.append(f"SGLang: the mamba_ssm config is read as {RAW_MAMBA_ARCH} (utils/hf_transformers/config.py "
                       "_try_load_raw_mamba_config)")
    caveats += window_caveats(
        inputs.spec, "SGLang", "SWA pool (swa_memory_pool.py, swa_full_tokens_ratio)")
    if inputs.spec.ple is not None or inputs.spec.indexer is not None:
        caveats.append("SGLang: the PLE window's pool (mem_cache/ple_state_pool.py, one per state slot) and the QSA "
                       "indexer's raw-key ring (mem_cache/qsa_kv_pool.py, one per request slot) are allocated beside the "
                       "budget, which counts neither; mcache leaves them out of the figures too")
    if inputs.spec.dsa_indexer is not None:
        caveats.append("SGLang: the DSA indexer's tail (memory_pool.py _compress_tail_k / _compress_tail_score, one per "
                       "request slot) is allocated beside the budget, which does not count it, and a layer its config's "
                       "text_config.indexer_types calls shared still keeps keys (SGLang reads indexer_types at the top "
                       "level only); mcache leaves the tail out and counts the spec's indexer layers")
    if sm_major(inputs.gpu_name) == 10 and setup.page == DEFAULT_PAGE_SIZE and "page_size" not in inputs.given:
        # the oracle's B200 cases (sglang_versions.md, "SM 10"): every figure agreed but these tokens
        caveats.append("SGLang: on an SM 10 card the default attention backend of many models (trtllm_mha, trtllm_mla, "
                       "by model and release) takes pages of 64 tokens, so SGLang's token pool rounds down to a multiple "
                       "of 64; mcache counts single tokens (up to 63 more)")
    if setup.transformers:
        caveats.append(f"SGLang: {inputs.spec.architecture} has no SGLang model class; SGLang serves it through the "
                       "Transformers backend (model_loader/utils.py resolve_transformers_arch), with no linear-attention "
                       "state pool and full-attention KV on every layer.")
    if inputs.spec.vision is None and inputs.spec.architecture in MULTIMODAL_ARCHS:
        caveats.append(f"SGLang: {inputs.spec.architecture} is a multimodal model to SGLang, which lowers its default "
                       "mem_fraction_static by the vision tower and reserves 100 MiB for the multimodal cache; the spec "
                       "has no `vision` block, so neither is applied (`mcache import-hf` writes it).")
    # model_runner.py loads the weights into the free memory it measured before (pre_model_load_memory), then sizes
    refusal = setup.refusal or weights_overflow(weights, setup.pre, "the free memory before the load")
    if refusal is not None:
        stages = [_refused(ctx, inputs, setup, refusal) for ctx in contexts]
        return EngineRun(NAME, setup.context_len, setup.context, _named(s.values, inputs), _named(s.sources, inputs),
                         setup.dtypes, stages, caveats)
    # kv_cache_configurator.py: every stage sizes its slots at the bytes `_charged_slot_bytes` gives, and the stages
    # agree on the smallest token pool (_apply_token_constraints, an all-reduce MIN)
    per_slot = _charged_slot_bytes(contexts, setup)
    pools = [_pool(ctx, weight, per_slot, inputs, setup) for ctx, weight in zip(contexts, weights, strict=True)]
    known = [pool.tokens for pool in pools if pool.tokens is not None]
    shared_tokens = min(known) if known else None
    stages = [_stage(ctx, inputs, setup, pool, shared_tokens, per_slot) for ctx, pool in zip(contexts, pools, strict=True)]
    return EngineRun(NAME, setup.context_len, setup.context, _named(s.values, inputs), _named(s.sources, inputs),
                     setup.dtypes, stages, caveats)


def _check_attention_dp(inputs: EngineInputs) -> None:
    """Attention DP is sized at a width of 2 or more, up to TP (the layouts the tables check); of width 1 it is refused
    as not modelled."""
    layout = inputs.layout
    if layout.attention_dp and layout.attention_dp_ranks == 1:
        field = "attention_dp" if layout.attention_dp_size is None else "attention_dp_size"
        raise LayoutError(field, "of width 2 or more with SGLang: attention DP of width 1 (--dp-size 1 "
                                 "--enable-dp-attention, which releases before 0.5.23 still pad for) is not modelled; "
                                 "mcache models --dp-size from 2 to --tp-size")


def _named(settings: dict, inputs: EngineInputs) -> dict:
    """`settings` (the run's settings, their sources, a stage's fields) under the names of the run's release: a
    setting that release names otherwise (`RENAMED`: before `STRATEGY_RENAMED`, the strategy) under its name there."""
    if _since(inputs, STRATEGY_RENAMED):
        return settings
    old = {new: old for old, new in RENAMED.items()}
    return {old.get(name, name): value for name, value in settings.items()}


# The attention-DP flags: `--dp-size N --enable-dp-attention` (server_args.py) before v0.5.22; from v0.5.22 `--attn-dp-size
# N` (arg_groups/fields/parallel.py ParallelArgs.attn_dp_size; server_args.py registers --enable-dp-attention as a
# deprecated spelling that arg_groups/parallel_hook.py handle_deprecated_dp_attention moves to it; read at 0.5.21-0.5.23).
# Either way one command starts one replica: --dp-size is the width before, and from v0.5.22 parallel_hook.py refuses
# --dp-size above 1 beside --attn-dp-size above 1 ("data-parallel replicas combined with attention data parallelism")
ATTN_DP_SIZE_FLAG_FROM = "0.5.22"


def serve_command(args: ServeArgs) -> str:
    """The `python -m sglang.launch_server` line of a deployment (sglang/srt/server_args.py flag names): the fleet's
    replicas (`REPLICA_FLAG`), or under attention DP one replica and a closing comment saying how many to start."""
    line = ["python", "-m", "sglang.launch_server", "--model-path", args.model, "--tp-size", args.tp, "--pp-size",
            args.pp, "--context-length", args.context]
    line += ["--kv-cache-dtype", args.kv_dtype] if args.kv_dtype else []
    line += ["--mamba-ssm-dtype", args.ssm_dtype] if args.ssm_dtype else []
    line += ["--disable-radix-cache"] if args.prefix == "off" else []
    if args.draft and args.drafter:  # DFLASH: the drafts and the bonus token a block (`DFLASH_FROM`)
        line += ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", args.drafter,
                 "--speculative-num-draft-tokens", args.draft + 1]
    elif args.draft:
        line += ["--speculative-algorithm", "NEXTN" if args.mtp else "EAGLE", "--speculative-num-steps", args.draft]
    if not args.attention_dp:
        return shlex.join(str(a) for a in [*line, *([REPLICA_FLAG, args.replicas] if args.replicas > 1 else [])])
    width = args.attention_dp_size or args.tp
    if at_least(args.version or VERSIONS[-1], ATTN_DP_SIZE_FLAG_FROM):
        line += ["--attn-dp-size", width]
        why = "--dp-size replicas do not combine with --attn-dp-size"
    else:
        line += [REPLICA_FLAG, width, "--enable-dp-attention"]
        why = "--dp-size is the attention-DP width"
    more = f"  # one replica: start {args.replicas} ({why})" if args.replicas > 1 else ""
    return shlex.join(str(a) for a in line) + more


def _setup(inputs: EngineInputs, s: Settings) -> Setup:
    """The settings of the run: given, else SGLang's defaults and heuristics, in the order SGLang resolves them."""
    spec = inputs.spec
    arch = spec.architecture or ""
    derived = spec.max_model_len or DEFAULT_CONTEXT_LEN
    context_len = s.take("context_length", derived, "default" if spec.max_model_len else
                         "default: SGLang's 2048 for a config without a length key")
    dtypes = _dtypes(spec, s, inputs)
    steps = s.take("speculative_num_steps", 0)
    drafts = steps + 1 if steps else 0  # EAGLE with topk 1: num_draft_tokens = num_steps + 1 (server_args.py)
    page = s.take("page_size", DEFAULT_PAGE_SIZE)
    if spec.indexer is not None:  # arg_groups/model_overrides/qwen4_exp.py (v0.5.20-v0.5.23): compressed QSA owns it
        page = s.values["page_size"] = QSA_PAGE_SIZE
        s.sources["page_size"] = "compressed QSA's (a key row per group, full_slot // ratio: page-aligned)"
    if spec.dsa_indexer is not None:  # model_overrides/deepseek_v2.py (`DSA_PAGE`)
        page, s.sources["page_size"] = _dsa_page(spec, inputs)
        s.values["page_size"] = page
    qsa = s.take("qsa_indexer_dtype", "auto")
    if qsa not in QSA_INDEXER_DTYPES:  # the command line's choices
        raise LayoutError("qsa_indexer_dtype", f"one of {', '.join(QSA_INDEXER_DTYPES)}, got {qsa!r}")
    first_line = _first_line(inputs)
    strategy, ratio, refusal = (_first_line_ratio if first_line else _ratio)(s, arch, inputs, drafts)
    user_requests = s.take("max_running_requests", SPECULATIVE_MAX_RUNNING_REQUESTS if drafts else None)
    default_r = _by_release(inputs, DEFAULT_MAMBA_FULL_MEMORY_RATIOS)
    r = s.take("mamba_full_memory_ratio", default_r) if default_r is not None else None
    fixed_slots = s.take("max_mamba_cache_size", None)
    total_tokens_cap = s.take("max_total_tokens", None)
    gpu_mb = inputs.gpu_bytes // MB if inputs.gpu_bytes else None
    chunked = s.take("chunked_prefill_size", _chunked_prefill(gpu_mb, inputs))
    graphs = (0 if drafts and not _since(inputs, DRAFT_PREFILL_GRAPHS_FROM)
              else _prefill_graph_mb(spec, chunked, _graph_cap(total_tokens_cap, s.given, inputs), inputs))
    if gpu_mb and not _since(inputs, "0.5.3"):
        mfs = _mem_fraction_0_5_2(gpu_mb, inputs, drafts)
    else:
        mfs = _mem_fraction(gpu_mb, chunked, inputs, s.given.get("max_running_requests"), graphs, drafts) if gpu_mb else None
    dp, replica_requests = inputs.layout.attention_dp_ranks, user_requests
    if dp > 1:
        # One attention-DP rank's share, once the memory settings took the replica's: handle_data_parallelism divides
        # the chunked prefill (arg_groups/parallel_hook.py at v0.5.23, server_args.py at v0.5.14), the state sizing and
        # the request count the requests (n // dp; max(1, n // dp) from v0.5.23, `DP_REQUESTS_FLOOR_FROM`) and a given
        # state pool (n // dp): kv_cache_configurator.py _handle_max_mamba_cache and resolve_max_num_reqs (v0.5.23),
        # model_runner_kv_cache_mixin.py handle_max_mamba_cache and _resolve_max_num_reqs (v0.5.14; v0.5.9: the requests
        # in model_runner.py initialize), model_runner.py initialize and managers/tp_worker.py (v0.5.2)
        chunked = s.values["chunked_prefill_size"] = chunked // dp
        s.sources["chunked_prefill_size"] += ": divided by the attention-DP width (handle_data_parallelism)"
        if user_requests is not None:
            user_requests = max(1, user_requests // dp) if _since(inputs, DP_REQUESTS_FLOOR_FROM) else user_requests // dp
        fixed_slots = None if fixed_slots is None else fixed_slots // dp
    lowered = (mfs is not None and spec.vision is not None and arch not in NO_VISION_CONFIG_ARCHS
               and not (spec.vision.defaulted and arch in NO_DEFAULT_TOWER_ARCHS))
    mfs = s.take("mem_fraction_static", _vlm_fraction(mfs, spec) if lowered else mfs,
                 "default: lowered for the vision tower (memory_hook.py adjust_mem_fraction_for_vlm)" if lowered
                 else "default")
    if mfs is not None and (factor := _aiter_factor(spec, inputs, context_len)) is not None:
        mfs = s.values["mem_fraction_static"] = mfs * factor
        s.sources["mem_fraction_static"] += (f"; x {factor}: ROCm's aiter attention backend at a context above "
                                             f"{AITER_CONTEXT:,} tokens")
    pre = within_gpu("pre_model_load_memory_bytes", s.take(
        "pre_model_load_memory_bytes", inputs.gpu_bytes - CONTEXT_RESERVE if inputs.gpu_bytes else None,
        "assumed: the free memory before weights load, the GPU's less 0.5 GiB of CUDA context"), inputs.gpu_bytes)
    # kv_cache_configurator.py _handle_max_mamba_cache: without radix cache the state pool holds max_running_requests,
    # the user's or the speculative hook's
    follow = s.values["disable_radix_cache"] and user_requests is not None
    version = inputs.version or VERSIONS[-1]
    if (unknown := _unknown_type_error(arch, version) or _raw_unread(spec, version)) is not None:
        refusal = unknown
    elif context_len > derived:  # configs/model_config.py ModelConfig._derive_context_length
        refusal = (f"Warning: User-specified context_length ({context_len}) is greater than the derived context_length "
                   f"({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
                   "context_length may differ from max_position_embeddings in the model's config. To allow overriding "
                   "this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
    else:
        # in SGLang's order: the command line's choices (`_no_dflash_error`), ModelConfig's quantization check on HIP
        # (server_args.py _handle_model_specific_adjustments builds the ModelConfig before its architecture branches
        # check the strategy: the 0.5.9 table), the server args' strategy checks, ModelConfig's (`_config_error`), the
        # speculative hook's of a DFlash drafter (`_dflash_error`), the launch's PP check of drafts
        # (`_pp_drafts_error`), the drafter's target layers (`_dflash_layers_error`), then what fails as the model loads
        refusal = (_no_dflash_error(inputs, drafts) or _rocm_quantization_error(spec, inputs)
                   or _qsa_dtype_error(spec, inputs, qsa) or refusal
                   or _config_error(spec, version) or _sm12_backend_error(spec, inputs) or _dflash_error(inputs, drafts)
                   or _pp_drafts_error(inputs, drafts)
                   or _dflash_layers_error(inputs, drafts) or _load_error(spec, version)
                   or _quantization_load_error(spec, inputs) or _init_error(spec, inputs) or _pp_error(arch, inputs)
                   or _raw_unfit(spec, version) or (_first_line_dtype_error(arch, s, inputs) if first_line else None))
    return Setup(context_len, asked_context(inputs, context_len), dtypes, drafts, page, strategy, ratio, user_requests, r,
                 fixed_slots, total_tokens_cap, chunked, mfs, pre, follow, int(_since(inputs, DUMMY_SLOT_FROM)), refusal,
                 _transformers_serves(arch, version) or (first_line and arch in FIRST_LINE_TRANSFORMERS
                                                         and not _since(inputs, FIRST_LINE_NATIVE[arch])),
                 _since(inputs, DRAFTER_KV_FROM) and arch not in NO_NEXTN_ARCHS, _drafter_kv_dtype(s, dtypes),
                 replica_requests,
                 inputs.layout.attention_dp and arch in STATE_OVER_TP and _within(inputs, STATE_OVER_TP[arch]),
                 *_dsa_rows(spec, dtypes, inputs),
                 mtp_attention_layers(spec) if drafts and arch in DRAFT_STATE_LAYERS
                 and _within(inputs, DRAFT_STATE_LAYERS[arch]) else 0, qsa)


def _qsa_dtype_error(spec, inputs: EngineInputs, qsa: str) -> str | None:
    """model_overrides/qwen4_exp.py (v0.5.22-v0.5.23): fp8 QSA keys on a CUDA card of `QSA_FP8_MAJORS` alone (a GPU
    outside the catalogue: assumed such a card)."""
    if qsa != "fp8_e4m3" or spec.indexer is None or cuda_major_in(inputs.gpu_name, QSA_FP8_MAJORS):
        return None
    return "--qsa-indexer-dtype fp8_e4m3 requires a CUDA SM90/SM100 GPU"


def _qsa_pool_error(inputs: EngineInputs, setup: Setup) -> str | None:
    """mem_cache/kv_cache_configurator.py _build_hybrid_linear_kv_pool (v0.5.22-v0.5.23): a QSA dtype given to a hybrid
    without a compressed QSA indexer, refused as its pool is built, after sizing (the hybrid-SWA pools do not check)."""
    spec = inputs.spec
    if setup.qsa_indexer_dtype == "auto" or spec.indexer is not None or not recurrent_kinds(spec) or windowed_kinds(spec):
        return None
    return (f"--qsa-indexer-dtype {setup.qsa_indexer_dtype} needs a model with a compressed QSA indexer (Qwen4-Exp); "
            "this model has none")


def _dsa_pool_error(inputs: EngineInputs, setup: Setup) -> str | None:
    """memory_pool.py DSATokenToKVPool (v0.5.22-v0.5.23): a page must hold whole pooled keys, which ROCm's page of one
    token does not when a key pools several (`DSA_ROCM_PAGE`); the state pool is built by then."""
    p = inputs.spec.dsa_indexer
    if p is None or not _since(inputs, DSA_KPOOL_FROM) or setup.page % p.kpool == 0:
        return None
    return (f"page_size {setup.page} must be a multiple of index_kpool {p.kpool} (SGLang's page for DeepSeek DSA on "
            "ROCm without aiter's preshuffle paged-MQA path, which needs Triton >= 3.5 or "
            "AITER_ENABLE_AOT_GLUON_PA_MQA_LOGITS=1: mcache assumes it is missing)")


def _dsa_page(spec, inputs: EngineInputs) -> tuple[int, str]:
    """(page size, why) of a DSA model: SGLang's whatever --page-size says (`DSA_PAGE`, `DSA_ROCM_PAGE`)."""
    if _rocm(inputs):
        return DSA_ROCM_PAGE, "DeepSeek DSA's on ROCm without aiter's preshuffle paged-MQA path (assumed)"
    if _since(inputs, DSA_KPOOL_FROM):
        return DSA_PAGE * spec.dsa_indexer.kpool, f"DeepSeek DSA's: {DSA_PAGE} pooled keys of index_kpool tokens"
    return DSA_PAGE, "DeepSeek DSA's"


def _by_release(inputs: EngineInputs, table: tuple[tuple[str, object], ...]):
    """The value of `table` ((release, value), oldest first) that holds at the run's release: that of the newest release
    at or before it (None: before the first)."""
    return next((value for since, value in reversed(table) if _since(inputs, since)), None)


def _within(inputs: EngineInputs, releases: tuple[str, str | None]) -> bool:
    """Whether the run's release is in [from, until) (until None: from on)."""
    return _since(inputs, releases[0]) and not (releases[1] and _since(inputs, releases[1]))


def _vlm_fraction(mfs: float, spec) -> float:
    """arg_groups/memory_hook.py adjust_mem_fraction_for_vlm: the default mem_fraction_static of a multimodal model,
    lowered by the size of its vision tower as SGLang reads it (VISION_ALIAS_ARCHS), in SGLang's order of operations."""
    vision = spec.vision
    aliased = spec.architecture in VISION_ALIAS_ARCHS
    layers = vision.num_layers if aliased or vision.layers_key == "num_hidden_layers" else VLM_DEFAULT_LAYERS
    hidden = vision.hidden_size if aliased or vision.hidden_key == "hidden_size" else VLM_DEFAULT_HIDDEN
    ratio = layers * hidden**2 / (VLM_DEFAULT_LAYERS * VLM_DEFAULT_HIDDEN**2)
    dynamic = max(VLM_FACTOR_RANGE[0], min(VLM_FACTOR_RANGE[1], 1.0 - VLM_SENSITIVITY * (ratio - 1.0)))
    return mfs * (VLM_BASE_FACTOR * dynamic)


def _rocm(inputs: EngineInputs) -> bool:
    """Whether the run's GPU is an AMD card, which SGLang runs under ROCm (is_hip())."""
    return vendor(inputs.gpu_name) == AMD


def _aiter_factor(spec, inputs: EngineInputs, context_len: int) -> float | None:
    """The factor by which ROCm's aiter attention backend, SGLang's default there (`AITER_MLA_HEADS` for MLA), lowers
    mem_fraction_static at a context above `AITER_CONTEXT` tokens (`AITER_FRACTIONS`; None: it does not). A DSA model
    runs SGLang's `dsa` backend instead (model_overrides/deepseek_v2.py sets it, v0.5.20-v0.5.23)."""
    factor = _by_release(inputs, AITER_FRACTIONS)
    if factor is None or not _rocm(inputs) or context_len <= AITER_CONTEXT or spec.dsa_indexer is not None:
        return None
    return factor if spec.mla is None or max(1, spec.mla.num_heads // inputs.layout.tp) in AITER_MLA_HEADS else None


def _host_units(inputs: EngineInputs) -> frozenset[str]:
    """The weights SGLang keeps in host memory: a PLE's n-gram table in pinned host memory on CUDA with a bf16 model
    (arg_groups/model_overrides/qwen4_exp.py, v0.5.20-v0.5.23: `ple_offload_embedding`'s default, which mcache does not
    take as an option)."""
    spec = inputs.spec
    offloaded = spec.ple is not None and not _rocm(inputs) and dtype_names.canonical(spec.dtype) == "bfloat16"
    return frozenset({"ple.ngram_embedding"}) if offloaded else frozenset()


def _rocm_extra_buffer_error(inputs: EngineInputs) -> str | None:
    """SGLang's refusal of an extra buffer on an AMD card at the run's release (`ROCM_EXTRA_BUFFER_REFUSED`)."""
    if not _rocm(inputs):
        return None
    return _by_release(inputs, ROCM_EXTRA_BUFFER_REFUSED)


def _transformers_serves(arch: str, version: str) -> bool:
    """Whether SGLang at `version` serves `arch` through the Transformers backend: `TRANSFORMERS_ARCHS`, and at
    v0.5.6.post1 those its transformers release candidate serves (`TRANSFORMERS_RC_SERVES`)."""
    release, archs = TRANSFORMERS_RC_SERVES
    return arch in TRANSFORMERS_ARCHS or (arch in archs and key(version) == key(release))


def _unknown_type_error(arch: str, version: str) -> str | None:
    """AutoConfig's refusal of a checkpoint whose model type neither the release's transformers nor its config
    registry knows (`UNKNOWN_TYPE_UNTIL`, `UNKNOWN_TYPES`; None: it knows it)."""
    if arch in UNKNOWN_TYPES:
        return (f"{unknown_model_type(UNKNOWN_TYPES[arch])} (neither SGLang {version}'s transformers pin nor its config "
                "registry knows it, nor any SGLang release mcache models.)")
    if (arch not in UNKNOWN_TYPE_UNTIL or at_least(version, UNKNOWN_TYPE_UNTIL[arch][1])
            or _transformers_serves(arch, version)):
        return None
    model_type, since, file = UNKNOWN_TYPE_UNTIL[arch]
    return (f"{unknown_model_type(model_type)} (neither SGLang {version}'s transformers pin nor its config registry "
            f"knows it; its own config for `{model_type}` comes with SGLang {since}, {file}.)")


def _sm12_backend_error(spec, inputs: EngineInputs) -> str | None:
    """The default attention backend SGLang refuses on an SM 12 card at `SM12_TRTLLM_MHA`'s releases (None: another)."""
    if spec.mla is not None or sm_major(inputs.gpu_name) != 12 or not _within(inputs, SM12_TRTLLM_MHA):
        return None
    return "TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different backend."


def _as_read(spec, version: str):
    """The spec as SGLang at `version` reads it: a mamba_ssm library config as `RAW_MAMBA_ARCH` from `RAW_MAMBA_SINCE`."""
    if spec.config_format == "mamba_ssm" and at_least(version, RAW_MAMBA_SINCE):
        return replace(spec, architecture=RAW_MAMBA_ARCH)
    return spec


def _raw_unread(spec, version: str) -> str | None:
    """AutoConfig's refusal of a mamba_ssm library config before `RAW_MAMBA_SINCE` (None: a config it reads)."""
    return None if at_least(version, RAW_MAMBA_SINCE) else unrecognized_config(spec)


def _raw_unfit(spec, version: str) -> str | None:
    """Why the checkpoint of a mamba_ssm library config does not load into the Mamba-1 class SGLang at `version` builds
    of it (`RAW_MAMBA_SINCE`): its layers that class does not build (None: it builds them all)."""
    if spec.config_format != "mamba_ssm" or not at_least(version, RAW_MAMBA_SINCE):
        return None
    m = spec.mamba1
    unfit = [f"{kind} layers" for kind in sorted({k for layer in layer_kinds(spec) for k in layer} - {"mamba1"})]
    if m is not None and (m.intermediate_size, m.conv_kernel, m.dt_rank) != (
            2 * spec.hidden_size, 4, math.ceil(spec.hidden_size / 16)):
        unfit.append("Mamba1 mixer (ssm_cfg's expand, d_conv or dt_rank)")
    if not unfit:
        return None
    return (f"SGLang {version} builds a mamba_ssm config as Mamba-1 {RAW_MAMBA_ARCH} of its d_model, n_layer and "
            "ssm_cfg.d_state, transformers' MambaConfig defaults otherwise (utils/hf_transformers/config.py "
            f"_try_load_raw_mamba_config): this checkpoint's {', '.join(unfit)} do not fit it, so its weights do not load")


def _config_error(spec, version: str) -> str | None:
    """Why SGLang's ModelConfig fails on the config (None: it does not): before 0.5.20 on pure Mamba configs
    (`NATIVE_FROM_0_5_20`)."""
    if spec.architecture in NATIVE_FROM_0_5_20 and not at_least(version, "0.5.20"):
        return f"'{NATIVE_FROM_0_5_20[spec.architecture]}' object has no attribute 'num_attention_heads'"
    return None


def _modelopt_method(spec, inputs: EngineInputs) -> str | None:
    """SGLang's name of a ModelOpt checkpoint's method at the run's release (`MODELOPT_CONFIG_NAMED_FROM`); None for
    another checkpoint."""
    quant = spec.quantization
    if quant is None or quant.method != "modelopt":
        return None
    if not quant.source.startswith(QUANT_FILE) and not _since(inputs, MODELOPT_CONFIG_NAMED_FROM):
        return "modelopt"
    algo = quant.algo.upper()
    return "modelopt_fp4" if "FP4" in algo else "modelopt_fp8" if algo == "FP8" else None


def _rocm_quantization_error(spec, inputs: EngineInputs) -> str | None:
    """ModelConfig's refusal of a ModelOpt checkpoint on an AMD card (`ROCM_MODELOPT_REFUSED_FROM`; None: none)."""
    method = _modelopt_method(spec, inputs)
    if method is None or not (_rocm(inputs) and _since(inputs, ROCM_MODELOPT_REFUSED_FROM)):
        return None
    return f"{method} quantization is currently not supported in ROCm."


def _quantization_load_error(spec, inputs: EngineInputs) -> str | None:
    """The loader's refusal of a ModelOpt checkpoint on a CUDA card (None: none): a non-FP8 algo under the method
    `modelopt` (`MODELOPT_CONFIG_NAMED_FROM`), or NVFP4 on a card below the release's minimum capability
    (`MODELOPT_FP4_MIN_CAPABILITY`; a card whose capability the catalogue does not hold is not checked)."""
    method = _modelopt_method(spec, inputs)
    if method == "modelopt" and "FP8" not in spec.quantization.algo.upper():
        return ("ModelOptFp8Config only supports static FP8 quantization in SGLang. For FP4 quantization, use "
                "ModelOptFp4Config. Check the quantization config for your model's configuration.")
    cap = capability(inputs.gpu_name)
    if method != "modelopt_fp4" or not isinstance(cap, tuple):
        return None
    minimum = _by_release(inputs, MODELOPT_FP4_MIN_CAPABILITY)
    current = cap[0] * 10 + cap[1]
    if current >= minimum:
        return None
    return (f"The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: {minimum}. "
            f"Current capability: {current}.")


def architecture_error(spec, version: str) -> str | None:
    """Why SGLang at `version` cannot load the model, in its words (None: it can): what `_load_error` says, or the
    first Nemotron-H class's layers (`_nemotron_h_error`, at a TP size that splits the Mamba2 groups)."""
    return (_raw_unread(spec, version) or _load_error(_as_read(spec, version), version) or _raw_unfit(spec, version)
            or _nemotron_h_error(spec, version, None))


def _load_error(spec, version: str) -> str | None:
    """Why SGLang at `version` finds no class that loads the model, in its words (None: it finds one): ModelConfig's failures
    (`_config_error`); before 0.5.19 it has no class for BailingMoeV3, before 0.5.17 none for Kimi-K3 (`NATIVE_SINCE`),
    from 0.5.20 Mamba2 configs without intermediate_size fail (`MAMBA2_NEEDS_INTERMEDIATE`); model_loader/utils.py: no
    SGLang class and no Transformers class (`REMOTE_ONLY_ARCHS`), or a Transformers fallback that cannot serve it;
    before all of these, a model type AutoConfig does not know (`UNKNOWN_TYPE_UNTIL`)."""
    arch = spec.architecture
    if (config := _unknown_type_error(arch, version) or _config_error(spec, version)) is not None:
        return config
    if arch in NATIVE_SINCE and not at_least(version, NATIVE_SINCE[arch][0]):
        return (f"Cannot find model module. '{arch}' is not a registered model in the Transformers library, and SGLang "
                f"{version} has no class of its own for it ({NATIVE_SINCE[arch][1]} comes with {NATIVE_SINCE[arch][0]}): "
                "it would load the checkpoint's remote code (auto_map.AutoModel) and refuse it or serve it through the "
                "Transformers backend, as that code declares, which mcache does not size.")
    if arch == MAMBA2_NEEDS_INTERMEDIATE and spec.mamba2 is not None and spec.mamba2.intermediate_size is None:
        return "'Mamba2Config' object has no attribute 'intermediate_size'"
    if not at_least(version, FIRST_LINE_UNTIL):
        return _first_line_arch_error(spec, version)
    if arch in REMOTE_ONLY_ARCHS:
        return _no_class(arch)
    if arch not in UNSUPPORTED_ARCHS:
        return None
    return _incompatible(arch)


def _incompatible(arch: str) -> str:
    """model_loader/utils.py resolve_transformers_arch: a transformers class the Transformers backend cannot serve."""
    return f"{arch} has no SGlang implementation and the Transformers implementation is not compatible with SGLang."


def _no_class(arch: str) -> str:
    """model_loader/utils.py resolve_transformers_arch: no SGLang class, no transformers class, no auto_map.AutoModel."""
    return (f"Cannot find model module. '{arch}' is not a registered model in the Transformers library (only "
            "relevant if the model is meant to be in Transformers) and 'AutoModel' is not present in the model "
            "config's 'auto_map' (relevant if the model is custom).")


def _first_line_arch_error(spec, version: str) -> str | None:
    """v0.5.2-v0.5.9: a hybrid without an SGLang class at `version` (`FIRST_LINE_NATIVE`) is refused by
    model_loader/utils.py resolve_transformers_arch with that release's transformers (`FIRST_LINE_INCOMPATIBLE`,
    `FIRST_LINE_NO_CLASS`, `REMOTE_ONLY_ARCHS`) unless the Transformers backend serves it (`FIRST_LINE_TRANSFORMERS`,
    `TRANSFORMERS_ARCHS`); mcache refuses any other hybrid there, whose class came later (models/ of v0.5.6 on)."""
    arch = spec.architecture
    native = FIRST_LINE_NATIVE.get(arch)
    if (native is not None and at_least(version, native)) or arch in FIRST_LINE_TRANSFORMERS or \
            _transformers_serves(arch, version):
        return None
    if arch in FIRST_LINE_INCOMPATIBLE:
        return _incompatible(arch)
    if arch in FIRST_LINE_NO_CLASS + REMOTE_ONLY_ARCHS:
        return _no_class(arch)
    if not recurrent_kinds(spec):
        return None
    natives = ", ".join(a for a, since in FIRST_LINE_NATIVE.items() if at_least(version, since))
    return (f"SGLang {version} has no model class for {arch or 'a spec naming no architecture'}: its model runner sizes "
            f"the state of {natives} only, and "
            "mcache does not size what its Transformers fallback (model_loader/utils.py) would do with this checkpoint.")


def _drafter_kv_dtype(s: Settings, dtypes: CacheDtypes) -> str:
    """The KV dtype of a DFlash drafter's pool (mem_cache/kv_cache_dtype.py configure_kv_cache_dtype for the draft
    worker): --speculative-draft-kv-cache-dtype where given (`SETTING_SINCE`), else --kv-cache-dtype; `auto` (or a
    checkpoint's FP8 KV, which the draft worker does not read) its own dtype."""
    flag = s.given.get("speculative_draft_kv_cache_dtype")
    if flag is None:
        return KV_DTYPES[s.given.get("kv_cache_dtype", "auto")] or dtypes.model
    if flag not in KV_DTYPES:
        raise LayoutError("speculative_draft_kv_cache_dtype", f"one of {', '.join(KV_DTYPES)}, got {flag!r}")
    return KV_DTYPES[s.take("speculative_draft_kv_cache_dtype", flag)] or dtypes.model


def _no_dflash_error(inputs: EngineInputs, drafts: int) -> str | None:
    """The command line's refusal of a DFlash drafter drafting before `DFLASH_FROM` (None: it parses)."""
    if not drafter_sizing.drafts_with(inputs.spec, drafts) or _since(inputs, DFLASH_FROM):
        return None
    return (f"argument --speculative-algorithm: invalid choice: 'DFLASH' (SGLang {inputs.version} has no DFlash "
            f"drafts; server_args.py takes DFLASH from {DFLASH_FROM})")


def _dflash_error(inputs: EngineInputs, drafts: int) -> str | None:
    """What the speculative hook says of a DFlash drafter drafting (`DFLASH_FROM`; None: it goes on): attention DP,
    then more than one stage refused (server_args.py, then speculative_hook.py _handle_dflash)."""
    if not drafter_sizing.drafts_with(inputs.spec, drafts):
        return None
    if inputs.layout.attention_dp and _since(inputs, DFLASH_DP_LM_HEAD_FROM):
        return "DFLASH with dp attention requires --enable-dp-lm-head."
    if inputs.layout.attention_dp:
        where = " on non-NPU devices" if _since(inputs, DFLASH_DP_NPU_FROM) else ""
        return f"Currently DFLASH speculative decoding does not support dp attention{where}."
    if inputs.layout.pp > 1:
        return "Currently DFLASH speculative decoding only supports pp_size == 1."
    return None


def _drafter_class_error(inputs: EngineInputs, drafts: int) -> str | None:
    """What the draft worker says of a drafter architecture its release has no class for (`DFLASH2_FROM`; None: it
    builds it), in model_loader/utils.py's words for a config with no auto_map."""
    d = inputs.spec.drafter
    if not drafter_sizing.drafts_with(inputs.spec, drafts) or d.architecture != "DFlash2DraftModel" or _since(
            inputs, DFLASH2_FROM):
        return None
    return (f"Cannot find model module. '{d.architecture}' is not a registered model in the Transformers library (only "
            "relevant if the model is meant to be in Transformers) and 'AutoModel' is not present in the model config's "
            f"'auto_map' (relevant if the model is custom). (SGLang {inputs.version}'s draft worker has no class for it: "
            f"models/dflash.py registers it from {DFLASH2_FROM}.)")


def _dflash_layers_error(inputs: EngineInputs, drafts: int) -> str | None:
    """SGLang's refusal of a drafter that reads a layer the target lacks (speculative/dflash_utils.py
    DFlashDraftConfig.resolve_target_layer_ids, v0.5.11 - v0.5.23, run as the model runner sets the drafter up; None:
    every layer it names is the target's)."""
    if not drafter_sizing.drafts_with(inputs.spec, drafts):
        return None
    layers = inputs.spec.num_layers
    for i, layer in enumerate(inputs.spec.drafter.target_layer_ids):
        if not 0 <= layer < layers:
            return ("DFLASH target_layer_ids contains an out-of-range layer id. "
                    f"target_layer_ids[{i}]={layer}, target_num_layers={layers}.")
    return None


def _pp_drafts_error(inputs: EngineInputs, drafts: int) -> str | None:
    """The launch's check of drafts at more than one stage (`PP_DRAFTS_PREFILL_ONLY_FROM`), run before the model loads,
    so before a refusal of its class (None: no such refusal)."""
    if inputs.layout.pp == 1 or not drafts:
        return None
    if _since(inputs, PP_DRAFTS_PREFILL_ONLY_FROM):
        return "PP + speculative decoding (MTP) is only supported on prefill nodes (disaggregation-mode=prefill)"
    return "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"


def _init_error(spec, inputs: EngineInputs) -> str | None:
    """What the model class raises as SGLang builds it (None: nothing): at more than one stage a class that asserts one
    (`NO_PP_ARCHS`, the assertion as its traceback shows it), then what its Mamba2 mixers assert (`_mixer_error`; not
    a model the Transformers backend serves), in the first Nemotron-H class in the order its layers fail
    (`NEMOTRON_H_LAYERS_UNTIL`)."""
    arch, layout = spec.architecture, inputs.layout
    if layout.pp > 1 and arch in NO_PP_ARCHS:
        return (f"assert self.pp_group.is_first_rank and self.pp_group.is_last_rank, in {NO_PP_ARCHS[arch]}.__init__: "
                "SGLang does not run this model with pipeline parallelism (--pp-size 1).")
    version = inputs.version or VERSIONS[-1]
    mixer = None if _transformers_serves(arch, version) else _mixer_error(spec, inputs)
    return _nemotron_h_error(spec, version, mixer) or mixer


def _mixer_error(spec, inputs: EngineInputs) -> str | None:
    """What the first Mamba2 mixer asserts over its TP group, in MambaMixer2.__init__'s order (None: nothing): groups
    the TP size neither splits nor meets as one (`MAMBA2_GROUPS_ERROR`), then a quantized checkpoint's TP size
    (`MAMBA2_QUANT_TP_ERROR`). Its TP group: the attention-TP group's under attention DP from `MIXER_ATTENTION_TP_FROM`."""
    attention_tp = inputs.layout.attention_dp and _since(inputs, MIXER_ATTENTION_TP_FROM)
    tp = inputs.layout.state_tp if attention_tp else inputs.layout.tp
    if mamba2_groups_unsplit(spec, tp):
        words = MAMBA2_GROUPS_ERROR
    elif (_since(inputs, MAMBA2_QUANT_TP_FROM) and spec.architecture not in UNQUANTIZED_MIXER_ARCHS
          and mamba2_quantized_tp_refused(spec, tp)):
        words = MAMBA2_QUANT_TP_ERROR
    else:
        return None
    groups = spec.mamba2.n_groups
    return (f"{words} (MambaMixer2 of {spec.architecture}: its {groups} Mamba2 group{'s' * (groups != 1)} over the "
            f"{'attention-TP' if attention_tp else 'TP'} group's {tp} ranks; SGLang takes a size that divides them.)")


def _nemotron_h_error(spec, version: str, mixer: str | None) -> str | None:
    """What the first Nemotron-H class raises as it builds its layers (`NEMOTRON_H_LAYERS_UNTIL`), `mixer` what its
    Mamba2 mixers assert at the run's TP size (None: nothing)."""
    if spec.architecture != "NemotronHForCausalLM" or at_least(version, NEMOTRON_H_LAYERS_UNTIL):
        return None
    found = nemotron_h_layers_error(spec, mixer)
    return None if found is None else found[1]


def _pp_error(arch: str, inputs: EngineInputs) -> str | None:
    """What SGLang asserts at more than one stage once the model is built (None: nothing): a class whose forward takes
    no pp_proxy_tensors (`NO_PP_PROXY_ARCHS`, or not yet: `PP_PROXY_FROM`)."""
    if inputs.layout.pp == 1 or arch not in NO_PP_PROXY_ARCHS and _since(inputs, PP_PROXY_FROM.get(arch, VERSIONS[0])):
        return None
    return (f"Pipeline Parallel is not compatible with this model. ({arch}.forward takes no pp_proxy_tensors: "
            "SGLang does not run it with pipeline parallelism, --pp-size 1.)")


def _charged_slot_bytes(contexts: list[RankContext], setup: Setup) -> int:
    """The state bytes a request's slot is charged on every stage (kv_cache_configurator.py _handle_max_mamba_cache):
    the whole model's mamba_cache_per_req, from v0.5.17 (`DUMMY_SLOT_FROM`) scaled by pp_layer_scale, the share of the
    recurrent layers on the stage with the most (get_pp_indices over every rank), as SGLang computes it:
    int(per_req * (most / all)), a float product that can fall a byte short of the exact share. (_pp_local_per_request_bytes,
    the stage's own exact share, is defined from v0.5.19 but never called.)"""
    whole = sum(_slot_bytes(ctx, setup)[0] for ctx in contexts)
    layers = [ctx_layers(ctx) for ctx in contexts]
    if not setup.dummy or not whole:
        return whole
    return int(whole * (max(layers) / sum(layers)))


def _pool(ctx: RankContext, weight: int, per_slot: int, inputs: EngineInputs, setup: Setup) -> StatePool:
    """One stage's state pool and the tokens the rest of its static memory holds."""
    if setup.pre is None or setup.mfs is None:
        return StatePool()
    rest = setup.pre * setup.mfs - weight  # kv_cache_configurator.py: available after weights - pre * (1 - mfs)
    if _mm_reserved(inputs):
        rest -= VLM_CACHE_MB * MB  # mm_runtime_reservation_gb, before the state pool
    cell = _cell(ctx, inputs, setup)
    if _first_line(inputs):
        return _first_line_pool(rest, per_slot, cell, inputs, setup)
    error, slots, rest = _state_pool(rest, per_slot, setup, inputs)
    if error is None and rest <= 0 and _since(inputs, REQUESTS_CAP_FROM):
        error = _no_kv_memory(setup, weight)
    if error is not None:
        return StatePool(error, slots)
    if cell:
        tokens = int(rest) // cell // setup.page * setup.page
    elif inputs.layout.pp > 1 and _kv_layers(whole_model(inputs.spec, inputs.layout, setup.dtypes), setup):
        # a stage without attention layers in a model with some (KV_LESS_STAGE_FROM): int64 max, which the MIN over
        # the stages drops, or a division by its zero cell
        if not _since(inputs, KV_LESS_STAGE_FROM):
            return StatePool("integer division or modulo by zero", slots)
        tokens = INT64_MAX
    else:  # a model without attention keeps no KV: pool_configurator.py's context length
        tokens = setup.context_len
    if setup.total_tokens_cap is not None:
        tokens = min(tokens, setup.total_tokens_cap)
    return StatePool(None, slots, tokens)


def _stage(ctx: RankContext, inputs: EngineInputs, setup: Setup, pool: StatePool, tokens: int | None,
           per_slot: int) -> EngineStage:
    """One stage's figures, log lines and verdict from its state pool and the stages' common token pool."""
    cell = _cell(ctx, inputs, setup)
    mfs, error, slots = setup.mfs, pool.error, pool.slots
    fields = {"mamba_cache_per_req_bytes": per_slot, "cell_size_bytes": cell, "state_slots_per_request": setup.ratio,
              **_named({"mamba_radix_cache_strategy": setup.strategy}, inputs), "mem_fraction_static": mfs,
              "max_total_num_tokens": None, "max_mamba_cache_size": None}
    if mfs is None or (error is None and pool.tokens is None):
        return EngineStage(ctx.stage, None, None, [], None, fields)
    log = [f"{inputs.spec.architecture} has no SGLang implementation, falling back to Transformers implementation. "
           "Some features may not be supported and performance may not be optimal."] if setup.transformers else []
    if _mm_reserved(inputs):  # kv_cache_configurator.py mm_runtime_reservation_gb
        log.append(f"Reserving {VLM_CACHE_MB / 1024:.2f} GB of the KV budget for post-sizing multimodal allocations "
                   "(feature-transport pools + embedding cache).")
    _, conv, ssm = _slot_bytes(ctx, setup)
    first_line, mamba_line = _first_line(inputs), None
    # v0.5.2-v0.5.9's init_memory_pool refuses a token pool of no tokens before it builds the state pool
    # (a stage without state layers still builds the pool, of no bytes: the model's state kinds make it)
    if error is None and not setup.transformers and recurrent_kinds(inputs.spec) and not (first_line and tokens <= 0):
        # memory_pool.py MambaPool: size + 1 slots; v0.5.2-v0.5.3.post1 size it to the request pool and name no size
        sized_by_requests = first_line and not _since(inputs, FIRST_LINE_RADIX_FROM)
        pooled = pool.requests if sized_by_requests else slots
        named = "" if sized_by_requests else f"max_mamba_cache_size: {slots}, "
        stacked = ctx_layers(ctx) + setup.draft_state_layers
        mamba_line, mamba_pooled = len(log), pooled
        log.append(f"Mamba Cache is allocated. {named}conv_state size: "
                   f"{stacked * (pooled + 1) * conv / GIB:.2f}GB, ssm_state size: "
                   f"{stacked * (pooled + 1) * ssm / GIB:.2f}GB ")
    if error is None and tokens <= 0:
        error = _not_enough_memory(mfs, inputs)
    error = error or _qsa_pool_error(inputs, setup) or _dsa_pool_error(inputs, setup)
    requests, binding = 0, "start-up"
    if error is None:
        log += _kv_log(ctx, setup, tokens, inputs)
        if first_line:
            requests, binding, error = _first_line_requests(tokens, pool, per_slot, setup)
        else:
            requests, binding, warning = _max_requests(tokens, slots, per_slot, setup, inputs)
            if warning and _since(inputs, CAPPED_WARNING_FROM):
                log.append(warning)
        if mamba_line is not None and setup.drafts and _since(inputs, INTERMEDIATE_FROM):
            log[mamba_line] += _intermediate_text(ctx, setup, mamba_pooled, requests, inputs)
        if error is None and requests <= 0 and _since(inputs, JOINT_DRAFTS_FROM):
            error = ("Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                     f"max_mamba_cache_size={slots}, mamba_ratio={setup.ratio}, resulting max_num_reqs={requests}. Try: "
                     "(1) reduce --max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with "
                     "more memory.")
        elif error is None and requests <= 0:  # v0.5.12: managers/tp_worker.py TpModelWorker.__init__ asserts it, the pools built
            error = "max_running_request is zero"
        # then the draft worker is built
        error = error or _drafter_class_error(inputs, setup.drafts)
    if error is not None:
        log.append(error)
        return EngineStage(ctx.stage, 0, error, log, "start-up", fields)
    log.append(f"max_total_num_tokens={tokens}, chunked_prefill_size={setup.chunked}, max_prefill_tokens="
               f"{MAX_PREFILL_TOKENS}, max_running_requests={requests}, context_len={setup.context_len}")
    fields.update(max_total_num_tokens=tokens, max_mamba_cache_size=slots if per_slot else None,
                  max_running_requests_logged=requests)
    # What runs at once at the context: the token pool admits this many. A model without attention keeps no KV: its
    # token pool (the context's length, kv_cache_configurator.py) holds nothing a running request needs.
    if cell and tokens // setup.context < requests:
        requests, binding = tokens // setup.context, "KV tokens"
    return EngineStage(ctx.stage, requests, None, log, binding, fields)


def _refused(ctx: RankContext, inputs: EngineInputs, setup: Setup, error: str) -> EngineStage:
    """A stage of a run SGLang refuses before it sizes any pool."""
    fields = {"mamba_cache_per_req_bytes": _slot_bytes(ctx, setup)[0], "state_slots_per_request": setup.ratio,
              "cell_size_bytes": _cell(ctx, inputs, setup),
              **_named({"mamba_radix_cache_strategy": setup.strategy}, inputs), "mem_fraction_static": setup.mfs,
              "max_total_num_tokens": None, "max_mamba_cache_size": None}
    return EngineStage(ctx.stage, 0, error, [error], "start-up", fields)


def ctx_layers(ctx) -> int:
    """Recurrent layers the stage's state pool stacks."""
    return sum(ctx.counts[k] for k in pooled_kinds(ctx))


def pooled_kinds(ctx) -> list[str]:
    """The stage's recurrent kinds whose state the Mamba pool holds (not `UNPOOLED_KINDS`)."""
    return [k for k in ctx.recurrent_kinds if k not in UNPOOLED_KINDS]


def _dtypes(spec, s: Settings, inputs: EngineInputs) -> CacheDtypes:
    """configs/mamba_utils.py mamba2_state_dtype: the conv state is bfloat16 whatever the model dtype; the recurrent
    state is --mamba-ssm-dtype, else the config's mamba_ssm_dtype (not vLLM's mamba_ssm_cache_dtype), else float32,
    for KDA too; v0.5.2-v0.5.8 read no config's (`FIRST_LINE_SSM_DTYPES`, `CONFIG_SSM_DTYPE_FROM`). The model dtype is
    the one `run` serves the spec in (a float32 config, or one naming no dtype, in `FLOAT32_SERVED_AS`)."""
    model = dtype_names.canonical(spec.dtype)
    hint = ("float32" if not _since(inputs, CONFIG_SSM_DTYPE_FROM)
            else spec.ssm_dtype_hints.get("mamba_ssm_dtype", "float32"))
    ssm = s.take("mamba_ssm_dtype", None)
    ssm = state_dtype(ssm, "mamba_ssm_dtype") if ssm is not None else hint
    s.values["mamba_ssm_dtype"] = ssm
    kv_flag = s.take("kv_cache_dtype", "auto")
    if kv_flag not in KV_DTYPES:
        raise LayoutError("kv_cache_dtype", f"one of {', '.join(KV_DTYPES)}, got {kv_flag!r}")
    if spec.dsa_indexer is not None:  # DeepSeek sparse attention's own default, before any other (`DSA_KV_DTYPES`)
        kv_flag = _dsa_kv_flag(kv_flag, s, inputs)
    if kv_flag == "auto" and checkpoint_kv_format(spec) == "fp8" and _since(inputs, "0.5.3"):
        # mem_cache/kv_cache_dtype.py configure_kv_cache_dtype (v0.5.23): auto takes the model quant config's
        # kv_cache_quant_algo FP8 (ModelOpt: modelopt_quant.py reads kv_cache_quant_algo or an 8-bit float
        # kv_cache_scheme; compressed-tensors: its kv_cache_quant_algo property) as torch.float8_e4m3fn (from v0.5.3:
        # model_runner.py init_memory_pool at v0.5.2 takes the model dtype for auto)
        kv_flag = "fp8_e4m3"
        s.values["kv_cache_dtype"], s.sources["kv_cache_dtype"] = kv_flag, "default: the checkpoint's KV format"
    return CacheDtypes(model=model, kv=KV_DTYPES[kv_flag] or model, conv="bfloat16", ssm=ssm)


def _dsa_kv_flag(flag: str, s: Settings, inputs: EngineInputs) -> str:
    """A DSA model's KV dtype (arg_groups/overrides.py _dsa_kv_cache_dtype_default): auto is fp8_e4m3 on a CUDA card of
    compute capability 10 or more (`DSA_FP8_FROM_SM`), else bfloat16; only those two are taken."""
    if flag == "auto":
        major = sm_major(inputs.gpu_name)
        flag = "fp8_e4m3" if major is not None and major >= DSA_FP8_FROM_SM else "bfloat16"
        card = (f"SM{major}" if major is not None else "ROCm" if _rocm(inputs)
                else "a card below SM10, assumed (not in mcache's catalogue)")
        s.values["kv_cache_dtype"], s.sources["kv_cache_dtype"] = flag, f"default: DeepSeek DSA's on {card}"
    elif flag not in DSA_KV_DTYPES:
        raise LayoutError("kv_cache_dtype", f"bfloat16 or fp8_e4m3 for a DeepSeek DSA model (arg_groups/overrides.py: "
                                            f"\"DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype\"), "
                                            f"got {flag!r}")
    return flag


def _dsa_rows(spec, dtypes: CacheDtypes, inputs: EngineInputs) -> tuple[int, int]:
    """(bytes a token of one DSA layer's latent, of one indexer layer's keys): kv_cache_configurator.py
    calculate_mla_kv_cache_dim, the latent in bf16, or in fp8 with a float32 scale per 128 values and the rotary part
    in bf16 (the scaled layout of SM90's flashmla backends), raw where SGLang's DSA backends read it so (the trtllm
    ones it picks from SM 10, ROCm's); pool_configurator.py _compute_dsa_indexer_cell_size, a token's share of a key
    rounded up from v0.5.22 (`DSA_KPOOL_FROM`), a whole key before. (0, 0) for a model without DSA."""
    p, mla = spec.dsa_indexer, spec.mla
    if p is None or mla is None:
        return 0, 0
    width = mla.kv_lora_rank + mla.qk_rope_head_dim
    raw = _rocm(inputs) or (sm_major(inputs.gpu_name) or 0) >= DSA_FP8_FROM_SM
    if itemsize(dtypes.kv) == 2 or raw:
        latent = width * itemsize(dtypes.kv)
    else:
        latent = mla.kv_lora_rank + mla.kv_lora_rank // SCALE_BLOCK * 4 + mla.qk_rope_head_dim * 2
    key = key_row_bytes(p)
    return latent, -(-key // p.kpool) if _since(inputs, DSA_KPOOL_FROM) else key


def _slot_bytes(ctx, setup: Setup) -> tuple[int, int, int]:
    """(bytes of one slot over the stage's recurrent layers, conv bytes of one layer, state bytes of one layer):
    BaseLinearStateParams.mamba_cache_per_req, the conv window without draft rows; none under the Transformers
    backend."""
    dtypes = setup.dtypes
    if setup.transformers:
        return 0, 0, 0
    ctx = _state_ctx(ctx, setup)

    def dtype_of(kind, state):
        return dtypes.conv if state.component == "conv" else dtypes.ssm

    kinds = pooled_kinds(ctx)
    conv = sum(state_bytes(ctx, k, dtype_of, component="conv") * ctx.counts[k] for k in kinds)
    ssm = sum(state_bytes(ctx, k, dtype_of, component="ssm") * ctx.counts[k] for k in kinds)
    layers = ctx_layers(ctx) or 1
    return conv + ssm, conv // layers, ssm // layers


def _state_ctx(ctx, setup: Setup):
    """The rank whose state shards the pool holds: under attention DP as without it where the state is split over the
    whole TP group (`Setup.state_over_tp`)."""
    if setup.state_over_tp:
        return replace(ctx, layout=replace(ctx.layout, attention_dp=False, attention_dp_size=None))
    return ctx


# memory_pool.py MambaPool with drafts: beside the state pool, spec_state_size + 1 slots of every draft token's state
# and conv window, named at the end of the `Mamba Cache is allocated` line (every release that logs the pools: the
# tables from v0.5.3, read at v0.5.7 - v0.5.23). spec_state_size is the state pool's size before v0.5.7, then the
# requests (max_num_reqs: model_runner.py, then model_runner_kv_cache_mixin.py / kv_cache_configurator.py), at v0.5.7
# under attention DP the replica's (its init_memory_pool caps max_running_requests by the pool over the ratio alone;
# v0.5.8 by one rank's share: `SPEC_STATES_PER_RANK_FROM`). From v0.5.14 a linear draft chain (topk 1, mcache's
# drafts) keeps one shared window of D + K - 2 columns per conv state rather than D of K - 1 (conv_window_dedup_enabled;
# its physical buffers are the size named), taking SGLang's conv tuple as (dim, window): KDA's is (K - 1, channels) at
# v0.5.14 - v0.5.15, and from v0.5.16 KDA keeps the dense windows (KimiLinearStateShape.disable_conv_window_dedup).
# ... and at v0.5.20-v0.5.22 kv_cache_configurator.py _get_mamba_layer_ids_for_req_pool stacks the config's
# nextn_layer_ids (configs/glm5_next.py: one a num_nextn_predict_layers, after the model's) in the state pool while
# drafting, beside the layers the budget counts (v0.5.23's stacks the target's alone)
DRAFT_STATE_LAYERS = {GLM5_NEXT: ("0.5.20", "0.5.23")}  # [from, until)
INTERMEDIATE_FROM = "0.5.3"
INTERMEDIATE_BY_REQUESTS_FROM = "0.5.7"
SPEC_STATES_PER_RANK_FROM = "0.5.8"
CONV_WINDOW_DEDUP_FROM = "0.5.14"
KDA_DENSE_WINDOW_FROM = "0.5.16"


def _intermediate_text(ctx, setup: Setup, pooled: int, requests: int, inputs: EngineInputs) -> str:
    """The draft states' part of the `Mamba Cache is allocated` line, for a state pool of `pooled` slots and
    `requests` running requests (`INTERMEDIATE_BY_REQUESTS_FROM`)."""
    ctx = _state_ctx(ctx, setup)
    if not _since(inputs, SPEC_STATES_PER_RANK_FROM) and setup.replica_requests is not None:
        requests = min(setup.replica_requests, pooled // setup.ratio)
    slots = (requests if _since(inputs, INTERMEDIATE_BY_REQUESTS_FROM) else pooled) + 1
    drafts, conv_size = setup.drafts, itemsize(setup.dtypes.conv)
    ssm = conv = 0
    for kind in pooled_kinds(ctx):
        shapes, layers = ctx.states(kind), ctx.counts[kind] + setup.draft_state_layers
        ssm += layers * sum(math.prod(s.shape) for s in shapes if s.component == "ssm") * itemsize(setup.dtypes.ssm)
        windows = [s.shape for s in shapes if s.component == "conv"]
        if not _since(inputs, CONV_WINDOW_DEDUP_FROM) or (kind == "kda" and _since(inputs, KDA_DENSE_WINDOW_FROM)):
            per_layer = drafts * sum(math.prod(w) for w in windows)
        elif kind == "kda":  # one tuple (K - 1, channels of every conv): its "window" is the channels
            channels = sum(w[0] for w in windows)
            per_layer = windows[0][1] * (drafts + channels - 1)
        else:
            per_layer = sum(w[0] * (drafts + w[1] - 1) for w in windows)
        conv += layers * per_layer
    return (f"intermediate_ssm_state_cache size: {slots * drafts * ssm / GIB:.2f}GB "
            f"intermediate_conv_window_cache size: {slots * conv * conv_size / GIB:.2f}GB ")


def _kv_layers(ctx, setup: Setup) -> dict[str, int]:
    """The stage's layers that keep K and V, by the attention kind whose cell they take: the full-attention layers,
    or under the Transformers backend every layer at the full-attention cell."""
    layers = {kind: ctx.counts[kind] for kind in ctx.kinds if kind in ATTENTION_KINDS}
    if setup.transformers:
        return {"attention": sum(layers.values()) + ctx_layers(ctx)}
    return layers


def _cell(ctx, inputs: EngineInputs, setup: Setup) -> int:
    """KV bytes per token over the stage's full-attention layers (pool_configurator.py); a drafting MTP head's layers
    scale it by (1 + draft layers / layers) where the config declares them as num_nextn_predict_layers (from v0.5.20:
    `Setup.drafter_kv`); a DFlash drafter's KV is added (`DFLASH_FROM`); drafts run at PP 1 only (`_pp_drafts_error`)."""
    spec = inputs.spec
    cell, layers = _kv_bytes(ctx, setup)
    cell += _qsa_bytes(ctx, layers, setup)
    if setup.dsa_latent:
        return _dsa_cell(ctx, setup, cell, layers)
    if drafter_sizing.drafts_with(spec, setup.drafts):  # none on a stage without KV layers (num_layers > 0)
        drafter = spec.drafter.num_layers
        if not layers or not _since(inputs, DRAFTER_CELL_FROM):
            return -(-cell * (layers + drafter) // layers) if layers else cell
        return cell + _drafter_cell(ctx, inputs, setup)
    charged = setup.drafts and setup.drafter_kv
    drafter = mtp_attention_layers(spec) if charged else 0
    if not drafter or not layers:
        return cell
    # pool_configurator.py, in floats as SGLang computes it: int(cell x (1 + draft layers / layers)) to v0.5.21, which
    # a fraction with no exact binary form truncates a byte short (25,344 x 13 / 12: 27,455); from v0.5.22
    # cell + int(cell x draft layers / layers)
    if _since(inputs, DRAFT_CELL_ADDED_FROM):
        return cell + int(cell * drafter / layers)
    return int(cell * (1 + drafter / layers))


def _dsa_cell(ctx, setup: Setup, latent: int, layers: int) -> int:
    """A DSA model's cell (pool_configurator.py, v0.5.20-v0.5.23): the stage's latents and its indexer layers' keys;
    a drafting MTP head adds its layers' share of the latents, int(latent x draft layers / layers), and its own
    layers' keys, every one of them (`allocate_all_layers`), in every release that serves DSA."""
    cell = latent + _dsa_index_bytes(ctx, setup)
    drafter = mtp_attention_layers(ctx.spec) if setup.drafts and setup.drafter_kv else 0
    if not drafter or not layers:
        return cell
    return cell + int(latent * drafter / layers) + drafter * setup.dsa_index


def _dsa_index_bytes(ctx, setup: Setup) -> int:
    """A DSA indexer's keys a token over the stage's indexer layers (`_dsa_rows`). SGLang skips a layer whose
    selection is shared as the top level of its config says (model_config.py dsa_layer_skips_topk); configs/glm5_next.py
    copies index_topk_pattern / _freq / index_skip_topk_offset up from text_config but not indexer_types, so a layer
    `indexer_types` calls shared keeps keys there: mcache counts the spec's indexer layers (a caveat says so)."""
    return setup.dsa_index * ctx.counts.get("dsa_indexer", 0)


def _qsa_bytes(ctx, layers: int, setup: Setup) -> int:
    """A QSA indexer's compressed keys a token over the stage's `layers` full-attention layers: each layer's key row in
    bf16, or in fp8 with `--qsa-indexer-dtype fp8_e4m3` (`QSA_INDEXER_DTYPES`), floored over the tokens it stands for
    (pool_configurator.py _compute_qsa_cell_size, mem_cache/qsa_kv_pool.py qsa_bytes_per_token, v0.5.20-v0.5.23); the
    per-request raw-key ring is not budgeted."""
    p = ctx.spec.indexer
    if p is None or not layers:
        return 0
    return p.kv_heads * p.head_dim * itemsize(QSA_INDEXER_DTYPES[setup.qsa_indexer_dtype]) // p.compress * layers


def _drafter_cell(ctx, inputs: EngineInputs, setup: Setup) -> int:
    """KV bytes a token over the DFlash drafter's layers (its KV heads over the TP, K and V), in its KV dtype."""
    return inputs.spec.drafter.num_layers * shapes_bytes(drafter_sizing.states(ctx, None), setup.drafter_kv_dtype)


def _ratio(s: Settings, arch: str, inputs: EngineInputs, drafts: int) -> tuple[str, int, str | None]:
    """State slots per running request (kv_cache_configurator.py _calculate_mamba_ratio): 1 without the radix
    cache; with it 3 (no_buffer), 4 (extra_buffer without overlap, extra_buffer_lazy) or 5 (extra_buffer with the
    overlap scheduler). `auto` picks extra_buffer where the architecture has it, else no_buffer (overrides.py); with
    SGLang's start-up refusal of a strategy the model or the scheduler cannot run (model_hook.py, mamba_hook.py)."""
    no_radix = s.take("disable_radix_cache", False)
    strategy = s.take("mamba_radix_cache_strategy", DEFAULT_STRATEGY)
    choices = STRATEGIES if _since(inputs, LAZY_FROM) else STRATEGIES[:-1]
    if strategy not in choices:
        raise LayoutError("mamba_radix_cache_strategy", f"one of {', '.join(choices)}, got {strategy!r}")
    no_overlap = s.take("disable_overlap_schedule", False)
    if inputs.layout.pp > 1 and not no_overlap:
        # server_args.py _handle_pipeline_parallelism (v0.5.14), arg_groups/overrides.py _pipeline_parallel_overlap_disable
        # (v0.5.15-v0.5.23): "Pipeline parallelism is incompatible with overlap schedule."
        no_overlap = s.values["disable_overlap_schedule"] = True
        s.sources["disable_overlap_schedule"] = "default: off at PP > 1 (incompatible with pipeline parallelism)"
    radix = arch in RADIX_ARCHS and (arch not in RADIX_SINCE or _since(inputs, RADIX_SINCE[arch]))
    extra = radix and arch in EXTRA_BUFFER_ARCHS and (arch not in EXTRA_BUFFER_SINCE or
                                                      _since(inputs, EXTRA_BUFFER_SINCE[arch]))
    if not _since(inputs, STRATEGY_RENAMED):
        extra = extra or arch in EXTRA_BUFFER_TO_0_5_13 if _since(inputs, "0.5.13") else arch in EXTRA_BUFFER_TO_0_5_12
        return _scheduler_strategy(s, arch, strategy, radix, extra, drafts, inputs)
    if not radix and strategy.startswith("extra_buffer"):
        if _since(inputs, "0.5.21"):  # arg_groups/model_hook.py handle_mamba_radix_cache from v0.5.21
            return strategy, 1, f"--mamba-radix-cache-strategy {strategy} needs mamba state, got {arch}."
        return _unchecked_extra_buffer(strategy, no_radix, no_overlap)
    if no_radix:
        return "none (no radix cache)", 1, None
    if not radix:
        # overrides.py _mamba_radix_cache_resolution leaves the strategy of other architectures (pure Mamba)
        # unresolved and model_hook.py handle_mamba_radix_cache validates nothing: the radix cache stays on without
        # an extra buffer, so _calculate_mamba_ratio gives its base of 3 slots per request
        return strategy, 3, None
    if strategy == "auto":
        strategy = "extra_buffer" if extra else "no_buffer"
        s.values["mamba_radix_cache_strategy"] = strategy
        if strategy == "no_buffer":
            no_overlap = s.values["disable_overlap_schedule"] = True  # overrides.py: auto's no_buffer turns overlap off
    if strategy.startswith("extra_buffer") and not extra:
        return strategy, 1, f"extra_buffer is not supported for {arch}; use no_buffer."
    if strategy.startswith("extra_buffer") and (rocm_error := _rocm_extra_buffer_error(inputs)):
        return strategy, 1, rocm_error
    if strategy == "no_buffer":
        # validate_mamba_no_buffer (server_args.py v0.5.17-v0.5.18, arg_groups/mamba_hook.py v0.5.19-v0.5.23): pages of
        # one token, then no overlap
        paged = s.values.get("page_size", DEFAULT_PAGE_SIZE) > 1 and _since(inputs, NO_BUFFER_PAGE_CHECK_FROM)
        refusal = ("no_buffer only supports page_size=1." if paged else None if no_overlap else
                   "no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.")
        return strategy, 3, refusal
    if strategy == "extra_buffer_lazy":
        # server_args.py _validate_mamba_extra_buffer to v0.5.16 refuses the lazy buffer with drafts (v0.5.17 drops it)
        return strategy, 4, "extra_buffer_lazy unsupported with spec." if drafts and not _since(inputs, "0.5.17") else None
    return strategy, 4 if no_overlap else 5, None


def _first_line(inputs: EngineInputs) -> bool:
    """Whether the run's release is one of the first hybrid line, v0.5.2 to v0.5.9 (`FIRST_LINE_UNTIL`)."""
    return not _since(inputs, FIRST_LINE_UNTIL)


def _first_line_ratio(s: Settings, arch: str, inputs: EngineInputs, drafts: int) -> tuple[str | None, int, str | None]:
    """v0.5.2-v0.5.9: the radix-cache strategy (v0.5.2-v0.5.6 have none: None), the state slots per running request
    and SGLang's refusal of the strategy. To v0.5.6 model_runner.py initialize turns the radix cache off for a state
    model (`FIRST_LINE_RADIX_FROM`), and with it each request holds one slot; from v0.5.3.post2 a GDN model keeps it and holds
    `FIRST_LINE_RADIX_RATIO` (init_memory_pool). From v0.5.7 (`MIXIN_POOL_FROM`) every state model keeps it but
    Kimi-Linear (server_args.py _handle_model_specific_adjustments; from v0.5.8 Nemotron-H with a draft too,
    `DRAFT_NO_RADIX_0_5_8`), --mamba-scheduler-strategy `auto` is no_buffer (__post_init__), an extra buffer is refused
    for the architectures of `NO_EXTRA_BUFFER_0_5_7`, and model_runner_kv_cache_mixin.py init_memory_pool holds
    `FIRST_LINE_RADIX_RATIO` + 2 slots a request with the radix cache (+ 1 for an extra buffer with a draft:
    MAMBA_CACHE_V2_ADDITIONAL_RATIO_OVERLAP / _NO_OVERLAP); from v0.5.8 (`MIXIN_0_5_8`) the + 2 / + 1 only with an
    extra buffer. From v0.5.9 (`RADIX_HANDLER_0_5_9`) BailingMoeV2_5 turns its radix cache off too
    (`FIRST_LINE_RADIX_OFF`) and no_buffer with a draft turns it off for the architectures of `DRAFT_NO_RADIX_0_5_9`."""
    no_radix = s.take("disable_radix_cache", False)
    s.take("disable_overlap_schedule", False)
    native = FIRST_LINE_NATIVE.get(arch)
    if not _since(inputs, MIXIN_POOL_FROM):
        if native is None or not _since(inputs, native):
            return None, 1, None
        kept = (arch in FIRST_LINE_RADIX_ARCHS and _since(inputs, FIRST_LINE_RADIX_FROM)) or (
            _since(inputs, MAMBA2_RADIX_KEPT_FROM) and arch not in FIRST_LINE_RADIX_OFF)
        if not kept:
            no_radix = s.values["disable_radix_cache"] = True
        return None, 1 if no_radix else FIRST_LINE_RADIX_RATIO, None
    strategy = s.take("mamba_radix_cache_strategy", DEFAULT_STRATEGY)
    if strategy not in STRATEGIES[:3]:
        raise LayoutError("mamba_radix_cache_strategy", f"one of {', '.join(STRATEGIES[:3])}, got {strategy!r}")
    if strategy == "auto":
        strategy = s.values["mamba_radix_cache_strategy"] = "no_buffer"
    if native is None or not _since(inputs, native):
        return strategy, 1, None
    if strategy == "extra_buffer" and arch in NO_EXTRA_BUFFER_0_5_7:
        return strategy, 1, f"mamba extra_buffer is not supported for {arch} model"
    checked = _by_release(inputs, ROCM_EXTRA_BUFFER_CHECKED)
    if strategy == "extra_buffer" and arch in checked and (rocm_error := _rocm_extra_buffer_error(inputs)):
        return strategy, 1, rocm_error
    draft_no_radix = DRAFT_NO_RADIX_0_5_9 if _since(inputs, RADIX_HANDLER_0_5_9) else DRAFT_NO_RADIX_0_5_8
    if arch in FIRST_LINE_RADIX_OFF or (drafts and strategy == "no_buffer" and arch in draft_no_radix
                                        and _since(inputs, MIXIN_0_5_8)):
        no_radix = s.values["disable_radix_cache"] = True
    if no_radix:
        return strategy, 1, None
    extra = strategy == "extra_buffer"
    if _since(inputs, MIXIN_0_5_8):  # the + 2 / + 1 only for an extra buffer
        return strategy, FIRST_LINE_RADIX_RATIO + ((1 if drafts else 2) if extra else 0), None
    return strategy, FIRST_LINE_RADIX_RATIO + (1 if extra and drafts else 2), None


def _first_line_dtype_error(arch: str, s: Settings, inputs: EngineInputs) -> str | None:
    """v0.5.2-v0.5.9's refusals of a cache dtype, as the pools are sized: model_runner.py init_memory_pool (v0.5.7-v0.5.9:
    configure_kv_cache_dtype) takes the KV dtypes of `FIRST_LINE_KV_DTYPES`, and to v0.5.8 a state model's dtype lookup
    the state dtypes of `FIRST_LINE_SSM_DTYPES` (v0.5.9's takes every one --mamba-ssm-dtype offers,
    `CONFIG_SSM_DTYPE_FROM`)."""
    kv = s.values["kv_cache_dtype"]
    if kv not in FIRST_LINE_KV_DTYPES or not _since(inputs, FIRST_LINE_KV_DTYPES[kv]):
        return f"Unsupported kv_cache_dtype: {kv}."
    native = FIRST_LINE_NATIVE.get(arch)
    ssm = s.values["mamba_ssm_dtype"]
    if (native is not None and _since(inputs, native) and ssm not in FIRST_LINE_SSM_DTYPES
            and not _since(inputs, CONFIG_SSM_DTYPE_FROM)):
        return repr(ssm)  # KeyError's message
    return None
def _scheduler_strategy(s: Settings, arch: str, strategy: str, radix: bool, extra: bool, drafts: int,
                        inputs: EngineInputs) -> tuple[str, int, str | None]:
    """The strategy before v0.5.14 (server_args.py at v0.5.10 to v0.5.13: `--mamba-scheduler-strategy`): `auto` is
    no_buffer for every model (_handle_missing_default_values); _handle_mamba_radix_cache, called by the architecture
    branches of the radix-cache architectures, turns some of their radix caches off (`RADIX_OFF_UNTIL`), refuses an
    extra buffer the architecture lacks (`extra`), or with --disable-radix-cache, or (v0.5.13) lazy with drafts; and
    no_buffer with the radix cache turns the overlap scheduler off (no refusal) without drafts, and is refused with
    them (on an AMD card at v0.5.11-v0.5.13 the radix cache is turned off instead: `ROCM_DRAFT_NO_RADIX`). The slots
    per request are v0.5.14's (model_runner_kv_cache_mixin.py _calculate_mamba_ratio is the same), through
    `_unchecked_extra_buffer`; at v0.5.10 an EAGLE draft runs without the overlap scheduler (`SPEC_V2_FROM`), and so
    does a DFlash drafter at v0.5.11 - v0.5.13 (server_args.py, then arg_groups/speculative_hook.py _handle_dflash:
    "spec v2 is not supported yet"; from v0.5.14 it keeps it)."""
    if drafts and (not _since(inputs, SPEC_V2_FROM) or drafter_sizing.drafts_with(inputs.spec, drafts)):
        s.values["disable_overlap_schedule"] = True
    no_radix, no_overlap = s.values["disable_radix_cache"], s.values["disable_overlap_schedule"]
    if strategy == "auto":
        strategy = s.values["mamba_radix_cache_strategy"] = "no_buffer"
    if arch in RADIX_OFF_UNTIL and not _since(inputs, RADIX_OFF_UNTIL[arch]):
        s.values["disable_radix_cache"] = True
        return "none (no radix cache)", 1, None
    if strategy.startswith("extra_buffer"):
        if radix and not extra:
            return strategy, 1, f"mamba extra_buffer is not supported for {arch} model"
        if radix and no_radix:  # v0.5.12's message lacks the full stop
            return strategy, 1, (f"mamba extra_buffer is not compatible with --disable-radix-cache"
                                 f"{'.' if _since(inputs, '0.5.13') else ''} Overlap scheduling is already supported "
                                 "with no_buffer + disable_radix_cache. Please use --mamba-scheduler-strategy no_buffer "
                                 "instead.")
        if radix and (rocm_error := _rocm_extra_buffer_error(inputs)):
            return strategy, 1, rocm_error
        if radix and drafts and strategy == "extra_buffer_lazy":
            return strategy, 4, ("extra_buffer_lazy is not yet supported with speculative decoding. Use "
                                 "--mamba-scheduler-strategy extra_buffer instead.")
        return _unchecked_extra_buffer(strategy, no_radix, no_overlap)
    if radix and drafts and _rocm(inputs) and _since(inputs, ROCM_DRAFT_NO_RADIX[0]) and not _since(
            inputs, ROCM_DRAFT_NO_RADIX[1]):
        no_radix = s.values["disable_radix_cache"] = True
    if no_radix:
        return "none (no radix cache)", 1, None
    if radix and drafts:
        return strategy, 3, (f"Speculative decoding for {arch} is not compatible with radix cache when using "
                             "--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please "
                             "use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.")
    if radix:
        s.values["disable_overlap_schedule"] = True
    return strategy, 3, None


def _unchecked_extra_buffer(strategy: str, no_radix: bool, no_overlap: bool) -> tuple[str, int, str | None]:
    """Before v0.5.21 (arg_groups/model_hook.py handle_mamba_radix_cache at v0.5.20) an extra-buffer strategy on an
    architecture without the mamba radix cache is not refused: kv_cache_configurator.py _calculate_mamba_ratio adds
    its tracking slots to the base 3 (2 with the overlap scheduler, 1 without, 1 lazy; 1 slot in all without the radix
    cache), and asserts that the lazy buffer has the overlap scheduler. Before v0.5.14 the same slots for any extra
    buffer the strategy checks let through (`_scheduler_strategy`: model_runner_kv_cache_mixin.py's
    _calculate_mamba_ratio is the same)."""
    if no_radix:
        return strategy, 1, None
    if strategy == "extra_buffer_lazy":
        refusal = ("Lazy extra buffer requires overlap schedule (--disable-overlap-schedule is incompatible)"
                   if no_overlap else None)
        return strategy, 4, refusal
    return strategy, 4 if no_overlap else 5, None


def _state_pool(rest: float, per: int, setup: Setup, inputs: EngineInputs) -> tuple[str | None, int, float]:
    """(error, slots, bytes left for the token pool): kv_cache_configurator.py _handle_max_mamba_cache. The slots are
    --max-mamba-cache-size, or the running requests without radix cache, or the share r / (1 + r) of the memory;
    drafts reserve their intermediate states per running request (`JOINT_DRAFTS_FROM`); from v0.5.17 the budget counts
    the pool's dummy slot and one draft state more (`Setup.dummy`)."""
    requests, ratio, drafts, dummy = setup.user_requests, setup.ratio, setup.drafts, setup.dummy
    if not per:
        return None, 0, rest
    joint = _since(inputs, JOINT_DRAFTS_FROM)
    if drafts and not joint:
        rest -= per * requests * drafts
    if setup.fixed_slots is not None:
        slots = setup.fixed_slots
        if drafts and joint:
            rest -= per * (min(requests, slots // ratio) + dummy) * drafts
    elif setup.slots_follow_requests:
        slots = requests
        if drafts and joint:
            rest -= per * (slots + dummy) * drafts
    else:
        budget = rest * setup.r / (1 + setup.r)
        if drafts and joint:
            slots = int((budget - per * (1 + drafts) * dummy) // (per * (1 + drafts / ratio)))
            rest -= per * (min(requests, slots // ratio) + dummy) * drafts
        else:
            slots = int((budget - per * dummy) // per)
    if slots <= 0 and joint:
        return (f"Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size="
                f"{slots} (total_rest_memory={rest / GIB:.2f} GB, mamba_cache_per_req={per / MB:.2f} MB). Try: (1) reduce "
                "--max-running-requests, (2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, "
                "or (4) use GPUs with more memory."), slots, rest
    return None, slots, rest - (slots + dummy) * per


def _first_line_pool(rest: float, per: int, cell: int, inputs: EngineInputs, setup: Setup) -> StatePool:
    """v0.5.2-v0.5.9, model_runner.py: profile_max_num_token takes the state pool off the rest (v0.5.3.post2:
    handle_max_mamba_cache) and gives the token pool what remains; init_memory_pool then sizes the request pool from the
    profiled tokens, gives a draft the tokens its steps and verification take per request and 100 more, and caps and
    pages the tokens. The state pool: without the radix cache (ratio 1) --max-mamba-cache-size, else
    --max-running-requests, else `FIRST_LINE_SLOTS`; with it (from v0.5.3.post2, GDN) the share r / (1 + r) of the rest.
    From v0.5.3.post2 to v0.5.6 each slot also holds a state per draft token (1 + D states), before the draft states are
    not counted. v0.5.7 (`MIXIN_POOL_FROM`, model_runner_kv_cache_mixin.py handle_max_mamba_cache and init_memory_pool):
    a given --max-mamba-cache-size is honoured with the radix cache too, a draft's intermediate states (D for each of
    --max-running-requests, the speculative default 48 included) come off the rest before the share (v0.5.8,
    `MIXIN_0_5_8`: before any branch), a slot holds one state, and the draft adds no tokens to the pool. v0.5.9
    (`RADIX_HANDLER_0_5_9`): without the radix cache and without --max-running-requests the share too (no
    `FIRST_LINE_SLOTS`)."""
    mixin = _since(inputs, MIXIN_POOL_FROM)
    states = 1 + (setup.drafts if _since(inputs, FIRST_LINE_RADIX_FROM) and not mixin else 0)
    if _since(inputs, RADIX_HANDLER_0_5_9):
        fixed = setup.fixed_slots is not None or (setup.ratio == 1 and setup.user_requests is not None)
    else:
        fixed = setup.ratio == 1 or (mixin and setup.fixed_slots is not None)
    if mixin and setup.drafts and (not fixed or _since(inputs, MIXIN_0_5_8)):  # v0.5.8: in every branch
        # for one attention-DP rank's requests from v0.5.8; v0.5.7's for the replica's --max-running-requests
        rest -= per * (setup.user_requests if _since(inputs, MIXIN_0_5_8) else setup.replica_requests) * setup.drafts
    # the state's share of the rest (with the radix cache, which keeps the state share, from v0.5.3.post2)
    share = int(rest * setup.r / (1 + setup.r) // per // states) if per and setup.r is not None else 0
    if not per:
        slots = 0
    elif _within(inputs, GDN_SLOTS_BY_DP):  # the replica's pool, one attention-DP rank's for a GDN model alone
        given = (inputs.given.get("max_mamba_cache_size"), setup.replica_requests, FIRST_LINE_SLOTS)
        slots = next(n for n in given if n is not None) if fixed else share
        if inputs.spec.architecture in FIRST_LINE_RADIX_ARCHS:
            slots //= inputs.layout.attention_dp_ranks
    elif fixed:
        default = FIRST_LINE_SLOTS // inputs.layout.attention_dp_ranks
        slots = next(n for n in (setup.fixed_slots, setup.user_requests, default) if n is not None)
    else:  # to v0.5.6 a given --max-mamba-cache-size is overwritten
        slots = share
    tokens = int((rest - slots * per * states) // cell)
    estimate = max(min(int(tokens / setup.context_len * 512), 4096), 2048)
    # init_memory_pool's max_num_reqs: the replica's --max-running-requests, not one attention-DP rank's (the scheduler
    # divides it: `_first_line_requests`); v0.5.9's further cap at that share with a draft under DP attention moves no
    # figure (the scheduler's is the same)
    requests = setup.replica_requests or estimate
    if per:
        requests = min(requests, slots // setup.ratio)
    if setup.drafts and not mixin:  # EAGLE, topk 1: (num_steps + num_draft_tokens) tokens per request
        tokens += requests * (setup.drafts - 1 + setup.drafts) + 100
    if setup.total_tokens_cap is not None:
        tokens = min(tokens, setup.total_tokens_cap)
    return StatePool(None, slots, tokens // setup.page * setup.page, requests)


def _first_line_requests(tokens: int, pool: StatePool, per: int, setup: Setup) -> tuple[int, str, str | None]:
    """v0.5.2-v0.5.9, managers/tp_worker.py TpModelWorker.__init__ (v0.5.7-v0.5.9: model_runner.py initialize, the asserts
    still the worker's): the scheduler runs --max-running-requests or
    half the tokens, at most what the request pool holds (`_first_line_pool`: the estimate or the state slots), and
    asserts that it runs one and that a request fits (max_req_len = min(context, tokens) - 1 above 5)."""
    user = setup.user_requests
    requests, binding = (user, "max_running_requests") if user is not None else (tokens // 2, "KV tokens")
    if pool.requests < requests:
        requests = pool.requests
        binding = ("state slots" if per and requests == pool.slots // setup.ratio
                   else "default max_running_requests")
    if requests <= 0:
        return requests, "start-up", "max_running_request is zero"
    if min(setup.context_len, tokens) - 1 - 5 <= 0:
        return requests, "start-up", "Memory pool size is too small"
    return requests, binding, None


def _not_enough_memory(mfs: float, inputs: EngineInputs) -> str:
    """SGLang's refusal of a token pool of no tokens, with the mem_fraction_static where the release names it:
    v0.5.3-v0.5.8 (model_runner.py init_memory_pool, v0.5.7-v0.5.8 its kv-cache mixin's:
    `{self.server_args.mem_fraction_static=}`) and v0.5.10
    (MemoryPoolConfig.__post_init__ adds "Current value: mem_fraction_static=..." to a config given one, as
    model_runner_kv_cache_mixin.py _resolve_memory_pool_config gives it); not at v0.5.2, nor from v0.5.11 (the pool
    configurator's calculate_pool_sizes, model_executor/pool_configurator.py, to v0.5.23, gives none)."""
    message = "Not enough memory. Please try to increase --mem-fraction-static."
    if not _since(inputs, "0.5.3") or _since(inputs, POOL_CONFIGURATOR_FROM):
        return message
    if _first_line(inputs):
        return f"{message} Current value: self.server_args.mem_fraction_static={mfs}"
    return f"{message} Current value: mem_fraction_static={mfs}"


def _no_kv_memory(setup: Setup, weight: int) -> str:
    """kv_cache_configurator.py _profile_available_bytes: SGLang's refusal when the weights (and the state pool) leave
    no memory for the token pool, with the smallest mem_fraction_static that leaves some (1 - available / pre, the
    memory free after the weights load over the memory free before)."""
    minimum = 1 - (setup.pre - weight) / setup.pre
    return (f"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={setup.mfs}. Raise "
            f"--mem-fraction-static above {math.ceil(minimum * 1000) / 1000:.3f} (minimum viable = 1 - available/pre = "
            f"{minimum:.4f}). If using speculative decoding, draft weights are now counted.")


def _max_requests(tokens: int, slots: int, per_slot: int, setup: Setup,
                  inputs: EngineInputs) -> tuple[int, str, str | None]:
    """kv_cache_configurator.py resolve_max_num_reqs: the user's value or clamp(tokens / context * 512, 2048, 4096),
    at most half the tokens (the user's, before v0.5.14, at most that estimate instead: `REQUESTS_CAP_FROM`), and at
    most the state slots / ratio; with what binds and the warning SGLang logs."""
    user, ratio = setup.user_requests, setup.ratio
    estimated = max(min(int(tokens / setup.context_len * 512), 4096), 2048)
    if user and not _since(inputs, REQUESTS_CAP_FROM):
        requests, binding = min(user, estimated), "max_running_requests" if user <= estimated else "estimated requests"
    elif user:
        requests, binding = min(user, tokens // 2), "max_running_requests"
    else:
        requests, binding = min(estimated, tokens // 2), "default max_running_requests"
    if binding != "estimated requests" and requests == tokens // 2 and requests < (user or estimated):
        binding = "KV tokens"
    warning = None
    if per_slot and slots // ratio < requests:
        warning = (f"max_running_requests is capped to {slots // ratio} by the mamba state cache (max_mamba_cache_size="
                   f"{slots}, {ratio} state slots per request). To raise it: increase --mamba-full-memory-ratio or "
                   "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.")
        requests, binding = slots // ratio, "state slots"
    return requests, binding, warning


def _kv_bytes(ctx, setup: Setup) -> tuple[int, int]:
    """(KV bytes one token takes over the stage's KV layers, how many layers keep KV), a DSA indexer's keys apart
    (`_dsa_index_bytes`)."""
    kv_layers = _kv_layers(ctx, setup)
    # the Transformers backend keeps attention's K and V on every layer, on a stage of linear layers alone too
    model = whole_model(ctx.spec, ctx.layout, setup.dtypes) if setup.transformers else ctx

    def row(kind: str) -> int:  # a DSA model's latent in the layout its backends read (`_dsa_rows`)
        return setup.dsa_latent if kind == "mla" and setup.dsa_latent else token_bytes(model, kind, setup.dtypes.kv)

    return sum(row(kind) * n for kind, n in kv_layers.items()), sum(kv_layers.values())


def _kv_log(ctx, setup: Setup, tokens: int, inputs: EngineInputs) -> list[str]:
    """memory_pool.py MHATokenToKVPool: K and V buffers of `tokens + page` rows per full-attention layer (the dtype
    named in v0.5.14's, not in v0.5.2-v0.5.9's line); a drafting DFlash drafter's pool after it, the draft worker's,
    of as many tokens over the drafter's layers in its KV dtype."""
    cell, layers = _kv_bytes(ctx, setup)
    cell += _dsa_index_bytes(ctx, setup)  # DSATokenToKVPool's index-K buffer: (size + page) rows, one a pooled key
    mla = inputs.spec.mla is not None and not setup.transformers  # the model's pool class, on every stage
    lines = [_kv_line(setup.dtypes.kv, cell if layers else 0, tokens, setup.page, inputs, mla)]
    if drafter_sizing.drafts_with(inputs.spec, setup.drafts):
        lines.append(_kv_line(setup.drafter_kv_dtype, _drafter_cell(ctx, inputs, setup), tokens, setup.page, inputs))
    return lines


def _kv_line(dtype: str, cell: int, tokens: int, page: int, inputs: EngineInputs, mla: bool = False) -> str:
    """One pool's `KV Cache is allocated` line: its K and V halves of `cell` bytes a token over `tokens + page` rows,
    or MLATokenToKVPool's one latent (`KV size`)."""
    named = "" if _first_line(inputs) else f"dtype: torch.{dtype}, "
    if mla:
        return f"KV Cache is allocated. {named}#tokens: {tokens}, KV size: {cell * (tokens + page) / GIB:.2f} GB"
    size = cell // 2 * (tokens + page) / GIB
    return f"KV Cache is allocated. {named}#tokens: {tokens}, K size: {size:.2f} GB, V size: {size:.2f} GB"


def _mm_reserved(inputs: EngineInputs) -> bool:
    """Whether the multimodal embedding cache comes off the KV budget (`VLM_CACHE_MB`): a model with a vision tower,
    from v0.5.18."""
    return inputs.spec.vision is not None and _since(inputs, VLM_CACHE_FROM)


def _since(inputs: EngineInputs, floor: str) -> bool:
    """Whether the modelled release of the run (the newest without one) is `floor` or later."""
    return at_least(inputs.version or VERSIONS[-1], floor)


def _gpu_row(gpu_mb: int, inputs: EngineInputs) -> tuple[int, int]:
    """arg_groups/memory_hook.py handle_gpu_memory_settings: (chunked_prefill_size, decode CUDA-graph max_bs) by
    the GPU's memory and the TP size (GPU_ROWS; GPU_ROWS_0_5_19 before v0.5.20, GPU_ROWS_0_5_4 at v0.5.3-v0.5.4, before
    v0.5.4.post1)."""
    rows = GPU_ROWS if _since(inputs, "0.5.20") else GPU_ROWS_0_5_19 if _since(inputs, "0.5.4.post1") else GPU_ROWS_0_5_4
    for limit, chunked, small_tp, large_tp in rows:
        if gpu_mb < limit:
            return chunked, small_tp if inputs.layout.tp < 4 else large_tp
    return GPU_LARGEST[0], GPU_LARGEST[1] if inputs.layout.tp < 4 else GPU_LARGEST[2]


def _chunked_prefill(gpu_mb: int | None, inputs: EngineInputs) -> int:
    """arg_groups/memory_hook.py: the chunked prefill size by GPU memory (v0.5.2: `CHUNKED_ROWS_0_5_2`)."""
    if gpu_mb is None:
        return CHUNKED_PREFILL_WITHOUT_GPU
    if not _since(inputs, "0.5.3"):
        return next((chunked for limit, chunked in CHUNKED_ROWS_0_5_2 if gpu_mb < limit), CHUNKED_LARGEST_0_5_2)
    return _gpu_row(gpu_mb, inputs)[0]


def _decode_graph_max_bs(gpu_mb: int, inputs: EngineInputs, user_requests: int | None) -> int:
    """The decode CUDA graphs' largest batch: by GPU memory and TP (_gpu_row); from v0.5.22 a default above
    --max-running-requests is cut to it (arg_groups/memory_hook.py handle_gpu_memory_settings at v0.5.22; v0.5.21's
    has no such cut)."""
    max_bs = _gpu_row(gpu_mb, inputs)[1]
    if user_requests is not None and _since(inputs, "0.5.22"):
        max_bs = min(max_bs, user_requests)
    return max_bs


def _mem_fraction_0_5_2(gpu_mb: int, inputs: EngineInputs, drafts: int) -> float:
    """server_args.py __post_init__ at v0.5.2: the GPU row's reserve (`RESERVE_ROWS_0_5_2`), a draft model's and DP
    attention's (`DP_RESERVE_MB_0_5_2`), as a fraction of the GPU."""
    parallel = inputs.layout.tp * inputs.layout.pp
    reserved = next(((base + parallel / per) * 1024 for limit, base, per in RESERVE_ROWS_0_5_2 if gpu_mb < limit),
                    RESERVE_LARGEST_0_5_2 * 1024)
    if drafts:
        reserved += FIRST_LINE_DRAFT_RESERVE_MB
    if inputs.layout.attention_dp:
        reserved += DP_RESERVE_MB_0_5_2
    return round((gpu_mb - reserved) / gpu_mb, 3)


def _mem_fraction(gpu_mb: int, chunked: int, inputs: EngineInputs, user_requests: int | None,
                  prefill_graphs_mb: int, drafts: int = 0) -> float:
    """arg_groups/memory_hook.py handle_gpu_memory_settings: what the activations, TP buffers and CUDA graphs reserve
    (at least 10 GiB on GPUs over 60 GB), as a fraction of the GPU. reserve_for_graph_mb: 2 MiB per decode-graph
    batch size up to max_bs, and what the prefill graphs take (the same from v0.5.10 to v0.5.23; before v0.5.19 in
    server_args.py _handle_gpu_memory_settings); before v0.5.14 the draft model's reserve past the floor
    (`DRAFT_RESERVE_MB`; v0.5.3-v0.5.8: `FIRST_LINE_DRAFT_RESERVE_MB`)."""
    layout = inputs.layout
    graphs = _decode_graph_max_bs(gpu_mb, inputs, user_requests)
    reserved = 512 + max(chunked, 2048) * 1.5 + layout.tp * layout.pp / 8 * 1024 + graphs * 2 + prefill_graphs_mb
    dp = inputs.layout.attention_dp_ranks
    if dp > 1:  # attention DP's padding, 1.5 MiB more above a max_bs of 300 (reserve_for_graph_mb from v0.5.19)
        reserved += graphs * dp * (3 + (1.5 if graphs > 300 else 0))
    if gpu_mb > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if drafts and not _since(inputs, DRAFT_RESERVE_UNTIL):
        reserved += FIRST_LINE_DRAFT_RESERVE_MB if _first_line(inputs) else DRAFT_RESERVE_MB
    return round((gpu_mb - reserved) / gpu_mb, 3)


def _graph_cap(total_tokens_cap: int | None, given: dict, inputs: EngineInputs) -> int | None:
    """The largest prefill graph beside the chunked prefill (server_args.py _handle_gpu_memory_settings): at most
    --max-total-tokens, and from v0.5.13 to v0.5.16 at most a given --context-length (v0.5.12's has no such clamp,
    v0.5.17's none any more)."""
    by_context = _since(inputs, "0.5.13") and not _since(inputs, DUMMY_SLOT_FROM)
    caps = [total_tokens_cap] + ([given.get("context_length")] if by_context else [])
    caps = [cap for cap in caps if cap is not None]
    return min(caps) if caps else None


def _prefill_graph_mb(spec, chunked: int, cap: int | None, inputs: EngineInputs | None = None) -> int:
    """MiB the prefill CUDA graphs reserve (arg_groups/memory_hook.py reserve_for_graph_mb): none on an AMD card or
    where SGLang turns them off (`_prefill_graphs_off`), 1.5 GiB with an MLA backend, else 8 MiB per captured size up
    to the chunked prefill (at most `cap`, `_graph_cap`)."""
    version = inputs.version if inputs is not None and inputs.version else VERSIONS[-1]
    if not at_least(version, FIRST_LINE_UNTIL):
        # server_args.py _handle_gpu_memory_settings at v0.5.3-v0.5.5 reserves nothing for prefill graphs; v0.5.6-v0.5.8's
        # piecewise_cuda_graph_max_tokens / 4 MiB (v0.5.7: / 8; v0.5.8: 8 MiB a captured size) only with
        # --enable-piecewise-cuda-graph (off by default, as at v0.5.9: its table; not a setting)
        return 0
    pp = inputs.layout.pp if inputs is not None else 1
    dp = inputs.layout.attention_dp_ranks if inputs is not None else 1
    if (inputs is not None and _rocm(inputs)) or _prefill_graphs_off(spec, version, pp, dp):
        return 0  # none on an AMD card (the ROCm constants)
    if spec.mla is not None:
        return MLA_PREFILL_GRAPH_MB
    return 8 * len(_prefill_graph_sizes(chunked if cap is None else min(chunked, cap)))


def _prefill_graphs_off(spec, version: str, pp: int, dp: int = 1) -> bool:
    """Whether SGLang at `version` captures no prefill CUDA graphs for the model at `pp` stages and attention DP `dp`:
    under attention DP before v0.5.17 (`DP_PREFILL_GRAPHS_FROM`); at PP > 1 at v0.5.14
    and from v0.5.19 (`PP_PREFILL_GRAPHS_OFF_FROM`); from v0.5.20 KDA configs
    (cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible; v0.5.19's has no KDA rule); v0.5.15-v0.5.17 MLA,
    v0.5.17 NemotronH, v0.5.15 a multimodal model, from v0.5.16 one SGLang does not list (`NO_BREAKABLE_MULTIMODAL`,
    or not yet: `BREAKABLE_MULTIMODAL_FROM`) (server_args.py's, `PREFILL_GRAPHS_FROM`, `MULTIMODAL_GRAPHS_FROM`);
    before v0.5.15 the tc_piecewise rules (`BREAKABLE_GRAPHS_FROM`)."""
    arch = spec.architecture
    if dp > 1 and not at_least(version, DP_PREFILL_GRAPHS_FROM):
        return True
    if pp > 1 and (not at_least(version, BREAKABLE_GRAPHS_FROM) or at_least(version, PP_PREFILL_GRAPHS_OFF_FROM)):
        return True
    if not at_least(version, BREAKABLE_GRAPHS_FROM):
        return arch in PIECEWISE_DISABLED_ARCHS or spec.vision is not None
    unlisted = spec.vision is not None and (arch in NO_BREAKABLE_MULTIMODAL or not at_least(
        version, BREAKABLE_MULTIMODAL_FROM.get(arch, MULTIMODAL_GRAPHS_FROM)))
    if at_least(version, PREFILL_GRAPHS_FROM):
        kda = arch in KDA_CONFIG_ARCHS or (arch in KDA_PREFILL_GRAPHS_SPARED
                                           and not at_least(version, KDA_PREFILL_GRAPHS_SPARED[arch]))
        return (kda and at_least(version, "0.5.20")) or unlisted
    return spec.mla is not None or (arch in NEMOTRON_H_ARCHS and at_least(version, "0.5.17")) or unlisted


def _prefill_graph_sizes(max_bs: int) -> list[int]:
    """arg_groups/cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes: the token counts prefill graphs capture."""
    sizes = ([*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64), *range(1280, 4097, 256),
              *range(4608, max_bs + 1, 512)])
    return [n for n in sizes if n <= max_bs]


# ------------------------------------------------------------------------------------------ mcache plan's hooks -----
# What `mcache plan` reads of SGLang (`engines.plan_hooks`). Replicas: python/sglang/srt/server_args.py (v0.5.23)
# ServerArgs.dp_size, a data-parallel controller starting dp x tp x pp GPUs. The settings solved for:
# --max-running-requests and --max-mamba-cache-size (kv_cache_configurator.py _handle_max_mamba_cache takes a given
# size as the state pool, in place of the --mamba-full-memory-ratio share, and gives the rest to the token pool).
REPLICA_FLAG = "--dp-size"
SOLVED = "max_running_requests"
SOLVE_HINT_EXACT = False  # the pools of another split of the memory: a first guess (`solve_hint`)
FULL_WIDTH_ATTENTION_DP = None  # any width: --dp-size N < --tp-size with DP attention, sized at every release (the attention-DP section)


def solve_settings(n: int, run: EngineRun) -> dict[str, int]:
    """The settings at which a replica runs up to n requests and no state slot more than they need: max_running_requests
    n and, where the model has a state pool, max_mamba_cache_size n x the slots a request holds (the radix-cache
    strategy's ratio). resolve_max_num_reqs then runs min(n, tokens // context), and the tokens only fall as n grows
    (each slot is memory the token pool loses; the decode graphs cut to n from 0.5.22 leave more at a smaller n). So
    "runs n" holds up to some n* and no further, and no other value of the three settings runs more than n*: m
    requests need m x ratio slots and max_running_requests m at least, and more of either leaves fewer tokens. Under
    attention DP both settings are the replica's, which SGLang divides among its DP ranks (`_setup`): each rank runs up
    to n at dp times them."""
    ratio = max(st.fields["state_slots_per_request"] for st in run.stages)
    state = any(st.fields.get("mamba_cache_per_req_bytes") for st in run.stages)
    dp = run.attention_dp_ranks
    return {SOLVED: n * dp, **({"max_mamba_cache_size": n * ratio * dp} if state else {})}


def solve_hint(run: EngineRun) -> int | None:
    """The n at which n requests fill the static memory the run's pools took on its tightest stage: (max_mamba_cache_size
    + 1) x mamba_cache_per_req_bytes + max_total_num_tokens x cell_size_bytes (the logged pools), with the draft states
    `_state_pool` kept beside them per running request, over what a request takes (its state slots, its draft states,
    the context's tokens). None when the run did not size the pools (it did not start). A guess: a given
    max_running_requests also changes the CUDA-graph reserve."""
    steps = run.settings.get("speculative_num_steps") or 0
    drafts = steps + 1 if steps else 0  # num_draft_tokens, as `_setup` counts them
    guesses = []
    for st in run.stages:
        f = st.fields
        per, cell, tokens, slots = (f["mamba_cache_per_req_bytes"], f["cell_size_bytes"], f["max_total_num_tokens"],
                                    f["max_mamba_cache_size"] or 0)
        if tokens is None:
            return None
        ratio = f["state_slots_per_request"]
        given = (run.settings.get("max_running_requests") or 0) // run.attention_dp_ranks  # a DP rank's share
        running = min(given or slots // ratio, slots // ratio)
        static = (slots + 1) * per + tokens * cell + per * drafts * (running + 1)
        need = (ratio + drafts) * per + run.context * cell
        guesses.append((static - per * (1 + drafts)) // need if need else 0)
    return min(guesses, default=0) or None
