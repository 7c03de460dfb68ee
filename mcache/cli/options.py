"""Options that several commands share, declared once as `Annotated` aliases, and the flag a user types for each
option field the core names."""

from pathlib import Path
from typing import Annotated, Literal

import typer

Format = Literal["table", "json", "markdown", "csv"]
FormatOption = Annotated[Format, typer.Option("--format", help="Output format.")]
OutputOption = Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file (atomically).")]
TpOption = Annotated[int, typer.Option(help="Tensor-parallel size.")]
PpOption = Annotated[int, typer.Option(help="Pipeline-parallel stages.")]

# Fields the core names whose flag is not the field with dashes: the layout's pair, and the runtime's own names.
SPELLED = {"tp/pp": "--tp/--pp", "tokens_per_block": "--block-size", "draft_tokens": "--draft"}


def flag(field: str) -> str:
    """The flag a user types for the option `field` (a `SizeOptions` field, a layout or runtime field, or a command's
    parameter): `max_seq_len` -> `--max-seq-len`."""
    return SPELLED.get(field, "--" + field.replace("_", "-"))
