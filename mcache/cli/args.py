"""Parsing and checks shared by commands: comma lists, the torch extra, devices, and error locations."""

import contextlib
import math
from pathlib import Path

from mcache.core.errors import LayoutError, McacheError, SpecError
from mcache.core.numbers import shown
from mcache.core.spec.model import MAX_INT

# Settings errors name the option a user typed; every other field is a spec field.
OPTION_OF = {
    "tp": "--tp", "pp": "--pp", "tp/pp": "--tp/--pp", "pp_partition": "--pp-partition", "max_batch": "--max-batch",
    "max_seq_len": "--max-seq-len", "tokens_per_block": "--block-size", "draft_tokens": "--draft",
    "kv_tokens": "--kv-tokens", "reserved_slots": "--reserved-slots", "spec_scheme": "--spec-scheme",
    "snapshot_slots": "--snapshot-slots", "gpu": "--gpu", "gpu_memory": "--gpu-memory",
    "utilization": "--utilization", "reserve": "--reserve", "context": "--context", "concurrency": "--concurrency",
    "ssm_dtype": "--ssm-dtype", "kv_dtype": "--kv-dtype", "conv_dtype": "--conv-dtype",
}


# The range of every number option (both ends included; a float's lower end excluded). Integers stop at 2**40, the
# bound of every spec number, so no count or token figure can overflow a float when it is shown.
COUNT, ZERO_UP, FRACTION = (1, MAX_INT), (0, MAX_INT), (0.0, 1.0)
RANGES = {
    "--tp": COUNT, "--pp": COUNT, "--pp-partition": COUNT, "--max-batch": COUNT, "--max-seq-len": COUNT, "--block-size": COUNT,
    "--kv-tokens": COUNT, "--draft": ZERO_UP, "--reserved-slots": ZERO_UP, "--snapshot-slots": ZERO_UP,
    "--context": COUNT, "--concurrency": COUNT, "--target-concurrency": COUNT, "--max-gpus": COUNT, "--top": COUNT,
    "--kernel-block-size": COUNT, "--max-num-seqs": COUNT, "--max-num-batched-tokens": COUNT,
    "--max-mamba-cache-size": COUNT, "--max-running-requests": COUNT, "--max-total-tokens": COUNT,
    "--chunked-prefill-size": (-1, MAX_INT),  # SGLang: -1 turns chunked prefill off
    "--max-tokens": COUNT, "--batch": COUNT,
    "--utilization": FRACTION, "--mem-fraction-static": FRACTION, "--free-gpu-memory-fraction": FRACTION,
    "--mamba-full-memory-ratio": (0.0, 1000.0),
}


def check_ranges(values: dict[str, object]) -> None:
    """A one-line error naming the first option (of `RANGES`) outside its range; a value may be a tuple of values
    (a comma list), None (not given) or a flag (not checked)."""
    for option, given in values.items():
        for value in given if isinstance(given, tuple) else (given,):
            if value is None or isinstance(value, bool) or option not in RANGES:
                continue
            low, high = RANGES[option]
            if isinstance(value, int) and not low <= value <= high:
                top = "2**40 (1099511627776)" if high == MAX_INT else high
                raise McacheError(f"{option}: an integer from {low} to {top}, got {shown(value)}")
            if isinstance(value, float) and not (math.isfinite(value) and low < value <= high):
                what = "a fraction" if (low, high) == FRACTION else "a number"
                raise McacheError(f"{option}: {what} in ({low:g}, {high:g}], got {value}")


def comma_ints(text: str, field: str) -> tuple[int, ...]:
    """`"1,8,32"` -> `(1, 8, 32)`; a `LayoutError` naming `field` for anything else."""
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise LayoutError(field, f"integers separated by commas, such as 20,32, got {text!r}") from None
    return values


def located(err: LayoutError, origin: str, engine: str | None = None, options: dict[str, str] | None = None) -> McacheError:
    """The one place a core error gets the option a user typed: an engine's refusal of a setting (an
    `EngineSettingError`) names the engine's option, a field of `options` (a command's own, over `OPTION_OF`) its
    option; any other field is a spec field, named with the spec file (and line)."""
    from mcache.core.deployment import EngineSettingError
    from mcache.core.load import line_of

    if isinstance(err, EngineSettingError):
        return _engine_error(err, engine)
    names = OPTION_OF | (options or {})
    if err.field in names:
        return McacheError(f"{names[err.field]}: {err.expected}")
    line = None
    if origin.endswith((".yaml", ".yml")):
        with contextlib.suppress(OSError):
            line = line_of(Path(origin).read_text(), err.field)
    return SpecError(origin, err.field, err.expected, line)


def require_torch(command: str) -> None:
    """Raise a one-line error when the `gpu` extra (torch) is not installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise McacheError(f"{command}: needs torch (pip install 'mcache[gpu]')") from None


def check_device(device: str, command: str, allowed: tuple[str, ...] = ("cuda", "cpu", "meta")) -> None:
    """A device of one of the `allowed` types (`cuda:N` must exist here); else a one-line error."""
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in allowed:
        raise McacheError(f"{command}: --device: {', '.join(allowed)} (or cuda:N), got {device!r}")
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        raise McacheError(f"{command}: --device: {device} is not a CUDA device here (try --device cpu)")


def _engine_error(err: LayoutError, engine: str) -> McacheError:
    """An engine's refusal of a setting (an `EngineSettingError`), naming the option a user typed for it."""
    from mcache.core.engines.options import option_for

    if err.field == "engine":
        return McacheError(f"--engine {engine}: {err.expected}")
    return McacheError(f"{option_for(engine, err.field)}: {err.expected}")
