"""Compares a golden SGLang table with mcache's SGLang profile, case by case, on the same inputs (the table's GPU,
free memory before loading as pre_model_load_memory_bytes, weights_bytes and flags), and writes a summary.

    PYTHONPATH=. python scripts/oracles/sglang_compare.py tests/data/engine_golden/sglang-0.5.23.json \
        > scripts/oracles/sglang-0.5.23-vs-mcache.md

Run it with the project's environment (it imports mcache, not SGLang).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

from mcache.core.engines import sglang
from mcache.core.engines.common import EngineInputs
from mcache.core.load import load_spec
from mcache.core.sizing.layout import ParallelLayout

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests/data/hf_configs"
FLAGS = ("context_length", "disable_radix_cache", "mamba_radix_cache_strategy", "disable_overlap_schedule",
         "mamba_ssm_dtype", "kv_cache_dtype", "speculative_num_steps", "max_running_requests",
         "max_mamba_cache_size", "mamba_full_memory_ratio")
FIELDS = ("mem_fraction_static", "max_total_num_tokens", "max_running_requests", "max_mamba_cache_size")


def mcache_case(case):
    spec = load_spec(str(CONFIGS / case["config"]))
    given = {k: v for k, v in case["flags"].items() if k in FLAGS}
    given.update(weights_bytes=case["inputs"]["weights_bytes"],
                 pre_model_load_memory_bytes=case["inputs"]["free_gpu_memory_bytes"])
    run = sglang.run(EngineInputs(spec=spec, layout=ParallelLayout(tp=case["flags"].get("tp_size", 1)),
                                  gpu_bytes=case["inputs"]["gpu_total_bytes"], given=given))
    st = run.stages[0]
    f = st.fields
    return {"error": st.startup_error, "mem_fraction_static": f.get("mem_fraction_static"),
            "max_total_num_tokens": f.get("max_total_num_tokens"),
            "max_running_requests": f.get("max_running_requests_logged"),
            "max_mamba_cache_size": f.get("max_mamba_cache_size")}


def main():
    table = json.loads(Path(sys.argv[1]).read_text())
    rows, kinds = [], collections.Counter()
    per_config = collections.defaultdict(collections.Counter)
    for case in table["cases"]:
        try:
            mine = mcache_case(case)
        except Exception as e:  # noqa: BLE001 (mcache refusing is a finding too)
            mine = {"error": f"{type(e).__name__}: {e}"}
        theirs = case["result"]
        diffs = []
        if (case["error"] is None) != (mine.get("error") is None):
            diffs.append(("starts", case["error"] is None, mine.get("error") is None))
        elif case["error"] is None:
            for k in FIELDS:
                a, b = theirs.get(k), mine.get(k)
                if a is not None and b is not None and (round(a, 3) if isinstance(a, float) else a) != (
                        round(b, 3) if isinstance(b, float) else b):
                    diffs.append((k, a, b))
        for d in diffs:
            kinds[d[0]] += 1
            per_config[case["config"]][d[0]] += 1
        rows.append((case, mine, diffs))
    n = len(rows)
    print(f"# SGLang {table['version']} (its own code) vs mcache's SGLang profile\n")
    print(f"{n} cases; {sum(1 for *_, d in rows if not d)} agree on every compared field "
          f"({', '.join(FIELDS)}, and whether it starts).\n")
    print("| field | cases that differ |\n| --- | --- |")
    for k, v in kinds.most_common():
        print(f"| {k} | {v} |")
    print("\n| config | differences |\n| --- | --- |")
    for cfg, c in sorted(per_config.items()):
        print(f"| {cfg} | {', '.join(f'{k} {v}' for k, v in c.most_common())} |")
    print("\n## Examples (first three differing cases of each config)\n")
    shown = collections.Counter()
    for case, mine, diffs in rows:
        if not diffs or shown[case["config"]] >= 3:
            continue
        shown[case["config"]] += 1
        print(f"- `{case['config']}` {json.dumps(case['flags'], sort_keys=True)} on {case['inputs']['gpu']}, "
              f"weights {case['inputs']['weights_bytes'] >> 30} GiB: "
              + "; ".join(f"{k}: sglang {a!r} / mcache {b!r}" for k, a, b in diffs)
              + (f" (sglang: {case['error'][:160]})" if case["error"] else "")
              + (f" (mcache: {str(mine.get('error'))[:160]})" if mine.get("error") else ""))


if __name__ == "__main__":
    main()
