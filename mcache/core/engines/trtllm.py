"""TensorRT-LLM (PyTorch backend) at its 1.2 release and on main: which hybrid cache manager a model gets (the
engine's own `kv_cache_config.use_kv_cache_manager_v2`, `--kv-cache-manager v1|v2|auto`), what that manager charges
for recurrent state and KV per token, the budget `free_gpu_memory_fraction` takes of the memory left after the
profiled peak, the KV tokens left for attention, the start-up failures, the architectures each version loads, and
the LLM-API options that start a deployment `mcache plan` found.

Sources (NVIDIA/TensorRT-LLM):

- main at commit 151c21c6a0034712a71fb0352cf7c75ea07b7b5b: `tensorrt_llm/_torch/pyexecutor/_util.py`
  (`get_kv_cache_manager_cls`, `KvCacheCreator._cal_max_memory` / `configure_kv_cache_capacity` and their log lines,
  `CacheCost`), `_torch/pyexecutor/kv_cache/mamba_cache_manager.py` (`_estimate_mamba_hybrid_cache_cost`,
  `CppMambaHybridCacheManager`, `MixedMambaHybridCacheManager` / `_get_mamba_hybrid_pool_size`,
  `MambaHybridCacheManagerV2` and `_get_num_cuda_graph_padding_dummy_slots`), `_torch/pyexecutor/kv_cache/
  kv_cache_manager_v2.py` (`KVCacheManagerV2.__init__`: the quota and its log lines), `_torch/pyexecutor/
  config_utils.py` (`is_hybrid_linear`, `MambaKVCacheParams`, `resolve_ssm_cache_dtype`), `llmapi/llm_args.py`
  (`KvCacheConfig`: `use_kv_cache_manager_v2="auto"`, `max_util_for_resume=0.95`, `MambaStateConfig`
  `periodic_snapshot_interval=0`). Read at their stored versions of the same line of main (no file of theirs is
  stored at 151c21c): `llmapi/llm_utils.py` `_resolve_kv_cache_manager_v2_auto` (auto takes the model class's
  `get_model_defaults`, else False), `runtime/kv_cache_manager_v2/_storage_manager.py` (commit 00f6bd61,
  `StorageManager.__init__`: pool ratio from the typical step, minimum slots from the constraints) and
  `_storage/_core.py` (`CacheLevelStorage.ratio_to_slot_count_list`, `_grains_to_slots`), `_torch/models/
  _arch_index.py` (commit 065ff9e9: the architectures main loads), `_torch/models/modeling_auto.py` (commit 01bffee1:
  "Unknown architecture for AutoModelForCausalLM").
- the 1.2 release (`release/1.2`; the v1.2.0 tag's commit could not be resolved through the stored index, so these
  are the stored file versions of the 1.2 line, before main moved the hybrid managers into C++ (PR #10540) and added
  `CacheCost`): `_torch/pyexecutor/_util.py` (`get_kv_cache_manager_cls(model_config)`: Nemotron-H and Qwen3-Next to
  `MambaHybridCacheManager` whatever `use_kv_cache_manager_v2` says; `KvCacheCreator` with the "kv size is" log line),
  `_torch/pyexecutor/mamba_cache_manager.py` (`MambaCacheManager`: `max_batch_size` state slots as torch tensors,
  its "Mamba Cache is allocated" line; `MambaHybridCacheManager` asserts block reuse off), `llmapi/llm_args.py`
  (`use_kv_cache_manager_v2: bool = False`), and the 1.2 release notes (docs `1.2.0/_sources/release-notes.md.txt`:
  Nemotron Nano V3 and Qwen3-Next are the hybrids it adds; Qwen3.5 came in 1.3.0rc9).
- the 1.1 line (1.1.0rc3, from a public trtllm-serve boot log of gpt-oss-120b, tests/data/engine_logs/trtllm): the
  same `KvCacheCreator` lines and C++ KVCacheManager as the 1.2 line's `_util.py` above (the log prints its
  "kv size is ... tmp kv_mem" peak line, the float fraction and the block-rounded max_tokens), sized by the 1.2
  line's rules; its hybrid architectures are the 1.2 line's less Qwen3-Next, which the 1.2 release notes add.
- attention DP (`enable_attention_dp`, the layout's `attention_dp`): each rank of a stage is an executor of its own,
  with whole KV heads and state, and its own `max_batch_size`: `_torch/pyexecutor/executor_request_queue.py`
  (stored version of the 1.2 line) `_fetch_new_requests_attention_dp` admits up to `tp_size x
  max_num_active_requests` across the ranks and at most `max_num_active_requests` (the model engine's
  `get_max_num_sequences`, `max_batch_size` per micro-batch) on each, and each rank's cache manager allocates that
  rank's slots and pool (V2 adds one dummy slot for the attention-DP padding request, `Setup.dummies`). So every
  figure here, `max_batch_size` and the solved value included, is one rank's; the replica runs `tp` times the stage's
  running requests (`EngineRun.max_running_requests`).
- the weights a rank loads under attention DP (`_dp_sharded`, passed to `weights.shard_ways`): attention
  (`_torch/modules/attention.py` `Attention`: TP 1 under `enable_attention_dp`), the Mamba2 and GDN mixers
  (`_torch/modules/mamba/mamba2_mixer.py`, `gdn_mixer.py`: a TP-1 Mapping), the embedding (the models' `embed_tokens`:
  no TP mapping), the LM head (`_torch/models/modeling_utils.py` `DecoderModelForCausalLM`: an unsharded `LMHead` unless
  `enable_lm_head_tp_in_adp`, False by default in `llmapi/llm_args.py`), the dense and shared-expert MLPs
  (`overridden_tp_size=1`) and the MoE routers and latent projections are whole on every rank; the routed experts
  split over `moe_tp_size x moe_ep_size`, which `mapping.py` makes `tp_size` (read at stored versions of main's line:
  `modeling_qwen3_next.py` 00022b04, `modeling_nemotron_h.py` 00620eb0, `modeling_utils.py`, `mamba2_mixer.py` 02140fd4,
  `gdn_mixer.py` 0d4bd901, `attention.py` 00547a25; `docs/source/features/parallel-strategy.md`: "All GEMM weights are
  replicated on every GPU").
- a model without recurrent layers (pure attention): `get_kv_cache_manager_cls` returns `KVCacheManager` (1.2 line:
  neither `is_nemotron_hybrid` nor `is_qwen3_next`; main: `_non_hybrid_kv_cache_manager_cls`, KVCacheManagerV2 only
  for `use_kv_cache_manager_v2` True or per-layer head sizes), no state slots, the same creator budget.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

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
    drafter_caveats,
    full_width_attention_dp,
    mtp_attention_layers,
    recurrent_kinds,
    stage_contexts,
    state_bytes,
    state_dtype,
    token_bytes,
    unnamed_architecture_caveats,
    unrecognized_config,
    window_caveats,
)
from mcache.core.engines.versions import at_least
from mcache.core.errors import LayoutError
from mcache.core.files import json_text
from mcache.core.kinds.base import CacheDtypes
from mcache.core.numbers import cdiv
from mcache.core.sizing.rank import RankContext, checkpoint_kv_format
from mcache.core.spec import dtypes as dtype_names

NAME = "trtllm"
RELEASE_1_1, RELEASE, MAIN = "1.1.0", "1.2.0", "main@151c21c"
VERSIONS = (RELEASE_1_1, RELEASE, MAIN)  # modelled, oldest first: the 1.1 and 1.2 releases, main at commit 151c21c
# The `SizeOptions` fields of `mcache size --engine trtllm` and the TensorRT-LLM setting each sets (its own name is an
# alias of the option; an option TensorRT-LLM lacks is refused with it).
FLAGS = {
    "max_seq_len": "max_seq_len", "draft": "max_draft_len", "kv_dtype": "kv_cache_dtype",
    "ssm_dtype": "mamba_ssm_cache_dtype", "block_size": "tokens_per_block", "max_batch": "max_batch_size",
    "reserve": "non_kv_memory_bytes", "weights": "weights_bytes",
    "free_gpu_memory_fraction": "free_gpu_memory_fraction", "max_tokens": "max_tokens",
    "kv_cache_manager": "use_kv_cache_manager_v2",
}
INSTEAD = {"utilization": "free_gpu_memory_fraction"}  # mcache options it lacks -> its own option for them (fields)
SETTINGS = ("max_batch_size", "max_seq_len", "free_gpu_memory_fraction", "tokens_per_block", "mamba_ssm_cache_dtype",
            "kv_cache_dtype", "max_draft_len", "max_tokens", "use_kv_cache_manager_v2")
KV_DTYPES = {"auto": None, "fp8": "float8_e4m3fn"}  # KvCacheConfig.dtype with a plain per-token cache
DEFAULT_MAX_BATCH_SIZE = 2048  # llmapi/llm_args.py: BaseLlmArgs.max_batch_size
DEFAULT_FREE_GPU_MEMORY_FRACTION = 0.9  # llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction
DEFAULT_TOKENS_PER_BLOCK = 32  # llmapi/llm_args.py: KvCacheConfig.tokens_per_block
# `--kv-cache-manager` -> KvCacheConfig.use_kv_cache_manager_v2. llm_args.py: a bool defaulting to False at 1.2;
# `bool | Literal["auto"]` defaulting to "auto" on main.
KV_CACHE_MANAGERS = {"v1": False, "v2": True, "auto": "auto"}
DEFAULT_KV_CACHE_MANAGER = {RELEASE_1_1: "v1", RELEASE: "v1", MAIN: "auto"}
MAX_UTIL_FOR_RESUME = 0.95  # llm_args.py (main): KvCacheConfig.max_util_for_resume
UNSUPPORTED_KINDS = ("mamba1", "short_conv", "lightning")  # no state manager in any hybrid cache manager
# The hybrid architectures each version loads (models registered through `register_auto_model`; any other
# architecture stops model loading with `modeling_auto.py`'s "Unknown architecture for AutoModelForCausalLM").
# 1.2: models/__init__.py of the 1.2 line and its release notes. main: models/_arch_index.py MODEL_ARCH_TO_MODULE.
# Neither has Falcon-H1 (PR #8135 was closed unmerged), Granite-4.0-H, Bamba, Jamba, Zamba2, Mamba/Mamba2, LFM2,
# PLaMo-2, MiniMax-Text-01 or Ring/Bailing linear.
HYBRID_ARCHS = {
    RELEASE: frozenset({"NemotronHForCausalLM", "NemotronH_Nano_VL_V2", "Qwen3NextForCausalLM"}),
    MAIN: frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Nano_VL_V2",
                     "NemotronH_Nano_Omni_Reasoning_V3", "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM",
                     "Qwen3_5MoeForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                     "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration"}),
}
HYBRID_ARCHS[RELEASE_1_1] = HYBRID_ARCHS[RELEASE] - {"Qwen3NextForCausalLM"}  # 1.2 release notes: Qwen3-Next is new
# main, llm_utils.py _resolve_kv_cache_manager_v2_auto: "auto" takes the model class's get_model_defaults
# (kv_cache_config.use_kv_cache_manager_v2), else False. NemotronHForCausalLM, Qwen3NextForCausalLM and the Qwen3.5
# classes declare True (tests/unittest/_torch/executor/kv_cache/test_mamba_cache_manager.py
# test_hybrid_models_prefer_v2_and_python_transceiver); so does the Kimi K3 checkpoint's KimiK3ForConditionalGeneration
# (docs: "a text-only K3 checkpoint (KimiLinearForCausalLM) or use_kv_cache_manager_v2: false runs the V1
# MixedMambaHybridCacheManager"); KimiLinearForCausalLM declares nothing (PR #19387, still open, would make it V2).
V2_PREFERRING_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "Qwen3NextForCausalLM",
                                 "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM", "Qwen3_5ForConditionalGeneration",
                                 "Qwen3_5MoeForConditionalGeneration", "KimiK3ForConditionalGeneration"})
# config_utils.py is_kimi_linear: _util.py get_kv_cache_manager_cls routes Kimi's V1 (no block reuse) to the Mixed
# manager, every other hybrid to CppMambaHybridCacheManager.
KIMI_ARCHS = frozenset({"KimiLinearForCausalLM", "KimiK3ForConditionalGeneration"})
# The managers, by TensorRT-LLM's class names.
PY_HYBRID, CPP, MIXED, V2 = ("MambaHybridCacheManager", "CppMambaHybridCacheManager", "MixedMambaHybridCacheManager",
                             "MambaHybridCacheManagerV2")
PLAIN = "KVCacheManager"  # a model without recurrent layers: attention KV only
OUTSIDE = (PY_HYBRID, MIXED)  # managers whose state is torch memory allocated before the KV budget is measured
# What TensorRT-LLM still splits over the TP ranks under attention DP (the rest: the module docstring):
# - Nemotron-H's dense MLP layers (`-`): modeling_nemotron_h.py MLPLayer builds its `MLP` on the model's mapping with no
#   `overridden_tp_size` (every stored version, main's 00620eb0 and the 1.2 line's); the VL and Omni checkpoints'
#   language model is that class (modeling_nemotron_nano.py: AutoModelForCausalLM of the `llm_config`).
# - Qwen3-Next's shared expert on the 1.1-1.2 line: modeling_qwen3_next.py at b93e14ca builds it as a `GatedMLP` on the
#   model's mapping; main gives it `overridden_tp_size=1` (00022b04; PR #10218, "Enable attention dp for qwen3-next",
#   January 2026).
NEMOTRON_H_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Nano_VL_V2",
                              "NemotronH_Nano_Omni_Reasoning_V3"})
GPU_PHYS_MEM_BASE = 2 << 20  # runtime/kv_cache_manager_v2/_storage_manager.py cache_tier_granularity: 2 MiB << n


class Setup(Struct, frozen=True):
    """TensorRT-LLM's settings for the run: the modelled version, the cache manager it picks, max_batch_size, the max
    sequence length and the context asked, the fraction of the free memory the KV cache takes, tokens per block,
    draft tokens, the `max_tokens` cap, the memory the profiling finds besides the weights, the cache dtypes, whether
    attention is data-parallel, and why the engine refuses the model (None: it loads it)."""

    version: str
    wanted: str
    manager: str
    batch: int
    max_len: int
    context: int
    fraction: float
    block: int
    drafts: int
    max_tokens: int | None
    non_kv: int
    dtypes: CacheDtypes
    adp: bool
    refusal: str | None = None

    @property
    def dummies(self) -> int:
        """V2's reserved dummy slots (mamba_cache_manager.py `_num_reserved_dummy_slots`): one CUDA-graph padding slot
        per runtime draft length (`_get_num_cuda_graph_padding_dummy_slots`; a static draft length is one length,
        drafts or not), one more for the attention-DP padding request."""
        return 1 + int(self.adp)


class StageSizes(Struct, frozen=True):
    """What one stage's cache manager charges: bytes of one state slot over the stage's recurrent layers (its conv and
    SSM parts), KV bytes per token over its attention layers, and the V2 state pool's per-layer buffers."""

    slot: int
    conv: int
    ssm: int
    slope: int
    buffers: tuple[int, ...]


