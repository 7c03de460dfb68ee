"""Parsing and checks shared by commands: comma lists, the torch extra, devices, and error locations."""

import contextlib
import math
from pathlib import Path

from mcache.cli.options import flag
from mcache.core.errors import LayoutError, McacheError, ReceiverError, SpecError
from mcache.core.numbers import shown
from mcache.core.options import OptionError, SizeOptions
from mcache.core.spec.model import MAX_INT

# Fields of the core's errors that name an option (every other field is a spec field): the layout's, the GPU's, the
# capacity figures', the runtime's own names for options, `mcache plan`'s own, and every `SizeOptions` field.
OPTION_FIELDS = frozenset(("tp", "pp", "tp/pp", "pp_partition", "attention_dp", "attention_dp_size",
                           "gpu", "gpu_memory", "context", "concurrency",
                           "tokens_per_block", "draft_tokens", "engine", "target_concurrency", "prefix_caching", "draft_model",
                           "transfer_to_tp", "transfer_to_pp",
                           *SizeOptions.__struct_fields__))

# The range of every number option, by field (both ends included; a float's lower end excluded). Integers stop at
# 2**40, the bound of every spec number, so no count or token figure can overflow a float when it is shown.
COUNT, ZERO_UP, FRACTION = (1, MAX_INT), (0, MAX_INT), (0.0, 1.0)
# Draft tokens a step: every engine's speculative decoding drafts tens at most (vLLM num_speculative_tokens, SGLang
# speculative_num_draft_tokens, TensorRT-LLM max_draft_len); a state slot grows by one conv row and one snapshot per
# draft, so a larger count only sizes nonsense (and a `plan --draft` list of thousands sweeps for minutes).
MAX_DRAFT = 256
# Timed repetitions of one bench measurement: medians settle within tens; the bound keeps a typo from running for days.
MAX_REPS = 10_000
RANGES = {
    "tp": COUNT, "pp": COUNT, "transfer_to_tp": COUNT, "transfer_to_pp": COUNT, "pp_partition": COUNT,
    "attention_dp_size": COUNT, "max_batch": COUNT,
    "max_seq_len": COUNT, "block_size": COUNT,
    "kv_tokens": COUNT, "draft": (0, MAX_DRAFT), "reserved_slots": ZERO_UP, "snapshot_slots": ZERO_UP,
    "context": COUNT, "concurrency": COUNT, "target_concurrency": COUNT, "max_gpus": COUNT, "top": COUNT,
    "kernel_block_size": COUNT, "max_num_seqs": COUNT, "max_num_batched_tokens": COUNT,
    "max_mamba_cache_size": COUNT, "max_running_requests": COUNT, "max_total_tokens": COUNT,
    "chunked_prefill_size": (-1, MAX_INT),  # SGLang: -1 turns chunked prefill off
    "max_tokens": COUNT, "batch": COUNT, "reps": (1, MAX_REPS),
    "utilization": FRACTION, "mem_fraction_static": FRACTION, "free_gpu_memory_fraction": FRACTION,
    "mamba_full_memory_ratio": (0.0, 1000.0),
}


def check_ranges(values: dict[str, object]) -> None:
    """A one-line error naming the first option (by field, of `RANGES`) outside its range; a value may be a tuple of
    values (a comma list), None (not given) or a flag (not checked)."""
    for field, given in values.items():
        for value in given if isinstance(given, tuple) else (given,):
            if value is None or isinstance(value, bool) or field not in RANGES:
                continue
            low, high = RANGES[field]
            if isinstance(value, int) and not low <= value <= high:
                top = "2**40 (1099511627776)" if high == MAX_INT else high
                raise McacheError(f"{flag(field)}: an integer from {low} to {top}, got {shown(value)}")
            if isinstance(value, float) and not (math.isfinite(value) and low < value <= high):
                what = "a fraction" if (low, high) == FRACTION else "a number"
                raise McacheError(f"{flag(field)}: {what} in ({low:g}, {high:g}], got {value}")


def comma_ints(text: str, field: str) -> tuple[int, ...]:
    """`"1,8,32"` -> `(1, 8, 32)`; a `LayoutError` naming `field` for anything else."""
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise LayoutError(field, f"integers separated by commas, such as 20,32, got {text!r}") from None
    return values


def located(err: LayoutError, origin: str, engine: str | None = None, named: dict[str, str] | None = None) -> McacheError:
    """The one place a core error gets the option a user typed: an engine's refusal of a setting (an
    `EngineSettingError`) names the engine's option, a field of `named` what the command calls it, an option field
    (`OPTION_FIELDS`) its flag; any other field is a spec field, named with the spec file (and line)."""
    from mcache.core.deployment import EngineSettingError
    from mcache.core.load import line_of

    if named and err.field in named:
        return McacheError(f"{named[err.field]}: {err.expected}")
    if isinstance(err, EngineSettingError):
        return _engine_error(err, engine)
    if isinstance(err, ReceiverError):
        inner = err.inner
        detail = inner.expected if inner.field in ("tp", "pp") else f"the receiver's layout: {located(inner, origin)}"
        return McacheError(f"{flag(err.field)}: {detail}")
    if isinstance(err, OptionError) and err.instead:
        return McacheError(f"{flag(err.field)}: {err.expected} (use {flag(err.instead)})")
    if err.field in OPTION_FIELDS:
        return McacheError(f"{flag(err.field)}: {err.expected}")
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
    return McacheError(f"{flag(option_for(engine, err.field))}: {err.expected}")
