"""GPU memory: a small catalogue, a size parser, and the local GPU through NVML when present."""

from __future__ import annotations

import re
from decimal import Decimal

from mcache.core.errors import LayoutError

MIB = 1 << 20
GIB = 1 << 30
MAX_BYTES = 1 << 50  # 1 PiB: bounds every size option, so a typo cannot ask for an absurd GPU

# Total memory as `nvidia-smi` reports it (`memory.total`, MiB), keyed by a lower-case name. This is what the
# driver lets CUDA allocate, not the marketing figure: an "80GB" H100 reports 81559 MiB (79.6 GiB, 85.5 GB;
# nvidia-smi in NVIDIA/nccl#1264 and the table in modal-labs/modal-client#2797), so `--gpu-memory 80GB` (74.5 GiB)
# would undercount it by 5 GiB.
CATALOGUE = {
    "h100-80gb": ("NVIDIA H100 80GB HBM3", 81559 * MIB),
    "h200": ("NVIDIA H200", 143771 * MIB),
    "b200": ("NVIDIA B200", 183359 * MIB),
    "a100-40gb": ("NVIDIA A100-SXM4-40GB", 40960 * MIB),
    "a100-80gb": ("NVIDIA A100-SXM4-80GB", 81920 * MIB),
    "l40s": ("NVIDIA L40S", 46068 * MIB),
    "rtx-4090": ("NVIDIA GeForce RTX 4090", 24564 * MIB),
}
ALIASES = {"h100": "h100-80gb", "a100": "a100-80gb", "4090": "rtx-4090", "rtx4090": "rtx-4090"}

# Decimal units are powers of 1000, binary ones powers of 1024; a bare number or a bare K/M/G (which vLLM reads as
# binary and other tools as decimal) is refused rather than guessed.
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
UNITS_HELP = "GB = 10^9 B, GiB = 2^30 B; also B, KB, MB, TB, KiB, MiB, TiB"


def parse_size(text: str, field: str, minimum: int = 0) -> int:
    """`"141GiB"` -> bytes, exactly (no float rounding); the unit is required (`UNITS_HELP`) unless the size is 0,
    and the size must be from `minimum` to `MAX_BYTES`."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    number, unit = (Decimal(match.group(1)), match.group(2).lower()) if match else (None, None)
    if unit == "" and number == 0:
        unit = "b"  # zero is zero in every unit
    if unit not in _UNITS:
        raise LayoutError(field, f"a size with its unit, such as 141GiB or 80GB ({UNITS_HELP}), got {_shown(text)}")
    amount = number * _UNITS[unit]
    if not minimum <= amount <= MAX_BYTES:
        least = f"{minimum // GIB} GiB" if minimum and minimum % GIB == 0 else f"{minimum} B"
        raise LayoutError(field, f"a size from {least} to 1 PiB (2^50 B), got {_shown(text)}")
    return int(amount)


def _shown(text: str) -> str:
    """`text`, cut to 40 characters (a 400-digit size is not worth repeating)."""
    text = text.strip()
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


def lookup(name: str) -> tuple[str, int]:
    """(full name, bytes) of a catalogue GPU, by case-insensitive name or alias."""
    key = name.strip().lower().replace(" ", "-")
    key = ALIASES.get(key, key)
    if key not in CATALOGUE:
        raise LayoutError("gpu", f"one of {', '.join(CATALOGUE)}, got {name!r} (or give --gpu-memory)")
    return CATALOGUE[key]


def nvml_query(query):
    """Run `query(pynvml)` with NVML initialised; None when nvidia-ml-py, the driver or the GPU is missing."""
    import os
    import sys
    from importlib.util import find_spec

    if sys.platform.startswith("linux") and not os.path.exists("/proc/driver/nvidia"):
        return None  # no NVIDIA driver loaded: skip importing nvidia-ml-py (10 ms of every start without a GPU)
    if find_spec("pynvml") is None:
        return None
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        return query(pynvml)
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


def nvml_text(value) -> str:
    """NVML strings are bytes in older nvidia-ml-py releases."""
    return value.decode() if isinstance(value, bytes) else str(value)


def local_gpu() -> tuple[str, int] | None:
    """(name, total bytes) of local GPU 0 through NVML, or None when there is none (or no nvidia-ml-py)."""

    def query(nv):
        handle = nv.nvmlDeviceGetHandleByIndex(0)
        return nvml_text(nv.nvmlDeviceGetName(handle)), int(nv.nvmlDeviceGetMemoryInfo(handle).total)

    return nvml_query(query)
