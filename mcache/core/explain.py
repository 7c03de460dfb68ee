"""`mcache explain LOG`: a start-up log read back (`core/logs`) and the same deployment sized through the one path
(`deployment.size_deployment`, by way of `report.size_report`), with what the engine measured (its weights, its KV
budget, its free memory) fed in as the engine settings that stand for them in place of mcache's assumptions; then
each figure the engine printed beside mcache's, read from mcache's own log lines by the same reader.

A figure agrees when mcache prints the same text at the engine's rounding; when it does not, but lies between what
mcache prints with the measured inputs at either end of their printed rounding (`5.98 GiB`: 5.975 to 5.985 GiB), it
agrees within that rounding and says so; otherwise it differs, a finding. Nothing is adjusted to agree."""

from __future__ import annotations

import re
from math import ceil, isfinite
from typing import Any

from msgspec import Struct, field
from msgspec.structs import asdict, replace

from mcache.core.deployment import Deployment
from mcache.core.engines import TITLES
from mcache.core.engines.options import option_for
from mcache.core.errors import LayoutError
from mcache.core.logs import EngineLog, LogError, Measured, Printed, engine_module, figures_of
from mcache.core.logs.lines import ranks_of
from mcache.core.numbers import last_true
from mcache.core.options import SizeOptions
from mcache.core.report import size_report
from mcache.core.sizing.layout import ParallelLayout
from mcache.core.spec.model import MAX_INT, ModelSpec

AGREE, WITHIN, DIFFER, NOT_MODELLED = "agree", "agree within the measured inputs' rounding", "differ", "not modelled"
# An engine figure mcache's log lines may leave out, read from the run instead: key -> (where, name). A stage's
# field, or the settings of the run.
FALLBACK = {
    "vllm": {"mamba_cache_blocks": ("field", "num_blocks"), "attention_block_size": ("field", "attention_block_size"),
             "padding_layers": ("field", "padding_layers"), "state_page_padding_pct": ("field", "state_page_padding_pct")},
    "sglang": {"max_running_requests": ("field", "max_running_requests_logged"),
               "max_running_requests_capped": ("field", "max_running_requests_logged"),
               "max_mamba_cache_size": ("field", "max_mamba_cache_size"),
               "state_slots_per_request": ("field", "state_slots_per_request"),
               "max_total_num_tokens": ("field", "max_total_num_tokens")},
    "trtllm": {"max_tokens": ("field", "max_tokens")},
}
# Figures an engine prints once for each of several KV-cache specs: vLLM's padding of each spec's last group
PER_SPEC = ("padding_layers", "padding_waste_pct")
# How a measured figure of several ranks feeds one setting: the engines size every rank alike and agree on the
# smallest pool, so the smallest budget, the largest weights and the largest peak stand for all of them.
PICK = {"kv_cache_memory_bytes": min, "pre_model_load_memory_bytes": min, "weights_bytes": max, "peak_bytes": max}


class Comparison(Struct):
    """One figure the engine printed (`engine`, as printed) beside mcache's (`mcache`, at the engine's rounding;
    None: mcache's profile has no such figure), the verdict, the log line, the process and why where known."""

    figure: str
    engine: str
    mcache: str | None
    verdict: str
    line: int
    process: str | None = None
    stage: int = 0
    note: str | None = None


class Explanation(Struct):
    """A log explained: what was read, what mcache was given (`fed`: setting -> bytes, with `fed_from`), mcache's
    `mcache size --engine` report of the same deployment, each comparison, notes, the log's settings mcache's profile
    does not read (`ignored`), the what-if, and the format the weights were weighed as with where it came from
    (`weights_from`; None: the log states no quantization and none was given)."""

    log: EngineLog
    version: str | None
    fed: dict[str, int]
    fed_from: dict[str, str]
    report: dict
    comparisons: list[Comparison]
    notes: list[str] = field(default_factory=list)
    ignored: dict[str, Any] = field(default_factory=dict)
    filled: dict[str, Any] = field(default_factory=dict)  # options that completed the log's deployment (fields)
    whatif_options: dict[str, Any] = field(default_factory=dict)  # the options given on top (SizeOptions fields)
    whatif: dict | None = None  # the report with them applied (None: none given)
    whatif_largest: dict[str, int] = field(default_factory=dict)  # a what-if that does not start: the largest that does
    weight_format: str | None = None  # None: as the model says (its config's dtype, or the quantization it declares)
    weights_from: str | None = None

    @property
    def findings(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict == DIFFER]


