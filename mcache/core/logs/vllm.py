"""What vLLM's start-up lines mean (V1 engine, 0.10 to 0.33; the file:line a release prints them at moves, the
words do not, except where said).

- Version: `vLLM API server version X` (api_server.py), `Initializing a V1 LLM engine (vX) with config: model='…'`
  (v1/engine/core.py), and the API server's start-up logo (`log_version_and_model`, vllm#32796; 0.15.1's logs print it
  from entrypoints/utils.py, 0.24 - 0.26's from api_utils.py), whose lines end `version X` and `model   M`, or in its
  place `vLLM server version X, serving model M` where the logger has no formatter or VLLM_DISABLE_LOG_LOGO is set.
- Settings: `non-default args: {…}` (entrypoints/utils.py, later api_utils.py: the flags given), the config line's
  `quantization=M` (`None` unquantized; the method of `--quantization`, else the one the checkpoint's config names),
  `Using max model len N` (config/model.py), the layout (`tensor_parallel_size`, `pipeline_parallel_size`,
  `data_parallel_size` in either line, else the ranks the processes name: `Worker_PP1_TP1`, `EngineCore_DP1`; each
  data-parallel engine core logs its own figures), `Resolved architecture: X`, `Setting kv cache block size to N for
  X backend` (the block the attention backend prefers: a ROCm or an MLA backend's, platforms), `max_num_seqs (S)
  exceeds …` (the S it ran with).
- Measured: `Model loading took X GiB` (gpu_model_runner.py; `X GiB memory and …` from 0.2x): the weights one rank
  loaded; `Available KV cache memory: X GiB` (gpu_worker.py): the KV budget one rank found after profiling, or with
  `--kv-cache-memory-bytes` `reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes` (the budget
  given); `Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, R GiB). … Current kv
  cache memory in use is K GiB.` (gpu_worker.py compile_or_warm_up_model, at INFO from 0.26, DEBUG before): the
  device's total T (the GPU, where none is given), the utilization U and the same budget K. The engine line's
  `speculative_config=SpeculativeConfig(method=…, num_spec_tokens=N)` gives the drafts where no args line does, and
  `speculative_config=None` none (so that a draft count given to explain is a what-if).
- Printed: `Setting attention block size to N tokens`, `Padding mamba page size by P%` (platforms/interface.py, in
  config.py on older mains), `Add N padding layers, may waste at most P% KV cache memory`, `GPU KV cache size: N
  tokens` and `Maximum concurrency for L tokens per request: Cx` (kv_cache_utils.py: two lines up to about 0.30, one
  line joined by a comma after), the CUDA-graph check `max_num_seqs (S) exceeds available Mamba cache blocks (B)`
  (compilation.py) and the memory checks' `estimated maximum model length is N` and `No available memory for the cache
  blocks` (kv_cache_utils.py)."""

from __future__ import annotations

import re

from mcache.core.logs import (
    NUMBER,
    EngineLog,
    LogLine,
    Measured,
    Printed,
    dp_from_processes,
    gib,
    half_step,
    layout_setting,
    number,
    pp_from_processes,
    scan,
    stated_quantization,
    tp_from_processes,
)
from mcache.core.logs.literals import balanced, literal_dict

GIB = 1 << 30
NAME = "vllm"

