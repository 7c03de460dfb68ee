"""Golden tables from SGLang's own code (issue 28): for one SGLang version, build a throwaway venv with the CPU torch
wheel, `sglang` without its dependencies and only the pure-Python packages its server-args, model-config and
memory-pool code import; run scripts/oracles/sglang_worker.py inside it over a deterministic sample of cases; write
tests/data/engine_golden/sglang-VERSION.json.gz (strict JSON, sorted keys, compressed: golden.py). CI never runs this:
it reads the tables.
Releases: 0.5.2 to 0.5.23 and the post releases of 0.5.3-0.5.6, the ones mcache models (scripts/oracles/sglang_versions.md).

    python scripts/oracles/sglang.py 0.5.23              # venv in /tmp/oracle-venvs/sglang-0.5.23, ~25 min on 2 cores
    python scripts/oracles/sglang.py 0.5.23 --every 10   # a tenth of the cases, still spanning every config
    python scripts/oracles/sglang.py 0.5.23 --assemble-only  # the table from the answers so far (resumable work dir)
    python scripts/oracles/sglang.py 0.5.22 --configs qwen3-next-80b-a3b.json,falcon-h1-0.5b.json  # those configs only
    python scripts/oracles/sglang.py 0.5.23 --merge --configs plamo-2-1b.json  # its cases replaced, the rest kept
    python scripts/oracles/sglang.py 0.5.21 --merge --only pp --configs lfm2-1.2b.json  # its PP cases only, merged
    python scripts/oracles/sglang.py 0.5.23 --merge --only dp --configs qwen3-next-80b-a3b.json  # its attention-DP cases only, merged
    python scripts/oracles/sglang.py 0.5.23 --config-dir tests/data/hf_configs_extra \
        --out tests/data/engine_golden/extra/sglang-0.5.23.json.gz --work /tmp/sglang-oracle-extra-0.5.23  # other configs
    python scripts/oracles/sglang.py 0.5.23 --merge --only narrow-dp --configs qwen3-next-80b-a3b.json  # those with dp < tp
    python scripts/oracles/sglang.py 0.5.23 --merge --only pp-dp --configs nemotron-h-8b-base-8k.json  # attention DP at PP > 1
    python scripts/oracles/sglang.py 0.5.23 --merge --only sm12 --configs bamba-9b.json,...  # the RTX 5090 / PRO 6000 cases
    python scripts/oracles/sglang.py 0.5.23 --drafters  # DFlash drafters drafting for their targets (golden.DRAFTER_PAIRS,
                                                        # `drafter_cases`): tests/data/engine_golden/drafters/

The worker is forked per case (SGLang keeps process-wide state); answers land in /tmp/sglang-oracle-VERSION, and an
interrupted run resumes from them. `result.log` holds the lines SGLang's loggers emitted that concern sizing
(filtered by keywords in the worker's KEEP) and, last, the scheduler's start-up line (see MOCKS).

Inputs every case states (`inputs`): the GPU's total memory as SGLang reads it (`gpu_total_bytes`), the free memory
before the weights load (`free_gpu_memory_bytes`: the total less 0.5 GiB of CUDA context, SGLang's
pre_model_load_memory) and the weights one rank loads (`weights_bytes`: the free memory SGLang measures after loading
is free_gpu_memory_bytes - weights_bytes). The weights figure is a chosen input, not a measurement: compare a case
with mcache by giving mcache the same `weights_bytes`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import golden  # this folder is on sys.path when the oracle runs

REPO = Path(__file__).resolve().parents[2]
CONFIGS = Path(os.environ.get("MCACHE_HF_CONFIGS", REPO / "tests/data/hf_configs"))
WORKER = Path(__file__).with_name("sglang_worker.py")
TORCH = "torch==2.13.0"
# Pure-Python packages SGLang's import chain needs for server args, model config, the model registry (the
# architecture check) and the memory pools; never let pip resolve sglang's own pins (they pull a CUDA torch).
PURE_DEPS = ["numpy", "pydantic", "msgspec", "psutil", "requests", "packaging", "orjson", "einops", "pybase64",
             "pillow", "pyyaml", "pyzmq", "starlette", "fastapi", "uvicorn", "IPython", "aiohttp", "dill",
             "sentencepiece", "compressed-tensors", "gguf", "openai", "partial_json_parser", "setproctitle", "triton",
             "httpx"]  # httpx: 0.5.2's is_in_ci (a context above the model's) imports sglang.test.test_utils

MIB, GIB = 1 << 20, 1 << 30
# total memory as nvidia-smi / torch report it; the 32 GB card is in the 20-35 GB row of SGLang's GPU defaults. The AMD
# cards (run as ROCm: the worker's AMD) as rocminfo reports them, mcache's catalogue figures
# (mcache/core/sizing/gpu_catalogue.py)
AMD_GPUS = {"MI300X": 206141652992, "MI325X": (256 << 30) - 16 * MIB, "MI355X": (288 << 30) - 16 * MIB}
GPUS = {"H200": 143771 * MIB, "H100-80GB": 81559 * MIB, "RTX-5090": 32607 * MIB, "RTX-PRO-6000": 97887 * MIB,
        "B200": 183359 * MIB, **AMD_GPUS}
CUDA_SM12 = ("RTX-5090", "RTX-PRO-6000")  # run on the card itself (`card_capability`: the worker's MOCKS)
CUDA_SM10 = ("B200",)  # the same
CONTEXT_RESERVE = GIB // 2


def venv_for(version: str, root: Path) -> Path:
    venv = root / f"sglang-{version}"
    py = venv / "bin/python"
    if (venv / ".oracle-ready").exists():
        return py
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run(pip + [TORCH], check=True)  # the CPU wheel (this machine's index has it)
    subprocess.run(pip + ["--no-deps", f"sglang=={version}"], check=True)
    meta = subprocess.run([str(py), "-c", "import importlib.metadata as m; print('\\n'.join(m.requires('sglang')))"],
                          capture_output=True, text=True, check=True).stdout
    pins = {}
    for line in meta.splitlines():
        name = line.split(";")[0].strip()
        for pkg in ("transformers", "tokenizers", "xgrammar", "apache-tvm-ffi"):
            if name.startswith(pkg + "=="):
                pins[pkg] = name
    # transformers and tokenizers at sglang's pins, without deps that would replace torch
    subprocess.run(pip + [pins[k] for k in ("transformers", "tokenizers") if k in pins] + PURE_DEPS + [TORCH], check=True)
    if "xgrammar" in pins:  # 0.5.20's server_args imports it (tool-call parser); it needs the real tvm_ffi; no deps,
        # which would pull a CUDA torch
        subprocess.run(pip + ["--no-deps", pins["xgrammar"]] + ([pins["apache-tvm-ffi"]] if "apache-tvm-ffi" in pins
                                                                else []), check=True)
    (venv / ".oracle-ready").write_text("ok\n")
    return py


def config_files() -> list[tuple[str, Path]]:
    """(name as the table records it, the HF config.json)."""
    out = [(p.name, p) for p in sorted(CONFIGS.glob("*.json"))]
    out += [(d.name, d / "config.json") for d in sorted(CONFIGS.iterdir()) if (d / "config.json").exists()]
    return out


def model_dirs(tmp: Path) -> dict[str, Path]:
    """A folder per config holding it as config.json (a checkpoint folder is copied whole: its quant config)."""
    dirs = {}
    for name, cfg in config_files():
        d = tmp / name.removesuffix(".json")
        if cfg.parent != CONFIGS:
            shutil.copytree(cfg.parent, d)
        else:
            d.mkdir(parents=True)
            shutil.copy(cfg, d / "config.json")
        dirs[name] = d
    return dirs


def max_len(cfg: dict) -> int | None:
    text = cfg.get("text_config") or cfg
    for key in ("max_position_embeddings", "model_max_length", "max_seq_len", "seq_length"):
        if text.get(key) or cfg.get(key):
            return int(text.get(key) or cfg.get(key))
    return None


def _pick(seed: str, options: list):
    return options[int(hashlib.sha256(seed.encode()).hexdigest(), 16) % len(options)]


SPEC = {0: {}, 3: {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
                   "speculative_num_draft_tokens": 4},
        7: {"speculative_algorithm": "EAGLE", "speculative_num_steps": 7, "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 8}}
RADIX = {"default": {}, "off": {"disable_radix_cache": True}, "no_buffer": {"mamba_radix_cache_strategy": "no_buffer"},
         "no_buffer_no_overlap": {"mamba_radix_cache_strategy": "no_buffer", "disable_overlap_schedule": True},
         "extra_buffer": {"mamba_radix_cache_strategy": "extra_buffer"}}


def cases(configs: set[str] | None = None, sm10: bool = False) -> list[dict]:
    """Per config: the full drafts x radix grid at TP 1 on an H200 (the rules interact there), then TP 2/4, the
    contexts (one above the config's limit, also with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1), the state and
    KV dtypes, the second and third GPUs, a fixed max_running_requests and max_mamba_cache_size, each crossed with a drafts and
    radix setting picked by a hash of the case (deterministic); then the pipeline-parallel cases (`_pp_grid`). With
    `sm10`, a B200's too (`_sm10_grid`), which no committed table holds."""
    out = []
    for name, path in config_files():
        if configs is not None and name not in configs:
            continue
        cfg = json.loads(path.read_text())
        limit = max_len(cfg)
        grid = []
        for drafts in (0, 3, 7):
            for radix in RADIX:
                grid.append(({}, drafts, radix, "H200", 30 * GIB, {}))
        for tp in (2, 4):
            for drafts in (0, 3):
                grid.append(({"tp_size": tp}, drafts, _pick(f"{name}{tp}{drafts}", list(RADIX)), "H200", 30 * GIB, {}))
        contexts = [4096, 32768] + ([limit * 2] if limit else [1 << 20])
        for ctx in contexts:
            grid.append(({"context_length": ctx}, _pick(f"{name}c{ctx}", [0, 3]), "default", "H200", 30 * GIB, {}))
        if limit:
            grid.append(({"context_length": limit * 2}, 0, "default", "H200", 30 * GIB,
                         {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}))
        for ssm in ("bfloat16", "float16", "float32"):
            grid.append(({"mamba_ssm_dtype": ssm}, _pick(f"{name}s{ssm}", [0, 3, 7]),
                         _pick(f"{name}r{ssm}", list(RADIX)), "H200", 30 * GIB, {}))
        for kv in ("fp8_e4m3", "bfloat16"):
            grid.append(({"kv_cache_dtype": kv}, _pick(f"{name}k{kv}", [0, 3]), "default", "H200", 30 * GIB, {}))
        for drafts in (0, 3, 7):
            for radix in ("default", "off"):
                grid.append(({}, drafts, radix, "H100-80GB", 8 * GIB, {}))
        for tp in (1, 4):
            grid.append(({"tp_size": tp}, 0, "default", "H100-80GB", 60 * GIB, {}))  # weights leave little room
        for tp in (1, 4):
            grid.append(({"tp_size": tp}, 0, "default", "RTX-5090", 2 * GIB, {CARD: True}))
        grid += _sm10_grid() if sm10 else []
        grid.append(({"max_running_requests": 64}, 3, "off", "H200", 30 * GIB, {}))
        grid.append(({"max_running_requests": 64}, 0, "off", "H200", 30 * GIB, {}))
        grid.append(({"max_mamba_cache_size": 200}, 3, "default", "H200", 30 * GIB, {}))
        grid.append(({"mamba_full_memory_ratio": 0.5}, 0, "default", "H200", 30 * GIB, {}))
        grid += _pp_grid(cfg)
        grid += _amd_grid()
        grid += _dp_grid() if name in DP_CONFIGS else []
        grid += _narrow_dp_grid() if name in NARROW_DP_CONFIGS else []
        grid += _pp_dp_grid() if name in PP_DP_CONFIGS else []
        grid += _qsa_grid() + _sm12_grid() if name in QSA_CONFIGS else []
        for extra, drafts, radix, gpu, weights, env in grid:
            flags = {"tp_size": 1, **extra, **SPEC[drafts], **RADIX[radix]}
            total = GPUS[gpu]
            case = {"config": name, "flags": dict(sorted(flags.items())), "env": env,
                    "inputs": {"gpu": gpu, "gpu_total_bytes": total, "free_gpu_memory_bytes": total - CONTEXT_RESERVE,
                               "weights_bytes": weights}}
            if env.get(CARD):  # not an environment variable: the worker runs the case on the card itself
                case["env"] = {k: v for k, v in env.items() if k != CARD}
                case["inputs"]["card_capability"] = True
            out.append(case)
    return out


DFLASH = {"speculative_algorithm": "DFLASH"}  # the drafter's path is added per run (`run`); its block size drafts


# A drafter made for another target, whose target layer ids the target lacks (the 27B drafter reads layer 61 of 64;
# Qwen3.6-35B-A3B has 40): one case each, which SGLang refuses
MISPAIRED = (("qwen3.6-35b-a3b.json", "qwen3.6-27b-dflash.json"),)


def drafter_cases() -> list[dict]:
    """The --drafters table: each golden.DRAFTER_PAIRS drafter drafting for its target (SGLang's DFLASH, its drafts the
    drafter's block size unless speculative_num_draft_tokens says otherwise) at TP 1 with each radix setting, at TP 2,
    4 and 8 (where a drafter's KV heads per rank differ from the model's), with 8 draft tokens, an fp8 KV cache, the
    drafter's own in fp8 or (beside an fp8 one) its own dtype (--speculative-draft-kv-cache-dtype, from 0.5.18), a bf16
    state, a fixed max_running_requests and max_mamba_cache_size, on the 80 GB GPU, and refused: at PP 2, under
    attention DP, and a drafter made for another target (`MISPAIRED`)."""
    grid = [({}, radix, "H200", 30 * GIB) for radix in RADIX]
    grid += [({"tp_size": 2}, "default", "H200", 30 * GIB), ({"tp_size": 4}, "off", "H200", 30 * GIB),
             ({"tp_size": 4}, "default", "H200", 30 * GIB), ({"tp_size": 8}, "default", "H200", 30 * GIB),
             ({"pp_size": 2}, "default", "H200", 30 * GIB),
             ({"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}, "default", "H200", 30 * GIB),
             ({"speculative_num_draft_tokens": 8}, "default", "H200", 30 * GIB),
             ({"kv_cache_dtype": "fp8_e4m3"}, "default", "H200", 30 * GIB),
             ({"speculative_draft_kv_cache_dtype": "fp8_e4m3"}, "default", "H200", 30 * GIB),
             ({"kv_cache_dtype": "fp8_e4m3", "speculative_draft_kv_cache_dtype": "auto"}, "default", "H200", 30 * GIB),
             ({"mamba_ssm_dtype": "bfloat16"}, "off", "H200", 30 * GIB),
             ({"max_running_requests": 64}, "off", "H200", 30 * GIB),
             ({"max_mamba_cache_size": 200}, "default", "H200", 30 * GIB),
             ({}, "default", "H100-80GB", 8 * GIB), ({"tp_size": 2}, "off", "H100-80GB", 8 * GIB)]
    out = []
    runs = [(pair, case) for pair in golden.DRAFTER_PAIRS for case in grid]
    runs += [(pair, ({}, "default", "H200", 30 * GIB)) for pair in MISPAIRED]
    for (config, drafter), (extra, radix, gpu, weights) in runs:
        flags = {"tp_size": 1, **extra, **DFLASH, **RADIX[radix]}
        total = GPUS[gpu]
        out.append({"config": config, "drafter": drafter, "flags": dict(sorted(flags.items())), "env": {},
                    "inputs": {"gpu": gpu, "gpu_total_bytes": total, "free_gpu_memory_bytes": total - CONTEXT_RESERVE,
                               "weights_bytes": weights}})
    return out


def _pp_grid(cfg: dict) -> list[tuple]:
    """Pipeline-parallel cases (issue 28), each stage sized as its rank (the worker's STAGE): PP 2 and 3 at TP 1 and 2
    with and without the radix cache; then at TP 1 a short context, the 80 GB GPU, the extra-buffer strategy, drafts,
    a fixed max_running_requests, and SGLANG_PP_LAYER_PARTITION giving the first stages one layer each (none of them
    an attention layer in the hybrids here)."""
    layers = (cfg.get("text_config") or cfg).get("num_hidden_layers")
    grid = []
    for pp in (2, 3):
        for tp in (1, 2):
            for radix in ("default", "off"):
                grid.append(({"pp_size": pp, "tp_size": tp}, 0, radix, "H200", 30 * GIB, {}))
        grid.append(({"pp_size": pp, "context_length": 4096}, 0, "default", "H200", 30 * GIB, {}))
        grid.append(({"pp_size": pp}, 0, "default", "H100-80GB", 8 * GIB, {}))
        grid.append(({"pp_size": pp}, 0, "extra_buffer", "H200", 30 * GIB, {}))
        grid.append(({"pp_size": pp}, 3, "default", "H200", 30 * GIB, {}))
        grid.append(({"pp_size": pp, "max_running_requests": 64}, 0, "off", "H200", 30 * GIB, {}))
        if layers:
            partition = ",".join(["1"] * (pp - 1) + [str(layers - pp + 1)])
            grid.append(({"pp_size": pp}, 0, "default", "H200", 30 * GIB, {"SGLANG_PP_LAYER_PARTITION": partition}))
    return grid


def _amd_grid() -> list[tuple]:
    """Cases on AMD cards, which the worker runs as ROCm (its AMD): on an MI300X by default, without the radix cache,
    with the extra buffer, with 3 EAGLE steps, at TP 2 and 4 (an MLA model's KV heads per rank pick aiter at 16), at a
    4096-token context (ROCm's aiter rule holds above 8,192 tokens), radix off with a fixed max_running_requests; the
    MI325X and MI355X by default."""
    grid = [({}, 0, radix, "MI300X", 30 * GIB, {}) for radix in ("default", "off", "extra_buffer")]
    grid += [({}, 3, "default", "MI300X", 30 * GIB, {}), ({"tp_size": 2}, 0, "default", "MI300X", 30 * GIB, {}),
             ({"tp_size": 4}, 0, "default", "MI300X", 30 * GIB, {}),
             ({"context_length": 4096}, 0, "default", "MI300X", 30 * GIB, {}),
             ({"max_running_requests": 64}, 0, "off", "MI300X", 30 * GIB, {})]
    return grid + [({}, 0, "default", gpu, 30 * GIB, {}) for gpu in ("MI325X", "MI355X")]
# Attention data parallelism, `--dp-size N --enable-dp-attention` with N = TP (each rank holds the KV heads and the state
# whole: mcache's --attention-dp), for these configs (`_dp_grid`); falcon-h1-34b.json (tests/data/hf_configs_extra: two
# Mamba2 groups, which the mixer asserts its TP size can split, the attention-TP group's from 0.5.14) in both grids
DP_CONFIGS = ("qwen3-next-80b-a3b.json", "nemotron-h-8b-base-8k.json", "kimi-linear-48b-a3b-instruct.json",
              "falcon-h1-0.5b.json", "granite-4.0-h-tiny.json", "lfm2-1.2b.json", "mamba-2.8b.json", "falcon-h1-34b.json")
# Attention DP narrower than TP (N < TP, an attention-TP group of TP / N ranks: mcache's --attn-dp-size N), one
# config a kind: GDN, KDA with MLA, the Mamba2 hybrids, short conv, Mamba-1 (`_narrow_dp_grid`)
NARROW_DP_CONFIGS = ("qwen3-next-80b-a3b.json", "kimi-linear-48b-a3b-instruct.json", "nemotron-h-8b-base-8k.json",
                     "falcon-h1-0.5b.json", "lfm2-1.2b.json", "mamba-2.8b.json", "falcon-h1-34b.json")


def _dp_grid() -> list[tuple]:
    """Attention-DP cases, dp = tp (the worker's attention-DP rank 0): TP 2 and 4 with drafts 0 and 3, with and without
    the radix cache, on the H200 with 30 GiB of weights and the 80 GB GPU with 8 GiB; then at TP 4 the 80 GB GPU with
    60 GiB (attention DP's larger reserve leaves the weights no room), a max_running_requests (split over the DP
    ranks) with the radix cache off, and with a draft, and a max_mamba_cache_size."""
    grid = []
    for tp in (2, 4):
        dp = {"tp_size": tp, "dp_size": tp, "enable_dp_attention": True}
        for drafts in (0, 3):
            for radix in ("default", "off"):
                grid.append((dp, drafts, radix, "H200", 30 * GIB, {}))
        grid.append((dp, 0, "default", "H100-80GB", 8 * GIB, {}))
    grid.append((dp, 0, "default", "H100-80GB", 60 * GIB, {}))
    grid.append(({**dp, "max_running_requests": 64}, 0, "off", "H200", 30 * GIB, {}))
    grid.append(({**dp, "max_running_requests": 64}, 3, "default", "H200", 30 * GIB, {}))
    grid.append(({**dp, "max_mamba_cache_size": 200}, 3, "default", "H200", 30 * GIB, {}))
    return grid


def _narrow_dp_grid() -> list[tuple]:
    """Attention-DP cases with dp < tp (the worker's attention-DP rank 0, its attention-TP group tp / dp wide): TP 4 DP 2
    and TP 8 DP 2 and 4 on the H200 with 30 GiB of weights, without and with 3 EAGLE steps, with and without the radix
    cache; TP 4 DP 2 on the 80 GB GPU with 8 GiB; at TP 8 DP 2 a max_running_requests (split over the DP ranks) with the
    radix cache off, at TP 8 DP 4 a max_mamba_cache_size with a draft."""
    def dp(tp: int, size: int) -> dict:
        return {"tp_size": tp, "dp_size": size, "enable_dp_attention": True}

    return [(dp(4, 2), 0, "default", "H200", 30 * GIB, {}), (dp(4, 2), 3, "off", "H200", 30 * GIB, {}),
            (dp(8, 2), 0, "default", "H200", 30 * GIB, {}), (dp(8, 2), 3, "default", "H200", 30 * GIB, {}),
            (dp(8, 4), 0, "off", "H200", 30 * GIB, {}), (dp(8, 4), 3, "default", "H200", 30 * GIB, {}),
            (dp(4, 2), 0, "default", "H100-80GB", 8 * GIB, {}),
            ({**dp(8, 2), "max_running_requests": 64}, 0, "off", "H200", 30 * GIB, {}),
            ({**dp(8, 4), "max_mamba_cache_size": 200}, 3, "default", "H200", 30 * GIB, {})]


# Attention DP at PP > 1, for configs whose SGLang models take PP (`_pp_dp_grid`; the tables from PP_CASES_FROM)
PP_DP_CONFIGS = ("nemotron-h-8b-base-8k.json", "kimi-linear-48b-a3b-instruct.json", "granite-4.0-h-tiny.json")
# `--qsa-indexer-dtype` (0.5.22 on) for the indexer configs (tests/data/hf_configs_indexer): the compressed QSA keys in
# fp8 or bf16 (Qwen3.8-Flash-Next), refused off SM 90 / SM 100 CUDA cards (an MI300X here) and for a model without
# compressed QSA (GLM-5.3-Flash)
QSA_CONFIGS = ("qwen3.8-flash-next-fp8.json", "glm-5.3-flash-fp8.json")


CARD = "card_capability"  # a grid entry's marker (`_sm12_grid`): the case's card answers its own compute capability


def _sm12_grid() -> list[tuple]:
    """SM 12 cards answering their own compute capability (the worker's `_as_card`, as the main grid's RTX 5090 cases
    do): the RTX PRO 6000 at TP 4 and 8 by default, with an fp8 and a bf16 KV cache, 3 EAGLE steps, no radix cache;
    the RTX 5090 at TP 8."""
    card = {CARD: True}
    return [({"tp_size": 4}, 0, "default", "RTX-PRO-6000", 60 * GIB, card),
            ({"tp_size": 8}, 0, "default", "RTX-PRO-6000", 40 * GIB, card),
            ({"tp_size": 4, "kv_cache_dtype": "fp8_e4m3"}, 0, "default", "RTX-PRO-6000", 60 * GIB, card),
            ({"tp_size": 4, "kv_cache_dtype": "bfloat16"}, 0, "default", "RTX-PRO-6000", 60 * GIB, card),
            ({"tp_size": 4}, 3, "off", "RTX-PRO-6000", 60 * GIB, card),
            ({"tp_size": 8}, 0, "default", "RTX-5090", 20 * GIB, card)]


def _sm10_grid() -> list[tuple]:
    """A B200 (SM 10) answering its own compute capability, where SGLang's Blackwell defaults hold (attention backends,
    their page sizes): TP 1 and 4 at the defaults, 3 EAGLE steps, no radix cache, a bf16 and an fp8 KV cache. Run with
    `--only sm10` alone and kept out of the tables: the page of 64 tokens that SGLang's default backend takes there for
    some models and releases rounds the token pool down, which mcache does not model (sglang_versions.md, "SM 10")."""
    card = {CARD: True}
    return [({"tp_size": 1}, 0, "default", "B200", 30 * GIB, card), ({"tp_size": 4}, 0, "default", "B200", 30 * GIB, card),
            ({"tp_size": 1}, 3, "default", "B200", 30 * GIB, card), ({"tp_size": 1}, 0, "off", "B200", 30 * GIB, card),
            ({"tp_size": 1, "kv_cache_dtype": "fp8_e4m3"}, 0, "default", "B200", 30 * GIB, card)]


def _qsa_grid() -> list[tuple]:
    """The QSA indexer's dtype: fp8 and bf16 at the defaults, fp8 with 3 EAGLE steps and without the radix cache, at
    TP 4 on the 80 GB GPU, and on an MI300X."""
    fp8 = {"qsa_indexer_dtype": "fp8_e4m3"}
    return [(fp8, 0, "default", "H200", 30 * GIB, {}), ({"qsa_indexer_dtype": "bfloat16"}, 0, "default", "H200", 30 * GIB, {}),
            (fp8, 3, "off", "H200", 30 * GIB, {}), ({**fp8, "tp_size": 4}, 0, "default", "H100-80GB", 60 * GIB, {}),
            (fp8, 0, "default", "MI300X", 30 * GIB, {})]


def _pp_dp_grid() -> list[tuple]:
    """Attention-DP cases at PP > 1, each stage sized as its rank (the worker's STAGE) and attention-DP rank 0: PP 2 at
    TP 2 DP 2, TP 4 DP 4 and TP 4 DP 2 on the H200 with 30 GiB of weights, TP 4 DP 2 with the radix cache off and a
    max_running_requests, and PP 3 at TP 2 DP 2."""
    def dp(pp: int, tp: int, size: int) -> dict:
        return {"pp_size": pp, "tp_size": tp, "dp_size": size, "enable_dp_attention": True}

    return [(dp(2, 2, 2), 0, "default", "H200", 30 * GIB, {}), (dp(2, 4, 4), 0, "default", "H200", 30 * GIB, {}),
            (dp(2, 4, 2), 0, "default", "H200", 30 * GIB, {}),
            ({**dp(2, 4, 2), "max_running_requests": 64}, 0, "off", "H200", 30 * GIB, {}),
            (dp(3, 2, 2), 0, "default", "H200", 30 * GIB, {})]


def _key(case: dict) -> str:
    return json.dumps({k: case[k] for k in ("config", "flags", "env", "inputs", "drafter") if k in case}, sort_keys=True)


def _worker_case(case: dict, dirs: dict[str, Path]) -> dict:
    """The case as the worker takes it: its model's folder, and a drafter's (the worker's --speculative-draft-model-path)."""
    return {**case, "model_dir": str(dirs[case["config"]]),
            **({"draft_dir": str(dirs[case["drafter"]])} if case.get("drafter") else {})}


def _round_robin(todo: list[dict]) -> list[dict]:
    """Cases interleaved by config, so that a run stopped early still covers every config."""
    by_config: dict[str, list[dict]] = {}
    for c in todo:
        by_config.setdefault(c["config"], []).append(c)
    out, queues = [], list(by_config.values())
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def answered(work: Path) -> dict[str, dict]:
    """Results already in the work folder (from an earlier or an interrupted run), by case."""
    done = {}
    for inp in sorted(work.glob("in*.json")):
        out = inp.with_name(inp.name.replace("in", "out", 1)).with_suffix(".jsonl")
        if not out.exists():
            continue
        cases = json.loads(inp.read_text())["cases"]
        for line in out.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by an interruption
            done[_key(cases[r["index"]])] = r
    return done


def _is_dp(case: dict) -> bool:
    return bool(case["flags"].get("enable_dp_attention"))


# The oldest release whose tables hold the PP cases (`_pp_grid`): mcache models SGLang's pipeline parallelism from
# 0.5.14 (mcache/core/engines/sglang.py PP_MODELLED_FROM) and refuses PP > 1 before it, so older tables hold PP 1 only
PP_CASES_FROM = (0, 5, 14)
# Before 0.5.10 model_loader/utils.py resolve_transformers_arch imports every auto_map entry of an architecture SGLang
# has no class for (get_class_from_dynamic_module); the oracle holds configs, not modelling code (MOCKS), so a config
# whose auto_map names an AutoModel (Kimi-K3's, edge0's) is left out of those releases' tables
REMOTE_MODEL_IMPORTED_UNTIL = (0, 5, 10)


def _imports_remote_model(config: str) -> bool:
    """Whether the named config's auto_map names an AutoModel (`REMOTE_MODEL_IMPORTED_UNTIL`)."""
    path = dict(config_files())[config]
    return "AutoModel" in (json.loads(path.read_text()).get("auto_map") or {})


def _is_pp(case: dict) -> bool:
    return case["flags"].get("pp_size", 1) > 1


# Parts of the grid a run can be narrowed to (--only), each merged without touching the configs' other cases
ONLY = {"sm12": lambda case: case["inputs"]["gpu"] in CUDA_SM12, "sm10": lambda case: case["inputs"]["gpu"] in CUDA_SM10,
        "dp": _is_dp, "pp": _is_pp, "amd": lambda case: case["inputs"]["gpu"] in AMD_GPUS,
        "narrow-dp": lambda case: _is_dp(case) and not _is_pp(case) and case["flags"]["dp_size"] < case["flags"]["tp_size"],
        "pp-dp": lambda case: _is_dp(case) and _is_pp(case)}


def run(version: str, venv_root: Path, limit: int | None, jobs: int, work: Path, assemble_only: bool,
        every: int = 1, configs: set[str] | None = None, merge: bool = False, only: str | None = None,
        out: Path | None = None, drafters: bool = False) -> Path:
    py = venv_for(version, venv_root)
    todo = drafter_cases() if drafters else cases(configs, sm10=only == "sm10")
    todo = todo[:limit] if limit else todo
    release = tuple(int(n) for n in version.split(".")[:3])
    if release < PP_CASES_FROM:  # mcache refuses PP > 1 there: PP 1 cases only
        todo = [c for c in todo if not _is_pp(c)]
    if release < REMOTE_MODEL_IMPORTED_UNTIL:
        todo = [c for c in todo if not _imports_remote_model(c["config"])]
    if only:  # that part of the configs' cases alone (a table whose other cases stand)
        todo = [c for c in todo if ONLY[only](c)]
    if every > 1:  # every Nth case of each config (a stride over the interleaved list skips whole configs when N
        # and the number of configs share a factor)
        by_config: dict[str, list[dict]] = {}
        for c in todo:
            by_config.setdefault(c["config"], []).append(c)
        todo = [c for group in by_config.values() for c in group[::every]]
    work.mkdir(parents=True, exist_ok=True)
    dirs = model_dirs(work / "models") if not (work / "models").exists() else {
        name: work / "models" / name.removesuffix(".json") for name, _ in config_files()}
    for _, drafter in golden.DRAFTER_PAIRS if drafters else ():  # each drafter's config.json in a folder of its own
        dirs[drafter] = work / "drafters" / drafter.removesuffix(".json")
        dirs[drafter].mkdir(parents=True, exist_ok=True)
        shutil.copy(golden.DRAFTER_CONFIGS / drafter, dirs[drafter] / "config.json")
    done = answered(work)
    missing = _round_robin([c for c in todo if _key(c) not in done])
    if missing and not assemble_only:
        shards = [missing[i::jobs] for i in range(jobs)]
        stamp = len(list(work.glob("in*.json")))
        procs = []
        for i, shard in enumerate(shards):
            n = stamp + i
            (work / f"in{n}.json").write_text(json.dumps({"cases": [_worker_case(c, dirs) for c in shard]}))
            procs.append(subprocess.Popen([str(py), str(WORKER), str(work / f"in{n}.json"), str(work / f"out{n}.jsonl")],
                                          stdout=subprocess.DEVNULL, stderr=open(work / f"err{n}.txt", "w")))  # noqa: SIM115 (closed with the child)
        for p in procs:
            p.wait()
        done = answered(work)
    results = [(c, done[_key(c)]) for c in todo if _key(c) in done]
    if len(results) < len(todo):
        sys.stderr.write(f"{len(todo) - len(results)} of {len(todo)} cases have no answer yet; the table holds the "
                         f"{len(results)} answered\n")
    header = json.loads(subprocess.run([str(py), str(WORKER), "--header"], capture_output=True, text=True,
                                       check=True).stdout)
    for _, r in results:
        for res in r["result"].get("stages", [r["result"]]):  # a PP case: each stage's answer
            if res.get("log_scheduler") and res.get("error", r["error"]) is None:
                res["log"] = res["log"] + [res["log_scheduler"]]  # the scheduler's line last, as SGLang logs it
            if "mamba_cache_size" in res:
                res["max_mamba_cache_size"] = res["mamba_cache_size"]  # mcache's EngineStage.fields name
    new_cases = [{**c, "result": r["result"], "error": r["error"]} for c, r in results]
    path = out or golden.path("sglang", version, golden.DRAFTERS if drafters else None)
    table = {"engine": "sglang", "version": version, "generated_by": "scripts/oracles/sglang.py", **header,
             "configs": sorted(configs) if configs else "all", "every": every,
             "gpus": {k: v for k, v in GPUS.items()}, "cases": new_cases}
    if merge and configs and path.exists():  # those configs' cases (--only: that part of them) replaced, every other
        # case kept as it was
        old = golden.read(path)
        kept = [c for c in old["cases"] if c["config"] not in configs or (only and not ONLY[only](c))]
        listed = old["configs"] if old["configs"] == "all" else sorted(set(old["configs"]) | configs)
        order = {_key(c): i for i, c in enumerate(cases())}  # the order a whole run writes
        merged = sorted(kept + new_cases, key=lambda c: order.get(_key(c), len(order)))
        table = {**old, **header, "configs": listed, "cases": merged}
        if only:
            table[f"merged_{only}"] = sorted(set(old.get(f"merged_{only}", [])) | configs)
        else:
            table["merged"] = sorted(set(old.get("merged", [])) | configs)
    path.parent.mkdir(parents=True, exist_ok=True)
    golden.write(path, table)
    return path


def main():
    global CONFIGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("version")
    ap.add_argument("--venv-root", type=Path, default=Path("/tmp/oracle-venvs"))
    ap.add_argument("--limit", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--count", action="store_true", help="print the number of cases and stop")
    ap.add_argument("--work", type=Path, help="folder of the worker's inputs and answers (default "
                    "/tmp/sglang-oracle-VERSION, with --config-dir /tmp/sglang-oracle-DIRNAME-VERSION); answered cases "
                    "are not asked again")
    ap.add_argument("--every", type=int, default=1, help="only every Nth case (interleaved by config): a quick table")
    ap.add_argument("--configs", help="comma-separated config names (as the table records them): only those")
    ap.add_argument("--merge", action="store_true", help="with --configs: replace those configs' cases in the "
                    "existing table and keep every other case (its header takes this run's mocks and versions)")
    ap.add_argument("--only", choices=sorted(ONLY), help="only the attention-DP cases (dp; narrow-dp: those with dp < "
                    "tp at PP 1; pp-dp: those at PP > 1), the pipeline-parallel ones (pp), those on AMD cards (amd), on SM 12 "
                    "cards (sm12) or a B200's, outside the full grid (sm10); "
                    "with --merge those of --configs replaced, their other cases kept")
    ap.add_argument("--assemble-only", action="store_true", help="write the table from the answers there, run nothing")
    ap.add_argument("--config-dir", type=Path, help=f"the HF configs to size (default {CONFIGS}, or $MCACHE_HF_CONFIGS)")
    ap.add_argument("--out", type=Path, help="the table's path (default tests/data/engine_golden/sglang-VERSION.json.gz)")
    ap.add_argument("--drafters", action="store_true", help="size DFlash drafters drafting for their targets "
                    "(golden.DRAFTER_PAIRS): the drafters' table, tests/data/engine_golden/drafters/sglang-VERSION.json.gz")
    args = ap.parse_args()
    if args.config_dir:
        CONFIGS = args.config_dir.resolve()
    configs = set(args.configs.split(",")) if args.configs else None
    if configs is not None and configs - {name for name, _ in config_files()}:
        ap.error(f"unknown configs: {', '.join(sorted(configs - {name for name, _ in config_files()}))}")
    if args.only and not (args.merge and configs):
        ap.error("--only goes with --merge --configs (a table of that part alone would drop the other cases)")
    if args.drafters and (configs or args.only or args.merge or args.config_dir):
        ap.error("--drafters sizes golden.DRAFTER_PAIRS whole: no --configs, --only, --merge or --config-dir")
    if args.count:
        print(len(drafter_cases()) if args.drafters else sum(1 for c in cases(configs, args.only == "sm10")
                                                                         if not args.only or ONLY[args.only](c)))
        return
    name = "drafters-" if args.drafters else args.config_dir.name + "-" if args.config_dir else ""
    work = args.work or Path(f"/tmp/sglang-oracle-{name}{args.version}")
    print(run(args.version, args.venv_root, args.limit, args.jobs, work, args.assemble_only, args.every, configs,
              args.merge, args.only, args.out, args.drafters))


if __name__ == "__main__":
    main()
