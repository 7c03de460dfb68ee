"""What TensorRT-LLM's start-up lines mean (PyTorch backend, 1.x and main; `_torch/pyexecutor/_util.py` prints the
memory lines, `llmapi/llm_args.py` the options).

- Version: `TensorRT-LLM version: X`.
- Settings: a logged `KvCacheConfig(…)` (free_gpu_memory_fraction, max_tokens, tokens_per_block, dtype,
  mamba_ssm_cache_dtype), `max_batch_size=N` / `max_seq_len=N` / `max_draft_len=N` where an args line shows them,
  `Validating KV Cache config against kv_cache_dtype="D"`.
- Measured: `Peak memory during memory usage profiling (torch + non-torch): X GiB` (the weights with the activation
  peak and non-torch memory: what the KV budget is taken after), less the profiling run's temporary KV pool the same
  line prints (`tmp kv_mem Y GiB` on the 1.x lines, `temporary kv cache memory during profiling Y GiB` on main):
  `KvCacheCreator._cal_max_memory` adds it back, available = (total - peak + allocated_bytes) x fraction;
  `device total memory T GiB` on the same line (the GPU), `Memory used after loading model weights (inside torch)
  in memory usage profiling: X GiB` where printed.
- Printed: `available KV cache memory when calculating max tokens: X GiB` (that line again), `Estimated max memory
  in KV cache : X GiB`, `[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N).` An allocation
  printed before the peak line is the profiling run's temporary pool (`try_prepare_estimation` sizes it from the
  dummy requests, not from the memory): its figures are keyed `estimation_*`.
- Settings: the executor's `max_seq_len=N, max_num_requests=N, max_num_tokens=N, max_batch_size=N` line follows each
  KV cache it creates and prints max_seq_len as that cache cut it ("Adjusted max_seq_len to N"): only its
  max_batch_size is a setting."""

from __future__ import annotations

import re

from msgspec.structs import replace

from mcache.core.logs import GIB, EngineLog, LogLine, Measured, Printed, gib, half_step, scan, tp_from_processes
from mcache.core.logs.literals import balanced, call_keywords

NAME = "trtllm"
_G = r"(\d+(?:\.\d+)?) GiB"
PATTERNS = [
    ("budget", re.compile(r"available KV cache memory when calculating max tokens: " + _G),
     lambda m: [("kv_cache_budget_gib", float(m[1]), f"{m[1]} GiB")]),
    ("estimated", re.compile(r"Estimated max memory in KV cache ?: " + _G),
     lambda m: [("estimated_kv_cache_gib", float(m[1]), f"{m[1]} GiB")]),
    ("allocated", re.compile(r"\[MemUsageChange\] Allocated " + _G + r" for max tokens in paged KV cache \((\d+)\)"),
     lambda m: [("allocated_kv_cache_gib", float(m[1]), f"{m[1]} GiB"), ("max_tokens", int(m[2]), m[2])]),
]
VERSION = re.compile(r"TensorRT-LLM version:? v?(\S+)")
PEAK = re.compile(r"Peak memory during memory usage profiling \(torch \+ non-torch\): " + _G)
TOTAL = re.compile(r"device total memory " + _G)
TEMPORARY = re.compile(r"(?:tmp kv_mem|temporary kv cache memory during profiling) " + _G)
SUMMARY = re.compile(r"\bmax_num_requests=\d+")
# A line only a started server prints: trtllm-serve's uvicorn "Application startup complete", after the executor (its
# KV cache sized) is up
STARTED = re.compile(r"Application startup complete")
WEIGHTS = re.compile(r"Memory used after loading model weights \(inside torch\) in memory usage profiling: " + _G)
KV_DTYPE = re.compile(r"Validating KV Cache config against kv_cache_dtype=\"(\w+)\"")
KV_CONFIG = re.compile(r"KvCacheConfig(?=\()")
ARG = re.compile(r"\b(max_batch_size|max_seq_len|max_draft_len)=(\d+)")
MARKS = re.compile(r"\[TRT-LLM\]|\[TensorRT-LLM\]|KvCacheConfig|\[MemUsageChange\]|Peak memory during memory usage "
                   r"profiling|kv_cache_dtype=\"")
CACHE_SETTINGS = {"free_gpu_memory_fraction": "free_gpu_memory_fraction", "max_tokens": "max_tokens",
                  "tokens_per_block": "tokens_per_block", "dtype": "kv_cache_dtype",
                  "mamba_ssm_cache_dtype": "mamba_ssm_cache_dtype"}


def score(lines: list[LogLine], text: str) -> int:
    return len(MARKS.findall(text[:1_000_000])) + len(figures(lines))


def figures(lines: list[LogLine]) -> list[Printed]:
    """The figures; those of the profiling run's temporary pool (before the first peak line) as `estimation_*`."""
    peak = next((line.number for line in lines if PEAK.search(line.text)), None)
    out = scan(lines, PATTERNS)
    return [replace(p, key=f"estimation_{p.key}") if peak is not None and p.line < peak else p for p in out]


def read(lines: list[LogLine]) -> EngineLog:
    log = EngineLog(NAME, settings={}, setting_lines={}, other_settings={}, measured=[], figures=figures(lines))
    for line in lines:
        text = line.text
        if log.version is None and (m := VERSION.search(text)):
            log.version, log.version_line = m[1], line.number
        if m := PEAK.search(text):
            peak, step, shown = gib(m[1]), half_step(m[1], GIB), f"{m[1]} GiB"
            if (t := TEMPORARY.search(text)) and float(t[1]):
                peak, step = peak - gib(t[1]), step + half_step(t[1], GIB)
                shown += f" less the temporary KV pool {t[1]} GiB"
            log.measured.append(Measured("peak_memory", peak, step, "peak_bytes", shown, line.number, line.process))
        if (m := TOTAL.search(text)) and log.gpu_bytes is None:
            log.gpu_bytes = gib(m[1])
        if m := WEIGHTS.search(text):
            log.measured.append(Measured("weights", gib(m[1]), half_step(m[1], GIB), "weights_bytes", f"{m[1]} GiB",
                                         line.number, line.process))
        if m := KV_DTYPE.search(text):
            _set(log, "kv_cache_dtype", m[1], line.number)
        if m := KV_CONFIG.search(text):
            call = balanced(text, m.end())
            for name, value in (call_keywords("KvCacheConfig" + call) or {}).items() if call else ():
                if name in CACHE_SETTINGS and value is not None:
                    _set(log, CACHE_SETTINGS[name], value, line.number)
        for name, value in ARG.findall(text):
            if name == "max_batch_size" or not SUMMARY.search(text):
                _set(log, name, int(value), line.number)
    log.tp = tp_from_processes(lines)
    return log


def _set(log: EngineLog, name: str, value, line: int) -> None:
    log.settings[name], log.setting_lines[name] = value, line
