"""Engine profiles: the estimator's buffer declarations pooled, padded and counted the way vLLM, SGLang and
TensorRT-LLM do it, so `mcache size --engine` gives the figures (and the log lines) that engine will.

One module per engine (`vllm`, `sglang`, `trtllm`), each with `VERSIONS` (the releases it models, oldest first),
`run(inputs) -> EngineRun`, `serve_command(args) -> str` (what starts that engine on a deployment) and what `mcache
plan` reads of it (`plan_hooks`); `common` holds what they share, `versions` which modelled release answers for a
version. Pure arithmetic on the declarations: no engine package is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any, NamedTuple

NAMES = ("vllm", "sglang", "trtllm")
TITLES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
# Layer kinds whose caches an engine profile does not model unless its module names them in `MODELLED_KINDS`: a run
# that loads such a model is refused (one that does not load it says so, as for any model)
UNMODELLED_KINDS = {"indexer": "a QSA indexer's keys and raw-key ring", "dsa_indexer": "a DSA indexer's pooled keys and tail",
                    "ple": "a PLE conv state"}


def run_engine(name: str, inputs, version: str | None = None):
    """Run the profile `name` (one of `NAMES`) on `inputs` (an `EngineInputs`) by the rules of the modelled release
    that answers for `version` (None: the newest); the run carries which release that was, and the layout asked (its
    stages' figures are a rank's; the replica's follow from the layout)."""
    from msgspec.structs import replace

    from mcache.core.engines.versions import resolve

    module = import_module(f"{__name__}.{name}")
    resolved = resolve(TITLES[name], module.VERSIONS, version)
    unmodelled = [UNMODELLED_KINDS[k] for k in UNMODELLED_KINDS
                  if getattr(inputs.spec, k) is not None and k not in getattr(module, "MODELLED_KINDS", ())]
    if unmodelled and module.architecture_error(inputs.spec, resolved.modelled) is None:
        from mcache.core.errors import LayoutError

        raise LayoutError("engine", f"a model whose caches mcache sizes as {TITLES[name]} does: how "
                                    f"{TITLES[name]} {resolved.modelled} sizes {' and '.join(unmodelled)} is not "
                                    "modelled yet (`mcache size` without --engine sizes them in mcache's own model)")
    run = module.run(replace(inputs, version=resolved.modelled))
    run.version, run.layout = resolved, inputs.layout
    return run


def newest_version(name: str) -> str:
    """The newest release the profile `name` models (what a run without `--engine-version` uses)."""
    return import_module(f"{__name__}.{name}").VERSIONS[-1]


def serve_command(name: str, args):
    """What starts the engine `name` on the deployment `args` (a `ServeArgs`): its command line, or its options."""
    return import_module(f"{__name__}.{name}").serve_command(args)


class PlanHooks(NamedTuple):
    """What `mcache plan` reads of an engine's module: the `SizeOptions` field of the batch setting it solves for
    (`SOLVED`), the engine's own figure of the smallest value of it that runs the most sequences of a run's context
    (`solve_hint(run) -> int | None`) and whether that figure is the answer (None: there is none) or a first guess
    (`SOLVE_HINT_EXACT`), the settings at which a replica runs up to n sequences (`solve_settings(n, run) ->
    dict`: that field at n, and what else n needs), and whether it takes attention DP narrower than TP (else at a
    width of TP alone: `FULL_WIDTH_ATTENTION_DP` says why, as its refusal does)."""

    solved: str
    solve_hint: Callable[[Any], int | None]
    hint_exact: bool
    solve_settings: Callable[[int, Any], dict[str, int]]
    narrow_attention_dp: bool


def plan_hooks(name: str) -> PlanHooks:
    """The hooks `mcache plan` reads of the engine `name` (its module, loaded on first use)."""
    module = import_module(f"{__name__}.{name}")
    return PlanHooks(module.SOLVED, module.solve_hint, module.SOLVE_HINT_EXACT,
                     module.solve_settings, module.FULL_WIDTH_ATTENTION_DP is None)


def architecture_error(name: str, spec, version: str) -> str | None:
    """Why the engine `name` at the modelled release `version` cannot load `spec`'s architecture, in its words."""
    return import_module(f"{__name__}.{name}").architecture_error(spec, version)


def loaders(spec) -> list[str]:
    """`vLLM 0.33.0`, `SGLang 0.5.20 to 0.5.23`: each engine with the modelled releases that load the model's
    architecture, consecutive ones as a range (an engine that loads it at none is left out)."""
    from mcache.core.errors import LayoutError

    found = []
    for name in NAMES:
        runs: list[list[str]] = []
        previous = False
        for version in import_module(f"{__name__}.{name}").VERSIONS:
            try:
                loads = architecture_error(name, spec, version) is None
            except LayoutError:  # a spec that names no architecture, of layer kinds the engine has no pool for
                loads = False
            if loads and previous:
                runs[-1].append(version)
            elif loads:
                runs.append([version])
            previous = loads
        if runs:
            found.append(f"{TITLES[name]} " + ", ".join(r[0] if len(r) == 1 else f"{r[0]} to {r[-1]}" for r in runs))
    return found
