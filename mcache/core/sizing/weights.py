"""Parameters and stored weight bytes per rank, so capacity planning can subtract the weights.

The weights of a layer are units: each kind's parts (`proj` for its projections, `experts` and
`shared_experts` for a MoE's, `gate_proj` for GatedDeltaNet's small `[b|a]` projection, `other` for convs,
norms, routers and small vectors), plus the embeddings, the
output head (`lm_head`), the MTP layers (`mtp`) and a multimodal checkpoint's vision tower (`core/sizing/vision.py`,
on every PP stage, in the model dtype). A unit is stored in the model dtype, or, when the spec's
`quantization` covers it, in a quantized format whose bytes per parameter include its scales.

MTP layers are weighed only where they are loaded: engines skip a checkpoint's `mtp.*` tensors unless a speculative
MTP draft is configured, which builds them as a separate draft model (vLLM v0.33.0 model_executor/models/
qwen3_next.py and nemotron_h.py `load_weights`, against qwen3_next_mtp.py and nemotron_h_mtp.py; transformers'
classes have no MTP modules at all); a spec's drafter (`core/sizing/drafter.py`) drafts in their place, and is weighed
instead. `loads_draft_head` is that rule; every figure below takes its answer as `mtp`.

Under attention data parallelism (each TP rank of a stage runs a batch of its own) a rank keeps every weight whole but a
MoE's routed experts, which stay split over the TP ranks: the neutral model's rule, and what the engines commonly load
(vLLM's DP engine cores of TP 1, their experts split over DP x TP; TensorRT-LLM's `enable_attention_dp`, whose attention,
recurrent mixers, embedding, head, dense and shared-expert MLPs take TP 1). An engine that still shards some weights over
the TP ranks names them (`dp_sharded`, see `shard_ways`).
"""

from __future__ import annotations

from fractions import Fraction

from msgspec.structs import replace

from mcache.core.errors import LayoutError
from mcache.core.kinds import KIND_MODULES
from mcache.core.sizing import drafter
from mcache.core.sizing.rank import RankContext
from mcache.core.sizing.vision import rank_tower_params, tower_params
from mcache.core.spec.dtypes import canonical, itemsize
from mcache.core.spec.model import QUANT_FORMATS, ModelSpec, Quantization, layer_kinds, parse_unit, remembered

GIB = 1 << 30
UNQUANTIZED_PARTS = ("other",)
# The formats the weights may be weighed as (`--weight-format`): the model dtypes by name, then `QUANT_FORMATS`
UNQUANTIZED_FORMATS = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16"}
WEIGHT_FORMATS = (*UNQUANTIZED_FORMATS, *QUANT_FORMATS)  # convs, norms, routers, small gates: never quantized (vLLM builds them without)
# Bytes per parameter of each format, scales included (vllm/model_executor/layers/quantization: modelopt.py,
# mxfp4.py, fp8.py, compressed_tensors): 4-bit values with an fp8 scale per group of 16 (nvfp4) or an e8m0 scale
# per 32 (mxfp4); fp8 with a per-tensor scale, or an fp32 scale per 128 x 128 block; int4 with a 16-bit scale per
# group (and a 4-bit zero point with zero points); int8 with per-channel scales (counted as 1 byte).


def format_bytes(q: Quantization, fmt: str) -> Fraction:
    """Bytes one parameter of format `fmt` takes, scales included."""
    if fmt == "nvfp4":
        return Fraction(1, 2) + Fraction(1, q.group_size or 16)
    if fmt == "mxfp4":
        return Fraction(1, 2) + Fraction(1, q.group_size or 32)
    if fmt == "fp8_block":
        return 1 + Fraction(4, 128 * 128)
    if fmt == "int4":
        group = q.group_size or 128
        return Fraction(1, 2) + Fraction(2, group) + (Fraction(1, 2 * group) if q.zero_points else 0)
    if fmt == "nf4":  # bitsandbytes functional.py quantize_4bit (compress_statistics: absmax in 8 bits, blocks of 256)
        group = q.group_size or 64
        return Fraction(1, 2) + (Fraction(1, group) + Fraction(4, group * 256) if q.double_quant else Fraction(4, group))
    return Fraction(1)  # fp8, int8


