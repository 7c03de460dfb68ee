"""One deployment sized end to end, as `mcache size` shows it and `mcache plan` ranks it: the engine's run (with
`engine`), the neutral run beside it, and where each dtype came from. Both commands build a `Deployment` and call
`size_deployment`; nothing else turns options into figures. `smallest_fitting_layout` answers, for the neutral
model and every engine alike, which layout would fit; `longest_starting_length`, which max model length an engine
would start at."""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import replace

from mcache.core.engines.common import EngineRun
from mcache.core.engines.options import engine_settings
from mcache.core.errors import LayoutError
from mcache.core.numbers import last_true
from mcache.core.options import SizeOptions
from mcache.core.sizing.capacity import Budget, check_budget
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.neutral import NeutralRun, run_neutral
from mcache.core.sizing.rank import RankContext, dtype_sources, resolve_dtypes
from mcache.core.sizing.weights import rank_weight_bytes, weighed_as, weights_known
from mcache.core.spec.model import ModelSpec

DEFAULT_BATCH = 64  # the slot pool of a run without a GPU to size it by
DEFAULT_SEQ_LEN = 8192
DEFAULT_RESERVE = 2 << 30
DEFAULT_UTILIZATION = 0.9


class EngineSettingError(LayoutError):
    """An engine setting the engine refuses (its `field` is the engine's own setting name, or `engine`)."""


class Deployment(Struct, frozen=True):
    """What to size: the layout and GPU (`gpu`: name and bytes, None for no capacity), the engine (None: the neutral
    model) and its version, the options given, and the context and concurrency the capacity figures are asked at
    (None: the defaults)."""

    layout: ParallelLayout
    gpu: tuple[str, int] | None = None
    engine: str | None = None
    options: SizeOptions = SizeOptions()
    context: int | None = None
    concurrency: int | None = None
    engine_version: str | None = None  # the release the user runs (None: the newest the engine's profile models)


class Sized(Struct, frozen=True):
    """A deployment's figures: the neutral run (at the engine's max length and dtypes, with `engine`), the engine's
    run, and the source of each cache dtype."""

    neutral: NeutralRun
    engine: EngineRun | None
    dtype_sources: dict[str, str]

    @property
    def fits(self) -> bool | None:
        """The engine starts and runs a sequence of the context, or the neutral model fits one on every stage (None:
        not known without a GPU)."""
        if self.engine is None:
            return self.neutral.fits
        running = self.engine.max_running_requests
        return None if running is None else self.engine.starts and bool(running)


def runtime_of(d: Deployment, max_seq_len: int) -> RuntimeConfig:
    """The runtime the neutral model sizes (engines keep 32-token blocks for the table beside theirs)."""
    o, draft = d.options, d.options.draft or 0
    scheme = o.spec_scheme if o.spec_scheme else ("intermediate" if draft else "none")
    return RuntimeConfig(max_batch=DEFAULT_BATCH if o.max_batch is None else o.max_batch, max_seq_len=max_seq_len,
                         tokens_per_block=32 if d.engine or o.block_size is None else o.block_size,
                         draft_tokens=draft, spec_scheme=scheme, reserved_slots=o.reserved_slots,
                         snapshot_slots=o.snapshot_slots or 0, kv_tokens=o.kv_tokens)


