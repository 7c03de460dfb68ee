"""Compares a golden SGLang table with mcache's SGLang profile, case by case, on the same inputs (the table's GPU,
free memory before loading as pre_model_load_memory_bytes, weights_bytes and flags) by the rules of the table's own
release, and writes a summary (Markdown) on stdout or to --out.

    PYTHONPATH=. python scripts/oracles/sglang_compare.py tests/data/engine_golden/sglang-0.5.23.json.gz \
        --out scripts/oracles/sglang-0.5.23-vs-mcache.md

Run it with the project's environment (it imports mcache, not SGLang). tests/test_engine_golden_sglang.py compares
every table through the same functions (`excluded`, `mcache_case`, `differences`).
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
_golden_spec = importlib.util.spec_from_file_location("oracle_golden", Path(__file__).with_name("golden.py"))
golden = importlib.util.module_from_spec(_golden_spec)  # the tables' files (this folder is off sys.path)
_golden_spec.loader.exec_module(golden)

from mcache.core.engines import sglang  # noqa: E402
from mcache.core.engines.common import EngineInputs  # noqa: E402
from mcache.core.errors import LayoutError, McacheError  # noqa: E402
from mcache.core.load import load_spec, with_drafter  # noqa: E402
from mcache.core.sizing.layout import ParallelLayout  # noqa: E402

CONFIGS = REPO / "tests/data/hf_configs"
FLAGS = ("context_length", "disable_radix_cache", "mamba_radix_cache_strategy", "disable_overlap_schedule",
         "mamba_ssm_dtype", "kv_cache_dtype", "speculative_num_steps", "max_running_requests",
         "max_mamba_cache_size", "mamba_full_memory_ratio", "speculative_draft_kv_cache_dtype", "qsa_indexer_dtype")
FIELDS = ("mem_fraction_static", "max_total_num_tokens", "max_running_requests", "max_mamba_cache_size")
# The one exclusion: a case run with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1. That is an environment variable of
# the SGLang process, not a server flag, and mcache's SGLang settings are the server's flags (engines/sglang.py
# SETTINGS, the CLI's options, the boot-log reader): nothing there says the variable is set, so mcache refuses a context
# above the model's as SGLang does by default and names the variable in that refusal. (The oracle's and the fixtures'
# faults that were excluded before are fixed: remote-code configs run with a stand-in configuration class,
# scripts/oracles/remote_code.py; fixtures got their published keys back; real SGLang refusals are mcache's too.)
ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is an environment variable mcache has no setting for"
# A case's flag the release's ServerArgs has no field for (v0.5.2-v0.5.4: the radix-cache strategy; v0.5.2-v0.5.3:
# mamba_full_memory_ratio): the dataclass refuses the keyword, as the release's CLI refuses the flag ("unrecognized
# arguments"); mcache agrees when it refuses that setting for that release (LayoutError: "<setting>: not a setting of
# SGLang <version> ...", engines/sglang.py SETTING_SINCE). The arg-group ServerArgs (v0.5.19 on) words it "Unexpected
# keyword argument" (v0.5.20-v0.5.21: --qsa-indexer-dtype)
UNKNOWN_FLAG = re.compile(r"TypeError: (?:ServerArgs\.__init__\(\) got an unexpected|Unexpected) keyword argument '(\w+)'")
# SGLANG_PP_LAYER_PARTITION (distributed/utils.py get_pp_indices), the other variable a case may set, is mcache's
# --pp-partition (ParallelLayout.pp_partition)
PARTITION = "SGLANG_PP_LAYER_PARTITION"
DFLASH_BLOCK = sglang.DFLASH_DEFAULT_BLOCK  # a drafter naming no block size drafts this many tokens a block


# A pool SGLang refuses to build keeps it from starting, though the sizing before it finished: memory_pool.py's own
# check of its page (DSATokenToKVPool, v0.5.22 on) and kv_cache_configurator.py's of a QSA dtype given to a hybrid
# without QSA (_build_hybrid_linear_kv_pool, v0.5.22 on), which the oracle's pool build records (`pool_error`). Its
# other pool errors are the oracle's (meta tensors, no CUDA in the throwaway venv) and say nothing of SGLang's
POOL_REFUSAL = ("AssertionError: page_size ", "ValueError: --qsa-indexer-dtype ")


def excluded(case) -> str | None:
    """Why a case says nothing about mcache's profile (None: it is compared)."""
    return ENV if set(case["env"]) - {PARTITION} else None


