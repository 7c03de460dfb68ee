"""Results files (schema, atomic save, bad files), `mcache compare` verdicts and exit codes, exporters."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from mcache.cli.main import main
from mcache.core.errors import McacheError, SpecError
from mcache.results import schema as results
from mcache.results.compare import compare
from mcache.results.export import to_bencher, to_github_action_benchmark
from mcache.results.schema import GPU, Ceiling, Meta, Results, Row

RUNTIME = {"max_batch": 64, "state_dtype": "bfloat16", "history": 16, "spec_scheme": "intermediate"}
SERIES = "nemotron-h-8b/state_dtype=bfloat16,history=16,spec_scheme=intermediate"  # an exported benchmark's name, less its key


def make_run(rows: list[Row], gpu: str = "NVIDIA H200", sha: str = "a" * 64) -> Results:
    meta = Meta(
        mcache_version="0.1.0", git_commit="abc", created_at="2026-11-29T00:00:00Z", device="cuda", comparable=True,
        gpu=GPU(name=gpu, uuid="GPU-1", memory_bytes=143771 << 20), versions={"torch": "2.11"},
        spec_name="nemotron-h-8b", spec_file="model_specs/nemotron-h-8b.yaml", spec_sha256=sha,
        layout={"tp": 1, "pp": 1, "stage": 0}, runtime=dict(RUNTIME), timer="cuda-graph", cuda_graphs=True,
        ceiling=Ceiling(bytes=4 << 30, median_us=2000.0, gbps=4294.0), memory=None,
    )
    return Results(schema_version=results.SCHEMA_VERSION, meta=meta, rows=rows)


def row(op: str, median: float, p10: float, p90: float, batch: int = 1, status: str = "ok") -> Row:
    if status != "ok":
        return Row(op=op, impl="triton", kind="mamba2", batch=batch, status=status, reason="out of memory")
    return Row(op=op, impl="triton", kind="mamba2", batch=batch, median_us=median, p10_us=p10, p90_us=p90,
               bytes=100_000_000, gbps=100_000_000 / median / 1000, pct_ceiling=90.0)


BASE = [row("reset", 100, 98, 102), row("commit", 200, 196, 204), row("copy", 50, 49, 51), row("pack", 80, 79, 81),
        row("gone", 10, 9, 11), row("oom", 0, 0, 0, status="skipped")]
NEW = [row("reset", 101, 99, 103),  # inside both spreads: same
       row("commit", 230, 228, 232),  # +15%, outside spread: regression
       row("copy", 45, 44.5, 45.5),  # -10%: improvement
       row("pack", 82, 81.5, 82.5),  # +2.5%, outside spread, within 5%: slower
       row("new", 10, 9, 11), row("oom", 0, 0, 0, status="skipped")]


def collected(spec_path) -> Meta:
    return Meta.collect("tiny", spec_path, device="cpu", comparable=False, gpu=None, versions={}, git_commit=None,
                        layout={}, runtime={}, timer="wall clock (CPU)", cuda_graphs=False, ceiling=None, memory=None)


def test_collected_meta_names_the_spec_without_the_machines_folders(tmp_path, monkeypatch):
    spec = tmp_path / "specs" / "tiny.yaml"
    spec.parent.mkdir()
    spec.write_text("name: tiny\n")
    monkeypatch.chdir(tmp_path)
    meta = collected(spec.resolve())
    assert meta.spec_file == "specs/tiny.yaml"  # inside the working directory: relative to it
    assert meta.spec_sha256 == hashlib.sha256(b"name: tiny\n").hexdigest() and meta.mcache_version
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert collected(spec).spec_file == "tiny.yaml"  # outside it: the file name alone


def test_collected_meta_hashes_a_hugging_face_folders_config(tmp_path, monkeypatch):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    meta = collected(tmp_path / "model")
    assert meta.spec_file == "model" and meta.spec_sha256 == hashlib.sha256(b"{}").hexdigest()


def test_files_with_an_absolute_spec_path_still_load_and_compare(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    results.save(make_run(BASE), new)
    data = json.loads(new.read_text())
    data["meta"]["spec_file"] = "/work/main/model_specs/nemotron-h-8b.yaml"  # as runs before issue 27 wrote it
    old.write_text(json.dumps(data))
    assert results.load(old).meta.spec_file == "/work/main/model_specs/nemotron-h-8b.yaml"
    same = compare(results.load(old), results.load(new), "old", "new")  # the spec is told by its name and hash
    assert not same.notes and not same.regressions and {c.verdict for c in same.changes} <= {"same", "skipped"}


def test_round_trip_and_atomic_save(tmp_path):
    path = tmp_path / "run.json"
    run = make_run(BASE)
    results.save(run, path)
    assert results.load(path) == run
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    data = json.loads(path.read_text())
    assert data["schema_version"] == results.SCHEMA_VERSION == 3 and isinstance(data["rows"][0]["bytes"], int)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(schema_version=99), "schema_version"),
        (lambda d: d.pop("schema_version"), "schema_version"),
        (lambda d: d["rows"][0].update(median_us="fast"), "rows[0] (reset/mamba2/triton/b1): median_us"),
        (lambda d: d["rows"][0].update(colour="red"), "rows[0]"),
        (lambda d: d["meta"].pop("spec_sha256"), "meta"),
    ],
    ids=["wrong-version", "no-version", "wrong-type", "unknown-field", "missing-field"],
)
def test_bad_results_files_are_one_clear_error(tmp_path, mutate, field):
    data = json.loads(results.dump(make_run(BASE)))
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError) as info:
        results.load(path)
    assert str(info.value).startswith(f"{path}: {field}")


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="json: valid JSON"):
        results.load(bad)
    with pytest.raises(SpecError, match="file: a readable results file"):
        results.load(tmp_path / "missing.json")


def test_verdicts():
    comp = compare(make_run(BASE), make_run(NEW), "base", "new", threshold_pct=5)
    verdicts = {c.op: c.verdict for c in comp.changes}
    assert verdicts == {"reset": "same", "commit": "regression", "copy": "improvement", "pack": "slower",
                        "gone": "gone", "oom": "skipped", "new": "new"}
    commit = next(c for c in comp.changes if c.op == "commit")
    assert commit.delta_pct == pytest.approx(15.0)
    assert [c.op for c in comp.regressions] == ["commit"]


def test_threshold_decides_between_slower_and_regression():
    comp = compare(make_run(BASE), make_run(NEW), "base", "new", threshold_pct=20)
    assert {c.op: c.verdict for c in comp.changes}["commit"] == "slower"


def test_a_threshold_of_minus_zero_is_zero():
    from mcache.results.compare import parse_threshold

    assert str(parse_threshold("-0%")) == "0.0" and parse_threshold("5%") == 5.0


def test_refuses_other_gpu_or_spec_unless_forced():
    with pytest.raises(McacheError, match=r"different device \(NVIDIA H200 vs NVIDIA H100 80GB HBM3\)"):
        compare(make_run(BASE), make_run(NEW, gpu="NVIDIA H100 80GB HBM3"), "a", "b")
    with pytest.raises(McacheError, match=r"different spec \(nemotron-h-8b aaaaaaaaaaaa vs nemotron-h-8b bbbbbbbbbbbb\)"):
        compare(make_run(BASE), make_run(NEW, sha="b" * 64), "a", "b")
    assert compare(make_run(BASE), make_run(NEW, sha="b" * 64), "a", "b", force=True).regressions


def _write(tmp_path, name, run):
    path = tmp_path / name
    results.save(run, path)
    return str(path)


def test_compare_cli_exit_codes_and_markdown(tmp_path, capsys):
    base = _write(tmp_path, "base.json", make_run(BASE))
    new = _write(tmp_path, "new.json", make_run(NEW))
    assert main(["compare", base, base]) == 0
    capsys.readouterr()
    assert main(["compare", base, new, "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "| benchmark | base (us) | new (us) | Δ% | Δ eager | Δ host | verdict |" in out
    assert "+15.0%" in out and "regression" in out
    assert main(["compare", base, new, "--threshold", "20%", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["regressions"] == 0
    other = _write(tmp_path, "other.json", make_run(NEW, gpu="NVIDIA A100-SXM4-80GB"))
    assert main(["compare", base, other]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main(["compare", base, other, "--force", "--format", "markdown"]) == 1


def test_compare_cli_rejects_a_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 7}))
    good = _write(tmp_path, "good.json", make_run(BASE))
    assert main(["compare", good, str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: schema_version: 1, 2 or 3 (the versions" in err and err.count("\n") == 1


def test_github_action_benchmark_export():
    run = make_run(BASE)
    times = to_github_action_benchmark(run, "time")
    assert len(times) == 5  # skipped rows are left out
    first = times[0]
    assert first == {"name": f"{SERIES}/reset/mamba2/triton/b1", "unit": "us", "value": 100,
                     "range": "±2.00", "extra": "100000000 bytes; 90.0% of copy ceiling"}
    bandwidth = to_github_action_benchmark(run, "bandwidth")
    assert bandwidth[0]["unit"] == "GB/s" and bandwidth[0]["value"] == pytest.approx(1000.0)
    assert all("range" not in b for b in bandwidth)


def test_bencher_export():
    bmf = to_bencher(make_run(BASE))
    entry = bmf[f"{SERIES}/commit/mamba2/triton/b1"]
    assert entry["latency"] == {"value": 200_000, "lower_value": 196_000, "upper_value": 204_000}
    assert entry["bandwidth"]["value"] == pytest.approx(500.0)
    assert f"{SERIES}/oom/mamba2/triton/b1" not in bmf


def test_export_cli_writes_files(tmp_path, capsys):
    src = _write(tmp_path, "run.json", make_run(BASE))
    out = tmp_path / "gab.json"
    assert main(["export", src, "--to", "github-action-benchmark", "--metric", "bandwidth", "-o", str(out)]) == 0
    assert json.loads(out.read_text())[0]["unit"] == "GB/s"
    assert main(["export", src, "--to", "bencher"]) == 0
    assert "latency" in capsys.readouterr().out
    assert main(["export", src, "--to", "nowhere"]) == 2


def test_saved_files_get_the_usual_mode(tmp_path):
    import os
    import stat

    path = tmp_path / "run.json"
    old = os.umask(0o022)
    try:
        results.save(make_run(BASE), path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_refuses_runs_with_other_settings_unless_forced():
    other = make_run(NEW)
    other.meta.runtime["max_batch"] = 128
    with pytest.raises(McacheError, match=r"different runtime.max_batch \(64 vs 128\)"):
        compare(make_run(BASE), other, "a", "b")
    assert compare(make_run(BASE), other, "a", "b", force=True).regressions


def test_a_zero_base_time_is_not_divided_by():
    base = [row("reset", 100, 98, 102)]
    base[0].median_us = 0.0
    comp = compare(make_run(base), make_run(NEW), "a", "b")
    assert {c.op: c.verdict for c in comp.changes}["reset"] == "skipped"


def test_export_without_a_ceiling():
    run = make_run([row("reset", 100, 98, 102)])
    run.rows[0].pct_ceiling = None
    assert to_github_action_benchmark(run, "time")[0]["extra"] == "100000000 bytes"


@pytest.mark.parametrize(("field", "value", "what"),
                         [("state_dtype", "float32", "state dtype (bfloat16 vs float32)"), ("history", 8, "ring length (16 vs 8)"),
                          ("spec_scheme", "replay", "scheme (intermediate vs replay)")], ids=["state-dtype", "ring", "scheme"])
def test_another_experiment_is_refused_naming_what_differs_unless_forced(tmp_path, capsys, field, value, what):
    base = _write(tmp_path, "base.json", make_run(BASE))
    other = make_run(NEW)
    other.meta.runtime[field] = value
    new = _write(tmp_path, "new.json", other)
    assert main(["compare", base, new]) == 2
    assert capsys.readouterr().err == f"mcache: compare: runs with different {what}; pass --force to compare anyway\n"
    assert main(["compare", base, new, "--force"]) == 1
    assert f"note: compared despite different {what} (--force)" in capsys.readouterr().out


def test_a_run_that_does_not_record_its_state_dtype_cannot_be_told_apart(tmp_path, capsys):
    old = make_run(BASE)
    del old.meta.runtime["state_dtype"]
    base, new = _write(tmp_path, "old.json", old), _write(tmp_path, "new.json", make_run(NEW))
    assert main(["compare", base, new]) == 2
    assert capsys.readouterr().err == (f"mcache: compare: runs with different state dtype ({base} records none: cannot tell); "
                                       "pass --force to compare anyway\n")
    assert main(["compare", base, new, "--force"]) == 1
    assert "state dtype (" in capsys.readouterr().out


def test_export_names_the_experiment_in_each_series():
    fp32 = make_run(BASE)
    fp32.meta.runtime["state_dtype"] = "float32"
    del fp32.meta.runtime["history"]
    names = {e["name"] for e in to_github_action_benchmark(fp32, "time")}
    assert "nemotron-h-8b/state_dtype=float32,history=unknown,spec_scheme=intermediate/reset/mamba2/triton/b1" in names
    assert not names & {e["name"] for e in to_github_action_benchmark(make_run(BASE), "time")}
    assert not set(to_bencher(fp32)) & set(to_bencher(make_run(BASE)))


@pytest.mark.parametrize("command", ["compare", "export"])
@pytest.mark.parametrize("how", ["same path", "symlink"])
def test_an_output_naming_an_input_is_refused_and_the_input_kept(tmp_path, capsys, command, how):
    base = _write(tmp_path, "base.json", make_run(BASE))
    new = _write(tmp_path, "new.json", make_run(NEW))
    output = base
    if how == "symlink":
        output = str(tmp_path / "link.json")
        os.symlink(base, output)
    before = Path(base).read_bytes()
    args = ["compare", base, new, "-o", output] if command == "compare" else ["export", base, "--to", "bencher", "-o", output]
    assert main(args) == 2
    assert capsys.readouterr().err == f"mcache: {output}: output: a file other than the input {base}, which it would overwrite\n"
    assert Path(base).read_bytes() == before
