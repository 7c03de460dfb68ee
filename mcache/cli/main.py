"""The `mcache` command: the table of commands, and the one place that exits.

Command modules are imported only for the command being run (`mcache size` never loads the bench,
compare or import code); `--help` at the top level, or an unknown command, builds the whole app.
This module imports nothing heavy at the top, so a Ctrl-C while the CLI loads is caught by `main` too.
"""

import sys
from importlib import import_module

# name -> (module, attribute): a command function, or a typer group for `spec`.
COMMANDS = {
    "size": ("mcache.cli.size", "size"),
    "plan": ("mcache.cli.plan", "plan"),
    "explain": ("mcache.cli.explain", "explain"),
    "import-hf": ("mcache.cli.import_hf", "import_hf"),
    "spec": ("mcache.cli.spec", "app"),
    "bench": ("mcache.cli.bench", "bench"),
    "compare": ("mcache.cli.compare", "compare"),
    "export": ("mcache.cli.export", "export"),
}
INTERRUPTED = 130  # the shell's code for a process ended by SIGINT (128 + 2)


def build_app(only: str | None = None) -> "typer.Typer":  # noqa: F821 (typer is imported here, not at the top)
    """The CLI with every command, or with just `only` (same behaviour for that command, faster start)."""
    from typing import Annotated

    import typer

    app = typer.Typer(
        name="mcache",
        help="Size and benchmark the caches of hybrid LLMs (attention KV + recurrent state).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    def show_version(value: bool) -> None:
        if value:
            from mcache import __version__
            from mcache.cli.output import emit_text

            emit_text(f"mcache {__version__}")
            raise typer.Exit(0)

    @app.callback()
    def _root(
        version: Annotated[bool, typer.Option("--version", is_eager=True, callback=show_version,
                                              help="Print mcache's version and exit.")] = False,
    ) -> None:
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
    """Run the CLI; user errors become one line on stderr and exit code 2 (1 for failed checks, 3 for does not
    fit, 130 for Ctrl-C, including one that comes while the CLI is still importing)."""
    try:
        from mcache.cli.errors import run
        from mcache.cli.options import unaliased

        args = sys.argv[1:] if argv is None else argv
        only = args[0] if args and args[0] in COMMANDS else None
        return run(lambda: build_app(only), [*args[:1], *unaliased(only, args[1:])])
    except KeyboardInterrupt:
        print("mcache: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
