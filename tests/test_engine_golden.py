"""mcache's engine profiles against the golden tables the engines' own code wrote (tests/data/engine_golden/, made by
scripts/oracles/<engine>.py): every field of every case, through scripts/oracles/compare.py's case-to-inputs logic.

Every case of every vLLM table matches (a refusal by its class: the same reason on both sides). A mismatch fails
with its cause and count per cause: a profile regression, or a table not regenerated since the oracle or a config
fixture changed (compare.py's STALE_* causes: rerun those configs with `scripts/oracles/vllm.py --merge`).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("oracle_compare", ROOT / "scripts" / "oracles" / "compare.py")
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)
TABLES = compare.golden.tables("vllm")


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name)
def test_every_case_matches_the_engine(table):
    configs = ROOT / "tests" / "data" / "hf_configs"
    golden = compare.golden.read(table)
    first_causes: Counter = Counter()
    for case in golden["cases"]:  # each table at the release that wrote it
        cause = next((c for *_, c in compare.compare_case(configs, case, golden["version"]) if c is not None), None)
        if cause is not None:
            first_causes[cause] += 1
    assert dict(first_causes) == {}


def test_a_one_request_refusal_is_compared_word_for_word():
    # 0.13's wording (kv_cache_utils.py: "models's", :.2f, no estimate: two spaces) against 0.22's, same figures
    old = ("ValueError: To serve at least one request with the models's max seq len (4096), (0.50 GiB KV cache is "
           "needed, which is larger than the available KV cache memory (0.06 GiB).  Try increasing ...")
    new = ("To serve at least one request with the model's max seq len (4096), (0.5 GiB KV cache is needed, which is "
           "larger than the available KV cache memory (0.06 GiB). Try increasing ...")
    assert compare.memory_figures(old) == compare.memory_figures(new) == (4096, 0.5, 0.06, 0)
    assert not compare.same("error", old, new)
    assert compare.same("error", old, old.removeprefix("ValueError: "))
    assert compare.same("error", "ValueError: " + new, new)
    estimated = new.replace("(0.06 GiB). ", "(0.06 GiB). Based on the available memory, the estimated maximum model "
                                           "length is 528. ")
    assert compare.memory_figures(estimated) == (4096, 0.5, 0.06, 528)
    assert not compare.same("error", "ValueError: " + new, estimated)


def test_every_modelled_release_has_a_table():
    # a rule keyed to a release no table checks would pass unseen; the tables at releases mcache takes from the one
    # before (0.21.0, 0.31.0, ...) are checked by that one's rules
    from mcache.core.engines import vllm

    assert set(vllm.VERSIONS) <= {compare.golden.read(t)["version"] for t in TABLES}
