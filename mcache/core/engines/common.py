"""What the engine profiles share: their inputs and results, settings with their sources, and the bytes of one
layer's state or one token's KV read off the kinds' declarations (with the engine's dtypes)."""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from mcache.core.engines.versions import EngineVersion
from mcache.core.errors import LayoutError
from mcache.core.kinds import RECURRENT_KINDS
from mcache.core.kinds.base import CacheDtypes, StateShape
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext
from mcache.core.sizing.weights import loads_draft_head, rank_weight_bytes, unknown_fields
from mcache.core.spec import dtypes as dtype_names
from mcache.core.spec.dtypes import itemsize
from mcache.core.spec.model import ModelSpec, layer_kinds

GIB = 1 << 30
ATTENTION_KINDS = ("attention", "sliding_attention", "mla")
COMMON_SETTINGS = ("weights_bytes", "non_kv_memory_bytes")  # what only the running engine measures
DEFAULT_NON_KV = 2 * GIB  # assumed: a profiled activation peak, non-torch memory and CUDA graphs
# The engines' draft settings (vLLM, SGLang, TensorRT-LLM): with one given, the model's MTP head drafts and the engine
# loads the MTP layers' weights, or the spec's drafter's (`weights.loads_draft_head`); without, it skips them.
DRAFT_SETTINGS = ("num_speculative_tokens", "speculative_num_steps", "max_draft_len")


class EngineInputs(Struct, frozen=True):
    """One engine run: the model and layout, the GPU (None: the figures that need memory stay None), the
    context the running-request count is asked at (None: the engine's max model length), and the engine
    settings the user gave, by the engine's own names (absent or None: the engine's default)."""

    spec: ModelSpec
    layout: ParallelLayout
    gpu_name: str | None = None
    gpu_bytes: int | None = None
    context: int | None = None
    given: dict[str, Any] = {}
    version: str | None = None  # the modelled release whose rules apply (`run_engine` sets it; None: the newest)


class EngineStage(Struct):
    """One PP stage as the engine sizes it: what one of its ranks runs at once at the context (under attention DP, one
    attention-DP rank's own batch), why it would refuse to start (None: it starts), the lines it logs, and the engine's
    own figures (`fields`, a rank's too)."""

    stage: int
    max_running_requests: int | None
    startup_error: str | None
    log: list[str]
    binding: str | None = None
    fields: dict[str, Any] = {}


class EngineRun(Struct):
    """An engine's sizing of every stage at its max model length `max_len` and the `context` asked, the settings it
    used (`sources`: given, default or assumed, with why for an assumption) and the cache dtypes it resolved."""

    name: str
    max_len: int
    context: int
    settings: dict[str, Any]
    sources: dict[str, str]
    dtypes: CacheDtypes
    stages: list[EngineStage]
    caveats: list[str] = []  # what this profile does not model for this model
    version: EngineVersion | None = None  # the modelled release that sized it (`run_engine` sets it)
    layout: ParallelLayout | None = None  # the replica's layout as asked (`run_engine` sets it; None: one batch)

    @property
    def max_running_requests_per_rank(self) -> int | None:
        """What one rank runs at once: the tightest stage's figure (None without memory)."""
        figures = [s.max_running_requests for s in self.stages]
        return None if any(f is None for f in figures) else min(figures)

    @property
    def attention_dp_ranks(self) -> int:
        """Ranks of a stage that each run a batch of their own (`ParallelLayout.attention_dp_ranks`)."""
        return self.layout.attention_dp_ranks if self.layout else 1

    @property
    def max_running_requests(self) -> int | None:
        """What the whole replica runs at once: a rank's figure times the attention-DP ranks (None without memory)."""
        per_rank = self.max_running_requests_per_rank
        if per_rank is None or self.layout is None:
            return per_rank
        return self.layout.replica_sequences(per_rank)

    @property
    def starts(self) -> bool:
        return all(s.startup_error is None for s in self.stages)

    def as_json(self) -> dict:
        """The `engine` object of `mcache size --format json`."""
        version = self.version or EngineVersion("")
        return {
            "name": self.name,
            "version": version.modelled,
            "version_requested": version.requested,
            "version_note": version.note,
            "max_model_len": self.max_len,
            "context": self.context,
            "settings": self.settings,
            "sources": self.sources,
            "dtypes": {"model": self.dtypes.model, "kv": self.dtypes.kv, "conv": self.dtypes.conv, "ssm": self.dtypes.ssm},
            "max_running_requests": self.max_running_requests,
            "max_running_requests_per_rank": self.max_running_requests_per_rank,
            "attention_dp_ranks": self.attention_dp_ranks,
            "caveats": self.caveats,
            "stages": [
                {"stage": s.stage, "max_running_requests": s.max_running_requests, "startup_error": s.startup_error,
                 "binding": s.binding, "log": s.log, **s.fields}
                for s in self.stages
            ],
        }


