"""`mcache size`'s report as a table, markdown or CSV: the cache components, the capacity, the misfit line, the
transfer plan (`engine_output` renders the `--engine` part)."""

from __future__ import annotations

from pathlib import Path

from mcache.cli.engine_output import engine_blocks, engine_headline, engine_misfit, per_replica
from mcache.cli.output import NO_GPU_HINT, emit_json, emit_text, human_bytes, markdown_table, print_blocks, text_table
from mcache.core.engines import TITLES


def emit_report(report: dict, fmt: str, output: Path | None) -> None:
    """Render a `mcache size` report in `fmt` to stdout or `output`."""
    if fmt == "json":
        emit_json(report, output)
    elif fmt == "csv":
        emit_text(_size_csv(report), output)
    elif fmt == "markdown":
        emit_text(_size_markdown(report), output)
    else:
        print_blocks(_size_tables(report), output)


def _component_rows(report: dict) -> list[tuple[int, dict]]:
    return [(r["stage"], c) for r in report["ranks"] for c in r["components"]]


_COMPONENT_HEAD = ("stage", "component", "kind", "buffer", "layers", "per", "dtype", "shape", "bytes/unit", "units", "total")


_CAPACITY_HEAD = ("stage", "weights", "cache budget", "fixed", "KV budget", "KV tokens", "max seqs", "binds",
                  "if slots resized", "max context")


CAPACITY_LEGEND = ("fixed: bytes that are not KV (state slots, scratch, per-rank buffers) · binds: what stops more sequences "
                   "· if slots resized: sequences that fit if the state pool held one slot per sequence")


def _component_cells(stage: int, c: dict, human: bool) -> list[str]:
    size = human_bytes if human else str
    shape = "x".join(map(str, c["shape"])) or "1"
    if c["tokens_per_row"] > 1:  # a row shared by tokens: bytes/unit is a token's share
        shape += f" per {c['tokens_per_row']}"
    return [str(stage), c["component"], c["kind"] or "-", c["name"], str(c["layers"]), c["per"], c["dtype"], shape,
            size(c["bytes_per_unit"]), str(c["units"]), size(c["total_bytes"])]


def _capacity_cells(report: dict, cap: dict, human: bool) -> list[str]:
    size = human_bytes if human else str
    return [str(cap["stage"]), size(cap["weight_bytes"]), size(cap["cache_budget_bytes"]), size(cap["fixed_bytes"]),
            size(cap["kv_budget_bytes"]), "-" if cap["kv_tokens"] is None else str(cap["kv_tokens"]),
            str(cap["max_sequences"]), cap["binding"],
            "unbounded" if cap["sequences_if_resized"] is None else str(cap["sequences_if_resized"]),
            "unbounded" if cap["max_context"] is None else str(cap["max_context"])]


def _headline(report: dict) -> str:
    m, lay, rt = report["model"], report["layout"], report["runtime"]
    spec = f" · {rt['spec_scheme']} x{rt['draft_tokens']}" if rt["draft_tokens"] else ""
    weights = (f"weights unknown: {', '.join(m['weights_unknown'])}" if m["weights_unknown"] else
               f"{m['param_count'] / 1e9:.2f} billion params, {human_bytes(m['param_bytes'])} {m['weight_format']}"
               + (_drafter(m["drafter"]) if m.get("drafter") else f", MTP layers {m['mtp_param_count'] / 1e9:.2f} billion "
                  "more when drafting" if m.get("mtp_param_count") else ""))
    if m.get("stored_bytes_index"):
        weights += f"; {human_bytes(m['stored_bytes_index'])} in its safetensors index"
    return (f"{m['name']} ({weights}) · tp {lay['tp']} · "
            f"pp {lay['pp']}{_attention_dp(lay)} · max batch {rt['max_batch']} · "
            f"max seq {rt['max_seq_len']} · KV {_dt(report, 'kv')} · conv {_dt(report, 'conv')} · state {_dt(report, 'ssm')}{spec}")


def _drafter(d: dict) -> str:
    """`, drafter DFlashDraftModel (5 layers, 4 windowed) 1.73 billion more when drafting`."""
    windowed = sum(w is not None for w in d["windows"])
    return (f", drafter {d['architecture']} ({d['num_layers']} layers{f', {windowed} windowed' if windowed else ''}) "
            f"{d['param_count'] / 1e9:.2f} billion more when drafting")


