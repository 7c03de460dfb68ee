"""Parameter counts per rank, so capacity planning can subtract the weights."""

from __future__ import annotations

from mcache.core.kinds import KIND_MODULES
from mcache.core.rank import RankContext
from mcache.core.spec import ModelSpec, layer_kinds

FFN_KINDS = ("mlp", "moe")


def layer_params(spec: ModelSpec, kinds: tuple[str, ...]) -> int:
    """Parameters of one layer made of `kinds`, plus a norm per kind; shared blocks count zero here."""
    total = 0
    for kind in kinds:
        block = getattr(spec, kind)
        if getattr(block, "shared_blocks", None) is None:
            total += KIND_MODULES[kind].weights(spec, block)
        total += spec.hidden_size
    return total


def shared_params(spec: ModelSpec, kinds: set[str]) -> int:
    """Weights of blocks shared across layers (Zamba2's shared attention + MLP), counted once."""
    total = 0
    for kind in sorted(kinds):
        block = getattr(spec, kind)
        if getattr(block, "shared_blocks", None):
            total += block.shared_blocks * KIND_MODULES[kind].weights(spec, block)
    return total


def embedding_params(spec: ModelSpec) -> tuple[int, int]:
    """(input embedding, output head) parameters; a tied head adds none."""
    emb = spec.vocab_size * spec.hidden_size
    return emb, 0 if spec.tie_embeddings else emb


def mtp_params(spec: ModelSpec) -> int:
    """Multi-token-prediction layers: each a layer of `mtp.layer` plus its `[2h, h]` input projection."""
    if spec.mtp is None:
        return 0
    per_layer = layer_params(spec, tuple(spec.mtp.layer.split("+"))) + 2 * spec.hidden_size**2 + 2 * spec.hidden_size
    return spec.mtp.num_layers * per_layer


def total_params(spec: ModelSpec) -> int:
    """Parameters of the whole model, MTP layers included."""
    kinds = layer_kinds(spec)
    emb, head = embedding_params(spec)
    used = {k for layer in kinds for k in layer}
    layers = sum(layer_params(spec, k) for k in kinds) + shared_params(spec, used)
    return layers + emb + head + spec.hidden_size + mtp_params(spec)


def rank_params(ctx: RankContext) -> int:
    """Parameters one rank holds: its stage's layers sharded by TP (mixers kept whole under
    attention-DP), embeddings on the first stage, the head and MTP layers on the last."""
    spec, tp = ctx.spec, ctx.layout.tp

    def shard(kind: str) -> int:
        return layer_params(spec, (kind,)) // (tp if kind in FFN_KINDS or not ctx.layout.attention_dp else 1)

    total = sum(ctx.counts[k] * shard(k) for k in ctx.kinds) + shared_params(spec, set(ctx.kinds)) // tp
    emb, head = embedding_params(spec)
    last = ctx.stage == ctx.layout.pp - 1
    if ctx.stage == 0:
        total += emb // tp
    if last:
        total += (head or (emb if ctx.layout.pp > 1 else 0)) // tp + mtp_params(spec) // tp
    return total

