"""What SGLang's start-up lines mean (the 0.5 line; SGLang prints sizes in "GB" that are GiB: it divides by 1 << 30).

- Version: `sglang version X` / `SGLang vX` where a launcher prints it; most logs do not, and then `--engine-version`
  says it.
- Settings: `server_args=ServerArgs(…)`, or `server_args={…}` in later builds (server_args.py: every setting, defaults
  filled, the radix-cache strategy as 0.5.7-0.5.13 name it too, `mamba_scheduler_strategy`; `quantization=None` unless
  `--quantization` was given; the layout: `tp_size`, `pp_size`, `dp_size` and `enable_dp_attention` (0.5.22 on:
  `attn_dp_size`), else the ranks the
  `[… DP1 TP1]` prefixes name), `max_running_requests is capped to N by the mamba state cache (max_mamba_cache_size=S,
  R state slots per request)`.
- Measured (model_runner.py): `Load weight begin. avail mem=X GB` (the free memory before the weights load),
  `Load weight end. … type=Arch, … avail mem=X GB, mem usage=Y GB.` (Y: the weights one rank loaded; X + Y: the
  free memory before they loaded).
- Printed: `Mamba Cache is allocated. max_mamba_cache_size: S, conv_state size: XGB, ssm_state size: YGB`
  (memory_pool.py; quoted by hand as `max_mamba_cache_size: S, conv_state XGB, ssm_state YGB, …`; the first Qwen3-Next
  builds, 0.5.2 and main in Sept. 2025, print no `max_mamba_cache_size: S, `),
  `KV Cache is allocated. [dtype: torch.D, ]#tokens: N, K size: X GB, V size: Y GB` (an MLA model's pool,
  MLATokenToKVPool: `…#tokens: N, KV size: X GB`), `max_total_num_tokens=N, …,
  max_running_requests=R, context_len=C, …` (scheduler.py), the cap line above. With a draft model the KV line
  comes twice per rank (target, then draft): the first of each rank is the target's."""

from __future__ import annotations

import re

from mcache.core.logs import (
    GIB,
    EngineLog,
    LogLine,
    Measured,
    Printed,
    dp_from_processes,
    gib,
    half_step,
    layout_setting,
    pp_from_processes,
    scan,
    stated_quantization,
    tp_from_processes,
)
from mcache.core.logs.literals import balanced, call_keywords, literal_dict

NAME = "sglang"
_SIZE = r"(\d+(?:\.\d+)?) ?GB"

PATTERNS = [
    ("mamba", re.compile(r"(?:max_mamba_cache_size: (\d+), |Mamba Cache is allocated\. )conv_state(?: size:)? " + _SIZE
                         + r", ssm_state(?: size:)? " + _SIZE),
     lambda m: ([("max_mamba_cache_size", int(m[1]), m[1])] if m[1] else [])
     + [("conv_state_gb", float(m[2]), f"{m[2]} GB"), ("ssm_state_gb", float(m[3]), f"{m[3]} GB")]),
    ("intermediate", re.compile(r"intermediate_ssm_state_cache(?: size:)? " + _SIZE),
     lambda m: [("intermediate_ssm_state_gb", float(m[1]), f"{m[1]} GB")]),
    ("kv", re.compile(r"KV Cache is allocated\. (?:dtype: torch\.(\w+), )?#tokens: (\d+), (?:K size: " + _SIZE
                      + ", V size: " + _SIZE + "|KV size: " + _SIZE + ")"),
     lambda m: [("kv_tokens", int(m[2]), m[2])]
     + ([("k_size_gb", float(m[3]), f"{m[3]} GB"), ("v_size_gb", float(m[4]), f"{m[4]} GB")] if m[3]
        else [("kv_size_gb", float(m[5]), f"{m[5]} GB")])
     + ([("kv_dtype", m[1], m[1])] if m[1] else [])),
    ("summary", re.compile(r"max_total_num_tokens=(\d+),.*?max_running_requests=(\d+), context_len=(\d+)"),
     lambda m: [("max_total_num_tokens", int(m[1]), m[1]), ("max_running_requests", int(m[2]), m[2])]),
    ("cap", re.compile(r"max_running_requests is capped to (\d+) by the mamba state cache \(max_mamba_cache_size=(\d+), "
                       r"(\d+) state slots per request\)"),
     lambda m: [("max_running_requests_capped", int(m[1]), m[1]), ("max_mamba_cache_size", int(m[2]), m[2]),
                ("state_slots_per_request", int(m[3]), m[3])]),
]
VERSION = re.compile(r"(?:sglang|SGLang)(?: version:?| v)\s*v?(\d+\.\d+(?:\.\d+)?\S*)")
LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=" + _SIZE)
LOAD_END = re.compile(r"Load weight end\..*?type=(\w+).*?avail mem=" + _SIZE + ", mem usage=" + _SIZE)
CONTEXT = re.compile(r"context_len=(\d+)")
SERVER_ARGS = re.compile(r"server_args=(?=ServerArgs\(|\{)")
# A line only a started server prints: entrypoints/http_server.py's "The server is fired up and ready to roll!" once the
# scheduler (its pools sized and checked) answers a warm-up request; uvicorn's "Application startup complete" before it
STARTED = re.compile(r"The server is fired up and ready to roll|Application startup complete")
MARKS = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [A-Z]{2,4}\d+)*\] |Load weight (?:begin|end)\.|Memory pool end\.|"
                   r"server_args=(?:ServerArgs\(|\{)|Mamba Cache is allocated|KV Cache is allocated|max_mamba_cache_size")
