"""Runs INSIDE a throwaway venv that has SGLang installed (see scripts/oracles/sglang.py): sizes each case with
SGLang's own functions and prints one JSON object per case on stdout.

Input: a JSON file (argv[1]) {"cases": [{"config", "model_dir", "flags", "inputs"}...]}; output: argv[2] (JSON lines).

Releases driven: 0.5.2 to 0.5.8 and 0.5.10 to 0.5.23 (0.5.10-0.5.18 resolve their server args in
`ServerArgs.__post_init__`, and 0.5.14-0.5.18 read every parallel width from live process groups: `_resolve`,
`_hand_set_widths`; 0.5.10-0.5.16 keep their settings on ServerArgs rather than in config bags: `_bags`; 0.5.10-0.5.15
size the pools in the model runner's kv-cache mixin: `_size_runner`; 0.5.10-0.5.13 name the radix-cache strategy
otherwise: `_release_flags`, and have no runtime_context: `_publish`; 0.5.2-0.5.9 size the pools in
ModelRunner.init_memory_pool itself (0.5.7-0.5.9: its kv-cache mixin's, which builds them too), with the scheduler's
request count in TpModelWorker.__init__ (0.5.7-0.5.9: ModelRunner.initialize): `_size_model_runner` (every release 0.5.2-0.5.23 is
driven: see sglang_versions.md). A case with `pp_size` > 1 (0.5.14 on) is run once per stage, each in its own
child, as that rank (`STAGE`, `_answer`); one with attention DP (dp_size dividing tp_size, enable_dp_attention) as
attention-DP rank 0, its attention widths from SGLang's own compute_dp_attention_world_info (`_attention_world`). Nothing here
re-implements SGLang's arithmetic. What is mocked stands in for the GPU the venv does not have, and each mock is listed
in MOCKS (copied into the table) with why it cannot change a figure.
"""

from __future__ import annotations

import ast
import atexit
import dataclasses
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import json
import logging
import os
import shutil
import sys
import tempfile
import textwrap
import traceback
import types
from pathlib import Path

# This folder holds scripts/oracles/sglang.py, which would shadow the sglang package.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

# The remote-code stand-in shared with the vLLM oracle (scripts/oracles/remote_code.py), loaded by path
_remote_spec = importlib.util.spec_from_file_location("oracle_remote_code", Path(__file__).with_name("remote_code.py"))
REMOTE = importlib.util.module_from_spec(_remote_spec)
_remote_spec.loader.exec_module(REMOTE)

import torch  # noqa: E402

MIB = 1 << 20

