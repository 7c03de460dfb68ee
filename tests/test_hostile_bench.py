"""Hostile input to `mcache bench` (issue 29): a run never loses the rows it finished, never plans a batch its pool
cannot hold, and bounds its integer options like every other command."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import TINY_SPEC

from mcache.bench.kernel_ops import KERNEL_OPS, KernelCaseBuilder
from mcache.bench.ops import OPS
from mcache.bench.runner import BenchConfig, Runner
from mcache.cli.main import main
from mcache.results import schema as results


def _strict_rows(path) -> list[results.Row]:
    """The rows of a results file, after checking it is strict JSON (no NaN or Infinity) that loads."""
    json.loads(path.read_text(), parse_constant=lambda name: pytest.fail(f"non-strict JSON: {name}"))
    return results.load(path).rows


def _uncovered(rows: list[results.Row], kinds: list[str], ops: list[str], batches: list[int]) -> list[tuple]:
    """Each planned `(op, kind, batch)` without a row: a timed or skipped row at that batch, or one row saying the
    kind has no buffers for the op at every batch."""
    seen = {(r.op, r.kind, r.batch) for r in rows}
    everywhere = {(r.op, r.kind) for r in rows if r.reason and r.reason.endswith("(every batch)")}
    return [(op, kind, b) for op in ops if op != "alloc" for kind in kinds for b in batches
            if (op, kind, b) not in seen and (op, kind) not in everywhere]


def test_the_largest_batch_of_the_kernel_ops_is_a_skipped_row_not_a_crash(tmp_path, capsys):
    out = tmp_path / "k.json"
    assert main(["bench", TINY_SPEC, "--device", "cpu", "--ops", "kernels", "--batch", "1,4", "--reps", "2",
                 "-o", str(out)]) == 0
    rows = _strict_rows(out)
    skipped = {(r.kind, r.reason) for r in rows if r.op == "copy_slots" and r.batch == 4}
    assert skipped == {(kind, "needs 8 free slots (2 disjoint sets of 4), the pool has 4")
                       for kind in ("mamba1", "mamba2", "gdn")}
    assert not _uncovered(rows, ["mamba1", "mamba2", "gdn"], list(KERNEL_OPS), [1, 4])
    assert "Traceback" not in capsys.readouterr().err


def test_an_op_that_fails_is_a_skipped_row_and_one_line_and_the_rest_is_written(tmp_path, capsys, monkeypatch):
    def broken(self, batch):
        raise ValueError("not enough values to unpack\nsecond line")

    monkeypatch.setattr(KernelCaseBuilder, "pack_heads", broken)
    out = tmp_path / "k.json"
    assert main(["bench", TINY_SPEC, "--device", "cpu", "--ops", "pack_heads,unpack_heads", "--batch", "1",
                 "--reps", "2", "-o", str(out)]) == 1
    rows = _strict_rows(out)
    failed = [r for r in rows if r.op == "pack_heads"]
    assert {(r.status, r.reason) for r in failed} == {("skipped", "failed: ValueError: not enough values to unpack")}
    assert {r.status for r in rows if r.op == "unpack_heads"} == {"ok"}
    err = capsys.readouterr().err.splitlines()
    assert err == [f"mcache: bench: pack_heads (torch) on {kind} at batch 1 failed: ValueError: not enough values to "
                   "unpack; recorded as a skipped row" for kind in ("mamba1", "mamba2", "gdn")]


def test_a_batch_its_derived_pool_cannot_hold_is_skipped_before_the_case_is_built():
    runner = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[4], max_batch=2, ops=["commit"], reps=2))
    run = runner.run()
    assert {r.reason for r in run.rows if r.op == "commit"} == {"needs 4 free slots, the pool has 2"}
    assert not runner.failures


@pytest.mark.parametrize("option", ["--draft", "--max-seq-len", "--max-batch", "--tp", "--pp"])
def test_integer_options_above_2_63_are_one_line(capsys, option):
    huge = 2**63 + 1
    assert main(["bench", TINY_SPEC, "--device", "cpu", option, str(huge)]) == 2
    top = "256" if option == "--draft" else "2**40 (1099511627776)"
    assert capsys.readouterr().err == f"mcache: {option}: an integer from {0 if option == '--draft' else 1} to {top}, " \
                                      f"got {huge}\n"


KINDS = Runner(BenchConfig(spec=TINY_SPEC, device="cpu")).ctx.recurrent_kinds


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from(OPS + KERNEL_OPS), min_size=1, max_size=3, unique=True),
       batches=st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True),
       spare=st.integers(0, 4), scheme=st.sampled_from(["intermediate", "replay", "index"]))
def test_any_ops_batches_and_pool_size_write_every_planned_row(tmp_path_factory, capsys, ops, batches, spare, scheme):
    out = tmp_path_factory.mktemp("run") / "run.json"
    code = main(["bench", TINY_SPEC, "--device", "cpu", "--ops", ",".join(ops), "--batch", ",".join(map(str, batches)),
                 "--max-batch", str(max(batches) + spare), "--scheme", scheme, "--reps", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err, err
    rows = _strict_rows(out)
    assert not _uncovered(rows, KINDS, ops, batches)
    assert ("alloc" in ops) == any(r.op == "alloc" for r in rows)