def weighed_as(spec: ModelSpec, fmt: str | None) -> ModelSpec:
    """`spec` with its weights stored in `fmt` (the `weight_format` option; None: as the spec says): bf16 or fp16
    unquantized, or one of `QUANT_FORMATS` over every linear layer but the output head (which checkpoints keep in the
    model dtype), weighed as `Storage` weighs a checkpoint's quantization. A `LayoutError` for another name."""
    if fmt is None:
        return spec
    if fmt in UNQUANTIZED_FORMATS:
        return replace(spec, dtype=UNQUANTIZED_FORMATS[fmt], quantization=None)
    if fmt not in QUANT_FORMATS:
        raise LayoutError("weight_format", f"one of {', '.join(WEIGHT_FORMATS)}, got {fmt!r}")
    kv = spec.quantization.kv_cache if spec.quantization else None
    return replace(spec, quantization=Quantization(format=fmt, unquantized=["lm_head"], kv_cache=kv,
                                                   source=f"weighed as {fmt}"))


def unknown_fields(spec: ModelSpec) -> list[str]:
    """The spec fields the weight estimate needs that are unknown (null); with any, no weight figure exists."""
    used = {k for layer in layer_kinds(spec) for k in layer} | (set(spec.mtp.layer.split("+")) if spec.mtp else set())
    needed = [("vocab_size", spec.vocab_size)]
    if "mlp" in used:
        needed.append(("mlp.intermediate_size", spec.mlp.intermediate_size))
    if "moe" in used:
        needed.append(("moe.expert_intermediate_size", spec.moe.expert_intermediate_size))
    return [name for name, value in needed if value is None]


def layer_units(spec: ModelSpec, kinds: tuple[str, ...]) -> list[tuple[str, str, int]]:
    """`(kind, part, parameters)` of one layer made of `kinds`, a norm per kind in `other` (but for a kind whose module
    says `PRE_NORM = False`: one that reads a normed input or norms its own); a shared block's own weights count once,
    in `shared_units`, and here only what each layer running it has (`layer_weights`: adapters, a layer's linear)."""
    units = []
    for kind in kinds:
        block, module = getattr(spec, kind), KIND_MODULES[kind]
        parts = {} if getattr(block, "shared_blocks", None) else module.weights(spec, block)
        if hasattr(module, "layer_weights"):
            parts = {**parts, **module.layer_weights(spec, block)}
        units += [(kind, part, n) for part, n in parts.items() if n]
        if getattr(module, "PRE_NORM", True):
            units.append((kind, "other", spec.hidden_size))
    return units


def layer_params(spec: ModelSpec, kinds: tuple[str, ...]) -> int:
    """Parameters of one layer made of `kinds`."""
    return sum(n for _, _, n in layer_units(spec, kinds))


def shared_units(spec: ModelSpec, kinds: set[str]) -> list[tuple[str, str, int]]:
    """Weights of blocks shared across layers (Zamba2's shared attention + MLP), counted once."""
    units = []
    for kind in sorted(kinds):
        block = getattr(spec, kind)
        if getattr(block, "shared_blocks", None):
            units += [(kind, part, block.shared_blocks * n) for part, n in KIND_MODULES[kind].weights(spec, block).items()]
    return units


def embedding_params(spec: ModelSpec) -> tuple[int, int]:
    """(input embedding, output head) parameters; a tied head adds none."""
    emb = spec.vocab_size * spec.hidden_size
    return emb, 0 if spec.tie_embeddings else emb


def loads_draft_head(spec: ModelSpec, draft_tokens: int) -> bool:
    """Whether a deployment loads a head that drafts: it drafts tokens, with the spec's drafter (a draft model of its
    own) or else the model's MTP layers (as `mcache plan`'s serve commands configure it)."""
    return (spec.drafter is not None or spec.mtp is not None) and draft_tokens > 0


