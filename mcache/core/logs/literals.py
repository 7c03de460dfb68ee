"""Python literals as engines log them (`non-default args: {...}`, `server_args=ServerArgs(a=1, ...)`), read without
evaluating anything: `ast.literal_eval` on each value; JSON's `null`/`true`/`false` (a config object's repr inside a
dict) read as Python's; a value that is not a literal (an enum, an object's repr) kept as its text, an enum's
`<Name.MEMBER: value>` repr (not Python syntax) as a string of it."""

from __future__ import annotations

import ast
import re
from typing import Any

MAX_TEXT = 100_000
# a quoted string (kept as it is), JSON's bare words, or an enum's repr (`<DynamicShapesType.BACKED: 'backed'>`, which
# vLLM's args line prints inside a compilation config from about 0.30)
_JSON_WORDS = re.compile(r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|\b(null|true|false)\b|(<[A-Za-z_][\w.]*: [^<>]*>)")
_WORDS = {"null": "None", "true": "True", "false": "False"}


def _pythonic(text: str) -> str:
    """`text` with JSON's bare words outside strings spelled as Python's, and an enum's repr as a string of it."""
    return _JSON_WORDS.sub(lambda m: m.group(1) or (repr(m.group(3)) if m.group(3) else _WORDS[m.group(2)]), text)


def _value(node: ast.AST, source: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.get_source_segment(source, node)


def balanced(text: str, start: int) -> str | None:
    """The bracketed text that opens at `text[start]` (`{`, `(` or `[`), through its closing bracket; strings are
    skipped. None when it is not closed (a cut line)."""
    pairs, depth, quote, i = {"{": "}", "(": ")", "[": "]"}, [], None, start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in pairs:
            depth.append(pairs[ch])
        elif depth and ch == depth[-1]:
            depth.pop()
            if not depth:
                return text[start:i + 1]
        i += 1
    return None


def _expression(text: str) -> ast.expr | None:
    """The expression `text` parses to, never evaluated (None when it does not parse)."""
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def literal_dict(text: str) -> dict[str, Any] | None:
    """The dict of a logged `{...}` (None when it cannot be read)."""
    text = _pythonic(text[:MAX_TEXT])
    node = _expression(text)
    if not isinstance(node, ast.Dict):
        return None
    out = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            out[key.value] = _value(value, text)
    return out


def call_keywords(text: str) -> dict[str, Any] | None:
    """The keyword arguments of a logged `Name(a=1, b='x', ...)` (None when it cannot be read)."""
    text = text[:MAX_TEXT]
    node = _expression(text)
    if not isinstance(node, ast.Call):
        return None
    return {kw.arg: _value(kw.value, text) for kw in node.keywords if kw.arg}
