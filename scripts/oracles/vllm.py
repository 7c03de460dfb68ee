"""Golden tables from vLLM's own code (issue 28): run vLLM's real config, layer and KV-cache sizing code on
every HF config in tests/data/hf_configs and write tests/data/engine_golden/vllm-X.Y.Z.json.gz (golden.py).

    python scripts/oracles/vllm.py --version 0.33.0            # makes /tmp/oracle-venvs/vllm-0.33.0, then runs
    python scripts/oracles/vllm.py --version 0.33.0 --limit 20 # a quick partial table
    python scripts/oracles/vllm.py --version 0.33.0 --config-dir tests/data/hf_configs_extra \
        --out tests/data/engine_golden/extra/vllm-0.33.0.json.gz    # the real configs the shared fixtures lack
    python scripts/oracles/vllm.py --version 0.33.0 --drafters  # DFlash drafters drafting for their targets
                                                                # (golden.DRAFTER_PAIRS): tests/data/engine_golden/drafters/

The outer run makes a throwaway venv (CPU torch, `vllm --no-deps`, only the pure-Python packages vLLM's config,
model and KV-cache modules import), then re-runs this file inside it with --worker. The worker, per case:
  1. EngineArgs(...).create_engine_config(UsageContext.OPENAI_API_SERVER): ModelConfig (max_model_len check, the
     per-model hooks of model_executor/models/config.py, mamba_cache_mode), CacheConfig, SchedulerConfig defaults.
  2. the model class built on the meta device (vllm.model_executor.model_loader.utils.initialize_model), which
     registers every attention / Mamba layer in the static forward context, as the GPU worker's load_model does.
  3. current_platform.update_block_size_for_backend (block-size alignment, mamba page padding), as the executor
     does after load_model.
  4. GPUModelRunner.get_kv_cache_spec (the layers' own get_kv_cache_spec + the backend's customize_spec).
  5. get_global_kv_cache_groups / get_kv_cache_configs with available memory = kv_cache_memory_bytes (what
     gpu_worker.determine_available_memory returns when that flag is set: 20 GiB, 60 GiB, 64 MiB and what one
     request at the max model length needs by every layer's spec, where the start-up checks of the releases part),
     generate_scheduler_kv_cache_config, update_kv_cache_capacity (the "GPU KV cache size" line), the block checks of
     VllmConfig.validate_block_size (0.18+, as EngineCore._initialize_kv_caches runs them), the max_num_seqs vs Mamba
     blocks check of CompilationConfig.resolve_cudagraph_mode_and_sizes.
With pipeline parallelism (PP_CONFIGS), steps 2 - 4 run once per PP rank (its own layers, get_pp_indices' split,
or VLLM_PP_LAYER_PARTITION's for PARTITION_CASES) and step 5 takes every worker's specs; the figures are worker
0's (the scheduler's; its "GPU KV cache size" line), with each PP stage's largest share of a KV-cache group
(stage_group_sizes).
Every vLLM log line emitted meanwhile is captured; a refusal is recorded as "ExceptionType: message".
Nothing of vLLM is copied here; the mocks (MOCKS below) only stand in for the GPU and the process groups.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

# This file is named vllm.py: keep its folder off sys.path so `import vllm` finds the engine, not this script.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

# The remote-code stand-in shared with the SGLang oracle, loaded by path (this folder is off sys.path)
_remote_spec = importlib.util.spec_from_file_location("oracle_remote_code", Path(__file__).with_name("remote_code.py"))
REMOTE = importlib.util.module_from_spec(_remote_spec)
_remote_spec.loader.exec_module(REMOTE)
_golden_spec = importlib.util.spec_from_file_location("oracle_golden", Path(__file__).with_name("golden.py"))
golden = importlib.util.module_from_spec(_golden_spec)  # the tables' files (this folder is off sys.path)
_golden_spec.loader.exec_module(golden)
ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"
DRAFTERS = golden.DRAFTER_CONFIGS  # DFlash drafters' configs (--drafters)
GIB = 1 << 30
MIB = 1 << 20
H200_BYTES = 143771140096  # what the platform stand-in answers for the device's memory
# The devices the platform stand-in can answer as (--device): driver name, CUDA capability, memory (mcache's catalogue
# figures), the FlashAttention versions vllm_flash_attn supports there. The default is the H200 every release table
# was made on; another device's tables carry its name and bytes (`device`), which the comparer sizes for.
DEVICES = {"h200": ("NVIDIA H200", (9, 0), H200_BYTES, (2, 3)),
           "rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), 97887 * MIB, (2,))}
DEVICE = DEVICES["h200"]  # the worker's (--device)

# What each vLLM version needs installed besides torch and vllm (--no-deps each, so pip never swaps torch).
# transformers is pinned inside the range the version's own requirements name.
VERSION_PINS = {
    # transformers: inside the range the wheel's METADATA names, at the newest minor out when the release was cut
    # (older vLLM ships its own config classes for the model types transformers did not know yet); torchvision:
    # the build for the venv's torch 2.13 (the only CPU torch this workplace has), whatever the release pinned
    **{v: {"transformers": "transformers>=4.55.2,<4.57", "compressed-tensors": "compressed-tensors==0.11.0",
           "torchvision": "torchvision==0.28.0"} for v in ("0.10.2", "0.11.0")},
    **{v: {"transformers": "transformers>=4.57.1,<5", "compressed-tensors": f"compressed-tensors=={ct}",
           "torchvision": "torchvision==0.28.0"}
       for v, ct in (("0.11.1", "0.12.2"), ("0.11.2", "0.12.2"), ("0.12.0", "0.12.2"), ("0.13.0", "0.12.2"),
                     ("0.14.0", "0.13.0"), ("0.14.1", "0.13.0"), ("0.15.0", "0.13.0"), ("0.15.1", "0.13.0"),
                     ("0.16.0", "0.13.0"), ("0.17.0", "0.13.0"), ("0.17.1", "0.13.0"), ("0.18.0", "0.13.0"),
                     ("0.18.1", "0.13.0"), ("0.19.0", "0.14.0.1"), ("0.19.1", "0.14.0.1"), ("0.20.0", "0.15.0.1"),
                     ("0.20.1", "0.15.0.1"), ("0.20.2", "0.15.0.1"), ("0.21.0", "0.15.0.1"))},
    # humming-kernels: 0.22.0's model_executor/layers/quantization/humming.py imports `humming` at module level on a
    # CUDA platform (later releases guard it), so every quantized checkpoint needs it; a pure-Python wheel that
    # vLLM 0.22.0 requires (humming-kernels[cu13]==0.1.2), with its own pure imports (HUMMING_DEPS)
    **{v: {"transformers": "transformers>=4.57.1,<5", "compressed-tensors": "compressed-tensors==0.15.0.1",
           "torchvision": "torchvision==0.28.0", "humming-kernels": "humming-kernels==0.1.2"} for v in ("0.22.0", "0.22.1")},
    "0.23.0": {"transformers": "transformers>=4.57.1,<5", "compressed-tensors": "compressed-tensors==0.17.0",
               "torchvision": "torchvision==0.28.0", "humming-kernels": "humming-kernels==0.1.4"},
    **{v: {"transformers": "transformers>=5.5.3,<5.8", "compressed-tensors": "compressed-tensors==0.17.0",
           "torchvision": "torchvision==0.28.0"} for v in ("0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1",
                                                               "0.28.0")},
    **{v: {"transformers": "transformers>=5.10.4,<5.16", "compressed-tensors": "compressed-tensors==0.17.0",
           "torchvision": "torchvision==0.28.0"} for v in ("0.29.0", "0.30.0")},
    "0.31.0": {"transformers": "transformers>=5.10.4,<5.18.0", "compressed-tensors": "compressed-tensors==0.17.0",
               "torchvision": "torchvision==0.28.0"},
    "0.32.0": {"transformers": "transformers>=5.16.1,<5.20.0", "compressed-tensors": "compressed-tensors==0.17.0",
               "torchvision": "torchvision==0.28.0"},
    # torchvision: the release built for the venv's torch (vLLM 0.33 pins 0.29.0 for torch 2.14); the Qwen3.5 /
    # Qwen3-VL model modules import transformers' image processors, which import it at module level
    "0.33.0": {"transformers": "transformers>=5.16.1,<5.21.0", "compressed-tensors": "compressed-tensors==0.17.0",
               "torchvision": "torchvision==0.28.0"},
    "0.34.0": {"transformers": "transformers>=5.16.1,<5.23.0", "compressed-tensors": "compressed-tensors==0.17.0",
               "torchvision": "torchvision==0.28.0"},
}
PURE_DEPS = ["pydantic", "regex", "cachetools", "psutil", "numpy", "requests", "tqdm", "huggingface_hub", "tokenizers",
             "safetensors", "msgspec", "pyyaml", "einops", "cloudpickle", "pybase64", "cbor2", "py-cpuinfo",
             "sentencepiece", "typing_extensions", "pyzmq", "aiohttp", "openai", "openai-harmony", "pillow", "uvloop",
             "prometheus_client", "fastapi", "partial-json-parser", "llguidance", "xgrammar", "loguru",
             # imported at module level by older releases (0.10 - 0.2x): vllm/utils, multimodal/hasher, the GGUF loader
             "setproctitle", "blake3", "frozendict", "gguf", "scipy", "protobuf", "numba",
             "diskcache", "mistral_common"]
HUMMING_DEPS = ["pyelftools", "tabulate", "nvidia-ml-py", "jinja2"]  # humming-kernels' pure-Python requirements

# Configs with pipeline-parallel cases (PP 2 and 3): hybrids whose stages hold the same mix of attention and Mamba
# layers (Jamba, Nemotron-H-8B, Qwen3-Next at PP 2) or different ones (Bamba: 1 and 2 attention layers, Kimi-Linear:
# 3 and 4 MLA layers), so a stage's own KV-cache groups and its share of the whole model's groups differ; LFM2-1.2B's
# 16 layers split 5 / 6 / 5 at PP 3 (get_pp_indices), where an even split's first stage would take the extra layer
# and the largest share be 2, not 3; Mamba2, whose class does not implement SupportsPP
PP_CONFIGS = ("bamba-9b.json", "jamba-v0.1.json", "kimi-linear-48b-a3b-instruct.json", "lfm2-1.2b.json",
              "mamba2-2.7b.json", "nemotron-h-8b-base-8k.json", "qwen3-next-80b-a3b.json")
# PP stages that lack a kind of cache layer, through VLLM_PP_LAYER_PARTITION (get_pp_indices): Nemotron-H-8B
# (hybrid_override_pattern "M-M-M-M*-M-...-M-") split 51 / 1 leaves the last stage only its last layer, an MLP (no
# KV-cache layer: that worker's layer specs are empty), and 7 / 45 the first stage 4 Mamba2 layers and no attention
PARTITION_CASES = {"nemotron-h-8b-base-8k.json": ("51,1", "7,45")}
# More fp8 KV keys (TP, prefix caching, drafts, SSM dtype) for the configs whose fp8 layout is a rule of its own
FP8_CASES = {"glm-5.3-flash-fp8.json": ((2, None, 0, "auto"), (4, None, 3, "auto"), (2, False, 7, "bfloat16"),
                                        (4, False, 0, "float32"), (1, True, 3, "bfloat16"))}

MOCKS = [
    "vllm's compiled CUDA extensions (vllm._C*, _moe_C, _flashmla_C, vllm_flash_attn._vllm_fa2_C/_vllm_fa3_C, ...) "
    "are empty stand-in modules and missing torch.ops._C* ops resolve to no-ops (register_fake on them is skipped): "
    "they are kernels, called only in forward passes, never by the sizing code",
    "current_platform is vLLM's own CudaPlatform with the device queries answered as one NVIDIA H200 (SM 9.0, "
    "143771140096 bytes, 8 devices) and current_device = meta: vLLM's own selector (platforms/cuda.py "
    "_get_backend_priorities for SM 9.x) then picks what an H200 picks: FLASH_ATTN for attention (kernel block 16), "
    "FLASH_ATTN_MLA for MLA, FlashInfer GDN prefill (chosen on capability 9.0 alone), and the API-server batch "
    "defaults; the page/block/group arithmetic is vLLM's own",
    "the layers are built under set_default_torch_dtype(model dtype), as BaseModelLoader.load_model does (Attention "
    "takes its dtype from torch.get_default_dtype(); built under float32 the selector refuses FlashAttention and "
    "falls back to TRITON_ATTN, which is what tables before this fix show)",
    "flashinfer is not installed: FLASHINFER / FLASHINFER_MLA are refused as unavailable. On SM 9.x they rank below "
    "FLASH_ATTN / FLASH_ATTN_MLA, which are valid here, so the choice does not change. Its SM 9.x sparse-MLA probe "
    "(utils/flashinfer.py has_flashinfer_sm90_nope_mla, 0.30+: a feature test of FlashInfer >= 0.6.18, which those "
    "releases pin) answers True, as it does on a GPU host with the pinned FlashInfer: a sparse NoPE MLA "
    "(GLM-5.3-Flash) takes FLASHINFER_MLA_SPARSE_SM90 first, as the public 8x H100 boot did, with a bf16 or an fp8 "
    "KV cache; the probe is that backend's only reader, and its spec code is vLLM's own",
    "nvidia-cutlass-dsl (`cutlass...`) and cuda-python (`cuda.bindings...`), installed with vLLM on a GPU host, are "
    "stand-in packages whose names are classes: kernel DSLs imported at module level (vllm/cute_utils, the KDA and "
    "CuTe kernels), never called while sizing; so is tilelang (GLM-5.3-Flash's mHC kernels, imported for their JIT "
    "warmup), and the vendored DeepGEMM extension (vllm.third_party.deep_gemm._C*) is a stub package, which "
    "GLM-5.3-Flash's sparse indexer requires to be importable on CUDA (a kernel, never called while sizing)",
    "vllm_flash_attn.is_fa_version_supported answers FA2/FA3 supported (what it answers on an H200; FA2 alone on SM 12)",
    "--device rtx-pro-6000 (the tables under tests/data/engine_golden/indexer/rtx-pro-6000/): the platform stand-in "
    "answers as an RTX PRO 6000 Blackwell (SM 12.0, 97887 MiB) instead, and the SM 12 sparse-MLA probe "
    "(utils/flashinfer.py has_flashinfer_sparse_mla_sm120, a feature test of the pinned FlashInfer's SM 120 decode "
    "API) answers True as there: FLASHINFER_MLA_SPARSE_SM120 is what such a card picks for a sparse MLA",
    "CUDA_VISIBLE_DEVICES='' so vLLM keeps the installed Triton decorators (its 'distributed env' path); no kernel "
    "is compiled or launched",
    "torch.cuda.Stream/Event are inert objects (auxiliary streams made at layer construction, unused here)",
    "torch.cuda.current_device() answers the meta device the layers are built on (0.10's Qwen3-Next GatedDeltaNet "
    "builds its gated norm's weight there; a weight, never a cache)",
    "registry._run_in_subprocess runs the model-class inspection in-process (so the stand-ins above apply there)",
    "while the model is built, a tensor asked for on the CUDA device (device='cuda', as device_config.device says "
    "on a GPU) is made on the meta device (cuda_to_meta): 0.28 - 0.29's Transformers backend allocates the "
    "parameters it did not replace there (models/transformers/base.py init_parameters); weights, never a cache",
    "the tensor/pipeline/expert/data-parallel groups are stand-ins with world_size = tensor_parallel_size (TP), "
    "pipeline_parallel_size (PP) or 1 (others): layers read only their size and rank to shard heads; TP rank 0's "
    "specs equal every TP rank's. With PP the model is built once per PP rank (that rank in the PP group, "
    "is_first_rank / is_last_rank set), so make_layers' get_pp_indices places PPMissingLayer outside the rank's "
    "layers and each rank's forward context (hence get_kv_cache_spec) holds only its own layers, as on its GPU; the "
    "workers' specs go to the planning functions in the executor's order (rank = pp_rank x TP + tp_rank), every "
    "worker with the same available memory",
    "the model is built on the meta device and never loaded (load_format dummy, skip_tokenizer_init)",
    "distributed_executor_backend is 'mp' (what one node with enough GPUs picks; ParallelConfig of 0.10 counts "
    "the CUDA devices itself, finds none here and would ask for Ray); the executor is never started",
    "CompilationConfig.resolve_cudagraph_mode_and_sizes gets min_cg_support=ALWAYS (the runner would take it from "
    "the attention builders); it is called only for its max_num_seqs vs Mamba blocks check",
    "torchvision is the PyPI wheel for the venv's torch, --no-deps: its compiled ops do not load against the CPU "
    "torch (its register_fake calls fail and are skipped); only its Python modules are imported, by transformers' "
    "image processors, which Qwen3.5 / Qwen3.6 model modules import and sizing never calls",
    "speculative decoding: a config that declares MTP layers (mtp_num_hidden_layers / num_nextn_predict_layers, "
    "or Qwen3-Next, whose checkpoints ship one) drafts with --speculative-config {method: mtp, "
    "num_speculative_tokens: k}: SpeculativeConfig builds the draft model config from the same checkpoint and the "
    "drafter is built on the meta device as the GPU runner's EagleProposer.load_model builds it (get_model -> "
    "initialize_model on the release's draft VllmConfig, under the 'eagle_head' model tag; the layers it adds are "
    "marked is_draft_layer as load_model marks them; on the meta device as the model is, cuda_to_meta too: "
    "GLM-5.3-Flash's MTP layer allocates a top-k buffer on device='cuda'); weights are never loaded. Other configs draft with 'ngram' "
    "(no draft model); the Mamba specs take num_speculative_tokens from the VllmConfig with any method",
    REMOTE.MOCK.format(engine="vLLM"),
    "models/nano_nemotron_vl.py's cached_tokenizer_from_config answers a tokenizer that encodes nothing: "
    "NemotronH_Nano_VL_V2.__init__ pre-tokenizes its image tokens (token ids for the forward pass, never a size), "
    "and skip_tokenizer_init leaves it None",
    "0.23.0: layers/minimax_rms_norm/lamport_workspace.py get_allreduce_workspace answers None: MiniMax-Text-01's TP "
    "RMSNorm (rms_norm_tp.py) allocates its fused all-reduce's Lamport workspace there through cuda-python's "
    "cudaMalloc at TP > 1, a communication buffer, never a cache",
]

# The stand-ins of the 0.34+ GPU runner (`v2_runner`), in the tables of those releases only (an older table's run is
# unchanged)
MOCKS_V2_RUNNER = [
    "0.34+: the worker's spec call (v1/worker/gpu/model_runner.py GPUModelRunner.get_kv_cache_spec, which calls "
    "attn_utils.get_kv_cache_spec(vllm_config)) runs on a stand-in runner with speculator None and dcp_size 1: its "
    "only branch of its own makes a DraftModelSpeculator's draft specs dcp_sharded=False under decode context "
    "parallelism, which no case has (MTP drafts with MTPSpeculator, DCP is 1); the page and block arithmetic is the "
    "layers' own",
    "0.34+: quack-kernels (`quack...`), a CuTe-DSL kernel package vLLM 0.34 requires (quack-kernels==0.6.5, on "
    "nvidia-cutlass-dsl), is a stand-in package like cutlass: imported at module level by the CuTe-DSL kernels (GDN "
    "chunked prefill, MoE router GEMMs), never called while sizing",
    "0.34+: the MTP drafter is built on the target's VllmConfig with SpeculativeConfig.apply_draft_overrides, as "
    "v1/worker/gpu/spec_decode/eagle/utils.py load_eagle_model derives it (the v1 proposers of 0.2x - 0.33 are gone); "
    "weights are never loaded",
]

# --trust-remote-code's stand-in configuration class, shared with the SGLang oracle (scripts/oracles/remote_code.py)


# ----------------------------------------------------------------------------------------------------------------
# outer: the venv


def ensure_venv(version: str, root: Path) -> Path:
    venv = root / f"vllm-{version}"
    py = venv / "bin" / "python"
    stamp = venv / ".oracle-ready"
    if stamp.exists():
        return py
    pins = VERSION_PINS.get(version)
    if pins is None:
        sys.exit(f"no pins for vLLM {version}: add VERSION_PINS[{version!r}] from its requirements")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["torch==2.13.0"], check=True)  # the CPU wheel; never a CUDA one
    subprocess.run(pip + ["--no-deps", f"vllm=={version}"], check=True)
    subprocess.run(pip + [pins["transformers"], *PURE_DEPS, *(HUMMING_DEPS if "humming-kernels" in pins else [])],
                   check=True)
    for name, spec in pins.items():
        if name not in ("transformers", "torch"):
            subprocess.run(pip + ["--no-deps", spec], check=True)
    out = subprocess.run([str(py), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    if "+cpu" not in out.stdout and "cpu" not in out.stdout:
        sys.exit(f"the venv's torch is not the CPU build: {out.stdout!r}")
    stamp.write_text("ok\n")
    return py


# ----------------------------------------------------------------------------------------------------------------
# cases


def config_names() -> list[str]:
    names = sorted(p.name for p in CONFIGS.glob("*.json"))
    names += sorted(p.name for p in CONFIGS.iterdir() if p.is_dir() and (p / "config.json").exists())
    return names


def length_limit(cfg: dict) -> int | None:
    text = cfg.get("text_config") or {}
    for src in (cfg, text):
        for key in ("max_position_embeddings", "max_sequence_length", "seq_length", "model_max_length", "n_ctx"):
            if isinstance(src.get(key), int):
                return src[key]
    return None


def load_config(name: str) -> dict:
    path = CONFIGS / name
    return json.loads((path / "config.json" if path.is_dir() else path).read_text())


def drafter_builds() -> list[dict]:
    """Build keys of the --drafters table: each golden.DRAFTER_PAIRS drafter drafting 5, 7 or 15 tokens at TP 1 / 2 / 4 with
    prefix caching off, on (align mode) or the release's default, and fp8 KV once."""
    out = []
    for config, drafter in golden.DRAFTER_PAIRS:
        for tp, prefix, drafts, kv in ((1, None, 15, "auto"), (2, True, 5, "auto"), (2, False, 7, "auto"),
                                       (4, True, 15, "auto"), (1, True, 7, "fp8")):
            out.append(dict(config=config, drafter=drafter, tp=tp, prefix=prefix, mamba_cache_mode=None,
                            num_speculative_tokens=drafts, mamba_ssm_cache_dtype="auto", kv_cache_dtype=kv))
    return out