SETTINGS = ("context_length", "mem_fraction_static", "mamba_full_memory_ratio", "max_mamba_cache_size",
            "max_running_requests", "disable_radix_cache", "mamba_radix_cache_strategy", "disable_overlap_schedule",
            "mamba_ssm_dtype", "kv_cache_dtype", "page_size", "speculative_num_steps", "chunked_prefill_size",
            "max_total_tokens", "speculative_draft_kv_cache_dtype", "qsa_indexer_dtype",
            "mamba_scheduler_strategy")  # 0.5.7-0.5.13's name of mamba_radix_cache_strategy (engines/sglang.py RENAMED)
LAYOUT = {"tp_size": "tp", "pp_size": "pp", "dp_size": "dp"}
# The quantization methods that name the one format the weights are stored in (srt/layers/quantization/__init__.py,
# the 0.5 line): fp8, w8a8_fp8 and modelopt_fp8 (FP8), modelopt_fp4 (NVFP4), mxfp4, w8a8_int8. Not here, as they name a
# method of several formats: modelopt (its checkpoint's FP8 or NVFP4), awq, gptq, auto-round, compressed-tensors.
WEIGHT_FORMATS = {"fp8": "fp8", "w8a8_fp8": "fp8", "modelopt_fp8": "fp8", "modelopt_fp4": "nvfp4", "mxfp4": "mxfp4",
                  "w8a8_int8": "int8"}