MOCKS = [
    "torch.cuda.is_available/device_count/current_device/get_device_properties/get_device_capability/"
    "get_device_name/mem_get_info/empty_cache/synchronize: a fake CUDA device (an H200, sm90) whose total memory is "
    "the case's gpu_total_bytes and whose free memory is the case's free_gpu_memory_bytes; SGLang reads the GPU "
    "only through these calls (nvidia-smi is absent, so get_nvgpu_memory_capacity falls back to mem_get_info), so "
    "its own heuristics (chunked_prefill_size, cuda-graph max_bs, mem_fraction_static) run on the given size.",
    "The quantization check of model_loader/loader.py _get_quantization_config (a method's minimum compute capability, "
    "run by `_model_stand_in` as the loader runs it) reads the case's card's own capability (CUDA_CAPABILITY: the "
    "RTX 5090 sm120, the H200 and H100 sm90), not the fake device's sm90, so that a ModelOpt NVFP4 checkpoint (minimum "
    "100 to 0.5.12) is refused on the Hopper cards and passes on the RTX 5090, as on the real cards; every other read of "
    "the capability keeps sm90 (the capability-gated defaults of the RTX 5090 cases of the tables made before 2026-12-06 "
    "were made so; a remade table's SM 12 cases set card_capability, below). No case of the tables made before moves: "
    "their one NVFP4 checkpoint meets 0.5.13's minimum of 80 at sm90 as at sm120.",
    "A case whose inputs set card_capability (every SM 12 case from 2026-12-06: sglang.py _sm12_grid and the main "
    "grid's RTX 5090 cases) runs on its card "
    "itself: the fake device answers the card's name and compute capability (CUDA_CAPABILITY) to every read, with "
    "utils.common's cached probes cleared, as an AMD case does with its card.",
    "torchvision, torchaudio, tvm_ffi, sgl_kernel, deep_gemm, cutlass, quack, datasets (0.5.4-0.5.8's is_in_ci, run on a "
    "context above the model's, imports sglang.test.test_utils and with it bench_serving, which imports datasets; "
    "before 0.5.23 also flashinfer, with "
    "SGLANG_IS_FLASHINFER_AVAILABLE=false so that SGLang still finds it absent; before 0.5.16 also SGLang's "
    "jit_kernel.cutedsl_fp8_paged_mqa_logits, a CuTe DSL kernel that imports cuda-python on Kimi-Linear's import "
    "path; at 0.5.8 also jit_kernel.cutedsl_gdn, one on Nemotron-H's and Falcon-H1's): empty stand-in modules, "
    "imported by image preprocessing and CUDA kernel wrappers at module import time; none of them is called while "
    "server args are resolved or pools are sized.",
    "transformers.AutoImageProcessor / AutoVideoProcessor (only where transformers needs torchvision to use them: "
    "transformers 5.12, SGLang 0.5.16-0.5.21's pin): a class whose register() does nothing; SGLang calls it at import "
    "time to register the image processors of multimodal configs, which size nothing.",
    "0.5.16-0.5.20's KVCacheConfigurator takes a ParallelState (later releases: attn_dp_size and pp_size): "
    "ParallelState.trivial(tp_size=tp, the attention widths and ranks of TP rank 0 from SGLang's own "
    "compute_dp_attention_world_info, attn_tp_size tp / dp and attn_dp_size dp with attention DP, tp and 1 without, "
    "and the case's PP stage's pp_rank and pp_size); the "
    "configurator reads only its attn_dp_size and pp_size (KV heads per rank come from get_parallel()).",
    "0.5.19's parallel context has no derived widths (attn_tp_size, ...) until initialize_model_parallel stamps them: "
    "stamped from SGLang's own derive_parallel_widths(tp_size=tp, attn_dp_size the case's attention DP, no CP, EP or "
    "DCP), what that call would stamp.",
    "0.5.16-0.5.18's parallel context reads every width, rank and group from the live process groups (none exist without "
    "NCCL): each set through ParallelContext.override, SGLang's own hook for forcing them, as one rank of a TP-tp run "
    "(tp_size, world_size and moe_tp_size tp; the attention widths and ranks from SGLang's "
    "compute_dp_attention_world_info with the case's attention DP, attn_tp_size tp / dp, tp without; pp_size and "
    "pp_rank the case's PP stage's, world_size tp x pp, the PP group the stand-in below; every other width 1, every "
    "other rank 0, every other group None but the world group below). These are the values initialize_model_parallel "
    "would give the groups; the sizing reads only the widths (KV heads and state shapes per rank), as 0.5.19's stamped "
    "ones.",
    "0.5.16's KVCacheConfigurator writes the state pool's size onto ServerArgs (server_args.override), where the worker "
    "reads it (later releases: the schedule config bag); nothing is stood in for.",
    "kv_cache_configurator.get_world_group (0.5.16-0.5.20 only; later releases read get_parallel().world_group, "
    "overridden the same way): a world of one rank with no CPU group; it is only passed on to the mocked "
    "get_available_gpu_memory below and to the PP all-reduce (stood in for below), and no figure depends on it (the "
    "ranks, attention-DP ones included, size from the same memory).",
    "kv_cache_configurator.get_available_gpu_memory: returns inputs.free_after_weights_bytes, i.e. the free memory "
    "SGLang measures after the weights load (free_gpu_memory_bytes - weights_bytes); with TP>1 SGLang takes the "
    "minimum over ranks, which are identical here.",
    "ModelRunner is not built (it loads weights and starts NCCL): the worker calls the same steps it does, in its "
    "order: ServerArgs.resolve_once (0.5.10-0.5.18: the constructor's __post_init__), ModelConfig, get_model_architecture, "
    "configure_kv_cache_dtype, "
    "resolve_layer_indices-equivalent ModelLayerInfo(the stage's layers: start 0, end num_hidden_layers at PP 1), "
    "KVCacheConfigurator"
    "._resolve_memory_pool_config(pre_model_load_memory) and _init_pools on the meta device (tensor sizes only).",
    "The model configure_kv_cache_dtype reads (its quant_config, for --kv-cache-dtype auto: a checkpoint's FP8 "
    "kv_cache_quant_algo) is a stand-in holding the quant config SGLang's loader builds from the checkpoint's files "
    "(model_loader/loader.py _get_quantization_config, the call each loader makes before it builds the model, whose "
    "classes keep it as self.quant_config); None for an unquantized checkpoint. (Tables before this stand-in passed no "
    "model, which read every checkpoint's KV cache as the model dtype.)",
    "torch.library.register_fake (before 0.5.15): a no-op decorator; layers/moe/topk.py registers torch.compile fake "
    "kernels for sgl_kernel ops at import time, which the stand-in sgl_kernel does not define; no sizing calls them.",
    "0.5.10-0.5.15 size the pools in ModelRunner's kv-cache mixin: the ModelRunner is made without its __init__ "
    "(which loads weights and starts NCCL), with the attributes __init__ sets that the mixin and the pool configurator "
    "read set as it sets them for TP rank 0 of the case's PP stage (its layers, pp_rank, pp_size and the stand-in PP "
    "group below; dp_size the attention-DP width as __init__ sets it, dp_size under enable_dp_attention, else 1; not a "
    "draft worker, no draft model "
    "path, so eagle_draft_num_layers None; the kv-cache dtype from its own configure_kv_cache_dtype); the mixin's "
    "get_available_gpu_memory and get_world_group stand in as above; parallel_state's TP and attention-TP groups are "
    "stand-ins whose world_size is tp and attn_tp_size (compute_dp_attention_world_info's, as below), the only field "
    "get_attention_tp_size reads (KV heads per rank). The pools are "
    "not built (no pool bytes, no allocation log lines). 0.5.10-0.5.13 have no runtime_context (no parallel context "
    "to set, and the server args are published through server_args.set_global_server_args_for_scheduler, as at "
    "0.5.14); their sizing reads the widths from those parallel_state groups alone. (0.5.10's runner sizes the token "
    "pool itself, 0.5.11-0.5.15's through model_executor/pool_configurator.py; the same calls from the worker.) Then "
    "the mixin's _apply_memory_pool_config runs but its _init_pools() (the token and request counts onto the runner), "
    "and TpModelWorker.__init__'s statements from the token count to its pool-size asserts, as for 0.5.2-0.5.9 (0.5.14-0.5.15: "
    "the same two asserts, which TpModelWorker.alloc_memory_pool makes after allocating the pools): a pool "
    "config of no running request stops there ('max_running_request is zero').",
    "0.5.10-0.5.13's ServerArgs names the radix-cache strategy mamba_scheduler_strategy (--mamba-scheduler-strategy; "
    "0.5.14 renamed it): a case's mamba_radix_cache_strategy is passed under that name, its value unchanged, and read "
    "back from it into resolved_flags; not a stand-in, the release's own setting.",
    "0.5.2-0.5.9 size the pools in ModelRunner.init_memory_pool (0.5.2-0.5.6: no kv-cache mixin; 0.5.7-0.5.9: the mixin's, "
    "which builds the pools as well), called by ModelRunner.initialize's own statement, with the free memory before "
    "the weights load, --max-running-requests and --max-total-tokens (0.5.7: the server args; 0.5.8: neither), on a "
    "ModelRunner made without its __init__ (which loads weights and starts NCCL) and the attributes __init__ and "
    "load_model set as they set them for one rank of a TP-tp run (PP 1, not a draft worker, device 'meta' so that the "
    "pools it builds are tensor sizes only; the model a stand-in holding the checkpoint's quant config, as above). "
    "The statements of ModelRunner.initialize between load_model and init_memory_pool that concern the hybrid state "
    "(0.5.2-0.5.3: `if self.is_hybrid_gdn:` disables the radix cache and sets max_mamba_cache_size; 0.5.3.post1: `if "
    "config := self.mambaish_config:` likewise, then `if self.hybrid_gdn_config is not None:` divides it by the DP width; "
    "0.5.3.post2-0.5.6: `if config := self.mamba2_config:` disables it for the Mamba2 hybrids), the layer range "
    "(0.5.7-0.5.8 also narrow the model config's attention layer ids to it), 0.5.7-0.5.8's configure_kv_cache_dtype "
    "and request count after "
    "init_memory_pool are SGLang's own, "
    "taken from the release's source by ast and run on that runner; likewise the statements of TpModelWorker.__init__ "
    "from `self.max_total_num_tokens = self.model_runner.max_total_num_tokens` to the 'Memory pool size is too small' "
    "assert (the scheduler's max_running_requests). layers/dp_attention.py's attention-TP and DP globals are set as "
    "initialize_dp_attention sets them for TP rank 0 (compute_dp_attention_world_info(enable_dp_attention, 0, tp, dp)); "
    "0.5.9's "
    "get_attention_tp_size reads parallel_state's attention-TP group instead, a stand-in of that width (where "
    "parallel_state has one). model_runner's "
    "get_available_gpu_memory and get_world_group stand in as above. memory_pool's torch is a proxy that puts every "
    "tensor it is given a device for on the meta device: 0.5.2's MambaPool builds the draft tokens' intermediate "
    "states on 'cuda' literally. "
    "0.5.4-0.5.8's MHATokenToKVPool._init_kv_copy_and_warmup (run with a draft, after the pool is sized) reads a buffer "
    "stride with .item() and launches a Triton copy kernel to warm it up: a no-op that leaves its copy config unset.",
    "nvidia-smi (0.5.2-0.5.8, whose get_nvgpu_memory_capacity raises without it rather than falling back to "
    "mem_get_info): a script on PATH that prints the case's total memory in MiB, what nvidia-smi prints for the fake "
    "device (the same figure mem_get_info gives later releases).",
    "torch device module 'meta': an empty stand-in registered so the KV pools built on the meta device can create "
    "their side CUDA stream (used only to overlap copies at run time; no size depends on it).",
    REMOTE.MOCK.format(engine="SGLang"),
    "A modelling module the config's auto_map names for a class other than AutoModel, in a module apart from the "
    "AutoConfig and AutoModel ones (Nemotron-3-Super's AutoModelForCausalLM, modeling_nemotron_h.py), is a stand-in "
    "defining that class as a bare PreTrainedModel subclass: model_loader/utils.py resolve_transformers_arch "
    "(0.5.2-0.5.9) imports every auto_map entry of an architecture without an SGLang class "
    "(get_class_from_dynamic_module) but uses only AutoModel's, so no outcome depends on what the stand-in holds "
    "(without an AutoModel entry SGLang refuses, 'Cannot find model module ... AutoModel is not present'); of the "
    "configs, it applies to Nemotron-3-Super at 0.5.2-0.5.3 alone (NemotronH is native from 0.5.4). An AutoModel "
    "module (Kimi-K3's, edge0's) is not stood in "
    "for: what SGLang does with it depends on the published code (its versions differ on _supports_attention_backend), "
    "so those configs are not in the tables of the releases that would import it (0.5.2-0.5.9).",
    "A case with pp_size > 1 runs each PP stage in its own forked child as that rank: the parallel context's pp_rank "
    "(pp_size comes from the server args), the configurator's / model runner's pp_size, pp_rank and pp_group, and the "
    "stage's layers [start_layer, end_layer) from SGLang's own distributed/utils.py get_pp_indices (what the models' "
    "make_pp_layers returns; it reads SGLANG_PP_LAYER_PARTITION, which a case may set) in ModelLayerInfo. The PP "
    "group is a stand-in of the case's width and the stage's rank (world_size, rank_in_group, is_first_rank, "
    "is_last_rank), as get_pp_group() would answer (parallel_state._PP before 0.5.21, the parallel context's pp_group "
    "from 0.5.21); the sizing reads only those. The one PP collective of the sizing, "
    "_apply_token_constraints' all_reduce(MIN) of the token capacity over the world group, is torch.distributed."
    "all_reduce stood in for: every stage runs twice, first recording what it sends (a stage that fails before "
    "sending fails the case, as SGLang fails there), then with the all-reduce answering the smallest the stages sent; "
    "the second run is the stage's answer.",
    "The model is not built either (weights), so SGLang's checks while it loads are run on the registered model class "
    "itself (`_build_model`), built on the meta device (no memory) with the quant config SGLang's loader builds (as "
    "above), the model dtype torch's default as the loader's set_default_torch_dtype makes it (so that a rotary "
    "embedding built in float32 does not take the path that imports vLLM's kernels), and the stand-in PP group, "
    "where they can stop a case: a class whose module builds MambaMixer2 layers "
    "(models/falcon_h1.py, nemotron_h.py, granitemoehybrid.py, mamba2.py) at every PP size, and at pp_size > 1 a class "
    "whose forward takes no pp_proxy_tensors. The build ends with the first MambaMixer2: for the build, the model "
    "module's MambaMixer2 is a subclass whose __init__ runs SGLang's own with the model's own arguments and then stops "
    "the build, so the mixer's assertions run (heads and groups its TP size splits, the TP group's size, from 0.5.14 "
    "the attention-TP group's under attention DP; a quantized checkpoint's groups), and every later mixer of the model "
    "takes the same arguments. For the build torch.cuda.Stream is a stand-in object (model classes make a side stream "
    "to overlap kernels at run time), parallel_state's TP and attention-TP groups are the stand-ins above (world_size "
    "and rank_in_group of TP rank 0; from 0.5.16, whose sizing reads the parallel context, for the build alone: "
    "0.5.16-0.5.19's layers read them), layers/dp_attention.py is_dp_attention_enabled answers as "
    "initialize_dp_attention sets it (the runtime context's dp flag from 0.5.16, _ENABLE_DP_ATTENTION_FLAG before: on "
    "under the case's attention DP), and from 0.5.20 the parallel context's attn_tp_rank is set with tp_rank "
    "(override_permanently), as compute_dp_attention_world_info gives it (0.5.16-0.5.18 set it by override, above). An "
    "assertion of a mixer class's build is SGLang's refusal, in its words; of a class built for PP alone, the one-stage"
    " assertion (qwen3_next.py, falcon_h1.py, lfm2.py, lfm2_moe.py, which fail before building anything) is, reported "
    "as its source line and function, as Python's traceback shows it. Any other failure of a mixer class's build on the"
    " first stage (which builds from the first layer) is the case's error as raised: SGLang's own (a config it cannot "
    "read: mamba2-2.7b's intermediate_size) or a stand-in the worker lacks, which the table then shows; on a later PP "
    "stage only the mixer's own assertions count (raised in layers/attention/mamba/mamba.py: its first layers may need "
    "process groups the worker lacks, an MoE layer's expert group or the attention context-parallel group, and its "
    "mixers take the first stage's arguments), and for a class built for PP alone any other failure is ignored (the "
    "rest of the model needs those groups). At pp_size > 1 model_runner.py's support_pp assertion ('Pipeline Parallel "
    "is not compatible with this model.') follows, as SGLang reaches it next. Nothing built is sized.",
    "ServerArgs.check_server_args runs once the server args resolve, as the launch runs it (entrypoints/engine.py, "
    "every driven release); tables made before issue 28's PP cases did not run it (no case of theirs that was rerun "
    "since changed: scripts/oracles/sglang_versions.md).",
    "A case on an AMD card (inputs.gpu in AMD: MI300X, MI325X, MI355X) is run as ROCm runs it, in its forked child "
    "before the server args resolve: torch.version.hip set (7.0.51831) and torch.version.cuda None, which SGLang's "
    "is_hip() / is_cuda() read (utils/common.py; from 0.5.19 runtime_context.py get_platform() asks the same probes), "
    "with every lru_cache of utils/common.py cleared so that each probe (is_hip, is_cuda, is_hopper_with_cuda_12_3, "
    "is_sm100_supported, is_flashinfer_available, ...) answers for ROCm; the fake device reports the card's name, "
    "gcnArchName (gfx942 for MI300X / MI325X, gfx950 for MI355X) and the capability ROCm's torch reports for it "
    "(9.4 / 9.5); get_amdgpu_memory_capacity's `rocminfo | grep ... 'Pool 1' ... 'Size:'` reads a script on PATH that "
    "prints the card's total in KB as rocminfo prints its first GPU pool. Module constants SGLang computed at import "
    "(`_is_hip = is_hip()` in layers/ and mem_cache/: kernel dispatch, DSA layouts, fp8 fnuz dtypes of one byte as "
    "e4m3fn's) keep the CUDA answer: the worker imports SGLang once for every case, and none of them sizes a "
    "hybrid's pools.",
    "A case with attention DP (--dp-size N --enable-dp-attention, N dividing tp_size: an attention-TP group of tp / N "
    "ranks; 0.5.23 resolves it to "
    "--attn-dp-size N) is attention-DP rank 0 (TP rank 0) of one replica: the data-parallel controller, which starts a "
    "scheduler per attention-DP rank, is not started, and the widths and ranks above are the ones initialize_dp_attention "
    "gives that rank; every attention-DP rank sizes the same pools from the same memory, and each figure (tokens, state "
    "slots, max_running_requests) is that rank's, as its scheduler logs it.",
    "The scheduler's 'max_total_num_tokens=..., max_running_requests=...' line is the scheduler's own f-string "
    "filled from the configurator's result (the Scheduler is not started); every other log line is captured from "
    "SGLang's loggers as emitted.",
]