def log_version(log: EngineLog) -> str | None:
    """The release a log's version names, as `--engine-version` takes it (`0.10.2.dev756+gfx906…` -> `0.10.2`,
    `0.20.2rc1.dev9+g01d4d1ad3` -> `0.20.2rc1`); None when the log names none. A build without a release tag
    (`0.1.devN`, vLLM's version of a source build) is a `LogError`: it names no release."""
    if log.version is None:
        return None
    plain = log.version.split("+")[0].lstrip("v")
    m = re.match(r"(\d+\.\d+(?:\.\d+)?(?:rc\d+)?)", plain)
    if m is None or re.fullmatch(r"0\.1\.dev\d+", plain):
        raise LogError(f"the log's {TITLES[log.engine]} version {log.version} names no release (a build from source); "
                       "give the release it was built from with --engine-version")
    return m[1]


# The options a log's setting must give a count of at least 1 (a block, a page, a length, a batch): what the engine's
# own argument checks hold it to before it sizes anything
POSITIVE_OPTIONS = ("max_seq_len", "block_size", "kernel_block_size", "max_batch", "max_num_seqs",
                    "max_num_batched_tokens", "max_running_requests", "max_total_tokens")
# ... and the fractions of GPU memory it must give in (0, 1]
FRACTION_OPTIONS = ("utilization", "mem_fraction_static", "free_gpu_memory_fraction")


def settings_options(log: EngineLog, measured: dict[str, int]) -> tuple[SizeOptions, dict[str, Any]]:
    """The `SizeOptions` that give mcache's profile the log's settings and measured figures (by the engine setting
    each stands for), and the settings mcache's profile does not read; a setting of the wrong type (or a count below
    1) is a `LogError` naming it and its line."""
    fields, ignored = {}, {}
    types = SizeOptions.__annotations__
    for setting, value in {**log.settings, **measured}.items():
        name = option_for(log.engine, setting)
        if name in SizeOptions.__struct_fields__:
            _check_logged(log, setting, value, types[name], name in POSITIVE_OPTIONS, name in FRACTION_OPTIONS)
            fields[name] = value
        else:
            ignored[setting] = value
    return SizeOptions(**fields), ignored


def _check_logged(log: EngineLog, setting: str, value, kind: str, positive: bool, fraction: bool = False) -> None:
    """Refuse a logged `setting` whose value is not of the option's type (`kind`, as annotated: `int | None`, ...)."""
    if value is None:
        return
    if kind.startswith("int"):
        ok = isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or not positive) and value <= MAX_INT
        wanted = ("a whole number of at least 1" if positive else "a whole number") + " up to 2**40"
    elif kind.startswith("float") and fraction:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1
        wanted = "a fraction in (0, 1]"
    elif kind.startswith("float"):
        ok = isinstance(value, int | float) and not isinstance(value, bool) and isfinite(value)
        wanted = "a finite number"
    elif kind.startswith("bool"):
        ok, wanted = isinstance(value, bool), "true or false"
    else:
        ok, wanted = isinstance(value, str), "a word"
    if not ok:
        line = log.setting_lines.get(setting)
        raise LogError(f"the log's {setting}{f' (line {line})' if line else ''}: {wanted}, got {str(value)[:40]!r}")