TORCH_KV = {"bfloat16": "auto", "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}


def score(lines: list[LogLine], text: str) -> int:
    return len(MARKS.findall(text[:1_000_000])) + len(figures(lines))


def figures(lines: list[LogLine]) -> list[Printed]:
    """The figures, the draft model's pools (a rank's second KV line) named apart."""
    out, seen = [], set()
    for p in scan(lines, PATTERNS):
        if p.key in ("kv_tokens", "k_size_gb", "v_size_gb", "kv_size_gb", "kv_dtype"):
            key = (p.process, p.key)
            p = Printed("draft_" + p.key, p.value, p.shown, p.line, p.process, p.stage) if key in seen else p
            seen.add(key)
        out.append(p)
    return out


def read(lines: list[LogLine]) -> EngineLog:
    log = EngineLog(NAME, settings={}, setting_lines={}, other_settings={}, measured=[], figures=figures(lines))
    before: dict[str | None, tuple[int, str, int]] = {}  # process -> (half-steps of error, shown, line)
    for line in lines:
        text = line.text
        if log.version is None and (m := VERSION.search(text)):
            log.version, log.version_line = m[1], line.number
        if m := SERVER_ARGS.search(text):
            whole, args = _server_args(text, m.end())
            if args is not None:
                _args(log, args, line.number)
            elif whole:
                log.unread_lines.append(line.number)
        if m := LOAD_BEGIN.search(text):
            before.setdefault(line.process, (1, m[1], line.number))
        if (m := LOAD_END.search(text)) and not any(x.name == "weights" and x.process == line.process
                                                     for x in log.measured):
            log.architecture = log.architecture or m[1]
            log.measured.append(Measured("weights", gib(m[3]), half_step(m[3], GIB), "weights_bytes", f"{m[3]} GB",
                                         line.number, line.process))
            if line.process not in before:  # the free memory before the load: what is left plus what the load took
                total = f"{float(m[2]) + float(m[3]):.{max(_decimals(m[2]), _decimals(m[3]))}f}"
                before[line.process] = (2, total, line.number)
        if (m := CONTEXT.search(text)) and "context_length" not in log.settings:
            log.settings["context_length"], log.setting_lines["context_length"] = int(m[1]), line.number
    for process, (steps, shown, number) in before.items():  # a sum of two rounded figures: two half-steps
        log.measured.append(Measured("free_memory_before_load", gib(shown), half_step(shown, GIB) * steps,
                                     "pre_model_load_memory_bytes", f"{shown} GB", number, process))
    for p in log.figures:
        if p.key == "kv_dtype" and "kv_cache_dtype" not in log.settings:
            log.settings["kv_cache_dtype"], log.setting_lines["kv_cache_dtype"] = TORCH_KV.get(p.value, p.value), p.line
    log.tp = tp_from_processes(lines) if log.tp is None else log.tp
    log.pp = pp_from_processes(lines) if log.pp is None else log.pp
    log.dp = dp_from_processes(lines) if log.dp is None else log.dp
    return log


def _server_args(text: str, start: int) -> tuple[bool, dict | None]:
    """Whether a `server_args=` line is whole, and its settings: a `ServerArgs(…)` repr, or the dict later builds print
    in its place (`server_args={'model_path': …}`, as lmsysorg/sglang:v0.5.19 logs it); None when it is cut or cannot
    be read."""
    if text.startswith("{", start):
        found = balanced(text, start)
        return found is not None, literal_dict(found) if found else None
    call = balanced(text, start + len("ServerArgs"))
    return call is not None, call_keywords("ServerArgs" + call) if call else None


def _decimals(shown: str) -> int:
    return len(shown.partition(".")[2])


def _args(log: EngineLog, args: dict, line: int) -> None:
    model = args.get("model_path")
    if isinstance(model, str):
        log.model = model
    for name, value in args.items():
        if name == "quantization":
            stated_quantization(log, value, line)
        elif name in LAYOUT:
            layout_setting(log, LAYOUT[name], value, line)
        elif name == "enable_dp_attention" and isinstance(value, bool):
            log.attention_dp = value
        elif name in SETTINGS and value is not None:
            log.settings[name], log.setting_lines[name] = value, line
        else:
            log.other_settings[name] = value
    # A DFLASH draft (engines/sglang.py DFLASH_FROM) is one step of speculative_num_draft_tokens, the bonus token
    # among them: mcache's draft is that less one (the line shows it resolved: entrypoints/engine.py logs
    # server_args.resolved_dict() from 0.5.19, and earlier releases resolve the fields themselves)
    if str(args.get("speculative_algorithm")).upper() == "DFLASH":
        log.settings.pop("speculative_num_steps", None)
        tokens = args.get("speculative_num_draft_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 1:
            log.settings["speculative_num_steps"], log.setting_lines["speculative_num_steps"] = tokens - 1, line
    # 0.5.22's and 0.5.23's arg_groups/parallel_hook.py handle_deprecated_dp_attention moves `--dp-size N --enable-dp-attention` to
    # attn_dp_size=N (dp_size 1, enable_dp_attention False): a server_args line showing it is attention DP of width N
    attn_dp = args.get("attn_dp_size")
    if isinstance(attn_dp, int) and not isinstance(attn_dp, bool) and attn_dp > 1:
        layout_setting(log, "dp", attn_dp, line)
        log.dp_name, log.attention_dp = "attn_dp_size", True

