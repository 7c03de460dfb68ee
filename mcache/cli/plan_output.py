"""`mcache plan`'s renderers: the ranked table, the best candidates with their settings, JSON, markdown, CSV."""

from __future__ import annotations

from math import ceil
from pathlib import Path

import msgspec

from mcache.cli.output import emit_json, emit_text, markdown_table, print_blocks, text_table
from mcache.core.engines import TITLES
from mcache.core.plan import Candidate, Plan, attention_dp_name
from mcache.core.spec.model import ModelSpec

# 2: replicas, solved settings and the decode roofline; 3: why a setting was solved for; candidates' attention_dp added
# since (optional to a reader of 3: without --attention-dp on, every candidate's is false and its figures are as before);
# 4: candidates' attention_dp_size, the attention-DP width (tp at full width, null without), with --attention-dp on also
# narrower than tp (SGLang, the neutral model), where a candidate's attention_dp alone no longer says how its replica runs
SCHEMA_VERSION = 4
HEAD = ("#", "gpu", "replicas", "tp", "pp", "gpus", "context", "KV", "state", "draft", "prefix", "fits", "seqs",
        "seqs/replica", "seqs/GPU", "tok/s/GPU<=", "TPOT ms>=", "state bytes", "binds", "start-up", "solved")
NUMERIC = ("#", "replicas", "tp", "pp", "attention DP", "gpus", "context", "seqs", "seqs/replica", "seqs/GPU", "tok/s/GPU<=",
           "TPOT ms>=", "state bytes")
ROOFLINE_NOTE = ("tok/s/GPU<= and TPOT ms>= are memory-roofline bounds (a decode step's bytes over the GPU's bandwidth, "
                 "no efficiency factor) at the sequences each replica runs; state bytes: the recurrent state's share")


def plan_json(result: Plan, model: ModelSpec, notes: tuple[str, ...] = ()) -> dict:
    """The `--format json` document (strict JSON: every figure is finite)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "mcache-plan",
        "notes": list(notes),
        "model": {"name": model.name, "source": model.source},
        "engine": result.engine,
        "target_concurrency": result.target,
        "max_gpus": result.max_gpus,
        "max_tpot_ms": result.max_tpot,
        "rank_by": result.rank_by,
        "nearest": msgspec.to_builtins(result.nearest),
        "best": msgspec.to_builtins(result.best),
        "best_by_gpu": msgspec.to_builtins(result.best_by_gpu),
        "candidates": msgspec.to_builtins(result.candidates),
        "skipped": result.skipped,
        "from_log": msgspec.to_builtins(result.from_log),
    }


def measured_line(result: Plan) -> list[str]:
    """What `--from-log` measured and which candidates it sized (none without a log)."""
    m = result.from_log
    if m is None:
        return []
    c = m.carried
    version = f", version {c.version}" if c.version else "; the log names no version: sized as the newest mcache models"
    used = sum(1 for x in result.candidates if x.measured)
    fed = "--reserve" if c.field == "reserve" else "the free memory before the weights load"
    return [f"measured by {m.log} ({TITLES[c.engine]} at tp {m.tp} pp {m.pp}{version}): non-KV memory {c.non_kv / (1 << 30):.2f} GiB = "
            f"{c.how}; fed as {fed} ({c.value / (1 << 30):.2f} GiB) to the {used} candidates on {m.gpu} "
            "(memory: measured); the others keep mcache's assumptions (memory: assumed)"]


def head(result: Plan) -> tuple[str, ...]:
    """The table's columns: `attention DP` (its width, or `no`) where a candidate has it, `memory` with `--from-log`."""
    dp = ("attention DP",) if _any_dp(result) else ()
    return HEAD[:HEAD.index("gpus")] + dp + HEAD[HEAD.index("gpus"):] + (("memory",) if result.from_log else ())


def _any_dp(result: Plan) -> bool:
    return any(c.attention_dp for c in result.candidates)


def _cells(i: int, c: Candidate, measured: bool = False, dp: bool = False) -> list[str]:
    draft = f"{c.draft} {c.spec_scheme}" if c.draft else "0"
    r = c.roofline
    bound = [f"{r.tokens_per_s_per_gpu:,.0f}", f"{r.tpot_ms:.2f}", f"{100 * r.state_share:.1f}%"] if r else ["-"] * 3
    return [str(i), c.gpu, str(c.replicas), str(c.tp), str(c.pp), *([str(c.attention_dp_size or "no")] if dp else []),
            str(c.gpus), str(c.context), c.kv_dtype, c.ssm_dtype,
            draft, c.prefix_caching, "yes" if c.fits else "no", str(c.sequences), str(c.sequences_per_replica),
            _per_gpu(c.sequences_per_gpu), *bound, c.binding, c.startup, c.solved or "-",
            *(["measured" if c.measured else "assumed"] if measured else [])]


def title(result: Plan, model: ModelSpec) -> str:
    """`<model> · <engine>`: what the plots and the table are of."""
    return f"{model.name} · {TITLES.get(result.engine, 'mcache neutral model')}"


