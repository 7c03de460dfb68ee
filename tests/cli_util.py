"""What the CLI tests share: running a command that must fail in one line."""

from __future__ import annotations

from mcache.cli.main import main


def one_line(args: list[str], capsys, code: int = 2) -> str:
    """Run the CLI; assert exit `code`, no traceback and one line on stderr; return that line."""
    assert main(args) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.strip()
