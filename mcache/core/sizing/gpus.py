"""GPU memory: catalogue GPUs by any name people give them, a size parser, and the local GPU through NVML."""

from __future__ import annotations

import difflib
import functools
import re
from decimal import Decimal

from mcache.core.errors import LayoutError
from mcache.core.sizing.gpu_catalogue import CAPABILITY, CATALOGUE, Gpu

GIB = 1 << 30
MAX_BYTES = 1 << 50  # 1 PiB: bounds every size option, so a typo cannot ask for an absurd GPU

# Decimal units are powers of 1000, binary ones powers of 1024; a bare number or a bare K/M/G (which vLLM reads as
# binary and other tools as decimal) is refused rather than guessed.
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50}
UNITS_HELP = "GB = 10^9 B, GiB = 2^30 B; also B, KB, MB, TB, PB, KiB, MiB, TiB, PiB"


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


_VENDOR_WORDS = re.compile(r"^(?:nvidia|geforce|amd|instinct)+")


def _plain(name: str) -> str:
    """`name` lower-cased, without punctuation, spaces or leading vendor words: `NVIDIA GeForce RTX 4090` -> `rtx4090`."""
    return _VENDOR_WORDS.sub("", re.sub(r"[^a-z0-9]", "", name.lower()))


@functools.cache
def _names() -> dict[str, str]:
    """Every plain name of every catalogue GPU (its key, its driver name, its aliases) -> its key."""
    return {_plain(name): key for key, gpu in CATALOGUE.items() for name in (key, gpu.name, *gpu.aliases)}


def find_gpu(name: str) -> Gpu:
    """The catalogue GPU called `name`: its key, driver name (`NVIDIA H100 80GB HBM3`) or an alias, in any case and
    punctuation (`h200`, `NVIDIA H200`, `nvidia_h200`, `h200-141gb`); an unknown name lists the catalogue and suggests
    the closest."""
    plain = _plain(name)
    if plain in _names():
        return CATALOGUE[_names()[plain]]
    close = difflib.get_close_matches(plain, _names(), n=1) if len(plain) <= 40 else []
    hint = f"; did you mean {_names()[close[0]]}?" if close else ""
    raise LayoutError("gpu", f"one of {', '.join(CATALOGUE)}, got {_shown(name)} (or give --gpu-memory){hint}")


def catalogue_key(name: str | None) -> str | None:
    """The catalogue key of the GPU called `name`; None for one the catalogue does not hold (a `--gpu-memory` size, or
    none)."""
    return _names().get(_plain(name)) if name else None


def capability(name: str | None) -> tuple[int, int] | None | str:
    """The CUDA compute capability of the catalogue GPU called `name` (None: not a CUDA device), or `unknown` for a
    GPU the catalogue does not hold (a `--gpu-memory` size, or none)."""
    key = catalogue_key(name)
    return CAPABILITY.get(key, "unknown") if key else "unknown"


def sm_major(name: str | None) -> int | None:
    """The CUDA compute capability's major of the catalogue GPU called `name`; None for one that is not a CUDA device
    or that the catalogue does not hold."""
    cap = capability(name)
    return cap[0] if isinstance(cap, tuple) else None


def cuda_major_in(name: str | None, majors: tuple[int, ...]) -> bool:
    """Whether the GPU called `name` is a CUDA card whose compute capability's major is one of `majors`; a GPU the
    catalogue does not hold is assumed to be one (as the engines' rules assume a Hopper card)."""
    cap = capability(name)
    return cap == "unknown" or isinstance(cap, tuple) and cap[0] in majors


def vendor(name: str | None) -> str | None:
    """The vendor (gpu_catalogue.py `NVIDIA`, `AMD`) of the catalogue GPU called `name`; None for a GPU the catalogue
    does not hold (a `--gpu-memory` size, or none)."""
    key = catalogue_key(name)
    return CATALOGUE[key].vendor if key else None


def lookup(name: str) -> tuple[str, int]:
    """(driver name, total bytes) of the catalogue GPU called `name` (as `find_gpu` reads it)."""
    gpu = find_gpu(name)
    return gpu.name, gpu.memory


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
