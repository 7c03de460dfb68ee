"""A spec's drafter (`ModelSpec.drafter`, a DFlash draft model): which of its layers are windowed, the KV its attention
layers keep per token (the `attention` kind's own declaration, so one formula sizes every KV), and its weights.

It is loaded, and its layers keep KV, only while the deployment drafts, on the last PP stage (where engines put the
drafter, as they put MTP layers), with its KV heads split over the stage's TP like the model's."""

from __future__ import annotations

from msgspec.structs import replace

from mcache.core.errors import LayoutError
from mcache.core.kinds import attention
from mcache.core.kinds.base import StateShape
from mcache.core.spec.model import Drafter, ModelSpec

NAME = "drafter"  # the kind its KV declarations and weight units go by


def windowed(d: Drafter) -> list[bool]:
    """Whether each layer is windowed, as vLLM v0.25.0 on reads the config (qwen3_dflash.py
    `_resolve_layer_attention`): `use_swa` windows every layer when no type says sliding, else `layer_types` does."""
    sliding = [t == "sliding_attention" for t in d.layer_types]
    if not d.layer_types or (d.use_swa and not any(sliding)):
        return [d.use_swa] * d.num_layers
    return sliding


def windows(d: Drafter, honoured: bool = True) -> list[int | None]:
    """Each layer's sliding window (None: full attention, also where the config names no window); without `honoured`
    (vLLM before v0.25.0, whose DFlash layers are all full attention) none."""
    if not honoured:
        return [None] * d.num_layers
    return [d.sliding_window if w else None for w in windowed(d)]


def drafts_with(spec: ModelSpec, draft_tokens: int) -> bool:
    """Whether the spec's drafter drafts (it has one, and the deployment drafts tokens)."""
    return spec.drafter is not None and draft_tokens > 0


def layer_windows(ctx, drafts: int, honoured: bool = True) -> dict[int | None, int]:
    """The drafter's layers on the rank of `ctx` by window (None: full attention) when the deployment drafts `drafts`
    tokens a step: none unless it drafts there."""
    spec = ctx.spec
    if not drafts_with(spec, drafts) or ctx.stage != ctx.layout.pp - 1:
        return {}
    counts: dict[int | None, int] = {}
    for window in windows(spec.drafter, honoured):
        counts[window] = counts.get(window, 0) + 1
    return counts


def states(ctx, window: int | None) -> list[StateShape]:
    """KV per token of one drafter layer with `window` on the rank of `ctx` (the attention kind's, from the drafter's
    geometry)."""
    p = replace(ctx.spec.drafter.attention, sliding_window=window)
    try:
        return attention.states(ctx.spec, p, ctx.layout.state_tp, ctx.dtypes)
    except LayoutError as err:  # the drafter's heads, not the model's: named by the option that gave them
        raise LayoutError("draft_model", f"a drafter whose heads split over the ranks ({err.expected})") from None


def units(spec: ModelSpec) -> list[tuple[str, str, int]]:
    """`(kind, part, parameters)` of the drafter: per layer q/k/v/o (and q/k norms), a gated MLP and two norms; the
    `fc` (split nowhere: ReplicatedLinear) and the drafter's two norms."""
    d = spec.drafter
    if d is None:
        return []
    h, a = d.hidden_size, d.attention
    per_layer = attention.weights(replace(spec, hidden_size=h), a)["proj"]
    fc = (d.target_hidden_size or h) * d.target_layers * h if d.fc else 0
    return [(NAME, "proj", d.num_layers * (per_layer + 3 * h * d.intermediate_size)),
            (NAME, "other", d.num_layers * (2 * h + 2 * a.head_dim)),
            (NAME, "fc", fc), (NAME, "other", 2 * h)]
