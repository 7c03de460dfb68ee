"""`mcache size`: bytes per GPU rank for every cache component, and how many sequences fit (in mcache's neutral
model, or as vLLM, SGLang or TensorRT-LLM will run it with `--engine`)."""

from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.args import check_ranges, comma_ints, located
from mcache.cli.options import (
    DraftModelOption,
    FormatOption,
    OutputOption,
    PpOption,
    TpOption,
    WeightFormatOption,
    also,
    flag,
    output_format,
)
from mcache.core.errors import LayoutError, McacheError
from mcache.core.sizing.gpu_catalogue import CATALOGUE

Scheme = Literal["none", "intermediate", "replay", "index"]
Device = Literal["meta", "cpu", "cuda"]
PoolLayout = Literal["layer", "slot"]
Engine = Literal["vllm", "sglang", "trtllm"]
KvCacheManager = Literal["v1", "v2", "auto"]
# Help texts state the engines' defaults as literals, so that `mcache size` starts without loading the engine
# modules; tests/test_cli_engines.py holds each to its engine's named constant.
VLLM, SGLANG, TRTLLM = "vLLM (with --engine vllm)", "SGLang (with --engine sglang)", "TensorRT-LLM (with --engine trtllm)"


def size(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="Spec file, bundled name (`mcache spec list`), HF config.json or folder.")],
    engine: Annotated[Engine | None, typer.Option(metavar="ENGINE", help=(
        "vllm, sglang or trtllm: size as this engine does (default: mcache's neutral model)."))] = None,
    engine_version: Annotated[str | None, typer.Option(metavar="X.Y[.Z]", help=(
        "The engine's release (default: the newest modelled; another takes the modelled release before it)."))] = None,
    tp: TpOption = 1,
    pp: PpOption = 1,
    pp_partition: Annotated[str | None, typer.Option(help="Layers per stage, e.g. 20,32 (default: even split).")] = None,
    attention_dp: Annotated[bool, typer.Option("--attention-dp", help=(
        "Attention data-parallel: each TP rank keeps whole KV heads and state for a batch of its own (a replica "
        "runs tp x a rank's sequences)."))] = False,
    attention_dp_size: Annotated[int | None, typer.Option("--attn-dp-size", help=(
        "Attention-DP width N, a divisor of --tp (implies --attention-dp, whose width is tp): N groups of tp / N "
        "ranks, each splitting KV heads and state over its ranks for a batch of its own (a replica runs N x a rank's "
        "sequences). SGLang's --dp-size N with DP attention (from 0.5.22: --attn-dp-size N)."))] = None,
    max_batch: Annotated[int | None, typer.Option("--max-batch", help=(
        "Requests per micro-batch on each rank; fixes the rank's state pool at max batch x pp slots (one micro-batch "
        "per stage in flight; default: what memory holds at the context; 64 without a GPU). TensorRT-LLM's "
        "max_batch_size (default 2048)." + also("size", "--max-batch")))] = None,
    max_seq_len: Annotated[int | None, typer.Option("--max-seq-len", help=(
        "Max tokens per sequence, sizing the KV pool (8192; engines: the config's max_model_len)."
        + also("size", "--max-seq-len")))] = None,
    block_size: Annotated[int | None, typer.Option("--block-size", help=(
        "Tokens per KV block (32; vLLM 64, SGLang page 1, TensorRT-LLM 32)." + also("size", "--block-size")))] = None,
    kv_tokens: Annotated[int | None, typer.Option(help="Cap on KV tokens per layer (default: all requests at max seq len).")] = None,
    draft: Annotated[int | None, typer.Option("--draft", help="Speculative draft tokens per step (0)."
                                              + also("size", "--draft"))] = None,
    draft_model: DraftModelOption = None,
    spec_scheme: Annotated[Scheme | None, typer.Option(metavar="SCHEME", help=(
        "Speculative state scheme: none, intermediate, replay or index (default: intermediate with --draft)."))] = None,
    reserved_slots: Annotated[int | None, typer.Option(help="Reserved padding slots (default: draft+1, +1 with attention-DP).")] = None,
    snapshot_slots: Annotated[int | None, typer.Option(help="Snapshot slots for prefix caching (0).")] = None,
    ssm_dtype: Annotated[str | None, typer.Option("--ssm-dtype", help=(
        "Recurrent-state dtype (default: spec, else model dtype; KDA: float32; engines: their own rule)."
        + also("size", "--ssm-dtype")))] = None,
    kv_dtype: Annotated[str | None, typer.Option("--kv-dtype", help="KV-cache dtype (fp8 allowed)." + also("size", "--kv-dtype"))] = None,
    conv_dtype: Annotated[str | None, typer.Option("--conv-dtype", help="Conv-state dtype." + also("size", "--conv-dtype"))] = None,
    gpu: Annotated[str | None, typer.Option(help=(
        "Catalogue GPU, in any case and as drivers print it (NVIDIA H200): " + ", ".join(CATALOGUE) + "."))] = None,
    gpu_memory: Annotated[str | None, typer.Option(help=(
        "GPU memory with its unit, 1GiB to 1PiB: GB = 10^9 B, GiB = 2^30 B (also B, KB, MB, TB, PB, KiB, MiB, TiB, PiB), e.g. "
        "141GiB; overrides --gpu, whose catalogue has what nvidia-smi reports (an H100 80GB: 81559MiB).")
    )] = None,
    utilization: Annotated[float | None, typer.Option("--utilization", help=(
        "Fraction of GPU memory the engine may use (0.9; vLLM 1.0)." + also("size", "--utilization")))] = None,
    reserve: Annotated[str | None, typer.Option(help=(
        "Memory kept for activations and workspace, a size as for --gpu-memory, 0 allowed (2GiB; vLLM, TensorRT-LLM: "
        "what their profiling finds)."))] = None,
    weights: Annotated[str | None, typer.Option(help="Weights one rank loads, e.g. 28.5GiB, or 0 (default: mcache's estimate).")] = None,
    weight_format: WeightFormatOption = None,
    context: Annotated[int | None, typer.Option(min=1, help="Context for the max-sequences figure (default: max seq len).")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Sequences for the longest-context figure (max batch x pp).")] = None,
    kv_cache_memory: Annotated[str | None, typer.Option(help="KV cache memory, e.g. 6.01GiB, 0 allowed (skips the budget).",
                                                        rich_help_panel=VLLM)] = None,
    prefix_caching: Annotated[Literal["on", "off"] | None, typer.Option(help=(
        "Prefix caching (on for hybrid models)." + also("size", "--prefix-caching=on", "--prefix-caching=off")),
        rich_help_panel=VLLM)] = None,
    mamba_cache_mode: Annotated[str | None, typer.Option(
        help="none, align or all: deprecated, logged and ignored (vLLM 0.33 on).", rich_help_panel=VLLM)] = None,
    kernel_block_size: Annotated[int | None, typer.Option(help=(
        "Smallest kernel block of the attention backend (16)."),
                                                          rich_help_panel=VLLM)] = None,
    max_num_seqs: Annotated[int | None, typer.Option(help=(
        "Scheduler limit (1024 on 70 GiB+ GPUs, else 256)."),
                                                     rich_help_panel=VLLM)] = None,
    max_num_batched_tokens: Annotated[int | None, typer.Option(help=(
        "Tokens per scheduler step (8192 on an H100/H200)."),
                                                               rich_help_panel=VLLM)] = None,
    enforce_eager: Annotated[bool | None, typer.Option("--enforce-eager", help="No CUDA graphs (skips the max_num_seqs check).",
                                                       rich_help_panel=VLLM)] = None,
    gdn_prefill_backend: Annotated[str | None, typer.Option(help="flashinfer (0.33 on Hopper) or triton (as 0.32 and older).",
                                                            rich_help_panel=VLLM)] = None,
    attention_backend: Annotated[str | None, typer.Option(help=(
        "The model's attention backend, e.g. TRITON_ATTN (default: vLLM's choice); the MTP drafter keeps its own."),
                                                          rich_help_panel=VLLM)] = None,
    draft_attention_backend: Annotated[str | None, typer.Option(help=(
        "The MTP drafter's (its speculative config's attention_backend; default: vLLM's choice for the GPU)."),
                                                                rich_help_panel=VLLM)] = None,
    no_async_scheduling: Annotated[bool | None, typer.Option("--no-async-scheduling", help=(
        "One batch in flight a PP stage, not two: the steps' tokens a windowed layer keeps."),
                                                             rich_help_panel=VLLM)] = None,
    mem_fraction_static: Annotated[float | None, typer.Option(help="Static memory fraction (default: SGLang's heuristic).",
                                                              rich_help_panel=SGLANG)] = None,
    mamba_full_memory_ratio: Annotated[float | None, typer.Option(help=(
        "State pool : token pool (0.9)."), rich_help_panel=SGLANG)] = None,
    max_mamba_cache_size: Annotated[int | None, typer.Option(help="Fixed state slots.", rich_help_panel=SGLANG)] = None,
    max_running_requests: Annotated[int | None, typer.Option(help="Scheduler limit.", rich_help_panel=SGLANG)] = None,
    disable_radix_cache: Annotated[bool | None, typer.Option("--disable-radix-cache", help="One state slot per request.",
                                                             rich_help_panel=SGLANG)] = None,
    mamba_radix_cache_strategy: Annotated[str | None, typer.Option(help="auto, no_buffer, extra_buffer, extra_buffer_lazy.",
                                                                   rich_help_panel=SGLANG)] = None,
    disable_overlap_schedule: Annotated[bool | None, typer.Option("--disable-overlap-schedule", help="No overlap scheduler.",
                                                                  rich_help_panel=SGLANG)] = None,
    chunked_prefill_size: Annotated[int | None, typer.Option(help="Default: by GPU memory.", rich_help_panel=SGLANG)] = None,
    max_total_tokens: Annotated[int | None, typer.Option(help="Cap on the token pool.", rich_help_panel=SGLANG)] = None,
    draft_kv_dtype: Annotated[str | None, typer.Option("--draft-kv-dtype", help=(  # SGLang's name, an alias, is too long to show
        "A DFlash drafter's KV dtype (auto: its own; default: --kv-dtype's), from 0.5.18."), rich_help_panel=SGLANG)] = None,
    qsa_indexer_dtype: Annotated[str | None, typer.Option(help=(
        "auto, bfloat16 or fp8_e4m3: the compressed QSA keys' dtype (Qwen3.8-Flash-Next), from 0.5.22."),
                                                          rich_help_panel=SGLANG)] = None,
    free_memory_before_load: Annotated[str | None, typer.Option(help="Free memory before weights load, at least 1GiB (GPU less 0.5GiB).",
                                                                rich_help_panel=SGLANG)] = None,
    free_gpu_memory_fraction: Annotated[float | None, typer.Option(help=(
        "Of the memory left after the profiled peak (0.9)."),
                                                                   rich_help_panel=TRTLLM)] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Cap on KV tokens (KvCacheConfig.max_tokens).", rich_help_panel=TRTLLM)] = None,
    kv_cache_manager: Annotated[KvCacheManager | None, typer.Option(help=(
        "v1, v2 or auto: the KV cache manager (use_kv_cache_manager_v2 of KvCacheConfig; the engine's default: auto on "
        "main, V2 for Nemotron-H and Qwen3 hybrids; v1 at 1.2, which has no auto)."), rich_help_panel=TRTLLM)] = None,
    transfer_to_tp: Annotated[int | None, typer.Option(min=1, help=(
        "Also show what one request moves from each rank to each rank of a receiver of this TP (disaggregated serving)."))] = None,
    transfer_to_pp: Annotated[int | None, typer.Option(min=1, help="The receiver's PP stages for the transfer (default: --pp).")] = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    verify: Annotated[bool, typer.Option("--verify", help="Build the cache manager; compare allocation with estimate.")] = False,
    device: Annotated[Device, typer.Option(help="Device for --verify.")] = "meta",
    pool_layout: Annotated[PoolLayout, typer.Option(help="Pool layout for --verify.")] = "layer",
) -> int:
    """Bytes per GPU rank for every cache component, and how many sequences fit."""
    params = dict(locals())  # every parameter by name, for `size_options`
    fmt = output_format(fmt, output)
    from msgspec.structs import asdict

    from mcache.cli.output import draft_inputs, refuse_input_as_output, spec_inputs
    from mcache.cli.size_output import does_not_fit, emit_report, not_loaded
    from mcache.core.deployment import Deployment, longest_starting_length, smallest_fitting_layout
    from mcache.core.engines import architecture_error, loaders
    from mcache.core.engines.options import engine_settings
    from mcache.core.load import load_spec, resolve, with_drafter
    from mcache.core.report import size_report
    from mcache.core.sizing.layout import ParallelLayout

    model = with_drafter(load_spec(spec), draft_model)
    origin = str(resolve(spec))
    refuse_input_as_output(output, *spec_inputs(Path(origin)), *draft_inputs(draft_model))
    sizes = _parse_sizes({"gpu_memory": gpu_memory, "reserve": reserve, "weights": weights,
                          "kv_cache_memory": kv_cache_memory, "free_memory_before_load": free_memory_before_load})
    options = size_options(params, sizes)
    check_ranges({**asdict(options), "tp": tp, "pp": pp, "attention_dp_size": attention_dp_size, "context": context,
                  "concurrency": concurrency, "transfer_to_tp": transfer_to_tp, "transfer_to_pp": transfer_to_pp})
    try:
        engine_settings(engine, options)  # an option the engine lacks is the first error, before the layout's
        if engine_version and not engine:
            raise McacheError("--engine-version: the release of the engine named by --engine; add --engine")
        if engine and verify:
            raise McacheError("--verify: checks mcache's neutral pools against the manager; drop --engine")
        layout = _layout(tp, pp, attention_dp, pp_partition, attention_dp_size)
        target = (f"{gpu_memory} GPU", sizes["gpu_memory"]) if gpu_memory else _gpu(gpu)
        deployment = Deployment(layout, target, engine, options, context, concurrency, engine_version)
        receiver = transfer_to_tp or transfer_to_pp
        transfer = ParallelLayout(tp=transfer_to_tp or tp, pp=transfer_to_pp or pp) if receiver and not verify else None
        report = size_report(model, deployment, origin, transfer)
        if verify:
            from mcache.cli.verify import run_verify

            return run_verify(report.sized.neutral, device, pool_layout, fmt, output)
    except LayoutError as err:
        raise located(err, origin, engine) from None
    emit_report(report.data, fmt, output)
    if report.sized.fits is False:
        if engine and (unloadable := architecture_error(engine, model, report.data["engine"]["version"])):
            raise not_loaded(report.data, unloadable, loaders(model))  # no layout or length changes that
        raise does_not_fit(report.data, smallest_fitting_layout(model, deployment),
                           longest_starting_length(model, deployment, report.sized))
    return 0