# ---- fake CUDA device -------------------------------------------------------------------------------------------
_GPU = {"total": 143771 * MIB, "free": 143771 * MIB, "name": "H200"}
# The CUDA cards' own compute capability (NVIDIA's list, as mcache's gpu_catalogue.py CAPABILITY), which the loader's
# quantization check reads (`_model_stand_in`; MOCKS); everything else reads the fake device's sm90
CUDA_CAPABILITY = {"H200": (9, 0), "H100-80GB": (9, 0), "RTX-5090": (12, 0), "RTX-PRO-6000": (12, 0), "B200": (10, 0)}
CUDA_NAMES = {"RTX-5090": "NVIDIA GeForce RTX 5090", "RTX-PRO-6000": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
              "B200": "NVIDIA B200"}


class _Props:
    name = "NVIDIA H200"
    major, minor = 9, 0
    is_integrated = False
    multi_processor_count = 132
    uuid = "GPU-oracle"
    L2_cache_size = 50 * MIB
    warp_size = 32

    @property
    def total_memory(self):
        return _GPU["total"]


torch.cuda.is_available = lambda: True
torch.version.cuda = "13.0"
torch.cuda.device_count = lambda: 8
torch.cuda.current_device = lambda: 0
torch.cuda.set_device = lambda *a, **k: None
torch.cuda.get_device_properties = lambda *a, **k: _Props()
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
torch.cuda.get_device_name = lambda *a, **k: "NVIDIA H200"
torch.cuda.mem_get_info = lambda *a, **k: (_GPU["free"], _GPU["total"])
torch.cuda.empty_cache = lambda: None
torch.cuda.synchronize = lambda *a, **k: None


# An AMD card (see MOCKS): name, gcnArchName and the capability ROCm's torch reports for it, by the oracle's GPU name
AMD = {"MI300X": ("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", (9, 4)),
       "MI325X": ("AMD Instinct MI325X", "gfx942:sramecc+:xnack-", (9, 4)),
       "MI355X": ("AMD Instinct MI355X", "gfx950:sramecc+:xnack-", (9, 5))}


def _as_amd(gpu: str) -> None:
    """In a case's forked child: the fake device as the AMD card `gpu` under ROCm (see MOCKS)."""
    name, arch, capability = AMD[gpu]
    torch.version.hip, torch.version.cuda = "7.0.51831", None
    _Props.name, _Props.gcnArchName, (_Props.major, _Props.minor), _Props.warp_size = name, arch, capability, 64
    torch.cuda.get_device_capability = lambda *a, **k: capability
    torch.cuda.get_device_name = lambda *a, **k: name
    common = _first_module("sglang.srt.utils.common", "sglang.srt.utils")
    for value in list(vars(common).values()):
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()
    os.environ["ORACLE_GPU_ARCH"] = arch.split(":")[0]  # what the fake rocminfo prints (`_fake_rocminfo`)


def _as_card(gpu: str) -> None:
    """In a case's forked child: the fake device as the CUDA card `gpu` itself, its own name and compute capability
    for every read (a case whose inputs ask for `card_capability`; see MOCKS)."""
    capability = CUDA_CAPABILITY[gpu]
    _Props.name, (_Props.major, _Props.minor) = CUDA_NAMES.get(gpu, _Props.name), capability
    torch.cuda.get_device_capability = lambda *a, **k: capability
    torch.cuda.get_device_name = lambda *a, **k: _Props.name
    common = _first_module("sglang.srt.utils.common", "sglang.srt.utils")
    for value in list(vars(common).values()):
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def _fake_rocminfo() -> None:
    """A script on PATH that prints the case's card and total memory (KB) as rocminfo prints its first GPU agent's
    first pool, which get_amdgpu_memory_capacity reads under ROCm (see MOCKS)."""
    folder = Path(tempfile.mkdtemp(prefix="oracle-rocminfo-"))
    atexit.register(shutil.rmtree, folder, True)  # the forked cases leave by os._exit: the worker removes it
    script = folder / "rocminfo"
    script.write_text('#!/bin/sh\nprintf "  Name:                    %s\\n  Pool 1\\n    Size:                    '
                      '%s(0x0) KB\\n" "$ORACLE_GPU_ARCH" "$((ORACLE_GPU_TOTAL_MIB * 1024))"\n')
    script.chmod(0o755)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"


# ---- stand-ins for GPU-only packages ----------------------------------------------------------------------------
class _Any(types.ModuleType):
    __path__: list = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any(self.__name__ + "." + name)

    def __call__(self, *a, **k):
        return _Any(self.__name__ + "()")

    def __getitem__(self, key):
        return _Any(self.__name__ + "[]")

    def __mro_entries__(self, bases):
        return (object,)


STUBS = tuple(os.environ.get("ORACLE_STUBS", "torchvision,torchaudio,tvm_ffi,sgl_kernel,deep_gemm,cutlass,quack,datasets"
                             ).split(","))
# 0.5.20 and 0.5.22's layers/quantization/fp8_utils.py import flashinfer.bmm_fp8 at module level (0.5.23 guards it):
# before 0.5.23 a stand-in, with SGLANG_IS_FLASHINFER_AVAILABLE=false so that is_flashinfer_available() still answers
# False, as it does in 0.5.23's venv, which has no flashinfer (no backend choice differs between the tables)
_SGLANG = tuple(int(x) for x in importlib.metadata.version("sglang").split(".")[:3])
# The module that sizes the pools: mem_cache/kv_cache_configurator.py from 0.5.16, the model runner's kv-cache mixin before
_SRT = Path(importlib.util.find_spec("sglang").submodule_search_locations[0]) / "srt"
SIZER = ("sglang.srt.mem_cache.kv_cache_configurator" if _SGLANG >= (0, 5, 16)
         else "sglang.srt.model_executor.model_runner_kv_cache_mixin"
         if (_SRT / "model_executor/model_runner_kv_cache_mixin.py").exists()
         else "sglang.srt.model_executor.model_runner")
# 0.5.15's jit_kernel/cutedsl_fp8_paged_mqa_logits.py (a CuTe DSL kernel) imports cuda.bindings.driver (cuda-python) at
# module level, on the import path of models/kimi_linear.py: without a stand-in that model module fails to import and
# SGLang's registry lacks KimiLinearForCausalLM (later releases import it lazily). The kernel module itself is stood in
# for (stubbing `cuda` would reach the real tvm_ffi, which inspects cuda-python's types)
if _SGLANG < (0, 5, 16) and "ORACLE_STUBS" not in os.environ:
    STUBS += ("sglang.jit_kernel.cutedsl_fp8_paged_mqa_logits",)
# Likewise 0.5.8's jit_kernel/cutedsl_gdn.py, imported at module level by layers/attention/hybrid_linear_attn_backend.py
# on the import path of models/nemotron_h.py and falcon_h1.py: without a stand-in SGLang's registry lacks both
if _SGLANG < (0, 5, 10) and (_SRT.parent / "jit_kernel/cutedsl_gdn.py").exists() and "ORACLE_STUBS" not in os.environ:
    STUBS += ("sglang.jit_kernel.cutedsl_gdn",)
if _SGLANG < (0, 5, 23) and "ORACLE_STUBS" not in os.environ:
    STUBS += ("flashinfer",)
# Before 0.5.15, layers/moe/topk.py (on model_runner.py's import path) registers torch.compile fake kernels for
# sgl_kernel ops at import time, which the stand-in sgl_kernel never defines: register_fake is a no-op decorator there
if _SGLANG < (0, 5, 15):
    torch.library.register_fake = lambda *a, **k: (lambda fn: fn)
    os.environ["SGLANG_IS_FLASHINFER_AVAILABLE"] = "false"
# 0.5.20's server_args imports xgrammar (the tool-call parser's structural tags), which needs the real tvm_ffi: where
# the venv has it (scripts/oracles/sglang.py installs both at SGLang's pins, without deps), it is not stood in for
if importlib.util.find_spec("tvm_ffi") is not None:
    STUBS = tuple(name for name in STUBS if name != "tvm_ffi")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STUBS or name in STUBS:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Any(spec.name)

    def exec_module(self, module):
        pass


# The pools are built on the meta device; the KV pool asks torch for the device's module to make a side stream
# (only used to overlap copies at run time).
torch._register_device_module("meta", _Any("torch.meta"))

import transformers.utils.import_utils  # noqa: E402,F401  (decides torchvision is absent before the stub exists)


class _NoRegistry:
    """Stands in for a transformers auto class that refuses to load without torchvision (see MOCKS)."""

    @staticmethod
    def register(*args, **kwargs):
        return None


