"""Options that several commands share, declared once as `Annotated` aliases."""

from pathlib import Path
from typing import Annotated, Literal

import typer

Format = Literal["table", "json", "markdown", "csv"]
FormatOption = Annotated[Format, typer.Option("--format", help="Output format.")]
OutputOption = Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file (atomically).")]
