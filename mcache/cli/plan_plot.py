"""`mcache plan --plot`: sequences against context for the leading candidates, sequences per GPU against GPUs used
with the Pareto front, and the roofline's tokens/s per GPU against its time per output token. matplotlib (the
`mcache[plot]` extra) is imported only here."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from mcache.cli.plan_output import title
from mcache.core.errors import McacheError
from mcache.core.plan import Candidate, Plan, attention_dp_name
from mcache.core.spec.model import ModelSpec

LINES = 6  # candidates drawn in the sequences-against-context plot


def write_plot(result: Plan, model: ModelSpec, path: Path) -> None:
    """Both plots, side by side, to `path` (.png or .svg), written atomically. matplotlib keeps its font cache and
    config in a temporary folder (unless MPLCONFIGDIR names one), so nothing is written outside `path`."""
    import os
    import tempfile

    if "MPLCONFIGDIR" in os.environ:
        _write_plot(result, model, path)
        return
    with tempfile.TemporaryDirectory(prefix="mcache-matplotlib-") as folder:
        os.environ["MPLCONFIGDIR"] = folder
        try:
            _write_plot(result, model, path)
        finally:
            del os.environ["MPLCONFIGDIR"]


def _write_plot(result: Plan, model: ModelSpec, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise McacheError("--plot: needs matplotlib: pip install 'mcache[plot]'") from None
    fig, (by_context, by_gpus, by_tpot) = plt.subplots(1, 3, figsize=(19, 5), layout="constrained")
    _context_plot(by_context, result)
    _pareto_plot(by_gpus, result)
    _roofline_plot(by_tpot, result)
    fig.suptitle(title(result, model))
    import io

    from mcache.core.files import write_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lower().lstrip("."), dpi=110)
    plt.close(fig)
    try:
        write_atomic(path, buf.getvalue())
    except OSError as err:
        raise McacheError(f"{path}: --plot: a writable file path ({err.strerror or type(err).__name__})") from None


def _label(config: tuple) -> str:
    gpu, tp, pp, dp, kv, ssm, draft, scheme, prefix = config
    extra = (f", {draft} {scheme}" if draft else "") + ("" if prefix == "default" else f", prefix {prefix}")
    return f"{gpu} tp{tp}{f' {attention_dp_name(tp, dp)}' if dp else ''} pp{pp}, KV {kv}, state {ssm}{extra}"


def _context_plot(ax, result: Plan) -> None:
    """Sequences at each context for the configurations that lead (most sequences per GPU at any context)."""
    lines: dict[tuple, list[Candidate]] = defaultdict(list)
    for c in result.candidates:
        lines[c.config].append(c)
    leading = sorted(lines, key=lambda k: -max((c.sequences_per_gpu for c in lines[k] if c.fits), default=0))[:LINES]
    for config in leading:
        points = sorted(lines[config], key=lambda c: c.context)
        ax.plot([c.context for c in points], [c.sequences if c.fits else 0 for c in points], marker="o",
                label=_label(config))
    ax.set_xscale("log", base=2)
    contexts = sorted({c.context for c in result.candidates})
    ax.set_xticks(contexts, [f"{c // 1024}K" if c % 1024 == 0 else str(c) for c in contexts])
    ax.minorticks_off()
    ax.set_xlabel("context (tokens, log scale)")
    ax.set_ylabel("sequences running at once")
    ax.set_title("sequences against context")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _pareto_plot(ax, result: Plan) -> None:
    """Sequences per GPU against GPUs used at the first context, the Pareto front (fewer GPUs, more per GPU)."""
    context = min(c.context for c in result.candidates) if result.candidates else 0
    points = [c for c in result.candidates if c.fits and c.context == context]
    ax.scatter([c.gpus for c in points], [c.sequences_per_gpu for c in points], alpha=0.5, label="candidates")
    front = pareto_front(points)
    ax.plot([c.gpus for c in front], [c.sequences_per_gpu for c in front], color="C3", marker="D", label="Pareto front")
    ax.set_xlabel("GPUs used (replicas x tp x pp)")
    ax.set_ylabel("sequences per GPU")
    ax.set_title(f"sequences per GPU at {context} tokens")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def pareto_front(points: list[Candidate]) -> list[Candidate]:
    """The candidates no other beats on both fewer (or as few) GPUs and more (or as many) sequences per GPU,
    by GPUs used."""
    front: list[Candidate] = []
    for c in sorted(points, key=lambda c: (c.gpus, -c.sequences_per_gpu)):  # the best of each GPU count first
        if not front or c.sequences_per_gpu > front[-1].sequences_per_gpu:
            front.append(c)
    return front


def _roofline_plot(ax, result: Plan) -> None:
    """Roofline tokens/s per GPU against time per output token (both bounds) for the candidates that fit at the
    first context, one colour per GPU kind; the --max-tpot line when given."""
    context = min(c.context for c in result.candidates) if result.candidates else 0
    points = [c for c in result.candidates if c.fits and c.context == context and c.roofline]
    for gpu in dict.fromkeys(c.gpu for c in points):
        mine = [c for c in points if c.gpu == gpu]
        ax.scatter([c.roofline.tpot_ms for c in mine], [c.roofline.tokens_per_s_per_gpu for c in mine], alpha=0.6,
                   label=gpu)
    if result.max_tpot is not None:
        ax.axvline(result.max_tpot, color="C3", linestyle="--", label=f"--max-tpot {result.max_tpot:g} ms")
    ax.set_xlabel("time per output token, ms (roofline lower bound)")
    ax.set_ylabel("tokens/s per GPU (roofline upper bound)")
    ax.set_title(f"decode memory roofline at {context} tokens")
    ax.grid(True, alpha=0.3)
    if points:
        ax.legend(fontsize=8)