def _without_torchvision_registries():
    """Puts _NoRegistry where transformers' auto classes need torchvision (transformers >= 5.19 needs none). Called
    after `import sglang`, which installs its own `transformers` module object."""
    module = sys.modules["transformers"]
    for name in ("AutoImageProcessor", "AutoVideoProcessor"):
        try:
            getattr(module, name).register  # noqa: B018
        except ImportError:
            setattr(module, name, _NoRegistry)
        except AttributeError:
            pass

sys.meta_path.insert(0, _Finder())


# ---- log capture ------------------------------------------------------------------------------------------------
class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        if record.name.startswith("sglang") or record.name == "root":
            self.lines.append(record.getMessage())


CAPTURE = _Capture()
logging.getLogger().addHandler(CAPTURE)
logging.getLogger().setLevel(logging.INFO)
for _h in list(logging.getLogger().handlers):
    if _h is not CAPTURE:
        logging.getLogger().removeHandler(_h)

KEEP = ("Mamba Cache is allocated", "KV Cache is allocated", "max_running_requests", "Reserving", "mem_fraction",
        "mamba", "Mamba", "context", "falling back", "Transformers", "speculative", "KV cache", "max_total",
        "Memory pool", "radix", "draft", "Draft")


def _kept(lines):
    return [ln for ln in lines if any(k in ln for k in KEEP)]


def run_case(case):
    from sglang.srt.server_args import ServerArgs

    inputs = case["inputs"]
    _GPU["total"] = inputs["gpu_total_bytes"]
    _GPU["free"] = inputs["free_gpu_memory_bytes"]
    _GPU["name"] = inputs["gpu"]
    os.environ["ORACLE_GPU_TOTAL_MIB"] = str(inputs["gpu_total_bytes"] // MIB)  # what the fake nvidia-smi prints
    if inputs["gpu"] in AMD:
        _as_amd(inputs["gpu"])
    elif inputs.get("card_capability"):
        _as_card(inputs["gpu"])
    env = case.get("env", {})
    old_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    CAPTURE.lines = []
    result = {}
    try:
        _remote_config(case["model_dir"])
        sa, cfg = _resolve(ServerArgs, case)
        sa.check_server_args()  # as the launch does once the args resolve (entrypoints/engine.py)
        result["mem_fraction_static"] = cfg.mem_fraction_static
        result["resolved_flags"] = {k: _plain(getattr(cfg, k, getattr(cfg, OLD_NAMES.get(k, k), None)))
                                    for k in RESOLVED}
        _publish(sa)
        result.update(_sizer()(sa, cfg, inputs, result))
        error = None
    except BaseException as e:  # noqa: BLE001 (a refusal is a result)
        if isinstance(e, KeyboardInterrupt):
            raise
        error = f"{type(e).__name__}: {e}"
        result["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:]
        if os.environ.get("ORACLE_DEBUG"):
            traceback.print_exc()
    finally:
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    result["log"] = _kept(CAPTURE.lines)
    if STAGE["size"] > 1:
        result.update(pp_rank=STAGE["rank"], start_layer=STAGE["layers"][0] if STAGE["layers"] else None,
                      end_layer=STAGE["layers"][1] if STAGE["layers"] else None, sent_tokens=STAGE["sent"])
    return result, error


def _sizer():
    """The worker's sizing path for the release: the KV-cache configurator from 0.5.16 (`_size`); the model runner's
    kv-cache mixin where it resolves a memory-pool config without building the pools (0.5.10-0.5.15, `_size_runner`);
    else the runner's own init_memory_pool, which builds them (0.5.2-0.5.6 in model_runner.py, 0.5.7-0.5.8 in the mixin:
    `_size_model_runner`)."""
    if SIZER.endswith("kv_cache_configurator"):
        return _size
    module = importlib.import_module(SIZER)
    if hasattr(getattr(module, "ModelRunnerKVCacheMixin", None), "_resolve_memory_pool_config"):
        return _size_runner
    return _size_model_runner


# ---- pipeline parallelism: each stage of a PP case in its own child (see MOCKS) ------------------------------------
# the stage a child runs: its rank of `size`, its layers once known, the token capacity it sent to the all-reduce and
# the smallest the stages sent (None on the first run)
STAGE = {"rank": 0, "size": 1, "layers": None, "sent": None, "min_tokens": None}


def _pp_group():
    """The PP group as get_pp_group() would answer for the stage (see MOCKS)."""
    rank, size = STAGE["rank"], STAGE["size"]
    return types.SimpleNamespace(world_size=size, rank_in_group=rank, is_first_rank=rank == 0,
                                 is_last_rank=rank == size - 1, cpu_group=None, device_group=None)


def _all_reduce(tensor, op=None, group=None, **kwargs):
    """torch.distributed.all_reduce as _apply_token_constraints calls it at PP > 1 (MIN over the ranks): records what
    the stage sends and answers the smallest the stages sent, once known."""
    STAGE["sent"] = int(tensor.item())
    if STAGE["min_tokens"] is not None:
        tensor.fill_(STAGE["min_tokens"])


def _stage_layers(model_config):
    """[start_layer, end_layer) of the stage: SGLang's get_pp_indices, as make_pp_layers calls it."""
    from sglang.srt.distributed.utils import get_pp_indices

    if STAGE["size"] == 1:
        STAGE["layers"] = (0, model_config.num_hidden_layers)
    else:
        STAGE["layers"] = tuple(get_pp_indices(model_config.num_hidden_layers, STAGE["rank"], STAGE["size"]))
    return STAGE["layers"]


MIXER_FILE = "layers/attention/mamba/mamba.py"  # MambaMixer2, whose __init__ asserts what its TP size splits


class _MixerBuilt(BaseException):
    """Raised once the model's first MambaMixer2 is built (`_build_model`): its assertions held."""


def _asserting_class(error: BaseException, cls) -> str:
    """The name of the class whose __init__ raised `error` (its last frame's `self`: a multimodal class's language model,
    as models/lfm2_vl.py builds lfm2.py's Lfm2ForCausalLM), else `cls`'s."""
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    owner = tb.tb_frame.f_locals.get("self")
    return type(owner).__name__ if owner is not None else cls.__name__


def _build_model(model_config, cfg):
    """SGLang's checks while the model loads (see MOCKS), run on the registered model class built on the meta device
    with the loader's quant config: a class whose module builds MambaMixer2 layers (models/falcon_h1.py, nemotron_h.py,
    granitemoehybrid.py, mamba2.py) up to its first mixer, whose __init__ asserts the heads and groups its TP size (the
    attention-TP size under attention DP from 0.5.14) can split; at pp_size > 1 a class that asserts one stage in its
    __init__, and model_runner.py's support_pp assert, whether the model's forward takes pp_proxy_tensors (the built
    model's where the class has none of its own: models/minicpmv.py's wrappers hand it their versioned model's)."""
    from sglang.srt.model_loader.utils import get_model_architecture, set_default_torch_dtype

    cls, _ = get_model_architecture(model_config)
    module = sys.modules[cls.__module__]
    mixer = getattr(module, "MambaMixer2", None)
    forward = getattr(cls, "forward", None)
    supports_pp = forward is not None and "pp_proxy_tensors" in inspect.signature(forward).parameters
    if mixer is None and (STAGE["size"] == 1 or supports_pp):
        return
    from sglang.srt.distributed import parallel_state

    parallel_state._PP = _pp_group()  # what get_pp_group() returns before 0.5.21 (later: get_parallel().pp_group)
    _dp_attention_flag(_attn_dp(cfg) > 1)

    quant_config = _model_stand_in(model_config).quant_config  # the loader's, before it builds the model
    if mixer is not None:
        class FirstMixer(mixer):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)  # SGLang's own, with the model's own arguments
                raise _MixerBuilt

        module.MambaMixer2 = FirstMixer
    cuda_stream, torch.cuda.Stream = torch.cuda.Stream, _Stream
    try:  # the model dtype the default, as model_loader/loader.py builds every model (SGLang's own context manager)
        with set_default_torch_dtype(model_config.dtype), torch.device("meta"):
            built = cls(config=model_config.hf_config, quant_config=quant_config)
        if forward is None:
            supports_pp = "pp_proxy_tensors" in inspect.signature(built.forward).parameters
    except _MixerBuilt:
        pass
    except Exception as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        if isinstance(e, AssertionError) and frame.name == "__init__" and "pp_group.is_first_rank" in (frame.line or ""):
            raise AssertionError(f"{frame.line}, in {_asserting_class(e, cls)}.__init__") from e
        # a mixer's own assertion, in SGLang's words; on the first stage, which builds from the first layer, any
        # failure before its first mixer (SGLang's own, or a stand-in the worker lacks, which then shows); a later
        # stage's layers need process groups the worker lacks (see MOCKS), its mixers the first stage's arguments
        if mixer is not None and (STAGE["rank"] == 0 or frame.filename.endswith(MIXER_FILE)):
            raise
    finally:
        torch.cuda.Stream = cuda_stream
        if mixer is not None:
            module.MambaMixer2 = mixer
    if STAGE["size"] > 1 and not supports_pp:
        raise AssertionError("Pipeline Parallel is not compatible with this model.")


class _Stream:
    """torch.cuda.Stream while the model is built (see MOCKS): the side stream a model class makes to overlap kernels."""

    def __init__(self, *args, **kwargs):
        pass


def _dp_attention_flag(enabled: bool) -> None:
    """layers/dp_attention.py is_dp_attention_enabled's answer, as initialize_dp_attention sets it (see MOCKS): the
    runtime context's flag from 0.5.16, the module's _ENABLE_DP_ATTENTION_FLAG before."""
    from sglang.srt.layers import dp_attention

    if hasattr(dp_attention, "_ENABLE_DP_ATTENTION_FLAG"):
        dp_attention._ENABLE_DP_ATTENTION_FLAG = enabled
    else:
        from sglang.srt.runtime_context import get_flags

        get_flags().dp.enabled = enabled


def _resolve(server_args_class, case):
    """(ServerArgs, the resolved view read from it): 0.5.19 on resolve in `resolve_once`, read through
    `resolving_view`; 0.5.16-0.5.18's dataclass resolves in `__post_init__` (run by the constructor, so the served name is one
    of its arguments), whose last step materializes the resolutions into the fields themselves, read directly (0.5.13
    too, its flags under the release's own names: `_release_flags`). A drafter's folder (`draft_dir`, the oracle's
    --drafters cases) is its --speculative-draft-model-path."""
    flags = {**case["flags"], **({"speculative_draft_model_path": case["draft_dir"]} if case.get("draft_dir") else {})}
    if not hasattr(server_args_class, "resolve_once"):
        sa = server_args_class(model_path=case["model_dir"], trust_remote_code=True, served_model_name=case["config"],
                               **_release_flags(server_args_class, flags))
        return sa, sa
    from sglang.srt.arg_groups.overrides import resolving_view

    sa = server_args_class(model_path=case["model_dir"], trust_remote_code=True, **flags)
    sa.served_model_name = case["config"]
    sa.resolve_once()
    return sa, resolving_view(sa)


# Flags whose name differs before a release (field of the case -> the older releases' ServerArgs field): 0.5.13 names the
# radix-cache strategy mamba_scheduler_strategy (server_args.py; 0.5.14 renamed it)
OLD_NAMES = {"mamba_radix_cache_strategy": "mamba_scheduler_strategy"}


def _release_flags(server_args_class, flags):
    """The case's flags under the names the release's ServerArgs has (`OLD_NAMES`: a field it lacks, by its older
    name; the value is passed as it is)."""
    fields = {f.name for f in dataclasses.fields(server_args_class)}
    return {OLD_NAMES[k] if k not in fields and OLD_NAMES.get(k) in fields else k: v for k, v in flags.items()}


def _publish(sa):
    """Makes the server args the process's, as the scheduler does: the runtime context's slot from 0.5.15, the
    module-level global (server_args.py set_global_server_args_for_scheduler) before (0.5.10-0.5.13 have no
    runtime_context); 0.5.2-0.5.8 have neither (their ModelRunner copies the settings it reads into
    global_server_args_dict, which no sizing step reads)."""
    from sglang.srt import server_args

    try:
        from sglang.srt.runtime_context import get_context
    except ImportError:
        get_context = None
    if get_context is not None and hasattr(get_context(), "set_server_args"):
        get_context().set_server_args(sa)
        return
    if hasattr(server_args, "set_global_server_args_for_scheduler"):
        server_args.set_global_server_args_for_scheduler(sa)


def _model_config(sa):
    """The ModelConfig of the server args: `arg_groups/overrides.model_config_of` from 0.5.19, the `get_model_config`
    method before (the same memoized ModelConfig.from_server_args)."""
    try:
        from sglang.srt.arg_groups.overrides import model_config_of
    except ImportError:
        if hasattr(sa, "get_model_config"):
            return sa.get_model_config()
        from sglang.srt.configs.model_config import ModelConfig  # 0.5.2-0.5.3: no memoized one

        return ModelConfig.from_server_args(sa)
    return model_config_of(sa)


def _fake_nvidia_smi():
    """Where the release's get_nvgpu_memory_capacity raises without nvidia-smi (0.5.2-0.5.8; later ones fall back to
    mem_get_info), a script on PATH that prints the case's total memory in MiB as nvidia-smi prints it (see MOCKS)."""
    utils = _first_module("sglang.srt.utils.common", "sglang.srt.utils")
    if "nvidia-smi not found" not in inspect.getsource(utils.get_nvgpu_memory_capacity):
        return
    folder = Path(tempfile.mkdtemp(prefix="oracle-nvidia-smi-"))
    atexit.register(shutil.rmtree, folder, True)  # the forked cases leave by os._exit: the worker removes it
    script = folder / "nvidia-smi"
    script.write_text('#!/bin/sh\necho "$ORACLE_GPU_TOTAL_MIB"\n')
    script.chmod(0o755)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"


def _first_module(*names):
    """The first of the modules `names` that the release has (a module moved between releases)."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"none of {names}")


def _remote_config(model_dir):
    """The checkpoint's configuration module stood in for (remote_code.py; MOCKS), beside SGLang's own config
    registry (utils/hf_transformers/common.py from 0.5.11, utils/hf_transformers_utils.py at 0.5.4-0.5.8 and 0.5.10,
    hf_transformers_utils.py before)."""
    _CONFIG_REGISTRY = _first_module("sglang.srt.utils.hf_transformers.common", "sglang.srt.utils.hf_transformers_utils",
                                     "sglang.srt.hf_transformers_utils")._CONFIG_REGISTRY
    cfg = json.loads((Path(model_dir) / "config.json").read_text())
    REMOTE.remote_config(model_dir, cfg, _CONFIG_REGISTRY)
    # the modelling classes SGLang imports but never uses (MOCKS): by module, those apart from AutoConfig's and AutoModel's
    refs = {entry: ref.split("--")[-1].rsplit(".", 1) for entry, ref in (cfg.get("auto_map") or {}).items()}
    kept = {refs[entry][0] for entry in ("AutoConfig", "AutoModel") if entry in refs}
    unused: dict[str, set[str]] = {}
    for module, name in refs.values():
        if module not in kept:
            unused.setdefault(module, set()).add(name)
    for module, names in unused.items():
        (Path(model_dir) / f"{module}.py").write_text("from transformers import PreTrainedModel\n" + "".join(
            f"\n\nclass {name}(PreTrainedModel):\n    pass\n" for name in sorted(names)))


RESOLVED = ("chunked_prefill_size", "max_running_requests", "disable_radix_cache", "mamba_radix_cache_strategy",
            "disable_overlap_schedule", "speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
            "speculative_num_draft_tokens", "page_size", "kv_cache_dtype", "mamba_ssm_dtype", "attention_backend",
            "context_length", "max_mamba_cache_size", "mamba_full_memory_ratio", "tp_size", "dp_size",
            "enable_dp_attention", "attn_dp_size", "schedule_conservativeness")


def _plain(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)


def _call(fn, **kwargs):
    """`fn` with the keyword arguments its release takes (a later release added some: 0.5.21's
    is_post_capture_kv_active takes spec_algorithm and token_to_kv_pool_allocator, 0.5.20's does not)."""
    accepted = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in accepted})


