"""The per-rank memory estimator: sums the buffer declarations of every rank of a deployment."""

from __future__ import annotations

from msgspec import Struct

from mcache.core.errors import LayoutError
from mcache.core.kinds import KIND_MODULES
from mcache.core.kinds.base import CacheDtypes
from mcache.core.sizing import drafter, weights
from mcache.core.sizing.auxiliary import aux_declarations
from mcache.core.sizing.buffers import BufferDecl
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import RankContext
from mcache.core.spec.model import ModelSpec


def base_declarations(ctx: RankContext) -> list[BufferDecl]:
    """KV pools of attention layers and conv/SSM pools of recurrent layers on this rank, the KV of a drafter's
    layers while it drafts here (kind `drafter`, its windowed layers `drafter_window`) and of the MTP layers' attention
    while they draft here (kind `mtp`)."""
    def decl(s, kind: str, layers: int) -> BufferDecl:
        return BufferDecl(s.name, s.component, kind, layers, s.per, s.shape, s.axes, s.dtype, s.window, role=s.role,
                          tokens_per_row=s.tokens_per_row)

    decls = [decl(s, kind, ctx.counts[kind]) for kind in ctx.kinds for s in ctx.states(kind)]
    for window, n in drafter.layer_windows(ctx, ctx.runtime.draft_tokens).items():
        kind = drafter.NAME if window is None else f"{drafter.NAME}_window"
        decls += [decl(s, kind, n) for s in drafter.states(ctx, window)]
    decls += [decl(s, MTP, ctx.spec.mtp.num_layers) for s in mtp_kv_states(ctx)]
    return decls


MTP = "mtp"  # the kind the MTP layers' KV declarations go by
# an indexer's keys (and its ring) beside attention
MTP_KV_KINDS = ("attention", "sliding_attention", "mla", "indexer", "dsa_indexer")


def mtp_kv_states(ctx: RankContext) -> list:
    """KV per token of one MTP layer on the rank of `ctx` while the MTP layers draft (the spec has them, no drafter
    takes their place, the deployment drafts tokens), on the last PP stage, where engines put them: the states of its
    attention kind, as the model's own layers of that kind keep them (with an indexer's keys and ring where the layer
    has one: Qwen3.8-Flash-Next's MTP layer is QSA attention). Engines give the MTP layer a KV cache of its own
    (vLLM's MTP attention joins the KV groups, SGLang's draft pool holds it); a recurrent MTP layer is not modelled."""
    spec = ctx.spec
    if spec.mtp is None or drafter.drafts_with(spec, ctx.runtime.draft_tokens) or not ctx.runtime.draft_tokens:
        return []
    if ctx.stage != ctx.layout.pp - 1:
        return []
    kinds = [k for k in spec.mtp.layer.split("+") if k in MTP_KV_KINDS and getattr(spec, k) is not None]
    return [s for k in kinds for s in KIND_MODULES[k].states(spec, getattr(spec, k), ctx.layout.state_tp, ctx.dtypes)]


def declarations(ctx: RankContext) -> list[BufferDecl]:
    """Every buffer of the rank: base states, then the auxiliary registry's. Buffer keys must be unique."""
    decls = base_declarations(ctx) + aux_declarations(ctx)
    seen: set[str] = set()
    for decl in decls:
        if decl.key in seen:
            names = [a.name for a in ctx.spec.aux_buffers]
            field = f"aux_buffers[{names.index(decl.name)}].name" if decl.name in names else "aux_buffers"
            raise LayoutError(field, f"a name no other buffer of the rank has, got {decl.key!r}")
        seen.add(decl.key)
    return decls


def units_of(decl: BufferDecl, ctx: RankContext) -> int:
    """How many units of `decl` the rank holds (slots, batch rows, KV tokens, snapshots, or 1)."""
    rt = ctx.runtime
    if decl.per == "slot":
        return ctx.num_slots
    if decl.per == "request":
        return rt.max_batch
    if decl.per == "token":
        tokens = ctx.max_requests * rt.kv_tokens_per_seq(rt.max_seq_len, decl.window)
        return min(tokens, rt.kv_tokens_per_seq(rt.kv_tokens)) if rt.kv_tokens else tokens
    if decl.per == "snapshot":
        return rt.snapshot_slots
    return 1