class ServeArgs(Struct, frozen=True):
    """A deployment as `mcache plan` varies it, for an engine's `serve_command`: what the engine loads (`model`: a
    Hugging Face repository or a folder), the layout (`attention_dp`: groups of a stage's `tp` ranks each run a batch of
    their own), the max model length, the cache dtypes by the engine's names (None: its default), draft tokens (drafted by
    the `drafter` given, else the model's MTP head when it has one, `mtp`) and prefix caching (`default`: the engine's; `on` or `off`), the
    release whose rules sized it (`version`, None: the newest), and the fleet's `replicas`, which a serve command
    starts itself where the engine can (its `REPLICA_FLAG`), else says how many to start; `attention_dp_size` the
    attention-DP width (None: `tp`)."""

    model: str
    tp: int
    pp: int
    context: int
    kv_dtype: str | None = None
    ssm_dtype: str | None = None
    draft: int = 0
    mtp: bool = False
    prefix: str = "default"
    version: str | None = None
    attention_dp: bool = False
    replicas: int = 1
    attention_dp_size: int | None = None
    drafter: str | None = None  # a DFlash drafter's folder or Hub id: it drafts in place of MTP layers


class Settings:
    """The settings of one run: each `take` returns the given value, else the default, and records its source.

    A given setting that is not among `allowed` (nor the memory inputs every engine has) is a `LayoutError`.
    """

    def __init__(self, given: dict[str, Any], allowed: tuple[str, ...], engine: str):
        self.given = {k: v for k, v in given.items() if v is not None}
        self.values: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        for name in self.given:
            if name not in allowed + COMMON_SETTINGS:
                raise LayoutError(name, f"not a setting of {engine}")

    def model_length(self, name: str, spec: ModelSpec) -> int:
        """The max model length (setting `name`): the config's, else 8192 (an assumption)."""
        source = "default" if spec.max_model_len else "assumed: the spec names no max_model_len"
        return self.take(name, spec.max_model_len or 8192, source)

    def non_kv_memory(self, why: str) -> int:
        """Memory the engine's start-up profiling finds besides the weights (`why`: what it measures)."""
        return self.take("non_kv_memory_bytes", DEFAULT_NON_KV, f"assumed: {why}")

    def take(self, name: str, default: Any, source: str = "default") -> Any:
        """The given value of `name`, else `default`; `source` says what a default is (`default`: the engine's,
        or `assumed: why` for what only a running engine knows)."""
        if name in self.given:
            value, source = self.given[name], "given"
        else:
            value = default
        self.values[name], self.sources[name] = value, source
        return value

    def weights(self, contexts: list[RankContext], expert_shards: int = 1, dp_sharded: frozenset[str] = frozenset(),
                dp_whole: frozenset[str] = frozenset(), host: frozenset[str] = frozenset()) -> list[int]:
        """Weight bytes of each stage's rank: the given `weights_bytes`, else mcache's estimate (recorded; the routed
        experts split `expert_shards` ways beyond the contexts' TP, `dp_sharded` what the engine still splits over TP
        and `dp_whole` what it keeps whole under attention DP: `weights.shard_ways`; without the layer units `host`
        names, which the engine keeps in host memory), the MTP layers counted only when a draft setting is given."""
        drafts = max((self.given.get(name) or 0 for name in DRAFT_SETTINGS), default=0)
        estimates = [weight_bytes(ctx, loads_draft_head(ctx.spec, drafts), expert_shards, dp_sharded, dp_whole, host)
                     for ctx in contexts]
        if None in estimates and self.given.get("weights_bytes") is None:
            unknown = ", ".join(unknown_fields(contexts[0].spec))
            raise LayoutError("weights_bytes", f"a size: the spec leaves {unknown} null, so mcache cannot estimate the "
                                               "weights one rank loads")
        how = ("the checkpoint's stored size (its safetensors index) split over the TP x PP ranks"
               if unknown_fields(contexts[0].spec) else "mcache's estimate of the weights one rank loads")
        given = self.take("weights_bytes", estimates if len(estimates) > 1 else estimates[0], f"assumed: {how}")
        return [given] * len(contexts) if isinstance(given, int) else estimates


