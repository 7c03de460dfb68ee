"""mcache's parameter estimate against transformers' own classes, built on the meta device by
`scripts/param_counts.py` (the committed table `tests/data/param_counts.json` names the transformers version; CI only
reads it)."""

from __future__ import annotations

import json

import pytest
from paths import HF_CONFIGS

from mcache.core.hf import import_hf
from mcache.core.sizing.weights import total_params

TABLE = json.loads((HF_CONFIGS.parent / "param_counts.json").read_text())
BUILT = {name: row for name, row in TABLE["counts"].items() if "error" not in row}
# 0.05%: what mcache leaves out by design, vectors of at most a few thousand parameters per layer (per-head q/k norms,
# a gated norm's weight, Zamba2's per-block norm widths); the largest measured is Falcon-H1-0.5B, +0.018%.
TOLERANCE = 0.0005
# A wider gap, and why (each still within the 0.5% issue 30 asks for).
WIDER = {
    "edge0-8b-a1b-preview.json": (0.005, "transformers' BailingHybridAttention drops q_lora_rank (a full q_proj of "
                                  "1536 x 3072) and adds a per-head output gate; mcache reads the config's q_lora_rank "
                                  "256 as DeepSeek-style MLA does: 6 MLA layers x 3.56 M = -21.4 M, -0.27%"),
}


def test_the_table_covers_every_config_and_names_its_transformers():
    names = {p.name for p in HF_CONFIGS.glob("*.json")} | {p.name for p in HF_CONFIGS.iterdir() if p.is_dir()}
    assert set(TABLE["counts"]) == names
    assert TABLE["transformers"] and TABLE["torch"] and len(BUILT) >= 20
    assert set(WIDER) <= set(BUILT)


@pytest.mark.parametrize("name", sorted(BUILT))
def test_estimate_matches_transformers(name):
    reference = BUILT[name]["params"]
    estimated = total_params(import_hf(HF_CONFIGS / name))
    tolerance, why = WIDER.get(name, (TOLERANCE, "norm vectors mcache does not count"))
    error = estimated / reference - 1
    assert abs(error) <= tolerance, f"{name}: mcache {estimated:,} vs transformers {reference:,}: {error:+.3%} ({why})"