def _attention_dp(layout: dict) -> str:
    """` · attention-DP` (of width tp), ` · attention-DP 2` (narrower), or nothing without it."""
    if not layout["attention_dp"]:
        return ""
    size = layout.get("attention_dp_size")
    return " · attention-DP" + (f" {size}" if size not in (None, layout["tp"]) else "")


def _dt(report: dict, role: str) -> str:
    source = report.get("dtype_sources", {}).get(role)
    return f"{report['dtypes'][role]} ({source})" if source else report["dtypes"][role]


def _per_rank_lines(report: dict) -> list[str]:
    lines = []
    for r in report["ranks"]:
        counts = ", ".join(f"{n} {k}" for k, n in r["layer_counts"].items()) or "no layers"
        lines.append(
            f"stage {r['stage']}: layers {r['layers'][0]}-{r['layers'][1] - 1} ({counts}) · {r['slots']} slots · "
            f"KV {human_bytes(r['kv_bytes_per_token'])}/token · state {human_bytes(r['state_bytes_per_slot'])}/slot "
            f"(conv {human_bytes(r['conv_bytes_per_slot'])}, SSM {human_bytes(r['ssm_bytes_per_slot'])}) · "
            f"cache {human_bytes(r['cache_bytes'])} · weights "
            + ("unknown" if r["weight_bytes"] is None else human_bytes(r["weight_bytes"]))
            + (" · tightest" if len(report["ranks"]) > 1 and r["stage"] == report["tightest_stage"] else "")
        )
    return lines


def _capacity_title(cap: dict) -> str:
    return (f"Capacity per rank on {cap['gpu']} ({human_bytes(cap['gpu_bytes'])}, utilization {cap['utilization']}, "
            f"reserve {human_bytes(cap['reserve_bytes'])}): max seqs at context {cap['context']}, "
            f"max context at {cap['concurrency']} seqs; tightest stage {cap['tightest_stage']}")


def no_capacity_hint(report: dict) -> str:
    """Why there is no capacity section: no GPU, or weights mcache cannot estimate."""
    unknown = report["model"]["weights_unknown"]
    if not unknown:
        return NO_GPU_HINT
    return (f"no capacity section: the weights are unknown (the spec leaves {', '.join(unknown)} null); give the "
            "weights one rank loads with --weights (e.g. --weights 16GiB) and a GPU with --gpu")


def capacity_headline(report: dict) -> str | None:
    """The one line a script greps: how many sequences of the context fit per replica (a rank's under attention DP
    too), and what binds."""
    cap = report["capacity"]
    if not cap:
        return None
    c = cap["ranks"][cap["tightest_stage"]]
    pool = report["runtime"]["max_batch"] * report["layout"]["pp"]
    per_seq = (f"{human_bytes(c['kv_bytes_per_sequence'])} of KV and {human_bytes(c['state_bytes_per_sequence'])} "
               "of state per sequence")
    binding = c["binding"]
    if c["max_sequences"] == 0:
        why = "does not fit: " + _misfit_reason(report, c)
    elif binding in ("KV", "state") and cap["slots_from_memory"]:
        why = f"{binding}-bound: {per_seq}"
    elif binding == "KV":
        why = f"KV-bound: {human_bytes(c['kv_budget_bytes'])} of KV budget, {human_bytes(c['kv_bytes_per_sequence'])} per sequence"
    else:
        resized = c["sequences_if_resized"]
        why = f"bound by --max-batch: {pool} slots; memory would hold {'any number' if resized is None else resized}"
    stages = f" (stage {c['stage']} of {len(cap['ranks'])})" if len(cap["ranks"]) > 1 else ""
    replica = per_replica(report["layout"], cap["max_sequences"], cap["attention_dp_ranks"], c["max_sequences"])
    return (f"mcache's neutral model fits {cap['max_sequences']} sequences of {cap['context']} tokens "
            f"{replica}{stages} on {cap['gpu']} ({why})")


