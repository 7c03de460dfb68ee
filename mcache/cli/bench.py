"""`mcache bench`: time the cache operations of one rank on a GPU (or a CPU smoke run)."""

from pathlib import Path
from typing import Annotated, Literal

import typer

Scheme = Literal["intermediate", "replay", "index"]


def bench(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="Spec file, bundled spec name, or HF config.json.")],
    tp: Annotated[int, typer.Option(help="Tensor-parallel size.")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel stages.")] = 1,
    rank: Annotated[int, typer.Option(help="Global rank to build: stage = rank // tp, TP rank = rank % tp.")] = 0,
    attention_dp: Annotated[bool, typer.Option("--attention-dp", help="Attention data-parallel.")] = False,
    batch: Annotated[str, typer.Option(help="Batch sizes, comma-separated.")] = "1,8,32,64",
    ops: Annotated[str, typer.Option(help="Ops: alloc,reset,commit,replay,relocate,snapshot,pack,transfer.")] = (
        "alloc,reset,commit,replay,relocate,snapshot,pack,transfer"),
    scheme: Annotated[Scheme, typer.Option(help="Speculative scheme the manager is built with.")] = "intermediate",
    draft: Annotated[int, typer.Option(help="Draft tokens per step (T = draft + 1).")] = 3,
    max_batch: Annotated[int | None, typer.Option(help="Slots per rank (default: the largest batch).")] = None,
    max_seq_len: Annotated[int, typer.Option(help="Tokens per sequence the KV pool holds.")] = 4096,
    per_layer: Annotated[bool, typer.Option("--per-layer", help="Also time every layer on its own.")] = False,
    device: Annotated[str, typer.Option(help="cuda, cuda:N, or cpu (a smoke run, not comparable with GPU runs).")] = "cuda",
    pool_layout: Annotated[Literal["layer", "slot"], typer.Option(help="Pool layout.")] = "layer",
    reps: Annotated[int, typer.Option(help="Timed repetitions per measurement.")] = 30,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Results JSON (written atomically).")] = None,
) -> int:
    """Build the real cache manager of one rank and time its kernels against the copy ceiling."""
    from mcache.cli.output import emit_bench
    from mcache.core.errors import McacheError

    batches = _ints(batch, "--batch")
    chosen = [op.strip() for op in ops.split(",") if op.strip()]
    try:
        import torch  # noqa: F401 - the gpu extra
    except ImportError:
        raise McacheError("bench: needs torch (pip install 'mcache[gpu]')") from None
    from mcache.bench.ops import OPS
    from mcache.bench.runner import BenchConfig, Runner

    unknown = [op for op in chosen if op not in OPS]
    if unknown:
        raise McacheError(f"bench: --ops: one or more of {', '.join(OPS)}, got {', '.join(unknown)}")
    if not 0 <= rank < tp * pp:
        raise McacheError(f"bench: --rank: 0 .. {tp * pp - 1} for tp={tp} pp={pp}, got {rank}")
    _check_device(device)
    cfg = BenchConfig(spec=spec, tp=tp, pp=pp, stage=rank // tp, tp_rank=rank % tp, attention_dp=attention_dp,
                      batches=batches, ops=chosen, scheme=scheme, draft=draft, max_batch=max_batch,
                      max_seq_len=max_seq_len, per_layer=per_layer, device=device, pool_layout=pool_layout,
                      reps=reps)
    runner = Runner(cfg)
    results = _run_with_progress(runner)
    emit_bench(results, output)
    return 130 if results.meta.interrupted else 0


def _ints(text: str, option: str) -> list[int]:
    from mcache.core.errors import McacheError

    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise McacheError(f"bench: {option}: positive integers separated by commas, got {text!r}")
    return values


def _check_device(device: str) -> None:
    import torch

    from mcache.core.errors import McacheError

    try:
        dev = torch.device(device)
    except RuntimeError:
        raise McacheError(f"bench: --device: cuda, cuda:N or cpu, got {device!r}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise McacheError("bench: --device: no CUDA device here (use --device cpu for a smoke run)")
    if dev.type not in ("cuda", "cpu"):
        raise McacheError(f"bench: --device: cuda, cuda:N or cpu, got {device!r}")


def _run_with_progress(runner):
    """Run with a progress bar on stderr (rows so far are kept on Ctrl-C)."""
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = None

        def tick(desc: str, total: int) -> None:
            nonlocal task
            if desc:
                task = progress.add_task(f"{runner.spec.name}: {desc}", total=total)
            elif task is not None:
                progress.advance(task)

        return runner.run(tick)