def builds(seed: int = 28) -> list[dict]:
    """Build keys (everything that changes the model's layers or the cache config apart from length and memory):
    every config x TP 1/2/4 at the defaults, then a seeded covering sample of the other axes for each config."""
    rng = random.Random(seed)
    axes = {
        "prefix": [None, True, False],
        "mamba_cache_mode": [None, "none", "align", "all"],
        "num_speculative_tokens": [0, 3, 7],
        "mamba_ssm_cache_dtype": ["auto", "float32", "bfloat16"],
        "kv_cache_dtype": ["auto", "fp8"],
    }
    out = []
    for name in config_names():
        keys = [dict(config=name, tp=tp, prefix=None, mamba_cache_mode=None, num_speculative_tokens=0,
                     mamba_ssm_cache_dtype="auto", kv_cache_dtype="auto") for tp in (1, 2, 4)]
        # each value of each axis at least once per config (pairs with TP rotating), then random extras
        for axis, values in axes.items():
            for i, value in enumerate(values):
                key = dict(keys[0], tp=(1, 2, 4)[(i + len(axis)) % 3])
                key[axis] = value
                if axis == "mamba_cache_mode" and value not in (None, "none"):
                    key["prefix"] = True
                keys.append(key)
        for _ in range(1):
            keys.append(dict(config=name, tp=rng.choice((1, 2, 4)), **{a: rng.choice(v) for a, v in axes.items()}))
        seen = set()
        for key in keys:
            sig = json.dumps(key, sort_keys=True)
            if sig not in seen:
                seen.add(sig)
                out.append(key)
    # pipeline parallel: PP 2 x TP 1 / 2 at the defaults and with prefix caching, and PP 3 x TP 1 (get_pp_indices
    # gives an uneven split's extra layers to the stages before the last), for the configs whose stages hold
    # different layer mixes; after every other key, so adding them moves no other key's index or lengths
    for name in config_names():
        if name in PP_CONFIGS:
            out += [dict(config=name, tp=tp, pp=pp, prefix=prefix, mamba_cache_mode=None, num_speculative_tokens=0,
                         mamba_ssm_cache_dtype="auto", kv_cache_dtype="auto")
                    for pp, tp, prefix in ((2, 1, None), (2, 1, True), (2, 2, None), (2, 2, True), (3, 1, None))]
    # the given PP splits (PARTITION_CASES), at TP 1 and 2, without and with prefix caching; last, so no other key
    # moves
    for name in config_names():
        out += [dict(config=name, tp=tp, pp=2, pp_partition=partition, prefix=prefix, mamba_cache_mode=None,
                     num_speculative_tokens=0, mamba_ssm_cache_dtype="auto", kv_cache_dtype="auto")
                for partition in PARTITION_CASES.get(name, ()) for tp, prefix in ((1, None), (2, True))]
    # align mode with the 2048 tokens a step of a GPU under 70 GiB (the oracle's devices take 8192), at TP 2, where a
    # hybrid block may outgrow a step (0.17 - 0.26 assert it does not); after every other key but FP8_CASES'
    for name in config_names():
        out.append(dict(config=name, tp=2, prefix=True, mamba_cache_mode="align", num_speculative_tokens=0,
                        mamba_ssm_cache_dtype="auto", kv_cache_dtype="auto", max_num_batched_tokens=2048))
    # a DSA model's fp8 KV cache (FLASHINFER_MLA_SPARSE_SM90's E4M3 rows) beside drafts, prefix caching off and a bf16
    # state, at each TP (the covering sample above gives it one fp8 key); after every other key
    for name in config_names():
        out += [dict(config=name, tp=tp, prefix=prefix, mamba_cache_mode=None, num_speculative_tokens=k,
                     mamba_ssm_cache_dtype=ssm, kv_cache_dtype="fp8")
                for tp, prefix, k, ssm in FP8_CASES.get(name, ())]
    return out


