"""Hostile input to `compare` and `export` (issue 21): each reproducer gets one line and exit 2, or a corrected output."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from pathlib import Path

import pytest
from test_results_compare_export import BASE, NEW, SERIES, make_run, row

from mcache.cli.main import main
from mcache.core.errors import McacheError
from mcache.core.files import json_text
from mcache.results import schema as results


def _file(tmp_path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _run_data(rows=BASE) -> dict:
    return json.loads(results.dump(make_run(rows)))


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    return captured.err.removeprefix("mcache: ").strip()


@pytest.mark.parametrize("command", ["compare", "export"])
def test_a_file_nested_1000_levels_is_one_line(tmp_path, capsys, command):
    deep = _file(tmp_path, "deep.json", '{"schema_version": 1, "meta": ' + "[" * 1000 + "]" * 1000 + "}")
    args = ["compare", deep, deep] if command == "compare" else ["export", deep, "--to", "bencher"]
    assert main(args) == 2
    assert _one_line(capsys) == f"{deep}: json: a results file (3 levels deep), not JSON nested too deep to read"


@pytest.mark.parametrize("threshold", ["nan%", "NaN", "inf", "1e400", "-inf%", "-5%", "fast"])
def test_thresholds_that_are_not_finite_percentages_are_refused(tmp_path, capsys, threshold):
    base = _file(tmp_path, "base.json", _run_data())
    assert main(["compare", base, base, "--threshold", threshold, "--format", "json"]) == 2
    assert _one_line(capsys) == f"compare: --threshold: a percentage of 0% or more, such as 5%, got {threshold!r}"


def test_the_json_encoder_refuses_nan_and_infinity_naming_where():
    with pytest.raises(McacheError, match=r"^output: \$.changes\[1\].delta_pct is inf, which JSON cannot hold"):
        json_text({"changes": [{"delta_pct": 1.0}, {"delta_pct": float("inf")}]})
    assert json_text({"a": [1.5, None]}, indent=None) == '{"a": [1.5, null]}'


def test_every_json_writer_goes_through_the_strict_encoder():
    root = Path(__file__).parent.parent / "mcache"
    writers = [str(p.relative_to(root)) for p in root.rglob("*.py")
               if re.search(r"json\.dumps?\(|msgspec\.json\.encode", p.read_text())]
    assert writers == ["core/files.py"]  # the home of `json_text`, the one encoder


def test_a_median_of_1e306_is_refused_before_bencher_multiplies_it_to_infinity(tmp_path, capsys):
    data = _run_data()
    data["rows"][0].update(median_us=1e306, p90_us=1e306)
    path = _file(tmp_path, "huge.json", data)
    assert main(["export", path, "--to", "bencher"]) == 2
    assert _one_line(capsys) == (f"{path}: rows[0] (reset/mamba2/triton/b1): median_us: Expected `float` < "
                                 "1000000000000.0, got 1e+306")


def _mutated(index: int, **fields):
    def mutate(data):
        data["rows"][index].update(fields)
    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_mutated(1, median_us=-20.0), "rows[1] (commit/mamba2/triton/b1): median_us: Expected `float` >= 0.001, got -20.0"),
        (_mutated(1, p10_us=0.0), "rows[1] (commit/mamba2/triton/b1): p10_us: Expected `float` >= 0.001, got 0.0"),
        # a time under a nanosecond (compare's change against it was 300 digits, or infinite), bytes past an exbibyte
        (_mutated(1, p10_us=1e-300), "rows[1] (commit/mamba2/triton/b1): p10_us: Expected `float` >= 0.001, got 1e-300"),
        (_mutated(2, bytes=10**30), "rows[2] (copy/mamba2/triton/b1): bytes: Expected `int` <= 1152921504606846976, got " + str(10**30)),
        (_mutated(0, p10_us=110.0, p90_us=90.0),
         "rows[0] (reset/mamba2/triton/b1): p10_us, median_us, p90_us: in that order (p10 <= median <= p90), "
         "got 110.0, 100.0, 90.0"),
        (_mutated(2, bytes=-1), "rows[2] (copy/mamba2/triton/b1): bytes: Expected `int` >= 0, got -1"),
        (_mutated(2, batch=-8), "rows[2] (copy/mamba2/triton/b-8): batch: Expected `int` >= 1, got -8"),
        (_mutated(3, status="banana"), "rows[3] (pack/mamba2/triton/b1): status: one of ok, skipped, got 'banana'"),
        (_mutated(3, median_us=None, p10_us=None, p90_us=None),
         "rows[3] (pack/mamba2/triton/b1): median_us: a time on a row with status ok (only skipped rows have none)"),
        (lambda d: d["rows"].append(dict(d["rows"][1])),
         "rows[6] (commit/mamba2/triton/b1): each row once, but rows[1] has the same key (op/kind/layer/impl/batch)"),
        (lambda d: d["meta"]["ceiling"].update(gbps=-1.0), "meta.ceiling.gbps: Expected `float` > 0.0, got -1.0"),
        (_mutated(4, colour="red"), "rows[4] (gone/mamba2/triton/b1): Object contains unknown field `colour`"),
    ],
    ids=["negative-time", "zero-time", "sub-nanosecond-time", "huge-bytes", "p10-above-p90", "negative-bytes",
         "negative-batch", "banana-status", "ok-without-time", "duplicate-row", "negative-ceiling", "unknown-field"],
)
def test_impossible_rows_are_refused_naming_file_row_and_field(tmp_path, capsys, mutate, expected):
    data = _run_data()
    mutate(data)
    bad = _file(tmp_path, "bad.json", data)
    good = _file(tmp_path, "good.json", _run_data())
    assert main(["compare", good, bad]) == 2
    assert _one_line(capsys) == f"{bad}: {expected}"


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_non_finite_numbers_in_a_file_are_refused(tmp_path, capsys, number):
    text = re.sub(r'"median_us": [0-9.]+', f'"median_us": {number}', results.dump(make_run(BASE)), count=1)
    path = _file(tmp_path, "inf.json", text)
    assert main(["export", path, "--to", "bencher"]) == 2
    assert _one_line(capsys).startswith(f"{path}: json: valid JSON (")


def test_bench_times_a_repeated_batch_or_op_once(tmp_path):
    from paths import TINY_SPEC

    out = tmp_path / "run.json"
    assert main(["bench", TINY_SPEC, "--device", "cpu", "--batch", "1,1", "--ops", "reset,reset", "--reps", "2",
                 "-o", str(out)]) == 0
    rows = results.load(out).rows
    assert len(rows) == len({r.key for r in rows}) > 0


def _meta_changed(tmp_path, name: str, **meta) -> str:
    data = _run_data(NEW)
    data["meta"].update(meta)
    return _file(tmp_path, name, data)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [({"timer": "cuda-events"}, "timer (cuda-graph vs cuda-events)"), ({"cuda_graphs": False}, "cuda_graphs (True vs False)"),
     ({"layout": {"tp": 2, "pp": 1, "stage": 0}}, "layout.tp (1 vs 2)")],
    ids=["timer", "cuda-graphs", "layout"],
)
def test_runs_timed_differently_are_refused_naming_field_and_values_unless_forced(tmp_path, capsys, meta, expected):
    base = _file(tmp_path, "base.json", _run_data())
    new = _meta_changed(tmp_path, "new.json", **meta)
    assert main(["compare", base, new]) == 2
    assert _one_line(capsys) == f"compare: runs with different {expected}; pass --force to compare anyway"
    assert main(["compare", base, new, "--force"]) == 1
    assert f"note: compared despite different {expected} (--force)" in capsys.readouterr().out


def test_other_versions_and_an_interrupted_run_are_compared_with_a_note(tmp_path, capsys):
    base = _file(tmp_path, "base.json", _run_data())
    new = _meta_changed(tmp_path, "new.json", versions={"torch": "2.12"}, mcache_version="0.2.0", interrupted=True)
    assert main(["compare", base, new, "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "note: versions differ: mcache_version (0.1.0 vs 0.2.0), versions.torch (2.11 vs 2.12)" in out
    assert f"note: {new} is an interrupted run: rows it did not reach are missing" in out
    assert main(["compare", base, new, "--format", "json"]) == 1
    assert len(json.loads(capsys.readouterr().out)["notes"]) == 2
    assert main(["compare", base, base]) == 0
    assert "note:" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["size", "plan"])
def test_a_size_or_plan_report_is_named_for_what_it_is(tmp_path, capsys, command):
    report = tmp_path / f"{command}.json"
    assert main([command, "nemotron-h-8b", "--gpu", "h200", "--format", "json", "-o", str(report)]) == 0
    capsys.readouterr()
    good = _file(tmp_path, "good.json", _run_data())
    expected = f"{report}: this is an `mcache {command}` report, not a `mcache bench` results file"
    assert main(["compare", good, str(report)]) == 2
    assert _one_line(capsys) == expected
    assert main(["export", str(report), "--to", "bencher"]) == 2
    assert _one_line(capsys) == expected


def test_export_without_to_is_one_line(tmp_path, capsys):
    assert main(["export", _file(tmp_path, "run.json", _run_data())]) == 2
    assert _one_line(capsys) == "export: Missing option '--to'. Choose from: github-action-benchmark, bencher"


def _export_to(tmp_path, output) -> int:
    src = _file(tmp_path, "run.json", _run_data([row("reset", 100, 98, 102)]))
    return main(["export", src, "--to", "bencher", "-o", str(output)])


def test_output_to_a_fifo_writes_through_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    read = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_text()))
    reader.start()
    assert _export_to(tmp_path, fifo) == 0
    reader.join(timeout=10)
    assert f"{SERIES}/reset/mamba2/triton/b1" in json.loads(read[0])
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_output_to_dev_null_leaves_the_device(tmp_path):
    assert _export_to(tmp_path, "/dev/null") == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_to_dev_stdout_in_a_pipe_writes_to_the_pipe(tmp_path):
    import subprocess
    import sys

    src = _file(tmp_path, "run.json", _run_data([row("reset", 100, 98, 102)]))
    args = ["export", src, "--to", "bencher", "-o", "/dev/stdout"]
    done = subprocess.run([sys.executable, "-m", "mcache.cli.main", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "latency" in json.loads(done.stdout)[f"{SERIES}/reset/mamba2/triton/b1"]


def test_output_through_a_symlink_replaces_the_file_it_names(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert _export_to(tmp_path, link) == 0
    assert link.is_symlink() and "latency" in target.read_text()


def test_output_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    private = tmp_path / "private.json"
    private.write_text("old")
    private.chmod(0o600)
    assert _export_to(tmp_path, private) == 0
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and "latency" in private.read_text()


def test_output_to_a_directory_or_a_missing_folder_is_one_line(tmp_path, capsys):
    assert _export_to(tmp_path, tmp_path) == 2
    assert _one_line(capsys) == f"{tmp_path}: is a directory; name a file to write"
    missing = tmp_path / "nope" / "out.json"
    assert _export_to(tmp_path, missing) == 2
    assert _one_line(capsys) == f"{missing}: cannot write: the folder {missing.parent} does not exist"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_a_note_with_a_line_break_stays_one_line(tmp_path, capsys):
    # a spec name carrying "\n| inj |" would start a row of its own in a PR comment's Markdown
    new = _run_data()
    new["meta"]["spec_name"] = "nem\n| inj |"
    args = ["compare", _file(tmp_path, "base.json", _run_data()), _file(tmp_path, "new.json", new), "--force"]
    for fmt in ("markdown", "table"):
        main([*args, "--format", fmt])
        out = capsys.readouterr().out
        assert "nem\\x0a| inj |" in out and not any(line.startswith("| inj |") for line in out.splitlines())