PATTERNS = [
    ("attention_block_size", re.compile(r"Setting attention block size to (\d+) tokens"),
     lambda m: [("attention_block_size", int(m[1]), m[1])]),
    ("state_page_padding_pct", re.compile(r"Padding mamba page size by (\d+(?:\.\d+)?)%"),
     lambda m: [("state_page_padding_pct", float(m[1]), f"{m[1]}%")]),
    ("padding_layers", re.compile(r"Add (\d+) padding layers, may waste at most (\d+(?:\.\d+)?)%"),
     lambda m: [("padding_layers", int(m[1]), m[1]), ("padding_waste_pct", float(m[2]), f"{m[2]}%")]),
    # gpu_worker.py determine_available_memory (read at 0.20.0): what profiling found, or with --kv-cache-memory-bytes
    # the budget given
    ("available_kv_cache_memory", re.compile(r"Available KV cache memory: (-?\d+(?:\.\d+)?) GiB|reserved (\d+(?:\.\d+)?) GiB "
                                             r"memory for KV Cache as specified by kv_cache_memory_bytes"),
     lambda m: [("available_kv_cache_memory", float(m[1] or m[2]), f"{m[1] or m[2]} GiB")]),
    ("kv_cache_tokens", re.compile(r"GPU KV cache size: " + NUMBER + " tokens"),
     lambda m: [("kv_cache_tokens", number(m[1]), m[1])]),
    ("max_concurrency", re.compile(r"Maximum concurrency for " + NUMBER + r" tokens per request: (\d+(?:\.\d+)?)x"),
     lambda m: [("max_concurrency", float(m[2]), f"{m[2]}x")]),
    ("num_blocks", re.compile(r"max_num_seqs \((\d+)\) exceeds available Mamba cache blocks \((\d+)\)"),
     lambda m: [("mamba_cache_blocks", int(m[2]), m[2])]),
    ("estimated_max_model_len", re.compile(r"estimated maximum model length is (\d+)"),
     lambda m: [("estimated_max_model_len", int(m[1]), m[1])]),
    # kv_cache_utils.py check_enough_kv_cache_memory (0.10.2 - 0.33; kv_cache_planning.py from 0.34): the budget
    # profiling left is not above zero, so no block fits and start-up stops
    ("cache_memory_check", re.compile(r"No available memory for the cache blocks"),
     lambda m: [("cache_memory_check", "no memory", "no memory")]),
]
VERSION = [re.compile(r"vLLM API server version (\S+)"), re.compile(r"Initializing a V1 LLM engine \(v?([^)\s]+)\)"),
           re.compile(r"^vLLM version:? v?(\S+)"), re.compile(r"▀▄▀ █\s+version (\S+)"),
           re.compile(r"vLLM server version (\S+), serving model ")]
ENGINE_MODEL = re.compile(r"Initializing a V1 LLM engine \([^)]*\) with config: model='([^']*)'")
LOGO_MODEL = re.compile(r"(?:█\s+model\s+|vLLM server version \S+, serving model )(\S+)")
MODEL_LOADING = re.compile(r"Model loading took (\d+(?:\.\d+)?) GiB")
# gpu_worker.py compile_or_warm_up_model's memory summary (read at 0.26.0 and 0.34.0; the same opening at 0.20.0, where
# it is a DEBUG line): the device's free and total memory at start-up, the utilization, and the KV budget in use
DEVICE_MEMORY = re.compile(r"Free memory on device \((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) GiB\) on startup\. Desired GPU "
                           r"memory utilization is \((\d+(?:\.\d+)?), ")
KV_IN_USE = re.compile(r"Current kv cache memory in use is (\d+(?:\.\d+)?) GiB")
MAX_LEN = re.compile(r"Using max model len (\d+)")
MAX_LEN_IN_CONCURRENCY = re.compile(r"Maximum concurrency for " + NUMBER + " tokens per request")
ARCH = re.compile(r"Resolved architecture: (\w+)")
SEQS_IN_ERROR = re.compile(r"max_num_seqs \((\d+)\) exceeds available Mamba cache blocks")
# platforms/interface.py update_block_size_for_backend (read at 0.26.0 and 0.34.0): without --block-size, the block size
# the attention backend prefers where it is not the default (a ROCm AITER backend's 64, FlashInfer MLA's 32); the hybrid
# alignment is then the larger of it and the backend's smallest kernel block. A fact of the platform the run chose, so a
# setting of the run, not a figure mcache derives.
BACKEND_BLOCK = re.compile(r"Setting kv cache block size to (\d+) for (\w+) backend")
ARGS = re.compile(r"non-default args: ")
# config/scheduler.py SchedulerConfig (0.10.2 - 0.34.0): the tokens a step takes, resolved (given, or the usage
# context's default for the GPU's memory)
CHUNKED_PREFILL = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")
# A line only a started engine prints: v1/engine/core.py `_initialize_kv_caches`' caller logs "init engine (profile,
# create kv cache, warmup model) took" once the KV caches, the CUDA-graph sizes (CompilationConfig's Mamba-block check)
# and the warm-up are done (read at 0.26.0 and 0.34.0); the API server's "Starting vLLM server on" (entrypoints/openai/
# api_server.py at 0.26.0, entrypoints/launchers/api_server/entry.py at 0.34.0; "Starting vLLM API server" in older
# releases' logs) and uvicorn's "Application startup complete" come after it; a worker's memory summary (`DEVICE_MEMORY`,
# gpu_worker.py compile_or_warm_up_model) before it, once the KV cache is allocated and the CUDA graphs are captured
STARTED = re.compile(r"init engine \(profile, create kv cache, warmup model\) took|Starting vLLM (?:API )?server|"
                     r"Application startup complete|Free memory on device \([\d./]+ GiB\) on startup")