# ----------------------------------------------------------------------------------------------------------------
# worker (inside the venv)


def install_mocks():
    import importlib.abc
    import importlib.machinery
    import re
    import types

    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO")

    class Dummy:
        def __getattr__(self, n):
            return Dummy()

        def __call__(self, *a, **k):
            return Dummy()

    class StubModule(types.ModuleType):
        def __getattr__(self, n):
            if n.startswith("__"):
                raise AttributeError(n)
            return Dummy()

    class StandInType(type):
        # a name from a stand-in kernel package is a class (others test isinstance against them, e.g. tvm_ffi
        # against cuda.bindings.driver.CUstream, subclass them, or subscript them); calling or reading through one
        # gives another
        def __getattr__(cls, n):
            if n.startswith("__"):
                raise AttributeError(n)
            return StandInType(n, (), {})

        def __call__(cls, *a, **k):
            return StandInType("call", (), {})

        def __getitem__(cls, item):
            return StandInType("item", (), {})

    class KernelPkg(types.ModuleType):
        def __getattr__(self, n):
            if n.startswith("__"):
                raise AttributeError(n)
            return StandInType(n, (), {})

    pattern = re.compile(r"^vllm\.(_C\w*|_\w+_C\w*|\w+_C|cumem_allocator|spinloop|vllm_flash_attn\._vllm_fa[23]_C)$")
    # the vendored DeepGEMM extension (0.31: vllm/third_party/deep_gemm/_C*.so; 0.33: _C.py over _C_extension.abi3.so,
    # with _C.locality_domain), which has_deep_gemm() imports and GLM-5.3-Flash's sparse indexer requires on CUDA
    # (SparseAttnIndexerKpool: "requires DeepGEMM"), as a stand-in package of stub modules (nothing sized reads it)
    deep_gemm_ext = re.compile(r"^vllm\.third_party\.deep_gemm\._C(\..+)?$")

    # nvidia-cutlass-dsl (`cutlass`, `cutlass.cute`, `cutlass._mlir...`) is a kernel DSL that vLLM imports at module
    # level in vllm/cute_utils and some backends (KDA, FlashAttention's CuTe paths); it is not installed here (its
    # wheel is CUDA-only) and nothing of it is called while sizing, so it is a stand-in package like the extensions;
    # so is cuda-python (`cuda.bindings.driver`, imported beside it for the CuTe kernels' stream type). Both are
    # installed with vLLM 0.33 on a GPU host (nvidia-cutlass-dsl[cu13] is in its requirements), so find_spec finding
    # them answers as it would there.
    # tilelang too: GLM-5.3-Flash's decoder layers import the mHC TileLang kernels for their JIT warmup
    # (model_executor/kernels/mhc, 0.30 - 0.33; vLLM requires tilelang on CUDA)
    kernel_pkgs = re.compile(r"^(cutlass|cuda|tilelang)(\..+)?$")
    if quack_required():  # 0.34+: quack-kernels, the same kind of CuTe-DSL kernel package (MOCKS_V2_RUNNER)
        kernel_pkgs = re.compile(r"^(cutlass|cuda|quack|tilelang)(\..+)?$")

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if pattern.match(name):
                return importlib.machinery.ModuleSpec(name, self)
            if deep_gemm_ext.match(name):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            if kernel_pkgs.match(name):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            if deep_gemm_ext.match(spec.name):
                module = StubModule(spec.name)
                module.__path__ = []
                return module
            if kernel_pkgs.match(spec.name):
                module = KernelPkg(spec.name)
                module.__path__ = []
                return module
            return StubModule(spec.name)

        def exec_module(self, m):
            pass

    sys.meta_path.insert(0, Finder())

    import torch
    import torch._ops as tops
    import torch.library as tl

    orig_getattr = tops._OpNamespace.__getattr__

    def ns_getattr(self, op_name):
        try:
            return orig_getattr(self, op_name)
        except AttributeError:
            if "_C" in self.name:
                return Dummy()
            raise

    tops._OpNamespace.__getattr__ = ns_getattr
    orig_rf = tl.register_fake

    def register_fake(op, fn=None, /, **kw):
        def wrap(f):
            try:
                return orig_rf(op, f, **kw)
            except Exception:
                return f
        return wrap if fn is None else wrap(fn)

    tl.register_fake = register_fake
    tl.impl_abstract = register_fake
    orig_infer = tl.infer_schema

    def infer_schema(fn, *a, **k):
        # older vLLM (0.10) registers custom ops whose defaults come from a _C query (e.g.
        # cutlass_block_fp8_supported = CUTLASS_BLOCK_FP8_SUPPORTED); with the stand-in ops that default is a Dummy,
        # which torch's schema inference refuses: give it False, as a GPU without the kernel answers
        defaults = getattr(fn, "__defaults__", None)
        if defaults and any(isinstance(d, Dummy) for d in defaults):
            fixed = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__,
                                       tuple(False if isinstance(d, Dummy) else d for d in defaults), fn.__closure__)
            fixed.__annotations__ = fn.__annotations__
            fixed.__kwdefaults__ = fn.__kwdefaults__
            fn = fixed
        return orig_infer(fn, *a, **k)

    tl.infer_schema = infer_schema

    class Inert:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, n):
            return lambda *a, **k: None

    torch.cuda.Stream = Inert
    torch.cuda.Event = Inert
    # the GPU worker's current device; 0.10's Qwen3-Next GatedDeltaNet builds its gated norm's weight on
    # torch.cuda.current_device() (a weight, never a cache): here the meta device the layers are built on
    torch.cuda.current_device = lambda: torch.device("meta")

    import vllm.platforms as platforms
    from vllm.platforms.cuda import CudaPlatform
    from vllm.platforms.interface import DeviceCapability

    name, (major, minor), total, fa_versions = DEVICE

    class Device(CudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id=0):
            return DeviceCapability(major, minor)

        @classmethod
        def device_count(cls):
            return 8

        @classmethod
        def get_device_name(cls, device_id=0):
            return name

        @classmethod
        def get_device_total_memory(cls, device_id=0):
            return total

        @classmethod
        def current_device(cls):
            return torch.device("meta")

    platforms._current_platform = Device()
    import vllm.vllm_flash_attn.flash_attn_interface as fai

    fai.is_fa_version_supported = lambda v, device=None: v in fa_versions
    fai.fa_version_unsupported_reason = lambda v, device=None: None
    with contextlib.suppress(ImportError):  # 0.30+: the pinned FlashInfer's SM 9.x sparse-MLA feature (see MOCKS)
        import vllm.utils.flashinfer as vllm_flashinfer

        if hasattr(vllm_flashinfer, "has_flashinfer_sm90_nope_mla"):
            vllm_flashinfer.has_flashinfer_sm90_nope_mla = lambda: True
        if major == 12 and hasattr(vllm_flashinfer, "has_flashinfer_sparse_mla_sm120"):
            vllm_flashinfer.has_flashinfer_sparse_mla_sm120 = lambda: True
    import vllm.model_executor.models.registry as registry

    registry._run_in_subprocess = lambda fn: fn()

    class NoTokens:  # a tokenizer that encodes nothing (see MOCKS)
        def encode(self, text, **kw):
            return []

    with contextlib.suppress(ImportError):  # releases without the module (0.10.2 registers only the v1 class there)
        import vllm.model_executor.models.nano_nemotron_vl as nano

        if hasattr(nano, "cached_tokenizer_from_config"):
            nano.cached_tokenizer_from_config = lambda *a, **k: NoTokens()

    with contextlib.suppress(ImportError):  # 0.23.0's module (MiniMax-Text-01's TP norm); no other release has it
        import vllm.model_executor.layers.minimax_rms_norm.lamport_workspace as lamport

        lamport.get_allreduce_workspace = lambda *a, **k: None  # a communication buffer (see MOCKS)


