"""What the CLI tests share: running a command that must fail in one line, and `mcache plan` and `mcache size` as
JSON."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mcache.cli.main import app, main
from mcache.core.errors import DoesNotFit

runner = CliRunner()


def one_line(args: list[str], capsys, code: int = 2) -> str:
    """Run the CLI; assert exit `code`, no traceback and one line on stderr; return that line."""
    assert main(args) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.strip()


def plan_json(*args: str) -> dict:
    """`mcache plan ARGS --format json`, which must succeed and be strict JSON."""
    result = runner.invoke(app, ["plan", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def size_json(args: list[str]) -> dict:
    """`mcache size ARGS --format json`: its document, of a deployment that fits or not (`DoesNotFit`: exit 3)."""
    result = runner.invoke(app, ["size", *args, "--format", "json"])
    assert result.exit_code == 0 or isinstance(result.exception, DoesNotFit), result.output
    return json.loads(result.stdout)