def _size(sa, cfg, inputs, result):
    """What ModelRunner.initialize and init_memory_pool do, minus loading weights."""
    from sglang.srt.mem_cache import kv_cache_configurator as kvc_mod
    from sglang.srt.mem_cache import kv_cache_dtype
    from sglang.srt.model_executor.model_runner_components.layer_setup import ModelLayerInfo
    from sglang.srt.model_loader.utils import get_model_architecture
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    out = {}
    model_bag, schedule_bag, spec_bag = _bags(sa)
    model_config = _model_config(sa)
    out["context_length"] = model_config.context_len
    _, arch = get_model_architecture(model_config)
    out["resolved_architecture"] = arch
    spec_algorithm = SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)
    resolved_kv, torch_kv = _call(kv_cache_dtype.configure_kv_cache_dtype,
        server_args_kv_cache_dtype=model_bag.kv_cache_dtype, model=_model_stand_in(model_config),
        model_dtype=model_config.dtype,
        is_draft_worker=False, is_dflash=spec_algorithm.is_dflash_family(),
        speculative_draft_attention_backend=None,
        speculative_draft_kv_cache_dtype=getattr(spec_bag, "speculative_draft_kv_cache_dtype", None))
    free_after_weights = inputs["free_gpu_memory_bytes"] - inputs["weights_bytes"]
    kvc_mod.get_available_gpu_memory = lambda *a, **k: free_after_weights / (1 << 30)
    from sglang.srt.configs.model_config import AttentionArch
    from sglang.srt.model_executor.model_runner_components.kv_pool_runtime import is_post_capture_kv_active
    from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
        resolve_spec_aux_hidden_state_config,
    )
    post_capture = _call(is_post_capture_kv_active, server_args=sa, is_draft_worker=False, spec_algorithm=spec_algorithm,
                                             token_to_kv_pool_allocator=None)
    out["post_capture_kv_active"] = post_capture
    from sglang.srt.runtime_context import get_parallel

    # No process group exists: the configurator reads world_group only to pass its cpu_group to the (mocked)
    # get_available_gpu_memory, which takes the minimum free memory over ranks.
    world = types.SimpleNamespace(cpu_group=None, world_size=1)
    parallel = get_parallel()
    if hasattr(parallel, "override_permanently"):
        parallel.override_permanently(world_group=world, tp_rank=0, attn_tp_rank=_attention_world(cfg.tp_size, _attn_dp(cfg))[0],
                                      pp_rank=STAGE["rank"], pp_group=_pp_group())
    elif not hasattr(parallel, "stamp_derived_widths"):
        _hand_set_widths(parallel, cfg.tp_size, _attn_dp(cfg), world)
    else:
        # 0.5.19: the widths no flag sets (attn_tp_size, ...) exist only once initialize_model_parallel stamps them;
        # stamped here by SGLang's own derive_parallel_widths from the case's TP, no CP, DP, EP or DCP
        from sglang.srt.runtime_context import derive_parallel_widths

        parallel.stamp_derived_widths(world_group=world, tp_rank=0, pp_rank=STAGE["rank"], **derive_parallel_widths(
            tp_size=cfg.tp_size, attn_cp_size=1, attn_dp_size=_attn_dp(cfg), moe_ep_size=1, moe_dp_size=1, dcp_size=1,
            dcp_enabled=False))
        held = parallel.override(pp_group=_pp_group())  # read through the live group otherwise
        held.__enter__()
        _HELD.append(held)
    if hasattr(kvc_mod, "get_world_group"):  # 0.5.16-0.5.20 read the world group directly (see MOCKS)
        kvc_mod.get_world_group = lambda: world
    _tp_groups(cfg.tp_size, _attn_dp(cfg))  # 0.5.16-0.5.19's layers read them as they are built
    _build_model(model_config, cfg)  # the model loads (with the widths set above) before the pools are sized
    # 0.5.21 on: ModelLayerInfo also carries the SWA layer ids (None for a model without SWA); 0.5.20's has none
    swa_ids = getattr(model_config, "swa_attention_layer_ids", None)
    start, end = _stage_layers(model_config)
    layer_info = _call(ModelLayerInfo, start_layer=start, end_layer=end, num_effective_layers=end - start,
                       swa_attention_layer_ids=swa_ids,
                       full_attention_layer_ids=model_config.full_attention_layer_ids if swa_ids is not None else None)
    fields = {f.name for f in dataclasses.fields(kvc_mod.KVCacheConfigurator)}
    # 0.5.21 on: attn_dp_size and pp_size; 0.5.16-0.5.20: a ParallelState (`ps`) of which the configurator reads only
    # attn_dp_size and pp_size (KV heads per rank come from get_parallel(), as in later releases)
    widths = ({"attn_dp_size": _attn_dp(cfg), "pp_size": STAGE["size"]} if "attn_dp_size" in fields else
              {"ps": _parallel_state(cfg.tp_size, _attn_dp(cfg))})
    kvc = _call(
        kvc_mod.KVCacheConfigurator,  # 0.5.16's takes no kv_cache_dtype_str
        device="cuda", gpu_id=0, **widths, pp_group=_pp_group(), model=None, model_config=model_config,
        server_args=sa, kv_cache_dtype=torch_kv, kv_cache_dtype_str=resolved_kv or model_bag.kv_cache_dtype,
        model_dtype=model_config.dtype, page_size=schedule_bag.page_size, sliding_window_size=None,
        spec_algorithm=spec_algorithm, is_draft_worker=False, post_capture_kv_active=post_capture,
        spec_aux_config=resolve_spec_aux_hidden_state_config(server_args=sa, model_config=model_config,
                                                             spec_algorithm=spec_algorithm, is_draft_worker=False),
        is_hybrid_swa=model_config.is_hybrid_swa, is_hybrid_swa_compress=model_config.is_hybrid_swa_compress,
        use_mla_backend=model_config.attention_arch == AttentionArch.MLA, layer_info=layer_info,
        forward_stream=None, req_to_token_pool=None, token_to_kv_pool_allocator=None, memory_pool_config=None)
    out["kv_cache_dtype"] = str(torch_kv)
    config = _pools_config(kvc, inputs, out, schedule_bag)
    out.update(_scheduler_line(config, schedule_bag, cfg, model_config))
    out.update(_pool_bytes(kvc, config))
    _draft_architecture(sa)
    return out