def run(inputs: EngineInputs) -> EngineRun:
    """TensorRT-LLM's sizing of every PP stage at the modelled version."""
    layout = inputs.layout
    full_width_attention_dp(layout, "TensorRT-LLM", FULL_WIDTH_ATTENTION_DP)
    spec = inputs.spec
    version = inputs.version or VERSIONS[-1]
    s = Settings(inputs.given, SETTINGS, "TensorRT-LLM")
    refusal, caveats = _architecture(spec, version)
    setup = _setup(inputs, s, version, refusal)
    contexts = stage_contexts(spec, inputs.layout, setup.dtypes)
    weights = s.weights(contexts, dp_sharded=_dp_sharded(spec, version))
    caveats += window_caveats(spec, "TensorRT-LLM", "per-window KV pools (max_attention_window)") + _caveats(setup)
    caveats += drafter_caveats(spec, setup.drafts, "TensorRT-LLM")
    if setup.refusal is not None:
        stages = [EngineStage(ctx.stage, 0, setup.refusal, [setup.refusal], "start-up") for ctx in contexts]
        return EngineRun(NAME, setup.max_len, setup.context, s.values, s.sources, setup.dtypes, stages, caveats)
    sizes = [_sizes(ctx, spec, setup) for ctx in contexts]
    if setup.manager == V2:
        stages = _v2_stages(contexts, sizes, weights, inputs, setup)
    else:
        stages = [_stage(ctx, size, weight, inputs, setup) for ctx, size, weight in zip(contexts, sizes, weights,
                                                                                        strict=True)]
        _share_tokens(stages, setup, inputs.layout.pp)
    return EngineRun(NAME, setup.max_len, setup.context, s.values, s.sources, setup.dtypes, stages, caveats)