def measured_settings(log: EngineLog, shift: int = 0) -> tuple[dict[str, int], dict[str, str]]:
    """Each measured setting's bytes (the ranks' figures picked by `PICK`), moved by `shift` half-steps of its
    printed rounding, and the figures it came from."""
    by_setting: dict[str, list[Measured]] = {}
    for m in log.measured:
        by_setting.setdefault(m.setting, []).append(m)
    values, sources = {}, {}
    for setting, ms in by_setting.items():
        chosen = PICK.get(setting, min)(ms, key=lambda m: m.bytes)
        moved = chosen.bytes + shift * chosen.half_step
        # a rounding step does not take a figure below zero; vLLM's budget can be negative as measured (the weights
        # and activations took more than the utilization allows), and then stays so
        values[setting] = moved if chosen.bytes < 0 else max(0, moved)
        ranks = f" ({chosen.process})" if chosen.process else ""
        sources[setting] = f"{chosen.name} {chosen.shown}{ranks}, line {chosen.line}"
    return values, sources


def _size(spec: ModelSpec, log: EngineLog, d: Deployment, origin: str, shift: int, overrides: SizeOptions):
    """The report of the deployment with the measured figures moved by `shift` half-steps, and what was fed."""
    measured, sources = measured_settings(log, shift)
    peak = measured.pop("peak_bytes", None)
    options, ignored = settings_options(log, measured)
    given = {k: v for k, v in asdict(overrides).items() if v is not None}
    options = replace(options, **given)
    if peak is not None and options.reserve is None:
        # TensorRT-LLM's peak holds the weights and, for a manager that allocates its state as torch memory before the
        # KV budget is measured (engines/trtllm.py `OUTSIDE`), that state: the rest is the non-KV memory
        first = size_report(spec, replace(d, options=options), origin).data["engine"]
        weights = options.weights
        if weights is None:
            weights = first["settings"]["weights_bytes"]
            weights = weights if isinstance(weights, int) else max(weights)
        outside = max((0 if st.get("state_in_kv_budget", True) else st.get("fixed_cost_bytes") or 0)
                      for st in first["stages"])
        options = replace(options, reserve=max(0, peak - weights - outside))
        measured["non_kv_memory_bytes"] = options.reserve
        sources["non_kv_memory_bytes"] = sources.pop("peak_bytes") + " less the weights" + (
            f" and the {outside / (1 << 30):.2f} GiB of state allocated before profiling" if outside else "")
    report = size_report(spec, replace(d, options=options), origin).data
    return report, measured, sources, ignored


def weighed_by_log(log: EngineLog, spec: ModelSpec, given: SizeOptions) -> tuple[str | None, str | None]:
    """The weight format the log's deployment is weighed as (None: as the model says) and where it came from: the
    `weight_format` given, else the one the log's quantization method names (`EngineLog.weight_format`) for a model
    whose config declares none; given weights (`weights`) leave the method unweighed, and a method of several formats
    is said to be one."""
    stated = f"the log's quantization={log.quantization} (line {log.quantization_line})"
    if given.weight_format is not None:
        return given.weight_format, f"weights weighed as {given.weight_format}: given with --weight-format"
    if log.quantization is None:
        return None, None
    if given.weights is not None:
        return None, f"{stated} is not weighed: --weights gives the weights one rank loads"
    declared = spec.quantization.format if spec.quantization else None
    if declared is not None:
        return None, f"weights weighed as the model's config declares ({declared}); {stated} is not used"
    if log.weight_format is None:
        return None, (f"{stated} names the method, not the format its weights are stored in: weighed as the config's "
                      f"{spec.dtype}; give --weight-format to weigh them as stored")
    return log.weight_format, f"weights weighed as {log.weight_format}: {stated}"