def size_options(params: dict, sizes: dict[str, int]) -> "SizeOptions":  # noqa: F821 (imported inside)
    """The core's options from `mcache size`'s parameters (by name; those that are no option are left out) and the
    sizes parsed from them: a flag not given is None (the default), --prefix-caching on/off a boolean."""
    from mcache.core.options import SizeOptions

    values = {name: params[name] for name in SizeOptions.__struct_fields__ if name in params}
    for flag_name in ("enforce_eager", "disable_radix_cache", "disable_overlap_schedule"):
        values[flag_name] = values[flag_name] or None
    values["enable_prefix_caching"] = None if params["prefix_caching"] is None else params["prefix_caching"] == "on"
    values["async_scheduling"] = False if params.get("no_async_scheduling") else None
    values |= {name: sizes.get(name) for name in ("reserve", "weights", "kv_cache_memory", "free_memory_before_load")}
    return SizeOptions(**values)


def _parse_sizes(texts: dict[str, str | None]) -> dict[str, int]:
    """The size options given (field -> text), parsed; a GPU's memory is at least 1 GiB, a free memory before load
    too, a reserve, weights or KV budget may be 0."""
    from mcache.core.sizing.gpus import GIB, parse_size

    least = {"gpu_memory": GIB, "free_memory_before_load": GIB}
    parsed = {}
    for field, text in texts.items():
        if text is not None:
            try:
                parsed[field] = parse_size(text, field, least.get(field, 0))
            except LayoutError as err:
                raise McacheError(f"{flag(field)}: {err.expected}") from None
    return parsed


def _layout(tp: int, pp: int, attention_dp: bool, pp_partition: str | None, attention_dp_size: int | None = None):
    """The parallel layout of `--tp`, `--pp`, `--attention-dp`, `--pp-partition` and `--attn-dp-size` (which implies
    `--attention-dp`)."""
    from mcache.core.sizing.layout import ParallelLayout

    partition = comma_ints(pp_partition, "pp_partition") if pp_partition else None
    check_ranges({"pp_partition": partition})
    return ParallelLayout(tp=tp, pp=pp, attention_dp=attention_dp or attention_dp_size is not None,
                          pp_partition=partition, attention_dp_size=attention_dp_size)


def _gpu(name: str | None) -> tuple[str, int] | None:
    """The catalogue GPU `name`, else this machine's GPU (None without one)."""
    from mcache.core.sizing.gpus import local_gpu, lookup

    return lookup(name) if name else local_gpu()
