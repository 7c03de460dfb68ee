"""`mcache bench`: time the cache operations of one rank on a GPU (or a CPU smoke run)."""

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.options import PpOption, TpOption

Scheme = Literal["intermediate", "replay", "index"]
BenchFormat = Literal["table", "markdown"]


def bench(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="Spec file, bundled spec name, or HF config.json.")],
    tp: TpOption = 1,
    pp: PpOption = 1,
    rank: Annotated[int, typer.Option(help="Global rank to build: stage = rank // tp, TP rank = rank % tp.")] = 0,
    attention_dp: Annotated[bool, typer.Option("--attention-dp", help="Attention data-parallel.")] = False,
    batch: Annotated[str, typer.Option(help="Batch sizes, comma-separated.")] = "1,8,32,64",
    ops: Annotated[str, typer.Option(show_default="every manager op", help=(
        "Ops, comma-separated. Manager ops: alloc, reset, commit, replay, relocate, snapshot, pack, transfer; kernel "
        "ops (the SSM pool alone): copy_slots, commit_intermediate, pack_heads, unpack_heads, replay_fold, "
        "replay_fold_conv; or kernels for all kernel ops."))] = "alloc,reset,commit,replay,relocate,snapshot,pack,transfer",
    scheme: Annotated[Scheme, typer.Option(help="Speculative scheme the manager is built with.")] = "intermediate",
    draft: Annotated[int, typer.Option(min=1, help="Draft tokens per step (T = draft + 1).")] = 3,
    ring_tokens: Annotated[int | None, typer.Option(min=1, show_default="draft + 1", help=(
        "Tokens each replay ring holds and each fold folds (at least draft + 1; 16 for long rings)."))] = None,
    max_batch: Annotated[int | None, typer.Option(min=1, help=(
        "Requests per micro-batch: the rank holds max batch x pp slots, as in `mcache size` (default: the largest batch)."))] = None,
    max_seq_len: Annotated[int, typer.Option(min=1, help="Tokens per sequence the KV pool holds.")] = 4096,
    per_layer: Annotated[bool, typer.Option("--per-layer", help="Also time every layer on its own.")] = False,
    device: Annotated[str, typer.Option(help="cuda, cuda:N, or cpu (a smoke run, not comparable with GPU runs).")] = "cuda",
    pool_layout: Annotated[Literal["layer", "slot"], typer.Option(help="Pool layout.")] = "layer",
    reps: Annotated[int, typer.Option(min=1, help="Timed repetitions per measurement.")] = 30,
    ssm_dtype: Annotated[str | None, typer.Option(help="Recurrent-state dtype (default: the spec's), e.g. float32.")] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="Also time the block/warps configurations of the copy "
                                        "kernel and the folds (CUDA only).")] = False,
    fmt: Annotated[BenchFormat, typer.Option("--format", help="table, or markdown (the kernel-table layout).")] = "table",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Results JSON (written atomically).")] = None,
    sender_tp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the sender's TP.")] = None,
    sender_pp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the sender's PP (1).")] = None,
    receiver_tp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the receiver's TP.")] = None,
    receiver_pp: Annotated[int | None, typer.Option(min=1, help="--ops transfer across processes: the receiver's PP (1).")] = None,
    backend: Annotated[Literal["nccl", "gloo"] | None, typer.Option(help=(
        "torch.distributed backend of the transfer (default: nccl on cuda, gloo on cpu)."))] = None,
) -> int:
    """Build the real cache manager of one rank and time its kernels against the copy ceiling."""
    from mcache.cli.args import check_device, check_ranges, comma_ints, located, require_torch
    from mcache.cli.bench_output import emit_bench
    from mcache.core.errors import LayoutError, McacheError

    try:
        batches = list(dict.fromkeys(comma_ints(batch, "batch")))  # once each: a results file holds each row once
    except LayoutError:
        batches = []
    if not batches or min(batches) < 1:
        raise McacheError(f"bench: --batch: positive integers separated by commas, got {batch!r}")
    check_ranges({"batch": tuple(batches), "tp": tp, "pp": pp, "draft": draft, "max_batch": max_batch,
                  "max_seq_len": max_seq_len, "reps": reps})
    if ring_tokens is not None and ring_tokens < draft + 1:
        raise McacheError(f"bench: --ring-tokens: at least draft + 1 ({draft + 1}) tokens, got {ring_tokens}")
    chosen = list(dict.fromkeys(op.strip() for op in ops.split(",") if op.strip()))
    from mcache.cli.output import check_writable, refuse_input_as_output, spec_inputs

    check_writable(output)
    from mcache.core.load import resolve

    refuse_input_as_output(output, *spec_inputs(Path(str(resolve(spec)))))
    if (sender_tp, sender_pp, receiver_tp, receiver_pp, backend) != (None,) * 5:
        from mcache.cli.bench_transfer import bench_transfer

        return bench_transfer(spec, chosen, batches, (sender_tp or 1, sender_pp or 1), (receiver_tp or 1, receiver_pp or 1),
                              device, backend, reps, max_seq_len, pool_layout, output)
    require_torch("bench")
    from mcache.bench.interrupt import Interrupts
    from mcache.bench.kernel_ops import KERNEL_OPS
    from mcache.bench.ops import OPS
    from mcache.bench.runner import BenchConfig, Runner

    chosen = list(dict.fromkeys(op.strip() for op in ops.replace("kernels", ",".join(KERNEL_OPS)).split(",") if op.strip()))
    unknown = [op for op in chosen if op not in OPS + KERNEL_OPS]
    if unknown or not chosen:
        raise McacheError(f"bench: --ops: one or more of {', '.join(OPS + KERNEL_OPS)} (or kernels), got {ops!r}")
    if not 0 <= rank < tp * pp:
        raise McacheError(f"bench: --rank: 0 .. {tp * pp - 1} for tp={tp} pp={pp}, got {rank}")
    if max_batch is not None and max(batches) > max_batch:
        raise McacheError(f"bench: --batch: at most --max-batch ({max_batch}) requests, got {max(batches)}")
    check_device(device, "bench", ("cuda", "cpu"))
    if sweep and not device.startswith("cuda"):
        raise McacheError("bench: --sweep: times Triton kernel configurations, which needs --device cuda")
    cfg = BenchConfig(spec=spec, tp=tp, pp=pp, stage=rank // tp, tp_rank=rank % tp, attention_dp=attention_dp,
                      batches=batches, ops=chosen, scheme=scheme, draft=draft, max_batch=max_batch,
                      max_seq_len=max_seq_len, per_layer=per_layer, device=device, pool_layout=pool_layout,
                      reps=reps, ssm_dtype=ssm_dtype, sweep=sweep, ring_tokens=ring_tokens)
    from mcache.core.load import resolve

    if device == "cpu":
        smoke_threads()
    # From here every Ctrl-C is caught: the rows done so far (perhaps none) are written, marked interrupted.
    with Interrupts() as interrupts:
        try:
            runner = Runner(cfg, interrupts)
        except LayoutError as err:
            raise located(err, str(resolve(spec))) from None
        results = _run_with_progress(runner)
        emit_bench(results, output, fmt)
    for failure in runner.failures:
        print(f"mcache: {failure}", file=sys.stderr)
    if results.meta.interrupted or interrupts.requested:
        return 130
    return 1 if runner.failures else 0


def smoke_threads() -> None:
    """A CPU smoke run uses at most 4 intra-op threads: more only stall on a shared machine."""
    import os

    import torch

    torch.set_num_threads(min(4, os.cpu_count() or 1))


def _run_with_progress(runner):
    """Run with a progress bar on stderr (rows so far are kept on Ctrl-C)."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    # Off the terminal the bar would leave a blank line on stderr.
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        task = None

        def tick(desc: str, total: int) -> None:
            nonlocal task
            if desc:
                task = progress.add_task(f"{runner.spec.name}: {desc}", total=total)
            elif task is not None:
                progress.advance(task)

        return runner.run(tick)