def asked_context(inputs: EngineInputs, max_len: int) -> int:
    """The context the running-request count is asked at: the given one, else the max model length; a longer one
    than the engine runs is a `LayoutError` (every engine refuses a request past its max model length)."""
    context = inputs.context or max_len
    if context > max_len:
        raise LayoutError("context", f"at most the max model length the engine runs ({max_len:,} tokens; it refuses "
                                     f"longer requests), got {context:,}")
    return context


def full_width_attention_dp(layout: ParallelLayout, engine: str, why: str) -> None:
    """Refuse an attention-DP width other than --tp for an engine whose attention DP has no attention-TP group (`why`
    says how its DP is laid out)."""
    if layout.attention_dp and layout.attention_dp_ranks != layout.tp:
        raise LayoutError("attention_dp_size", f"equal to --tp ({layout.tp}) with {engine}, {why}; got "
                                               f"{layout.attention_dp_ranks}")


def within_gpu(setting: str, value: int | None, gpu_bytes: int | None) -> int | None:
    """`value` (bytes of GPU memory the setting `setting` names) when no GPU is given or it is at most the GPU's
    memory; a `LayoutError` naming the setting otherwise (no engine can use more memory than its GPU has)."""
    if value is not None and gpu_bytes is not None and value > gpu_bytes:
        raise LayoutError(setting, f"at most the GPU's {round(gpu_bytes / GIB, 2)} GiB, got {round(value / GIB, 2)} GiB")
    return value


def state_dtype(name: str, setting: str) -> str:
    """The canonical name of a recurrent-state dtype setting; a `LayoutError` naming the setting otherwise."""
    canonical = dtype_names.for_role(name, "ssm_dtype")
    if canonical is None:
        raise LayoutError(setting, f"auto or one of {dtype_names.allowed_for('ssm_dtype')}, got {name!r}")
    return canonical


def pp_layout(layout: ParallelLayout, num_layers: int, spared: int) -> ParallelLayout:
    """The layout with an engine's even split of the layers over the PP stages where none is given (the engines'
    get_pp_indices without their PP_LAYER_PARTITION variable, which is a given `pp_partition`): num_layers // pp
    each, and the remainder one layer each to the stages counted back from the last, after sparing the last `spared`
    (vLLM spares the last stage, SGLang none)."""
    if layout.pp_partition is not None or layout.pp > num_layers:
        return layout  # a given split, or more stages than layers (refused by the layout)
    base, extra = divmod(num_layers, layout.pp)
    partition = [base] * layout.pp
    for i in range(layout.pp - spared - extra, layout.pp - spared):
        partition[i] += 1
    return replace(layout, pp_partition=tuple(partition))


def stage_contexts(spec: ModelSpec, layout: ParallelLayout, dtypes: CacheDtypes) -> list[RankContext]:
    """The context of every PP stage (the runtime does not matter here: only shapes and layers are read)."""
    return [RankContext.build(spec, layout, RuntimeConfig(), dtypes, s) for s in range(layout.pp)]


def whole_model(spec: ModelSpec, layout: ParallelLayout, dtypes: CacheDtypes) -> RankContext:
    """All layers on one TP rank: what engines read model-wide (page sizes, block alignment)."""
    return RankContext.build(spec, ParallelLayout(tp=layout.tp, attention_dp=layout.attention_dp,
                                                  attention_dp_size=layout.attention_dp_size), RuntimeConfig(), dtypes, 0)


def state_bytes(ctx: RankContext, kind: str, dtype_of: Callable[[str, StateShape], str], conv_rows: int = 0,
                component: str | None = None) -> int:
    """Bytes of one layer's recurrent state of `kind` for one request: the kind's declared states (of `component`
    only, if given), each in `dtype_of(kind, state)`, with `conv_rows` more rows in every conv window (the `K` axis
    of a conv state)."""
    total = 0
    for s in ctx.states(kind):
        if component is not None and s.component != component:
            continue
        grow = conv_rows if s.component == "conv" else 0
        shape = [n + grow if axis == "K" else n for n, axis in zip(s.shape, s.axes, strict=True)]
        total += prod(shape) * itemsize(dtype_of(kind, s))
    return total


