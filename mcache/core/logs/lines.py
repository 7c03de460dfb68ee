"""The shared line cleaner of engine logs: what a terminal, a container or journald puts around an engine's
message is taken off, and what says which process wrote it is kept as the line's rank.

Taken off, in this order: ANSI colour and cursor codes; a journald prefix (`авг 18 14:14:54 host python3[28146]: `);
a `docker compose` service prefix (`vllm-1  | `); a leading ISO or container timestamp (`2026-07-25 13:42:38,525 - `,
`2026-09-12T00:22:48.123Z `, a log viewer's `2026-05-01 19:58:05.045 | `, a Kubernetes node's container log's
`2026-05-01T19:58:05.045+02:00 stdout F `); vLLM's process prefix (`(EngineCore_DP0 pid=10078) `,
`(Worker_TP1 pid=28146) `), its level and time (`INFO 08-13 10:57:43 [interface.py:935] `, also without the time or
the level), SGLang's `[2026-09-21 13:38:18 TP3] `, TensorRT-LLM's `[TRT-LLM] [I] ` and `[TensorRT-LLM][INFO] ` (with an
optional leading `[10/31/2025-12:00:00] ` and `[RANK 0]`). The white space every line starts with (a log pasted as an
indented Markdown code block) is taken off first; after it, a line that starts with white space continues the record
before it (an author's wrapping), and so does an unprefixed line that starts in lower case or with `(` after a record that does
not end a sentence. Pure text work: nothing here knows what a message means (the engine modules do)."""

from __future__ import annotations

import re
from textwrap import dedent

from msgspec import Struct

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
JOURNALD = re.compile(r"^\S{2,12}\s+\d{1,2} \d\d:\d\d:\d\d \S+ [\w.\-/]+\[\d+\]: ")
COMPOSE = re.compile(r"^[\w.\-]{1,64}\s*\| ")
_STAMP = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
# a timestamp's own separator: Python logging's ` - LEVEL -`, a log viewer's ` |` (Docker Desktop, Dozzle), or the
# stream and tag of a Kubernetes node's container log (CRI: ` stdout F`)
TIMESTAMP = re.compile(rf"^(?:\[{_STAMP}\]|{_STAMP})(?: - \w+ -| \|| (?:stdout|stderr) [FP])? ")
VLLM_PROCESS = re.compile(r"^\((?P<proc>[A-Za-z][\w]*?)(?: pid=(?P<pid>\d+))?\) ")
LEVEL = re.compile(r"^(?:(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) )?(?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )?"
                   r"\[[\w.\-]+\.py:\d+\] ")
PY_LOGGING = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )?")
SGLANG = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?P<ranks>(?: [A-Z]{2,4}\d+)*)\] ")
TRTLLM = re.compile(r"^(?:\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\] )?(?:\[TRT-LLM\] ?\[(?:RANK \d+\] ?\[)?[A-Z]\]|"
                    r"\[TensorRT-LLM\](?:\[RANK (?P<rank>\d+)\])?\[[A-Z]+\]) ?")
# vLLM names a worker by its parallel ranks: Worker_TP1, Worker_PP1_TP0, Worker_TP12_EP12, EngineCore_DP0
RANK_PARTS = re.compile(r"(?:^|_)(DP|PP|TP|EP)(\d+)")
MAX_LINE = 100_000  # characters of one record kept (a real one is under 10,000: the vLLM args line)


class LogLine(Struct, frozen=True):
    """One record of the log: its message without the prefixes, which process wrote it (`process`: vLLM's
    `Worker_TP1`, SGLang's `TP3`, TensorRT-LLM's `RANK 0`; None: not said), its parallel ranks (`{"TP": 1}`), and the
    line of the file it starts on (1-based)."""

    text: str
    number: int
    process: str | None = None
    ranks: dict[str, int] = {}

    @property
    def rank(self) -> int:
        """The tensor-parallel rank that wrote it (0 when not said)."""
        return self.ranks.get("TP", 0)

    @property
    def pp_rank(self) -> int:
        return self.ranks.get("PP", 0)


def _strip(line: str) -> tuple[str, str | None, bool]:
    """(message, process, whether a prefix was found) of one physical line."""
    found, process = False, None
    for pattern in (JOURNALD, COMPOSE, TIMESTAMP):
        m = pattern.match(line)
        if m:
            line, found = line[m.end():], True
    m = VLLM_PROCESS.match(line)
    if m:
        line, process, found = line[m.end():], m.group("proc"), True
    m = SGLANG.match(line)
    if m:
        line, found = line[m.end():], True
        process = m.group("ranks").strip() or process
    m = TRTLLM.match(line)
    if m:
        line, found = line[m.end():], True
        process = f"RANK {m.group('rank')}" if m.group("rank") else process
    m = LEVEL.match(line) or PY_LOGGING.match(line)
    if m:
        line, found = line[m.end():], True
    return line, process, found


def ranks_of(process: str | None) -> dict[str, int]:
    """The parallel ranks a process name states (`Worker_DP0_TP1`: {"DP": 0, "TP": 1}; `RANK 2`: TP 2)."""
    if not process:
        return {}
    if process.startswith("RANK "):
        return {"TP": int(process[5:])}
    return {kind: int(n) for kind, n in RANK_PARTS.findall(process.replace(" ", "_"))}


def clean_lines(text: str) -> list[LogLine]:
    """The records of a log's `text`, prefixes taken off (see the module's docstring)."""
    out: list[LogLine] = []
    last_prefixed = False
    for number, raw in enumerate(dedent(text).splitlines(), 1):
        raw = ANSI.sub("", raw).replace("\r", "")
        if not raw.strip():
            continue
        message, process, prefixed = _strip(raw.rstrip())
        if out and not prefixed and _continues(raw, message, out[-1], last_prefixed):
            prev = out[-1]
            out[-1] = LogLine((prev.text + " " + message.strip())[:MAX_LINE], prev.number, prev.process, prev.ranks)
            continue
        out.append(LogLine(message.strip()[:MAX_LINE], number, process, ranks_of(process)))
        last_prefixed = prefixed
    return out


def _continues(raw: str, message: str, prev: LogLine, prev_prefixed: bool) -> bool:
    """Whether an unprefixed physical line continues the record before it."""
    if raw[:1] in (" ", "\t"):
        return True
    return (not prev_prefixed and (message[:1].islower() or message[:1] == "(")
            and not prev.text.endswith((".", ":", "!", "}", ")")) and " " in message)