class Component(Struct, frozen=True):
    """One line of the report: a pool, its unit size and how many units the rank holds."""

    decl: BufferDecl
    units: int

    @property
    def total_bytes(self) -> int:
        return self.decl.bytes_per_unit * self.units


class RankEstimate(Struct, frozen=True):
    """Bytes of one rank (every TP rank of a PP stage is the same)."""

    ctx: RankContext
    components: list[Component]
    weight_bytes: int | None  # None: the spec leaves a field the weights need unknown (weights.unknown_fields)
    param_count: int | None

    def _sum(self, component: str, per: str) -> int:
        return sum(
            c.decl.bytes_per_unit for c in self.components if c.decl.component == component and c.decl.per == per
        )

    @property
    def kv_bytes_per_token(self) -> int:
        """KV bytes one token adds across all attention layers of the rank (window-capped layers included)."""
        return self._sum("kv", "token")

    @property
    def conv_bytes_per_slot(self) -> int:
        return self._sum("conv", "slot")

    @property
    def ssm_bytes_per_slot(self) -> int:
        return self._sum("ssm", "slot")

    @property
    def state_bytes_per_slot(self) -> int:
        """Conv + SSM bytes of one slot across all recurrent layers of the rank."""
        return self.conv_bytes_per_slot + self.ssm_bytes_per_slot

    def bytes_of(self, component: str) -> int:
        """Total bytes of one component (kv, conv, ssm, spec, aux) for the configured slots and tokens."""
        return sum(c.total_bytes for c in self.components if c.decl.component == component)

    @property
    def cache_bytes(self) -> int:
        """All cache buffers of the rank."""
        return sum(c.total_bytes for c in self.components)

    def token_bytes(self) -> tuple[int, int]:
        """(bytes one token adds, total bytes) over every per-token buffer (KV and per-token aux)."""
        return self.bytes_per_unit("token"), sum(c.total_bytes for c in self.components if c.decl.per == "token")

    def kv_bytes_per_seq(self, seq_len: int) -> int:
        """KV bytes one sequence of `seq_len` tokens holds (blocks rounded up, windows capped)."""
        rt = self.ctx.runtime
        return sum(
            c.decl.bytes_per_unit * rt.kv_tokens_per_seq(seq_len, c.decl.window)
            for c in self.components
            if c.decl.per == "token"
        )

    def bytes_per_unit(self, per: str) -> int:
        """Bytes one unit of `per` (slot, request, token, ...) adds across every buffer of the rank."""
        return sum(c.decl.bytes_per_unit for c in self.components if c.decl.per == per)

    @property
    def bytes_per_request(self) -> int:
        """Per-batch-row buffers (speculative scratch) for one running request."""
        return self.bytes_per_unit("request")

    @property
    def static_bytes(self) -> int:
        """Bytes that do not scale with requests or tokens: per-rank and snapshot buffers."""
        return sum(c.total_bytes for c in self.components if c.decl.per in ("rank", "snapshot"))


class Estimate(Struct, frozen=True):
    """The estimate of every PP stage of a deployment."""

    spec: ModelSpec
    layout: ParallelLayout
    runtime: RuntimeConfig
    dtypes: CacheDtypes
    ranks: list[RankEstimate]


def estimate_rank(ctx: RankContext) -> RankEstimate:
    """Estimate one rank from its context."""
    comps = [Component(d, units_of(d, ctx)) for d in declarations(ctx)]
    params, stored = weights.rank_weights(ctx, weights.loads_draft_head(ctx.spec, ctx.runtime.draft_tokens))
    return RankEstimate(ctx, comps, stored, params)


def estimate(spec: ModelSpec, layout: ParallelLayout, runtime: RuntimeConfig, dtypes: CacheDtypes) -> Estimate:
    """Estimate every PP stage (the TP ranks of a stage are identical)."""
    ranks = [estimate_rank(RankContext.build(spec, layout, runtime, dtypes, s)) for s in range(layout.pp)]
    return Estimate(spec, layout, runtime, dtypes, ranks)
