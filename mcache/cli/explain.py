"""`mcache explain LOG`: read an engine's start-up log, size the same deployment with what the engine measured, and
show each figure the engine printed beside mcache's; with options of `mcache size --engine`, what the engine would
run with them on top of the same measured memory.

The options are `mcache size`'s own declarations (its signature, less what a log decides: SPEC, --engine, the neutral
model's options and --verify), so every option `mcache size --engine` takes is a what-if here, declared once."""

import inspect
import sys
from pathlib import Path
from typing import Annotated

import typer

from mcache.cli.size import size as _size_command

# mcache size's parameters a log decides, or that only the neutral model has
NOT_HERE = ("spec", "engine", "verify", "device", "pool_layout", "transfer_to_tp", "transfer_to_pp", "concurrency",
            "kv_tokens", "reserved_slots", "snapshot_slots", "spec_scheme", "tp", "pp")


def explain(
    log: Annotated[str, typer.Argument(metavar="LOG", help="A start-up log of vLLM, SGLang or TensorRT-LLM, or - for stdin.")],
    model: Annotated[str | None, typer.Option(metavar="PATH", help=(
        "The model as `mcache size` takes a SPEC (default: the path or Hub id the log names, from the Hugging Face "
        "cache when not a path)."))] = None,
    tp: Annotated[int | None, typer.Option(help=(
        "Tensor-parallel size, where the log does not state it (default: the log's; a vLLM log's data-parallel size "
        "over engine cores of TP 1, as --attention-dp takes it)."))] = None,
    pp: Annotated[int | None, typer.Option(help="Pipeline-parallel stages, where the log does not state them (default: "
                                                "the log's).")] = None,
    **options,
) -> int:
    """Explain an engine's start-up log: its figures beside mcache's, from the memory it measured."""
    from mcache.cli.args import check_ranges, located
    from mcache.cli.explain_output import emit_explanation
    from mcache.cli.options import output_format
    from mcache.cli.output import draft_inputs, refuse_input_as_output, spec_inputs
    from mcache.cli.size import _gpu, _layout, _parse_sizes, size_options
    from mcache.core.errors import LayoutError, McacheError
    from mcache.core.explain import explain as explain_log
    from mcache.core.explain import log_layout, log_named, log_version
    from mcache.core.logs import read_log

    fmt = output_format(options.pop("fmt"), options.get("output"))
    output = options.pop("output")
    text, source = _read(log)
    if output is not None and log != "-":
        refuse_input_as_output(output, Path(log))
    parsed = read_log(text, source)
    _check_cut(parsed, source)
    version = options.pop("engine_version") or log_version(parsed)
    spec, origin = _model(model, parsed)
    draft_model = options.pop("draft_model")
    refuse_input_as_output(output, *spec_inputs(Path(origin)), *draft_inputs(draft_model))
    spec = with_drafter_of(spec, draft_model, parsed)
    sizes = _parse_sizes({k: options.pop(k) for k in ("gpu_memory", "reserve", "weights", "kv_cache_memory",
                                                       "free_memory_before_load")})
    gpu_name, context, attention_dp, dp_size, partition = (options.pop(k) for k in (
        "gpu", "context", "attention_dp", "attention_dp_size", "pp_partition"))
    overrides = size_options(options, sizes)
    from msgspec.structs import asdict

    check_ranges({**asdict(overrides), "tp": tp, "pp": pp, "attention_dp_size": dp_size, "context": context})
    stated_layout(parsed, tp, pp)
    try:
        log_tp, log_pp, log_dp, log_dp_size = log_layout(parsed, tp, pp, attention_dp, dp_size)
        layout = _layout(log_tp, log_pp, log_dp, partition, log_dp_size)
        gpu = (f"{options_gpu_memory(sizes)} GPU", sizes["gpu_memory"]) if "gpu_memory" in sizes else (
            _gpu(gpu_name) if gpu_name else (("the log's GPU", parsed.gpu_bytes) if parsed.gpu_bytes else None))
        result = explain_log(parsed, spec, origin, layout, gpu, version, overrides, context)
    except LayoutError as err:
        if err.field == "engine_version":
            said = f" (the log says {parsed.version})" if parsed.version else " (the log names no version)"
            raise McacheError(f"--engine-version: {err.expected}{said}") from None
        raise located(err, origin, parsed.engine, log_named(parsed)) from None
    emit_explanation(result, source, origin, fmt, output)
    return 1 if result.findings else 0


def options_gpu_memory(sizes: dict) -> str:
    from mcache.cli.output import human_bytes

    return human_bytes(sizes["gpu_memory"])


