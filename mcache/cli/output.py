"""Everything the CLI writes to stdout or to files goes through here (`engine_output`, `plan_output` and
`bench_output` hold the renderers of those commands): one renderer per format."""

from __future__ import annotations

import sys
from pathlib import Path

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int | None) -> str:
    """`39518208` -> `37.69 MiB` (binary units)."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{int(value)} B" if unit == 0 else f"{value:.2f} {_UNITS[unit]}"


def write_file(output: Path, text: str) -> None:
    """Write `text` to `output` atomically; a failure is one line naming the file."""
    from mcache.core.atomic import write_atomic
    from mcache.core.errors import McacheError

    try:
        write_atomic(output, text)
    except OSError as err:
        raise McacheError(f"{output}: output: a writable file path ({err.strerror or type(err).__name__})") from None


def emit_text(text: str, output: Path | None = None) -> None:
    """Write `text` to `output` atomically, or to stdout."""
    if output is not None:
        write_file(output, text if text.endswith("\n") else text + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


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
    return [str(stage), c["component"], c["kind"] or "-", c["name"], str(c["layers"]), c["per"], c["dtype"],
            "x".join(map(str, c["shape"])) or "1", size(c["bytes_per_unit"]), str(c["units"]), size(c["total_bytes"])]


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
               f"{m['param_count'] / 1e9:.2f} billion params, {human_bytes(m['param_bytes'])} {m['weight_format']}")
    return (f"{m['name']} ({weights}) · tp {lay['tp']} · "
            f"pp {lay['pp']}{' · attention-DP' if lay['attention_dp'] else ''} · max batch {rt['max_batch']} · "
            f"max seq {rt['max_seq_len']} · KV {_dt(report, 'kv')} · conv {_dt(report, 'conv')} · state {_dt(report, 'ssm')}{spec}")


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


def rich_table(head: tuple[str, ...], rows, right, drop: tuple[str, ...] = ()):
    """A rich table of `rows` under `head`; `right(i, name)` says which columns are right-aligned. On a page too
    narrow for it, the `drop` columns go first (least important first; `print_blocks` says which), and what
    still does not fit folds onto a second line: a cell is never cut short (`18.…`)."""
    from rich.table import Table

    table = Table()
    for i, name in enumerate(head):
        table.add_column(name, justify="right" if right(i, name) else "left", overflow="fold")
    for row in rows:
        table.add_row(*row)
    table.droppable = drop
    return table


def _fit(table, console) -> list[str]:
    """Remove the table's droppable columns until it fits the console's width; the names removed."""
    dropped, unbounded = [], console.options.update_width(1 << 16)  # measure the natural width, not the clamped one
    for name in getattr(table, "droppable", ()):
        if console.measure(table, options=unbounded).maximum <= console.width:
            break
        table.columns = [c for c in table.columns if c.header != name]
        dropped.append(name)
    return dropped


NO_GPU_HINT = "no capacity section: name a GPU with --gpu (e.g. --gpu h200) or its memory with --gpu-memory (e.g. 141GiB)"


def no_capacity_hint(report: dict) -> str:
    """Why there is no capacity section: no GPU, or weights mcache cannot estimate."""
    unknown = report["model"]["weights_unknown"]
    if not unknown:
        return NO_GPU_HINT
    return (f"no capacity section: the weights are unknown (the spec leaves {', '.join(unknown)} null); give the "
            "weights one rank loads with --weights (e.g. --weights 16GiB) and a GPU with --gpu")


def capacity_headline(report: dict) -> str | None:
    """The one line a script greps: how many sequences of the context fit per rank, and what binds."""
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
    return f"fits {c['max_sequences']} sequences of {cap['context']} tokens per rank{stages} on {cap['gpu']} ({why})"


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


def does_not_fit(report: dict, smallest) -> Exception:
    """The exit-3 line: what does not fit, and the smallest layout (a `ParallelLayout`, or None) that does."""
    from mcache.core.errors import DoesNotFit

    cap, lay, eng = report["capacity"], report["layout"], report.get("engine")
    gpu = f"on {cap['gpu']}" if cap else "in the given KV cache memory"
    where = f"{report['model']['name']} does not fit {gpu} at --tp {lay['tp']} --pp {lay['pp']}"
    if eng:
        from mcache.cli.engine_output import engine_misfit

        where, reason = engine_misfit(report, where)
    else:
        reason = _misfit_reason(report, cap["ranks"][cap["tightest_stage"]])
    if smallest is None:
        hint = "no layout of up to 8 GPUs fits" + (" with these settings" if eng else "")
    else:
        hint = f"it fits at --tp {smallest.tp}" + (f" --pp {smallest.pp}" if smallest.pp > 1 else "")
    return DoesNotFit(f"{where}: {reason}; {hint}")


def _size_tables(report: dict):
    comps = rich_table(_COMPONENT_HEAD, [_component_cells(stage, c, human=True) for stage, c in _component_rows(report)],
                        lambda i, head: i >= 8 or head == "layers", drop=("buffer", "dtype", "per", "kind", "shape"))
    notes = " ".join(report["model"].get("notes", "").split())
    blocks: list = [_headline(report), comps, *_per_rank_lines(report), *([f"notes: {notes}"] if notes else [])]
    cap = report["capacity"]
    if report.get("engine"):
        from mcache.cli.engine_output import engine_blocks

        blocks += ["", *engine_blocks(report)]
    elif cap:
        table = rich_table(_CAPACITY_HEAD, [_capacity_cells(report, c, human=True) for c in cap["ranks"]],
                            lambda i, head: head != "binds", drop=("cache budget", "weights", "KV tokens", "fixed"))
        blocks += ["", _capacity_title(cap), table, CAPACITY_LEGEND, capacity_headline(report)]
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
    title = (f"transfer of one request: tp {plan['sender_tp']} x pp {plan['sender_pp']} -> tp {plan['receiver_tp']} x pp "
             f"{plan['receiver_pp']} · KV at {plan['context']} tokens in blocks of {plan['tokens_per_block']} · pieces: "
             "contiguous runs in layer-major pools (state: per layer; KV: per layer and block, per token where heads are cut)")
    rows = [[str(pair["sender"]), str(pair["receiver"]), part["buffer"], str(len(part["layers"])), _spans_text(part["spans"]),
             human_bytes(part["bytes"]), str(part["pieces"])] for pair in plan["pairs"] for part in pair["parts"]]
    table = rich_table(_TRANSFER_HEAD, rows, lambda i, head: head in ("layers", "bytes", "pieces"))
    pairs = "; ".join(f"{p['sender']}->{p['receiver']}: state {human_bytes(p['state_bytes'])}, KV {human_bytes(p['kv_bytes'])}, "
                      f"{p['pieces']} pieces" for p in plan["pairs"])
    total = (f"per request: state {human_bytes(plan['state_bytes'])}, KV {human_bytes(plan['kv_bytes'])}, "
             f"{plan['pieces']} pieces over {len(plan['pairs'])} rank pairs ({pairs})")
    return [title, table, total]


def print_blocks(blocks: list, output: Path | None) -> None:
    """Print rich tables and plain lines (written as they are: no wrapping, no markup)."""
    from rich.console import Console

    buf = None
    if output is not None:
        import io

        buf = io.StringIO()
    # Piped output must not be cut at 80 columns: give rich a wide page when it is no terminal.
    width = None if buf is None and sys.stdout.isatty() else 240
    console = Console(file=buf, width=width, color_system=None if buf else "auto", highlight=False, markup=False, emoji=False)
    for block in blocks:
        if isinstance(block, str):
            console.out(block)
            continue
        dropped = _fit(block, console)
        console.print(block)
        if dropped:
            console.out(f"(left out for width: {', '.join(dropped)}; a wider terminal or --format json shows them)")
    if buf is not None:
        emit_text(buf.getvalue(), output)


def _markdown_table(head: tuple[str, ...], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _size_markdown(report: dict) -> str:
    parts = [f"### {_headline(report)}", "", *(f"- {line}" for line in _per_rank_lines(report)), "",
             _markdown_table(_COMPONENT_HEAD, [_component_cells(s, c, human=True) for s, c in _component_rows(report)])]
    cap = report["capacity"]
    if cap:
        parts += ["", f"**{_capacity_title(cap)}**", "",
                  _markdown_table(_CAPACITY_HEAD, [_capacity_cells(report, c, human=True) for c in cap["ranks"]]),
                  "", CAPACITY_LEGEND, "", capacity_headline(report)]
    if report.get("engine"):
        from mcache.cli.engine_output import engine_headline

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
    return buf.getvalue()


_VERDICT_MARK = {"regression": "❌ regression", "improvement": "✅ improvement"}
_COMPARE_HEAD = ("benchmark", "base (us)", "new (us)", "Δ%", "Δ eager", "Δ host", "verdict")


def _compare_cells(change) -> list[str]:
    def us(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:+.1f}%"

    verdict = _VERDICT_MARK.get(change.verdict, change.verdict)
    which = [name for name, v in change.verdicts.items() if v == change.verdict]
    if change.verdict in ("regression", "improvement", "slower", "faster") and which != ["device"]:
        verdict += f" ({', '.join(which)})"
    return [change.key, us(change.base_us), us(change.new_us), pct(change.delta_pct), pct(change.eager_delta_pct),
            pct(change.host_delta_pct), verdict]


def emit_comparison(comparison, fmt: str, output: Path | None) -> None:
    """Render a `mcache compare` result: a table, a Markdown table for PR comments, or JSON."""
    regressions = len(comparison.regressions)
    summary = (f"{comparison.new} vs {comparison.base}: {len(comparison.changes)} rows, {regressions} regression(s) "
               f"beyond {comparison.threshold_pct:g}%")
    if fmt == "json":
        import msgspec

        data = msgspec.to_builtins(comparison)
        data["regressions"] = regressions
        emit_json(data, output)
    elif fmt == "markdown":
        rows = [_compare_cells(c) for c in comparison.changes]
        notes = "".join(f"\n\nnote: {note}" for note in comparison.notes)
        emit_text(f"**{summary}**{notes}\n\n{_markdown_table(_COMPARE_HEAD, rows)}\n", output)
    else:
        table = rich_table(_COMPARE_HEAD, [_compare_cells(c) for c in comparison.changes], lambda i, head: 0 < i < 6)
        print_blocks([summary, *(f"note: {note}" for note in comparison.notes), table], output)


def emit_json(data, output: Path | None) -> None:
    """Write JSON-ready data (lists, dicts, msgspec structs) as indented, strict JSON."""
    from mcache.core.json_text import json_text

    emit_text(json_text(data), output)


_VERIFY_HEAD = ("stage", "buffer", "component", "estimated", "allocated", "difference")


def emit_verify(model: str, device: str, layout: str, rows, fmt: str, output: Path | None) -> None:
    """Render `mcache size --verify`: per buffer, the estimate, the bytes allocated and the difference."""
    bad = sum(1 for r in rows if r.difference)
    summary = (f"{model}: {len(rows)} buffers allocated on {device} ({layout}-major pools), "
               f"{'no differences' if not bad else f'{bad} differ'}")
    cells = [[str(r.stage), r.key, r.component, str(r.estimated), str(r.allocated), f"{r.difference:+d}"] for r in rows]
    if fmt == "json":
        emit_json({"model": model, "device": device, "pool_layout": layout, "differences": bad,
                   "rows": [dict(zip(_VERIFY_HEAD, (r.stage, r.key, r.component, r.estimated, r.allocated,
                                                    r.difference), strict=True)) for r in rows]}, output)
    elif fmt in ("markdown", "csv"):
        emit_text(f"**{summary}**\n\n{_markdown_table(_VERIFY_HEAD, cells)}" if fmt == "markdown"
                  else "\n".join(",".join(c) for c in [list(_VERIFY_HEAD), *cells]), output)
    else:
        table = rich_table(_VERIFY_HEAD, cells, lambda i, head: i >= 3)
        print_blocks([summary, table], output)