def serve_command(args: ServeArgs) -> str:
    """The LLM-API options of a deployment, as JSON (tensorrt_llm/llmapi/llm_args.py: `LLM(...)` keyword arguments,
    `enable_attention_dp` among them, and `KvCacheConfig` fields)."""
    cache = {"dtype": args.kv_dtype} if args.kv_dtype else {}
    cache |= {"mamba_ssm_cache_dtype": args.ssm_dtype} if args.ssm_dtype else {}
    options = {"tensor_parallel_size": args.tp, "pipeline_parallel_size": args.pp, "max_seq_len": args.context}
    options |= {"enable_attention_dp": True} if args.attention_dp else {}
    options |= {"kv_cache_config": cache} if cache else {}
    options |= {"speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": args.draft}} if args.draft else {}
    return json_text(options, indent=None)


def architecture_error(spec, version: str) -> str | None:
    """Why TensorRT-LLM at `version` cannot load the model, in its words (None: it can)."""
    return _architecture(spec, version)[0]


def _architecture(spec, version: str) -> tuple[str | None, list[str]]:
    """(why TensorRT-LLM at `version` does not load the model, or None; caveats). An architecture it does not
    register stops model loading (models/modeling_auto.py AutoModelForCausalLM.from_config); a spec that names no
    architecture is sized by its layer kinds, and a kind no hybrid manager keeps is refused as a setting."""
    arch = spec.architecture
    recurrent = recurrent_kinds(spec)
    # _torch/pyexecutor/config_utils.py load_pretrained_config: a config without a model type goes to AutoConfig
    if (unrecognized := unrecognized_config(spec)) is not None:
        return f"ValueError: {unrecognized}", []
    if arch is None:
        unsupported = sorted({k for k in UNSUPPORTED_KINDS if getattr(spec, k) is not None})
        if unsupported:
            raise LayoutError("engine", f"a model TensorRT-LLM's hybrid cache managers serve (Mamba2, GatedDeltaNet "
                                        f"or KDA states); this one has {', '.join(unsupported)} layers")
        return None, unnamed_architecture_caveats(spec, "TensorRT-LLM")
    if recurrent and arch not in HYBRID_ARCHS[version]:
        return f"Unknown architecture for AutoModelForCausalLM: {arch}", []
    return None, []


def _dp_sharded(spec, version: str) -> frozenset[str]:
    """The weights TensorRT-LLM at `version` still splits over a stage's TP ranks under attention DP
    (`NEMOTRON_H_ARCHS`; `weights.shard_ways` names)."""
    sharded = {"mlp.proj"} if spec.architecture in NEMOTRON_H_ARCHS else set()
    if spec.architecture == "Qwen3NextForCausalLM" and not at_least(version, MAIN):
        sharded.add("moe.shared_experts")
    return frozenset(sharded)


def _setup(inputs: EngineInputs, s: Settings, version: str, refusal: str | None) -> Setup:
    """The settings of the run: given, else TensorRT-LLM's defaults at `version` (a `LayoutError` for a fraction out
    of range or a cache manager the version does not take), and the cache manager they pick."""
    batch = s.take("max_batch_size", DEFAULT_MAX_BATCH_SIZE)
    max_len = s.model_length("max_seq_len", inputs.spec)
    fraction = s.take("free_gpu_memory_fraction", DEFAULT_FREE_GPU_MEMORY_FRACTION)
    block = s.take("tokens_per_block", DEFAULT_TOKENS_PER_BLOCK)
    drafts = s.take("max_draft_len", 0)
    max_tokens = s.take("max_tokens", None)
    non_kv = s.non_kv_memory("TensorRT-LLM profiles its activation peak and non-torch memory at start-up")
    if not 0 < fraction <= 1:
        raise LayoutError("free_gpu_memory_fraction", f"a fraction in (0, 1], got {fraction}")
    wanted = s.take("use_kv_cache_manager_v2", DEFAULT_KV_CACHE_MANAGER[version])
    if wanted not in KV_CACHE_MANAGERS:
        raise LayoutError("use_kv_cache_manager_v2", f"one of {', '.join(KV_CACHE_MANAGERS)}, got {wanted!r}")
    if KV_CACHE_MANAGERS[wanted] == "auto" and not at_least(version, MAIN):
        # llm_args.py (1.2): use_kv_cache_manager_v2 is a plain bool there; "auto" is main's.
        raise LayoutError("use_kv_cache_manager_v2", f"v1 or v2 at TensorRT-LLM {version} (its "
                                                     "use_kv_cache_manager_v2 is a bool; auto came after it), got auto")
    dtypes = _dtypes(inputs.spec, s)
    manager = _manager(inputs.spec, version, KV_CACHE_MANAGERS[wanted])
    if not at_least(version, MAIN):
        # The 1.2 line reads the fraction back from the C++ executor's KvCacheConfig, a float: a 1.1.0rc3 boot log
        # prints "fraction is set 0.8999999761581421" for 0.9 and its budget is that product.
        fraction = struct.unpack("f", struct.pack("f", fraction))[0]
    return Setup(version, wanted, manager, batch, max_len, asked_context(inputs, max_len), fraction, block, drafts,
                 max_tokens, non_kv, dtypes, inputs.layout.attention_dp, refusal)