# the engine's config line's drafts: config/speculative.py SpeculativeConfig.__repr__ (read at 0.20.0: `method=...,
# model=..., num_spec_tokens=N`)
# config/speculative.py SpeculativeConfig.__repr__ (v0.20.0 - v0.34.0): method, the draft model (None for n-gram)
SPEC_CONFIG = re.compile(r"speculative_config=SpeculativeConfig\(method='?(\w+)'?,(?: model=(?:'([^']*)'|None),)?.*?"
                         r"num_spec_tokens=(\d+)\)")
# ... and without speculative decoding: `speculative_config=None` (VllmConfig.__str__: config/__init__.py at v0.10.2,
# config/vllm.py at v0.34.0)
NO_SPEC_CONFIG = re.compile(r"\bspeculative_config=None\b")
# the engine's config line names a few settings as key=value
CONFIG_KEYS = re.compile(r"\b(max_seq_len|tensor_parallel_size|pipeline_parallel_size|data_parallel_size|kv_cache_dtype|"
                         r"enable_prefix_caching|quantization)=('[^']*'|[\w.\-]+)")
# what marks a vLLM log besides its figures: its process names and source files
MARKS = re.compile(r"\((?:EngineCore|APIServer|Worker|VllmWorker)[\w]* pid=\d+\)|\[(?:gpu_worker|kv_cache_utils|"
                   r"gpu_model_runner|api_server|arg_utils)\.py:\d+\]|vLLM API server version|non-default args: \{")
# the flags of `vllm serve` that mcache's profile reads, by the name the args line gives them -> the profile's setting
SETTINGS = ("max_model_len", "gpu_memory_utilization", "kv_cache_memory_bytes", "kv_cache_dtype",
            "enable_prefix_caching", "max_num_seqs", "max_num_batched_tokens", "block_size", "enforce_eager",
            "mamba_ssm_cache_dtype", "mamba_cache_dtype", "mamba_cache_mode", "gdn_prefill_backend", "async_scheduling",
            "attention_backend")
LAYOUT = {"tensor_parallel_size": "tp", "pipeline_parallel_size": "pp", "data_parallel_size": "dp"}
# Under `--data-parallel-size N` each of the N engine cores sizes its own KV cache from its own workers' memory, with no
# agreement across cores (v1/engine/core.py EngineCore._initialize_kv_caches: get_kv_cache_configs over its executor's
# workers only), and logs its own figures (`EngineCore_DP1`, `Worker_DP1_TP0`): a core's figures go with its memory.
DP_RANKS_APART = True
# The quantization methods that name the one format the weights are stored in (model_executor/layers/quantization/
# __init__.py `QUANTIZATION_METHODS`, 0.10 to 0.33): fp8 (a checkpoint's per-tensor or block scales, or BF16 weights
# quantized at load), fbgemm_fp8 and ptpc_fp8 (per-channel scales), modelopt_fp4 (NVFP4), mxfp4. Not here, as they
# name a method of several formats: modelopt (its checkpoint's FP8 or NVFP4), awq, gptq, auto_round,
# compressed-tensors, bitsandbytes (their checkpoint's bits).
WEIGHT_FORMATS = {"fp8": "fp8", "fbgemm_fp8": "fp8", "ptpc_fp8": "fp8", "modelopt_fp4": "nvfp4", "mxfp4": "mxfp4"}


def score(lines: list[LogLine], text: str) -> int:
    return len(MARKS.findall(text[:1_000_000])) + len(figures(lines)) + sum(
        1 for line in lines if any(p.search(line.text) for p in VERSION))


def figures(lines: list[LogLine]) -> list[Printed]:
    return scan(lines, PATTERNS)


