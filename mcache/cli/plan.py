"""`mcache plan`: which GPU, TP, PP, dtypes and speculative scheme serve a target, swept over the same sizing as
`mcache size`, ranked, with the settings to paste and plots."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.args import check_ranges, comma_ints, located
from mcache.cli.options import DraftModelOption, FormatOption, OutputOption, WeightFormatOption, output_format
from mcache.core.errors import LayoutError, McacheError

EngineName = Literal["vllm", "sglang", "trtllm", "none"]
DEFAULT_GPUS = "h100-80gb,h200,b200"
PROGRESS_AFTER_S = 0.5  # a sweep that takes longer than this shows a progress bar on stderr
MAX_GPU_MEMORIES = 100  # --gpu-memory given more often than this is refused before any is parsed
# Fields of plan's own options (the core names them) -> the flag; "weights" without --weights is the spec's
NAMED = {"weights": "SPEC", "max_gpus": "--max-gpus", "attention_dp": "--attention-dp", "max_tpot": "--max-tpot",
         "rank_by": "--rank-by", "weight_format": "--weight-format", "gpu_memory": "--gpu-memory",
         "bandwidth_from": "--bandwidth-from",
         "engine_version": "--engine-version (default: the --from-log log's)"}


def plan(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="Spec file, bundled name, HF config.json or folder.")],
    gpu: Annotated[str | None, typer.Option(help=(
        f"Catalogue GPUs, comma-separated ({DEFAULT_GPUS} without --gpu-memory)."))] = None,
    gpu_memory: Annotated[list[str] | None, typer.Option(help=(
        "A GPU of this memory, SIZE[:NAME] (e.g. 96GiB:my-card; repeatable): planned beside --gpu; no roofline."))] = None,
    context: Annotated[str, typer.Option(help="Contexts in tokens, comma-separated.")] = "8192,32768,131072",
    target_concurrency: Annotated[int | None, typer.Option(min=1, help=(
        "Sequences that must run at once across replicas (with one --context): best = fewest GPUs that reach it."))] = None,
    engine: Annotated[EngineName | None, typer.Option(help=(
        "Size as this engine does (none, the default: mcache's neutral model; with --from-log, the log's)."))] = None,
    tp: Annotated[str, typer.Option(help="Tensor-parallel sizes of a replica.")] = "1,2,4,8",
    pp: Annotated[str, typer.Option(help="Pipeline-parallel stages of a replica.")] = "1,2",
    attention_dp: Annotated[str, typer.Option(help=(
        "Attention data-parallel replicas: off, on, or off,on. On: at every width N dividing TP, 1 < N <= TP (N groups of "
        "TP / N ranks, each running a batch of its own; vLLM and TensorRT-LLM: N = TP alone)."))] = "off",
    kv_dtype: Annotated[str, typer.Option(help="KV-cache dtypes (default: the model's or the engine's).")] = "default,fp8",
    ssm_dtype: Annotated[str, typer.Option(help="Recurrent-state dtypes (default: the spec's or the engine's).")] = "default",
    draft: Annotated[str, typer.Option(help="Speculative draft tokens.")] = "0",
    draft_model: DraftModelOption = None,
    spec_scheme: Annotated[str, typer.Option(help="The neutral model's speculative schemes (with --draft > 0).")] = "intermediate",
    prefix_caching: Annotated[str, typer.Option(help="default, on, off (vLLM, SGLang).")] = "default",
    utilization: Annotated[float | None, typer.Option(help=(
        "Fraction of GPU memory the engine may use, every candidate (0.9; vLLM 0.92)."))] = None,
    reserve: Annotated[str | None, typer.Option(help=(
        "Memory kept for activations and workspace, e.g. 3GiB (the neutral model, vLLM, TensorRT-LLM)."))] = None,
    weights: Annotated[str | None, typer.Option(help="Weights one rank loads, e.g. 28.5GiB (default: mcache's estimate).")] = None,
    weight_format: WeightFormatOption = None,
    bandwidth_from: Annotated[str | None, typer.Option(metavar="FILE", help=(
        "A mcache bench results file: its measured copy ceiling is the roofline's bandwidth of the GPU it ran on "
        "(a --gpu-memory card too, named as its driver prints it)."))] = None,
    from_log: Annotated[str | None, typer.Option(metavar="LOG", help=(
        "A start-up log of the engine (as mcache explain reads it): the non-KV memory it measured sizes every "
        "candidate on its GPU kind (--log-gpu)."))] = None,
    engine_version: Annotated[str | None, typer.Option(metavar="X.Y.Z", help=(
        "The engine release to size as (default: the --from-log log's, else the newest mcache models)."))] = None,
    log_gpu: Annotated[str | None, typer.Option(help=(
        "The GPU the --from-log log ran on: a --gpu name, or a --gpu-memory NAME (the log does not say)."))] = None,
    log_tp: Annotated[int | None, typer.Option(min=1, help="The --from-log log's TP size (default: the log's).")] = None,
    log_pp: Annotated[int | None, typer.Option(min=1, help="The --from-log log's PP stages (default: the log's).")] = None,
    max_gpus: Annotated[int, typer.Option(min=1, help="Most GPUs (replicas x tp x pp) a candidate may use.")] = 64,
    max_tpot: Annotated[float | None, typer.Option(help=(
        "Time per output token (ms) the roofline bound must meet: fewer sequences per replica, or none."))] = None,
    rank_by: Annotated[str | None, typer.Option(help=(
        "gpus, seqs-per-gpu or tokens-per-gpu (default: gpus with a target, else seqs-per-gpu)."))] = None,
    top: Annotated[int, typer.Option(min=1, help="Candidates the table shows (JSON and CSV hold all).")] = 20,
    fmt: FormatOption = None,
    output: OutputOption = None,
    # help texts are Rich markup: a literal "[" is written "\\["
    plot: Annotated[Path | None, typer.Option(help="Write the plots to this .png or .svg (needs mcache\\[plot]).")] = None,
) -> int:
    """Sweep GPUs, replicas, TP, PP, dtypes and speculative schemes; rank what serves the target; print the settings."""
    fmt = output_format(fmt, output)
    from msgspec.structs import replace

    from mcache.cli.explain import with_drafter_of
    from mcache.cli.output import check_writable, draft_inputs, refuse_input_as_output, spec_inputs
    from mcache.cli.plan_output import emit_plan
    from mcache.core.explain import log_named, unread_notes, weighed_by_log
    from mcache.core.load import load_spec, resolve
    from mcache.core.options import SizeOptions
    from mcache.core.plan import Axes, Goal, catalogue_gpu, custom_gpu, sweep
    from mcache.core.sizing.gpus import parse_size
    from mcache.core.sizing.weights import weighed_as

    if plot is not None and plot.suffix.lower() not in (".png", ".svg"):
        raise McacheError(f"--plot: a .png or .svg file, got {plot.name!r}")
    model = load_spec(spec)
    origin = str(resolve(spec))
    inputs = [*spec_inputs(Path(origin)), *draft_inputs(draft_model),
              *(Path(f) for f in (from_log, bandwidth_from) if f is not None and f != "-")]
    refuse_input_as_output(output, *inputs)
    refuse_input_as_output(plot, *inputs)
    check_writable(plot, "--plot")  # before the sweep, and before -o is written
    if plot is not None and output is not None and plot.resolve() == output.resolve():
        raise McacheError(f"{plot}: --plot: a file other than -o's, which the plot would overwrite")
    if from_log is None and (log_gpu, log_tp, log_pp) != (None, None, None):
        raise McacheError("--log-gpu, --log-tp, --log-pp: they describe the --from-log log; give --from-log LOG")
    parsed = _log(from_log, engine) if from_log is not None else None
    model = with_drafter_of(model, draft_model, parsed)
    chosen = parsed.engine if parsed else None if engine in (None, "none") else engine
    if draft_model is not None and chosen not in (None, "vllm", "sglang"):
        raise McacheError("--draft-model: a DFlash drafter is sized by vLLM's and SGLang's profiles (--engine vllm, "
                          f"sglang) and mcache's neutral model, not {chosen}'s")
    try:
        if len(gpu_memory or ()) > MAX_GPU_MEMORIES:
            raise LayoutError("gpu_memory", f"at most {MAX_GPU_MEMORIES} GPUs, got {len(gpu_memory)}")
        names = gpu if gpu is not None else ("" if gpu_memory else DEFAULT_GPUS)
        listed = [g.strip() for g in names.split(",")] if names else []
        if "" in listed:
            raise LayoutError("gpu", f"GPU names separated by commas, such as h200,h100, got {gpu!r}")
        firsts: dict[str, object] = {}
        for choice in map(catalogue_gpu, listed):  # a GPU named twice is planned once, as first named
            firsts.setdefault(choice.name, choice)
        gpus = tuple(firsts.values())
        gpus += tuple(custom_gpu(text) for text in gpu_memory or ())
        distinct_gpus(gpus)
        notes: tuple[str, ...] = ()
        if bandwidth_from is not None:
            gpus, notes = _measured_bandwidth(gpus, bandwidth_from)
        check_ranges({"utilization": utilization, "target_concurrency": target_concurrency, "max_gpus": max_gpus,
                      "top": top})
        base = SizeOptions(utilization=utilization, reserve=None if reserve is None else parse_size(reserve, "reserve"),
                           weights=None if weights is None else parse_size(weights, "weights"))
        axes = Axes(
            gpus=gpus,
            contexts=comma_ints(context, "context"),
            tps=comma_ints(tp, "tp"),
            pps=comma_ints(pp, "pp"),
            attention_dp=_switches(attention_dp, "attention_dp"),
            kv_dtypes=_names(kv_dtype),
            ssm_dtypes=_names(ssm_dtype),
            drafts=comma_ints(draft, "draft"),
            schemes=tuple(s.strip() for s in spec_scheme.split(",")),
            prefix_caching=tuple(p.strip() for p in prefix_caching.split(",")),
            max_gpus=max_gpus,
            base=base,
        )
        check_ranges({"context": axes.contexts, "tp": axes.tps, "pp": axes.pps, "draft": axes.drafts})
        goal = Goal(target_concurrency, max_tpot, rank_by)
        if parsed is not None:
            # weighed as `mcache explain` weighs the log's deployment: --weight-format, else its quantization's format
            weight_format, weighed = weighed_by_log(parsed, model, replace(base, weight_format=weight_format))
            notes += (weighed,) if weighed else ()
            notes += tuple(unread_notes(parsed))
        model = weighed_as(model, weight_format)
        if parsed is not None:
            axes = _measured(axes, parsed, from_log, model, origin, log_gpu, log_tp, log_pp, engine_version)
        elif engine_version is not None:
            if chosen is None:
                raise McacheError("--engine-version: a release of the engine sized; give --engine too")
            axes = replace(axes, engine_version=engine_version)
        progress = Progress()
        try:
            result = sweep(model, spec, chosen, axes, goal, progress.update)
        finally:
            progress.stop()
    except LayoutError as err:
        from_log_named = log_named(parsed) if parsed is not None else {}
        raise located(err, origin, chosen, NAMED | ({"weights": "--weights"} if weights else {}) | from_log_named) from None
    emit_plan(result, model, fmt, output, top, notes)
    if plot is not None:
        from mcache.cli.plan_plot import write_plot

        write_plot(result, model, plot)
    return 0


def distinct_gpus(gpus) -> None:
    """A `--gpu-memory SIZE:NAME` named as a catalogue GPU or as another `--gpu-memory` would stand in for it in the
    ranking and its rows: one line."""
    from mcache.core.sizing.gpus import catalogue_key

    seen: dict[str, str] = {}
    for g in gpus:
        key = (catalogue_key(g.name) or g.name).casefold()
        if key in seen and g.given[0] == "--gpu-memory":
            raise LayoutError("gpu_memory", f"a name no other planned GPU has, got {g.label!r} (as {seen[key]!r})")
        seen.setdefault(key, g.label)


# The copy ceilings a GPU's memory can reach, GB/s: from a laptop card's tens to ten times an H200's 4,800
BANDWIDTH_GBPS = (1, 100_000)


def _measured_bandwidth(gpus, path: str):
    """The planned GPUs with the copy ceiling a `mcache bench` results file measured as the roofline's bandwidth, and
    the line that says so."""
    from mcache.core.plan import with_bandwidth
    from mcache.results.schema import load

    meta = load(path).meta
    if meta.ceiling is None or meta.gpu is None:
        got = (f"a {meta.device} run" if meta.gpu is None else
               f"a {meta.device} run without one (meta.ceiling: null, an interrupted run's)")
        raise LayoutError("bandwidth_from", f"a results file of a GPU run (its copy ceiling), got {got}")
    low, high = BANDWIDTH_GBPS
    if not low <= meta.ceiling.gbps <= high:
        raise LayoutError("bandwidth_from", f"a copy ceiling a GPU reaches ({low:,} to {high:,} GB/s: "
                                            f"meta.ceiling.gbps), got {meta.ceiling.gbps:.6g} GB/s")
    gpus = with_bandwidth(gpus, meta.gpu.name, int(meta.ceiling.gbps * 1e9))
    return gpus, (f"roofline bandwidth of {meta.gpu.name}: {meta.ceiling.gbps:,.0f} GB/s, the copy ceiling {path} "
                  "measured (not the datasheet's)",)


def _log(path: str, engine: str | None):
    """The log `--from-log` names, read as `mcache explain` reads it; one line when it is not of `--engine`."""
    from mcache.cli.explain import _read
    from mcache.core.engines import TITLES
    from mcache.core.logs import read_log

    text, source = _read(path)
    parsed = read_log(text, source)
    if engine is not None and engine != parsed.engine:
        said = TITLES.get(engine, "mcache's neutral model")
        raise McacheError(f"--from-log: {source} is a {TITLES[parsed.engine]} log, and its memory is {TITLES[parsed.engine]}'s, "
                          f"not {said}'s: give --engine {parsed.engine} (or leave --engine out)")
    return parsed


def _measured(axes, parsed, source: str, model, origin: str, log_gpu: str | None, tp: int | None, pp: int | None,
              version: str | None):
    """`axes` with the memory the log measured, for its GPU kind, and the log's engine version."""
    from msgspec.structs import replace

    from mcache.core.engines import TITLES
    from mcache.core.explain import carried_memory, log_version
    from mcache.core.plan import LogMemory, catalogue_gpu
    from mcache.core.sizing.layout import ParallelLayout

    engine = TITLES[parsed.engine]
    if parsed.architecture and model.architecture and parsed.architecture != model.architecture:
        raise McacheError(f"--from-log: the log's model is a {parsed.architecture}, the SPEC a {model.architecture}: "
                          "the memory a start measured is its model's; give a log of the model planned for")
    if log_gpu is None:
        raise McacheError(f"--log-gpu: the GPU the {engine} log ran on (the log does not name it), one of "
                          f"{', '.join(g.label for g in axes.gpus)}")
    gpu = next((g for g in axes.gpus if log_gpu.strip() in (g.label, g.name)), None)
    if gpu is None:
        try:
            named = catalogue_gpu(log_gpu.strip())
        except LayoutError:
            named = None
        gpu = next((g for g in axes.gpus if named and (g.name, g.memory) == (named.name, named.memory)), None)
    if gpu is None:
        raise McacheError(f"--log-gpu: one of the GPUs planned for ({', '.join(g.label for g in axes.gpus)}), got "
                          f"{log_gpu!r}: the measured memory applies to candidates on the log's GPU kind")
    version = version or log_version(parsed)
    tp, pp = tp or parsed.tp or 1, pp or parsed.pp or 1
    carried = carried_memory(parsed, model, origin, ParallelLayout(tp=tp, pp=pp), (gpu.name, gpu.memory), version,
                             axes.base.weights)
    memory = LogMemory(source, gpu.name, gpu.memory, tp, pp, carried)
    return replace(axes, from_log=memory, engine_version=version)


