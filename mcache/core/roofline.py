"""A decode step's memory roofline: the bytes one decode step must move on each GPU of a replica, over the GPU's
memory bandwidth, give a lower bound on the step's time, so an upper bound on tokens/s per GPU and a lower bound on
the time per output token. No efficiency factor is invented: real engines reach a fraction of it.

What a step moves on one rank of PP stage s (every TP rank of a stage moves the same), for `m` sequences of
`context` tokens in a micro-batch (`m` = ceil(sequences / pp): one micro-batch per stage in flight):

- weights, read once per micro-batch: the rank's weights, but of a MoE's routed experts only the share a step's
  tokens touch: with `n` = m x (1 + draft) tokens each routed to `top_k` of `E` experts uniformly, the expected
  share is 1 - (1 - top_k / E)^n (all experts as n grows). Given weights (`--weights`) are read whole;
- KV read for every sequence: its context's tokens (a window caps a sliding-window layer), per token the bytes the
  estimator declares for the rank (`RankEstimate.components`, per `token`);
- recurrent state read and written once per sequence: 2 x the conv and SSM bytes of a slot;
- drafts: the extra positions' KV (draft x KV bytes per token) and the speculative buffers (per request and per
  slot) written once.

A stage works `pp` micro-batches per step, so the step takes max over stages of pp x (its bytes for one
micro-batch) / bandwidth; every sequence gains at most 1 + draft tokens a step (every draft accepted: the bound).
"""

from __future__ import annotations

from math import ceil

from msgspec import Struct

from mcache.core.sizing.estimate import RankEstimate
from mcache.core.sizing.weights import Storage, layer_units, unknown_fields
from mcache.core.spec.model import ModelSpec, layer_kinds


class Roofline(Struct, frozen=True):
    """The busiest rank's bytes for one step of the replica (all its micro-batches), by what they are, and the bounds
    they give at `sequences` per replica: the step's time, tokens/s per GPU and the time per output token."""

    sequences: int
    weights_bytes: int
    kv_bytes: int
    state_bytes: int
    draft_bytes: int
    step_bytes: int
    state_share: float  # the recurrent state's share of the step's bytes (what a KV-only roofline leaves out)
    step_s: float
    tokens_per_s_per_gpu: float
    tpot_ms: float


def expert_share(spec: ModelSpec, tokens: int) -> float:
    """Expected share of a MoE's routed experts that `tokens` tokens touch under uniform routing (1 without a MoE
    or its top_k)."""
    moe = spec.moe
    if moe is None or not moe.top_k or tokens <= 0:
        return 1.0
    return 1.0 - (1.0 - min(moe.top_k, moe.num_experts) / moe.num_experts) ** tokens


def routed_expert_bytes(rank: RankEstimate) -> int:
    """Bytes of the routed experts one rank holds (its stage's MoE layers, sharded by TP), as stored."""
    ctx = rank.ctx
    if ctx.spec.moe is None or rank.weight_bytes is None or unknown_fields(ctx.spec):
        return 0  # weights from the checkpoint's index (unknown widths): read whole, an upper bound
    store, kinds, tp = Storage(ctx.spec), layer_kinds(ctx.spec), ctx.layout.tp
    return int(sum(n // tp * store.per_param(k, part, i) for i in ctx.layers
                   for k, part, n in layer_units(ctx.spec, kinds[i]) if part == "experts"))


def _stage_bytes(rank: RankEstimate, weights: int | None, m: int, context: int, draft: int) -> tuple[int, ...]:
    """(weights, KV, state, draft) bytes one rank moves for a micro-batch of `m` sequences of its own (under attention
    DP its MoE layers route the tokens of every rank of the stage)."""
    spec = rank.ctx.spec
    if weights is None:
        experts = routed_expert_bytes(rank)
        tokens = m * rank.ctx.layout.attention_dp_ranks * (1 + draft)
        weights = rank.weight_bytes - experts + int(experts * expert_share(spec, tokens))
    tokens = [c.decl for c in rank.components if c.decl.per == "token"]
    kv = sum(d.bytes_per_unit * min(context, d.window or context) for d in tokens)
    state = 2 * rank.state_bytes_per_slot
    drafts = (draft * sum(d.bytes_per_unit for d in tokens)
              + sum(c.decl.bytes_per_unit for c in rank.components if c.decl.component == "spec"
                    and c.decl.per in ("request", "slot"))) if draft else 0
    return weights, m * kv, m * state, m * drafts


def roofline(ranks: list[RankEstimate], weights: int | None, sequences: int, context: int, draft: int,
             bandwidth: int) -> Roofline | None:
    """The bound at `sequences` per replica of `context` tokens over `ranks` (one per PP stage, each on TP GPUs; under
    attention DP each of them a batch of its own, an even share of the sequences) at `bandwidth` bytes/s per GPU;
    `weights`: the bytes each rank loads when given (else the estimate's). None when nothing runs, or the weights are
    unknown."""
    if sequences < 1 or not ranks or (weights is None and any(r.weight_bytes is None for r in ranks)):
        return None
    layout = ranks[0].ctx.layout
    pp, tp = len(ranks), layout.tp
    m = ceil(sequences / (pp * layout.attention_dp_ranks))
    per_stage = [tuple(pp * b for b in _stage_bytes(r, weights, m, context, draft)) for r in ranks]
    busiest = max(per_stage, key=sum)
    total = sum(busiest)
    step_s = total / bandwidth
    tokens = sequences * (1 + draft)
    return Roofline(sequences, *busiest, total, busiest[2] / total, step_s, tokens / step_s / (tp * pp),
                    1000 * step_s / (1 + draft))