def _read(log: str) -> tuple[str, str]:
    """The log's text (bounded as every document mcache reads; a byte that is not UTF-8, as a captured terminal may
    leave, read as U+FFFD, from a file as from stdin) and the name to give it in messages."""
    from mcache.core.errors import McacheError
    from mcache.core.files import MAX_DOCUMENT_BYTES, read_bounded

    if log != "-":
        return read_bounded(log, "a readable log").decode("utf-8", errors="replace"), log
    data = sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise McacheError(f"stdin: a log of at most {MAX_DOCUMENT_BYTES >> 20} MiB (the start-up part is enough)")
    return data.decode("utf-8", errors="replace"), "stdin"


def stated_layout(parsed, tp: int | None, pp: int | None) -> None:
    """`--tp` and `--pp` give a layout the log does not state: one that contradicts a size the log states is one line
    (its figures would all differ, findings of nothing the engine did)."""
    from mcache.core.errors import McacheError
    from mcache.core.explain import log_layout

    stated_tp, stated_pp = log_layout(parsed, None, None, False)[:2]
    for flag, given, stated, line in (("--tp", tp, stated_tp, parsed.tp_line), ("--pp", pp, stated_pp, parsed.pp_line)):
        if given is not None and line is not None and given != stated:
            what = "tensor-parallel size" if flag == "--tp" else "pipeline-parallel size"
            raise McacheError(f"{flag} {given}: the log states a {what} of {stated} (line {line}); {flag} is for a log "
                              "that does not state it (`mcache size` answers another layout)")


def _check_cut(parsed, source: str) -> None:
    """A log that ends before the engine sizes its cache is one line naming what is missing."""
    from mcache.core.engines import TITLES
    from mcache.core.logs import LogError

    if parsed.figures:
        return
    wanted = {"vllm": "'GPU KV cache size', 'Setting attention block size' or the max_num_seqs check",
              "sglang": "'Mamba Cache is allocated', 'KV Cache is allocated' or 'max_total_num_tokens='",
              "trtllm": "'[MemUsageChange] Allocated ... for max tokens in paged KV cache' or 'Estimated max memory in "
                        "KV cache'"}[parsed.engine]
    # a log of an engine past its start-up checks is an excerpt that left the sizing out
    where = "ends before the cache is sized" if parsed.started_line is None else "leaves out the cache sizing"
    raise LogError(f"{source}: the {TITLES[parsed.engine]} log {where} (no {wanted} line); give the log through the "
                   "cache sizing")


def _model(given: str | None, parsed):
    """The model spec and where it came from: --model, else the path the log names, else its Hub id in the local
    Hugging Face cache; one line naming how to supply it otherwise."""
    from mcache.core.errors import McacheError
    from mcache.core.load import load_spec, resolve

    if given is not None:
        return load_spec(given), str(resolve(given))
    named = parsed.model
    if not named:
        raise McacheError("the log does not name the model (no args or config line in it): give its config.json or "
                          "checkpoint folder with --model PATH")
    from mcache.core.hub import hub_id

    path = Path(named).expanduser()
    if path.exists():
        return load_spec(str(path)), str(path)
    if hub_id(named) is not None:  # read from the Hub (or its cache) as `mcache size` reads a Hub id
        return load_spec(named), named
    raise McacheError(f"the model the log names, {named!r}, is not here (no such path, and not a Hugging Face repo "
                      "id): give its config.json or checkpoint folder with --model PATH")


def with_drafter_of(spec, given: str | None, parsed):
    """`spec` drafting with --draft-model's drafter, else with the DFlash drafter the log (`parsed`, or None) names
    when it can be read (a path, or a Hub id as --model reads one); as it is otherwise (`explain` then notes it).
    `mcache plan` takes a drafter the same way."""
    from mcache.core.errors import McacheError
    from mcache.core.explain import dflash_drafter
    from mcache.core.hub import hub_id
    from mcache.core.load import with_drafter

    named = dflash_drafter(parsed) if given is None and parsed is not None else None
    if not named:
        return with_drafter(spec, given)
    path = Path(named).expanduser()
    if not (path.exists() or hub_id(named)):
        return spec
    try:
        return with_drafter(spec, str(path) if path.exists() else named)
    except McacheError:
        return spec


def _signature() -> None:
    """explain's signature: its own parameters, then mcache size's options (less `NOT_HERE`)."""
    own = list(inspect.signature(explain).parameters.values())[:-1]
    borrowed = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for name, p in
                inspect.signature(_size_command).parameters.items() if name not in NOT_HERE]
    explain.__signature__ = inspect.Signature([*own, *borrowed], return_annotation=int)
    hints = dict(_size_command.__annotations__)
    explain.__annotations__ = {**{p.name: p.annotation for p in own}, **{p.name: hints[p.name] for p in borrowed},
                               "return": int}


_signature()
