"""mcache's SGLang profile against SGLang's own sizing: every case of tests/data/engine_golden/sglang-*.json (made by
scripts/oracles/sglang.py from SGLang's code, one table per modelled release) through `sglang.run` at the table's
version on the case's inputs, every field compared: whether it starts and with SGLang's message, mem_fraction_static,
max_total_num_tokens, max_running_requests and max_mamba_cache_size, and the pools' lines (`Mamba Cache is allocated`,
`KV Cache is allocated`) word for word where the table logs them.

Every case is compared (through scripts/oracles/sglang_compare.py's functions) except those run with
SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, an environment variable mcache has no setting for (`compare.ENV`); the
mismatches mcache does not model yet would be counted per config and cause (KNOWN), so the test fails when any count
changes."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from mcache.core.engines import sglang
from mcache.core.engines.versions import resolve

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sglang_compare", ROOT / "scripts" / "oracles" / "sglang_compare.py")
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)
TABLES = compare.golden.tables("sglang")
# Tables of post releases that are patches of their release (scripts/oracles/sglang_versions.md "Post releases"):
# not modelled releases, so sized by their release's rules
PATCH_TABLES = sorted((compare.golden.DIR / "patch").glob("sglang-*.json.gz"))
# Mismatches not modelled yet, per table version and config: (cases, cause). Each count is exact; none is left.
KNOWN: dict[str, dict[str, tuple[int, str]]] = {}


def test_a_table_for_every_modelled_release():
    assert sorted(compare.golden.read(t)["version"] for t in TABLES) == sorted(sglang.VERSIONS)


@pytest.mark.parametrize("table", TABLES, ids=[t.name.removesuffix(".json.gz") for t in TABLES])
def test_every_golden_case_matches_sglang_or_is_a_known_gap(table):
    data = compare.golden.read(table)
    version = data["version"]
    assert version in sglang.VERSIONS  # a table of a release mcache does not model would be compared by another's rules
    differing = Counter(case["config"] for case in data["cases"]
                        if compare.excluded(case) is None and compare.differences(case, compare.mcache_case(case, version)))
    assert dict(differing) == {config: count for config, (count, _) in KNOWN.get(version, {}).items()}



@pytest.mark.parametrize("table", PATCH_TABLES, ids=[t.name.removesuffix(".json.gz") for t in PATCH_TABLES])
def test_a_patch_post_release_is_sized_by_its_release(table):
    data = compare.golden.read(table)
    version = data["version"]
    modelled = resolve("SGLang", sglang.VERSIONS, version).modelled
    assert version not in sglang.VERSIONS and modelled == version.split(".post")[0]
    assert not [case for case in data["cases"]
                if compare.excluded(case) is None and compare.differences(case, compare.mcache_case(case, modelled))]
