"""`mcache explain`'s output: what the log says, what mcache was fed, each figure beside mcache's, the lines mcache
would print, and the what-if; as a table, markdown, CSV or JSON."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import asdict

from mcache.cli.engine_output import engine_headline
from mcache.cli.output import emit_json, emit_text, human_bytes, markdown_table, print_blocks, safe_text, text_table
from mcache.core.engines import TITLES
from mcache.core.explain import NOT_MODELLED

SCHEMA_VERSION = 1
HEAD = ("figure", "line", "process", "engine", "mcache", "verdict")


def emit_explanation(x, source: str, origin: str, fmt: str, output: Path | None) -> None:
    """Render an `Explanation` of the log `source` (the model from `origin`) in `fmt`."""
    if fmt == "json":
        emit_json(explanation_json(x, source, origin), output)
    elif fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(HEAD)
        writer.writerows(_rows(x))
        emit_text(buf.getvalue(), output)
    elif fmt == "markdown":
        parts = [f"### {_title(x, source, origin)}", "", *(f"- {line}" for line in _read_lines(x)), "",
                 markdown_table(HEAD, _rows(x)), "", _summary(x), *_whatif_lines(x)]
        emit_text("\n".join(parts) + "\n", output)
    else:
        print_blocks(_blocks(x, source, origin), output)


def explanation_json(x, source: str, origin: str) -> dict:
    log = x.log
    return {
        "schema_version": SCHEMA_VERSION,
        "log": {"file": source, "engine": log.engine, "version": log.version, "version_line": log.version_line,
                "model": log.model, "architecture": log.architecture, "tp": log.tp, "pp": log.pp, "dp": log.dp,
                "attention_dp": log.attention_dp,
                "settings": log.settings, "setting_lines": log.setting_lines, "other_settings": log.other_settings,
                "measured": [asdict(m) for m in log.measured], "figures": [asdict(p) for p in log.figures],
                "lines": log.lines, "processes": log.processes},
        "model": origin,
        "engine_version": x.version,
        "fed": x.fed,
        "fed_from": x.fed_from,
        "not_read": x.ignored,
        "given": x.filled,
        "comparisons": [asdict(c) for c in x.comparisons],
        "findings": len(x.findings),
        "notes": x.notes,
        "weight_format": x.weight_format,
        "weights_from": x.weights_from,
        "engine": x.report["engine"],
        "whatif": None if x.whatif is None else {"options": x.whatif_options, "engine": x.whatif["engine"],
                                                 "headline": engine_headline(x.whatif), "largest": x.whatif_largest},
    }


def _title(x, source: str, origin: str) -> str:
    log, eng = x.log, x.report["engine"]
    lay = x.report["layout"]
    said = f"{log.version}" if log.version else "(version not in the log)"
    return (f"{TITLES[log.engine]} {said} log {source} · sized as {TITLES[log.engine]} {eng['version']} · model "
            f"{x.report['model']['name']} ({origin}) · tp {lay['tp']} · pp {lay['pp']} · {log.lines} lines read")


def _read_lines(x) -> list[str]:
    log = x.log
    lines = []
    if log.settings:
        lines.append("settings in the log: " + ", ".join(f"{k}={_value(k, v)} (line {log.setting_lines.get(k, '-')})"
                                                          for k, v in log.settings.items()))
    if x.ignored or log.other_settings:
        shown = {**x.ignored, **{k: v for k, v in log.other_settings.items() if not isinstance(v, dict)}}
        if shown:
            lines.append("not read by mcache's profile: " + ", ".join(f"{k}={_value(k, v)}" for k, v in shown.items()))
    if x.filled:
        lines.append("given for what the log does not show: " + ", ".join(f"--{k.replace('_', '-')} {_value(k, v)}"
                                                                        for k, v in x.filled.items()))
    for setting, value in x.fed.items():
        lines.append(f"measured, fed as {setting} = {human_bytes(value)}: {x.fed_from[setting]}")
    return lines + ([x.weights_from] if x.weights_from else [])


SIZES = ("weights", "reserve", "kv_cache_memory", "free_memory_before_load")  # size options, in bytes


def _value(name: str, value) -> str:
    sized = name.endswith("_bytes") or name in SIZES
    return human_bytes(value) if sized and isinstance(value, int) else safe_text(str(value), one_line=True)


def _rows(x) -> list[list[str]]:
    return [[c.figure + (f" (stage {c.stage})" if c.stage else ""), str(c.line), c.process or "-", c.engine,
             c.mcache or "-", c.verdict + (f": {c.note}" if c.note else "")] for c in x.comparisons]


def _summary(x) -> str:
    counts: dict[str, int] = {}
    for c in x.comparisons:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    parts = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    findings = len(x.findings)
    if findings:
        verdict = f"{findings} finding{'s' if findings != 1 else ''}: mcache differs from the engine"
    elif all(c.verdict == NOT_MODELLED for c in x.comparisons):
        verdict = "no finding, and none confirmed: mcache reproduced none of the log's figures (the notes say what it lacks)"
    else:
        verdict = "no finding: every figure mcache models agrees"
    return f"{len(x.comparisons)} figures compared ({parts}); {verdict}"


def _whatif_lines(x) -> list[str]:
    if x.whatif is None:
        return []
    given = " ".join(f"--{k.replace('_', '-')} {_value(k, v)}" for k, v in x.whatif_options.items())
    lines = [f"what-if ({given}; the measured memory kept): {engine_headline(x.whatif)}"]
    lines += [f"the largest --{k.replace('_', '-')} that starts with the same memory: {_value(k, v)}"
              for k, v in x.whatif_largest.items()]
    return lines


def _blocks(x, source: str, origin: str) -> list:
    eng = x.report["engine"]
    title = TITLES[eng["name"]]
    table = text_table(HEAD, _rows(x), lambda i, head: head in ("line", "engine", "mcache"), drop=("process", "line"))
    blocks: list = [_title(x, source, origin), *_read_lines(x), table, _summary(x)]
    blocks += [f"note: {n}" for n in x.notes]
    blocks += [f"note: {eng['version_note']}"] if eng["version_note"] else []
    blocks += [f"caveat: {c}" for c in eng["caveats"]]
    blocks.append(engine_headline(x.report))
    for st in eng["stages"]:
        if st["log"]:
            where = f" (stage {st['stage']})" if len(eng["stages"]) > 1 else ""
            blocks.append(f"{title} {eng['version']} as mcache sizes it would log{where}:")
            blocks += [f"  {line}" for line in st["log"]]
    if x.whatif is not None:
        blocks += ["", *_whatif_lines(x)]
        for st in x.whatif["engine"]["stages"]:
            blocks += [f"  {line}" for line in st["log"]]
    return blocks
