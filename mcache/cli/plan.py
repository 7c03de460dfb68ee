"""`mcache plan`: which GPU, TP, PP, dtypes and speculative scheme serve a target, swept over the same sizing as
`mcache size`, ranked, with the settings to paste and plots."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.args import check_ranges, comma_ints, located
from mcache.cli.options import FormatOption, OutputOption, output_format
from mcache.core.errors import LayoutError, McacheError

EngineName = Literal["vllm", "sglang", "trtllm", "none"]
DEFAULT_GPUS = "h100-80gb,h200,b200"
PROGRESS_AFTER_S = 0.5  # a sweep that takes longer than this shows a progress bar on stderr
MAX_GPU_MEMORIES = 100  # --gpu-memory given more often than this is refused before any is parsed
# Fields of plan's own options (the core names them) -> the flag; "weights" without --weights is the spec's
NAMED = {"weights": "SPEC", "max_gpus": "--max-gpus", "max_tpot": "--max-tpot", "rank_by": "--rank-by",
         "weight_format": "--weight-format", "gpu_memory": "--gpu-memory"}


def plan(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="Spec file, bundled name, HF config.json or folder.")],
    gpu: Annotated[str | None, typer.Option(help=(
        f"Catalogue GPUs, comma-separated ({DEFAULT_GPUS} without --gpu-memory)."))] = None,
    gpu_memory: Annotated[list[str] | None, typer.Option(help=(
        "A GPU of this memory, SIZE[:NAME] (e.g. 96GiB:my-card; repeatable): planned beside --gpu; no roofline."))] = None,
    context: Annotated[str, typer.Option(help="Contexts in tokens, comma-separated.")] = "8192,32768,131072",
    target_concurrency: Annotated[int | None, typer.Option(min=1, help=(
        "Sequences that must run at once across replicas (with one --context): best = fewest GPUs that reach it."))] = None,
    engine: Annotated[EngineName, typer.Option(help="Size as this engine does (none: mcache's neutral model).")] = "none",
    tp: Annotated[str, typer.Option(help="Tensor-parallel sizes of a replica.")] = "1,2,4,8",
    pp: Annotated[str, typer.Option(help="Pipeline-parallel stages of a replica.")] = "1,2",
    kv_dtype: Annotated[str, typer.Option(help="KV-cache dtypes (default: the model's or the engine's).")] = "default,fp8",
    ssm_dtype: Annotated[str, typer.Option(help="Recurrent-state dtypes (default: the spec's or the engine's).")] = "default",
    draft: Annotated[str, typer.Option(help="Speculative draft tokens.")] = "0",
    spec_scheme: Annotated[str, typer.Option(help="The neutral model's speculative schemes (with --draft > 0).")] = "intermediate",
    prefix_caching: Annotated[str, typer.Option(help="default, on, off (vLLM, SGLang).")] = "default",
    utilization: Annotated[float | None, typer.Option(help=(
        "Fraction of GPU memory the engine may use, every candidate (0.9; vLLM 0.92)."))] = None,
    reserve: Annotated[str | None, typer.Option(help=(
        "Memory kept for activations and workspace, e.g. 3GiB (the neutral model, vLLM, TensorRT-LLM)."))] = None,
    weights: Annotated[str | None, typer.Option(help="Weights one rank loads, e.g. 28.5GiB (default: mcache's estimate).")] = None,
    weight_format: Annotated[str | None, typer.Option(help=(
        "Weights stored as bf16, fp16, nvfp4, mxfp4, fp8, fp8_block, int4 or int8 (default: the spec's)."))] = None,
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
    from mcache.cli.output import refuse_input_as_output, spec_inputs
    from mcache.cli.plan_output import emit_plan
    from mcache.core.load import load_spec, resolve
    from mcache.core.options import SizeOptions
    from mcache.core.plan import Axes, Goal, catalogue_gpu, custom_gpu, sweep, weighed_as
    from mcache.core.sizing.gpus import parse_size

    if plot is not None and plot.suffix.lower() not in (".png", ".svg"):
        raise McacheError(f"--plot: a .png or .svg file, got {plot.name!r}")
    model = load_spec(spec)
    origin = str(resolve(spec))
    refuse_input_as_output(output, *spec_inputs(Path(origin)))
    refuse_input_as_output(plot, *spec_inputs(Path(origin)))
    chosen = None if engine == "none" else engine
    try:
        if len(gpu_memory or ()) > MAX_GPU_MEMORIES:
            raise LayoutError("gpu_memory", f"at most {MAX_GPU_MEMORIES} GPUs, got {len(gpu_memory)}")
        names = gpu if gpu is not None else ("" if gpu_memory else DEFAULT_GPUS)
        gpus = tuple(catalogue_gpu(g.strip()) for g in names.split(",") if g.strip())
        gpus += tuple(custom_gpu(text) for text in gpu_memory or ())
        check_ranges({"utilization": utilization, "target_concurrency": target_concurrency, "max_gpus": max_gpus,
                      "top": top})
        base = SizeOptions(utilization=utilization, reserve=None if reserve is None else parse_size(reserve, "reserve"),
                           weights=None if weights is None else parse_size(weights, "weights"))
        axes = Axes(
            gpus=gpus,
            contexts=comma_ints(context, "context"),
            tps=comma_ints(tp, "tp"),
            pps=comma_ints(pp, "pp"),
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
        model = weighed_as(model, weight_format)
        progress = Progress()
        try:
            result = sweep(model, spec, chosen, axes, goal, progress.update)
        finally:
            progress.stop()
    except LayoutError as err:
        raise located(err, origin, chosen, NAMED | ({"weights": "--weights"} if weights else {})) from None
    emit_plan(result, model, fmt, output, top)
    if plot is not None:
        from mcache.cli.plan_plot import write_plot

        write_plot(result, model, plot)
    return 0


def _names(text: str) -> tuple[str | None, ...]:
    """Comma-separated names, `default` for the default (None)."""
    return tuple(None if name.strip() == "default" else name.strip() for name in text.split(","))


class Progress:
    """A progress bar on stderr that appears only once the sweep has taken `PROGRESS_AFTER_S`."""

    def __init__(self) -> None:
        self.start, self.bar, self.task = time.perf_counter(), None, None

    def update(self, done: int, total: int) -> None:
        """The sweep has sized `done` of `total` candidates."""
        if self.bar is None and done < total and time.perf_counter() - self.start > PROGRESS_AFTER_S:
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
