"""The one JSON encoder of mcache: strict JSON (RFC 8259), so NaN and infinity are refused, never written."""

from __future__ import annotations

import json
import math

import msgspec

from mcache.core.errors import McacheError


def json_text(data, indent: int | None = 2) -> str:
    """Strict JSON text of `data` (builtins or msgspec structs); a non-finite number is a one-line `McacheError`."""
    plain = msgspec.to_builtins(data)
    try:
        return json.dumps(plain, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        where, value = _non_finite(plain, "$")
        raise McacheError(f"output: {where} is {value}, which JSON cannot hold; nothing was written") from None


def _non_finite(data, where: str) -> tuple[str, float] | tuple[None, None]:
    """The path (`$.rows[3].median_us`) and value of the first NaN or infinity in `data`."""
    if isinstance(data, float) and not math.isfinite(data):
        return where, data
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _non_finite(value, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}")
        if found[0] is not None:
            return found
    return None, None
