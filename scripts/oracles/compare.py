"""Compare a golden table of an engine's own sizing (scripts/oracles/vllm.py) with mcache's profile of that engine.

    python scripts/oracles/compare.py \
        tests/data/engine_golden/vllm-0.33.0.json.gz --out scripts/oracles/vllm-0.33.0-vs-mcache.md

For every case of the table, mcache's vLLM profile (`mcache.core.engines.run_engine('vllm', EngineInputs(...))`)
runs on the spec imported from the same HF config with the same flags (TP, max_model_len, kv_cache_memory_bytes,
num_speculative_tokens, kv / SSM dtypes, prefix caching, mamba_cache_mode) on an H200, and each field is compared:
the count of matching cases per field, then, per mismatching field, the mismatches grouped by a likely cause (the
first tag of `causes` that applies to the case) with a few examples showing both values.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
_golden_spec = importlib.util.spec_from_file_location("oracle_golden", Path(__file__).with_name("golden.py"))
golden = importlib.util.module_from_spec(_golden_spec)  # the tables' files (this folder is off sys.path)
_golden_spec.loader.exec_module(golden)

from mcache.core.engines import run_engine  # noqa: E402
from mcache.core.engines.common import EngineInputs  # noqa: E402
from mcache.core.engines.versions import at_least  # noqa: E402
from mcache.core.load import load_spec, with_drafter  # noqa: E402
from mcache.core.sizing.layout import ParallelLayout  # noqa: E402

H200 = ("NVIDIA H200", 143771140096)  # what the oracle's platform answers
FIELDS = ("error", "mamba_cache_mode", "attention_block_size", "state_page_bytes", "state_page_padded_bytes",
          "groups", "num_blocks", "blocks_per_request", "max_concurrency", "kv_cache_tokens", "stage_group_sizes")
# mcache's group names -> vLLM's KV-cache spec classes (every recurrent kind is a MambaSpec there)
SPEC_CLASS = {"attention": "FullAttentionSpec", "mla": "MLAAttentionSpec", "attention:window": "SlidingWindowSpec",
              "sliding_attention": "FullAttentionSpec", "sliding_attention:window": "SlidingWindowSpec",
              "mla:window": "SlidingWindowMLASpec", "drafter": "FullAttentionSpec", "drafter:window": "SlidingWindowSpec"}
DRAFTERS = golden.DRAFTER_CONFIGS  # the drafters of a --drafters table's cases
# a DSA indexer's tails (mcache's group `dsa_indexer:tail`): KpoolTailSpec at 0.30 - 0.31, CircularBufferSpec after
DSA_TAIL_CLASS = (("0.32.0", "CircularBufferSpec"), ("0.30.0", "KpoolTailSpec"))


# Causes of a table written by an older oracle or from an older config fixture (regenerate those configs with
# `scripts/oracles/vllm.py --version X --merge --configs ...`; scripts/oracles/vllm_versions.md lists them)
STALE_REMOTE_CODE = ("table made before the oracle passed trust_remote_code (vLLM refused the remote-code config; "
                     "regenerate)")
STALE_MTP = ("table made before the oracle drafted with MTP (vLLM's figures lack the MTP layers mcache counts; "
             "regenerate)")
STALE_FIXTURE = "table made from an older config fixture (it named no architectures; regenerate)"
STALE_CUDA = ("table made before the oracle's CUDA stand-ins (torch.cuda.current_device, cuda_to_meta: a layer or "
              "the Transformers backend touched CUDA; regenerate)")


def config_path(configs: Path, name: str) -> Path:
    return configs / name


_specs: dict[str, object] = {}


def spec_of(configs: Path, name: str):
    path = str(config_path(configs, name))
    if path not in _specs:
        try:
            _specs[path] = load_spec(path)
        except Exception as exc:  # noqa: BLE001
            _specs[path] = exc
    return _specs[path]


def mcache_case(configs: Path, case: dict, version: str | None = None, device: dict | None = None) -> dict:
    """mcache's figures for one case (the same names as the table's) at the vLLM `version` the table was made with
    (None: the newest mcache models), or {'error': ...}."""
    flags = case["flags"]
    spec = spec_of(configs, case["config"])
    if isinstance(spec, Exception):
        return {"error": f"{type(spec).__name__}: {spec}"}
    if flags.get("draft_model"):
        spec = with_drafter(spec, str(DRAFTERS / flags["draft_model"]))
    given = {"kv_cache_memory_bytes": flags["kv_cache_memory_bytes"], "weights_bytes": 0,
             "num_speculative_tokens": flags["num_speculative_tokens"],
             "mamba_ssm_cache_dtype": flags["mamba_ssm_cache_dtype"], "kv_cache_dtype": flags["kv_cache_dtype"],
             "max_model_len": flags.get("max_model_len"),
             "enable_prefix_caching": flags.get("enable_prefix_caching"),
             "mamba_cache_mode": flags.get("mamba_cache_mode"),
             **({"max_num_batched_tokens": flags["max_num_batched_tokens"]} if "max_num_batched_tokens" in flags else {})}
    try:
        partition = flags.get("pp_layer_partition")  # VLLM_PP_LAYER_PARTITION, mcache's --pp-partition
        layout = ParallelLayout(tp=flags["tensor_parallel_size"], pp=flags.get("pipeline_parallel_size", 1),
                                pp_partition=tuple(int(n) for n in partition.split(",")) if partition else None)
        gpu = (device["name"], device["bytes"]) if device else H200
        run = run_engine("vllm", EngineInputs(spec, layout, *gpu, None, given), version)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    stage = run.stages[0]  # the table's figures are worker 0's, the first PP stage's (the scheduler's config)
    # ... and its error the first worker's to refuse: vLLM checks the workers in rank order and stops at the first
    error = next((st.startup_error for st in run.stages if st.startup_error is not None), None)
    f = stage.fields
    groups: Counter = Counter()
    tail = next((cls for since, cls in DSA_TAIL_CLASS if at_least(run.version.modelled, since)), None)
    for name, n in (f.get("groups") or {}).items():
        groups[tail if name == "dsa_indexer:tail" else SPEC_CLASS.get(name, "MambaSpec")] += n
    # the table records a mamba cache mode only where the model has Mamba layers (a hybrid the Transformers backend
    # sizes as attention layers has none: vllm.py `_served_spec`)
    return {"error": error, "mamba_cache_mode": f.get("mamba_cache_mode") if f.get("state_page_bytes") else None,
            "attention_block_size": f.get("attention_block_size"), "state_page_bytes": f.get("state_page_bytes"),
            "state_page_padded_bytes": f.get("state_page_padded_bytes"), "groups": dict(sorted(groups.items())),
            "num_blocks": f.get("num_blocks"), "blocks_per_request": f.get("blocks_per_request"),
            "max_concurrency": f.get("max_concurrency"), "kv_cache_tokens": f.get("kv_cache_tokens"),
            # with PP, each stage's layers per block (the table's: each PP rank's largest share of a KV-cache group)
            "stage_group_sizes": [st.fields.get("group_size") for st in run.stages] if layout.pp > 1 else None,
            "max_model_len": run.max_len, "spec": spec}


def vllm_case(case: dict) -> dict:
    r = dict(case["result"])
    r["error"] = case["error"]
    if r.get("groups") is None and not case["error"]:
        r["groups"] = {}
    return r


def figures(side: dict) -> bool:
    """Whether a side got as far as sizing (a start-up check may still have refused after it)."""
    return "num_blocks" in side and "groups" in side


ONE_REQUEST = "not enough KV memory for one request"


def error_class(text: str | None) -> str | None:
    if not text:
        return None
    t = text
    if "greater than the derived max_model_len" in t:
        return "max_model_len above the config's"
    if "max_num_seqs" in t and "Mamba cache blocks" in t:
        return "max_num_seqs > Mamba blocks"
    if "To serve at least one request" in t or "No available memory" in t:
        return ONE_REQUEST
    if "does not dispatch through the Transformers" in t or "not supported" in t.lower() and "architecture" in t.lower():
        return "architecture refused"
    return t.split(":", 1)[0]


# vLLM's start-up check of one request (v1/core/kv_cache_utils.py _check_enough_kv_cache_memory): the max model
# length, the GiB it needs, the GiB available and the estimated maximum model length (absent: 0)
MEMORY_FIGURES = re.compile(r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, .*? available KV cache memory "
                            r"\(([\d.]+) GiB\)\. (?:Based on the available memory, the estimated maximum model length is "
                            r"(\d+)\.)?")


def memory_figures(text: str | None) -> tuple | None:
    """(max model length, GiB needed, GiB available, estimated length) of a one-request refusal, else None."""
    found = MEMORY_FIGURES.search(text or "")
    if found is None:
        return None
    length, needed, available, estimate = found.groups()
    return int(length), float(needed), float(available), int(estimate or 0)


def same(field: str, v, m) -> bool:
    if field == "error":  # by class, and a one-request refusal word for word (vLLM's names its class, ValueError)
        if error_class(v) == ONE_REQUEST:
            return v.removeprefix("ValueError: ") == m
        return error_class(v) == error_class(m)
    if field == "max_concurrency" and v is not None and m is not None:
        return abs(round(v, 2) - m) < 0.011
    if field == "groups":
        return (v or {}) == (m or {})
    return v == m


def load_cfg(configs: Path, name: str) -> dict:
    p = configs / name
    return json.loads((p / "config.json" if p.is_dir() else p).read_text())


def causes(configs: Path, case: dict, v: dict, m: dict, field: str) -> str:
    """The likely cause of a mismatch, first that applies."""
    flags = case["flags"]
    cfg = load_cfg(configs, case["config"])
    q = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config") or {}
    ve, me = error_class(v.get("error")), error_class(m.get("error"))
    named = cfg.get("architectures") or []
    if field == "error" and ve == me == ONE_REQUEST:
        if memory_figures(v.get("error")) == memory_figures(m.get("error")):
            return "the one-request memory check's words differ (its figures agree: the release's wording)"
        return ("the one-request memory check's figures (max len, GiB needed, GiB available, estimated length) "
                f"differ: vLLM {memory_figures(v.get('error'))} / mcache {memory_figures(m.get('error'))}")
    if (v.get("architecture") and named and v["architecture"] not in named) or (
            v.get("error") and "No model architectures are specified" in v["error"] and named):
        return STALE_FIXTURE
    if ve != me and not (field != "error" and figures(v) and figures(m)) and not (
            figures(v) and figures(m) and {ve, me} <= {None, "max_num_seqs > Mamba blocks"}):
        if isinstance(m.get("spec"), type(None)) and me and "Error" in me and not v.get("error"):
            return f"mcache refuses the config ({me})"
        if v.get("error") and "Torch not compiled with CUDA enabled" in v["error"]:
            return STALE_CUDA
        if v.get("error") and m.get("error") and "registered from" in m["error"]:
            return "architecture not registered in this release (both refuse: vLLM at the config, mcache by registry)"
        if ve == "architecture refused" or (v.get("error") and "0.23.0" in v.get("error", "")):
            return "architecture removed from vLLM 0.33 (it refuses; mcache sizes it)"
        if ve == "max_model_len above the config's":
            return "vLLM refuses max_model_len above the config's limit (mcache does not check)"
        if v.get("error") and ("contains custom code" in v["error"] or "has model type" in v["error"]):
            return STALE_REMOTE_CODE
        if ve and ve.startswith(("StrictDataclass", "ValidationError", "TypeError", "ValueError", "KeyError")) and not me:
            return f"vLLM/transformers refuses the config ({ve})"
        if me and not ve:
            return f"only mcache errs ({me})"
        if ve and not me:
            return f"only vLLM errs ({ve})"
        return f"both err, differently (vLLM {ve} / mcache {me})"
    spec = m.get("spec")
    k = flags["num_speculative_tokens"]
    if flags.get("max_model_len") is None:
        return "config without a length key (vLLM derives one; mcache assumes 8192)"
    if flags.get("mamba_cache_mode") == "all" and m.get("mamba_cache_mode") == "all":
        return ("mamba_cache_mode all (vLLM 0.33 falls back to align; mcache keeps 'all' for the architectures "
                "that had SupportsMambaPrefixCaching in 0.31)")
    if flags["mamba_ssm_cache_dtype"] != "auto" and getattr(spec, "kda", None) is not None and field in (
            "state_page_bytes", "state_page_padded_bytes", "attention_block_size", "num_blocks", "error"):
        return (f"mamba_ssm_cache_dtype {flags['mamba_ssm_cache_dtype']} on KDA layers (vLLM applies it to the KDA "
                "state; mcache keeps KDA's state float32)")
    if k and getattr(spec, "short_conv", None) is not None:
        return "speculative tokens on short conv (vLLM 0.33 grows its conv window by k rows; mcache does not)"
    if k and getattr(spec, "mtp", None) is not None:
        return STALE_MTP
    if v.get("num_prefill_checkpoint_blocks") and spec is not None and getattr(spec, "gdn", None) is None and \
            v.get("mamba_cache_mode") == "align":
        return ("prefill-checkpoint block for non-GDN Mamba layers in align mode (vLLM 0.33 adds 1 block per "
                "request to every Mamba group; mcache only for GDN-only models)")
    if q.get("kv_cache_scheme"):
        return f"config's kv_cache_scheme ({q['kv_cache_scheme'].get('type', '?')}{q['kv_cache_scheme'].get('num_bits', '')})"
    if flags["kv_cache_dtype"] != "auto":
        return f"kv_cache_dtype {flags['kv_cache_dtype']}"
    if k:
        return "speculative tokens"
    if flags["mamba_ssm_cache_dtype"] != "auto":
        return f"mamba_ssm_cache_dtype {flags['mamba_ssm_cache_dtype']}"
    if flags["tensor_parallel_size"] > 1:
        return "tensor parallel > 1"
    return "other"


def compare_case(configs: Path, case: dict, version: str | None = None,
                 device: dict | None = None) -> list[tuple[str, object, object, str | None]]:
    """Each compared field of one case at vLLM `version`: (field, vLLM's value, mcache's, the mismatch cause or None
    when they match). A refusal before sizing on either side compares only the error field."""
    v, m = vllm_case(case), mcache_case(configs, case, version, device)
    rows = []
    for field in FIELDS:
        if field != "error" and not (figures(v) and figures(m)):
            continue
        if field == "stage_group_sizes" and v.get(field) is None and m.get(field) is None:  # not a PP case
            continue
        vv, mv = v.get(field), m.get(field)
        rows.append((field, vv, mv, None if same(field, vv, mv) else causes(configs, case, v, m, field)))
    return rows


def short(value) -> str:
    if isinstance(value, str):
        return value if len(value) <= 140 else value[:137] + "..."
    return json.dumps(value)


def flag_text(flags: dict) -> str:
    names = {"tensor_parallel_size": "tp", "pipeline_parallel_size": "pp", "max_model_len": "len", "kv_cache_memory_bytes": "kvmem",
             "num_speculative_tokens": "k", "mamba_ssm_cache_dtype": "ssm", "kv_cache_dtype": "kv",
             "enable_prefix_caching": "prefix", "mamba_cache_mode": "mode"}
    parts = []
    for key, value in flags.items():
        if key == "kv_cache_memory_bytes":
            value = f"{value >> 30}GiB" if value >= 1 << 30 else f"{value >> 20}MiB"
        parts.append(f"{names.get(key, key)}={value}")
    return " ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--configs", type=Path, default=ROOT / "tests" / "data" / "hf_configs",
                        help="the table's HF configs (tests/data/hf_configs_extra for an extra table)")
    parser.add_argument("--out", type=Path, help="also write the summary (markdown) here")
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    table = golden.read(args.table)
    cases = table["cases"]
    matches: Counter = Counter()
    compared: Counter = Counter()
    by_cause: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    case_causes: Counter = Counter()
    for case in cases:
        worst = None
        for field, vv, mv, cause in compare_case(args.configs, case, table["version"], table.get("device")):
            compared[field] += 1
            if cause is None:
                matches[field] += 1
            else:
                by_cause[field][cause].append((case, vv, mv))
                worst = worst or cause
        if worst:
            case_causes[worst] += 1
    lines = [f"# {table['engine']} {table['version']} (golden table) vs mcache's profile", "",
             f"Table: `{args.table.relative_to(ROOT) if args.table.is_relative_to(ROOT) else args.table}` "
             f"({len(cases)} cases, {len({c['config'] for c in cases})} configs); GPU assumed: {table.get('gpu_assumed')}.",
             "mcache: `mcache/core/engines/vllm.py` via `run_engine('vllm', EngineInputs(...))` on the spec "
             "`load_spec(<HF config>)` imports, with the case's flags, an H200 (143771140096 bytes) and weights_bytes 0 "
             "(kv_cache_memory_bytes is given, so weights do not enter).",
             "The error field is compared on every case; the other fields only where both sides sized the case (a "
             "refusal before sizing on either side counts under error only); errors are compared by class (e.g. "
             "'max_model_len above the config's'), a one-request memory refusal word for word (its figures, the "
             "max model length, GiB needed, GiB available and estimated maximum length, in the release's words); "
             "max_concurrency to 0.01.",
             "", "## Match rate per field", "", "| field | compared | match | rate |", "| --- | ---: | ---: | ---: |"]
    for field in FIELDS:
        n, k = compared[field], matches[field]
        lines.append(f"| {field} | {n} | {k} | {100 * k / n if n else 0:.1f}% |")
    all_ok = sum(1 for c in cases) - sum(case_causes.values())
    lines += ["", f"Cases matching on every field: {all_ok} of {len(cases)}.", "",
              "## Cases by first mismatch cause", "", "| cause | cases |", "| --- | ---: |"]
    for cause, n in case_causes.most_common():
        lines.append(f"| {cause} | {n} |")
    lines += ["", "## Mismatches per field, by likely cause", ""]
    for field in FIELDS:
        if field not in by_cause:
            continue
        lines.append(f"### {field} ({compared[field] - matches[field]} mismatches)")
        lines.append("")
        for cause, items in sorted(by_cause[field].items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- **{cause}**: {len(items)}")
            shown, configs_seen = [], set()  # examples from distinct configs first
            for item in items:
                if item[0]["config"] not in configs_seen:
                    configs_seen.add(item[0]["config"])
                    shown.append(item)
            shown += [item for item in items if item not in shown]
            for case, vv, mv in shown[: args.examples]:
                lines.append(f"  - `{case['config']}` {flag_text(case['flags'])}: vLLM {short(vv)} / mcache {short(mv)}")
        lines.append("")
    lines += ["## What the oracle stands in for (from the table's `mocks`)", ""]
    lines += [f"- {mock}" for mock in table.get("mocks", [])]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
