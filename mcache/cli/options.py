"""Options that several commands share, declared once as `Annotated` aliases, and the flag a user types for each
option field the core names."""

from pathlib import Path
from typing import Annotated, Literal

import typer

Format = Literal["table", "json", "markdown", "csv"]
FormatOption = Annotated[Format | None, typer.Option("--format", help=(
    "Output format (default: by the -o file's suffix, .json, .md or .csv, else table)."))]
SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".csv": "csv"}


def output_format(fmt: str | None, output: Path | None) -> str:
    """The format given, else the one `output`'s suffix names (`k.json`: json), else a table."""
    return fmt or (SUFFIX_FORMATS.get(output.suffix.lower()) if output is not None else None) or "table"
def _a_file(path: Path | None) -> Path | None:
    """`-o -` names no file: stdout is where the output goes without `-o`."""
    if path is not None and str(path) == "-":
        raise typer.BadParameter("a file path; leave -o out to write to stdout")
    return path


OutputOption = Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file (atomically).",
                                                   callback=_a_file)]
# the names are `core/sizing/weights.py` WEIGHT_FORMATS, written out so that no command loads the core to build its help
WeightFormatOption = Annotated[str | None, typer.Option(metavar="FORMAT", help=(
    "Weights stored as bf16, fp16, nvfp4, mxfp4, fp8, fp8_block, int4, int8 or nf4: every linear layer but the output head "
    "(default: the spec's; explain: the format the log's quantization names, where it names one)."))]
DraftModelOption = Annotated[str | None, typer.Option("--draft-model", metavar="CONFIG", help=(
    "A DFlash drafter's config.json, folder or Hub id: it drafts in place of the model's MTP layers (with --draft), "
    "its weights loaded and its attention layers keeping KV beside the model's."))]
TpOption = Annotated[int, typer.Option(help="Tensor-parallel size.")]
PpOption = Annotated[int, typer.Option(help="Pipeline-parallel stages.")]

# Fields the core names whose flag is not the field with dashes: the layout's pair, and the runtime's own names.
SPELLED = {"tp/pp": "--tp/--pp", "tokens_per_block": "--block-size", "draft_tokens": "--draft",
           "enable_prefix_caching": "--prefix-caching", "attention_dp_size": "--attn-dp-size",
           "async_scheduling": "--no-async-scheduling"}  # on by default: the option turns it off


# The engines' names for mcache size's options: accepted as typed, shown in each option's description (so the
# option column of --help holds one name and is never cut), and read as the option before typer parses.
ALIASES = {
    "size": {"--max-batch-size": "--max-batch", "--max-model-len": "--max-seq-len", "--context-length": "--max-seq-len",
             "--tokens-per-block": "--block-size", "--page-size": "--block-size", "--num-speculative-tokens": "--draft",
             "--speculative-num-steps": "--draft", "--max-draft-len": "--draft", "--mamba-ssm-cache-dtype": "--ssm-dtype",
             "--mamba-ssm-dtype": "--ssm-dtype", "--kv-cache-dtype": "--kv-dtype", "--mamba-cache-dtype": "--conv-dtype",
             "--gpu-memory-utilization": "--utilization", "--enable-prefix-caching": "--prefix-caching=on",
             "--no-enable-prefix-caching": "--prefix-caching=off",
             "--speculative-draft-kv-cache-dtype": "--draft-kv-dtype"},
}
ALIASES["explain"] = ALIASES["size"]  # explain's what-ifs are mcache size's options (cli/explain.py)


def also(command: str, *options: str) -> str:
    """` Also --a, --b.`: the aliases of `options` in `command`'s help, or nothing."""
    names = [alias for alias, primary in ALIASES.get(command, {}).items() if primary in options]
    return f" Also {', '.join(names)}." if names else ""


def unaliased(command: str | None, args: list[str]) -> list[str]:
    """`args` with each alias of `command` (as `--alias` or `--alias=value`) read as its option (an engine's flag,
    such as `--no-enable-prefix-caching`, as the option and its value: `--prefix-caching=off`)."""
    table = ALIASES.get(command or "", {})
    if not table:
        return args
    out = []
    for arg in args:
        name, sep, value = arg.partition("=")
        out.append(table[name] + sep + value if name in table else arg)
    return out


def flag(field: str) -> str:
    """The flag a user types for the option `field` (a `SizeOptions` field, a layout or runtime field, or a command's
    parameter): `max_seq_len` -> `--max-seq-len`."""
    return SPELLED.get(field, "--" + field.replace("_", "-"))