def split_options(log: EngineLog, options: SizeOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fills, what-ifs) of the options given: one for a setting the log does not show completes the log's deployment
    (a setting its excerpt left out, the TP its processes do not show); one that changes a setting the log shows, or
    a figure the engine measured, is a what-if."""
    shown, _ = settings_options(log, measured_settings(log)[0])
    fills, whatifs = {}, {}
    for name, value in asdict(options).items():
        if value is None:
            continue
        logged = getattr(shown, name)
        if logged is None or logged == value:
            fills[name] = value
        else:
            whatifs[name] = value
    return fills, whatifs


def log_named(log: EngineLog) -> dict[str, str]:
    """How an error names each memory figure the log measured (`located`'s `named`, by the engine's setting and by the
    option that stands for it): by the log's own line, not by an option the user never typed (the sizing of the log's
    own deployment feeds them, whatever a what-if gives)."""
    _, sources = measured_settings(log)
    named = {setting: f"the log's {source}" for setting, source in sources.items()}
    return named | {option_for(log.engine, setting): text for setting, text in named.items()}


def _gist(error: str, most: int = 160) -> str:
    """A start-up error short enough for a table cell: whole words up to `most` characters, and an ellipsis where it
    goes on (the report prints it whole below the table)."""
    return error if len(error) <= most else error[:most].rsplit(" ", 1)[0] + " …"


def unread_notes(log: EngineLog) -> list[str]:
    """A note for each settings line of the log too odd to read (its settings are left out)."""
    return [f"the settings on line {n} are not a Python literal mcache reads (nested too deeply, or a number too long): "
            "they are left out, and options stand in for them" for n in log.unread_lines]


def explain(log: EngineLog, spec: ModelSpec, origin: str, layout: ParallelLayout, gpu: tuple[str, int] | None,
            version: str | None, options: SizeOptions | None = None, context: int | None = None) -> Explanation:
    """Size the deployment `log` shows with its measured memory and compare. `options` (of `mcache size --engine`) for
    settings the log does not show complete it; those that change a setting it shows, and a `context`, are sized
    again on top of the same measured memory (the what-if)."""
    notes = unread_notes(log)
    if not log.measured:
        notes.append(f"the log shows no measured memory ({_missing(log.engine)}): mcache's assumptions stand in for it")
    if log.version is None and version is None:
        notes.append(f"the log names no {TITLES[log.engine]} version: sized by the newest release mcache models; give "
                     "--engine-version X.Y.Z for another")
    notes += _data_parallel_notes(log, layout)
    if (drafter := dflash_drafter(log)) is not None and spec.drafter is None:
        notes.append(f"the log drafts with a DFlash drafter ({drafter or 'its model not shown'}) whose layers keep KV "
                     "beside the model's: give its config.json with --draft-model to size them")
    fills, whatifs = split_options(log, options or SizeOptions())
    d = Deployment(layout, gpu, log.engine, SizeOptions(), engine_version=version)
    fmt, weights_from = weighed_by_log(log, spec, options or SizeOptions())
    filled = replace(SizeOptions(**fills), weight_format=fmt)
    cores = engine_cores(log)
    if len(cores) > 1:
        notes.append(f"each of the log's {len(cores)} engine cores sized its own cache: a core's figures are compared "
                     "with mcache's from that core's measured memory (the first core's is shown as fed)")
    compared = [_compared(spec, core, d, origin, filled) for core in cores]
    report, fed, sources, ignored, _ = compared[0]
    comparisons = sorted((c for *_, cs in compared for c in cs), key=lambda c: c.line)
    whatif, largest = None, {}
    if whatifs or context is not None:  # on the first core's memory
        whatif = _size(spec, cores[0], replace(d, context=context), origin, 0, replace(filled, **whatifs))[0]
        if not _starts(whatif):
            largest = _largest_start(spec, cores[0], replace(d, context=context), origin, filled, whatifs)
        whatifs |= {"context": context} if context is not None else {}
    return Explanation(log, version, fed, sources, report, comparisons, notes, ignored, fills, whatifs, whatif, largest,
                       fmt, weights_from)


def dflash_drafter(log: EngineLog) -> str | None:
    """The drafter a log drafts with: vLLM's `speculative_config` of method `dflash`, SGLang's
    `speculative_draft_model_path` under `speculative_algorithm` DFLASH ("" when it names none), else None."""
    config = log.other_settings.get("speculative_config")
    if isinstance(config, dict) and config.get("method") == "dflash":
        model = config.get("model")
    elif str(log.other_settings.get("speculative_algorithm")).upper() == "DFLASH":
        model = log.other_settings.get("speculative_draft_model_path")
    else:
        return None
    return model if isinstance(model, str) else ""


def _compared(spec: ModelSpec, log: EngineLog, d: Deployment, origin: str, filled: SizeOptions):
    """`_size`'s report, what was fed and the log's figures compared with it; a figure that differs only within the
    rounding of the measured inputs (mcache's figure at either end of it spans the engine's) agrees within it."""
    report, fed, sources, ignored = _size(spec, log, d, origin, 0, filled)
    comparisons = compare(log, report)
    if any(c.verdict == DIFFER for c in comparisons) and any(m.half_step for m in log.measured):
        ends = [compare(log, _size(spec, log, d, origin, shift, filled)[0]) for shift in (-1, 1)]
        for i, c in enumerate(comparisons):
            if c.verdict == DIFFER and _between(c, ends[0][i], ends[1][i]):
                c.verdict = WITHIN
                c.note = f"mcache gives {ends[0][i].mcache} to {ends[1][i].mcache} over the rounding of the measured inputs"
    return report, fed, sources, ignored, comparisons


def engine_cores(log: EngineLog) -> list[EngineLog]:
    """The log as one engine instance sizes it: itself, or, where the engine's data-parallel ranks size their caches
    apart (the engine module's `DP_RANKS_APART`) and the log's figures come from more than one, one log a DP rank,
    each with that rank's measured memory and figures (lines no DP rank wrote, the API server's, go to every one)."""
    if not getattr(engine_module(log.engine), "DP_RANKS_APART", False):
        return [log]
    ranks = sorted({ranks_of(x.process).get("DP") for x in (*log.measured, *log.figures)} - {None})
    if len(ranks) < 2:
        return [log]

    def mine(process: str | None, rank: int) -> bool:
        return ranks_of(process).get("DP", rank) == rank

    return [replace(log, measured=[m for m in log.measured if mine(m.process, r)],
                    figures=[p for p in log.figures if mine(p.process, r)]) for r in ranks]


def log_layout(log: EngineLog, tp: int | None, pp: int | None, attention_dp: bool,
               attention_dp_size: int | None = None) -> tuple[int, int, bool, int | None]:
    """The `--tp`, `--pp`, `--attention-dp` and `--attn-dp-size` of one engine instance of the log (those given
    win). vLLM's `--data-parallel-size N` over engine cores of TP 1 is mcache's `--tp N --attention-dp` (engines/vllm.py
    `engine_core_layout`), SGLang's `--dp-size N` with `--enable-dp-attention` its `--attn-dp-size N`; other data
    parallelism is replicas of the log's TP, and one is sized (`_data_parallel_notes` says so)."""
    dp, core_tp = log.dp or 1, log.tp or 1
    vllm_cores = log.engine == "vllm" and dp > 1 and core_tp == 1
    sglang_ranks = log.engine == "sglang" and dp > 1 and bool(log.attention_dp)
    tp = tp or (dp if vllm_cores else core_tp)
    if attention_dp or attention_dp_size is not None:
        return tp, pp or log.pp or 1, True, attention_dp_size
    return tp, pp or log.pp or 1, (vllm_cores or sglang_ranks) and tp > 1, dp if sglang_ranks and dp < tp else None


