"""The CLI's messages (issue 21): Ctrl-C, typos in spec names and flags, empty and incomplete specs, --version,
usage lines, tables on a narrow terminal, and the words of --help and the tables."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
from paths import HERE

from mcache import __version__
from mcache.cli.main import main

ROOT = HERE.parent


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# --- Ctrl-C ---------------------------------------------------------------------------------------------------

def test_ctrl_c_while_importing_is_one_line_and_exit_130():
    # The interrupt arrives while typer is imported (most of the first half second of a run).
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def interrupt(name, *a, **k):\n"
            "    if name == 'typer': raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = interrupt\n"
            "from mcache.cli.main import main\n"
            "sys.exit(main(['size', 'nemotron-h-8b']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 130
    assert done.stderr == "mcache: interrupted\n"


def test_ctrl_c_inside_a_command_is_one_line_and_exit_130(monkeypatch, capsys):
    import mcache.core.load as loader

    def interrupted(ref):
        raise KeyboardInterrupt

    monkeypatch.setattr(loader, "load_spec", interrupted)
    assert run(["size", "nemotron-h-8b"], capsys) == (130, "", "mcache: interrupted\n")


# --- spec names and flags -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("typed", "suggested"), [
    ("nemotron-h8b", "did you mean nemotron-h-8b, nemotron-h-56b or nemotron-3-nano-30b-a3b?"),
    ("qwen3-next", "did you mean qwen3-next-80b-a3b or qwen3.5-27b?"),
    ("zzz", "see `mcache spec list`"),
])
def test_a_spec_name_typo_suggests_the_closest_bundled_names(typed, suggested, capsys):
    code, _, err = run(["size", typed], capsys)
    assert code == 2
    assert err == f"mcache: {typed}: file: an existing file or a bundled spec name; {suggested}\n"


def test_a_spec_name_in_other_case_suggests_that_name_alone(capsys):
    assert run(["size", "nemotron-h-8B"], capsys) == (
        2, "", "mcache: nemotron-h-8B: file: an existing file or a bundled spec name; did you mean nemotron-h-8b?\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["size", "nemotron-h-8b", "--max-num-seq", "3"], "size: no such option --max-num-seq; did you mean --max-num-seqs?"),
    (["size", "nemotron-h-8b", "--tensor-parallel-size", "2"], "size: no such option --tensor-parallel-size; did you mean --tp?"),
    (["bench", "nemotron-h-8b", "--max-num-seqs", "3"], "bench: no such option --max-num-seqs; did you mean --max-batch?"),
    (["plan", "nemotron-h-8b", "--max-num-seqs", "3"], "plan: no such option --max-num-seqs; see --help"),
    (["size", "nemotron-h-8b", "--zzz"], "size: no such option --zzz; see --help"),
])
def test_an_unknown_flag_suggests_the_right_one(argv, message, capsys):
    assert run(argv, capsys) == (2, "", f"mcache: {message}\n")


# --- empty and incomplete specs ---------------------------------------------------------------------------------

def test_an_empty_yaml_says_empty_file(tmp_path, capsys):
    spec = tmp_path / "empty.yaml"
    spec.write_text("# nothing yet\n")
    assert run(["spec", "validate", str(spec)], capsys) == (
        2, "", f"mcache: {spec}: document: a mapping of spec fields, got an empty file\n")


def test_a_missing_parameter_block_is_reported_at_the_layers_line(tmp_path, capsys):
    spec = tmp_path / "no-mamba2.yaml"
    spec.write_text(textwrap.dedent("""\
        name: t
        source: test
        hidden_size: 64
        vocab_size: 100
        num_layers: 3
        layers:
          pattern: "*M-"
        attention: {num_heads: 2, num_kv_heads: 1, head_dim: 32}
        mlp: {intermediate_size: 128}
        """))
    assert run(["size", str(spec)], capsys) == (
        2, "", f"mcache: {spec}:7: layers.pattern[1]: a `mamba2:` parameter block, which the spec lacks (layer 1 is 'mamba2')\n")


# --- --version and usage lines ----------------------------------------------------------------------------------

def test_version(capsys):
    assert run(["--version"], capsys) == (0, f"mcache {__version__}\n", "")


@pytest.mark.parametrize(("command", "usage"), [
    (["size"], "mcache size [OPTIONS] {SPEC}"), (["plan"], "mcache plan [OPTIONS] {SPEC}"),
    (["bench"], "mcache bench [OPTIONS] {SPEC}"), (["import-hf"], "mcache import-hf [OPTIONS] {SPEC}"),
    (["compare"], "mcache compare [OPTIONS] {BASE} {NEW}"), (["export"], "mcache export [OPTIONS] {RESULTS}"),
    (["spec", "validate"], "mcache spec validate [OPTIONS] {SPEC...}"),
])
def test_usage_lines_name_arguments_in_one_style(command, usage, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run([*command, "--help"], capsys)
    assert code == 0 and f"Usage: {usage}" in out


# --- tables on a narrow terminal ----------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _numbers(report: dict) -> set[str]:
    """Every integer a table shows as it is (counts, tokens, sequences), from the JSON of the same run."""
    found = set()
    for rank in report["ranks"]:
        for c in rank["components"]:
            found |= {str(c["layers"]), str(c["units"])}
    for cap in report["capacity"]["ranks"]:
        found |= {str(cap["max_sequences"]), str(cap["max_context"])}
    return found


@pytest.mark.parametrize("columns", [100, 80])
@pytest.mark.parametrize("argv", [["qwen3-next-80b-a3b", "--gpu", "h100-80gb", "--tp", "2", "--pp", "2"],
                                  ["nemotron-h-8b", "--gpu", "h200", "--kv-dtype", "fp8"]])
def test_size_table_on_a_narrow_terminal_cuts_no_number(argv, columns, capsys, monkeypatch):
    from mcache.cli.output import human_bytes

    _, out, _ = run(["size", *argv, "--format", "json"], capsys)
    report = json.loads(out)
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run(["size", *argv], capsys)
    text = ANSI.sub("", out)
    assert code == 0 and "…" not in text
    tables = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= columns
    cells = {cell.strip() for line in tables for cell in re.split("[│┃]", line)}
    assert _numbers(report) <= cells
    totals = {human_bytes(c["total_bytes"]) for r in report["ranks"] for c in r["components"]}
    assert totals <= cells
    assert "(left out for width: " in text


def test_piped_tables_are_never_narrowed(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(["size", "nemotron-h-8b", "--gpu", "h200"], capsys)
    assert code == 0 and "left out for width" not in out and "┃ if slots resized ┃" in out


def test_plan_table_on_a_narrow_terminal_cuts_no_number(capsys, monkeypatch):
    _, out, _ = run(["plan", "nemotron-h-8b", "--format", "json"], capsys)
    seqs = {str(c["sequences"]) for c in json.loads(out)["candidates"][:20]}
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = run(["plan", "nemotron-h-8b"], capsys)
    tables = [line for line in ANSI.sub("", out).splitlines() if line[:1] in "┏┃┡│└"]
    assert code == 0 and max(len(line) for line in tables) <= 100 and "…" not in out
    assert seqs <= {cell.strip() for line in tables for cell in line.split("│")}


# --- words ---------------------------------------------------------------------------------------------------------

def test_params_are_billions_and_bytes_alone_are_b(capsys):
    _, out, _ = run(["size", "nemotron-h-8b", "--gpu", "h200"], capsys)
    assert out.startswith("Nemotron-H-8B-Base-8K (8.10 billion params, 15.09 GiB bfloat16)")
    assert " B params" not in out


def test_capacity_table_has_a_legend(capsys):
    _, out, _ = run(["size", "nemotron-h-8b", "--gpu", "h200"], capsys)
    lines = out.splitlines()
    assert lines[-3].startswith("fixed: bytes that are not KV") and "binds: " in lines[-3] and "if slots resized: " in lines[-3]
    assert lines[-2].startswith("mcache's neutral model fits 630 sequences") and lines[-1].startswith("engines (their defaults): ")


def test_max_batch_means_the_same_in_help_and_readme(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    readme = (ROOT / "README.md").read_text()
    for command in ("size", "bench"):
        _, out, _ = run([command, "--help"], capsys)
        assert "Requests per micro-batch" in out and "max batch x pp slots" in out
    assert "requests per micro-batch on each rank; fixes the rank's state pool at `max batch × pp` slots" in readme
    assert "requests per micro-batch, as in `mcache size` (the rank holds `max batch × pp` slots" in readme


def test_readme_states_exit_codes_once():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Errors and exit codes")[1].split("\n## ")[0]
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |"):
        assert code in section
    rest = readme.replace(section, "")
    assert not re.search(r"exit(s with)? code \d|\(exit \d+\)|exit \d on", rest)
