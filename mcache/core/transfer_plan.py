"""What one request moves from each sender rank to each receiver rank (disaggregated serving), in pure Python.

TP splits one axis of every cache buffer: axis 0 of a recurrent state (heads, or channel sections of the conv
window: `[x|B|C]`, `[q|k|v]`; a state without sections is one section `all`) and the KV-head axis `Hkv` of a KV
buffer (MLA's latent has none: every rank holds it whole). A `Piece` is a run of rows of one section in global
(TP 1) coordinates, so a receiver of another TP takes exactly its rows: the sender's pieces are intersected with
the receiver's, section by section. Rows that TP replicates (Mamba2 groups when `tp > n_groups`, KV heads when
`tp > num_kv_heads`) are held by several senders; a receiver takes them from the first of them (lowest rank).
PP: a receiver stage takes each layer from the sender stage that holds it.

Pieces are counted in layer-major pools, mcache's own layout (`[layers, units, *shape]`, `mcache.cache.pools`):
a request's state in one layer is one contiguous run of rows, so a part costs one piece per (layer, contiguous
row run); a KV block is `tokens_per_block` consecutive tokens of one layer, so a part that takes every row the
sender holds costs one piece per (layer, block), and one that takes some KV heads costs one piece per
(layer, token, head run, K/V half) (K and V interleave per token in mcache's `[2, Hkv, D]` KV row). Never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from msgspec import Struct

from mcache.core.errors import LayoutError
from mcache.core.kinds import KIND_MODULES
from mcache.core.kinds.base import CacheDtypes, StateShape
from mcache.core.sizing.layout import ParallelLayout, blocks_per_seq
from mcache.core.spec.dtypes import itemsize
from mcache.core.spec.model import KINDS, ModelSpec, layer_kinds


@dataclass(frozen=True)
class Piece:
    """Rows `start .. start + rows` of `section` in global coordinates; `local` is the first row on the rank."""

    section: str
    start: int
    rows: int
    local: int = 0


def _start(total: int, local: int, tp: int, rank: int, field: str) -> int:
    """First global row of a rank's share of a section: split, replicated whole, or replicated per group."""
    if local * tp == total:
        return rank * local
    if local == total:
        return 0
    parts = total // local
    if total % local == 0 and tp % parts == 0:
        return rank // (tp // parts) * local
    raise LayoutError(field, f"a share of {local} of {total} rows cannot be placed over tp={tp}")


def split_axis(state: StateShape) -> int | None:
    """The axis TP splits: 0 for a recurrent state, `Hkv` for KV, None for a buffer every rank holds whole."""
    if state.per == "slot":
        return 0
    return state.axes.index("Hkv") if "Hkv" in state.axes else None


def _sections(state: StateShape) -> tuple[tuple[str, int], ...]:
    axis = split_axis(state)
    if axis is None:
        return (("all", 1),)
    return state.sections or (("all", state.shape[axis]),)


def _row(state: StateShape) -> int:
    """Elements of one row: the dims after the split axis (all of them for a buffer held whole)."""
    axis = split_axis(state)
    return prod(state.shape) if axis is None else prod(state.shape[axis + 1 :])


def _states(spec: ModelSpec, dtypes: CacheDtypes, kind: str, tp: int) -> dict[str, StateShape]:
    return {s.name: s for s in KIND_MODULES[kind].states(spec, getattr(spec, kind), tp, dtypes)}


def pieces(spec: ModelSpec, dtypes: CacheDtypes, kind: str, name: str, tp: int, rank: int) -> tuple[list[Piece], int]:
    """The pieces of buffer `name` of `kind` that TP rank `rank` of a `tp`-way split holds, and the row size."""
    local, whole = _states(spec, dtypes, kind, tp)[name], _states(spec, dtypes, kind, 1)[name]
    out, offset = [], 0
    for (section, rows), (_, total) in zip(_sections(local), _sections(whole), strict=True):
        out.append(Piece(section, _start(total, rows, tp, rank, f"{kind}.{name}"), rows, offset))
        offset += rows
    return out, _row(local)


def intersect(mine: list[Piece], theirs: list[Piece]) -> list[tuple[Piece, Piece]]:
    """`(part of mine, the piece of theirs it falls in)` for every overlap of the same section."""
    out = []
    for a in mine:
        for b in theirs:
            lo, hi = max(a.start, b.start), min(a.start + a.rows, b.start + b.rows)
            if a.section == b.section and lo < hi:
                out.append((Piece(a.section, lo, hi - lo, a.local + lo - a.start), b))
    return out


class Span(Struct, frozen=True):
    """Global rows `start .. start + rows` of `section`: at local row `src` on the sender, `dst` on the receiver."""

    section: str
    start: int
    rows: int
    src: int
    dst: int


class Part(Struct, frozen=True):
    """One buffer moving between a rank pair for one request.

    `layers`: the global layers both ranks hold (consecutive layers of the kind on each rank); `units`: 1 for a
    state slot, the request's KV tokens (whole blocks) for KV; `outer`: the dims before the split axis (2 for
    `[2, Hkv, D]` KV); `bytes` and `pieces` per request.
    """

    buffer: str
    per: str
    dtype: str
    layers: tuple[int, ...]
    spans: tuple[Span, ...]
    row_elems: int
    outer: int
    units: int
    bytes: int
    pieces: int


class Pair(Struct, frozen=True):
    """What sender rank `sender` moves to receiver rank `receiver` (ranks: `stage * tp + tp_rank`) per request."""

    sender: int
    receiver: int
    parts: tuple[Part, ...]
    state_bytes: int
    kv_bytes: int
    pieces: int


