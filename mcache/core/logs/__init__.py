"""Engine start-up logs read back: which engine wrote a log, its version, the model, the settings it shows, what it
measured (weights, free memory, the KV budget) and the figures it printed (blocks, tokens, slots, concurrency).

`lines` cleans a log's lines (timestamps, process prefixes, colour, wrapping); one module per engine (`vllm`,
`sglang`, `trtllm`) says what its lines mean, at which versions, with `read(lines) -> EngineLog` and
`figures(lines) -> list[Printed]` (the figures alone: `mcache explain` reads mcache's own log lines with it, so the
engine's figure and mcache's are read by one rule). Pure text work: nothing here sizes anything (`core/explain.py`
does, through `deployment.size_deployment`)."""

from __future__ import annotations

import re
from importlib import import_module
from typing import Any

from msgspec import Struct

from mcache.core.errors import McacheError
from mcache.core.logs.lines import LogLine, clean_lines

ENGINES = ("vllm", "sglang", "trtllm")
GIB = 1 << 30


class Printed(Struct, frozen=True):
    """One figure a log line printed: what it is (`key`, the same for the engine's lines and mcache's), its value,
    the text it was printed as (`shown`: `4.33x`, `5.98 GiB`), the line of the file, the process that wrote it and
    its PP stage."""

    key: str
    value: Any
    shown: str
    line: int = 0
    process: str | None = None
    stage: int = 0


class Measured(Struct, frozen=True):
    """A memory figure the engine measured, in bytes, with the half-step of the rounding it was printed at (`5.98 GiB`:
    half of 0.01 GiB), the engine setting it stands for in mcache's profile, the line and the process."""

    name: str
    bytes: int
    half_step: int
    setting: str
    shown: str
    line: int = 0
    process: str | None = None


class EngineLog(Struct):
    """What a start-up log says. `settings` are by the engine's own setting names, as mcache's profile names them
    where it has them (`setting_lines`: the line each came from); `other_settings` the rest the log shows; `measured`
    the memory figures it found; `figures` what it printed. `quantization` is the engine's quantization method as the
    log states it (line `quantization_line`), `weight_format` the format its weights are stored in where the method
    names one (the engine module's `WEIGHT_FORMATS`; None: the log states no method, or one of several formats).
    `tp`, `pp` and `dp` are the parallel sizes the log states (lines `tp_line`, `pp_line`, `dp_line`) or its processes
    show (no line), `dp_name` the data-parallel setting's name (None: not said), and `attention_dp` whether those ranks
    are attention DP (None: the log does not say)."""

    engine: str
    version: str | None = None
    version_line: int | None = None
    model: str | None = None
    architecture: str | None = None
    gpu: str | None = None
    gpu_bytes: int | None = None
    quantization: str | None = None
    quantization_line: int | None = None
    weight_format: str | None = None
    tp: int | None = None
    tp_line: int | None = None
    pp: int | None = None
    pp_line: int | None = None
    dp: int | None = None
    dp_line: int | None = None
    dp_name: str | None = None
    attention_dp: bool | None = None
    settings: dict[str, Any] = {}
    setting_lines: dict[str, int] = {}
    unread_lines: list[int] = []  # settings lines whole but not Python literals mcache reads (too deep, too long a number)
    other_settings: dict[str, Any] = {}
    measured: list[Measured] = []
    figures: list[Printed] = []
    started_line: int | None = None  # the first line that shows the engine past its start-up checks (`STARTED`)
    lines: int = 0
    processes: list[str] = []


class LogError(McacheError):
    """A log mcache cannot explain (not an engine's, cut before its cache is sized, ...): one line."""


def engine_module(name: str):
    return import_module(f"{__name__}.{name}")


def read_log(text: str, source: str = "log") -> EngineLog:
    """The `EngineLog` of a start-up log's text; a `LogError` naming `source` when no engine's lines are in it."""
    try:
        lines = clean_lines(text)
        return _read(lines, text, source)
    except ValueError as err:  # int() of a number longer than Python converts (4,300 digits): no engine prints one
        if "integer string conversion" not in str(err):
            raise
        raise LogError(f"{source}: a number of more digits than any engine prints; not a start-up log") from None
    except OverflowError:  # a memory figure past a float's range (309 digits), rounded to bytes
        raise LogError(f"{source}: a memory figure of more digits than any engine prints; not a start-up log") from None