def mtp_units(spec: ModelSpec) -> list[tuple[str, str, int]]:
    """`(kind, part, parameters)` of the multi-token-prediction layers: each a layer of `mtp.layer` plus its `[2h, h]`
    input projection and two norms (kind `mtp`)."""
    if spec.mtp is None:
        return []
    h = spec.hidden_size
    one = [*layer_units(spec, tuple(spec.mtp.layer.split("+"))), ("mtp", "proj", 2 * h * h), ("mtp", "other", 2 * h)]
    return [(kind, part, spec.mtp.num_layers * n) for kind, part, n in one]


def mtp_params(spec: ModelSpec) -> int:
    """Parameters of the multi-token-prediction layers (`mtp_units`)."""
    return sum(n for *_, n in mtp_units(spec))


def total_params(spec: ModelSpec, mtp: bool = False) -> int | None:
    """Parameters of the model as it is built to serve (the MTP layers only with `mtp`); None when
    `unknown_fields`."""
    if unknown_fields(spec):
        return None
    kinds = layer_kinds(spec)
    emb, head = embedding_params(spec)
    used = {k for layer in kinds for k in layer}
    layers = sum(layer_params(spec, k) for k in kinds) + sum(n for *_, n in shared_units(spec, used))
    return layers + emb + head + spec.hidden_size + tower_params(spec.vision) + (mtp_params(spec) if mtp else 0)


class Storage:
    """Bytes per parameter of each weight unit of a spec: the model dtype, or its quantized format."""

    def __init__(self, spec: ModelSpec):
        self.spec, self.q = spec, spec.quantization
        self.plain = Fraction(itemsize(canonical(spec.dtype)))
        self.rules: list[tuple[str, str | None, tuple[int, ...] | None, Fraction]] = []
        if self.q is not None:
            for fmt, units in self.q.other_formats.items():
                self.rules += [(*parse_unit(u), format_bytes(self.q, fmt)) for u in units]
            self.rules += [(*parse_unit(u), self.plain) for u in self.q.unquantized]

    def per_param(self, kind: str, part: str | None = None, layer: int | None = None) -> Fraction:
        """Bytes per parameter of `kind`'s `part` in `layer` (`lm_head`, `mtp`: no part or layer)."""
        if self.q is None or part in UNQUANTIZED_PARTS:
            return self.plain
        for name, rule_part, layers, cost in self.rules:
            if name == kind and rule_part in (None, part) and (layers is None or layer in layers):
                return cost
        return format_bytes(self.q, self.q.format)


def stored_bytes(spec: ModelSpec, mtp: bool = False) -> int | None:
    """Bytes the model's weights take as the checkpoint stores them (the MTP layers only with `mtp`); None when
    `unknown_fields`."""
    if unknown_fields(spec):
        return None
    store = Storage(spec)
    kinds = layer_kinds(spec)
    used = {k for layer in kinds for k in layer}
    total = sum(n * store.per_param(k, part, i) for i, layer in enumerate(kinds) for k, part, n in layer_units(spec, layer))
    total += sum(n * store.per_param(k, part) for k, part, n in shared_units(spec, used))
    emb, head = embedding_params(spec)
    total += (emb + spec.hidden_size + tower_params(spec.vision)) * store.plain + head * store.per_param("lm_head")
    total += (mtp_params(spec) if mtp else 0) * store.per_param("mtp")
    return int(total)


# Units every engine keeps whole on each TP rank: a latent MoE's projections into and out of its latent space
# (NemotronHMoE's fc1_latent_proj / fc2_latent_proj: ReplicatedLinear in vLLM v0.28-v0.30 and SGLang v0.5.23
# models/nemotron_h.py; TensorRT-LLM modeling_nemotron_h.py builds them without a TP mapping, "replicated across all
# GPUs"), a DFlash drafter's fc (a ReplicatedLinear in vLLM), a DSA indexer (vLLM v0.34.0 models/glm5next/common/
# attention.py: wq_b a ReplicatedLinear, wk and weights_proj one linear with disable_tp, the pool's gate a parameter)
# and mHC's mixing weights (parameters every rank holds whole: vLLM and SGLang v0.5.20 models/glm5_next.py).
REPLICATED = frozenset({"moe.proj", "drafter.fc", "dsa_indexer.proj", "dsa_indexer.other", "mhc.other"})