# The folder the oracle writes each config into (`--work`/models/<config name>/), which a message naming the model's path
# shows; mcache names the model by its name alone
MODEL_FOLDER = re.compile(r"/\S*/models/(?=[^/\s]+)")


def sglang_error(case) -> str | None:
    """SGLang's refusal of the case, the release's message (the model named without the oracle's folder): the case's
    error, or a pool it refuses to build (`POOL_REFUSAL`)."""
    pool = (case.get("result") or {}).get("pool_error") or ""
    error = case["error"] or (pool if pool.startswith(POOL_REFUSAL) else None)
    return MODEL_FOLDER.sub("", error.split(": ", 1)[1]) if error else None


@functools.cache
def _spec(config: Path):
    """The config's spec, imported once for all the cases that name it (or mcache's refusal of it)."""
    try:
        return load_spec(str(config))
    except McacheError as e:
        return e


def mcache_case(case, version: str, configs: Path = CONFIGS) -> dict:
    """mcache's answer on the case's inputs (the GPU by the oracle's name, which mcache's catalogue knows: an AMD card
    is sized by SGLang's ROCm rules) by the rules of `version`: SGLang's start-up refusal (the first failing stage's),
    or each PP stage's figures (`stages`, by rank)."""
    given = {k: v for k, v in case["flags"].items() if k in FLAGS}
    given.update(weights_bytes=case["inputs"]["weights_bytes"],
                 pre_model_load_memory_bytes=case["inputs"]["free_gpu_memory_bytes"])
    spec = _spec(configs / case["config"])
    if isinstance(spec, McacheError):  # mcache refuses the config itself
        return {"error": str(spec)}
    if case.get("drafter"):  # a --drafters table's case: DFLASH, its draft tokens the block size unless given
        spec = with_drafter(spec, str(golden.DRAFTER_CONFIGS / case["drafter"]))
        given["speculative_num_steps"] = (case["flags"].get("speculative_num_draft_tokens") or spec.drafter.block_size
                                          or DFLASH_BLOCK) - 1
    partition = case["env"].get(PARTITION)
    try:
        # attention DP: the oracle's --dp-size N --enable-dp-attention (sglang.py _dp_grid, _narrow_dp_grid), mcache's
        # --attn-dp-size N
        dp = case["flags"].get("dp_size") if case["flags"].get("enable_dp_attention") else None
        layout = ParallelLayout(tp=case["flags"].get("tp_size", 1), pp=case["flags"].get("pp_size", 1),
                                attention_dp=dp is not None, attention_dp_size=dp,
                                pp_partition=tuple(int(n) for n in partition.split(",")) if partition else None)
        run = sglang.run(EngineInputs(spec=spec, layout=layout, gpu_name=case["inputs"]["gpu"],
                                      gpu_bytes=case["inputs"]["gpu_total_bytes"], given=given, version=version))
    except LayoutError as e:
        return {"error": str(e)}
    errors = [stage.startup_error for stage in run.stages if stage.startup_error is not None]
    return {"error": errors[0] if errors else None, "stages": [
        {"mem_fraction_static": stage.fields["mem_fraction_static"],
         "max_total_num_tokens": stage.fields["max_total_num_tokens"],
         "max_running_requests": stage.fields.get("max_running_requests_logged"),
         "max_mamba_cache_size": stage.fields["max_mamba_cache_size"], "log": stage.log} for stage in run.stages]}


# The pools' lines, which the tables log where the oracle builds the pools (0.5.2-0.5.9 and from 0.5.16; the target
# model's alone: a draft worker's pool is not built)
POOL_LINES = ("Mamba Cache is allocated", "KV Cache is allocated")


def pool_lines(log: list[str]) -> list[str]:
    """The pool lines of a stage's log (`POOL_LINES`), in order."""
    return [line for line in log if line.startswith(POOL_LINES)]