def _manager(spec, version: str, wanted: bool | str) -> str:
    """The hybrid cache manager TensorRT-LLM picks. 1.2: `_util.py` get_kv_cache_manager_cls sends Nemotron-H and
    Qwen3-Next to MambaHybridCacheManager whatever use_kv_cache_manager_v2 says. main: "auto" takes the model class's
    default (llm_utils.py _resolve_kv_cache_manager_v2_auto, `V2_PREFERRING_ARCHS`), else False; True is
    MambaHybridCacheManagerV2, False the Mixed manager for Kimi and CppMambaHybridCacheManager for the others
    (`_util.py` get_kv_cache_manager_cls; hybrids run without block reuse unless a snapshot policy is set). A model
    without recurrent layers gets KVCacheManager; on main use_kv_cache_manager_v2 True would give it KVCacheManagerV2,
    which is not modelled (a `LayoutError`)."""
    if not recurrent_kinds(spec):
        if at_least(version, MAIN) and wanted is True:
            raise LayoutError("use_kv_cache_manager_v2", "v1 or auto for a model without recurrent layers (its "
                                                         "KVCacheManagerV2 is not modelled), got v2")
        return PLAIN
    if not at_least(version, MAIN):
        return PY_HYBRID
    v2 = spec.architecture in V2_PREFERRING_ARCHS if wanted == "auto" else wanted
    if v2:
        return V2
    return MIXED if spec.architecture in KIMI_ARCHS else CPP


def _caveats(setup: Setup) -> list[str]:
    """What this profile assumes about the run that the engine's figures depend on."""
    notes = []
    if setup.manager == PY_HYBRID:
        notes.append("TensorRT-LLM 1.2: MambaHybridCacheManager asserts block reuse off (\"mamba hybrid cache requires "
                     "block reuse to be disabled in KV cache config\"); sized with kv_cache_config.enable_block_reuse: "
                     "false, as the 1.2 deployment guides set it.")
        if setup.wanted == "v2":
            notes.append("TensorRT-LLM 1.2 sends hybrid models to MambaHybridCacheManager whatever "
                         "use_kv_cache_manager_v2 says; v2 sizes as v1 there.")
    if setup.drafts and at_least(setup.version, MAIN):
        notes.append("TensorRT-LLM: with drafts, the MTP intermediate/replay state buffers the hybrid manager "
                     "allocates beside its pool are not modelled.")
    return notes


def _dtypes(spec, s: Settings) -> CacheDtypes:
    """model_loader.py validate_and_set_mamba_ssm_cache_dtype / config_utils.py resolve_ssm_cache_dtype:
    KvCacheConfig.mamba_ssm_cache_dtype, else the config's mamba_ssm_cache_dtype (its mamba_ssm_dtype is not read),
    else the model dtype; conv in the model dtype; KDA float32 (config_utils.py extract_mamba_kv_cache_params). The
    same rule is assumed at 1.2 (its MambaCacheManager takes quant_config.mamba_ssm_cache_dtype)."""
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


def _sizes(ctx: RankContext, spec, setup: Setup) -> StageSizes:
    """One stage's slot (MambaKVCacheParams.get_states_bytes_per_layer over its recurrent layers), its KV bytes per
    token (KVCacheManager.get_cache_size_per_token over its attention layers, the MTP drafter's attention layers
    included on the last stage when it drafts) and its V2 state buffers (one SSM and one conv buffer per layer)."""
    dtypes = setup.dtypes

    def dtype_of(kind, state):
        if state.component == "conv":
            return dtypes.conv
        return "float32" if kind == "kda" else dtypes.ssm

    conv = ssm = 0
    buffers: list[int] = []
    for kind in ctx.recurrent_kinds:
        layer_conv = state_bytes(ctx, kind, dtype_of, component="conv")
        layer_ssm = state_bytes(ctx, kind, dtype_of) - layer_conv
        conv += layer_conv * ctx.counts[kind]
        ssm += layer_ssm * ctx.counts[kind]
        buffers += [size for size in (layer_ssm, layer_conv) if size] * ctx.counts[kind]
    kinds = [k for k in ctx.kinds if k in ATTENTION_KINDS]
    per_layer = token_bytes(ctx, kinds[0], dtypes.kv) if kinds else 0
    drafter = mtp_attention_layers(spec) if setup.drafts and ctx.stage == ctx.layout.pp - 1 else 0
    slope = sum(token_bytes(ctx, k, dtypes.kv) * ctx.counts[k] for k in kinds) + per_layer * drafter
    return StageSizes(conv + ssm, conv, ssm, slope, tuple(buffers))


# --------------------------------------------------------------------------------------------- V1 and 1.2 -----


def _state_slots(setup: Setup, pp: int) -> int:
    """State slots the manager keeps. CppMambaHybridCacheManager: `max_batch_size x pp + 1` inside its pool
    (`_estimate_mamba_hybrid_cache_cost`, num_reserved_dummy_slots=1); MixedMambaHybridCacheManager: (max_batch_size
    + 1, + 1 with attention DP) x pp torch slots (`_get_mamba_hybrid_pool_size`, MambaCacheManager's
    `max_batch_size * mapping.pp_size`); 1.2's MambaHybridCacheManager: exactly max_batch_size; KVCacheManager: none."""
    if setup.manager == PLAIN:
        return 0
    if setup.manager == CPP:
        return setup.batch * pp + 1
    if setup.manager == MIXED:
        return (setup.batch + 1 + int(setup.adp)) * pp
    return setup.batch


def _draft_rows(setup: Setup) -> int:
    """Slot-sized rows of the speculative intermediate states the torch managers allocate with the pool: per layer
    (max_batch_size, drafts + 1) SSM states and conv windows (mamba_cache_manager.py MambaCacheManager /
    PythonMambaCacheManager, the legacy path)."""
    return setup.batch * (setup.drafts + 1) if setup.drafts and setup.manager in OUTSIDE else 0


def _outside_bytes(size: StageSizes, batch_setup: Setup, pp: int) -> int:
    """Torch memory the manager allocates before the KV budget is measured (the estimation run's managers hold it,
    so it is in the profiled peak and outside `free_gpu_memory_fraction`); 0 for the pooled managers."""
    if batch_setup.manager not in OUTSIDE:
        return 0
    return (_state_slots(batch_setup, pp) + _draft_rows(batch_setup)) * size.slot


