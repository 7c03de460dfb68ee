"""`mcache plan`: every combination of GPU, TP, PP, cache dtypes, speculative drafts and prefix caching at each
context, each sized by `size_deployment` (the path `mcache size` takes), then ranked.

A candidate `fits` when it starts (engines) and runs at least one sequence of the context; `sequences` is what
runs at once: the neutral model's memory-sized pool at the tightest stage, or the engine's running requests.
"""

from __future__ import annotations

import itertools
import re
import shlex
from bisect import bisect_right
from collections.abc import Callable
from math import prod
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from mcache.core.deployment import Deployment, EngineSettingError, size_deployment
from mcache.core.engines import serve_command
from mcache.core.engines.common import ServeArgs
from mcache.core.errors import LayoutError
from mcache.core.options import SizeOptions
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout
from mcache.core.sizing.weights import unknown_fields
from mcache.core.spec.model import ModelSpec

CONTEXTS = (8192, 32768, 131072)
TPS = (1, 2, 4, 8)
PPS = (1, 2)
FP8 = {"sglang": "fp8_e4m3"}  # each engine's spelling of an fp8 KV cache (others: fp8)
PREFIX = ("default", "on", "off")
LAYOUT_FIELDS = ("tp", "pp", "tp/pp")  # a layout the model cannot be split into is skipped, not an error
MAX_CANDIDATES = 1000  # a sweep sizes about 300 candidates a second on one core: answered within 5 s


class Axes(Struct, frozen=True):
    """What to sweep: catalogue GPUs, contexts, TP and PP sizes (up to `max_gpus` GPUs), KV and state dtypes
    (None: the default, the model's or the engine's), draft tokens, the neutral model's speculative schemes,
    and prefix caching (`default`: the engine's default; `on`/`off` for vLLM and SGLang)."""

    gpus: tuple[str, ...]
    contexts: tuple[int, ...] = CONTEXTS
    tps: tuple[int, ...] = TPS
    pps: tuple[int, ...] = PPS
    kv_dtypes: tuple[str | None, ...] = (None, "fp8")
    ssm_dtypes: tuple[str | None, ...] = (None,)
    drafts: tuple[int, ...] = (0,)
    schemes: tuple[str, ...] = ("intermediate",)
    prefix_caching: tuple[str, ...] = ("default",)
    max_gpus: int = 8


class Candidate(Struct, frozen=True):
    """One deployment and what it runs; `settings` reproduces it (a command line, or TensorRT-LLM's LLM-API
    options as JSON)."""

    gpu: str
    tp: int
    pp: int
    gpus: int
    context: int
    kv_dtype: str
    ssm_dtype: str
    draft: int
    spec_scheme: str
    prefix_caching: str
    fits: bool
    sequences: int
    sequences_per_gpu: float
    binding: str
    startup: str
    settings: str

    @property
    def config(self) -> tuple:
        """Everything but the context: one line of the sequences-against-context plot."""
        return (self.gpu, self.tp, self.pp, self.kv_dtype, self.ssm_dtype, self.draft, self.spec_scheme,
                self.prefix_caching)


class Plan(Struct, frozen=True):
    """The sweep's candidates, ranked (see `rank`), the best, the best of each GPU kind, and the layouts the
    model cannot be split into."""

    engine: str | None
    target: int | None
    candidates: list[Candidate]
    best: Candidate | None
    best_by_gpu: dict[str, Candidate]
    skipped: list[str]


def check_axes(spec: ModelSpec, engine: str | None, axes: Axes, target: int | None) -> None:
    """One-line errors for a sweep that cannot be run as asked."""
    if not axes.gpus:
        raise LayoutError("gpu", "at least one catalogue GPU")
    for name in axes.gpus:
        lookup(name)
    if target is not None and len(axes.contexts) != 1:
        raise LayoutError("target_concurrency", f"one --context to reach it at, got {len(axes.contexts)}")
    if any(c < 1 for c in axes.contexts):
        raise LayoutError("context", "positive token counts")
    if any(p not in PREFIX for p in axes.prefix_caching):
        raise LayoutError("prefix_caching", f"values among {', '.join(PREFIX)}")
    if engine in (None, "trtllm") and set(axes.prefix_caching) != {"default"}:
        raise LayoutError("prefix_caching", f"{'mcache' if engine is None else 'TensorRT-LLM'}'s profile has no prefix "
                                            "caching setting: leave it out")
    if engine and set(axes.schemes) != {"intermediate"}:
        raise LayoutError("spec_scheme", "the neutral model's speculative scheme; an engine has its own (drop it)")
    if unknown_fields(spec):
        raise LayoutError("weights", f"known weights at every layout: the spec leaves {', '.join(unknown_fields(spec))} "
                                     "null (fill it in, e.g. from mcache import-hf -o)")