class PG:
    def __init__(self, n):
        self.n = n

    def size(self):
        return self.n

    def rank(self):
        return 0


class FakeGroup:
    def __init__(self, n, rank=0):
        self.world_size, self.rank_in_group, self.rank, self.local_rank = n, rank, rank, rank
        self.is_first_rank, self.is_last_rank = rank == 0, rank == n - 1
        self.ranks = list(range(n))
        self.device_group, self.cpu_group = PG(n), PG(n)
        self.unique_name = "oracle"

    def size(self):
        return self.world_size


def set_groups(tp: int, pp: int = 1, pp_rank: int = 0):
    import vllm.distributed.parallel_state as ps

    for name in ("_DCP", "_PCP", "_EP", "_DP", "_EPLB", "_ETP", "_ENGRAM_DP", "_INNER_DP_WORLD"):
        if hasattr(ps, name):
            setattr(ps, name, FakeGroup(1))
    ps._PP = FakeGroup(pp, pp_rank)
    ps._TP = FakeGroup(tp)
    ps._WORLD = FakeGroup(tp * pp)


class Capture:
    """Collects the records of the vllm loggers."""

    def __init__(self):
        import logging

        self.lines: list[str] = []
        orig = logging.Logger.callHandlers

        # vLLM re-applies its logging dictConfig, which drops foreign handlers; hook the dispatch instead
        def call_handlers(logger, record):
            if record.name.startswith("vllm") and record.levelno >= logging.INFO:
                with contextlib.suppress(Exception):  # a record whose arguments do not format
                    self.lines.append(record.getMessage())
            return orig(logger, record)

        logging.Logger.callHandlers = call_handlers

    def take(self) -> list[str]:
        lines = list(self.lines)
        self.lines.clear()
        return lines


