"""Plain-text tables in a heavy-headed box, as rich draws them, at a fraction of rich's start-up and render cost
(`mcache size` must start within 1.3x a bare typer + rich import; rich's Table alone cost a third of that).

Cells are laid out by display width (wide East Asian characters take two columns). A table wider than its page
first loses its `drop` columns, least important first; what still does not fit is folded onto more lines, at
spaces where it can be: a cell is never cut short, and a number never folded."""

from __future__ import annotations

from unicodedata import east_asian_width


class Table:
    """A table to print: `head`, `rows` of strings, the indices of the columns to right-align, and the names of
    the columns to leave out first on a narrow page."""

    def __init__(self, head: tuple[str, ...], rows: list[list[str]], right: set[int], drop: tuple[str, ...] = ()):
        self.head, self.rows, self.right, self.drop = head, rows, right, drop


def width(text: str) -> int:
    """Columns `text` takes on a terminal."""
    return sum(2 if east_asian_width(ch) in "WF" else 1 for ch in text)


def render(table: Table, page: int) -> tuple[list[str], list[str]]:
    """The table's lines within `page` columns, and the names of the columns left out to fit."""
    keep = list(range(len(table.head)))
    natural = [max(width(cell) for cell in [table.head[i], *(row[i] for row in table.rows)]) for i in keep]
    dropped = []
    for name in table.drop:
        if _total(natural[i] for i in keep) <= page:
            break
        column = table.head.index(name)
        keep.remove(column)
        dropped.append(name)
    widths = _narrowed(table, keep, [natural[i] for i in keep], page)
    lines = [_edge("┏━┳┓", widths), *_row([table.head[i] for i in keep], keep, widths, table.right, "┃", bottom=True),
             _edge("┡━╇┩", widths)]
    for row in table.rows:
        lines += _row([row[i] for i in keep], keep, widths, table.right, "│")
    lines.append(_edge("└─┴┘", widths))
    return lines, dropped


def _total(widths) -> int:
    widths = list(widths)
    return sum(widths) + 3 * len(widths) + 1  # a space each side of a cell, a rule between and around


def _narrowed(table: Table, keep: list[int], widths: list[int], page: int) -> list[int]:
    """Column widths that fit `page`: the widest column gives a column at a time, down to its longest word
    (no word is folded while another column can still give), then down to its longest number (a word with a digit:
    a number is never folded; a table of such words wider than the page overflows it)."""
    def longest(numbers: bool) -> list[int]:
        return [max([width(word) for cell in [table.head[i], *(row[i] for row in table.rows)] for word in cell.split()
                     if not numbers or any(ch.isdigit() for ch in word)] or [1]) for i in keep]

    for floor in (longest(False), longest(True)):
        while _total(widths) > page:
            give = [j for j, w in enumerate(widths) if w > max(floor[j], 1)]
            if not give:
                break
            widest = max(give, key=lambda j: widths[j])
            widths[widest] -= 1
    return widths


def _row(cells: list[str], keep: list[int], widths: list[int], right: set[int], rule: str, bottom: bool = False) -> list[str]:
    """The lines of one row; a header's (`bottom`) cells sit on its last line, a body's on its first."""
    folded = [_fold(cell, w) for cell, w in zip(cells, widths, strict=True)]
    height = max(len(f) for f in folded)
    if bottom:
        folded = [[""] * (height - len(f)) + f for f in folded]
    lines = []
    for n in range(height):
        parts = []
        for column, w, f in zip(keep, widths, folded, strict=True):
            text = f[n] if n < len(f) else ""
            pad = " " * (w - width(text))
            parts.append(f" {pad}{text} " if column in right else f" {text}{pad} ")
        lines.append(rule + rule.join(parts) + rule)
    return lines


def _fold(text: str, w: int) -> list[str]:
    """`text` in lines of at most `w` columns: words kept whole where they fit, longer ones cut at `w`."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        while width(word) > w:  # a word longer than the column: what fits goes on its own line
            if line:
                lines.append(line)
                line = ""
            cut = _fit_prefix(word, w)
            lines.append(word[:cut])
            word = word[cut:]
        candidate = f"{line} {word}" if line else word
        if width(candidate) <= w:
            line = candidate
        else:
            lines.append(line)
            line = word
    lines.append(line)
    return lines


def _fit_prefix(word: str, w: int) -> int:
    """How many characters of `word` fit in `w` columns (at least one)."""
    used = 0
    for n, ch in enumerate(word):
        used += width(ch)
        if used > w:
            return max(n, 1)
    return len(word)


def _edge(chars: str, widths: list[int]) -> str:
    left, line, cross, end = chars
    return left + cross.join(line * (w + 2) for w in widths) + end
