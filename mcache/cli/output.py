"""Everything the CLI writes to stdout or to files goes through here: text, JSON, text tables and markdown tables,
to stdout or atomically to a file. The renderers of each command (`size_output`, `engine_output`, `plan_output`,
`bench_output`, `check_output`) build what this module writes."""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path

# Characters that a terminal acts on rather than shows: C0 controls but tab and newline (ESC starts a sequence that
# can clear the screen or write the clipboard), DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional
# marks and overrides that make a line read other than it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# ... and in text that must stay one line (an error message, a table cell), the line breaks and tabs too
_UNSAFE_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# A failed write that is the output's fault, not the user's input: a full disk, a quota, an I/O error.
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG}

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int | None) -> str:
    """`39518208` -> `37.69 MiB` (binary units)."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{int(value)} B" if unit == 0 else f"{value:.2f} {_UNITS[unit]}"


def safe_text(text: str, one_line: bool = False) -> str:
    """`text` with every character a terminal would act on shown as its escape (`\\x1b`, `\\u202e`), and with
    `one_line` its line breaks and tabs too: the one sanitizer of user-supplied text (names, notes, file names) on its
    way to a terminal or a text file."""
    unsafe = _UNSAFE_IN_LINE if one_line else _UNSAFE
    return unsafe.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def write_file(output: Path, text: str) -> None:
    """Write `text` to `output` atomically; a failure is one line naming the file (a full disk: an `OutputError`)."""
    from mcache.core.errors import McacheError, OutputError
    from mcache.core.files import write_atomic

    try:
        write_atomic(output, text)
    except OSError as err:
        kind = OutputError if err.errno in _OUTPUT_ERRNOS else McacheError
        raise kind(f"{output}: output: a writable file path ({err.strerror or type(err).__name__})") from None


def _write(text: str, output: Path | None) -> None:
    """`text`, ending in a newline, to `output` or stdout; a closed or failing stdout is an `OutputError` (and stdout
    is pointed at the null device, so the interpreter's last flush fails no more)."""
    text = text if text.endswith("\n") else text + "\n"
    if output is not None:
        write_file(output, text)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as err:
        from mcache.core.errors import OutputError

        _silence_stdout()
        why = "it was closed (a broken pipe)" if isinstance(err, BrokenPipeError) else err.strerror or type(err).__name__
        raise OutputError(f"output: stdout: cannot write, {why}; the output is incomplete") from None


def _silence_stdout() -> None:
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no file descriptor behind stdout (a test's capture)
        pass


def refuse_input_as_output(output: Path | None, *inputs: Path) -> None:
    """Refuse an `-o` that is one of the command's `inputs` (the same file, links resolved) before any work: writing
    it would destroy what the command reads."""
    import os

    from mcache.core.errors import McacheError

    if output is None or not output.exists():
        return
    for given in inputs:
        if given.exists() and os.path.samefile(output, given):
            raise McacheError(f"{output}: output: a file other than the input {given}, which it would overwrite")


def spec_inputs(path: Path) -> list[Path]:
    """The files reading the spec at `path` may read: the spec, or a checkpoint folder's config.json and safetensors
    index, and the quantization file beside it."""
    from mcache.core.hf.index import INDEX

    config = path / "config.json" if path.is_dir() else path
    index = [path / INDEX] if path.is_dir() else []
    return [path, config, config.with_name("hf_quant_config.json"), *index]


def draft_inputs(ref: str | None) -> list[Path]:
    """The files reading `--draft-model`'s drafter may read (none without one)."""
    return spec_inputs(Path(ref)) if ref else []


def check_writable(path: Path | None, what: str = "output") -> None:
    """Refuse, before any work, a path that cannot be written: a folder, or a file in a missing or read-only folder
    (`what`: the option, for the message)."""
    from mcache.core.errors import McacheError

    if path is None:
        return
    if path.is_dir():
        raise McacheError(f"{path}: {what}: a file path, not a folder")
    if not path.parent.is_dir():
        raise McacheError(f"{path}: {what}: a file in an existing folder")
    if not os.access(path.parent, os.W_OK):
        raise McacheError(f"{path}: {what}: a file in a writable folder")


def emit_text(text: str, output: Path | None = None) -> None:
    """Write `text` (sanitized: `safe_text`) to `output` atomically, or to stdout."""
    _write(safe_text(text), output)


def text_table(head: tuple[str, ...], rows, right, drop: tuple[str, ...] = ()):
    """A table of `rows` under `head` for `print_blocks`; `right(i, name)` says which columns are right-aligned. On a
    page too narrow for it, the `drop` columns go first (least important first; `print_blocks` says which), and what
    still does not fit folds onto a second line: a cell is never cut short (`18.…`)."""
    from mcache.cli.table import Table

    return Table(head, [[safe_text(cell, one_line=True) for cell in row] for row in rows],
                 {i for i, name in enumerate(head) if right(i, name)}, drop)


NO_GPU_HINT = "no capacity section: name a GPU with --gpu (e.g. --gpu h200) or its memory with --gpu-memory (e.g. 141GiB)"


def print_blocks(blocks: list, output: Path | None) -> None:
    """Print tables (`text_table`) and plain lines (written as they are: no wrapping, no markup; user text
    sanitized)."""
    import shutil

    from mcache.cli.table import render

    # Piped output must not be cut at 80 columns: a wide page when it is no terminal.
    tty = output is None and sys.stdout.isatty()
    width = shutil.get_terminal_size().columns if tty else 240
    lines = []
    for block in blocks:
        if isinstance(block, str):
            lines.append(safe_text(block))
            continue
        drawn, dropped = render(block, width)
        lines += drawn
        if dropped:
            lines.append(f"(left out for width: {', '.join(dropped)}; a wider terminal or --format json shows them)")
    _write("\n".join(lines), output)


def markdown_table(head: tuple[str, ...] | list[str], rows: list[list[str]]) -> str:
    """A Markdown table; a `|` inside a cell is escaped, so it stays one cell."""
    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(head), "|" + "|".join("---" for _ in head) + "|", *(line(row) for row in rows)])


def emit_json(data, output: Path | None) -> None:
    """Write JSON-ready data (lists, dicts, msgspec structs) as indented, strict JSON."""
    from mcache.core.files import json_text

    _write(json_text(data), output)  # strict JSON escapes every control character itself