SIZING_WORDS = ("block size", "page size", "mamba", "Mamba", "KV cache", "kv cache", "kv-cache", "max model len",
                "max_model_len", "padding", "Padding", "concurrency", "ssm", "fp8", "FP8", "Using max model len",
                "prefix caching", "Prefix caching", "max_num_seqs", "max_num_batched_tokens", "backend")


def dtype_name(value) -> str | None:
    if value is None:
        return None
    return str(value).replace("torch.", "")


def engine_args(key: dict, model_dir: str, max_len: int | None, memory: int):
    from vllm.engine.arg_utils import EngineArgs

    kw = dict(model=model_dir, tensor_parallel_size=key["tp"], pipeline_parallel_size=key.get("pp", 1),
              kv_cache_memory_bytes=memory,
              skip_tokenizer_init=True, load_format="dummy", distributed_executor_backend="mp", trust_remote_code=True,
              mamba_ssm_cache_dtype=key["mamba_ssm_cache_dtype"],
              kv_cache_dtype=key["kv_cache_dtype"])
    if max_len is not None:
        kw["max_model_len"] = max_len
    if key["prefix"] is not None:
        kw["enable_prefix_caching"] = key["prefix"]
    if key["mamba_cache_mode"] is not None:
        kw["mamba_cache_mode"] = key["mamba_cache_mode"]
    if key.get("max_num_batched_tokens"):
        kw["max_num_batched_tokens"] = key["max_num_batched_tokens"]
    if key.get("drafter"):  # run_build copied its config into a folder of its own
        kw["speculative_config"] = {"method": "dflash", "model": key["drafter_dir"],
                                    "num_speculative_tokens": key["num_speculative_tokens"]}
    elif key["num_speculative_tokens"] and has_mtp(cfg := load_config(key["config"])):
        kw["speculative_config"] = {"method": mtp_method(cfg), "num_speculative_tokens": key["num_speculative_tokens"]}
    elif key["num_speculative_tokens"]:
        kw["speculative_config"] = {"method": "ngram", "num_speculative_tokens": key["num_speculative_tokens"],
                                    "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    return EngineArgs(**kw)


# Model types whose config declares MTP layers that vLLM's model class neither builds nor loads, so a user drafts with
# n-gram lookup (models/minicpmv4_6.py, v0.24.0 - v0.34.0: MiniCPMV4_6ForConditionalGeneration builds Qwen3_5ForCausalLM
# alone and drops `mtp.` weights; asking it for 'mtp' builds a drafter whose layers collide with the model's)
NO_MTP_TYPES = ("minicpmv4_6",)


def has_mtp(cfg: dict) -> bool:
    """Whether the checkpoint carries MTP layers a user drafts with (`--speculative-config '{"method": "mtp"}'`): the
    config declares them (but `NO_MTP_TYPES`), or it is Qwen3-Next, whose checkpoints ship one and whose config declares
    none (vLLM's Qwen3-Next MTP model reads num_nextn_predict_layers, default 1)."""
    if cfg.get("model_type") in NO_MTP_TYPES:
        return False
    for src in (cfg, cfg.get("text_config") or {}):
        if any(isinstance(src.get(k), int) and src[k] > 0 for k in ("mtp_num_hidden_layers", "num_nextn_predict_layers")):
            return True
    return cfg.get("model_type") == "qwen3_next"


def mtp_method(cfg: dict) -> str:
    """The --speculative-config method a user of the release asks for MTP: 'mtp' where SpeculativeMethod has it, else
    the model's own (0.10: 'qwen3_next_mtp', which SpeculativeConfig also resolves 'mtp'-less checkpoints to)."""
    import typing

    try:
        from vllm.config.speculative import SpeculativeMethod
    except ImportError:  # 0.10
        from vllm.config import SpeculativeMethod

    def names(tp) -> set:
        return {a for arg in typing.get_args(tp) for a in (names(arg) if typing.get_args(arg) else {arg})}

    return "mtp" if "mtp" in names(SpeculativeMethod) else f"{cfg.get('model_type')}_mtp"


def build_drafter(vc) -> None:
    """The MTP drafter's layers, as the GPU runner's load_model builds them (v1/spec_decode: EagleProposer /
    LLMBaseProposer.load_model -> _get_model -> get_model(draft VllmConfig, draft_model_config) -> initialize_model)
    on the meta device, without weights; the layers it adds to the forward context are marked is_draft_layer as
    load_model marks them (0.33: their specs then carry is_draft)."""
    import torch
    from vllm.model_executor.model_loader.utils import initialize_model
    try:
        from vllm.utils.torch_utils import set_default_torch_dtype
    except ImportError:  # before 0.11.1
        from vllm.model_executor.model_loader.utils import set_default_torch_dtype
    try:
        from vllm.compilation.backends import set_model_tag
    except ImportError:
        set_model_tag = None
    spec = vc.speculative_config
    draft_vc = vc
    if v2_runner():  # 0.34+: v1/worker/gpu/spec_decode/eagle/utils.py load_eagle_model overlays the draft's overrides
        draft_vc = spec.apply_draft_overrides(vc)
    else:
        try:  # 0.2x - 0.33: the proposer derives a draft VllmConfig (its own attention backend selection, MoE backend)
            from vllm.v1.spec_decode.llm_base_proposer import LLMBaseProposer

            shim = type("Proposer", (), {})()
            shim.vllm_config, shim.speculative_config = vc, spec
            draft_vc = LLMBaseProposer._create_draft_vllm_config(shim)
        except (ImportError, AttributeError):
            pass
    context = vc.compilation_config.static_forward_context
    before = set(context)
    tag = set_model_tag("eagle_head") if set_model_tag else contextlib.nullcontext()
    # on the meta device as the model is: GLM-5.3-Flash's MTP layer allocates its top-k buffer on device="cuda"
    with tag, set_default_torch_dtype(spec.draft_model_config.dtype), torch.device("meta"), cuda_to_meta():
        initialize_model(vllm_config=draft_vc, model_config=spec.draft_model_config)
    if draft_vc is not vc:  # a replaced VllmConfig shares the compilation config, hence the forward context
        context.update(draft_vc.compilation_config.static_forward_context)
    for name in set(context) - before:
        if hasattr(context[name], "is_draft_layer"):
            context[name].is_draft_layer = True


def flags_of(key: dict, max_len, memory, vc=None) -> dict:
    flags = {"tensor_parallel_size": key["tp"], **({"pipeline_parallel_size": key["pp"]} if key.get("pp") else {}),
             **({"pp_layer_partition": key["pp_partition"]} if key.get("pp_partition") else {}),
             "max_model_len": max_len, "kv_cache_memory_bytes": memory,
             "num_speculative_tokens": key["num_speculative_tokens"],
             "mamba_ssm_cache_dtype": key["mamba_ssm_cache_dtype"], "kv_cache_dtype": key["kv_cache_dtype"]}
    if key["prefix"] is not None:
        flags["enable_prefix_caching"] = key["prefix"]
    if key["mamba_cache_mode"] is not None:
        flags["mamba_cache_mode"] = key["mamba_cache_mode"]
    if key.get("max_num_batched_tokens"):
        flags["max_num_batched_tokens"] = key["max_num_batched_tokens"]
    if key.get("drafter"):
        flags["draft_model"] = key["drafter"]
    return flags


def error_text(exc: BaseException) -> str:
    text = str(exc).strip()
    # pydantic wraps the validator's message; keep vLLM's own words
    if type(exc).__name__ == "ValidationError" and "Value error, " in text:
        text = text.split("Value error, ", 1)[1].split(" [type=", 1)[0]
    if not text:  # a bare assert: say where it fired
        import traceback

        frame = traceback.extract_tb(exc.__traceback__)[-1]
        text = f"at {frame.filename.split('site-packages/')[-1]}:{frame.lineno} ({frame.line})"
    return f"{type(exc).__name__}: {text}"[:1200]


def quack_required() -> bool:
    """0.34+: vLLM requires quack-kernels (its METADATA: quack-kernels==0.6.5) and imports `quack` at module level in
    the CuTe-DSL kernels (e.g. layers/mamba/ops/gdn_chunk_cutedsl, fused_moe/router); read from the installed
    distribution, before anything of vLLM is imported."""
    from importlib.metadata import version

    return tuple(int(x) for x in version("vllm").split(".")[:2]) >= (0, 34)


def v2_runner() -> bool:
    """0.34+: the GPU worker runs v1/worker/gpu/model_runner.py's GPUModelRunner (v1/worker/gpu_model_runner.py and
    v1/spec_decode's proposers are gone)."""
    return importlib.util.find_spec("vllm.v1.worker.gpu_model_runner") is None


def fake_runner(vc):
    """The GPUModelRunner attributes its get_kv_cache_spec reads, as its __init__ sets them (0.10-0.33 differ in
    which they read: kv_cache_dtype, attention_chunk_size and speculative_config in 0.10, vllm_config alone later;
    0.34's v1/worker/gpu/model_runner.py also its speculator and dcp_size, for a DraftModelSpeculator under DCP)."""
    try:
        from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE
    except ImportError:  # before 0.11.1
        from vllm.utils import STR_DTYPE_TO_TORCH_DTYPE

    runner = type("Runner", (), {})()
    runner.vllm_config, runner.model_config, runner.cache_config = vc, vc.model_config, vc.cache_config
    runner.speculative_config = vc.speculative_config
    runner.shared_kv_cache_layers = {}
    runner.runner_only_attn_layers = set()
    runner.attention_chunk_size = getattr(vc.model_config, "attention_chunk_size", None)
    cache_dtype = vc.cache_config.cache_dtype
    runner.dtype = vc.model_config.dtype
    runner.kv_cache_dtype = vc.model_config.dtype if cache_dtype == "auto" else STR_DTYPE_TO_TORCH_DTYPE[cache_dtype]
    if v2_runner():  # no DraftModelSpeculator (MTP drafts with MTPSpeculator) and no DCP: no spec is replaced
        runner.speculator, runner.dcp_size = None, 1
    return runner


def remote_config(model_dir: str, cfg: dict) -> None:
    """The checkpoint's configuration module stood in for (remote_code.py; MOCKS)."""
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    REMOTE.remote_config(model_dir, cfg, _CONFIG_REGISTRY)


def cuda_to_meta():
    """A torch function mode that makes a tensor asked for on the CUDA device (`device="cuda"`, as
    `device_config.device` says on a GPU) on the meta device the layers are built on: 0.28 - 0.29's Transformers backend
    (models/transformers/base.py `init_parameters`) allocates the parameters it did not replace with
    `torch.empty_like(..., device=self.device_config.device)`, which the CPU torch refuses ("Torch not compiled with
    CUDA enabled"). Only a call naming the CUDA device changes: without this mode it fails."""
    import torch
    from torch.overrides import TorchFunctionMode

    class CudaToMeta(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            device = kwargs.get("device")
            if isinstance(device, (str, torch.device)) and torch.device(device).type == "cuda":
                kwargs["device"] = torch.device("meta")
            return func(*args, **kwargs)

    return CudaToMeta()


def run_build(key: dict, lengths: list[int | None], memories: list[int], capture: Capture) -> list[dict]:
    import shutil
    import tempfile

    import torch
    import vllm.logger as vlog
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.platforms import current_platform
    from vllm.usage.usage_lib import UsageContext
    try:
        from vllm.utils.torch_utils import set_default_torch_dtype
    except ImportError:  # before 0.11.1
        from vllm.model_executor.model_loader.utils import set_default_torch_dtype
    if v2_runner():  # 0.34+
        from vllm.v1.worker.gpu.model_runner import GPUModelRunner
    else:
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    src = CONFIGS / key["config"]
    tmp = tempfile.mkdtemp(prefix="oracle-model-")
    if src.is_dir():
        for f in src.iterdir():
            if f.suffix == ".json":
                shutil.copy(f, tmp)
    else:
        shutil.copy(src, Path(tmp) / "config.json")
    remote_config(tmp, load_config(key["config"]))
    if key.get("drafter"):  # the drafter's config in a folder of its own, as --speculative-config's model names it
        key = dict(key, drafter_dir=tempfile.mkdtemp(prefix="oracle-drafter-"))
        shutil.copy(DRAFTERS / key["drafter"], Path(key["drafter_dir"]) / "config.json")
    results = []
    # each PP rank's forward context, built once for every length, and the cache dtype once its layers were built
    layers: list[tuple[dict, str]] = []
    pp = key.get("pp", 1)
    build_error = None
    if key.get("pp_partition"):  # read by get_pp_indices while each rank's layers are made
        os.environ["VLLM_PP_LAYER_PARTITION"] = key["pp_partition"]
    try:
        for max_len in lengths:
            capture.take()
            for cache in ("_print_info_once", "_print_warning_once", "_print_debug_once"):
                fn = getattr(vlog, cache, None)
                if fn is not None and hasattr(fn, "cache_clear"):
                    fn.cache_clear()
            case_memories = memories
            try:
                # the engine config first, as the engine builds it before the model: its checks (max_model_len)
                # come before a model class that does not build, whichever length ran first
                vc = engine_args(key, tmp, max_len, memories[0]).create_engine_config(
                    usage_context=UsageContext.OPENAI_API_SERVER)
                if build_error is not None:
                    raise build_error
                context = vc.compilation_config.static_forward_context
                rank_specs = []  # each PP rank's layer specs, as that rank's worker reports them
                for rank in range(pp):
                    set_groups(key["tp"], pp, rank)
                    with set_current_vllm_config(vc):
                        if len(layers) == rank:
                            context.clear()  # the rank's own forward context, as its worker process has
                            try:
                                # as BaseModelLoader.load_model: the layers are built under the model dtype
                                # (Attention reads torch.get_default_dtype(), and the backend selector rejects
                                # FlashAttention / FlashMLA for float32, falling back to Triton's block sizes)
                                with set_default_torch_dtype(vc.model_config.dtype), torch.device("meta"), \
                                        cuda_to_meta():
                                    initialize_model(vllm_config=vc)
                                if vc.speculative_config is not None and vc.speculative_config.use_eagle():
                                    build_drafter(vc)
                            except Exception as exc:  # noqa: BLE001
                                build_error = exc
                                raise
                            layers.append((dict(context), vc.cache_config.cache_dtype))
                        else:
                            # same layers: only max_model_len differs, which no layer reads at construction; a
                            # layer's construction may rewrite the cache dtype (MLAAttention: SM 12's sparse MLA
                            # backend makes it fp8_ds_mla), which this length's own build would have done too
                            context.clear()
                            context.update(layers[rank][0])
                            vc.cache_config.cache_dtype = layers[rank][1]
                        if hasattr(type(current_platform), "update_block_size_for_backend"):
                            current_platform.update_block_size_for_backend(vc)  # 0.18+: after load_model
                        rank_specs.append(GPUModelRunner.get_kv_cache_spec(fake_runner(vc)))
                base_log = capture.take()
                specs = {name: spec for one in rank_specs for name, spec in one.items()}
                one_request = one_request_memory(vc, specs)
                case_memories = memories + ([one_request] if 0 < one_request <= DEVICE[2] else [])
                # the workers in the executor's rank order: pp_rank x TP + tp_rank
                workers = [one for one in rank_specs for _ in range(key["tp"])]
                for memory in case_memories:
                    results.append(size_case(key, max_len, memory, vc, workers, base_log, capture))
            except Exception as exc:  # noqa: BLE001
                if os.environ.get("ORACLE_TRACEBACK"):  # where a refusal came from, for whoever reads the run
                    import traceback

                    traceback.print_exception(exc)
                log = capture.take()
                for memory in case_memories:
                    results.append({"config": key["config"], "flags": flags_of(key, max_len, memory),
                                    "result": {"log": sizing_lines(log)}, "error": error_text(exc)})
    finally:
        os.environ.pop("VLLM_PP_LAYER_PARTITION", None)
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def one_request_memory(vc, specs: dict) -> int:
    """A KV-cache memory of exactly what one request at the max model length needs by the layers' own specs
    (max_memory_usage_bytes over every layer: the start-up check before 0.14): it fits there, and the releases
    that count otherwise tell apart by it (the first KV-cache group alone in 0.14 - 0.18, every group with its
    padding layers from 0.19, the null block held back from 0.29); added to a case's memories when the GPU has it."""
    try:
        from vllm.v1.core.kv_cache_planning import max_memory_usage_bytes
    except ImportError:  # before 0.33
        from vllm.v1.core.kv_cache_utils import max_memory_usage_bytes
    return max_memory_usage_bytes(vc, specs.values())


def sizing_lines(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if any(w in line for w in SIZING_WORDS) and line not in out:
            out.append(line[:400])
    return out


def plan_kv_cache(vc, workers: list[dict], memory: int):
    """(rank 0's KVCacheConfig, every worker's, the scheduler's) as EngineCore._initialize_kv_caches makes them from every worker's
    layer specs (`workers`, in rank order), each with `memory`, by the functions of the running version: 0.33
    get_global_kv_cache_groups + get_kv_cache_configs (v1/core/kv_cache_planning.py), 0.11.1 - 0.32
    get_kv_cache_configs (v1/core/kv_cache_utils.py), 0.10 get_kv_cache_config per worker, then
    unify_kv_cache_configs (the smallest num_blocks)."""
    from vllm.config import set_current_vllm_config
    from vllm.v1.core import kv_cache_utils as kcu

    try:  # the KV-cache layout first (0.32+), as the engine core does
        from vllm.v1.attention.backends.utils import resolve_kv_cache_layout
        from vllm.v1.worker.worker_base import WorkerBase

        worker_like = type("Worker", (), {})()
        worker_like.vllm_config = vc
        with set_current_vllm_config(vc):
            supported = WorkerBase.get_supported_kv_cache_layouts(worker_like)
            merged = {name: spec for one in workers for name, spec in one.items()}
            layout = resolve_kv_cache_layout(vc, [supported] * len(workers), list(merged.values()))
            import inspect

            if len(inspect.signature(WorkerBase.set_kv_cache_layout).parameters) > 2:  # 0.33 takes the interleave
                WorkerBase.set_kv_cache_layout(worker_like, layout.name,
                                               vc.parallel_config.cp_kv_cache_interleave_size)
            else:
                WorkerBase.set_kv_cache_layout(worker_like, layout.name)
    except (ImportError, AttributeError):
        pass
    try:
        from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups, get_kv_cache_configs

        groups = get_global_kv_cache_groups(vc, workers)
        configs = get_kv_cache_configs(vc, workers, [memory] * len(workers), groups)
    except ImportError:
        if hasattr(kcu, "get_kv_cache_configs"):
            configs = kcu.get_kv_cache_configs(vc, workers, [memory] * len(workers))
        else:
            configs = kcu.unify_kv_cache_configs([kcu.get_kv_cache_config(vc, one, memory) for one in workers])
    if hasattr(kcu, "generate_scheduler_kv_cache_config"):
        return configs[0], configs, kcu.generate_scheduler_kv_cache_config(configs)
    return configs[0], configs, configs[0]


def kv_capacity(vc, sched, capture) -> tuple[float, int | None]:
    """(max concurrency, the "GPU KV cache size" tokens) as the version computes and logs them: 0.28+
    update_kv_cache_capacity stores them; before, _report_kv_cache_config (0.11.1 - 0.27) or get_kv_cache_config
    itself (0.10) only logs the tokens, read back from that line."""
    import re

    from vllm.v1.core import kv_cache_utils as kcu

    if hasattr(kcu, "update_kv_cache_capacity"):
        kcu.update_kv_cache_capacity(vc, sched)
        return round(vc.cache_config.kv_cache_max_concurrency, 4), vc.cache_config.kv_cache_size_tokens
    if hasattr(kcu, "_report_kv_cache_config"):
        kcu._report_kv_cache_config(vc, sched)
    concurrency = kcu.get_max_concurrency_for_kv_cache_config(vc, sched)
    # worker 0's line, the first: 0.10's get_kv_cache_config logs each worker's own blocks before
    # unify_kv_cache_configs, so with PP the stages' lines differ (from 0.11.1 every worker logs the agreed blocks)
    found = next((m for line in capture.lines if (m := re.match(r"GPU KV cache size: ([\d,]+) tokens", line))), None)
    return round(concurrency, 4), int(found.group(1).replace(",", "")) if found else None


def graph_check(vc, kv, max_num_seqs: int) -> None:
    """The max_num_seqs vs Mamba blocks start-up check of CompilationConfig.resolve_cudagraph_mode_and_sizes
    (0.20+; 0.18 - 0.19 capped the capture sizes instead, older releases had neither)."""
    import inspect

    comp = vc.compilation_config
    resolve = getattr(comp, "resolve_cudagraph_mode_and_sizes", None)
    if resolve is None or "kv_cache_config" not in inspect.signature(resolve).parameters:
        return
    try:
        from vllm.v1.attention.backend import AttentionCGSupport
    except ImportError:
        from vllm.v1.attention.backends.utils import AttentionCGSupport
    saved = (comp.cudagraph_mode, list(comp.cudagraph_capture_sizes or []))
    try:
        resolve(AttentionCGSupport.ALWAYS, None, kv_cache_config=kv, max_num_reqs=max_num_seqs)
    finally:
        comp.cudagraph_mode, comp.cudagraph_capture_sizes = saved[0], saved[1]


def size_case(key, max_len, memory, vc, workers, base_log, capture) -> dict:
    import copy
    import math

    import torch
    import vllm.logger as vlog
    from vllm.v1.kv_cache_interface import AttentionSpec, MambaSpec

    for cache in ("_print_info_once", "_print_warning_once"):
        fn = getattr(vlog, cache, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    vc = copy.copy(vc)
    vc.cache_config = copy.deepcopy(vc.cache_config)
    vc.model_config = copy.copy(vc.model_config)
    vc.cache_config.kv_cache_memory_bytes = memory
    specs = {name: spec for one in workers for name, spec in one.items()}  # the whole model's layers
    cc, mc, sc = vc.cache_config, vc.model_config, vc.scheduler_config
    attn = [s for s in specs.values() if isinstance(s, AttentionSpec)]
    mamba = [s for s in specs.values() if isinstance(s, MambaSpec)]
    result = {
        "architecture": mc.architecture,
        "max_model_len": mc.max_model_len,
        "max_num_seqs": sc.max_num_seqs,
        "max_num_batched_tokens": sc.max_num_batched_tokens,
        "enable_prefix_caching": cc.enable_prefix_caching,
        # before 0.15 there is no mamba_cache_mode: a Mamba layer then keeps one state per request ('none'), or with
        # prefix caching (0.11.1 - 0.14, models with SupportsMambaPrefixCaching) one per block, which 0.15 calls 'all'
        "mamba_cache_mode": (getattr(cc, "mamba_cache_mode", None) or ("all" if cc.enable_prefix_caching else "none"))
        if mamba else None,
        "attention_block_size": attn[0].block_size if attn else None,
        "mamba_block_size": mamba[0].block_size if mamba else None,
        "kv_cache_dtype": dtype_name(attn[0].dtype) if attn else None,
        "cache_dtype_flag_resolved": cc.cache_dtype,
        "mamba_cache_dtype": dtype_name(mamba[0].dtypes[0]) if mamba else None,
        "mamba_ssm_cache_dtype": dtype_name(mamba[0].dtypes[-1]) if mamba else None,
        "mamba_state_dtypes": sorted({"/".join(dtype_name(d) for d in s.dtypes) for s in mamba}),
        "mamba_state_shapes": sorted({json.dumps([list(x) for x in s.shapes]) for s in mamba}),
        # the unpadded state (MambaSpec.real_page_size_bytes where the release has it)
        "state_page_bytes": max((sum(math.prod(shape) * torch.tensor([], dtype=dtype).element_size()
                                     for shape, dtype in zip(s.shapes, s.dtypes, strict=True)) for s in mamba), default=None),
        "state_page_padded_bytes": max((s.page_size_bytes for s in mamba), default=None),
        "attention_page_bytes": attn[0].page_size_bytes if attn else None,
        "num_speculative_blocks": mamba[0].num_speculative_blocks if mamba else None,
        "num_prefill_checkpoint_blocks": getattr(mamba[0], "num_prefill_checkpoint_blocks", None) if mamba else None,
        "spec_types": dict(sorted(_count(type(s).__name__ for s in specs.values()).items())),
    }
    try:
        kv, configs, sched = plan_kv_cache(vc, workers, memory)
        result["num_blocks"] = kv.num_blocks
        result["num_kv_cache_groups"] = len(kv.kv_cache_groups)
        result["groups"] = dict(sorted(_count(type(g.kv_cache_spec).__name__ if not hasattr(
            g.kv_cache_spec, "kv_cache_specs") else type(next(iter(g.kv_cache_spec.kv_cache_specs.values()))).__name__
            for g in sched.kv_cache_groups).items()))
        result["group_size"] = max((len(g.layer_names) for g in kv.kv_cache_groups), default=0)
        if key.get("pp"):  # each PP stage's largest share of a KV-cache group (its pool's layers per block)
            result["stage_group_sizes"] = [max((len(g.layer_names) for g in c.kv_cache_groups), default=0)
                                           for c in configs[:: key["tp"]]]
        result["kv_cache_tensor_bytes"] = sum(t.size for t in kv.kv_cache_tensors)
        # the attention block the engine runs is its KV-cache group's, after unify_kv_cache_spec_page_size: in 0.18 -
        # 0.19 the worker's update_block_size_for_backend (platforms/interface.py) resets a hybrid's block_size to 16
        # after HybridAttentionMambaModelConfig aligned it, so the layer spec says 16 while the group (and
        # EngineCore._initialize_kv_caches' cache_config.block_size, the min over groups) is scaled back up to the
        # padded Mamba page; in the other releases the two are equal
        attn_groups = [g.kv_cache_spec for g in sched.kv_cache_groups if isinstance(g.kv_cache_spec, AttentionSpec)]
        if attn_groups:
            result["attention_block_size"] = attn_groups[0].block_size
            result["attention_page_bytes"] = attn_groups[0].page_size_bytes
        per_request = 0
        for g in sched.kv_cache_groups:
            per_request += -(-g.kv_cache_spec.max_memory_usage_bytes(vc) // g.kv_cache_spec.page_size_bytes)
        result["blocks_per_request"] = per_request
        result["max_model_len_after"] = vc.model_config.max_model_len
        if sched.kv_cache_groups:
            result["max_concurrency"], result["kv_cache_tokens"] = kv_capacity(vc, sched, capture)
            if hasattr(vc, "validate_block_size"):  # 0.18+: EngineCore._initialize_kv_caches, before the workers
                vc.cache_config.block_size = min(g.kv_cache_spec.block_size for g in sched.kv_cache_groups)
                vc.validate_block_size()  # the DCP interleave and (0.18 - 0.26) the align-mode block
        graph_check(vc, kv, sc.max_num_seqs)
        error = None
    except Exception as exc:  # noqa: BLE001
        error = error_text(exc)
    result["log"] = sizing_lines(base_log + capture.take())
    return {"config": key["config"], "flags": flags_of(key, max_len, memory), "result": result, "error": error}


def _count(items) -> dict:
    out: dict = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def worker(args) -> None:
    global DEVICE
    DEVICE = DEVICES[args.device]
    install_mocks()
    import torch
    import transformers
    import vllm

    capture = Capture()
    # a key's lengths are chosen by its index in the whole list, so a --configs run gives the cases a full run does
    keys = list(enumerate(drafter_builds() if args.drafters else builds()))
    if args.configs:
        keys = [(i, k) for i, k in keys if k["config"] in args.configs.split(",")]
    if args.limit:
        keys = keys[: args.limit]
    # 64 MiB: small enough that one request's attention KV at 4096 tokens and more (TP 1) does not fit for the
    # hybrids, large enough that a few blocks of their first (Mamba) KV-cache group do, so the tables tell apart the
    # start-up memory checks of the releases (every layer before 0.14, the first group in 0.14 - 0.18, every group
    # with its padding layers from 0.19; vllm_versions.md); run_build adds a fourth, one_request_memory, per case
    memories = [20 * GIB, 60 * GIB, 64 * MIB]
    cases = []
    start = time.time()
    from vllm.engine.arg_utils import EngineArgs

    # a flag the release does not have (--mamba-cache-mode before 0.15) is not asked: its CLI refuses it
    keys = [(i, k) for i, k in keys if k["mamba_cache_mode"] is None or "mamba_cache_mode" in EngineArgs.__dataclass_fields__]
    for n, (i, key) in enumerate(keys):
        cfg = load_config(key["config"])
        limit = length_limit(cfg)
        lengths = [4096, 32768, 131072, (limit * 2 if limit else None)]
        if i % 3 and not key.get("pp"):  # the build keys beyond the TP and PP rows take two lengths, chosen by key
            h = int(hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest(), 16)
            lengths = [lengths[h % 4], lengths[(h // 4) % 4]] if h % 4 != (h // 4) % 4 else [lengths[h % 4]]
        cases += run_build(key, lengths, memories, capture)
        print(f"[{n + 1}/{len(keys)}] {key['config']} tp{key['tp']} {time.time() - start:.0f}s", flush=True)
        if (n + 1) % 20 == 0 or n + 1 == len(keys):
            write_table(args, cases, torch.__version__, transformers.__version__, vllm.__version__)


def write_table(args, cases, torch_version, transformers_version, vllm_version):
    out = Path(args.out) if args.out else golden.path("vllm", vllm_version, golden.DRAFTERS if args.drafters else None)
    if args.merge and out.exists():  # keep the other configs' cases of the existing table
        redone = {c["config"] for c in cases}
        cases = [c for c in golden.read(out)["cases"] if c["config"] not in redone] + cases
    table = {"engine": "vllm", "version": vllm_version, "generated_by": "scripts/oracles/vllm.py",
             "torch": torch_version, "transformers": transformers_version,
             "mocks": MOCKS + (MOCKS_V2_RUNNER if v2_runner() else []),
             "gpu_assumed": f"{DEVICE[0]} (SM {DEVICE[1][0]}.{DEVICE[1][1]}), OpenAI API server usage context",
             **({"device": {"name": DEVICE[0], "bytes": DEVICE[2]}} if args.device != "h200" else {}),
             "cases": sorted(cases, key=lambda c: (c["config"], json.dumps(c["flags"], sort_keys=True)))}
    out.parent.mkdir(parents=True, exist_ok=True)
    golden.write(out, table, default=str)


def main() -> None:
    global CONFIGS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", default="0.33.0")
    parser.add_argument("--venv-root", default="/tmp/oracle-venvs")
    parser.add_argument("--out", help="the table's path (default tests/data/engine_golden/vllm-VERSION.json.gz)")
    parser.add_argument("--config-dir", type=Path, default=CONFIGS, help="the HF configs to size (default %(default)s)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N build keys")
    parser.add_argument("--configs", help="comma-separated config names")
    parser.add_argument("--merge", action="store_true",
                        help="with --configs: replace only those configs' cases in the existing table")
    parser.add_argument("--drafters", action="store_true",
                        help="size DFlash drafters drafting for their targets (golden.DRAFTER_PAIRS): the drafters' table")
    parser.add_argument("--device", choices=sorted(DEVICES), default="h200",
                        help="the GPU the platform answers as (default %(default)s; another needs --out)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.device != "h200" and not args.out:
        parser.error("--device other than h200 needs --out (the release tables are the H200's)")
    CONFIGS = args.config_dir.resolve()
    if args.worker:
        worker(args)
        return
    py = ensure_venv(args.version, Path(args.venv_root))
    cmd = [str(py), str(Path(__file__).resolve()), "--worker", "--version", args.version, "--config-dir", str(CONFIGS),
           "--device", args.device]
    for opt in ("out", "limit", "configs"):
        if getattr(args, opt):
            cmd += [f"--{opt}", str(getattr(args, opt))]
    if args.merge:
        cmd.append("--merge")
    if args.drafters:
        cmd.append("--drafters")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    sys.exit(subprocess.call(cmd, env=env, cwd=str(ROOT)))


if __name__ == "__main__":
    main()