def _switches(text: str, field: str) -> tuple[bool, ...]:
    """Comma-separated `off` / `on` as booleans; a `LayoutError` naming `field` for anything else."""
    values = tuple(v.strip() for v in text.split(","))
    if any(v not in ("off", "on") for v in values):
        raise LayoutError(field, f"off, on or off,on, got {text!r}")
    return tuple(v == "on" for v in values)


def _names(text: str) -> tuple[str | None, ...]:
    """Comma-separated names, `default` for the default (None)."""
    return tuple(None if name.strip() == "default" else name.strip() for name in text.split(","))


class Progress:
    """A progress bar on stderr that appears only once the sweep has taken `PROGRESS_AFTER_S`, and only when stderr is
    a terminal (`terminal`; a pipe or a log file gets the output alone, whatever the machine's load)."""

    def __init__(self, terminal: bool | None = None) -> None:
        self.start, self.bar, self.task = time.perf_counter(), None, None
        self.terminal = sys.stderr.isatty() if terminal is None else terminal

    def update(self, done: int, total: int) -> None:
        """The sweep has sized `done` of `total` candidates."""
        if (self.bar is None and self.terminal and done < total
                and time.perf_counter() - self.start > PROGRESS_AFTER_S):
            from rich.console import Console
            from rich.progress import Progress as Bar

            self.bar = Bar(console=Console(file=sys.stderr), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("sizing candidates", total=total)
        if self.bar is not None:
            self.bar.update(self.task, completed=done)

    def stop(self) -> None:
        """Take the bar off the screen (the sweep ended, or failed)."""
        if self.bar is not None:
            self.bar.stop()
