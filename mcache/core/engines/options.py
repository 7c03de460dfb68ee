"""Which `mcache size` option sets which engine setting. Each engine's module has its table (`FLAGS`: the options
it has, by `SizeOptions` field, and its setting for each, and `INSTEAD`: its own option for an mcache option it
lacks); this module looks them up. An option that the neutral model lacks belongs to the one engine whose table has
it."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from msgspec.structs import asdict

from mcache.core.engines import NAMES, TITLES
from mcache.core.options import OptionError, SizeOptions

# Options of the neutral model; those no engine's table has size only its own pool (refused with an engine).
NEUTRAL = ("max_seq_len", "utilization", "draft", "kv_dtype", "ssm_dtype", "conv_dtype", "block_size", "max_batch",
           "reserve", "weights", "kv_tokens", "reserved_slots", "snapshot_slots", "spec_scheme")
# Options of the model itself (how its weights are stored): every engine and the neutral model take them, as no setting
MODEL = ("weight_format",)
# The engines' settings for the parallel layout: vllm/engine/arg_utils.py (tensor_parallel_size,
# pipeline_parallel_size), sglang/srt/server_args.py (tp_size, pp_size).
PARALLEL = {"tensor_parallel_size": "tp", "tp_size": "tp", "pipeline_parallel_size": "pp", "pp_size": "pp"}


def _engine(name: str):
    """The engine module `name` (imported on first use, so the neutral model never loads the engines)."""
    return import_module(f"mcache.core.engines.{name}")


def _owner(option: str) -> str | None:
    """The engine an option of no neutral meaning belongs to (None: not an engine option)."""
    return next((name for name in NAMES if option in _engine(name).FLAGS), None)


def engine_settings(engine: str | None, options: SizeOptions) -> dict[str, Any]:
    """The settings `engine` gets from the options given; an `OptionError` for the first option (in field order)
    that the engine (or the neutral model, without an engine) does not have. The model's own options (`MODEL`) set
    no engine setting: `size_deployment` weighs the spec by them."""
    given = {option: value for option, value in asdict(options).items() if value is not None and option not in MODEL}
    if engine is None:
        for option in given:
            owner = None if option in NEUTRAL else _owner(option)
            if owner:
                raise OptionError(option, f"an option of {TITLES[owner]} (add --engine {owner})")
        return {}
    module, settings = _engine(engine), {}
    for option, value in given.items():
        if option not in NEUTRAL:
            owner = _owner(option)
            if owner is None:
                continue
            if owner != engine:
                raise OptionError(option, f"an option of {TITLES[owner]}, not of {TITLES[engine]}")
        elif not any(option in _engine(name).FLAGS for name in NAMES):
            raise OptionError(option, f"sizes mcache's neutral pool; {TITLES[engine]} sizes its own (drop --engine)")
        if option not in module.FLAGS:
            raise OptionError(option, f"{TITLES[engine]} has no such setting", module.INSTEAD.get(option))
        settings[module.FLAGS[option]] = value
    return settings


def mcache_option_for(setting: str, aliases: bool = True) -> str | None:
    """The field of the mcache option that means what an engine's `setting` (e.g. `max_num_seqs`, `max_model_len`)
    means: a neutral option that sets it, else (with `aliases`) the option of the engines' layout setting, or the one
    their option stands for where they lack it."""
    tables = [_engine(name) for name in NAMES]
    shared = next((option for t in tables for option, name in t.FLAGS.items() if name == setting and option in NEUTRAL), None)
    instead = next((option for t in tables for option, other in t.INSTEAD.items() if other == setting), None)
    return shared or (PARALLEL.get(setting) or instead if aliases else None)


def option_for(engine: str, setting: str) -> str:
    """The field of the option a user gives for `engine`'s `setting` (the setting itself when no option sets it); a
    setting an older release names otherwise (the module's `RENAMED`, where it has one) is the setting it became."""
    module = _engine(engine)
    setting = getattr(module, "RENAMED", {}).get(setting, setting)
    return next((option for option, name in module.FLAGS.items() if name == setting), setting)


def setting_of(engine: str, option: str) -> str:
    """`engine`'s own setting for the option `option` (a `SizeOptions` field it has): `max_seq_len` -> vLLM's
    `max_model_len`."""
    return _engine(engine).FLAGS[option]
