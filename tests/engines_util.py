"""Running an engine profile on a spec from the configs in tests/data/hf_configs (or a bundled spec)."""

from __future__ import annotations

from msgspec.structs import replace
from paths import HF_CONFIGS

from mcache.core.engines import run_engine
from mcache.core.engines.common import GIB, EngineInputs
from mcache.core.hf import import_hf
from mcache.core.load import load_spec
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout


def config_spec(stem: str, **changes):
    """The spec imported from `tests/data/hf_configs/<stem>.json`, with `changes` to its fields."""
    spec = import_hf(HF_CONFIGS / f"{stem}.json")
    return replace(spec, **changes) if changes else spec


def run(engine: str, spec, gpu: str | None = None, *, gpu_bytes: int | None = None, tp: int = 1, pp: int = 1,
        context: int | None = None, version: str | None = None, **settings):
    """`engine`'s run of `spec` (a spec, or a bundled name) on a catalogue GPU or `gpu_bytes`, or without memory, at
    `version` (None: the newest the engine's module models)."""
    spec = load_spec(spec) if isinstance(spec, str) else spec
    name, memory = lookup(gpu) if gpu else ("test GPU" if gpu_bytes else None, gpu_bytes)
    return run_engine(engine, EngineInputs(spec, ParallelLayout(tp=tp, pp=pp), name, memory, context, settings), version)


def gib(x: float) -> int:
    """`x` GiB in bytes, as an engine would measure it."""
    return int(x * GIB)
