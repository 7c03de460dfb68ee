"""Turns known errors into one line on stderr and an exit code; nothing else in the CLI exits."""

from __future__ import annotations

import sys

import typer

from mcache.core.errors import McacheError


def run(app: typer.Typer, argv: list[str] | None) -> int:
    """Invoke `app`; `McacheError` and usage errors become one line on stderr and their exit code."""
    try:
        result = app(args=argv, standalone_mode=False, prog_name="mcache")
    except McacheError as err:
        return _fail(str(err), err.exit_code)
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        return _fail("aborted", 130)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except typer.TyperException as err:  # usage errors: bad option, missing argument
        if not err.format_message():  # help shown for a bare group (`mcache`, `mcache spec`)
            return 2
        ctx = getattr(err, "ctx", None)
        where = ctx.command_path.removeprefix("mcache").strip() if ctx else ""
        message = " ".join(err.format_message().split())  # click lists choices on lines of their own
        return _fail(f"{where}: {message}" if where else message, 2)
    return result if isinstance(result, int) else 0


def _fail(message: str, code: int) -> int:
    print(f"mcache: {message}", file=sys.stderr)
    return code