def read(lines: list[LogLine]) -> EngineLog:
    log = EngineLog(NAME, settings={}, setting_lines={}, other_settings={}, measured=[], figures=[])
    logo_model = None  # the logo's model: the args and engine lines say more, and win
    engine_seen = False
    for line in lines:
        text = line.text
        if log.version is None:
            for pattern in VERSION:
                m = pattern.search(text)
                if m:
                    log.version, log.version_line = m[1], line.number
                    break
        if (m := LOGO_MODEL.search(text)) and logo_model is None:
            logo_model = m[1]
        if m := ENGINE_MODEL.search(text):
            if not engine_seen:  # the first engine core's config line: what the args line leaves unsaid
                engine_seen = True
                log.model = log.model or m[1]
                for key, value in CONFIG_KEYS.findall(text):
                    _setting(log, "max_model_len" if key == "max_seq_len" else key, _plain(value), line.number,
                             weak=True)
                if (m := SPEC_CONFIG.search(text)) and "num_speculative_tokens" not in log.settings:
                    _drafts(log, {"method": m[1], "num_speculative_tokens": int(m[3]),
                                  **({"model": m[2]} if m[2] else {})}, line.number)
            if NO_SPEC_CONFIG.search(text) and "num_speculative_tokens" not in log.settings:
                log.settings["num_speculative_tokens"] = 0  # no drafts: a draft count given is a what-if
                log.setting_lines["num_speculative_tokens"] = line.number
        if m := ARGS.search(text):
            args = balanced(text, m.end())
            parsed = literal_dict(args) if args else None
            if parsed is not None:
                _args(log, parsed, line.number)
            elif args:
                log.unread_lines.append(line.number)
        if m := MODEL_LOADING.search(text):
            log.measured.append(Measured("model_loading", gib(m[1]), half_step(m[1], GIB), "weights_bytes",
                                         f"{m[1]} GiB", line.number, line.process))
        if m := MAX_LEN.search(text):
            _setting(log, "max_model_len", int(m[1]), line.number, weak=True)
        if m := MAX_LEN_IN_CONCURRENCY.search(text):
            _setting(log, "max_model_len", number(m[1]), line.number, weak=True)
        if m := ARCH.search(text):
            log.architecture = m[1]
        if m := SEQS_IN_ERROR.search(text):
            _setting(log, "max_num_seqs", int(m[1]), line.number, weak=True)
        if m := CHUNKED_PREFILL.search(text):
            _setting(log, "max_num_batched_tokens", int(m[1]), line.number, weak=True)
        if m := BACKEND_BLOCK.search(text):
            _setting(log, "block_size", int(m[1]), line.number, weak=True)
        if m := DEVICE_MEMORY.search(text):
            log.gpu_bytes = log.gpu_bytes or gib(m[2])
            _setting(log, "gpu_memory_utilization", float(m[3]), line.number, weak=True)
    found = figures(lines)
    for p in found:
        if p.key == "available_kv_cache_memory":
            _budget(log, p.shown.split()[0], p.line, p.process)
        else:
            log.figures.append(p)
    stated = {p.process for p in found if p.key == "available_kv_cache_memory"}
    for line in lines:  # the memory summary's budget, where no line of its process states it
        if line.process not in stated and (m := KV_IN_USE.search(line.text)):
            _budget(log, m[1], line.number, line.process)
    log.model = log.model or logo_model
    log.tp = tp_from_processes(lines) if log.tp is None else log.tp
    log.pp = pp_from_processes(lines) if log.pp is None else log.pp
    log.dp = dp_from_processes(lines) if log.dp is None else log.dp
    return log


def _budget(log: EngineLog, gib_shown: str, line: int, process: str | None) -> None:
    """The KV budget one rank measured, as `--kv-cache-memory-bytes` gives it."""
    log.measured.append(Measured("available_kv_cache_memory", gib(gib_shown), half_step(gib_shown, GIB),
                                 "kv_cache_memory_bytes", f"{gib_shown} GiB", line, process))


def _plain(text: str):
    text = text.strip("'")
    if text in ("True", "False"):
        return text == "True"
    return int(text) if text.isdigit() else text


def _setting(log: EngineLog, name: str, value, line: int, weak: bool = False) -> None:
    """Record a setting the log shows (`weak`: one a later or earlier args line states outright wins)."""
    if name == "quantization":
        stated_quantization(log, value, line, weak)
        return
    if name in LAYOUT:
        layout_setting(log, LAYOUT[name], value, line, weak)
        return
    target = log.settings if name in SETTINGS else log.other_settings
    if weak and name in target:
        return
    target[name] = value
    if name in SETTINGS:
        log.setting_lines[name] = line


def _args(log: EngineLog, args: dict, line: int) -> None:
    """The `non-default args` line: the model, the layout and each flag."""
    model = args.get("model") or args.get("model_tag")
    if isinstance(model, str):
        log.model = model
    for name, value in args.items():
        if name in ("model", "model_tag"):
            continue
        if name == "speculative_config" and isinstance(value, dict):
            _drafts(log, value, line)
            continue
        _setting(log, name, value, line)


def _drafts(log: EngineLog, config: dict, line: int) -> None:
    """A speculative config (the args line's `speculative_config`, or the engine line's as a dict): its draft count."""
    log.other_settings["speculative_config"] = config
    if isinstance(config.get("num_speculative_tokens"), int):
        log.settings["num_speculative_tokens"] = config["num_speculative_tokens"]
        log.setting_lines["num_speculative_tokens"] = line