def _draft_architecture(sa):
    """A DFLASH drafter's model class, as the draft worker's ModelRunner resolves it once the target's pools are sized
    (model_loader/utils.py get_model_architecture on the drafter's ModelConfig, ModelConfig.from_server_args with
    is_draft_model, as ModelRunner builds it): SGLang's refusal of a drafter architecture it has no class for (e.g.
    DFlash2DraftModel before models/dflash.py registers it)."""
    if str(getattr(sa, "speculative_algorithm", None)).upper() != "DFLASH" or not sa.speculative_draft_model_path:
        return
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.model_loader.utils import get_model_architecture

    get_model_architecture(ModelConfig.from_server_args(sa, model_path=sa.speculative_draft_model_path,
                                                        is_draft_model=True))


def _pools_config(sizer, inputs, out, schedule_bag):
    """The memory pool config `sizer` (the KV-cache configurator, or 0.5.15's model runner) resolves from the free
    memory before the weights load, with the state pool's figures."""
    config = sizer._resolve_memory_pool_config(inputs["free_gpu_memory_bytes"] / (1 << 30))
    out["max_total_num_tokens"] = config.max_total_num_tokens
    out["max_running_requests"] = config.max_running_requests
    out["mamba_cache_size"] = schedule_bag.max_mamba_cache_size if sizer.mambaish_config is not None else None
    if sizer.mambaish_config is not None:
        out["mamba_cache_per_req_bytes"] = sizer.mambaish_config.mamba2_cache_params.mamba_cache_per_req
        out["mamba_state_slots_per_request"] = sizer._calculate_mamba_ratio()
    return config


def _scheduler_line(config, schedule_bag, cfg, model_config):
    """The pool config's plain fields and the scheduler's start-up line."""
    out = {}
    cfg_fields = getattr(config, "__struct_fields__", None) or getattr(config, "__dataclass_fields__", {})
    out["memory_pool_config"] = {k: getattr(config, k) for k in cfg_fields
                                 if isinstance(getattr(config, k), (bool, int, float, type(None)))}
    # The scheduler's start-up line (managers/scheduler.py), its own f-string without the measured available memory.
    out["log_scheduler"] = (f"max_total_num_tokens={config.max_total_num_tokens}, "
                            f"chunked_prefill_size={schedule_bag.chunked_prefill_size}, "
                            f"max_prefill_tokens={getattr(cfg, 'max_prefill_tokens', None)}, "
                            f"max_running_requests={config.max_running_requests}, "
                            f"context_len={model_config.context_len}")
    return out


def _size_runner(sa, cfg, inputs, result):
    """0.5.15 and before: the pools are sized by ModelRunner's own kv-cache mixin (model_runner_kv_cache_mixin.py), on
    a ModelRunner whose __init__ (weights, NCCL) does not run: the attributes its __init__ sets from the server args
    and the model config that the mixin and the pool configurator read are set as __init__ sets them (see MOCKS); the
    pools themselves are not built."""
    from sglang.srt.configs.model_config import AttentionArch
    from sglang.srt.managers import tp_worker
    from sglang.srt.model_executor import model_runner as model_runner_module
    from sglang.srt.model_executor import model_runner_kv_cache_mixin as mixin
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.model_loader.utils import get_model_architecture
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    model_config = _model_config(sa)
    out = {"context_length": model_config.context_len}
    out["resolved_architecture"] = get_model_architecture(model_config)[1]
    world = types.SimpleNamespace(cpu_group=None, world_size=1)
    try:  # 0.5.14-0.5.15: the parallel context; 0.5.13 has none, its sizing reads parallel_state's groups alone
        from sglang.srt.runtime_context import get_parallel
    except ImportError:
        get_parallel = None
    if get_parallel is not None:
        _hand_set_widths(get_parallel(), cfg.tp_size, _attn_dp(cfg), world)
    _tp_groups(cfg.tp_size, _attn_dp(cfg))
    _build_model(model_config, cfg)  # the model loads (with the groups set above) before the pools are sized
    free_after_weights = inputs["free_gpu_memory_bytes"] - inputs["weights_bytes"]
    mixin.get_available_gpu_memory = lambda *a, **k: free_after_weights / (1 << 30)
    mixin.get_world_group = lambda: world
    runner = ModelRunner.__new__(ModelRunner)
    start, end = _stage_layers(model_config)
    for name, value in dict(
            server_args=sa, model_config=model_config, mem_fraction_static=sa.mem_fraction_static, memory_pool_config=None,
            device="cuda", gpu_id=0, tp_rank=0, tp_size=cfg.tp_size, dp_size=_attn_dp(cfg), pp_rank=STAGE["rank"],
            pp_size=STAGE["size"], pp_group=_pp_group(),
            is_draft_worker=False, spec_algorithm=SpeculativeAlgorithm.from_string(sa.speculative_algorithm),
            page_size=sa.page_size, req_to_token_pool=None, token_to_kv_pool_allocator=None,
            is_hybrid_swa=model_config.is_hybrid_swa,
            is_hybrid_swa_compress=getattr(model_config, "is_hybrid_swa_compress", False),
            use_mla_backend=model_config.attention_arch == AttentionArch.MLA, draft_model_idx=None,
            enable_hisparse=sa.enable_hisparse, eagle_draft_num_layers=None, eagle_use_aux_hidden_state=False,
            dflash_use_aux_hidden_state=False, dflash_draft_num_layers=None, dflash_target_layer_ids=None,
            dtype=model_config.dtype, start_layer=start, end_layer=end, num_effective_layers=end - start,
            sliding_window_size=None, model=_model_stand_in(model_config)).items():
        setattr(runner, name, value)
    if hasattr(model_runner_module, "_UNSET"):  # 0.5.13 on: the linear-attention registry's memo, unset as __init__ sets it
        runner._linear_attn_registry_cache = model_runner_module._UNSET
    # __init__'s own DFLASH block: the drafter's layers (dflash_draft_num_layers); 0.5.10 has no DFlash (no is_dflash)
    if getattr(runner.spec_algorithm, "is_dflash", bool)():
        _statements(ModelRunner.__init__, _dflash_kept, runner, {**vars(model_runner_module), "server_args": sa})
    runner.configure_kv_cache_dtype()
    out["kv_cache_dtype"] = str(runner.kv_cache_dtype)
    config = _pools_config(runner, inputs, out, sa)
    # the counts onto the runner as _apply_memory_pool_config puts them (no pool built), then the worker's asserts
    _statements(mixin.ModelRunnerKVCacheMixin._apply_memory_pool_config, _without_pool_init, runner,
                {**vars(mixin), "config": config})
    worker = types.SimpleNamespace(model_runner=runner, model_config=model_config)
    if hasattr(tp_worker.TpModelWorker, "alloc_memory_pool"):  # 0.5.14-0.5.15: the asserts follow the pools' allocation
        _statements(tp_worker.TpModelWorker.alloc_memory_pool, _validation_kept, worker, vars(tp_worker))
    else:
        _statements(tp_worker.TpModelWorker.__init__, _worker_kept, worker, {**vars(tp_worker), "server_args": sa})
    out.update(_scheduler_line(config, sa, cfg, model_config))
    _draft_architecture(sa)
    return out


def _without_pool_init(body):
    """_apply_memory_pool_config's statements but `self._init_pools()` (the oracle builds no pool)."""
    return [node for node in body if ast.unparse(node) != "self._init_pools()"]


