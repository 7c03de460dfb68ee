"""`mcache compare`: diff two results files; exit 1 only on a regression beyond the threshold."""

from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.options import OutputOption

CompareFormat = Literal["table", "markdown", "json"]


def compare(
    base: Annotated[Path, typer.Argument(metavar="BASE", help="The baseline results file.")],
    new: Annotated[Path, typer.Argument(metavar="NEW", help="The new results file.")],
    threshold: Annotated[str, typer.Option(help="Slow-down beyond which a change outside the noise is a regression, e.g. 5%.")] = "5%",
    fmt: Annotated[CompareFormat, typer.Option("--format", help="table, markdown (for PR comments) or json.")] = "table",
    output: OutputOption = None,
    force: Annotated[bool, typer.Option("--force", help="Compare runs from different GPUs or specs anyway.")] = False,
) -> int:
    """Per-row change between two `mcache bench` runs, with a noise-aware verdict."""
    from mcache.cli.check_output import emit_comparison
    from mcache.cli.output import refuse_input_as_output
    from mcache.results import schema as results
    from mcache.results.compare import compare as diff
    from mcache.results.compare import parse_threshold

    refuse_input_as_output(output, base, new)
    pct = parse_threshold(threshold)
    comparison = diff(results.load(base), results.load(new), str(base), str(new), pct, force)
    emit_comparison(comparison, fmt, output)
    return 1 if comparison.regressions else 0