def _budget(free: int, outside: int, fraction: float) -> int:
    """_util.py _cal_max_memory: (total - peak) x free_gpu_memory_fraction, the peak holding what the manager
    allocated outside its KV pool."""
    return int((free - outside) * fraction)


def _stage(ctx: RankContext, size: StageSizes, weight: int, inputs: EngineInputs, setup: Setup) -> EngineStage:
    """One stage of a V1 manager (main's C++ or Mixed manager, 1.2's MambaHybridCacheManager): its fixed state, its
    budget, its tokens before the ranks agree, and its start-up failure."""
    pp, block, slope = inputs.layout.pp, setup.block, size.slope
    slots = _state_slots(setup, pp)
    outside = _outside_bytes(size, setup, pp)
    intercept = slots * size.slot if setup.manager == CPP else 0  # CacheCost.intercept
    fields = {"cache_manager": setup.manager, "max_batch_size": setup.batch, "state_slot_bytes": size.slot,
              "kv_token_bytes": slope, "fixed_state_slots": slots, "fixed_cost_bytes": intercept or outside,
              "state_in_kv_budget": setup.manager == CPP, "kv_cache_budget_bytes": None, "max_tokens": None,
              "largest_max_batch_size": None, "best_max_batch_size": None}
    if inputs.gpu_bytes is None:
        return EngineStage(ctx.stage, None, None, [], None, fields)
    free = inputs.gpu_bytes - weight - setup.non_kv
    seq_tokens = cdiv(setup.context, block) * block
    if setup.manager != PLAIN:  # without state the KV tokens do not depend on max_batch_size: no advice to give
        fields.update(_batch_advice(lambda b: _v1_tokens(free, size, _with_batch(setup, b), pp), seq_tokens, slope,
                                    _batch_cap(free, size.slot, pp), pp))
    log = _selected(setup)
    error = _no_room(weight, setup, inputs.gpu_bytes)
    if error is None:
        log += _mamba_lines(size, setup, pp)
        error = _oom(size, setup, pp, free) if outside else None
    if error:
        log.append(error)
        return EngineStage(ctx.stage, 0, error, log, "start-up", fields)
    budget = _budget(free, outside, setup.fraction)
    fields["kv_cache_budget_bytes"] = budget
    log.append(_peak_line(weight + setup.non_kv + outside, budget, slope, intercept, inputs.gpu_bytes, setup))
    if setup.max_tokens is not None:
        cap = slope * setup.max_tokens + intercept  # CacheCost.bytes_for_tokens
        log.append(_max_tokens_line(cap, min(budget, cap), setup))
        budget = min(budget, cap)
    log.append(f"Estimated max memory in KV cache : {budget / GIB:.2f} GiB")
    tokens = max((budget - intercept) // slope, 0) if slope else 0  # CacheCost.tokens_for_budget
    if setup.max_tokens is not None:
        tokens = min(tokens, setup.max_tokens)
    fields["max_tokens"] = _whole_blocks(tokens, setup)
    log += _mamba_lines(size, setup, pp)  # the final manager allocates its state again
    if not at_least(setup.version, MAIN):  # resource_manager.py KVCacheManager: the creator's max_tokens beside it
        log.append(f"Both free_gpu_memory_fraction and max_tokens are set (to {setup.fraction} and {tokens}, "
                   "respectively). The smaller value will be used.")
    if budget < intercept + slope * block:
        largest = fields["largest_max_batch_size"]
        fits = f"max_batch_size {largest} fits" if largest else "no max_batch_size fits"
        if setup.manager == CPP:
            error = (f"Impossible to fit in any sequence in kvCache: the fixed cost of {slots} state slots "
                     f"(max_batch_size {setup.batch} x pp {pp} + 1) is {intercept / GIB:.2f} GiB of the "
                     f"{budget / GIB:.2f} GiB KV cache budget; {fits}")
        elif setup.manager == PLAIN:  # mcache's words, as below
            error = f"no KV cache block fits: the KV cache budget is {budget / GIB:.2f} GiB"
        else:  # mcache's words: the engine's own failure past this point is not pinned
            error = (f"no KV cache block fits: the {slots} Mamba state slots take {outside / GIB:.2f} GiB before the KV "
                     f"cache is sized, which leaves a {budget / GIB:.2f} GiB budget; {fits}")
        log.append(error)
    return EngineStage(ctx.stage, 0, error, log, "start-up", fields)


def _v1_tokens(free: int, size: StageSizes, setup: Setup, pp: int) -> int | None:
    """KV tokens a V1 stage gets at `setup`'s max_batch_size (None: it does not start)."""
    outside = _outside_bytes(size, setup, pp)
    if outside > free:
        return None
    budget = _budget(free, outside, setup.fraction)
    intercept = _state_slots(setup, pp) * size.slot if setup.manager == CPP else 0
    if setup.max_tokens is not None:
        budget = min(budget, size.slope * setup.max_tokens + intercept)
    if budget < intercept + size.slope * setup.block:
        return None
    tokens = max((budget - intercept) // size.slope, 0) if size.slope else 1 << 62
    if setup.max_tokens is not None:
        tokens = min(tokens, setup.max_tokens)
    return _whole_blocks(tokens, setup)


def _whole_blocks(tokens: int, setup: Setup) -> int:
    """The KV tokens the pool holds in whole blocks. The 1.2 line's KVCacheManager rounds max_tokens up to a block (a
    1.1.0rc3 boot log: max_tokens 86711 -> "Allocated 5.95 GiB for max tokens in paged KV cache (86720)"); main is
    taken to round down (not verified at 151c21c)."""
    if not at_least(setup.version, MAIN):
        return cdiv(tokens, setup.block) * setup.block
    return tokens // setup.block * setup.block


def _no_room(weight: int, setup: Setup, gpu: int) -> str | None:
    """mcache's words for a rank whose weights and profiled peak alone fill the GPU (the engine stops loading them)."""
    if weight + setup.non_kv < gpu:
        return None
    return (f"the weights one rank loads ({weight / GIB:.2f} GiB) and the {setup.non_kv / GIB:.2f} GiB profiled peak "
            f"fill the GPU's {gpu / GIB:.2f} GiB before any cache")


def _oom(size: StageSizes, setup: Setup, pp: int, free: int) -> str | None:
    """A torch manager's state that does not fit: torch.empty of the conv states, then of the SSM states, raises
    (mamba_cache_manager.py MambaCacheManager.__init__; PyTorch's message and its format_size)."""
    slots = _state_slots(setup, pp)
    conv, ssm = slots * size.conv, slots * size.ssm
    if conv > free:
        return f"CUDA out of memory. Tried to allocate {_torch_size(conv)}."
    if conv + ssm > free:
        return f"CUDA out of memory. Tried to allocate {_torch_size(ssm)}."
    if _outside_bytes(size, setup, pp) > free:  # the speculative intermediate states
        return f"CUDA out of memory. Tried to allocate {_torch_size(_draft_rows(setup) * size.ssm)}."
    return None


def _torch_size(n: int) -> str:
    """c10 format_size: bytes, KiB, MiB or GiB with two decimals."""
    if n <= 1024:
        return f"{n} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20)):
        if n <= scale << 10:
            return f"{n / scale:.2f} {unit}"
    return f"{n / GIB:.2f} GiB"


def _selected(setup: Setup) -> list[str]:
    """_util.py KvCacheCreator._get_model_kv_cache_manager_cls (main): the manager it selected, logged once."""
    hybrid = setup.manager != PLAIN
    return [f"Selected hybrid KV cache manager: {setup.manager}"] if hybrid and at_least(setup.version, MAIN) else []


def _mamba_lines(size: StageSizes, setup: Setup, pp: int) -> list[str]:
    """The torch managers' allocation line (mamba_cache_manager.py MambaCacheManager / PythonMambaCacheManager)."""
    if setup.manager not in OUTSIDE:
        return []
    slots = _state_slots(setup, pp)
    line = (f"max_mamba_cache_size: {slots}, conv_state size: {slots * size.conv / GIB:.2f}GB, "
            f"ssm_state size: {slots * size.ssm / GIB:.2f}GB")
    if not setup.drafts:
        return [f"Mamba Cache is allocated. {line}"]
    rows = _draft_rows(setup)
    if setup.manager == PY_HYBRID:
        return [f"Mamba Cache is allocated. {line}, intermediate_ssm_state_cache size: {rows * size.ssm / GIB:.2f}GB, "
                f"intermediate_conv_window_cache size: {rows * size.conv / GIB:.2f}GB"]
    return [f"Mamba Cache (legacy) is allocated. {line}, ssm_spec_cache size: {rows * size.ssm / GIB:.2f}GB, "
            f"intermediate_conv_window_cache size: {rows * size.conv / GIB:.2f}GB"]


def _peak_line(peak: int, budget: int, slope: int, intercept: int, total: int, setup: Setup) -> str:
    """_util.py _cal_max_memory's line: main prints the CacheCost, 1.2 the per-token size. The profiling's temporary
    KV pool is left out of the peak (it is added back), so it shows as 0."""
    head = (f"Peak memory during memory usage profiling (torch + non-torch): {peak / GIB:.2f} GiB, available KV cache "
            f"memory when calculating max tokens: {budget / GIB:.2f} GiB, fraction is set {setup.fraction}, ")
    if not at_least(setup.version, MAIN):
        return head + f"kv size is {slope}. device total memory {total / GIB:.2f} GiB, , tmp kv_mem 0.00 GiB"
    cost = f"{slope} bytes/token" + (f" + {intercept} bytes fixed cost" if intercept else "")
    return (head + f"kv size per token is {cost}. device total memory {total / GIB:.2f} GiB, temporary kv cache "
            "memory during profiling 0.00 GiB")


def _max_tokens_line(cap: int, budget: int, setup: Setup) -> str:
    """configure_kv_cache_capacity's line for a given max_tokens (its wording changed after the 1.2 line)."""
    if not at_least(setup.version, MAIN):
        return f"max_tokens={setup.max_tokens} is provided, max_memory is set to {budget / GIB:.2f} GiB"
    return (f"max_tokens={setup.max_tokens} is provided. It limits max memory to {cap / GIB:.2f} GiB. New max_memory "
            f"is set to {budget / GIB:.2f} GiB")


def _share_tokens(stages: list[EngineStage], setup: Setup, pp: int) -> None:
    """resource_manager.py: the ranks that start agree on the smallest KV pool (an allgather of blocks per window);
    each logs its allocation and runs what that pool holds at the context, at most max_batch_size x pp."""
    started = [st for st in stages if st.startup_error is None and st.fields.get("max_tokens") is not None]
    shared = min((st.fields["max_tokens"] for st in started), default=None)
    batch = setup.batch * pp
    for st in started:
        st.fields["max_tokens"] = shared
        slope = st.fields["kv_token_bytes"]
        if not at_least(setup.version, MAIN) and shared < setup.max_len:  # a 1.1.0rc3 boot log's lines
            st.log += [f"Attention window size {setup.max_len} exceeds upper bound {shared} for available blocks. "
                       f"Reducing to {shared}.", f"Adjusted max_attention_window_vec to [{shared}]",
                       f"Adjusted window size {setup.max_len} to {shared} in blocks_per_window",
                       f"Adjusted max_seq_len to {shared}"]
        pooled = st.fields["fixed_cost_bytes"] if st.fields["state_in_kv_budget"] else 0
        st.log.append(f"[MemUsageChange] Allocated {(shared * slope + pooled) / GIB:.2f} GiB for max tokens in paged "
                      f"KV cache ({shared}).")
        fit = shared // (cdiv(setup.context, setup.block) * setup.block) if slope else batch
        st.max_running_requests, st.binding = (fit, "KV tokens") if fit < batch else (batch, "max_batch_size")


# ------------------------------------------------------------------------------------------------------ V2 -----


class V2Stage(Struct):
    """One stage of MambaHybridCacheManagerV2 on its way: its sizes, weight, log, quota and figures."""

    ctx: RankContext
    size: StageSizes
    weight: int
    log: list[str]
    fields: dict
    quota: int | None = None
    error: str | None = None


def _v2_stages(contexts, sizes, weights, inputs: EngineInputs, setup: Setup) -> list[EngineStage]:
    """MambaHybridCacheManagerV2 on every stage: each stage's quota (the creator's budget, capped by max_tokens), the
    ranks' token agreement, then the pools the quota holds by a typical step."""
    layout = inputs.layout
    parts = [_v2_quota(ctx, size, weight, inputs, setup) for ctx, size, weight in zip(contexts, sizes, weights,
                                                                                      strict=True)]
    live = [p for p in parts if p.quota is not None and p.error is None]
    if layout.tp * layout.pp > 1 and live:
        # kv_cache_manager_v2.py KVCacheManagerV2.__init__ (world_size > 1): the ranks agree on the tokens the
        # resumable share of each quota holds, and no quota grows.
        tokens = min(_v2_tokens_for_quota(p.size, setup, layout.pp, int(p.quota * MAX_UTIL_FOR_RESUME)) for p in live)
        for p in live:
            synced = math.ceil(_v2_quota_for_tokens(p.size, setup, layout.pp, tokens) / MAX_UTIL_FOR_RESUME)
            p.quota = min(p.quota, synced)
    return [_v2_pools(p, inputs, setup) for p in parts]


def _v2_resident(setup: Setup, pp: int) -> int:
    """mamba_cache_manager.py MambaHybridCacheManagerV2._max_resident_sequences: max_batch_size x pp."""
    return setup.batch * pp


def _v2_quota_for_tokens(size: StageSizes, setup: Setup, pp: int, tokens: int) -> int:
    """MambaHybridCacheManagerV2._get_quota_from_max_tokens without snapshots: attention KV for `tokens` plus every
    live and dummy state slot."""
    return tokens * size.slope + (_v2_resident(setup, pp) + setup.dummies) * size.slot


def _v2_tokens_for_quota(size: StageSizes, setup: Setup, pp: int, quota: int) -> int:
    """MambaHybridCacheManagerV2._get_max_tokens_from_quota: the most tokens whose quota fits (0 when the state
    alone does not)."""
    rest = quota - _v2_quota_for_tokens(size, setup, pp, 0)
    if rest < 0:
        return 0
    return rest // size.slope if size.slope else 1 << 62


def _v2_quota(ctx, size: StageSizes, weight: int, inputs: EngineInputs, setup: Setup) -> V2Stage:
    """The creator's budget (configure_kv_cache_capacity: max_tokens is not applied there for V2) and the manager's
    quota: max_gpu_total_bytes, capped by a given max_tokens (KVCacheManagerV2.__init__), with their log lines."""
    pp = inputs.layout.pp
    intercept = (_v2_resident(setup, pp) + setup.dummies) * size.slot  # V2's get_cache_size_per_token intercept
    fields = {"cache_manager": V2, "max_batch_size": setup.batch, "state_slot_bytes": size.slot,
              "kv_token_bytes": size.slope, "fixed_state_slots": _v2_resident(setup, pp) + setup.dummies,
              "fixed_cost_bytes": intercept, "state_in_kv_budget": True, "kv_cache_budget_bytes": None,
              "state_slots": None, "max_tokens": None, "largest_max_batch_size": None, "best_max_batch_size": None}
    part = V2Stage(ctx, size, weight, _selected(setup), fields)
    if inputs.gpu_bytes is None:
        return part
    free = inputs.gpu_bytes - weight - setup.non_kv
    part.error = _no_room(weight, setup, inputs.gpu_bytes)
    if part.error:
        part.log.append(part.error)
        return part
    budget = _budget(free, 0, setup.fraction)
    fields["kv_cache_budget_bytes"] = budget
    part.log += [_peak_line(weight + setup.non_kv, budget, size.slope, intercept, inputs.gpu_bytes, setup),
                 f"Estimated max memory in KV cache : {budget / GIB:.2f} GiB",
                 f"max_gpu_total_bytes is provided. New quota is {budget / GIB}GiB"]
    quota = budget
    if setup.max_tokens is not None:
        allowed = math.ceil(_v2_quota_for_tokens(size, setup, pp, setup.max_tokens) / MAX_UTIL_FOR_RESUME)
        quota = min(quota, allowed)
        part.log.append(f"max_tokens {setup.max_tokens} is provided. Allowed quota from max_tokens is "
                        f"{allowed / GIB}GiB. New quota is {quota / GIB}GiB")
    part.quota = quota
    seq_tokens = cdiv(setup.context, setup.block) * setup.block
    fields.update(_batch_advice(lambda b: _v2_alone(size, _with_batch(setup, b), pp, free), seq_tokens, size.slope,
                                _batch_cap(free, size.slot, pp), pp))
    return part


def _v2_alone(size: StageSizes, setup: Setup, pp: int, free: int) -> int | None:
    """A V2 stage's attention tokens at `setup` without the ranks' agreement (None: it does not start)."""
    quota = _budget(free, 0, setup.fraction)
    if setup.max_tokens is not None:
        quota = min(quota, math.ceil(_v2_quota_for_tokens(size, setup, pp, setup.max_tokens) / MAX_UTIL_FOR_RESUME))
    if quota < _v2_minimum(size, setup, pp):
        return None
    return _v2_allocate(size, setup, pp, quota)[0] * setup.block


def _v2_minimum(size: StageSizes, setup: Setup, pp: int) -> int:
    """MambaHybridCacheManagerV2._minimum_live_gpu_quota: every live and dummy state slot and one attention page."""
    return _v2_quota_for_tokens(size, setup, pp, 0) + size.slope * setup.block


def _v2_pools(part: V2Stage, inputs: EngineInputs, setup: Setup) -> EngineStage:
    """The stage's pools from its quota, its log, and what it runs at the context."""
    ctx, size, log, fields = part.ctx, part.size, part.log, part.fields
    pp = inputs.layout.pp
    if part.error:
        return EngineStage(ctx.stage, 0, part.error, log, "start-up", fields)
    if part.quota is None:
        return EngineStage(ctx.stage, None, None, log, None, fields)
    log.append(f"KV cache manager v2 device quota set to {part.quota / GIB}GiB")
    capacity = max(1, setup.max_len // 2)  # _get_typical_request_capacity: avg_seq_len unset
    log.append("'kv_cache_config.avg_seq_len' is not set for a hybrid Mamba model using KV cache manager V2. Falling "
               f"back to max_seq_len / 2={capacity} for cache-pool sizing. Set 'kv_cache_config.avg_seq_len' in the YAML "
               "configuration to the workload's average total sequence length for an accurate KV/SSM pool ratio.")
    minimum = _v2_minimum(size, setup, pp)
    if part.quota < minimum:
        error = ("The V2 Mamba GPU cache quota is too small for live recurrent states and attention pages: got "
                 f"{part.quota} bytes, need at least {minimum} bytes.")
        log.append(error)
        return EngineStage(ctx.stage, 0, error, log, "start-up", fields)
    pages, slots = _v2_allocate(size, setup, pp, part.quota)
    resident = _v2_resident(setup, pp)
    log.append(f"KVCacheManagerV2: IndexMapper capacity={resident + setup.dummies} (max_num_sequences={resident}, "
               f"is_disagg=False, num_reserved_index_slots={setup.dummies}, max_beam_width=1)")
    tokens = pages * setup.block
    fields.update(max_tokens=tokens, state_slots=slots)
    seq_tokens = cdiv(setup.context, setup.block) * setup.block
    fit = tokens // seq_tokens if size.slope else resident
    fit = min(fit, slots - setup.dummies) if size.slot else fit
    running, binding = (fit, "KV tokens") if fit < resident else (resident, "max_batch_size")
    return EngineStage(ctx.stage, running, None, log, binding, fields)


def _granularity(quota: int) -> int:
    """_storage_manager.py CacheLevelManager.cache_tier_granularity (GPU): 2 MiB, doubled per doubling of the quota
    past 1 GiB, at most 32 MiB (2 MiB for an empty quota: a PP stage without cache layers asks for none)."""
    if quota <= 0:
        return GPU_PHYS_MEM_BASE
    return GPU_PHYS_MEM_BASE << min(4, max(0, int(math.log(quota / (GPU_PHYS_MEM_BASE * 512), 2))))


def _v2_allocate(size: StageSizes, setup: Setup, pp: int, quota: int) -> tuple[int, int]:
    """(attention pages, SSM state slots) of the stage's V2 pools. MambaHybridCacheManagerV2._build_cache_config: a
    typical step of max_batch_size x pp requests of max_seq_len / 2 tokens (avg_seq_len unset) and the dummy slots,
    and a floor of one SSM slot per live and dummy request; _storage_manager.py StorageManager.__init__: the pool
    groups' byte ratio is the typical step's, each pool rounded up to the granularity, the floors are the minimum slots
    and the quota is at least what they take (`_compute_slot_count_for_level`); `ratio_to_slot_count_list` splits it.
    One pool group holds the attention pages (one pool: every layer's K and V share a size), the other the state
    slots (one pool per buffer size: the SSM and the conv buffers of every layer)."""
    g = _granularity(quota)
    resident = _v2_resident(setup, pp)
    capacity = max(1, setup.max_len // 2)
    groups: list[tuple[list[int], int, int]] = []  # (pool slot sizes, typical need, minimum slots)
    if size.slope:
        groups.append(([size.slope * setup.block], resident * cdiv(capacity, setup.block), 1))
    if size.slot:
        groups.append((_coalesced(size.buffers), resident + setup.dummies, max(1, resident + setup.dummies)))
    sizes = [pools for pools, _, _ in groups]
    need = [sum(_round_up(n * s, g) for s in pools) for pools, n, _ in groups]
    ratio = [b / sum(need) for b in need]
    floors = [m for _, _, m in groups]
    total = max(sum(_round_up(m * s, g) for (pools, _, m) in groups for s in pools), _round_up(quota, g))
    counts = _ratio_to_slot_counts(total, sizes, ratio, g, floors)
    pages = counts[0] if size.slope else 0
    slots = counts[-1] if size.slot else 0
    return pages, slots


def _coalesced(buffers: tuple[int, ...]) -> list[int]:
    """Pool slot sizes of a pool group: buffers of one size share a pool whose slot holds one of each."""
    counts: dict[int, int] = {}
    for b in buffers:
        counts[b] = counts.get(b, 0) + 1
    return sorted((b * n for b, n in counts.items()), reverse=True)


def _round_up(n: int, g: int) -> int:
    return -(-n // g) * g


def _grains_for_slots(slots: int, pools: list[int], g: int) -> int:
    """_core.py CacheLevelStorage._grains_for_slots."""
    return sum(-(-slots * s // g) for s in pools)


def _grains_to_slots(grains: int, pools: list[int], g: int) -> tuple[int, int]:
    """_core.py CacheLevelStorage._grains_to_slots: the most slots a grain budget holds, and the grains they take."""
    minimum = [-(-s // g) for s in pools]
    if grains < sum(minimum):
        return 0, 0
    slots, remaining = 1 << 63, grains
    order = sorted(range(len(pools)), key=lambda i: pools[i])
    for j, i in enumerate(order):
        share = max(minimum[i], round(remaining * (pools[i] / sum(pools[k] for k in order[j:]))))
        slots = min(slots, share * g // pools[i])
        remaining -= share
    lo, step = slots, 1
    hi = lo + step
    while _grains_for_slots(hi, pools, g) <= grains:
        lo, step = hi, step * 2
        hi = lo + step
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _grains_for_slots(mid, pools, g) <= grains else (lo, mid)
    return lo, _grains_for_slots(lo, pools, g)


def _ratio_to_slot_counts(quota: int, sizes: list[list[int]], ratio: list[float], g: int,
                          floors: list[int]) -> list[int]:
    """_core.py CacheLevelStorage.ratio_to_slot_count_list: split the grains by ratio, pin every pool group that gets
    no more than its minimum to it and split the rest again, then fill each group's last grain."""
    counts = [0] * len(sizes)
    remaining = quota // g
    active = list(range(len(sizes)))
    while active:
        got, budget = {}, remaining
        order = sorted(active, key=lambda pg: ratio[pg])
        for i, pg in enumerate(order):
            pct = ratio[pg] / sum(ratio[q] for q in order[i:])
            slots, used = _grains_to_slots(round(budget * pct), sizes[pg], g)
            got[pg] = slots
            budget -= used
        pinned = [pg for pg in active if got[pg] <= floors[pg]]
        if not pinned:
            for pg in active:
                counts[pg] = got[pg]
            break
        for pg in pinned:
            counts[pg], used = _grains_to_slots(_grains_for_slots(floors[pg], sizes[pg], g), sizes[pg], g)
            remaining -= used
        active = [pg for pg in active if pg not in pinned]
        if active and remaining <= 0:
            raise LayoutError("engine", "a quota that holds the V2 pools' minimum slots")
    for pg, pools in enumerate(sizes):
        grains = _grains_for_slots(counts[pg], pools, g)
        while _grains_for_slots(counts[pg] + 1, pools, g) <= grains:
            counts[pg] += 1
    return counts


# -------------------------------------------------------------------------------------------- max_batch_size -----


def _with_batch(setup: Setup, batch: int) -> Setup:
    from msgspec.structs import replace

    return replace(setup, batch=batch)


def _batch_cap(free: int, slot: int, pp: int) -> int:
    """No max_batch_size past what the state alone fills the free memory with starts (the search's upper end)."""
    return max(1, free // (slot * pp)) + 1 if slot else 1 << 40


def _batch_advice(tokens_at: Callable[[int], int | None], seq_tokens: int, slope: int, cap: int, pp: int) -> dict:
    """The largest max_batch_size that starts and holds one sequence of the context, and the one that runs the most
    sequences of it (what runs is min(max_batch_size x pp, tokens // the context), `_share_tokens`, the tokens falling
    as the batch grows); `tokens_at(b)` is the stage's KV tokens at max_batch_size b (None: it does not start)."""

    def running(b: int) -> int:
        tokens = tokens_at(b)
        if tokens is None:
            return 0
        return min(b * pp, tokens // seq_tokens) if slope else b * pp

    if running(1) == 0:
        return {"largest_max_batch_size": 0, "best_max_batch_size": 0}
    largest = _last_true(lambda b: running(b) >= 1, 1, cap)
    best = _last_true(lambda b: running(b) >= b * pp, 1, largest)
    best = max((b for b in (best, best + 1) if b <= largest), key=running)
    return {"largest_max_batch_size": largest, "best_max_batch_size": best}


def _last_true(pred: Callable[[int], bool], lo: int, cap: int = 1 << 40) -> int:
    """The largest b in [lo, cap] with pred(b), pred holding at lo and turning false at most once."""
    hi = lo + 1
    while hi <= cap and pred(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, cap + 1)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if pred(mid) else (lo, mid)
    return lo


# ------------------------------------------------------------------------------------------ mcache plan's hooks -----
# What `mcache plan` reads of TensorRT-LLM (`engines.plan_hooks`). Replicas: the LLM API (llmapi/llm_args.py at main
# 151c21c and on the 1.2 line) has no option that starts R copies of a layout (enable_attention_dp splits attention
# across the ranks of one), so a fleet is one start per replica. The batch setting solved for: llm_args.py
# BaseLlmArgs.max_batch_size, whose state slots are a fixed cost before the KV (`_state_slots`).
SOLVED = "max_batch"
SOLVE_HINT_EXACT = True  # `_batch_advice` searched it, the value above it included
# Attention DP at a width of tp alone (`run` refuses another, in these words; `mcache plan` sweeps no other)
FULL_WIDTH_ATTENTION_DP = "whose enable_attention_dp spans every TP rank (each an attention-DP rank of its own)"


def solve_hint(run: EngineRun) -> int | None:
    """The max_batch_size that runs the most sequences of the context: the tightest stage's `best_max_batch_size`
    (`_batch_advice`, searched on the stage's own cost of a slot against its KV tokens). None when a stage has none
    (no value starts it), or when the run started with it."""
    best = [st.fields.get("best_max_batch_size") for st in run.stages]
    if not best or not all(isinstance(b, int) and b > 0 for b in best):
        return None
    return None if run.starts and run.settings["max_batch_size"] == min(best) else min(best)


def solve_settings(n: int, run: EngineRun) -> dict[str, int]:
    """max_batch_size n (each PP stage runs n; its state slots are what the KV budget loses)."""
    return {SOLVED: n}