def shard_ways(ctx: RankContext, kind: str, part: str | None = None, expert_shards: int = 1,
               dp_sharded: frozenset[str] = frozenset(), dp_whole: frozenset[str] = frozenset()) -> int:
    """Ways one rank's stage splits a weight unit: `kind` a layer kind (its `part`), `mtp`, `embedding`, `lm_head` or
    `vision`. TP splits every unit but the `REPLICATED`; a MoE's routed experts `expert_shards` ways more. Under
    attention DP the routed experts and what `dp_sharded` names (a kind, or `kind.part` such as `moe.shared_experts`)
    stay split over TP, what `dp_whole` names is whole on every rank, and the rest is split over the attention-TP
    group (`ParallelLayout.state_tp`: whole at attention DP of width tp)."""
    tp = ctx.layout.tp
    if part == "experts":
        return tp * expert_shards
    if f"{kind}.{part}" in REPLICATED:
        return 1
    if not ctx.layout.attention_dp or kind in dp_sharded or f"{kind}.{part}" in dp_sharded:
        return tp
    return 1 if kind in dp_whole else ctx.layout.state_tp


def _rank_units(ctx: RankContext, mtp: bool, expert_shards: int, dp_sharded: frozenset[str],
                dp_whole: frozenset[str], host: frozenset[str] = frozenset()) -> list[tuple[int, Fraction]]:
    """`(parameters, bytes per parameter)` of every weight unit one rank holds, each split `shard_ways`: its stage's
    layers (but the `kind.part` units `host` names, which an engine keeps in host memory), embeddings on the first
    stage, the final norm (whole on every TP rank), the head and (with `mtp`) the MTP layers on the last (the spec's
    drafter in their place when it has one); the vision tower on every stage (`rank_tower_params`)."""
    spec, store = ctx.spec, Storage(ctx.spec)
    kinds = layer_kinds(spec)

    def ways(kind: str, part: str | None = None) -> int:
        return shard_ways(ctx, kind, part, expert_shards, dp_sharded, dp_whole)

    units = [(n // ways(k, part), store.per_param(k, part, i)) for i in ctx.layers
             for k, part, n in layer_units(spec, kinds[i]) if f"{k}.{part}" not in host]
    units.append((rank_tower_params(spec.vision, ways("vision")), store.plain))
    units += [(n // ways(k, part), store.per_param(k, part)) for k, part, n in shared_units(spec, set(ctx.kinds))]
    emb, head = embedding_params(spec)
    if ctx.stage == 0:
        units.append((emb // ways("embedding"), store.plain))
    if ctx.stage == ctx.layout.pp - 1:
        units.append((spec.hidden_size, store.plain))
        units.append(((head or (emb if ctx.layout.pp > 1 else 0)) // ways("lm_head"), store.per_param("lm_head")))
        if mtp and spec.drafter is not None:
            units += [(n // ways(k, part), store.plain) for k, part, n in drafter.units(spec)]
        elif mtp:
            units += [(n // ways(k, part), store.per_param("mtp")) for k, part, n in mtp_units(spec)]
    return units


def rank_weights(ctx: RankContext, mtp: bool = False, expert_shards: int = 1, dp_sharded: frozenset[str] = frozenset(),
                 dp_whole: frozenset[str] = frozenset(), host: frozenset[str] = frozenset()
                 ) -> tuple[int | None, int | None]:
    """(parameters one rank holds, bytes they take as the checkpoint stores them), the MTP layers only with `mtp`, the
    routed experts split `expert_shards` ways beyond the layout's TP (an engine that shards them over its
    data-parallel ranks too), `dp_sharded` what an engine still splits over TP under attention DP and `dp_whole` what it
    keeps whole (`shard_ways`), less the layer units `host` names (kept in host memory); when
    `unknown_fields`, no parameter count and the checkpoint index's share (`index_share`), or both None."""
    if unknown_fields(ctx.spec):
        return None, index_share(ctx.spec, ctx.layout.tp * ctx.layout.pp)
    layout, layers = ctx.layout, ctx.layers  # all that `_rank_units` reads besides the spec

    def count() -> tuple[int, int]:
        units = _rank_units(ctx, mtp, expert_shards, dp_sharded, dp_whole, host)
        return sum(n for n, _ in units), int(sum(n * cost for n, cost in units))

    key = ("rank_weights", layout, ctx.stage, layers.start, layers.stop, mtp, expert_shards, dp_sharded, dp_whole, host)
    return remembered(ctx.spec, key, count)


def rank_weight_bytes(ctx: RankContext, mtp: bool = False, expert_shards: int = 1,
                      dp_sharded: frozenset[str] = frozenset(), dp_whole: frozenset[str] = frozenset(),
                      host: frozenset[str] = frozenset()) -> int | None:
    """Bytes of the weights one rank loads, as the checkpoint stores them (None when `weights_known` is false)."""
    return rank_weights(ctx, mtp, expert_shards, dp_sharded, dp_whole, host)[1]


def index_share(spec: ModelSpec, ranks: int) -> int | None:
    """What the config cannot say, the checkpoint's index does: its stored size split evenly over the `ranks` of a
    replica (TP x PP), rounded up. An average: PP's first and last stages hold the embeddings and head besides, and the
    index counts any MTP tensors it stores (`index_note` says so). None without an index."""
    stored = spec.stored_weights
    return None if stored is None else -(-stored.total_size // ranks)


def weights_known(spec: ModelSpec) -> bool:
    """Whether a rank's weights have a figure: mcache's estimate, or else the checkpoint index's share."""
    return not unknown_fields(spec) or spec.stored_weights is not None


INDEX_TOLERANCE = 0.02  # a larger gap between mcache's estimate and the index's stored size is noted


def index_note(spec: ModelSpec) -> str:
    """What the checkpoint's safetensors index says beside mcache's estimate: that capacity takes its size when the
    config leaves the weights unknown, or how far mcache's estimate is from it when more than `INDEX_TOLERANCE`
    (compared like for like: with the MTP layers when the index stores MTP tensors). Empty without an index."""
    stored = spec.stored_weights
    if stored is None:
        return ""
    size = f"{stored.total_size / GIB:.2f} GiB"
    mtp = (f"; its weight map names {stored.mtp_tensors} MTP tensors, which engines load only with an MTP draft"
           if stored.mtp_tensors else "")
    unknown = unknown_fields(spec)
    if unknown:
        return (f"The config leaves {', '.join(unknown)} unknown, so capacity takes the weights from the checkpoint's "
                f"safetensors index ({stored.source}): {size} stored, split evenly over the TP x PP ranks{mtp}.")
    with_mtp = spec.mtp is not None and stored.mtp_tensors > 0
    estimate = compared_bytes(spec)
    gap = estimate / stored.total_size - 1
    if abs(gap) <= INDEX_TOLERANCE:
        return ""
    layers = " (MTP layers included, as the index stores them)" if with_mtp else ""
    unmodelled = (f"; its weight map names {stored.mtp_tensors} MTP tensors, which the config does not describe"
                  if stored.mtp_tensors and not with_mtp else "")
    return (f"mcache's weight estimate{layers}, {estimate / GIB:.2f} GiB, is {abs(gap):.1%} "
            f"{'above' if gap > 0 else 'below'} the {size} the checkpoint stores ({stored.source}, "
            f"metadata.total_size){unmodelled}.")


def compared_bytes(spec: ModelSpec) -> int | None:
    """mcache's stored-size estimate as the index counts it (the MTP layers included when it stores MTP tensors);
    None without an index or with weights unknown."""
    stored = spec.stored_weights
    if stored is None or unknown_fields(spec):
        return None
    return stored_bytes(spec, mtp=spec.mtp is not None and stored.mtp_tensors > 0)
