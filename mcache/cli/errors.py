"""Turns known errors into one line on stderr and an exit code; nothing else in the CLI exits."""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer

from mcache.core.errors import McacheError

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process ended by Ctrl-C


def run(build: Callable[[], typer.Typer], argv: list[str] | None) -> int:
    """Build the app and invoke it; `McacheError`, usage errors and Ctrl-C become one line on stderr and their
    exit code."""
    try:
        result = build()(args=argv, standalone_mode=False, prog_name="mcache")
    except McacheError as err:
        return _fail(str(err), err.exit_code)
    except typer.Exit as done:
        return done.exit_code
    except (typer.Abort, KeyboardInterrupt):
        return _fail("interrupted", INTERRUPTED)
    except typer.TyperException as err:  # usage errors: bad option, missing argument
        if not err.format_message():  # help shown for a bare group (`mcache`, `mcache spec`)
            return 2
        ctx = getattr(err, "ctx", None)
        where = ctx.command_path.removeprefix("mcache").strip() if ctx else ""
        message = _no_such_option(err, ctx) if hasattr(err, "possibilities") else " ".join(err.format_message().split())
        return _fail(f"{where}: {message}" if where else message, 2)  # click lists choices on lines of their own
    if result == INTERRUPTED:  # typer returns a Ctrl-C inside a command as exit code 130, silently
        return _fail("interrupted", INTERRUPTED)
    return result if isinstance(result, int) else 0


def _no_such_option(err, ctx) -> str:
    """`no such option --max-num-seqs; did you mean --max-batch?`: the command's option that means what an engine's
    flag means, else the closest spelling."""
    import difflib

    from mcache.cli.options import flag
    from mcache.core.engines.options import mcache_option_for

    typed = err.option_name
    known = [name for param in (ctx.command.params if ctx else []) for name in param.opts if name.startswith("--")]
    # the engines spell their options with dashes: one typed with underscores is taken for one only when it is a
    # neutral option's setting
    field = mcache_option_for(typed.removeprefix("--").replace("-", "_"), aliases="_" not in typed)
    same = flag(field) if field else None
    # An engine's flag gets the mcache option that means the same, or nothing: a close spelling would mislead.
    close = difflib.get_close_matches(typed, known, n=1) if same is None else [same] if same in known else []
    return f"no such option {typed}; " + (f"did you mean {close[0]}?" if close else "see --help")


def _fail(message: str, code: int) -> int:
    from mcache.cli.output import safe_text

    print(f"mcache: {safe_text(message, one_line=True)}", file=sys.stderr)
    return code
