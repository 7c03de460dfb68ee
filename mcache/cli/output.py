"""Everything the CLI writes to stdout or to files goes through here: text, JSON, rich tables and markdown tables,
to stdout or atomically to a file. The renderers of each command (`size_output`, `engine_output`, `plan_output`,
`bench_output`, `check_output`) build what this module writes."""

from __future__ import annotations

import sys
from pathlib import Path

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int | None) -> str:
    """`39518208` -> `37.69 MiB` (binary units)."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{int(value)} B" if unit == 0 else f"{value:.2f} {_UNITS[unit]}"


def write_file(output: Path, text: str) -> None:
    """Write `text` to `output` atomically; a failure is one line naming the file."""
    from mcache.core.errors import McacheError
    from mcache.core.files import write_atomic

    try:
        write_atomic(output, text)
    except OSError as err:
        raise McacheError(f"{output}: output: a writable file path ({err.strerror or type(err).__name__})") from None


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


def emit_text(text: str, output: Path | None = None) -> None:
    """Write `text` to `output` atomically, or to stdout."""
    if output is not None:
        write_file(output, text if text.endswith("\n") else text + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def rich_table(head: tuple[str, ...], rows, right, drop: tuple[str, ...] = ()):
    """A rich table of `rows` under `head`; `right(i, name)` says which columns are right-aligned. On a page too
    narrow for it, the `drop` columns go first (least important first; `print_blocks` says which), and what
    still does not fit folds onto a second line: a cell is never cut short (`18.…`)."""
    from rich.table import Table

    table = Table()
    for i, name in enumerate(head):
        table.add_column(name, justify="right" if right(i, name) else "left", overflow="fold")
    for row in rows:
        table.add_row(*row)
    table.droppable = drop
    return table


def _fit(table, console) -> list[str]:
    """Remove the table's droppable columns until it fits the console's width; the names removed."""
    dropped, unbounded = [], console.options.update_width(1 << 16)  # measure the natural width, not the clamped one
    for name in getattr(table, "droppable", ()):
        if console.measure(table, options=unbounded).maximum <= console.width:
            break
        table.columns = [c for c in table.columns if c.header != name]
        dropped.append(name)
    return dropped


NO_GPU_HINT = "no capacity section: name a GPU with --gpu (e.g. --gpu h200) or its memory with --gpu-memory (e.g. 141GiB)"


def print_blocks(blocks: list, output: Path | None) -> None:
    """Print rich tables and plain lines (written as they are: no wrapping, no markup)."""
    from rich.console import Console

    buf = None
    if output is not None:
        import io

        buf = io.StringIO()
    # Piped output must not be cut at 80 columns: give rich a wide page when it is no terminal.
    width = None if buf is None and sys.stdout.isatty() else 240
    console = Console(file=buf, width=width, color_system=None if buf else "auto", highlight=False, markup=False, emoji=False)
    for block in blocks:
        if isinstance(block, str):
            console.out(block)
            continue
        dropped = _fit(block, console)
        console.print(block)
        if dropped:
            console.out(f"(left out for width: {', '.join(dropped)}; a wider terminal or --format json shows them)")
    if buf is not None:
        emit_text(buf.getvalue(), output)


def markdown_table(head: tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def emit_json(data, output: Path | None) -> None:
    """Write JSON-ready data (lists, dicts, msgspec structs) as indented, strict JSON."""
    from mcache.core.files import json_text

    emit_text(json_text(data), output)


