"""`mcache spec list|validate|schema`."""

from typing import Annotated

import typer

app = typer.Typer(help="List, validate and describe model specs.", no_args_is_help=True)


@app.command("list")
def list_specs() -> None:
    """The bundled specs: name, model and where its numbers came from."""
    from mcache.cli.output import emit_text
    from mcache.core.load import bundled_names, load_spec

    rows = []
    for name in bundled_names():
        spec = load_spec(name)
        rows.append(f"{name:<28} {spec.name:<32} {spec.source}")
    emit_text("\n".join(rows))


@app.command("validate")
def validate(files: Annotated[list[str], typer.Argument(metavar="SPEC...", help="Spec files (or bundled names) to check.")]) -> None:
    """Load each spec and size it as `mcache size SPEC` does with its defaults (so every shape expression is
    evaluated); stop at the first error with one line naming file, field and line."""
    from mcache.cli.args import located
    from mcache.cli.output import emit_text
    from mcache.core.deployment import Deployment
    from mcache.core.errors import LayoutError
    from mcache.core.load import load_spec, resolve
    from mcache.core.report import size_report
    from mcache.core.sizing.layout import ParallelLayout

    for ref in files:
        spec = load_spec(ref)
        origin = str(resolve(ref))
        try:  # the path `mcache size` takes, with no GPU: a spec accepted here is one `size` accepts
            size_report(spec, Deployment(ParallelLayout()), origin)
        except LayoutError as err:
            raise located(err, origin) from None
        emit_text(f"ok {ref}: {spec.name}, {spec.num_layers} layers")


@app.command("schema")
def schema() -> None:
    """JSON Schema of the spec format, for editors."""
    from mcache.cli.output import emit_json
    from mcache.core.spec.model import json_schema

    emit_json(json_schema(), None)
