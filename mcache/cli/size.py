"""`mcache size`: bytes per GPU rank for every cache component, and how many sequences fit."""

from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.args import comma_ints, located
from mcache.core.errors import LayoutError

Scheme = Literal["none", "intermediate", "replay", "index"]
Format = Literal["table", "json", "markdown", "csv"]
Device = Literal["meta", "cpu", "cuda"]
PoolLayout = Literal["layer", "slot"]
DEFAULT_BATCH = 64  # the slot pool of a run without a GPU to size it by


def size(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="Spec file, bundled name (`mcache spec list`), HF config.json or folder.")],
    tp: Annotated[int, typer.Option(help="Tensor-parallel size.")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel stages.")] = 1,
    pp_partition: Annotated[str | None, typer.Option(help="Layers per stage, e.g. 20,32 (default: even split).")] = None,
    attention_dp: Annotated[bool, typer.Option("--attention-dp", help="Attention data-parallel (state, KV heads unsharded).")] = False,
    max_batch: Annotated[int | None, typer.Option(help="Requests per micro-batch; fixes the state pool at max batch x pp slots "
                                                       "(default: what memory holds at the context; 64 without a GPU).")] = None,
    max_seq_len: Annotated[int, typer.Option(help="Max tokens per sequence (sizes the KV pool).")] = 8192,
    block_size: Annotated[int, typer.Option(help="Tokens per KV block.")] = 32,
    kv_tokens: Annotated[int | None, typer.Option(help="Cap on KV tokens per layer (default: all requests at max seq len).")] = None,
    draft: Annotated[int, typer.Option(help="Speculative draft tokens per step.")] = 0,
    spec_scheme: Annotated[Scheme | None, typer.Option(help="Speculative state scheme (default: intermediate with --draft).")] = None,
    reserved_slots: Annotated[int | None, typer.Option(help="Reserved padding slots (default: draft+1, +1 with attention-DP).")] = None,
    snapshot_slots: Annotated[int, typer.Option(help="Snapshot slots for prefix caching.")] = 0,
    ssm_dtype: Annotated[str | None, typer.Option(help="Recurrent-state dtype (default: spec, else model dtype; KDA: float32).")] = None,
    kv_dtype: Annotated[str | None, typer.Option(help="KV-cache dtype (fp8 allowed).")] = None,
    conv_dtype: Annotated[str | None, typer.Option(help="Conv-state dtype.")] = None,
    gpu: Annotated[str | None, typer.Option(help="Catalogue GPU: h100-80gb, h200, b200, a100-40gb, a100-80gb, l40s, rtx-4090.")] = None,
    gpu_memory: Annotated[str | None, typer.Option(help="GPU memory, e.g. 141GiB (overrides --gpu).")] = None,
    utilization: Annotated[float, typer.Option(help="Fraction of GPU memory the engine may use.")] = 0.9,
    reserve: Annotated[str, typer.Option(help="Memory kept for activations and workspace.")] = "2GiB",
    context: Annotated[int | None, typer.Option(min=1, help="Context for the max-sequences figure (default: max seq len).")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Sequences for the longest-context figure (default: max batch x pp).")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = "table",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file (atomically).")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Build the cache manager; compare allocation with estimate.")] = False,
    device: Annotated[Device, typer.Option(help="Device for --verify.")] = "meta",
    pool_layout: Annotated[PoolLayout, typer.Option(help="Pool layout for --verify.")] = "layer",
) -> int:
    """Bytes per GPU rank for every cache component, and how many sequences fit."""
    from mcache.cli.output import does_not_fit, emit_report
    from mcache.core.capacity import Budget, check_budget
    from mcache.core.estimator import estimate
    from mcache.core.gpus import local_gpu, lookup, parse_size
    from mcache.core.layout import ParallelLayout, RuntimeConfig
    from mcache.core.rank import dtype_sources, resolve_dtypes
    from mcache.core.report import size_report
    from mcache.core.sizing import run_neutral, smallest_fitting_layout
    from mcache.core.spec_loader import load_spec, resolve

    model = load_spec(spec)
    origin = str(resolve(spec))
    try:
        partition = comma_ints(pp_partition, "pp_partition") if pp_partition else None
        layout = ParallelLayout(tp=tp, pp=pp, attention_dp=attention_dp, pp_partition=partition)
        scheme = spec_scheme if spec_scheme else ("intermediate" if draft else "none")
        runtime = RuntimeConfig(max_batch=DEFAULT_BATCH if max_batch is None else max_batch, max_seq_len=max_seq_len, tokens_per_block=block_size,
                                draft_tokens=draft, spec_scheme=scheme, reserved_slots=reserved_slots,
                                snapshot_slots=snapshot_slots, kv_tokens=kv_tokens)
        dtypes = resolve_dtypes(model, kv_dtype, conv_dtype, ssm_dtype)
        if verify:
            from mcache.cli.verify import run_verify

            return run_verify(estimate(model, layout, runtime, dtypes), device, pool_layout, fmt, output)
        reserve_bytes = parse_size(reserve, "reserve")
        check_budget(utilization, reserve_bytes)
        target = (f"{gpu_memory} GPU", parse_size(gpu_memory, "gpu_memory")) if gpu_memory else lookup(gpu) if gpu else local_gpu()
        budget = Budget(target[0], target[1], utilization, reserve_bytes) if target else None
        run = run_neutral(model, layout, runtime, dtypes, budget, context, concurrency, batch_given=max_batch is not None)
        report = size_report(run, origin, dtype_sources(model, kv_dtype, conv_dtype, ssm_dtype))
    except LayoutError as err:
        raise located(err, origin) from None
    emit_report(report, fmt, output)
    if run.fits is False:
        raise does_not_fit(report, smallest_fitting_layout(run))
    return 0


