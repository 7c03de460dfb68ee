"""One rank's share of a model: its layers, the TP that shards them, and their state shapes."""

from __future__ import annotations

from collections import Counter
from functools import cached_property

from msgspec import Struct

from mcache.core.errors import LayoutError
from mcache.core.kinds import KIND_MODULES, RECURRENT_KINDS
from mcache.core.kinds.base import CacheDtypes, ReplayInput, StateShape
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.spec import dtypes as dt_names
from mcache.core.spec.model import KINDS, SSM_HINT_KEYS, ModelSpec, layer_kinds

KDA_DEFAULT_SSM = "float32"  # the state dtype of a model with KDA layers when none is asked for


def resolve_dtypes(
    spec: ModelSpec, kv: str | None = None, conv: str | None = None, ssm: str | None = None
) -> CacheDtypes:
    """Dtype policy of the neutral model: a command-line override, else the spec's field (for the state: its
    `ssm_dtype`, else the checkpoint's first hint), else the model dtype; a model with KDA layers keeps its state in
    float32 unless one is asked for (SGLang and vLLM from 0.30 hold KDA's state in the SSM dtype given, float32
    by default).

    An override its role does not accept raises `LayoutError` naming the role's field.
    """
    for field, value in (("kv_dtype", kv), ("conv_dtype", conv), ("ssm_dtype", ssm)):
        if value is not None and dt_names.for_role(value, field) is None:
            raise LayoutError(field, f"one of {dt_names.allowed_for(field)}, got {value!r}")
    model = dt_names.canonical(spec.dtype)

    def pick(override: str | None, field: str | None) -> str:
        return dt_names.canonical(override or field or model)

    state = spec_ssm_dtype(spec) or (KDA_DEFAULT_SSM if spec.kda is not None else None)
    return CacheDtypes(model=model, kv=pick(kv, spec.kv_dtype), conv=pick(conv, spec.conv_dtype), ssm=pick(ssm, state))


def spec_ssm_dtype(spec: ModelSpec) -> str | None:
    """The state dtype the spec asks for: its `ssm_dtype`, else the first of the checkpoint's hints."""
    hints = [spec.ssm_dtype_hints[k] for k in SSM_HINT_KEYS if k in spec.ssm_dtype_hints]
    return spec.ssm_dtype or next(iter(hints), None)


def dtype_sources(spec: ModelSpec, kv: str | None = None, conv: str | None = None, ssm: str | None = None) -> dict[str, str]:
    """Where each cache dtype of `resolve_dtypes` came from: the option, the spec field, or the model dtype."""

    def source(override: str | None, field: str) -> str:
        if override:
            return f"--{field.replace('_', '-')}"
        return f"spec {field}" if getattr(spec, field) else "model dtype"

    hint = next((k for k in SSM_HINT_KEYS if k in spec.ssm_dtype_hints), None)
    ssm_source = f"config {hint}" if not ssm and not spec.ssm_dtype and hint else source(ssm, "ssm_dtype")
    if ssm_source == "model dtype" and spec.kda is not None:
        ssm_source = f"{KDA_DEFAULT_SSM}, KDA's default"
    kv_source = source(kv, "kv_dtype")
    if kv_source == "model dtype" and checkpoint_kv_format(spec):
        kv_source += (f"; the checkpoint stores KV as {checkpoint_kv_format(spec)} (quantization.kv_cache), which engines "
                      "take for --kv-cache-dtype auto: pass --kv-dtype to size it")
    return {"kv": kv_source, "conv": source(conv, "conv_dtype"), "ssm": ssm_source}


def checkpoint_kv_format(spec: ModelSpec) -> str | None:
    """The KV cache format the checkpoint declares (the spec's `quantization.kv_cache`), or None."""
    return spec.quantization.kv_cache if spec.quantization is not None else None


class RankContext(Struct, frozen=True, dict=True):
    """Everything that sizes the pools of one rank (one TP rank of PP stage `stage`)."""

    spec: ModelSpec
    layout: ParallelLayout
    runtime: RuntimeConfig
    dtypes: CacheDtypes
    stage: int
    layers: range
    counts: Counter

    @classmethod
    def build(cls, spec, layout, runtime, dtypes, stage: int) -> RankContext:
        """The context of PP stage `stage`."""
        layers = layout.stages(spec.num_layers)[stage]
        kinds = layer_kinds(spec)
        counts = Counter(k for i in layers for k in kinds[i])
        return cls(spec, layout, runtime, dtypes, stage, layers, counts)

    @property
    def kinds(self) -> list[str]:
        """Kinds present on this rank, in report order."""
        return [k for k in KINDS if self.counts.get(k)]

    @property
    def recurrent_kinds(self) -> list[str]:
        """Kinds with per-slot state on this rank."""
        return [k for k in self.kinds if k in RECURRENT_KINDS]

    @cached_property
    def _kinds_of_layers(self) -> tuple[tuple[str, ...], ...]:
        return layer_kinds(self.spec)

    def layers_of(self, kind: str) -> list[int]:
        """Global indices of this rank's layers that hold `kind`."""
        return [i for i in self.layers if kind in self._kinds_of_layers[i]]

    @cached_property
    def _states(self) -> dict[str, list[StateShape]]:
        return {
            k: KIND_MODULES[k].states(self.spec, getattr(self.spec, k), self.layout.state_tp, self.dtypes)
            for k in self.kinds
        }

    def states(self, kind: str) -> list[StateShape]:
        """Per-layer states of `kind` on this rank (KV per token, conv/SSM per slot)."""
        return self._states[kind]

    def replay_inputs(self, kind: str) -> list[ReplayInput] | None:
        """Per-token replay-ring entries of `kind` in fold order, or None if it has no replay (uses intermediate states)."""
        fn = getattr(KIND_MODULES[kind], "replay_inputs", None)
        return fn(self.spec, getattr(self.spec, kind), self.layout.state_tp, self.dtypes) if fn else None

    @property
    def max_requests(self) -> int:
        """Requests in flight on the rank: max batch (per micro-batch) x pp stages."""
        return self.runtime.max_batch * self.layout.pp

    @property
    def num_slots(self) -> int:
        """State slots of the pool: 0 without recurrent layers, else max requests + reserved."""
        if not self.recurrent_kinds:
            return 0
        return self.max_requests + self.runtime.reserved(self.layout.attention_dp)
