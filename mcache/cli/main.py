"""The `mcache` command: registers the command groups and is the one place that exits."""

from __future__ import annotations

import sys

import typer

from mcache.cli import bench, compare, export, import_hf, size, spec

app = typer.Typer(
    name="mcache",
    help="Size and benchmark the caches of hybrid LLMs (attention KV + recurrent state).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("size")(size.size)
app.command("import-hf")(import_hf.import_hf)
app.command("bench")(bench.bench)
app.command("compare")(compare.compare)
app.command("export")(export.export)
app.add_typer(spec.app, name="spec")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user errors become one line on stderr and exit code 2 (1 for failed checks)."""
    from mcache.cli.errors import run

    return run(app, argv)


if __name__ == "__main__":
    sys.exit(main())