def differences(case, mine: dict) -> list[tuple[str, object, object]]:
    """(field, SGLang's, mcache's) for each field that differs: whether it starts and with SGLang's message (its first
    100 characters, or the whole of it where mcache's goes on to say why; a flag the release lacks: `UNKNOWN_FLAG`),
    then each stage's figures (floats to 3 decimals; a PP stage's field is named `field[rank]`) and the pools' lines
    where the table logs them (`POOL_LINES`, word for word)."""
    theirs = sglang_error(case)
    if (theirs is None) != (mine["error"] is None):
        return [("starts", theirs is None, mine["error"] is None)]
    unknown = UNKNOWN_FLAG.search(case["error"] or "")
    if unknown:  # the release's ServerArgs has no such field: mcache must refuse that setting for that release
        return [] if mine["error"].startswith(f"{unknown[1]}: not a setting of SGLang ") else [
            ("error", theirs, mine["error"])]
    if theirs is not None:
        same = theirs.startswith(mine["error"][:100]) or (theirs and mine["error"].startswith(theirs))
        return [] if same else [("error", theirs, mine["error"])]
    stages = case["result"].get("stages", [case["result"]])
    if len(stages) != len(mine["stages"]):
        return [("stages", len(stages), len(mine["stages"]))]
    out = []
    for rank, (result, stage) in enumerate(zip(stages, mine["stages"], strict=True)):
        for field in FIELDS:
            a, b = result.get(field), stage[field]
            if a is not None and (round(a, 3) if isinstance(a, float) else a) != (round(b, 3) if isinstance(b, float)
                                                                                 else b):
                out.append((f"{field}[{rank}]" if len(stages) > 1 else field, a, b))
        theirs = pool_lines(result.get("log", []))
        if theirs and pool_lines(stage["log"])[:len(theirs)] != theirs:  # mcache's go on with a draft worker's pool
            out.append((f"pool lines[{rank}]" if len(stages) > 1 else "pool lines", theirs, pool_lines(stage["log"])))
    return out


def summary(table: dict, configs: Path = CONFIGS) -> str:
    version = table["version"]
    rows, kinds, skipped = [], collections.Counter(), collections.Counter()
    per_config = collections.defaultdict(collections.Counter)
    for case in table["cases"]:
        why = excluded(case)
        if why is not None:
            skipped[why] += 1
            continue
        mine = mcache_case(case, version, configs)
        diffs = differences(case, mine)
        for d in diffs:
            kinds[d[0]] += 1
            per_config[case["config"]][d[0]] += 1
        rows.append((case, mine, diffs))
    lines = [f"# SGLang {version} (its own code) vs mcache's SGLang profile at {version}\n",
             f"{len(table['cases'])} cases; {sum(skipped.values())} excluded; of the {len(rows)} compared, "
             f"{sum(1 for *_, d in rows if not d)} agree on every field ({', '.join(FIELDS)}, the pools' lines, whether it starts and "
             "SGLang's message).\n"]
    if skipped:
        lines += ["| excluded | cases |", "| --- | --- |", *(f"| {why} | {n} |" for why, n in skipped.most_common()), ""]
    if kinds:
        lines += ["| field | cases that differ |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in kinds.most_common()),
                  "", "| config | differences |", "| --- | --- |"]
        lines += [f"| {cfg} | {', '.join(f'{k} {v}' for k, v in c.most_common())} |"
                  for cfg, c in sorted(per_config.items())]
        lines += ["", "## Examples (first three differing cases of each config)", ""]
    shown = collections.Counter()
    for case, mine, diffs in rows:
        if not diffs or shown[case["config"]] >= 3:
            continue
        shown[case["config"]] += 1
        lines.append(f"- `{case['config']}` {json.dumps(case['flags'], sort_keys=True)} on {case['inputs']['gpu']}, "
                     f"weights {case['inputs']['weights_bytes'] >> 30} GiB: "
                     + "; ".join(f"{k}: sglang {a!r} / mcache {b!r}" for k, a, b in diffs)
                     + (f" (sglang: {case['error'][:160]})" if case["error"] else "")
                     + (f" (mcache: {str(mine.get('error'))[:160]})" if mine.get("error") else ""))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", type=Path, help="a golden table, tests/data/engine_golden/sglang-VERSION.json.gz")
    ap.add_argument("--out", type=Path, help="write the summary there (default: stdout)")
    ap.add_argument("--configs", type=Path, default=CONFIGS,
                    help="the table's HF configs (tests/data/hf_configs_extra for an extra table)")
    args = ap.parse_args()
    text = summary(golden.read(args.table), args.configs)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
