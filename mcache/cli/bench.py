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
    draft: Annotated[int, typer.Option(min=1, help="Draft tokens per step (T = draft + 1).")] = 3,
    max_batch: Annotated[int | None, typer.Option(min=1, help=(
        "Requests per micro-batch: the rank holds max batch x pp slots, as in `mcache size` (default: the largest batch)."))] = None,
    max_seq_len: Annotated[int, typer.Option(min=1, help="Tokens per sequence the KV pool holds.")] = 4096,
    per_layer: Annotated[bool, typer.Option("--per-layer", help="Also time every layer on its own.")] = False,
    device: Annotated[str, typer.Option(help="cuda, cuda:N, or cpu (a smoke run, not comparable with GPU runs).")] = "cuda",
    pool_layout: Annotated[Literal["layer", "slot"], typer.Option(help="Pool layout.")] = "layer",
    reps: Annotated[int, typer.Option(min=1, help="Timed repetitions per measurement.")] = 30,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Results JSON (written atomically).")] = None,
    sender_tp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the sender's TP.")] = None,
    sender_pp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the sender's PP (1).")] = None,
    receiver_tp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the receiver's TP.")] = None,
    receiver_pp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the receiver's PP (1).")] = None,
    backend: Annotated[Literal["nccl", "gloo"] | None, typer.Option(help=(
        "torch.distributed backend of the transfer (default: nccl on cuda, gloo on cpu)."))] = None,
) -> int:
    """Build the real cache manager of one rank and time its kernels against the copy ceiling."""
    from mcache.cli.args import check_device, comma_ints, located, require_torch
    from mcache.cli.output import emit_bench
    from mcache.core.errors import LayoutError, McacheError

    try:
        batches = list(dict.fromkeys(comma_ints(batch, "batch")))  # once each: a results file holds each row once
    except LayoutError:
        batches = []
    if not batches or min(batches) < 1:
        raise McacheError(f"bench: --batch: positive integers separated by commas, got {batch!r}")
    chosen = list(dict.fromkeys(op.strip() for op in ops.split(",") if op.strip()))
    if (sender_tp, sender_pp, receiver_tp, receiver_pp, backend) != (None,) * 5:
        from mcache.cli.bench_transfer import bench_transfer

        return bench_transfer(spec, chosen, batches, (sender_tp or 1, sender_pp or 1), (receiver_tp or 1, receiver_pp or 1),
                              device, backend, reps, max_seq_len, pool_layout, output)
    require_torch("bench")
    from mcache.bench.ops import OPS
    from mcache.bench.runner import BenchConfig, Runner

    unknown = [op for op in chosen if op not in OPS]
    if unknown or not chosen:
        raise McacheError(f"bench: --ops: one or more of {', '.join(OPS)}, got {ops!r}")
    if not 0 <= rank < tp * pp:
        raise McacheError(f"bench: --rank: 0 .. {tp * pp - 1} for tp={tp} pp={pp}, got {rank}")
    if max_batch is not None and max(batches) > max_batch:
        raise McacheError(f"bench: --batch: at most --max-batch ({max_batch}) requests, got {max(batches)}")
    if output is not None and not output.parent.is_dir():
        raise McacheError(f"{output}: output: a file in an existing folder")
    check_device(device, "bench", ("cuda", "cpu"))
    cfg = BenchConfig(spec=spec, tp=tp, pp=pp, stage=rank // tp, tp_rank=rank % tp, attention_dp=attention_dp,
                      batches=batches, ops=chosen, scheme=scheme, draft=draft, max_batch=max_batch,
                      max_seq_len=max_seq_len, per_layer=per_layer, device=device, pool_layout=pool_layout,
                      reps=reps)
    from mcache.core.spec_loader import resolve

    try:
        runner = Runner(cfg)
    except LayoutError as err:
        raise located(err, str(resolve(spec))) from None
    results = _run_with_progress(runner)
    emit_bench(results, output)
    return 130 if results.meta.interrupted else 0


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
