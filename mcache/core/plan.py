"""`mcache plan`: every combination of GPU, TP, PP, cache dtypes, speculative drafts and prefix caching at each
context, each replica sized by `size_deployment` (the path `mcache size` takes), then a fleet of replicas of it
derived arithmetically, bounded by the decode roofline, and ranked.

A candidate is `replicas` x (TP x PP) GPUs of one kind, with attention data-parallel of some width or not. Sizing is
done once per replica layout: `sequences_per_replica` is what one replica runs at once (the neutral model's
memory-sized pool at the tightest stage, or the engine's running requests; under attention DP of width N, N times a
rank's: `ParallelLayout.replica_sequences`), at most what keeps the roofline's time per output token within `--max-tpot`; with a
target, `replicas` is how many of them run it, else 1. A candidate `fits` when its replica starts (engines: with
its defaults, or with the settings `solved` names) and runs a sequence of the context. An engine's settings are
solved for (`_solve`) when its defaults do not start a replica, and, with a target more than a replica runs, when
other values run more (fewer replicas); what each engine solves for is its module's (`engines.plan_hooks`).
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from math import ceil, prod
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from mcache.core.deployment import Deployment, Sized, size_deployment
from mcache.core.engines import PlanHooks, plan_hooks, serve_command
from mcache.core.engines.common import ServeArgs
from mcache.core.engines.options import setting_of
from mcache.core.errors import LayoutError
from mcache.core.explain import Carried
from mcache.core.files import json_text
from mcache.core.numbers import last_true
from mcache.core.options import SizeOptions
from mcache.core.roofline import Roofline, roofline
from mcache.core.sizing.gpus import GIB, find_gpu, parse_size
from mcache.core.sizing.layout import ParallelLayout
from mcache.core.sizing.weights import unknown_fields, weights_known
from mcache.core.spec.model import ModelSpec

CONTEXTS = (8192, 32768, 131072)
TPS = (1, 2, 4, 8)
PPS = (1, 2)
FP8 = {"sglang": "fp8_e4m3"}  # each engine's spelling of an fp8 KV cache (others: fp8)
PREFIX = ("default", "on", "off")
# a layout the model, its drafter (`draft_model`) or the engine cannot take is skipped
LAYOUT_FIELDS = ("tp", "pp", "tp/pp", "attention_dp", "draft_model")
ENGINE_DECLINES = "engine"  # the field of an engine profile's refusal to size a candidate it does not model
MAX_CANDIDATES = 100_000  # about 300 candidates a second on one core: the largest sweep takes minutes, with a progress bar
MAX_GPUS = 64  # the default bound on a candidate's GPUs (replicas x TP x PP)
MAX_REPLICA_GPUS = 64  # the largest TP x PP of one replica (eight 8-GPU nodes)
RANK_BY = ("gpus", "seqs-per-gpu", "tokens-per-gpu")
SOLVE_MAX = 1 << 16  # the largest value of an engine's batch setting searched (`_solve`: about 35 sizings at most)


@dataclass(frozen=True)
class GpuChoice:
    """A GPU to plan for: `label` as the table shows it, `name` as drivers print it, `memory` (bytes) and
    `bandwidth` (bytes/s; None: unknown, no roofline), `given` how a command names it (`--gpu X` or
    `--gpu-memory X`)."""

    label: str
    name: str
    memory: int
    bandwidth: int | None
    given: tuple[str, str]


def catalogue_gpu(name: str) -> GpuChoice:
    """The catalogue GPU called `name` (any name `--gpu` takes)."""
    gpu = find_gpu(name)
    return GpuChoice(name, gpu.name, gpu.memory, gpu.bandwidth, ("--gpu", name))


def with_bandwidth(gpus: tuple[GpuChoice, ...], name: str, bandwidth: int) -> tuple[GpuChoice, ...]:
    """`gpus` with `bandwidth` (bytes/s, e.g. the copy ceiling a `mcache bench` run measured) for the GPU called `name`
    as its driver prints it (a `--gpu-memory SIZE:NAME` of that name too); a `LayoutError` naming `--bandwidth-from`
    when none of them is it."""
    if not any(g.name == name for g in gpus):
        raise LayoutError("bandwidth_from", f"a results file of one of the GPUs planned for, got one of {name}")
    return tuple(GpuChoice(g.label, g.name, g.memory, bandwidth, g.given) if g.name == name else g for g in gpus)


def custom_gpu(text: str) -> GpuChoice:
    """`SIZE[:NAME]` (`--gpu-memory`): a GPU of that memory (at least 1 GiB), named NAME (else `SIZE GPU`); its
    bandwidth is unknown."""
    size, _, name = text.partition(":")
    memory = parse_size(size, "gpu_memory", GIB)
    name = name.strip()
    if ":" in name or len(name) > 64 or not name.isprintable() or "|" in name:
        raise LayoutError("gpu_memory", f"SIZE or SIZE:NAME (a name of at most 64 printable characters, no | or :), got "
                                        f"{text[:80]!r}")
    return GpuChoice(name or f"{size.strip()} GPU", name or f"{size.strip()} GPU", memory, None,
                     ("--gpu-memory", f"{memory}B"))


class LogMemory(Struct, frozen=True):
    """The memory a real start measured (`--from-log`), for every candidate on its GPU kind (`gpu`, as `GpuChoice`
    names it, of `memory` bytes): `carried` says what and how; `log` names the file, `tp` and `pp` its layout."""

    log: str
    gpu: str
    memory: int
    tp: int
    pp: int
    carried: Carried

    def applies(self, gpu: GpuChoice) -> bool:
        return gpu.name == self.gpu and gpu.memory == self.memory


class Axes(Struct, frozen=True):
    """What to sweep: GPUs, contexts, TP and PP sizes (a replica of up to `MAX_REPLICA_GPUS`, a candidate of up to
    `max_gpus`), attention data-parallel or not (`attention_dp`; on: at every width `attention_dp_widths` gives), KV and
    state dtypes (None: the default,
    the model's or the engine's), draft tokens, the neutral model's speculative schemes, and prefix caching (`default`:
    the engine's default; `on`/`off` for vLLM and SGLang). `base` holds the options every candidate takes (utilization,
    reserve, weights); `from_log` the memory a real start measured, for the candidates on its GPU kind (in place of
    mcache's assumption, and of `base`'s reserve); `engine_version` the engine release sized (None: the newest
    modelled)."""

    gpus: tuple[GpuChoice, ...]
    contexts: tuple[int, ...] = CONTEXTS
    tps: tuple[int, ...] = TPS
    pps: tuple[int, ...] = PPS
    attention_dp: tuple[bool, ...] = (False,)
    kv_dtypes: tuple[str | None, ...] = (None, "fp8")
    ssm_dtypes: tuple[str | None, ...] = (None,)
    drafts: tuple[int, ...] = (0,)
    schemes: tuple[str, ...] = ("intermediate",)
    prefix_caching: tuple[str, ...] = ("default",)
    max_gpus: int = MAX_GPUS
    base: SizeOptions = SizeOptions()
    from_log: LogMemory | None = None
    engine_version: str | None = None


class Goal(Struct, frozen=True):
    """What the plan serves: `target` sequences at once across replicas (None: the most per GPU), each step's
    roofline time per output token within `max_tpot` ms (None: any), ranked by `rank_by` (None: fewest GPUs with a
    target, else most sequences per GPU)."""

    target: int | None = None
    max_tpot: float | None = None
    rank_by: str | None = None


class Candidate(Struct, frozen=True):
    """One fleet and what it runs; `settings` reproduces one replica, or every replica where the engine has a
    replica option (a command line, or TensorRT-LLM's LLM-API options as JSON); `solved` names the engine settings
    (and values) it runs with in place of the defaults, and `solved_for` why (`start-up`: the defaults do not start
    it; `target`: they run fewer than the target, `default_sequences` per replica within `--max-tpot`); `roofline`
    bounds its decode at `roofline.sequences` per replica; `measured`: sized with the memory `--from-log` measured
    (its GPU kind), not mcache's assumption."""

    gpu: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    context: int
    kv_dtype: str
    ssm_dtype: str
    draft: int
    spec_scheme: str
    prefix_caching: str
    fits: bool
    sequences: int
    sequences_per_replica: int
    sequences_per_gpu: float
    binding: str
    startup: str
    solved: str
    settings: str
    roofline: Roofline | None
    measured: bool = False
    solved_for: str = ""
    default_sequences: int = 0
    attention_dp: bool = False
    attention_dp_size: int | None = None  # the attention-DP width (tp at full width; None without), as `mcache size` gives it

    @property
    def config(self) -> tuple:
        """Everything but the context: one line of the sequences-against-context plot."""
        return (self.gpu, self.tp, self.pp, self.attention_dp_size, self.kv_dtype, self.ssm_dtype, self.draft,
                self.spec_scheme, self.prefix_caching)


class Plan(Struct, frozen=True):
    """The sweep's candidates, ranked (see `rank`), the best, the best of each GPU kind, the layouts the model
    cannot be split into, and, when no candidate reaches the target within `max_gpus`, the one of fewest GPUs that
    would (`nearest`)."""

    engine: str | None
    target: int | None
    candidates: list[Candidate]
    best: Candidate | None
    best_by_gpu: dict[str, Candidate]
    skipped: list[str]
    max_gpus: int = MAX_GPUS
    max_tpot: float | None = None
    rank_by: str = "seqs-per-gpu"
    nearest: Candidate | None = None
    from_log: LogMemory | None = None


def check_axes(spec: ModelSpec, engine: str | None, axes: Axes, goal: Goal) -> None:
    """One-line errors for a sweep that cannot be run as asked."""
    if not axes.gpus:
        raise LayoutError("gpu", "at least one catalogue GPU (or --gpu-memory)")
    if goal.target is not None and len(axes.contexts) != 1:
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
    if not engine and set(axes.schemes) != {"intermediate"} and not any(axes.drafts):
        raise LayoutError("spec_scheme", "a scheme for draft tokens: add --draft N (N > 0)")
    if goal.rank_by is not None and goal.rank_by not in RANK_BY:
        raise LayoutError("rank_by", f"one of {', '.join(RANK_BY)}, got {goal.rank_by!r}")
    if goal.max_tpot is not None and not 0 < goal.max_tpot < 1e9:
        raise LayoutError("max_tpot", f"milliseconds, more than 0 and less than 10^9, got {goal.max_tpot}")
    if (goal.max_tpot is not None or goal.rank_by == "tokens-per-gpu") and all(g.bandwidth is None for g in axes.gpus):
        raise LayoutError("gpu_memory", "a GPU with a known bandwidth for the roofline (--max-tpot, --rank-by "
                                        "tokens-per-gpu): add a catalogue --gpu")
    if not weights_known(spec) and axes.base.weights is None:
        raise LayoutError("weights", f"known weights at every layout: the spec leaves {', '.join(unknown_fields(spec))} "
                                     "null (fill it in, e.g. from mcache import-hf -o, or give --weights)")


def distinct(axes: Axes) -> Axes:
    """`axes` with each list's repeated values dropped (a value given twice is one candidate, not two)."""
    fields = ("gpus", "contexts", "tps", "pps", "attention_dp", "kv_dtypes", "ssm_dtypes", "drafts", "schemes",
              "prefix_caching")
    axes = replace(axes, **{f: tuple(dict.fromkeys(getattr(axes, f))) for f in fields})
    return replace(axes, gpus=tuple({g.label: g for g in axes.gpus}.values()))


def attention_dp_name(tp: int, width: int | None) -> str:
    """`attention DP` at a width of `tp`, `attention DP 2` at a narrower one."""
    return "attention DP" if width in (None, tp) else f"attention DP {width}"


def _layout_name(tp: int, pp: int, width: int) -> str:
    """`tp 4 pp 1` (`, attention DP` with it, `, attention DP 2` at a width of 2), as the skipped layouts are named."""
    return f"tp {tp} pp {pp}" + (f", {attention_dp_name(tp, width)}" if width else "")


def attention_dp_widths(tp: int, on: bool, engine: str | None) -> tuple[int, ...]:
    """The attention-DP widths a replica of TP `tp` is swept at: 0 (none) when `on` is false; else every N dividing
    `tp` with 1 < N <= tp where the engine takes a width narrower than TP (the neutral model does), `tp` alone where it
    does not (`PlanHooks.narrow_attention_dp`), none at TP 1 (a rank's batch is the replica's)."""
    if not on:
        return (0,)
    narrow = engine is None or plan_hooks(engine).narrow_attention_dp
    return tuple(n for n in range(2, tp + 1) if tp % n == 0 and (narrow or n == tp))


def layouts_of(axes: Axes, engine: str | None) -> list[tuple[int, int, int]]:
    """The (TP, PP, attention-DP width; 0: none) of one replica: up to `MAX_REPLICA_GPUS` and `max_gpus` GPUs, at the
    widths `attention_dp_widths` gives."""
    most = min(axes.max_gpus, MAX_REPLICA_GPUS)
    return [(tp, pp, width) for tp in axes.tps for pp in axes.pps for dp in axes.attention_dp
            if tp * pp <= most for width in attention_dp_widths(tp, dp, engine)]


def check_size(axes: Axes, engine: str | None) -> None:
    """Refuse a sweep of more than `MAX_CANDIDATES` candidates before any is built, naming its longest list (or a
    TP/PP list with no layout within the GPUs a replica may use)."""
    most = min(axes.max_gpus, MAX_REPLICA_GPUS)
    pps = sorted(p for p in axes.pps if p <= most)
    layouts = sum(bisect_right(pps, most // tp) * len(attention_dp_widths(tp, dp, engine)) for tp in axes.tps
                  for dp in axes.attention_dp if tp <= most)
    if not layouts:
        if True in axes.attention_dp and max(axes.tps) == 1:
            raise LayoutError("attention_dp", "a TP above 1 to split attention over (--tp), got TP 1 only")
        raise LayoutError("tp/pp", f"a TP x PP of at most {most} GPUs (--max-gpus, and {MAX_REPLICA_GPUS} per replica), "
                                   f"got TP {min(axes.tps)} x PP {min(axes.pps)} at the least")
    schemes = len(axes.schemes) if engine is None else 1
    drafts = sum(schemes if d else 1 for d in axes.drafts)
    lists = {"gpu": len(axes.gpus), "context": len(axes.contexts), "tp": len(axes.tps), "pp": len(axes.pps),
             "attention_dp": len(axes.attention_dp), "kv_dtype": len(axes.kv_dtypes), "ssm_dtype": len(axes.ssm_dtypes),
             "draft": len(axes.drafts), "spec_scheme": schemes, "prefix_caching": len(axes.prefix_caching)}
    total = prod((lists["gpu"], lists["context"], layouts, lists["kv_dtype"], lists["ssm_dtype"], drafts,
                  lists["prefix_caching"]))
    if total > MAX_CANDIDATES:
        longest = max(lists, key=lists.get)
        raise LayoutError(longest, f"a sweep of at most {MAX_CANDIDATES:,} candidates (GPUs x contexts x layouts x KV "
                                   f"dtypes x state dtypes x drafts x prefix settings), got {total:,}: shorten this "
                                   f"list of {lists[longest]:,} values or another")


def sweep(spec: ModelSpec, spec_arg: str, engine: str | None, axes: Axes, goal: Goal | int | None = None,
          progress: Callable[[int, int], None] | None = None) -> Plan:
    """Size every replica of `axes`, make a fleet of each for `goal` (a `Goal`, or a target's sequences) and rank
    them; `progress(done, total)` after each. A sweep where the model can be split into none of the layouts asked is
    an error naming them."""
    goal = goal if isinstance(goal, Goal) else Goal(target=goal)
    axes = distinct(axes)
    check_size(axes, engine)
    check_axes(spec, engine, axes, goal)
    layouts = layouts_of(axes, engine)
    drafts = [(d, s) for d in axes.drafts for s in (axes.schemes if d and not engine else ("intermediate",))]
    combos = list(itertools.product(axes.gpus, axes.contexts, layouts, axes.kv_dtypes, axes.ssm_dtypes, drafts,
                                    axes.prefix_caching))
    candidates, skipped, impossible, declined = [], [], {}, []
    for i, (gpu, context, (tp, pp, dp), kv, ssm, (draft, scheme), prefix) in enumerate(combos, 1):
        key = (tp, pp, dp, bool(draft and spec.drafter))  # a drafter's heads split over the layout only while it drafts
        if key not in impossible:
            try:
                layout = ParallelLayout(tp=tp, pp=pp, attention_dp=dp > 0, attention_dp_size=dp or None)
                candidates.append(_candidate(spec, spec_arg, engine, axes, goal, gpu, context, layout, kv, ssm, draft,
                                             scheme, prefix))
            except LayoutError as err:  # a layout the model cannot be split into, or the engine does not take: skipped
                if err.field == ENGINE_DECLINES:  # the engine's profile does not model this candidate (its KV dtype, GPU
                    declined.append(err)  # or layout): it alone is skipped (vLLM's GLM-5.3-Flash on SM 10, or with PP)
                elif err.field not in LAYOUT_FIELDS and "." not in err.field:
                    raise
                else:
                    impossible[key] = err
                    skipped.append(f"{_layout_name(tp, pp, dp)}{', drafting' if key[3] else ''}: {err}")
        if progress:
            progress(i, len(combos))
    if not candidates and declined:  # the engine models none of the candidates: its own words for the first
        raise declined[0]
    for reason, n in Counter(err.expected for err in declined).items():  # one line a reason
        skipped.append(f"{n} candidate{'s' if n > 1 else ''}: {reason}")
    if not candidates and impossible:
        (tp, pp, dp, _), first = next(iter(impossible.items()))
        raise LayoutError("tp/pp", f"a layout the model can be split into; none of those asked is "
                                   f"({_layout_name(tp, pp, dp)}: {first})")
    return rank(engine, _distinct(candidates), goal, skipped, axes.max_gpus, axes.from_log)


def _distinct(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates less those an earlier one already is: two KV dtypes asked that the engine keeps alike (vLLM's
    GLM-5.3-Flash on SM 12 keeps `auto` as fp8_ds_mla; SGLang's DSA defaults to fp8 from SM 10) size the same deployment
    twice; the first, asked with the fewer settings, stays."""
    seen, out = set(), []
    for c in candidates:
        if (c.config, c.context) not in seen:
            seen.add((c.config, c.context))
            out.append(c)
    return out


class Replica(Struct, frozen=True):
    """One replica as sized: its deployment's figures, what it runs (`sequences`) and one rank of its tightest stage
    runs (`per_rank`: the same but under attention DP), the engine settings it starts with (empty: the defaults) and
    why they were solved for (`start-up`: the defaults do not start it; `target`: they run fewer than the target)."""

    sized: Sized
    fits: bool
    sequences: int
    per_rank: int
    binding: str
    startup: str
    solved: dict[str, int]
    solved_for: str = ""


def _replica(spec: ModelSpec, engine: str | None, deployment: Deployment, target: int | None) -> tuple[Replica, Replica]:
    """(the replica at the engine's defaults, the one planned): with an engine, the one of the settings `_solve`
    finds when the defaults do not start it, or, with a `target` more than it runs, when those settings run more."""
    first = _sized_replica(spec, engine, deployment, {})
    if engine is None or (first.fits and not (target and first.sequences < target)):
        return first, first
    hooks = plan_hooks(engine)
    if getattr(deployment.options, hooks.solved) is not None:
        return first, first
    solved = _solve(spec, engine, hooks, deployment, first)
    if solved is None or (first.fits and solved.sequences <= first.sequences):
        return first, first
    return first, replace(solved, solved_for="target" if first.fits else "start-up")


def _sized_replica(spec: ModelSpec, engine: str | None, d: Deployment, solved: dict[str, int]) -> Replica:
    if solved:
        d = replace(d, options=replace(d.options, **solved))
    sized = size_deployment(spec, d)
    erun, run = sized.engine, sized.neutral
    if erun:
        per_rank = erun.max_running_requests_per_rank or 0
        tight = min(erun.stages, key=lambda st: st.max_running_requests or 0)
        error = next((st.startup_error for st in erun.stages if st.startup_error), None)
        binding = tight.binding or "start-up"
        startup = error.split(". ")[0] if error else "starts"
    else:
        cap = run.caps[run.tightest]
        per_rank, binding, startup = cap.max_sequences, cap.binding, "-"
    return Replica(sized, bool(sized.fits), d.layout.replica_sequences(per_rank), per_rank, binding, startup, solved)


def _solve(spec: ModelSpec, engine: str, hooks: PlanHooks, d: Deployment, first: Replica) -> Replica | None:
    """The engine's settings at which the replica runs the most sequences of the context, the smallest such (None:
    none starts it).

    `hooks.solve_settings(n)` lets each rank run up to n (vLLM max_num_seqs, TensorRT-LLM max_batch_size per stage,
    SGLang max_running_requests with the state slots of n requests; under attention DP of width N the replica runs N times it).
    "It runs n, bound by that setting" holds up to some n* and not above: a larger n leaves the memory as it is (vLLM)
    or gives some of the KV's to state slots (TensorRT-LLM, SGLang), so once the setting stops binding what runs never
    grows again. n* is found from the engine's own figure (`solve_hint`). Where that figure is the engine's answer
    (vLLM's concurrency, TensorRT-LLM's best_max_batch_size), it is taken when it starts the replica (one sizing), and
    without one there is none (no value starts it, or the defaults already run the most: no sizing). Else the figure is
    a first guess (SGLang's: where the setting does not bind there, n* is below it and, on one PP stage, at least what
    runs there; without one, what the defaults run, or 1): steps double away from it, then bisection, 2 sizings when the
    guess is right, 2 log2 of its miss more otherwise, about 35 at most (`SOLVE_MAX`). n* + 1 is sized too and kept when
    it runs more (TensorRT-LLM runs max_batch_size on each PP stage: a value that no longer binds can still run more).
    Nothing larger runs more, and nothing larger is wanted: every engine's batch setting costs memory (state slots; vLLM
    warms its sampler up over max_num_seqs requests)."""
    run, label, tried = first.sized.engine, setting_of(engine, hooks.solved), {}

    def at(n: int) -> Replica:
        if n not in tried:
            tried[n] = _sized_replica(spec, engine, d, hooks.solve_settings(n, run))
        return tried[n]

    def binds(n: int) -> bool:
        r = at(n)
        return r.fits and r.binding == label and r.per_rank >= n

    hint = hooks.solve_hint(run)
    if hooks.hint_exact:
        return at(hint) if hint and at(hint).fits and at(hint).sequences else None
    guess = hint if hint and binds(hint) else (hint and min(hint - 1, at(hint).per_rank)) or (
        first.per_rank if first.fits else 1)
    n = _gallop(binds, guess, SOLVE_MAX)
    found = [at(m) for m in (n, n + 1) if 1 <= m <= SOLVE_MAX]
    best = max(found, key=lambda r: r.sequences if r.fits else -1)  # of equals the first: the smaller value
    return best if best.fits and best.sequences else None


def _gallop(holds: Callable[[int], bool], guess: int, most: int) -> int:
    """The largest n in [1, most] at which `holds` (0: none), `holds` being true up to some n and false above: probed
    at `guess`, then in steps that double away from it until the answer is bracketed, then bisected."""
    n, step = min(max(guess, 1), most), 1
    if holds(n):
        while n + step <= most and holds(n + step):
            n, step = n + step, step * 2
        return last_true(holds, n, min(n + step, most + 1))
    while n - step >= 1 and not holds(n - step):
        n, step = n - step, step * 2
    return last_true(holds, max(n - step, 0), n)


def _candidate(spec: ModelSpec, spec_arg: str, engine: str | None, axes: Axes, goal: Goal, gpu: GpuChoice,
               context: int, layout: ParallelLayout, kv: str | None, ssm: str | None, draft: int, scheme: str,
               prefix: str) -> Candidate:
    kv = FP8.get(engine, kv) if kv == "fp8" else kv
    prefix_caching = prefix == "on" if prefix != "default" and engine == "vllm" else None
    no_radix = True if prefix == "off" and engine == "sglang" else None  # SGLang's radix cache is on unless disabled
    options = replace(axes.base, max_seq_len=context, kv_dtype=kv, ssm_dtype=ssm, draft=draft or None,
                      spec_scheme=scheme if draft and not engine else None,
                      enable_prefix_caching=prefix_caching, disable_radix_cache=no_radix)
    measured = axes.from_log is not None and axes.from_log.applies(gpu)
    if measured:
        options = replace(options, **{axes.from_log.carried.field: axes.from_log.carried.value})
    tp, pp = layout.tp, layout.pp
    deployment = Deployment(layout, (gpu.name, gpu.memory), engine, options, context, engine_version=axes.engine_version)
    default, rep = _replica(spec, engine, deployment, goal.target)
    dtypes = rep.sized.engine.dtypes if rep.sized.engine else rep.sized.neutral.estimate.dtypes
    scheme_used = rep.sized.neutral.estimate.runtime.spec_scheme if not engine else ("engine" if draft else "none")
    per_gpu = tp * pp
    ranks = rep.sized.neutral.estimate.ranks

    def bound(sequences: int) -> Roofline | None:
        if gpu.bandwidth is None:
            return None
        return roofline(ranks, axes.base.weights, sequences, context, draft, gpu.bandwidth)

    def runs(r: Replica) -> int:
        """What a replica runs: its capacity, at most what keeps the roofline within --max-tpot."""
        capacity = r.sequences if r.fits else 0
        return _most_within(bound, capacity, goal.max_tpot) if goal.max_tpot is not None and capacity else capacity

    at_defaults = runs(default)
    per = at_defaults if rep is default else runs(rep)
    if rep.solved_for == "target" and per <= at_defaults:  # --max-tpot keeps it to what the defaults run
        rep, per = default, at_defaults
    binding = rep.binding if per == (rep.sequences if rep.fits else 0) else "--max-tpot"
    replicas = max(1, ceil(goal.target / per)) if goal.target and per else 1
    running = min(per, ceil(goal.target / replicas)) if goal.target else per
    solved = {setting_of(engine, f): v for f, v in rep.solved.items()} if engine else {}
    version = rep.sized.engine.version.modelled if rep.sized.engine and rep.sized.engine.version else None
    paste = settings_line(spec, spec_arg, engine, gpu, layout, context, kv, ssm, draft, scheme_used, prefix,
                          axes.base, rep.solved, replicas, version)
    return Candidate(gpu.label, tp, pp, replicas, replicas * per_gpu, context, dtypes.kv, dtypes.ssm, draft,
                     scheme_used, prefix, rep.fits, replicas * per, per, round(per / per_gpu, 2), binding, rep.startup,
                     ", ".join(f"{k}={v}" for k, v in solved.items()), paste, bound(running) if running else None,
                     measured, rep.solved_for, at_defaults, layout.attention_dp, layout.attention_dp_width)


def _most_within(bound: Callable[[int], Roofline | None], capacity: int, max_tpot: float) -> int:
    """The most sequences (up to `capacity`) whose roofline time per output token is within `max_tpot` ms (the
    bound grows with the sequences: bisection); `capacity` when the bandwidth is unknown, 0 when one is too many."""
    if bound(1) is None:
        return capacity
    return last_true(lambda n: bound(n).tpot_ms <= max_tpot, 0, capacity + 1)


def settings_line(spec: ModelSpec, spec_arg: str, engine: str | None, gpu: GpuChoice, layout: ParallelLayout,
                  context: int, kv: str | None, ssm: str | None, draft: int, scheme: str, prefix: str,
                  base: SizeOptions, solved: dict[str, int] | None = None, replicas: int = 1,
                  version: str | None = None) -> str:
    """What reproduces a candidate: `vllm serve` or SGLang's `launch_server` flags (with the replicas), TensorRT-LLM's
    LLM-API options (JSON, one replica's), or the `mcache size` command of one replica for the neutral model. The
    engine settings given (`base`) or solved for are added where the engine has them as settings."""
    tp, pp = layout.tp, layout.pp
    if engine:
        from importlib import import_module

        serve = ServeArgs(model_path(spec, spec_arg), tp, pp, context, kv, ssm, draft, spec.mtp is not None, prefix,
                          version, layout.attention_dp, replicas, layout.attention_dp_size, drafter_path(spec))
        line = serve_command(engine, serve)
        given = {f: getattr(base, f) for f in ("utilization",) if getattr(base, f) is not None} | (solved or {})
        module = import_module(f"mcache.core.engines.{engine}")
        extra = {setting_of(engine, f): v for f, v in given.items() if f in module.FLAGS
                 and setting_of(engine, f) in module.SETTINGS}
        if engine == "trtllm":  # llmapi/llm_args.py: max_batch_size an LLM argument, the fraction a KvCacheConfig field
            options = json.loads(line)
            cache = {k: v for k, v in extra.items() if k == "free_gpu_memory_fraction"}
            options |= {k: v for k, v in extra.items() if k not in cache}
            if cache:
                options["kv_cache_config"] = options.get("kv_cache_config", {}) | cache
            return json_text(options, indent=None)
        args = [x for k, v in extra.items() for x in (f"--{k.replace('_', '-')}", str(v))]
        line, _, note = line.partition("  # ")  # a serve command's closing comment stays last
        return " ".join([line, *(shlex.quote(a) for a in args)]) + (f"  # {note}" if note else "")
    args = ["mcache", "size", spec_arg, *gpu.given, "--tp", tp, "--pp", pp, "--max-seq-len", context]
    if layout.attention_dp:
        args += ["--attention-dp"] if layout.attention_dp_size is None else ["--attn-dp-size", layout.attention_dp_size]
    args += ["--kv-dtype", kv] if kv else []
    args += ["--ssm-dtype", ssm] if ssm else []
    args += ["--draft", draft, "--spec-scheme", scheme] if draft else []
    args += ["--draft-model", spec.drafter.source] if draft and spec.drafter else []
    args += ["--utilization", base.utilization] if base.utilization is not None else []
    args += ["--reserve", f"{base.reserve}B"] if base.reserve is not None else []
    args += ["--weights", f"{base.weights}B"] if base.weights is not None else []
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


def drafter_path(spec: ModelSpec) -> str | None:
    """What an engine loads as the spec's drafter: the folder of its config.json, or the Hub id or folder given."""
    if spec.drafter is None:
        return None
    path = Path(spec.drafter.source)
    return str(path.parent) if path.suffix == ".json" and path.is_file() else spec.drafter.source


def rank(engine: str | None, candidates: list[Candidate], goal: Goal | int | None, skipped: list[str],
         max_gpus: int = MAX_GPUS, from_log: LogMemory | None = None) -> Plan:
    """Order the candidates and pick the best. A candidate `reaches` the goal when it fits, runs a sequence within
    `--max-tpot`, and (with a target) its replicas use at most `max_gpus` GPUs. Those that reach come first, by
    `rank_by`: `gpus` fewest GPUs (ties: most sequences per GPU, then tokens/s per GPU; the default with a target),
    `seqs-per-gpu` most sequences per GPU (ties: fewer GPUs; the default without), `tokens-per-gpu` the most roofline
    tokens/s per GPU (ties: fewer GPUs); the rest follow in the same order."""
    goal = goal if isinstance(goal, Goal) else Goal(target=goal)
    by = goal.rank_by or ("gpus" if goal.target else "seqs-per-gpu")

    def reaches(c: Candidate) -> bool:
        return c.fits and c.sequences_per_replica > 0 and (goal.target is None or c.gpus <= max_gpus)

    def key(c: Candidate) -> tuple:
        tokens = -(c.roofline.tokens_per_s_per_gpu if c.roofline else 0.0)
        order = {"gpus": (c.gpus, -c.sequences_per_gpu, tokens), "seqs-per-gpu": (-c.sequences_per_gpu, c.gpus, tokens),
                 "tokens-per-gpu": (tokens, c.gpus, -c.sequences_per_gpu)}[by]
        return (not reaches(c), not (c.fits and c.sequences_per_replica), *order)

    ordered = sorted(candidates, key=key)
    best = ordered[0] if ordered and reaches(ordered[0]) else None
    by_gpu: dict[str, Candidate] = {}
    for c in ordered:
        if reaches(c) and c.gpu not in by_gpu:
            by_gpu[c.gpu] = c
    nearest = None
    if best is None and goal.target:
        running = [c for c in candidates if c.fits and c.sequences_per_replica]
        nearest = min(running, key=lambda c: (c.gpus, -c.sequences_per_gpu), default=None)
    return Plan(engine, goal.target, ordered, best, by_gpu, skipped, max_gpus, goal.max_tpot, by, nearest, from_log)
