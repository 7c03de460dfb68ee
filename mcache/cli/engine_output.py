"""The `--engine` part of `mcache size`'s table output: the engine's settings, its figures per stage, the headline a
script greps and the lines the engine would log."""

from __future__ import annotations

from mcache.cli.output import NO_GPU_HINT, human_bytes, text_table
from mcache.core.engines import TITLES


def _tightest(eng: dict) -> dict:
    """The stage that refuses to start, else the one that runs the fewest requests."""
    return min(eng["stages"], key=lambda st: (st["startup_error"] is None, st["max_running_requests"] or 0))


def engine_misfit(report: dict, where: str) -> tuple[str, str]:
    """(where, why) for the exit-3 line of an engine run that does not start or runs nothing."""
    eng = report["engine"]
    stage = _tightest(eng)
    return f"{where} under {TITLES[eng['name']]}", stage["startup_error"] or f"no sequence of {eng['context']} tokens fits"


def per_replica(layout: dict, sequences: int, ranks: int, per_rank: int) -> str:
    """"per replica (TP × PP = N GPUs)" for a replica that runs `sequences`, with the per-GPU figure where it spans
    more than one GPU, and under attention DP its `ranks` that each run `per_rank` (the report's figures)."""
    gpus = layout["tp"] * layout["pp"]
    if gpus == 1:
        return "per replica (TP × PP = 1 GPU)"
    split = f", attention DP: {ranks} × {per_rank}" if ranks > 1 else ""
    return f"per replica (TP × PP = {gpus} GPUs{split}; {round(sequences / gpus, 1):,g} per GPU)"


def engine_headline(report: dict) -> str:
    """The engine's one line at its version: what it runs at once at the context and what binds, or why it would not
    start."""
    eng, cap = report["engine"], report["capacity"]
    title = f"{TITLES[eng['name']]} {eng['version']}"
    stage = _tightest(eng)
    if stage["max_running_requests"] is None:
        return f"{title}: {NO_GPU_HINT} (the figures that need memory are left out)"
    where = f" (stage {stage['stage']})" if len(eng["stages"]) > 1 else ""
    gpu = f"on {cap['gpu']}" if cap else "in the given KV cache memory"
    if stage["startup_error"]:
        return f"{title} would not start {gpu}{where}: {stage['startup_error']}"
    replica = per_replica(report["layout"], eng["max_running_requests"], eng["attention_dp_ranks"],
                          eng["max_running_requests_per_rank"])
    return (f"{title} runs {eng['max_running_requests']} sequences of {eng['context']} tokens{_length_source(report)} "
            f"{replica}{where} {gpu} "
            f"({_engine_binding(eng['name'], stage)})")


def _length_source(report: dict) -> str:
    """`(the model's max length from its config, …)` when the engine took its max model length from the model's
    config and the sequences are that long; a given length, or one the engine assumed, says nothing here."""
    from mcache.core.engines.options import setting_of

    eng = report["engine"]
    setting = setting_of(eng["name"], "max_seq_len")
    from_config = eng["max_model_len"] == report["model"]["max_model_len"]
    if eng["sources"].get(setting) != "default" or not from_config or eng["context"] != eng["max_model_len"]:
        return ""
    return f" (the model's max length from its config, which {TITLES[eng['name']]} takes by default)"


def _engine_binding(name: str, st: dict) -> str:
    binding = st["binding"]
    if binding == "KV cache blocks":
        return (f"bound by KV cache blocks: {st['num_blocks']:,} blocks of {st['attention_block_size'] or '-'} tokens, "
                f"{st['blocks_per_request']} per request at the max model length")
    if binding == "state slots":
        return (f"bound by state slots: {st['max_mamba_cache_size']:,} slots, {st['state_slots_per_request']} per running "
                "request")
    if binding == "KV tokens" and name == "trtllm":
        fixed = f" left after the fixed cost of {st['fixed_state_slots']:,} state slots" if st["fixed_state_slots"] else ""
        return f"bound by KV tokens: {st['max_tokens']:,}{fixed}"
    if binding == "KV tokens" and st.get("cell_size_bytes") == 0:  # SGLang's pool for a model that keeps no KV
        return (f"bound by the token pool: {st['max_total_num_tokens']:,} tokens, the context length SGLang gives the pool "
                "of a model without attention, which runs half as many requests")
    if binding == "KV tokens":
        return f"bound by the token pool: {st['max_total_num_tokens']:,} tokens"
    return f"bound by {binding}"


def engine_blocks(report: dict) -> list:
    """The engine section of the table output: settings, its figures per stage, the headline and its log lines."""
    eng = report["engine"]
    title = TITLES[eng["name"]]
    marks = {"given": "", "default": ""}
    settings = ", ".join(f"{k}={_setting(k, v)}{marks.get(eng['sources'][k], '*')}" for k, v in eng["settings"].items())
    dt = eng["dtypes"]
    blocks: list = [f"{title} settings (* assumed: only the running engine measures it): {settings}",
                    f"{title} dtypes: KV {dt['kv']} · conv {dt['conv']} · state {dt['ssm']}"]
    skip = {"stage", "max_running_requests", "startup_error", "binding", "log"}
    names = [k for k in eng["stages"][0] if k not in skip]
    head = ("figure", *(f"stage {st['stage']}" for st in eng["stages"]))
    rows = [[name, *(_figure(name, st[name]) for st in eng["stages"])] for name in names]
    rows.append(["max_running_requests", *("-" if st["max_running_requests"] is None else str(st["max_running_requests"])
                                           for st in eng["stages"])])
    blocks += [text_table(head, rows, lambda i, h: i > 0), engine_headline(report)]
    blocks += [f"note: {eng['version_note']}"] if eng["version_note"] else []
    blocks += [f"caveat: {c}" for c in eng["caveats"]]
    for st in eng["stages"]:
        if st["log"]:
            blocks.append(f"{title} would log{_stage_note(st, eng)}:")
            blocks += [f"  {line}" for line in st["log"]]
    return blocks


def _stage_note(st: dict, eng: dict) -> str:
    return f" (stage {st['stage']})" if len(eng["stages"]) > 1 else ""


def _setting(name: str, value) -> str:
    if isinstance(value, list):
        return "/".join(_setting(name, v) for v in value)
    return human_bytes(value) if name.endswith("_bytes") and isinstance(value, int) else str(value)


def _figure(name: str, value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if name.endswith("_bytes") and isinstance(value, int):
        return human_bytes(value)
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