def _data_parallel_notes(log: EngineLog, layout: ParallelLayout) -> list[str]:
    """What the log's data parallelism is and how it was sized (none without it)."""
    dp = log.dp or 1
    if dp < 2 or log.engine not in ("vllm", "sglang"):
        return []
    name = log.dp_name or {"vllm": "data_parallel_size", "sglang": "dp_size"}[log.engine]
    said = f"the log's {name}={dp}" + (f" (line {log.dp_line})" if log.dp_line else " (its processes' DP ranks)")
    if layout.attention_dp:
        ranks = layout.attention_dp_ranks
        unit = "engine cores of TP 1, each sizing and logging its own cache" if log.engine == "vllm" else (
            "attention-DP ranks, each with its own batch and pools" if ranks == layout.tp else
            f"attention-DP groups of {layout.state_tp} ranks (an attention TP of {layout.state_tp}), each with its own "
            "batch and pools")
        asked = "--attention-dp" if ranks == layout.tp else f"--attn-dp-size {ranks}"
        return [f"{said}: {dp} {unit}: sized as --tp {layout.tp} {asked}, one rank's figures; a replica runs "
                f"{ranks} times its sequences"]
    if log.engine == "sglang" and log.attention_dp is None:
        return [f"{said}, and no server_args line to say whether they are attention DP (enable_dp_attention): sized "
                f"as TP {layout.tp}; give --attn-dp-size {dp} if they are"]
    unit = "engine cores" if log.engine == "vllm" else "replicas"
    return [f"{said}: {dp} {unit} of TP {layout.tp}, each sizing its own cache: sized as one; the deployment runs "
            f"{dp} times its sequences"]


