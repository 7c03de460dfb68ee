"""Engine profiles: the estimator's buffer declarations pooled, padded and counted the way vLLM, SGLang and
TensorRT-LLM do it, so `mcache size --engine` gives the figures (and the log lines) that engine will.

One module per engine (`vllm`, `sglang`, `trtllm`), each with `VERSIONS` (the releases it models, oldest first),
`run(inputs) -> EngineRun` and `serve_command(args) -> str` (what starts that engine on a deployment); `common` holds
what they share, `versions` which modelled release answers for a version. Pure arithmetic on the declarations: no
engine package is imported.
"""

from __future__ import annotations

from importlib import import_module

NAMES = ("vllm", "sglang", "trtllm")
TITLES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


def run_engine(name: str, inputs, version: str | None = None):
    """Run the profile `name` (one of `NAMES`) on `inputs` (an `EngineInputs`) by the rules of the modelled release
    that answers for `version` (None: the newest); the run carries which release that was."""
    from msgspec.structs import replace

    from mcache.core.engines.versions import resolve

    module = import_module(f"{__name__}.{name}")
    resolved = resolve(TITLES[name], module.VERSIONS, version)
    run = module.run(replace(inputs, version=resolved.modelled))
    run.version = resolved
    return run


def newest_version(name: str) -> str:
    """The newest release the profile `name` models (what a run without `--engine-version` uses)."""
    return import_module(f"{__name__}.{name}").VERSIONS[-1]


def serve_command(name: str, args):
    """What starts the engine `name` on the deployment `args` (a `ServeArgs`): its command line, or its options."""
    return import_module(f"{__name__}.{name}").serve_command(args)