def _size_model_runner(sa, cfg, inputs, result):
    """0.5.2-0.5.9: ModelRunner.init_memory_pool (0.5.7-0.5.9: its kv-cache mixin's) sizes and builds the pools itself,
    and TpModelWorker.__init__ (0.5.7-0.5.8: ModelRunner.initialize) derives the scheduler's max_running_requests from them. Both
    run as SGLang runs them, on a ModelRunner whose __init__ (weights, NCCL) does not run: its attributes set as
    __init__ and load_model set them, the statements of `initialize` that concern the hybrid state, the layer range,
    the KV dtype, the init_memory_pool call (on the meta device) and 0.5.7-0.5.8's request count run from the release's own
    source (`_statements`, `_initialize_kept`), then TpModelWorker's statements from the token count to its pool-size
    asserts (see MOCKS)."""
    from sglang.srt.configs.model_config import AttentionArch
    from sglang.srt.layers import dp_attention
    from sglang.srt.managers import tp_worker
    from sglang.srt.mem_cache import memory_pool
    from sglang.srt.model_executor import model_runner as model_runner_module
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.model_loader.utils import get_model_architecture
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    model_config = _model_config(sa)
    out = {"context_length": model_config.context_len}
    out["resolved_architecture"] = get_model_architecture(model_config)[1]
    attn_tp_rank, attn_tp_size, attn_dp_rank, attn_dp_size = _attention_world(cfg.tp_size, _attn_dp(cfg))
    dp_attention._ATTN_TP_RANK, dp_attention._ATTN_TP_SIZE, dp_attention._ATTN_DP_RANK = (attn_tp_rank, attn_tp_size,
                                                                                         attn_dp_rank)
    dp_attention._ATTN_DP_SIZE = attn_dp_size
    _tp_groups(cfg.tp_size, _attn_dp(cfg))  # 0.5.9: get_attention_tp_size reads parallel_state's attention-TP group
    _build_model(model_config, cfg)  # the model loads (with the groups set above) before the pools are sized
    world = types.SimpleNamespace(cpu_group=None, world_size=1, ranks=[0])
    free_after_weights = inputs["free_gpu_memory_bytes"] - inputs["weights_bytes"]
    sizer_module = importlib.import_module(SIZER)  # 0.5.7-0.5.8: the mixin's profile_max_num_token, else model_runner's
    sizer_module.get_available_gpu_memory = lambda *a, **k: free_after_weights / (1 << 30)
    sizer_module.get_world_group = lambda: world
    memory_pool.torch = _MetaTorch()
    if hasattr(memory_pool.MHATokenToKVPool, "_init_kv_copy_and_warmup"):  # 0.5.4-0.5.8: a kernel warm-up (see MOCKS)
        memory_pool.MHATokenToKVPool._init_kv_copy_and_warmup = lambda pool: setattr(pool, "_kv_copy_config", None)
    runner = ModelRunner.__new__(ModelRunner)
    for name, value in dict(
            server_args=sa, model_config=model_config, mem_fraction_static=sa.mem_fraction_static, device="meta",
            gpu_id=0, tp_rank=0, tp_size=cfg.tp_size, moe_ep_rank=0, moe_ep_size=1, dp_size=sa.dp_size, pp_rank=0,
            pp_size=1, is_draft_worker=False, spec_algorithm=SpeculativeAlgorithm.from_string(sa.speculative_algorithm),
            page_size=sa.page_size, req_to_token_pool=None, token_to_kv_pool_allocator=None,
            **_swa_flag(model_config), use_mla_backend=model_config.attention_arch == AttentionArch.MLA,
            attention_chunk_size=model_config.attention_chunk_size, dtype=model_config.dtype,
            sliding_window_size=None, model=_model_stand_in(model_config)).items():
        setattr(runner, name, value)
    # initialize's own statements, its init_memory_pool call among them (0.5.2-0.5.6: (free memory, --max-running-requests,
    # --max-total-tokens); 0.5.7: (free memory, server_args), 0.5.8: (free memory), after configure_kv_cache_dtype and followed by the
    # scheduler's request count, which 0.5.2-0.5.6 derive in TpModelWorker.__init__)
    _statements(ModelRunner.initialize, _initialize_kept, runner,
                {**vars(model_runner_module), "server_args": sa,
                 "min_per_gpu_memory": inputs["free_gpu_memory_bytes"] / (1 << 30)})
    out["kv_cache_dtype"] = str(runner.kv_cache_dtype)
    worker = types.SimpleNamespace(model_runner=runner, model_config=model_config)
    _statements(tp_worker.TpModelWorker.__init__, _worker_kept, worker, {**vars(tp_worker), "server_args": sa})
    out["max_total_num_tokens"] = worker.max_total_num_tokens
    out["max_running_requests"] = worker.max_running_requests
    # the state's figures: 0.5.4-0.5.8's mambaish_config (its mamba2_cache_params), the hybrid GDN config before
    if hasattr(ModelRunner, "mambaish_config"):
        state = runner.mambaish_config and runner.mambaish_config.mamba2_cache_params
    else:
        state = model_config.hf_config if runner.is_hybrid_gdn else None
    out["mamba_cache_size"] = sa.max_mamba_cache_size if state is not None else None
    if state is not None:
        out["mamba_cache_per_req_bytes"] = state.mamba_cache_per_req
        out["mamba_pool_size"] = runner.req_to_token_pool.mamba_pool.size
    out["log_scheduler"] = (f"max_total_num_tokens={worker.max_total_num_tokens}, "
                            f"chunked_prefill_size={sa.chunked_prefill_size}, "
                            f"max_prefill_tokens={sa.max_prefill_tokens}, "
                            f"max_running_requests={worker.max_running_requests}, "
                            f"context_len={model_config.context_len}")
    return out


def _swa_flag(model_config):
    """The runner's hybrid-SWA flag as __init__ copies it from the ModelConfig: `is_hybrid` to 0.5.5, renamed
    `is_hybrid_swa` at 0.5.6 (model_runner.py, configs/model_config.py)."""
    name = "is_hybrid_swa" if hasattr(model_config, "is_hybrid_swa") else "is_hybrid"
    return {name: getattr(model_config, name)}


def _initialize_kept(body):
    """ModelRunner.initialize's statements run by `_size_model_runner`: the hybrid-state branches (0.5.2-0.5.3
    `if self.is_hybrid_gdn:`, 0.5.3.post1 `if config := self.mambaish_config:` and `if self.hybrid_gdn_config is not
    None:`, 0.5.3.post2-0.5.6 `if config := self.mamba2_config:`), the layer range (num_effective_layers;
    0.5.7-0.5.8 also narrow the model config's attention layer ids to it), the KV dtype (0.5.7-0.5.8's
    configure_kv_cache_dtype; before, init_memory_pool sets it), the init_memory_pool call and, from 0.5.7, the
    scheduler's request count."""
    targets = ("model_has_mtp_layers", "model_num_layers", "self.start_layer", "self.end_layer", "self.num_effective_layers",
               "full_attention_layer_ids", "swa_attention_layer_ids", "self.model_config.full_attention_layer_ids",
               "self.model_config.swa_attention_layer_ids", "self.max_running_requests")
    calls = ("self.configure_kv_cache_dtype", "self.init_memory_pool")

    def kept(node):
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            return any(name in test for name in ("is_hybrid_gdn", "mambaish_config", "hybrid_gdn_config", "mamba2_config"))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return ast.unparse(node.value.func) in calls
        return any(ast.unparse(t) in targets for t in getattr(node, "targets", []))
    return [node for node in body if kept(node)]


def _dflash_kept(body):
    """ModelRunner.__init__'s `if self.spec_algorithm.is_dflash() and not self.is_draft_worker:` block (0.5.11-0.5.15):
    it reads the drafter's config and sets dflash_draft_num_layers, which the pool configurator scales the cell by."""
    return [node for node in body if isinstance(node, ast.If) and "is_dflash()" in ast.unparse(node.test)]


def _span(body, first, last: str = "Memory pool size is too small"):
    """The statements of `body` from the first whose source `first` accepts to the first that holds `last`."""
    text = [ast.unparse(node) for node in body]
    start = next(i for i, t in enumerate(text) if first(t))
    end = next(i for i, t in enumerate(text) if last in t)
    return body[start:end + 1]


def _worker_kept(body):
    """TpModelWorker.__init__'s statements from `self.max_total_num_tokens = self.model_runner.max_total_num_tokens`
    to the 'Memory pool size is too small' assert."""
    return _span(body, "self.max_total_num_tokens = self.model_runner.max_total_num_tokens".__eq__)


def _validation_kept(body):
    """TpModelWorker.alloc_memory_pool's statements (0.5.14-0.5.15) from its 'max_running_request is zero' assert to
    its 'Memory pool size is too small' one (after the pools it allocates)."""
    return _span(body, lambda text: "max_running_request is zero" in text)