def engines_line(report: dict) -> str | None:
    """The line beside the neutral figure: each engine's run with its defaults, or why it would not start."""
    engines = (report["capacity"] or {}).get("engines")
    if not engines:
        return None
    context = report["capacity"]["context"]
    parts = [f"{TITLES[e['name']]} {e['version']}: " + (f"does not start: {e['startup_error']}" if e["startup_error"] else
                                                        f"{e['max_running_requests']} ({_split(e)}{e['binding']})")
             + (f" at its max model length of {e['context']} tokens" if e.get("context", context) != context else "")
             for e in engines]
    return "engines (their defaults): " + " · ".join(parts)


def _split(engine: dict) -> str:
    """`4 × 101, ` where the engine's replica runs its attention-DP ranks' own batches, else nothing."""
    ranks = engine["attention_dp_ranks"]
    return f"{ranks} × {engine['max_running_requests_per_rank']}, " if ranks > 1 else ""


def _misfit_reason(report: dict, c: dict) -> str:
    cap = report["capacity"]
    weights = c["weight_bytes"]
    if c["cache_budget_bytes"] < 0:
        usable = int(cap["gpu_bytes"] * cap["utilization"]) - cap["reserve_bytes"]
        return (f"the weights ({human_bytes(weights)} per rank) exceed the {human_bytes(usable)} usable "
                f"({cap['utilization']:g} of {human_bytes(cap['gpu_bytes'])} less {human_bytes(cap['reserve_bytes'])} reserve)")
    if c["kv_budget_bytes"] < 0:
        return (f"the fixed buffers ({human_bytes(c['fixed_bytes'])}) exceed the {human_bytes(c['cache_budget_bytes'])} "
                "left after weights")
    return (f"one sequence of {cap['context']} tokens needs {human_bytes(c['kv_bytes_per_sequence'])} of KV and "
            f"{human_bytes(c['state_bytes_per_sequence'])} of state, {human_bytes(c['kv_budget_bytes'])} is left")


def does_not_fit(report: dict, smallest, longest: int | None = None) -> Exception:
    """The exit-3 line: what does not fit, the smallest layout (a `ParallelLayout`, or None) that does, and with an
    engine the longest max model length (`longest`, None: none shorter) that starts on this layout."""
    from mcache.core.deployment import MAX_LAYOUT_GPUS
    from mcache.core.errors import DoesNotFit

    cap, lay, eng = report["capacity"], report["layout"], report.get("engine")
    gpu = f"on {cap['gpu']}" if cap else "in the given KV cache memory"
    where = f"{report['model']['name']} does not fit {gpu} at --tp {lay['tp']} --pp {lay['pp']}"
    if eng:
        where, reason = engine_misfit(report, where)
    else:
        reason = _misfit_reason(report, cap["ranks"][cap["tightest_stage"]])
    if smallest is None:
        hint = f"no layout of up to {MAX_LAYOUT_GPUS} GPUs (TP x PP) fits" + (" with these settings" if eng else "")
    else:
        hint = f"it fits at --tp {smallest.tp}" + (f" --pp {smallest.pp}" if smallest.pp > 1 else "")
    if eng and longest:
        from mcache.core.engines.options import setting_of

        setting = "--" + setting_of(eng["name"], "max_seq_len").replace("_", "-")
        hint += f"; at --tp {lay['tp']} --pp {lay['pp']} it starts with {setting} {longest} (and a context up to it)"
    return DoesNotFit(f"{where}: {reason.rstrip('.')}; {hint}")  # the engine's sentence, joined to the hint


def not_loaded(report: dict, why: str, loaders: list[str]) -> Exception:
    """The exit-3 line of a model the engine cannot load: the engine's words and the engines (releases) that can."""
    from mcache.core.errors import DoesNotFit

    eng = report["engine"]
    serving = f"it loads on {'; '.join(loaders)}" if loaders else "no engine release mcache models loads it"
    why = why[:-1] if why.endswith(".") else why
    return DoesNotFit(f"{report['model']['name']} cannot be loaded by {TITLES[eng['name']]} {eng['version']}: {why}; "
                      f"{serving}")