class TransferPlan(Struct, frozen=True):
    """Every rank pair that moves something, with the totals of one request at `context` tokens. Under attention DP a
    request lives in one attention-DP group of each side, `*_group_ranks` ranks of each stage (the attention TP,
    `ParallelLayout.state_tp`; the TP without it): the plan is of a request in the first group of both (ranks 0 ..
    group_ranks - 1 of each stage); another group's is the same, its ranks shifted by a multiple of group_ranks."""

    sender_tp: int
    sender_pp: int
    receiver_tp: int
    receiver_pp: int
    sender_group_ranks: int
    receiver_group_ranks: int
    context: int
    tokens_per_block: int
    pairs: list[Pair]
    state_bytes: int
    kv_bytes: int
    pieces: int


def runs(starts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`(start, length)` runs, adjacent ones merged (the contiguous pieces of a row list in order)."""
    out: list[tuple[int, int]] = []
    for start, n in starts:
        if out and out[-1][0] + out[-1][1] == start:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((start, n))
    return out


def _stage_layers(spec: ModelSpec, layout: ParallelLayout, kinds: list[str]) -> list[dict[str, list[int]]]:
    """Per PP stage of `layout`, the layers of each kind it holds."""
    per_layer = layer_kinds(spec)
    return [{kind: [i for i in stage if kind in per_layer[i]] for kind in kinds} for stage in layout.stages(spec.num_layers)]


def _part(spec, dtypes, kind, name, send, recv, layers, taken, context, block) -> Part | None:
    """The part of buffer `kind.name` sender `send = (layout, tp_rank)` moves to `recv`, less rows `taken`."""
    (s_layout, s_rank), (r_layout, r_rank) = send, recv
    mine, row = pieces(spec, dtypes, kind, name, s_layout.state_tp, s_rank)
    theirs, _ = pieces(spec, dtypes, kind, name, r_layout.state_tp, r_rank)
    spans = []
    for part, target in intersect(mine, theirs):
        key = (f"{kind}.{name}", layers[0], part.section, part.start, part.rows)
        if key not in taken:  # replicated rows: sender pieces are either disjoint or identical
            taken.add(key)
            spans.append(Span(part.section, part.start, part.rows, part.local, target.local + part.start - target.start))
    if not spans:
        return None
    state = _states(spec, dtypes, kind, s_layout.state_tp)[name]
    axis = split_axis(state)
    outer = prod(state.shape[:axis]) if axis is not None else 1
    rows = sum(s.rows for s in spans)
    whole = len(runs([(s.src, s.rows) for s in spans])) == 1 and rows == sum(p.rows for p in mine)
    if state.per == "slot":
        units, per_layer = 1, len(runs([(s.src, s.rows) for s in spans]))
    else:
        blocks = blocks_per_seq(context, state.window, block)
        units = blocks * block
        per_layer = blocks if whole else units * outer * len(runs([(s.src, s.rows) for s in spans]))
    nbytes = len(layers) * units * outer * rows * row * itemsize(state.dtype) // state.tokens_per_row
    return Part(f"{kind}.{name}", state.per, state.dtype, tuple(layers), tuple(spans), row, outer, units, nbytes,
                len(layers) * per_layer)


def transfer_plan(spec: ModelSpec, dtypes: CacheDtypes, sender: ParallelLayout, receiver: ParallelLayout,
                  context: int, tokens_per_block: int) -> TransferPlan:
    """The pieces each sender rank sends each receiver rank for one request of `context` tokens.

    A TP size a buffer cannot be split over raises `LayoutError` naming the spec field.
    """
    present = {k for ks in layer_kinds(spec) for k in ks}
    kinds = [k for k in KINDS if k in present]
    sent, received = _stage_layers(spec, sender, kinds), _stage_layers(spec, receiver, kinds)
    pairs = []
    for r_stage, wanted in enumerate(received):
        wanted_sets = {kind: set(layers) for kind, layers in wanted.items()}
        # only the sender stages that hold one of this stage's layers (stages are contiguous layer ranges)
        overlapping = [(s, held) for s, held in enumerate(sent)
                       if any(i in wanted_sets[kind] for kind in kinds for i in held[kind])]
        for r_rank in range(receiver.state_tp):  # the first attention-DP group's ranks (all of TP without it)
            taken: set = set()
            for s_stage, held in overlapping:
                for s_rank in range(sender.state_tp):
                    parts = []
                    for kind in kinds:
                        layers = [i for i in held[kind] if i in wanted_sets[kind]]
                        for name in _states(spec, dtypes, kind, 1) if layers else ():
                            part = _part(spec, dtypes, kind, name, (sender, s_rank), (receiver, r_rank), layers, taken,
                                         context, tokens_per_block)
                            parts += [part] if part else []
                    if parts:
                        pairs.append(_pair(s_stage * sender.tp + s_rank, r_stage * receiver.tp + r_rank, parts))
    return TransferPlan(sender.tp, sender.pp, receiver.tp, receiver.pp, sender.state_tp, receiver.state_tp, context,
                        tokens_per_block, pairs,
                        sum(p.state_bytes for p in pairs), sum(p.kv_bytes for p in pairs), sum(p.pieces for p in pairs))


def _pair(sender: int, receiver: int, parts: list[Part]) -> Pair:
    state = sum(p.bytes for p in parts if p.per == "slot")
    kv = sum(p.bytes for p in parts if p.per == "token")
    return Pair(sender, receiver, tuple(parts), state, kv, sum(p.pieces for p in parts))