def token_bytes(ctx: RankContext, kind: str, kv_dtype: str) -> int:
    """KV bytes one token adds to one layer of attention `kind` (`attention` or `mla`) in `kv_dtype`."""
    return shapes_bytes(ctx.states(kind), kv_dtype)


def shapes_bytes(shapes: list[StateShape], dtype: str) -> int:
    """Bytes of one unit of each of `shapes` in `dtype` (one token of a layer's KV)."""
    return sum(prod(s.shape) for s in shapes) * itemsize(dtype)


def kv_heads_per_rank(ctx: RankContext) -> int:
    """KV heads one rank keeps per attention layer (1 for MLA's latent)."""
    if "attention" not in ctx.kinds:
        return 1
    s = ctx.states("attention")[0]
    return s.shape[s.axes.index("Hkv")]


def window_of(ctx: RankContext, kind: str) -> int | None:
    """The sliding window of `kind`'s layers (None: full attention)."""
    return ctx.states(kind)[0].window


def drafter_caveats(spec: ModelSpec, drafts: int, title: str) -> list[str]:
    """The caveat of a profile that does not model a DFlash drafter's cache: its weights are counted, its KV (and the
    engine's own buffers for it) are not."""
    if spec.drafter is None or not drafts:
        return []
    return [f"{title}: the DFlash drafter's KV cache (and {title}'s buffers for it) is not modelled, only its weights, "
            "so the tokens and sequences that fit are upper bounds."]


def unnamed_architecture_caveats(spec: ModelSpec, title: str) -> list[str]:
    """The caveat of a profile that sizes a hybrid spec naming no architecture (a hand-written spec, a mamba_ssm-format
    config) by its layer kinds: whether the engine loads the model, and its rules by architecture, are not checked."""
    if spec.architecture is not None or not recurrent_kinds(spec):
        return []
    return [f"{title}: the spec names no architecture, so whether {title} loads the model is not checked; it is sized "
            "as a hybrid of its layer kinds."]


def windowed_kinds(spec: ModelSpec) -> list[str]:
    """The attention kinds of the spec with a sliding window."""
    return [kind for kind in ATTENTION_KINDS if getattr(getattr(spec, kind, None), "sliding_window", None)]


def window_caveats(spec: ModelSpec, title: str, pool: str) -> list[str]:
    """The caveat of a profile that sizes windowed attention layers at full length (its `pool` is not modelled)."""
    windowed = windowed_kinds(spec)
    if not windowed:
        return []
    return [f"{title}: {pool} not modelled; the sliding-window layers ({', '.join(windowed)}) are sized at full "
            "length here, so its KV figures are an upper bound."]


def mtp_attention_layers(spec: ModelSpec) -> int:
    """Attention layers the model's MTP head adds to the KV pool when it drafts (0 without MTP, or when the spec's
    drafter drafts instead)."""
    if spec.mtp is None or spec.drafter is not None:
        return 0
    return spec.mtp.num_layers if set(spec.mtp.layer.split("+")) & set(ATTENTION_KINDS) else 0


def weight_bytes(ctx: RankContext, mtp: bool = False, expert_shards: int = 1,
                 dp_sharded: frozenset[str] = frozenset(), dp_whole: frozenset[str] = frozenset(),
                 host: frozenset[str] = frozenset()) -> int | None:
    """mcache's estimate of the weights one rank of the stage loads, the MTP layers only with `mtp`, the routed experts
    split `expert_shards` ways beyond the stage's TP, `dp_sharded` still split over TP and `dp_whole` whole under
    attention DP, less the units `host` names (the engines measure theirs)."""
    return rank_weight_bytes(ctx, mtp, expert_shards, dp_sharded, dp_whole, host)


def recurrent_kinds(spec) -> list[str]:
    """The layer kinds with per-request state that the spec declares (in `RECURRENT_KINDS` order)."""
    return [k for k in RECURRENT_KINDS if getattr(spec, k) is not None]