def _starts(report: dict) -> bool:
    """The engine starts and runs at least one sequence (unknown without memory: taken as starting)."""
    running = report["engine"]["max_running_requests"]
    return all(st["startup_error"] is None for st in report["engine"]["stages"]) and running != 0


def _largest_start(spec: ModelSpec, log: EngineLog, d: Deployment, origin: str, filled: SizeOptions,
                   whatifs: dict[str, Any]) -> dict[str, int]:
    """For a what-if that raises one count above the log's (a length, drafts, running requests) and does not start:
    the largest value of it that starts with the same measured memory (empty for any other what-if)."""
    shown, _ = settings_options(log, measured_settings(log)[0])
    raised = [name for name, value in whatifs.items() if isinstance(value, int) and not isinstance(value, bool)
              and isinstance(getattr(shown, name), int) and value > getattr(shown, name)]
    if len(raised) != 1 or len(whatifs) != 1:
        return {}
    name = raised[0]

    def starts(value: int) -> bool:
        try:
            return _starts(_size(spec, log, d, origin, 0, replace(filled, **{name: value}))[0])
        except LayoutError:
            return False

    floor = getattr(shown, name)
    return {name: last_true(starts, floor, whatifs[name])} if starts(floor) else {}


def _missing(engine: str) -> str:
    return {"vllm": "no 'Model loading took' or 'Available KV cache memory' line",
            "sglang": "no 'Load weight end' line", "trtllm": "no 'Peak memory during memory usage profiling' line"}[engine]


def compare(log: EngineLog, report: dict) -> list[Comparison]:
    """Each figure of the log beside mcache's figure of the same stage, the same figure read from mcache's lines."""
    eng = report["engine"]
    ours = {st["stage"]: figures_of(log.engine, st["log"]) for st in eng["stages"]}
    out, seen = [], {}
    for p in log.figures:
        stage = min(p.stage, len(eng["stages"]) - 1)
        nth = seen[(stage, p.key)] = seen.get((stage, p.key), -1) + 1
        mine = _ours(log.engine, p, ours[stage], eng, eng["stages"][stage], nth)
        error = eng["stages"][stage]["startup_error"]
        if mine is None and error:  # the engine printed it; mcache's run stops before it would
            out.append(Comparison(p.key, p.shown, None, DIFFER, p.line, p.process, stage,
                                  f"mcache's run stops at start-up: {_gist(error)}"))
            continue
        out.append(Comparison(p.key, p.shown, mine, _verdict(p, mine), p.line, p.process, stage))
    errors = [st["startup_error"] for st in eng["stages"] if st["startup_error"]]
    if log.started_line is not None and errors:  # the engine went past where mcache's run stops
        out.append(Comparison("starts", "yes", "no", DIFFER, log.started_line,
                              note=f"the engine started; mcache's run stops at start-up: {_gist(errors[0])}"))
    return out