def _read(lines: list[LogLine], text: str, source: str) -> EngineLog:
    """`read_log` of the log's cleaned lines."""
    scores = {name: engine_module(name).score(lines, text) for name in ENGINES}
    best = max(ENGINES, key=lambda name: scores[name])
    if scores[best] == 0:
        raise LogError(f"{source}: not a start-up log of vLLM, SGLang or TensorRT-LLM (none of their start-up lines is "
                       "in it)")
    module = engine_module(best)
    log = module.read(lines)
    for field in ("tp", "pp", "dp"):  # from a process's name or a settings line
        size, line = getattr(log, field), getattr(log, f"{field}_line")
        if size is not None and not 1 <= size <= MAX_RANKS:
            said = f"line {line}" if line else "the largest rank its lines name, + 1"
            raise LogError(f"{source}: a {field.upper()} size of {size} ({said}): an engine runs 1 to {MAX_RANKS}; not a "
                           "real start-up log")
    for m in log.measured:  # a figure of more memory than any machine holds: no engine measured it
        if abs(m.bytes) > MAX_MEASURED:
            raise LogError(f"{source}:{m.line}: {m.name} of {m.shown[:40]}: more memory than any GPU holds; not a real "
                           "start-up log")
    if (log.gpu_bytes or 0) > MAX_MEASURED:
        raise LogError(f"{source}: a GPU of {log.gpu_bytes / GIB:.3g} GiB: more memory than any GPU holds; not a real "
                       "start-up log")
    log.weight_format = getattr(module, "WEIGHT_FORMATS", {}).get(log.quantization)
    log.started_line = next((line.number for line in lines if module.STARTED.search(line.text)), None)
    log.lines = len(lines)
    log.processes = sorted({line.process for line in lines if line.process})
    return log


def stated_quantization(log: EngineLog, method, line: int, weak: bool = False) -> None:
    """Record the quantization method a line states (`None`, as a config line prints an unquantized model's, states
    none; `weak`: one the args line states outright wins)."""
    if method is None or method == "None" or (weak and log.quantization is not None):
        return
    log.quantization, log.quantization_line = str(method), line


def figures_of(engine: str, log_lines: list[str]) -> list[Printed]:
    """The figures printed in `log_lines` (mcache's own, unprefixed), read by the engine's rules."""
    return engine_module(engine).figures([LogLine(text, i + 1) for i, text in enumerate(log_lines)])


NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
MAX_RANKS = 4096  # a parallel size no deployment reaches (a log naming more is not a real one)
MAX_MEASURED = 1 << 50  # bytes: a memory figure past a pebibyte is no GPU's (a log printing one is not a real one)


def number(text: str) -> int | float:
    """`1,823,372` -> 1823372, `4.33` -> 4.33."""
    plain = text.replace(",", "")
    return float(plain) if "." in plain else int(plain)


def half_step(shown: str, unit: int) -> int:
    """Half of the last printed digit's step, in bytes (`5.98` GiB: 0.005 GiB)."""
    decimals = len(shown.partition(".")[2])
    return round(unit * 0.5 * 10 ** -decimals)


def scan(lines: list[LogLine], patterns: list[tuple[str, re.Pattern, Any]]) -> list[Printed]:
    """Every figure `patterns` find: (key, regex, how to turn the match into [(key, value, shown), ...])."""
    out = []
    for line in lines:
        for _, pattern, convert in patterns:
            m = pattern.search(line.text)
            if m:
                out += [Printed(k, v, shown, line.number, line.process, line.pp_rank) for k, v, shown in convert(m)]
    return out


def gib(shown: str) -> int:
    return round(float(shown) * GIB)


def tp_from_processes(lines: list[LogLine]) -> int | None:
    """The tensor-parallel size the log's processes show (largest TP rank + 1; None when none is named): a lower
    bound, as an excerpt may leave ranks out."""
    ranks = [line.ranks["TP"] for line in lines if "TP" in line.ranks]
    return max(ranks) + 1 if ranks else None


def pp_from_processes(lines: list[LogLine]) -> int | None:
    ranks = [line.ranks["PP"] for line in lines if "PP" in line.ranks]
    return max(ranks) + 1 if ranks else None


def dp_from_processes(lines: list[LogLine]) -> int | None:
    """The data-parallel size the processes show (`EngineCore_DP1`, `[… DP1 TP1]`: largest DP rank + 1; None when
    none is named), a lower bound as `tp_from_processes`."""
    ranks = [line.ranks["DP"] for line in lines if "DP" in line.ranks]
    return max(ranks) + 1 if ranks else None


def layout_setting(log: EngineLog, field: str, value, line: int, weak: bool = False) -> None:
    """Record the size of a parallel layout (`tp`, `pp`, `dp`) a line states (`weak`: not over one already stated)."""
    if not isinstance(value, int) or isinstance(value, bool) or (weak and getattr(log, field) is not None):
        return
    setattr(log, field, value)
    setattr(log, f"{field}_line", line)
