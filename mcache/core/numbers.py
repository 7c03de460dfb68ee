"""Integer helpers (`cdiv`, `shown`), and numbers in spec and config files that no field can hold: integers
too long for Python to read (over 4300 digits, `sys.get_int_max_str_digits`) and non-finite floats (`nan`, `inf`,
`1e400`). The YAML and JSON readers put a `Refused` marker in their place; `first_refused` finds the first one and
the field it is in, so the error names the field instead of showing a traceback or using the number."""

from __future__ import annotations

import math
from collections.abc import Callable

import yaml

_CSafe = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Refused:
    """A number read from a file that mcache will not use; `expected` says why, as an error message's tail, and
    `non_finite` that it is a NaN or an infinity (which transformers reads: a config may hold one in a field mcache
    never sizes)."""

    def __init__(self, expected: str, non_finite: bool = False):
        self.expected, self.non_finite = expected, non_finite

    def __repr__(self) -> str:
        return self.expected.rpartition("got ")[2]


def _integer(text: str) -> int | Refused:
    try:
        return int(text)
    except ValueError:  # over the interpreter's limit on digits
        return Refused(f"a number mcache can read, got an integer of {len(text.lstrip('+-'))} digits")


def _finite(text: str, value: float) -> float | Refused:
    return value if math.isfinite(value) else Refused(f"a finite number, got {text}", non_finite=True)


class SpecLoader(_CSafe):
    """PyYAML's safe loader (the C one when built) with refused numbers as `Refused` markers."""


def _yaml_int(loader: SpecLoader, node: yaml.ScalarNode) -> int | Refused:
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        return _integer(node.value.replace("_", ""))


def _yaml_float(loader: SpecLoader, node: yaml.ScalarNode) -> float | Refused:
    return _finite(node.value, loader.construct_yaml_float(node))


SpecLoader.add_constructor("tag:yaml.org,2002:int", _yaml_int)
SpecLoader.add_constructor("tag:yaml.org,2002:float", _yaml_float)

# Keyword arguments of `json.loads` that read refused numbers as `Refused` markers (NaN and Infinity included).
JSON_HOOKS = {
    "parse_int": _integer,
    "parse_float": lambda text: _finite(text, float(text)),
    "parse_constant": lambda text: Refused(f"a finite number, got {text}", non_finite=True),
}


def last_true(holds: Callable[[int], bool], low: int, high: int) -> int:
    """The largest `n` in [low, high) for which `holds(n)`, by bisection: `holds` is taken to hold at `low` (or `low`
    is a floor meaning none) and not at `high`, and to hold below any value where it holds (a monotone predicate)."""
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def cdiv(a: int, b: int) -> int:
    """`ceil(a / b)` in integers: exact for token and byte counts past 2**53, where a float would round."""
    return -(-a // b)


def shown(value: int) -> str:
    """`value` for a message, or how many digits it has when that is more than 30."""
    if abs(value) < 10**30:
        return str(value)
    sign = "a negative" if value < 0 else "a"
    if value.bit_length() > 14_000:  # str() refuses past 4300 digits
        return f"{sign} number of more than 4000 digits"
    return f"{sign} number of {len(str(abs(value)))} digits"


def first_refused(data: object, non_finite: bool = True) -> tuple[str, Refused] | None:
    """The dotted path (`a.b[2]`) and marker of the first `Refused` number in `data` (keys included), else None;
    with `non_finite=False`, NaN and infinities are left for the reader of their field to refuse.

    Walks without recursion and visits each container once, so neither a deeply nested file nor one whose
    containers are shared or refer to themselves can exhaust the stack or loop."""
    stack: list[tuple[str, object]] = [("", data)]
    seen: set[int] = set()
    while stack:
        path, value = stack.pop()
        if isinstance(value, Refused) and (non_finite or not value.non_finite):
            return path or "document", value
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                continue
            seen.add(id(value))
        if isinstance(value, dict):
            items = list(value.items())
            for key, _ in items:
                if isinstance(key, Refused):
                    return path or "document", key
            stack.extend((f"{path}.{key}" if path else str(key), v) for key, v in reversed(items))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None