def mamba2_groups_unsplit(spec, tp: int) -> bool:
    """Whether a Mamba2 mixer over `tp` ranks meets groups it neither splits nor holds as one (G > 1 that `tp` does not
    divide), which vLLM's and SGLang's MambaMixer2.__init__ assert against (`n_groups % tp_size == 0 or n_groups == 1`);
    mcache's layout replicates G groups at a multiple of G (kinds/mamba2.py groups_per_rank)."""
    groups = spec.mamba2.n_groups if spec.mamba2 is not None else 0
    return groups > 1 and groups % tp != 0


def mamba2_quantized_tp_refused(spec, tp: int, any_tp: bool = False) -> bool:
    """Whether a Mamba2 mixer built with a quant config (a checkpoint whose weights are quantized) refuses `tp` ranks:
    vLLM 0.11.1-0.15.x's and SGLang's MambaMixer2.__init__ assert `n_groups % tp_size == 0 or tp_size == 1 or
    quant_config is None` (one group at TP > 1 included), vLLM 0.10.2's `tp_size == 1 or quant_config is None`
    (`any_tp`). PLaMo-2's mixer (no groups, n_groups 0) is its own."""
    if spec.mamba2 is None or spec.quantization is None or spec.mamba2.n_groups == 0 or tp == 1:
        return False
    return any_tp or spec.mamba2.n_groups % tp != 0


def nemotron_h_layers_error(spec, mixer_error: str | None) -> tuple[str, str] | None:
    """What the first Nemotron-H model class raises as it builds its layers in order, as (exception class, words); None:
    nothing. vLLM's (models/nemotron_h.py, v0.10.2) and SGLang's port of it (v0.5.3.post1-v0.5.5.post3) read
    config.rms_norm_eps in every layer, which no NemotronHConfig defines: a config that does not set it fails at layer
    0, before its Mamba2 mixer runs its assertions (the value is one of the mixer's arguments), whose refusal
    (`mixer_error`) comes next where a Mamba2 layer precedes the first MoE layer; ALL_DECODER_LAYER_TYPES has a class
    for the letters M, - and * only, so an "E" layer raises KeyError (the MoE layer came with vLLM 0.11.1 and SGLang
    0.5.6)."""
    if spec.norm_eps_keys is not None and "rms_norm_eps" not in spec.norm_eps_keys:
        return "AttributeError", ("'NemotronHConfig' object has no attribute 'rms_norm_eps' (this release's "
                                  "models/nemotron_h.py reads config.rms_norm_eps, which the config does not set)")
    kinds = layer_kinds(spec)
    moe = next((i for i, k in enumerate(kinds) if "moe" in k), len(kinds))
    if mixer_error is not None and any("mamba2" in k for k in kinds[:moe]):
        return "AssertionError", mixer_error
    if moe < len(kinds):
        return "KeyError", (f"'E' (layer {moe} is an MoE layer, which this release's models/nemotron_h.py does not "
                            "build: ALL_DECODER_LAYER_TYPES holds M, - and * only)")
    return None


def weights_overflow(weights: list[int], memory: int | None, where: str) -> str | None:
    """A run whose rank loads more weights than `memory` holds (`where` names it): the load runs out of CUDA memory
    (torch.OutOfMemoryError) before any cache is sized; None when every rank's fit, or without memory."""
    most = max(weights, default=0)
    if memory is None or most <= memory:
        return None
    return (f"torch.OutOfMemoryError: CUDA out of memory while the weights load: the weights one rank loads "
            f"({most / GIB:.2f} GiB) exceed {where} ({memory / GIB:.2f} GiB), before any cache")


def unrecognized_config(spec: ModelSpec) -> str | None:
    """transformers' AutoConfig.from_pretrained refusal of a config with no model type (models/auto/
    configuration_auto.py), as a mamba_ssm library config is (`config_format`); None for any other spec."""
    if spec.config_format != "mamba_ssm":
        return None
    return f"Unrecognized model in {spec.name}. Should have a `model_type` key in its config.json."


def unknown_model_type(model_type: str) -> str:
    """transformers' AutoConfig.from_pretrained refusal of a checkpoint whose model type it does not know and which
    ships no configuration code (models/auto/configuration_auto.py, 4.56-4.57), up to its advice to upgrade."""
    return (f"The checkpoint you are trying to load has model type `{model_type}` but Transformers does not recognize "
            "this architecture. This could be because of an issue with the checkpoint, or because your version of "
            "Transformers is out of date")