def _ours(engine: str, p: Printed, printed: list[Printed], eng: dict, stage: dict, nth: int = 0) -> str | None:
    """mcache's figure for the engine's `p`, the `nth` of its key in the log, at the engine's rounding (None: mcache
    has no such figure). A figure printed once per KV-cache spec (`PER_SPEC`) pairs with mcache's lines in the order
    both print them, over again where the engine prints the whole run of them again (vLLM logs its padding at the
    profiling run and at the real planning); any other with mcache's first (an engine may print a line twice)."""
    same = [q for q in printed if q.key == p.key]
    if same and p.key in PER_SPEC:
        return _shown_as(p, same[nth % len(same)].value)
    if same:
        return _shown_as(p, same[0].value)
    where, name = FALLBACK[engine].get(p.key, (None, None))
    value = stage.get(name) if where == "field" else eng["settings"].get(name) if where == "setting" else None
    if p.key == "state_page_padding_pct" and value == 0:
        value = None  # no padding: vLLM prints no padding line
    return None if value is None else _shown_as(p, value)


def _shown_as(p: Printed, value) -> str:
    """`value` printed as the engine printed `p` (its decimals, commas and unit)."""
    if isinstance(p.value, str) or isinstance(value, str):
        return str(value)
    m = re.match(r"([\d,]*\d(?:\.(\d+))?)(.*)$", p.shown)
    decimals = len(m[2] or "") if m else 0
    text = f"{value:,.{decimals}f}" if "," in p.shown else f"{value:.{decimals}f}"
    return text + (m[3] if m else "")


def _verdict(p: Printed, mine: str | None) -> str:
    if mine is None:
        return NOT_MODELLED
    return AGREE if mine == p.shown else DIFFER


def _number(shown: str | None) -> float | None:
    m = re.match(r"[\d,]*\d(?:\.\d+)?", shown or "")
    return float(m[0].replace(",", "")) if m else None


def _between(c: Comparison, low: Comparison, high: Comparison) -> bool:
    value, ends = _number(c.engine), [_number(low.mcache), _number(high.mcache)]
    return value is not None and None not in ends and min(ends) <= value <= max(ends)


# --- what a start-up measured, carried to other layouts (`mcache plan --from-log`) ---------------------------------

# The SizeOptions field each engine's carried memory is fed as: vLLM and TensorRT-LLM take the non-KV memory their
# profiling found (`reserve` -> non_kv_memory_bytes), SGLang the free memory it found before loading the weights
# (`free_memory_before_load` -> pre_model_load_memory_bytes; its activation and CUDA-graph share is
# mem_fraction_static, a rule of the layout, not a measurement).
CARRIED_FIELD = {"vllm": "reserve", "sglang": "free_memory_before_load", "trtllm": "reserve"}
CARRIED_LINES = {"vllm": "'Available KV cache memory' line (the KV budget the non-KV memory is found from)",
                 "sglang": "'Load weight end' or 'Load weight begin' line",
                 "trtllm": "'Peak memory during memory usage profiling' line"}


class Carried(Struct, frozen=True):
    """The memory a start-up measured that does not change with the layout: the non-KV memory (`non_kv`: the
    activation peak, non-torch memory and CUDA graphs where the engine profiles them; for SGLang what was in use
    before its weights loaded), fed to another layout on the same GPU kind as `field` = `value` (a `SizeOptions`
    field), and how it was found from the log's figures (`how`)."""

    engine: str
    version: str | None
    field: str
    value: int
    non_kv: int
    how: str


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB"


