"""The `mcache` command: the table of commands, and the one place that exits.

Command modules are imported only for the command being run (`mcache size` never loads the bench,
compare or import code); `--help` at the top level, or an unknown command, builds the whole app.
"""

from __future__ import annotations

import sys
from importlib import import_module

import typer

# name -> (module, attribute): a command function, or a typer group for `spec`.
COMMANDS = {
    "size": ("mcache.cli.size", "size"),
    "plan": ("mcache.cli.plan", "plan"),
    "import-hf": ("mcache.cli.import_hf", "import_hf"),
    "spec": ("mcache.cli.spec", "app"),
    "bench": ("mcache.cli.bench", "bench"),
    "compare": ("mcache.cli.compare", "compare"),
    "export": ("mcache.cli.export", "export"),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with just `only` (same behaviour for that command, faster start)."""
    app = typer.Typer(
        name="mcache",
        help="Size and benchmark the caches of hybrid LLMs (attention KV + recurrent state).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """Size and benchmark the caches of hybrid LLMs (attention KV + recurrent state)."""

    for name in [only] if only else COMMANDS:
        module, attr = COMMANDS[name]
        target = getattr(import_module(module), attr)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)
    return app


def __getattr__(name: str):
    if name == "app":  # the whole CLI, for typer's test runner
        return build_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user errors become one line on stderr and exit code 2 (1 for failed checks)."""
    from mcache.cli.errors import run

    args = sys.argv[1:] if argv is None else argv
    only = args[0] if args and args[0] in COMMANDS else None
    return run(build_app(only), args)


if __name__ == "__main__":
    sys.exit(main())
