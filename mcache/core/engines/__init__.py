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


def architecture_error(name: str, spec, version: str) -> str | None:
    """Why the engine `name` at the modelled release `version` cannot load `spec`'s architecture, in its words."""
    return import_module(f"{__name__}.{name}").architecture_error(spec, version)


def loaders(spec) -> list[str]:
    """`vLLM 0.33.0`, `TensorRT-LLM 1.2.0, main@151c21c`: each engine with the modelled releases that load the model's
    architecture (an engine that loads it at none is left out)."""
    from mcache.core.errors import LayoutError

    found = []
    for name in NAMES:
        releases = []
        for version in import_module(f"{__name__}.{name}").VERSIONS:
            try:
                if architecture_error(name, spec, version) is None:
                    releases.append(version)
            except LayoutError:  # a spec that names no architecture, of layer kinds the engine has no pool for
                continue
        if releases:
            found.append(f"{TITLES[name]} {', '.join(releases)}")
    return found