def distinct(axes: Axes) -> Axes:
    """`axes` with each list's repeated values dropped (a value given twice is one candidate, not two)."""
    fields = ("gpus", "contexts", "tps", "pps", "kv_dtypes", "ssm_dtypes", "drafts", "schemes", "prefix_caching")
    return replace(axes, **{f: tuple(dict.fromkeys(getattr(axes, f))) for f in fields})


def check_size(axes: Axes, engine: str | None) -> None:
    """Refuse a sweep of more than `MAX_CANDIDATES` candidates before any is built, naming its longest list."""
    pps = sorted(p for p in axes.pps if p <= axes.max_gpus)
    layouts = sum(bisect_right(pps, axes.max_gpus // tp) for tp in axes.tps if tp <= axes.max_gpus)
    schemes = len(axes.schemes) if engine is None else 1
    drafts = sum(schemes if d else 1 for d in axes.drafts)
    lists = {"gpu": len(axes.gpus), "context": len(axes.contexts), "tp": len(axes.tps), "pp": len(axes.pps),
             "kv_dtype": len(axes.kv_dtypes), "ssm_dtype": len(axes.ssm_dtypes), "draft": len(axes.drafts),
             "spec_scheme": schemes, "prefix_caching": len(axes.prefix_caching)}
    total = prod((lists["gpu"], lists["context"], layouts, lists["kv_dtype"], lists["ssm_dtype"], drafts,
                  lists["prefix_caching"]))
    if total > MAX_CANDIDATES:
        longest = max(lists, key=lists.get)
        raise LayoutError(longest, f"a sweep of at most {MAX_CANDIDATES:,} candidates (GPUs x contexts x layouts x KV "
                                   f"dtypes x state dtypes x drafts x prefix settings), got {total:,}: shorten this "
                                   f"list of {lists[longest]:,} values or another")


def sweep(spec: ModelSpec, spec_arg: str, engine: str | None, axes: Axes, target: int | None = None,
          progress: Callable[[int, int], None] | None = None) -> Plan:
    """Size every combination of `axes` and rank them; `progress(done, total)` after each."""
    axes = distinct(axes)
    check_size(axes, engine)
    check_axes(spec, engine, axes, target)
    layouts = [(tp, pp) for tp in axes.tps for pp in axes.pps if tp * pp <= axes.max_gpus]
    drafts = [(d, s) for d in axes.drafts for s in (axes.schemes if d and not engine else ("intermediate",))]
    combos = list(itertools.product(axes.gpus, axes.contexts, layouts, axes.kv_dtypes, axes.ssm_dtypes, drafts,
                                    axes.prefix_caching))
    candidates, skipped, impossible = [], [], set()
    for i, (gpu, context, (tp, pp), kv, ssm, (draft, scheme), prefix) in enumerate(combos, 1):
        if (tp, pp) not in impossible:
            try:
                candidates.append(_candidate(spec, spec_arg, engine, gpu, context, tp, pp, kv, ssm, draft, scheme, prefix))
            except EngineSettingError:
                raise
            except LayoutError as err:
                if err.field not in LAYOUT_FIELDS and "." not in err.field:
                    raise
                impossible.add((tp, pp))
                skipped.append(f"tp {tp} pp {pp}: {err}")
        if progress:
            progress(i, len(combos))
    return rank(engine, candidates, target, skipped)


def _candidate(spec: ModelSpec, spec_arg: str, engine: str | None, gpu: str, context: int, tp: int, pp: int,
               kv: str | None, ssm: str | None, draft: int, scheme: str, prefix: str) -> Candidate:
    kv = FP8.get(engine, kv) if kv == "fp8" else kv
    prefix_caching = prefix == "on" if prefix != "default" and engine == "vllm" else None
    no_radix = True if prefix == "off" and engine == "sglang" else None  # SGLang's radix cache is on unless disabled
    options = SizeOptions(max_seq_len=context, kv_dtype=kv, ssm_dtype=ssm, draft=draft or None,
                          spec_scheme=scheme if draft and not engine else None,
                          enable_prefix_caching=prefix_caching, disable_radix_cache=no_radix)
    sized = size_deployment(spec, Deployment(ParallelLayout(tp=tp, pp=pp), lookup(gpu), engine, options, context))
    erun, run = sized.engine, sized.neutral
    if erun:
        dtypes = erun.dtypes
        sequences = erun.max_running_requests or 0
        tight = min(erun.stages, key=lambda st: st.max_running_requests or 0)
        error = next((st.startup_error for st in erun.stages if st.startup_error), None)
        binding = tight.binding or "start-up"
        startup = error.split(". ")[0] if error else "starts"
    else:
        dtypes = run.estimate.dtypes
        cap = run.caps[run.tightest]
        sequences, binding, startup = cap.max_sequences, cap.binding, "-"
    fits = bool(sized.fits)
    scheme_used = run.estimate.runtime.spec_scheme if not engine else ("engine" if draft else "none")
    paste = settings_line(spec, spec_arg, engine, gpu, tp, pp, context, kv, ssm, draft, scheme_used, prefix)
    return Candidate(gpu, tp, pp, tp * pp, context, dtypes.kv, dtypes.ssm, draft, scheme_used, prefix, fits,
                     sequences, round(sequences / (tp * pp), 2), binding, startup, paste)


def settings_line(spec: ModelSpec, spec_arg: str, engine: str | None, gpu: str, tp: int, pp: int, context: int,
                  kv: str | None, ssm: str | None, draft: int, scheme: str, prefix: str) -> str:
    """What reproduces a candidate: `vllm serve` or SGLang's `launch_server` flags, TensorRT-LLM's LLM-API
    options (JSON), or the `mcache size` command for the neutral model."""
    if engine:
        serve = ServeArgs(model_path(spec, spec_arg), tp, pp, context, kv, ssm, draft, spec.mtp is not None, prefix)
        return serve_command(engine, serve)
    args = ["mcache", "size", spec_arg, "--gpu", gpu, "--tp", tp, "--pp", pp, "--max-seq-len", context]
    args += ["--kv-dtype", kv] if kv else []
    args += ["--ssm-dtype", ssm] if ssm else []
    args += ["--draft", draft, "--spec-scheme", scheme] if draft else []
    return shlex.join(str(a) for a in args)


def model_path(spec: ModelSpec, spec_arg: str) -> str:
    """What an engine loads: the Hugging Face repository the spec came from, the checkpoint folder of an imported
    config, else the spec's name."""
    hub = re.search(r"huggingface\.co/([\w.-]+/[\w.-]+)", spec.source)
    if hub:
        return hub.group(1)
    path = Path(spec_arg)
    if path.suffix == ".json" and path.is_file():
        return str(path.parent)
    return str(path) if path.is_dir() else spec.name


def rank(engine: str | None, candidates: list[Candidate], target: int | None, skipped: list[str]) -> Plan:
    """Order the candidates and pick the best. With `target`: those that run `target` sequences first, fewest GPUs
    first (ties: most sequences per GPU), and `best` the first of them; without: those that fit, most sequences per
    GPU first (ties: fewer GPUs), and `best` the first. The rest follow, most sequences per GPU first."""

    def reaches(c: Candidate) -> bool:
        return c.fits and (target is None or c.sequences >= target)

    def key(c: Candidate) -> tuple:
        if target is not None:
            return (not reaches(c), c.gpus if reaches(c) else 0, -c.sequences_per_gpu, c.gpus)
        return (not c.fits, -c.sequences_per_gpu, c.gpus)

    ordered = sorted(candidates, key=key)
    best = ordered[0] if ordered and reaches(ordered[0]) else None
    by_gpu: dict[str, Candidate] = {}
    for c in ordered:
        if reaches(c) and c.gpu not in by_gpu:
            by_gpu[c.gpu] = c
    return Plan(engine, target, ordered, best, by_gpu, skipped)