def _statements(function, kept, self, namespace):
    """Runs the top-level statements of `function` (the release's own source) that `kept` selects from its body, in
    their order, with `self` bound and the function's module globals."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    body = kept(tree.body[0].body)
    code = compile(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[])), inspect.getfile(function), "exec")
    exec(code, {**namespace, "self": self})  # noqa: S102 (SGLang's own statements)


class _MetaTorch(types.ModuleType):
    """memory_pool's `torch` (0.5.2-0.5.8): torch itself, but a tensor factory given a device builds on the meta
    device (see MOCKS)."""

    def __init__(self):
        super().__init__("torch")

    def __getattr__(self, name):
        value = getattr(torch, name)
        if name in ("zeros", "empty", "ones", "full", "arange", "zeros_like", "empty_like") and callable(value):
            return lambda *a, **k: value(*a, **{**k, **({"device": "meta"} if "device" in k else {})})
        return value


def _bags(sa):
    """Where the sizing reads the model, schedule and speculative settings: runtime_context's config bags from 0.5.17
    (a bag lacks a leaf its release does not have: 0.5.17's spec bag has no speculative_draft_kv_cache_dtype, which
    its configure_kv_cache_dtype does not take either); 0.5.16 reads them, and writes the state pool's size, on
    ServerArgs itself."""
    try:
        from sglang.srt.runtime_context import get_model, get_schedule, get_spec
    except ImportError:
        return sa, sa, sa
    return get_model(), get_schedule(), get_spec()


def _hand_set_widths(parallel, tp, dp, world):
    """0.5.16-0.5.18's ParallelContext answers every width and rank from the live process groups, which do not exist here:
    each is set through its own `override` (entered for the rest of the forked case), as TP rank 0 of the case's PP
    stage (`STAGE`) of a TP-`tp` run with attention DP `dp` (1: none) and without CP, DCP, EP or MoE DP; the attention
    widths come from SGLang's own compute_dp_attention_world_info (`_attention_world`), as initialize_dp_attention
    derives them (see MOCKS)."""
    attn_tp_rank, attn_tp_size, attn_dp_rank, attn_dp_size = _attention_world(tp, dp)
    from sglang.srt import runtime_context

    widths = dict(
        world_size=tp * STAGE["size"], world_rank=tp * STAGE["rank"], tp_size=tp, tp_rank=0, pp_size=STAGE["size"],
        pp_rank=STAGE["rank"], moe_ep_size=1, moe_ep_rank=0,
        moe_dp_size=1, moe_dp_rank=0, moe_tp_size=tp, moe_tp_rank=0, attn_tp_size=attn_tp_size,
        attn_tp_rank=attn_tp_rank, attn_cp_size=1, attn_cp_rank=0, dcp_enabled=False, dcp_size=1, dcp_rank=0,
        attn_dcp_size=1, attn_dcp_rank=0, attn_dp_size=attn_dp_size, attn_dp_rank=attn_dp_rank, world_group=world,
        tp_group=None, pp_group=_pp_group(), moe_ep_group=None, moe_dp_group=None, moe_tp_group=None, attn_tp_group=None,
        attn_cp_group=None, dcp_group=None)
    # the release's own fields (0.5.15 has no decode context parallel)
    held = parallel.override(**{k: v for k, v in widths.items() if k in runtime_context._PARALLEL_FIELDS})
    held.__enter__()
    _HELD.append(held)  # a generator context: dropped, it would exit and restore the live reads


_HELD: list = []


def _model_stand_in(model_config):
    """What configure_kv_cache_dtype reads of the loaded model: its `quant_config` (the model classes keep the one
    the loader gives them), built by SGLang's own loader function from the checkpoint's quantization files, as
    ModelRunner's loader does before it builds the model (see MOCKS)."""
    if model_config.quantization is None:
        return types.SimpleNamespace(quant_config=None)
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.model_loader.loader import _get_quantization_config

    args = (model_config, LoadConfig())
    if "packed_modules_mapping" in inspect.signature(_get_quantization_config).parameters:
        # 0.5.2-0.5.8: the loader passes the model class's packed_modules_mapping too (loader.py _initialize_model)
        from sglang.srt.model_loader.utils import get_model_architecture

        args += (getattr(get_model_architecture(model_config)[0], "packed_modules_mapping", {}),)
    fake = torch.cuda.get_device_capability
    if _GPU["name"] in CUDA_CAPABILITY:  # the card's own capability for the loader's check (MOCKS)
        torch.cuda.get_device_capability = lambda *a, **k: CUDA_CAPABILITY[_GPU["name"]]
    try:
        return types.SimpleNamespace(quant_config=_get_quantization_config(*args))
    finally:
        torch.cuda.get_device_capability = fake


def _tp_groups(tp, dp):
    """parallel_state's TP and attention-TP groups (where the release has the latter) as stand-ins of TP rank 0 of a
    TP-`tp` run with attention DP `dp` (1: none), their widths and ranks from `_attention_world` (see MOCKS)."""
    from sglang.srt.distributed import parallel_state

    attn_tp_rank, attn_tp_size = _attention_world(tp, dp)[:2]
    if hasattr(parallel_state, "_ATTN_TP"):
        parallel_state._ATTN_TP = types.SimpleNamespace(world_size=attn_tp_size, rank_in_group=attn_tp_rank)
    parallel_state._TP = types.SimpleNamespace(world_size=tp, rank_in_group=0)


def _parallel_state(tp, dp):
    """0.5.16-0.5.20's ParallelState of TP rank 0 of the case's PP stage (`STAGE`) of a TP-`tp` run with attention DP
    `dp` (1: none), its attention widths from `_attention_world`."""
    from sglang.srt.distributed.parallel_state_wrapper import ParallelState

    attn_tp_rank, attn_tp_size, attn_dp_rank, attn_dp_size = _attention_world(tp, dp)
    return ParallelState.trivial(tp_size=tp, attn_tp_rank=attn_tp_rank, attn_tp_size=attn_tp_size,
                                 attn_dp_rank=attn_dp_rank, attn_dp_size=attn_dp_size, pp_rank=STAGE["rank"],
                                 pp_size=STAGE["size"])


def _attn_dp(cfg) -> int:
    """The attention-DP width of the resolved server args: 0.5.23's attn_dp_size (arg_groups/parallel_hook.py
    handle_deprecated_dp_attention moves `--dp-size N --enable-dp-attention` there), before it dp_size under
    enable_dp_attention, else 1."""
    if hasattr(cfg, "attn_dp_size"):
        return cfg.attn_dp_size
    return cfg.dp_size if cfg.enable_dp_attention else 1


def _attention_world(tp, dp):
    """(attn_tp_rank, attn_tp_size, attn_dp_rank, attn_dp_size) of TP rank 0 with attention DP `dp` (1: none), from
    SGLang's own layers/dp_attention.py compute_dp_attention_world_info as initialize_dp_attention calls it: 0.5.23's
    takes the attention-DP width alone, earlier ones (enable_dp_attention, ..., dp_size); 0.5.2-0.5.8's returns no
    attn_dp_size."""
    from sglang.srt.layers.dp_attention import compute_dp_attention_world_info as world_info

    flagged = "enable_dp_attention" in inspect.signature(world_info).parameters
    ranks = world_info(dp > 1, 0, tp, dp) if flagged else world_info(0, tp, dp)
    return (*ranks[:3], dp)


def _pool_bytes(kvc, config):
    """Builds the pools as init_memory_pool does, on the meta device: the constructors log their
    "Mamba Cache is allocated" / "KV Cache is allocated" lines and the tensors carry their sizes, no memory."""
    out = {"mamba_cache_bytes": None, "kv_cache_bytes": None, "pool_error": None}
    try:
        kvc.device = "meta"
        sizes = kvc._derive_pool_sizes(config=config)
        pools = kvc._init_pools(sizes=sizes, req_to_token_pool=None, token_to_kv_pool_allocator=None)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        out["pool_error"] = f"{type(e).__name__}: {e}"
        if os.environ.get("ORACLE_DEBUG"):
            traceback.print_exc()
        return out
    kv = pools.token_to_kv_pool
    full = getattr(kv, "full_kv_pool", kv)
    try:
        size = full.get_kv_size_bytes()  # (K, V) for MHA pools, one figure for MLA
        out["kv_cache_bytes"] = int(sum(size)) if isinstance(size, (tuple, list)) else int(size)
    except Exception as e:  # noqa: BLE001
        out["pool_error"] = f"kv size: {type(e).__name__}: {e}"
    mamba = getattr(pools.req_to_token_pool, "mamba_pool", None)
    if mamba is not None:
        total = 0
        for t in _tensors(mamba.mamba_cache):
            total += t.numel() * t.element_size()
        out["mamba_cache_bytes"] = total
    return out


def _tensors(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x, seen)
    elif hasattr(obj, "__dataclass_fields__"):
        for k in obj.__dataclass_fields__:
            yield from _tensors(getattr(obj, k), seen)


def header():
    import importlib.metadata as md

    return {"torch": torch.__version__, "transformers": md.version("transformers"), "sglang": md.version("sglang"),
            "mocks": MOCKS, "stubs": list(STUBS)}


def main():
    if sys.argv[1] == "--header":
        print(json.dumps(header()))
        return
    cases = json.loads(Path(sys.argv[1]).read_text())["cases"]
    # Import once, then fork a child per case: SGLang keeps process-wide state (runtime context, memoized configs,
    # env-derived globals), and a case must not see the one before it.
    import sglang  # noqa: F401

    _without_torchvision_registries()
    _fake_nvidia_smi()
    _fake_rocminfo()
    importlib.import_module(SIZER)  # 0.5.16 on: the KV-cache configurator; before, the model runner's mixin
    import sglang.srt.model_loader.utils  # noqa: F401
    import sglang.srt.server_args  # noqa: F401
    from sglang.srt.models.registry import ModelRegistry

    ModelRegistry.get_supported_archs()  # imports every model module once (is_arch_supported from 0.5.21 does the same)
    torch.distributed.all_reduce = _all_reduce  # called only at PP > 1 (see MOCKS)
    with open(sys.argv[2], "w") as out:
        for i, case in enumerate(cases):
            out.write(json.dumps({"index": i, **_answer(case)}, sort_keys=True, default=str) + "\n")
            out.flush()


def _answer(case) -> dict:
    """{"result", "error"} of a case. At pp_size > 1 every stage runs twice (see MOCKS), each run in its own child: the
    result holds each stage's answer (`stages`, by rank) and the error is the first failing stage's."""
    size = case["flags"].get("pp_size", 1)
    if size == 1:
        return _in_child(case, 0, 1, None)
    first = [_in_child(case, rank, size, None) for rank in range(size)]
    failed = [a for a in first if a["error"] is not None and a["result"].get("sent_tokens") is None]
    if failed:  # a stage failed before the all-reduce: SGLang stops there
        return _stages(first, failed[0]["error"])
    smallest = min(a["result"]["sent_tokens"] for a in first)
    stages = [_in_child(case, rank, size, smallest) for rank in range(size)]
    return _stages(stages, next((a["error"] for a in stages if a["error"] is not None), None))


def _stages(answers: list[dict], error: str | None) -> dict:
    """A PP case's answer: each stage's result with its error, and the case's error."""
    return {"result": {"stages": [{**a["result"], "error": a["error"]} for a in answers]}, "error": error}


def _in_child(case, rank: int, size: int, min_tokens: int | None) -> dict:
    """run_case as PP stage `rank` of `size` in a forked child: SGLang keeps process-wide state (runtime context,
    memoized configs, env-derived globals), and a case (or a stage) must not see the one before it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        STAGE.update(rank=rank, size=size, min_tokens=min_tokens)
        try:
            result, error = run_case(case)
            line = json.dumps({"result": result, "error": error}, sort_keys=True, default=str)
        except BaseException as e:  # noqa: BLE001
            line = json.dumps({"result": {}, "error": f"{type(e).__name__}: {e}"})
        with os.fdopen(w, "w") as f:
            f.write(line)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        line = f.read()
    _, status = os.waitpid(pid, 0)
    return json.loads(line) if line else {"result": {}, "error": f"WorkerCrash: child exit status {status}"}


if __name__ == "__main__":
    main()