def size_deployment(spec: ModelSpec, d: Deployment) -> Sized:
    """Size `d`: an `OptionError` for an option the engine (or the neutral model) lacks, a `LayoutError` for a
    setting that cannot work (an `EngineSettingError` for the engine's own). The spec is weighed as the options'
    `weight_format` says (the report's model section shows it)."""
    o, erun = d.options, None
    spec = weighed_as(spec, o.weight_format)
    settings = engine_settings(d.engine, o)
    if d.engine:
        from mcache.core.engines import run_engine
        from mcache.core.engines.common import EngineInputs

        name, memory = d.gpu if d.gpu else (None, None)
        try:
            erun = run_engine(d.engine, EngineInputs(spec, d.layout, name, memory, d.context, settings), d.engine_version)
        except LayoutError as err:
            if "." in err.field:  # a spec field the engine reads (a TP split): the spec's own error
                raise
            raise EngineSettingError(err.field, err.expected) from None
    runtime = runtime_of(d, erun.max_len if erun else o.max_seq_len or DEFAULT_SEQ_LEN)
    dtypes = erun.dtypes if erun else resolve_dtypes(spec, o.kv_dtype, o.conv_dtype, o.ssm_dtype)
    reserve = DEFAULT_RESERVE if d.engine or o.reserve is None else o.reserve
    fraction = DEFAULT_UTILIZATION if d.engine or o.utilization is None else o.utilization
    check_budget(fraction, reserve)
    weights = None if d.engine else o.weights
    # weights mcache cannot estimate, no checkpoint index says and nobody gave: the caches are sized, capacity is left out
    weighable = weights is not None or weights_known(spec)
    budget = Budget(d.gpu[0], d.gpu[1], fraction, reserve, weights) if d.gpu and weighable else None
    neutral = run_neutral(spec, d.layout, runtime, dtypes, budget, d.context or (erun.context if erun else None),
                          d.concurrency, batch_given=o.max_batch is not None and not d.engine)
    sources = ({role: f"{d.engine} rule" for role in ("kv", "conv", "ssm")} if d.engine
               else dtype_sources(spec, o.kv_dtype, o.conv_dtype, o.ssm_dtype))
    return Sized(neutral, erun, sources)


MAX_LAYOUT_GPUS = 64  # the largest TP x PP a misfit's hint searches (one replica of eight 8-GPU nodes)


def smallest_fitting_layout(spec: ModelSpec, d: Deployment, max_gpus: int = MAX_LAYOUT_GPUS) -> ParallelLayout | None:
    """The layout of fewest GPUs (then fewest PP stages, up to `max_gpus`) on which `d` fits with everything else
    the same; a layout the model cannot be split into is skipped. None when no layout fits."""
    whole = _whole_weight_bytes(spec, d)
    for gpus in range(1, max_gpus + 1):
        if whole is not None and d.gpu and whole > gpus * d.gpu[1]:
            continue  # however they are split, the weights alone exceed these GPUs' memory
        for pp in (p for p in range(1, gpus + 1) if gpus % p == 0):
            size = d.layout.attention_dp_size  # an attention-DP width narrower than TP kept (a layout it divides)
            if size is not None and (gpus // pp) % size:
                continue
            layout = ParallelLayout(tp=gpus // pp, pp=pp, attention_dp=d.layout.attention_dp, attention_dp_size=size)
            try:
                if size_deployment(spec, replace(d, layout=layout)).fits:
                    return layout
            except LayoutError:
                continue
    return None


def _whole_weight_bytes(spec: ModelSpec, d: Deployment) -> int | None:
    """The weights of the whole model on one GPU: what the ranks of any layout hold between them at least (TP and PP
    split them; what a layout replicates only adds). None when the weights are given per rank, or unknown."""
    if d.options.weights is not None:
        return None
    spec = weighed_as(spec, d.options.weight_format)
    return rank_weight_bytes(RankContext.build(spec, ParallelLayout(), RuntimeConfig(), resolve_dtypes(spec), 0))


def longest_starting_length(spec: ModelSpec, d: Deployment, sized: Sized | None = None) -> int | None:
    """The longest max model length at which the engine of `d` starts and runs one sequence of it, with everything
    else the same, shorter than the one `d` sized at (None: not even one token's length starts, or no GPU); `sized`:
    `d` already sized, when the caller has it."""
    sized = sized or size_deployment(spec, d)
    if d.engine is None or sized.engine is None or sized.fits is not False:
        return None

    def starts(length: int) -> bool:
        try:
            return bool(size_deployment(spec, replace(d, options=replace(d.options, max_seq_len=length), context=None)).fits)
        except LayoutError:
            return False

    return last_true(starts, 0, sized.engine.max_len) or None
