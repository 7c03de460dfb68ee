"""User-supplied regular expressions (compressed-tensors `re:` entries, GPTQModel `dynamic` keys), checked before
they run: Python's `re` backtracks, and a pattern such as `(.*.*)*X$` takes hours on one module name. A pattern
runs only when no repetition holds another repetition or an alternation, it repeats at most `MAX_REPEATS` times,
has no backreference and is at most `MAX_LENGTH` characters; its cost on a name is then at most cubic in the
name's length (well under a second for every module of a 128-layer model)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

try:  # the parser `re` compiles with (a private module; `sre_parse` before Python 3.11)
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre
    import sre_parse

from mcache.core.errors import SpecError

MAX_LENGTH = 512
MAX_REPEATS = 3
MAX_PATTERNS = 64  # regular expressions in one quantization config
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT} | ({sre.POSSESSIVE_REPEAT} if hasattr(sre, "POSSESSIVE_REPEAT") else set())
_BACKREFS = {sre.GROUPREF, sre.GROUPREF_EXISTS}
EXPECTED = (f"a regular expression of at most {MAX_LENGTH} characters with at most {MAX_REPEATS} repetitions, none "
            "inside another repetition or around an alternation, and no backreference (mcache runs no pattern that "
            "may backtrack without bound)")


@contextmanager
def quiet() -> Iterator[None]:
    """Parse and compile user patterns without Python's FutureWarnings ("possible nested set"): a warning about a
    checkpoint's pattern is no business of the terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield


def unsafe_reason(pattern: str) -> str | None:
    """Why `pattern` may backtrack without bound (None: it is safe to run). A pattern that does not compile is
    not judged here: `re.compile` says so."""
    if len(pattern) > MAX_LENGTH:
        return f"{len(pattern)} characters"
    try:
        with quiet():
            parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    repeats = 0
    stack = [(parsed, False)]
    while stack:
        items, in_repeat = stack.pop()
        for op, av in items:
            if op in _BACKREFS:
                return "a backreference"
            if op in _REPEATS and av[1] > 1:
                repeats += 1
                if in_repeat:
                    return "a repetition inside a repetition"
                stack.append((av[2], True))
            elif op is sre.BRANCH:
                if in_repeat:
                    return "an alternation inside a repetition"
                stack.extend((branch, in_repeat) for branch in av[1])
            elif op is sre.SUBPATTERN or op in (sre.ASSERT, sre.ASSERT_NOT) or op is getattr(sre, "ATOMIC_GROUP", None):
                stack.append((av[-1], in_repeat))
            elif op in _REPEATS:  # at most once: `x?`, `x{0,1}`
                stack.append((av[2], in_repeat))
    return f"{repeats} repetitions" if repeats > MAX_REPEATS else None


def checked(patterns: list[str], file: str, field: str) -> list[str]:
    """`patterns` (the regular expressions of `field` in `file`) when every one is safe to run; a `SpecError`
    naming the field and the first unsafe pattern otherwise."""
    if len(patterns) > MAX_PATTERNS:
        raise SpecError(file, field, f"at most {MAX_PATTERNS} regular expressions, got {len(patterns)}")
    for pattern in patterns:
        why = unsafe_reason(pattern)
        if why:
            raise SpecError(file, field, f"{EXPECTED}; got {pattern[:80]!r}{'...' if len(pattern) > 80 else ''} ({why})")
    return patterns