def best(result: Plan) -> list[tuple[str, str | None]]:
    """(what it is, the settings to paste) of the best candidate and of the best of each other GPU kind; without
    one, why (and no settings)."""
    goal = f"run {result.target} sequences" if result.target else GOALS[result.rank_by]
    within = f" within {result.max_tpot:g} ms per output token" if result.max_tpot is not None else ""
    if result.best is None:
        if result.target and result.nearest is not None:
            n = result.nearest
            return [(f"no candidate can {goal}{within} on at most {result.max_gpus} GPUs; the fewest that can: "
                     f"{_describe(n, result.target)} (--max-gpus {n.gpus})", n.settings)]
        reasons = {c.startup for c in result.candidates}
        if result.engine and len(reasons) == 1 and reasons != {"starts"}:  # e.g. an architecture it does not load
            return [(f"no candidate starts: {TITLES.get(result.engine)} stops every one with \"{reasons.pop()}\"", None)]
        why = next((f" ({c.gpu} tp {c.tp} pp {c.pp}: {c.startup})" for c in result.candidates
                    if c.startup not in ("starts", "-")), "")
        if result.target or result.max_tpot is not None:
            return [(f"no candidate can {goal}{within}: no layout of up to --max-gpus GPUs runs a sequence of the "
                     "context" + (" within it" if within else "") + why, None)]
        return [(f"no candidate fits: no layout of up to --max-gpus GPUs holds the model and one sequence{why}", None)]
    found = [(f"best for {goal}{within}: {_describe(result.best, result.target)}", result.best.settings)]
    found += [(f"best on {gpu}: {_describe(c, result.target)}", c.settings) for gpu, c in result.best_by_gpu.items()
              if gpu != result.best.gpu]
    return found


def best_lines(result: Plan) -> list[str]:
    """`best` as lines: each description, its settings indented under it."""
    return [line for what, paste in best(result) for line in (what, *([f"  {paste}"] if paste else []))]


GOALS = {"gpus": "the fewest GPUs", "seqs-per-gpu": "the most sequences per GPU",
         "tokens-per-gpu": "the most tokens/s per GPU (roofline)"}


def _describe(c: Candidate, target: int | None = None) -> str:
    fleet = f"{c.replicas} replicas x " if c.replicas > 1 else ""
    dp = f" {attention_dp_name(c.tp, c.attention_dp_size)}" if c.attention_dp else ""
    text = (f"{c.gpus} x {c.gpu} ({fleet}tp {c.tp}{dp}, pp {c.pp}), KV {c.kv_dtype}, state {c.ssm_dtype} at {c.context} "
            f"tokens: {c.sequences} sequences ({c.sequences_per_replica} per replica, {_per_gpu(c.sequences_per_gpu)} per GPU, "
            f"bound by {c.binding})")
    if c.solved_for == "start-up":
        text += f"; starts with {c.solved} (not with the engine's defaults)"
    elif c.solved_for == "target":
        fleet = f": {ceil(target / c.default_sequences) * c.tp * c.pp} GPUs" if target and c.default_sequences else ""
        text += f"; runs with {c.solved} for the target (the engine's defaults run {c.default_sequences} per replica{fleet})"
    if c.roofline:
        r = c.roofline
        text += (f"; roofline at {r.sequences} per replica: <= {r.tokens_per_s_per_gpu:,.0f} tokens/s per GPU, "
                 f">= {r.tpot_ms:.2f} ms per token, state {100 * r.state_share:.1f}% of a step's bytes")
    if c.replicas > 1 and c.settings.startswith("{"):
        text += f"; TensorRT-LLM: start {c.replicas} replicas with these options"
    return text


def emit_plan(result: Plan, model: ModelSpec, fmt: str, output: Path | None, top: int, notes: tuple[str, ...] = ()) -> None:
    """Render the plan in `fmt` to stdout or `output`; `notes` (what the command was given besides the sweep) come
    after the title."""
    if fmt == "json":
        emit_json(plan_json(result, model, notes), output)
        return
    total = len(result.candidates)
    shown = total if fmt == "csv" else min(top, total)
    dp = _any_dp(result)  # once: a sweep may hold 10^5 candidates
    rows = [_cells(i, c, result.from_log is not None, dp) for i, c in enumerate(result.candidates[:shown], 1)]
    columns, measured = head(result), [*measured_line(result), *notes]
    more = [f"({total - shown} more candidates: --top, or --format json/csv for all)"] if shown < total else []
    skipped = [f"skipped: {s}" for s in result.skipped]
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([*columns, "settings"])
        writer.writerows(row + [c.settings] for row, c in zip(rows, result.candidates, strict=True))
        emit_text(buf.getvalue(), output)
    elif fmt == "markdown":
        table = markdown_table(columns, rows).splitlines()
        found = best(result)
        pastes = [paste for _, paste in found if paste]
        body = [f"### {title(result, model)}", "", *measured, *([""] if measured else []), *table, "", *more, *skipped,
                ROOFLINE_NOTE, "", found[0][0], "",
                *(["```sh", *pastes, "```"] if pastes else [])]
        emit_text("\n".join(body) + "\n", output)
    else:
        table = text_table(columns, rows, lambda i, head: head in NUMERIC,
                           drop=("prefix", "start-up", "draft", "fits", "state", "solved", "binds", "state bytes",
                                 "TPOT ms>="))
        print_blocks([title(result, model), *measured, table, *more, *skipped, ROOFLINE_NOTE, *best_lines(result)], output)


def _per_gpu(sequences: float) -> str:
    """Sequences a GPU, to two decimals without trailing zeros: `986`, `41.67` (`:g` cut 14,774,581 to 1.47746e+07)."""
    return f"{sequences:.2f}".rstrip("0").rstrip(".")
