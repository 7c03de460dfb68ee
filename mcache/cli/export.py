"""`mcache export`: a results file in the formats CI dashboards read."""

from pathlib import Path
from typing import Annotated, Literal

import typer

from mcache.cli.options import OutputOption

Target = Literal["github-action-benchmark", "bencher"]
Metric = Literal["time", "bandwidth"]


def export(
    results_file: Annotated[Path, typer.Argument(metavar="RESULTS", help="A results file of `mcache bench`.")],
    to: Annotated[Target, typer.Option("--to", help="github-action-benchmark (custom format) or bencher (BMF).")],
    metric: Annotated[Metric, typer.Option(help="github-action-benchmark: time (lower is better) or bandwidth.")] = "time",
    output: OutputOption = None,
) -> None:
    """Export a run for github-action-benchmark or Bencher."""
    from mcache.cli.output import emit_json, refuse_input_as_output
    from mcache.results import export as exporters
    from mcache.results.schema import load

    refuse_input_as_output(output, results_file)
    run = load(results_file)
    if to == "bencher":
        emit_json(exporters.to_bencher(run), output)
    else:
        emit_json(exporters.to_github_action_benchmark(run, metric), output)