def carried_memory(log: EngineLog, spec: ModelSpec, origin: str, layout: ParallelLayout, gpu: tuple[str, int],
                   version: str | None, weights: int | None = None) -> Carried:
    """What `log`'s start on `gpu` (name, bytes) at `layout` measured that carries to another layout: the weights
    (measured, else `weights`, else mcache's estimate at `layout`) and the KV budget are taken off, as the engine's
    profile adds them (`engines/vllm.py` `_pool`: available = ceil(GPU x utilization) - weights - non-KV;
    `engines/trtllm.py`: the profiled peak is the weights plus the non-KV memory, `_size` above). A `LogError` when
    the log measured none of it, or its figures leave none (the GPU, layout or weights are not the log's)."""
    engine = log.engine
    measured, sources = measured_settings(log)
    wanted = {"vllm": "kv_cache_memory_bytes", "sglang": "pre_model_load_memory_bytes", "trtllm": "peak_bytes"}[engine]
    if wanted not in measured:
        raise LogError(f"the {TITLES[engine]} log measured no memory to carry: it has no {CARRIED_LINES[engine]}")
    if engine == "vllm" and "kv_cache_memory_bytes" in log.settings:
        raise LogError("the vLLM log's KV budget was set (kv_cache_memory_bytes in its args), not measured: it holds "
                       "no measured non-KV memory")
    if engine == "sglang":
        pre = measured[wanted]
        if pre > gpu[1]:
            raise LogError(f"the SGLang log found {_gib(pre)} free before loading its weights, more than the "
                           f"{_gib(gpu[1])} of {gpu[0]}: the log ran on a larger GPU")
        how = (f"{_gib(gpu[1])} of {gpu[0]} less the {_gib(pre)} free before the weights loaded ({sources[wanted]}); "
               "mem_fraction_static stays SGLang's rule at each layout")
        return Carried(engine, version, CARRIED_FIELD[engine], pre, gpu[1] - pre, how)
    d = Deployment(layout, gpu, engine, SizeOptions(), engine_version=version)
    given = SizeOptions(weights=weights) if weights is not None and "weights_bytes" not in measured else SizeOptions()
    report, fed, fed_from, _ = _size(spec, log, d, origin, 0, given)
    settings = report["engine"]["settings"]
    w = settings["weights_bytes"]
    w = w if isinstance(w, int) else max(w)
    estimate = "given with --weights" if weights is not None else f"mcache's estimate at tp {layout.tp} pp {layout.pp}"
    w_from = fed_from.get("weights_bytes", estimate)
    if engine == "vllm":
        util, kv = settings["gpu_memory_utilization"], measured[wanted]
        if report["engine"]["sources"]["gpu_memory_utilization"] == "default":
            # the default of the log's run, which measured its KV budget (fed here as kv_cache_memory_bytes): from 0.34
            # the extensible KV cache takes 1.0 where a set budget keeps 0.92 (engines/vllm.py EXTENSIBLE_UTILIZATION)
            from mcache.core.engines import vllm  # an engine's rules load with its first use

            sized = report["engine"]["version"]
            util = vllm.default_utilization(sized, vllm.extensible_kv_cache(sized, kv_memory_set=False))
        non_kv = ceil(gpu[1] * util) - w - kv
        how = (f"ceil({_gib(gpu[1])} of {gpu[0]} x gpu_memory_utilization {util}) less the weights {_gib(w)} ({w_from}) "
               f"less the KV budget {_gib(kv)} ({sources[wanted]})")
    else:
        non_kv = fed["non_kv_memory_bytes"]
        how = f"{fed_from['non_kv_memory_bytes']} {_gib(w)} ({w_from})"
    if non_kv <= 0:
        raise LogError(f"the {TITLES[engine]} log's figures leave no non-KV memory ({how} = {_gib(non_kv)}): the GPU, "
                       "layout or weights are not the log's (--log-gpu, --log-tp, --weights, --weight-format)")
    return Carried(engine, version, CARRIED_FIELD[engine], non_kv, non_kv, how)