def _size_tables(report: dict):
    comps = text_table(_COMPONENT_HEAD, [_component_cells(stage, c, human=True) for stage, c in _component_rows(report)],
                        lambda i, head: i >= 8 or head == "layers", drop=("buffer", "dtype", "per", "kind", "shape"))
    notes = " ".join(report["model"].get("notes", "").split())
    blocks: list = [_headline(report), comps, *_per_rank_lines(report), *([f"notes: {notes}"] if notes else [])]
    cap = report["capacity"]
    if report.get("engine"):
        blocks += ["", *engine_blocks(report)]
    elif cap:
        table = text_table(_CAPACITY_HEAD, [_capacity_cells(report, c, human=True) for c in cap["ranks"]],
                            lambda i, head: head != "binds", drop=("cache budget", "weights", "KV tokens", "fixed"))
        blocks += ["", _capacity_title(cap), table, CAPACITY_LEGEND, capacity_headline(report)]
        blocks += [line for line in (engines_line(report),) if line]
    else:
        blocks.append(no_capacity_hint(report))
    if report.get("transfer"):
        blocks += ["", *transfer_blocks(report["transfer"])]
    return blocks


_TRANSFER_HEAD = ("sender", "receiver", "buffer", "layers", "rows (global)", "bytes", "pieces")


def _spans_text(spans: list[dict]) -> str:
    return ", ".join(f"{s['section']} {s['start']}-{s['start'] + s['rows']}" if s["section"] != "all"
                     else f"{s['start']}-{s['start'] + s['rows']}" for s in spans)


def transfer_blocks(plan: dict) -> list:
    """The transfer plan of `mcache size --transfer-to-tp`: one row per buffer of each rank pair, then the totals."""
    groups = [f"{side}'s ranks 0-{plan[f'{side}_group_ranks'] - 1} of each stage" for side in ("sender", "receiver")
              if plan[f"{side}_group_ranks"] < plan[f"{side}_tp"]]
    title = (f"transfer of one request: tp {plan['sender_tp']} x pp {plan['sender_pp']} -> tp {plan['receiver_tp']} x pp "
             f"{plan['receiver_pp']}"
             + (f" · in the first attention-DP group ({', '.join(groups)}; other groups' alike)" if groups else "")
             + f" · KV at {plan['context']} tokens in blocks of {plan['tokens_per_block']} · pieces: "
             "contiguous runs in layer-major pools (state: per layer; KV: per layer and block, per token where heads are cut)")
    rows = [[str(pair["sender"]), str(pair["receiver"]), part["buffer"], str(len(part["layers"])), _spans_text(part["spans"]),
             human_bytes(part["bytes"]), str(part["pieces"])] for pair in plan["pairs"] for part in pair["parts"]]
    table = text_table(_TRANSFER_HEAD, rows, lambda i, head: head in ("layers", "bytes", "pieces"))
    pairs = "; ".join(f"{p['sender']}->{p['receiver']}: state {human_bytes(p['state_bytes'])}, KV {human_bytes(p['kv_bytes'])}, "
                      f"{p['pieces']} pieces" for p in plan["pairs"])
    total = (f"per request: state {human_bytes(plan['state_bytes'])}, KV {human_bytes(plan['kv_bytes'])}, "
             f"{plan['pieces']} pieces over {len(plan['pairs'])} rank pairs ({pairs})")
    return [title, table, total]


def _size_markdown(report: dict) -> str:
    parts = [f"### {_headline(report)}", "", *(f"- {line}" for line in _per_rank_lines(report)), "",
             markdown_table(_COMPONENT_HEAD, [_component_cells(s, c, human=True) for s, c in _component_rows(report)])]
    cap = report["capacity"]
    if cap:
        parts += ["", f"**{_capacity_title(cap)}**", "",
                  markdown_table(_CAPACITY_HEAD, [_capacity_cells(report, c, human=True) for c in cap["ranks"]]),
                  "", CAPACITY_LEGEND, "", capacity_headline(report)]
        parts += [line for line in (engines_line(report),) if line]
    if report.get("engine"):
        parts += ["", engine_headline(report)]
    elif not cap:
        parts += ["", no_capacity_hint(report)]
    return "\n".join(parts) + "\n"


def _size_csv(report: dict) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(_COMPONENT_HEAD)
    for stage, c in _component_rows(report):
        writer.writerow(_component_cells(stage, c, human=False))
    if report["capacity"]:  # the capacity table too, after a blank line, in bytes as the components are
        writer.writerow([])
        writer.writerow(_CAPACITY_HEAD)
        for cap in report["capacity"]["ranks"]:
            writer.writerow(_capacity_cells(report, cap, human=False))
    return buf.getvalue()
