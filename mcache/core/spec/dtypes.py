"""Data types a cache buffer may use, with their sizes in bytes."""

from __future__ import annotations

ITEMSIZE = {
    "float32": 4,
    "bfloat16": 2,
    "float16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int64": 8,
    "int32": 4,
    "uint8": 1,
}

ALIASES = {
    "fp32": "float32",
    "float": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "fp8": "float8_e4m3fn",
    "float8": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
}

# Which dtypes each cache role accepts: fp8 only makes sense for the attention KV cache.
STATE_DTYPES = ("float32", "bfloat16", "float16")
KV_DTYPES = STATE_DTYPES + ("float8_e4m3fn", "float8_e5m2")


def canonical(name: str) -> str:
    """`"bf16"` -> `"bfloat16"`; raise `KeyError` for an unknown name."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in ITEMSIZE:
        raise KeyError(name)
    return key


def for_role(name: str, role: str) -> str | None:
    """The canonical name if `name` is a dtype the cache `role` accepts (`kv_dtype` takes fp8 too,
    every other role a float state dtype); None if it is not."""
    allowed = KV_DTYPES if role == "kv_dtype" else STATE_DTYPES
    try:
        key = canonical(name)
    except KeyError:
        return None
    return key if key in allowed else None


def allowed_for(role: str) -> str:
    """The dtypes `role` accepts, for error messages."""
    return ", ".join(KV_DTYPES if role == "kv_dtype" else STATE_DTYPES)


def itemsize(dtype: str) -> int:
    """Bytes per element of a canonical dtype name."""
    return ITEMSIZE[dtype]
