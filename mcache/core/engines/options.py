"""Which `mcache size` option sets which engine setting. Each engine's module has its table (`FLAGS`: the mcache
options it has and its setting for each, and `INSTEAD`: its own option for an mcache option it lacks); this module
looks them up. An option that the neutral model lacks belongs to the one engine whose table has it."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from mcache.core.engines import NAMES, TITLES
from mcache.core.errors import McacheError

# mcache options of the neutral model; those no engine's table has size only its own pool (refused with an engine).
NEUTRAL = ("--max-seq-len", "--utilization", "--draft", "--kv-dtype", "--ssm-dtype", "--conv-dtype", "--block-size",
           "--max-batch", "--reserve", "--weights", "--kv-tokens", "--reserved-slots", "--snapshot-slots", "--spec-scheme")
# The engines' flags for the parallel layout: vllm/engine/arg_utils.py (--tensor-parallel-size,
# --pipeline-parallel-size), sglang/srt/server_args.py (--tp-size, --pp-size).
PARALLEL = {"--tensor-parallel-size": "--tp", "--tp-size": "--tp", "--pipeline-parallel-size": "--pp", "--pp-size": "--pp"}


def _engine(name: str):
    """The engine module `name` (imported on first use, so the neutral model never loads the engines)."""
    return import_module(f"mcache.core.engines.{name}")


def _owner(option: str) -> str | None:
    """The engine an option of no neutral meaning belongs to (None: not an engine option)."""
    return next((name for name in NAMES if option in _engine(name).FLAGS), None)


def engine_settings(engine: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """The settings `engine` gets from the options the user gave (`given`: option -> value, None when not given);
    a one-line error for an option the engine (or the neutral model, without `--engine`) does not have."""
    given = {option: value for option, value in given.items() if value is not None}
    if engine is None:
        for option in given:
            owner = None if option in NEUTRAL else _owner(option)
            if owner:
                raise McacheError(f"{option}: an option of {TITLES[owner]} (add --engine {owner})")
        return {}
    module, settings = _engine(engine), {}
    for option, value in given.items():
        if option not in NEUTRAL:
            owner = _owner(option)
            if owner is None:
                continue
            if owner != engine:
                raise McacheError(f"{option}: an option of {TITLES[owner]}, not of {TITLES[engine]}")
        elif not any(option in _engine(name).FLAGS for name in NAMES):
            raise McacheError(f"{option}: sizes mcache's neutral pool; {TITLES[engine]} sizes its own (drop --engine)")
        if option not in module.FLAGS:
            other = module.INSTEAD.get(option)
            raise McacheError(f"{option}: {TITLES[engine]} has no such setting" + (f" (use {other})" if other else ""))
        settings[module.FLAGS[option]] = value
    return settings


def mcache_option_for(flag: str) -> str | None:
    """The mcache option that means what an engine's `flag` (e.g. `--max-num-seqs`, `--max-model-len`) means."""
    setting = flag.removeprefix("--").replace("-", "_")
    tables = [_engine(name) for name in NAMES]
    shared = next((option for t in tables for option, name in t.FLAGS.items() if name == setting and option in NEUTRAL), None)
    instead = next((option for t in tables for option, other in t.INSTEAD.items() if other == flag), None)
    return PARALLEL.get(flag) or shared or instead


def option_for(engine: str, setting: str) -> str:
    """The option a user types for `engine`'s `setting` (for error messages)."""
    return next((option for option, name in _engine(engine).FLAGS.items() if name == setting), f"--{setting}")
