"""mcache's SGLang profile against SGLang's own sizing: every case of tests/data/engine_golden/sglang-*.json (made by
scripts/oracles/sglang.py from SGLang's code, one table per modelled release) through `sglang.run` at the table's
version on the case's inputs, every field compared: whether it starts and with SGLang's message, mem_fraction_static,
max_total_num_tokens, max_running_requests and max_mamba_cache_size.

Cases the oracle or our fixtures get wrong are excluded with the reason (EXCLUDED); the mismatches mcache does not
model yet are counted per config and cause (KNOWN), so the test fails when any count changes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mcache.core.engines import sglang
from mcache.core.engines.common import EngineInputs
from mcache.core.errors import LayoutError
from mcache.core.load import load_spec
from mcache.core.sizing.layout import ParallelLayout

DATA = Path(__file__).parent / "data"
TABLES = sorted((DATA / "engine_golden").glob("sglang-*.json"))
FLAGS = ("context_length", "disable_radix_cache", "mamba_radix_cache_strategy", "disable_overlap_schedule",
         "mamba_ssm_dtype", "kv_cache_dtype", "speculative_num_steps", "max_running_requests", "max_mamba_cache_size",
         "mamba_full_memory_ratio")
FIELDS = ("mem_fraction_static", "max_total_num_tokens", "max_running_requests", "max_mamba_cache_size")
# (SGLang's error starts with, why the case says nothing about SGLang's sizing)
ORACLE_FAULTS = (
    ("TypeError: 'NoneType' object is not subscriptable", "lfm2-8b-a1b's fixture lacks a field SGLang's Lfm2Moe config "
     "reads (the real checkpoint has it)"),
    ("AttributeError: 'Mamba2Config' object has no attribute 'intermediate_size'", "mamba2-2.7b's fixture lacks "
     "intermediate_size, which SGLang's Mamba2 config needs"),
    ("AttributeError: 'Qwen3NextConfig' object has no attribute 'full_attention_interval'", "the FP8 Qwen3-Next "
     "fixture lacks full_attention_interval"),
    ("ValueError: The checkpoint you are trying to load has model type `plamo2`", "PLaMo-2 needs remote code, which "
     "the oracle does not trust"),
    ("ValueError: The repository", "Ring-mini-linear needs remote code, which the oracle does not trust"),
)
# Mismatches not modelled yet, per table version and config: (cases, cause). Each count is exact.
VLM = "adjust_mem_fraction_for_vlm (arg_groups/memory_hook.py) needs the vision tower's size, which the spec lacks"
KNOWN = {
    "0.5.20": {"qwen3.5-27b.json": (35, VLM)},
    "0.5.21": {"qwen3.5-27b.json": (35, VLM)},
    "0.5.22": {"qwen3.5-27b.json": (35, VLM)},
    "0.5.23": {
        "centml-qwen3.6-27b-nvfp4": (34, VLM),
        "qwen3.5-27b.json": (33, VLM),
        "qwen3.6-35b-a3b.json": (33, VLM),
        "redhatai-qwen3.5-9b-w4a16.json": (34, VLM),
        "kimi-k3.json": (32, VLM),
    },
}


def _excluded(case) -> str | None:
    if case["env"]:
        return "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is an environment variable mcache has no setting for"
    for prefix, why in ORACLE_FAULTS:
        if (case["error"] or "").startswith(prefix):
            return why
    return None


def _mcache(case, version: str) -> dict:
    """mcache's answer on the case's inputs by the rules of `version`: SGLang's figures, or its start-up refusal."""
    given = {k: v for k, v in case["flags"].items() if k in FLAGS}
    given.update(weights_bytes=case["inputs"]["weights_bytes"],
                 pre_model_load_memory_bytes=case["inputs"]["free_gpu_memory_bytes"])
    spec = load_spec(str(DATA / "hf_configs" / case["config"]))
    try:
        run = sglang.run(EngineInputs(spec=spec, layout=ParallelLayout(tp=case["flags"].get("tp_size", 1)),
                                      gpu_bytes=case["inputs"]["gpu_total_bytes"], given=given, version=version))
    except LayoutError as e:
        return {"error": str(e)}
    stage = run.stages[0]
    return {"error": stage.startup_error, "mem_fraction_static": stage.fields["mem_fraction_static"],
            "max_total_num_tokens": stage.fields["max_total_num_tokens"],
            "max_running_requests": stage.fields.get("max_running_requests_logged"),
            "max_mamba_cache_size": stage.fields["max_mamba_cache_size"]}


def _differs(case, mine: dict) -> bool:
    theirs = case["error"].split(": ", 1)[1] if case["error"] else None
    if (theirs is None) != (mine["error"] is None):
        return True
    if theirs is not None:
        return not theirs.startswith(mine["error"][:100])
    for field in FIELDS:
        a, b = case["result"].get(field), mine[field]
        if a is not None and (round(a, 3) if isinstance(a, float) else a) != (round(b, 3) if isinstance(b, float) else b):
            return True
    return False


def test_a_table_for_every_modelled_release():
    assert sorted(json.loads(t.read_text())["version"] for t in TABLES) == sorted(sglang.VERSIONS)


@pytest.mark.parametrize("table", TABLES, ids=[t.stem for t in TABLES])
def test_every_golden_case_matches_sglang_or_is_a_known_gap(table):
    data = json.loads(table.read_text())
    version = data["version"]
    assert version in sglang.VERSIONS  # a table of a release mcache does not model would be compared by another's rules
    differing = Counter(case["config"] for case in data["cases"]
                        if _excluded(case) is None and _differs(case, _mcache(case, version)))
    assert dict(differing) == {config: count for config, (count, _) in KNOWN.get(version, {}).items()}
