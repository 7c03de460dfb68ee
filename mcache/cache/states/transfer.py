"""Moving a request's base conv/SSM state between managers of possibly different TP (disaggregated serving).

Which rows each rank holds, in global (TP 1) coordinates, is `mcache.core.transfer_plan` (`pieces`,
`intersect`); here the sender packs the rows a receiver holds into `Region`s and the receiver writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mcache import kernels as K
from mcache.core.transfer_plan import Piece, intersect, pieces


@dataclass(frozen=True)
class Region:
    """One layer's worth of one state to send: `pieces` (global rows) laid end to end in `data`.

    `role` is the pool key (`mamba2.ssm`), `layer` the global layer index, `row_elems` the elements of one
    row (a head or a channel), `data` a 1-D tensor in the state's dtype.
    """

    role: str
    layer: int
    pieces: tuple[Piece, ...]
    row_elems: int
    data: torch.Tensor

    @property
    def nbytes(self) -> int:
        return self.data.numel() * self.data.element_size()


def export_regions(handlers, ctx, rank: int, slot: torch.Tensor, to: tuple[int, int] | None) -> list[Region]:
    """Regions of the current state of `slot`; with `to = (tp, rank)` only what that receiver holds and no lower rank
    sends it (rows TP replicates go from the first rank that holds them, as `transfer_plan` counts them)."""
    regions = []
    for h in handlers:
        names = h.transfer_states()
        if not names:
            continue
        current = h.current(slot)
        for name in names:
            mine, row = pieces(ctx.spec, ctx.dtypes, h.kind, name, ctx.layout.state_tp, rank)
            if to is not None:
                theirs, _ = pieces(ctx.spec, ctx.dtypes, h.kind, name, to[0], to[1])
                mine = [a for a, _ in intersect(mine, theirs)]
                for lower in range(rank):  # sender pieces are disjoint or identical: drop those a lower rank holds
                    held, _ = pieces(ctx.spec, ctx.dtypes, h.kind, name, ctx.layout.state_tp, lower)
                    mine = [a for a in mine if not intersect([a], held)]
            if not mine:
                continue
            src, index = current[name]
            out = torch.empty((1, src.shape[0], sum(p.rows for p in mine) * row), dtype=src.dtype, device=src.device)
            K.pack(src, index, [(p.local * row, p.rows * row) for p in mine], out)
            send = tuple(Piece(p.section, p.start, p.rows) for p in mine)
            regions += [Region(f"{h.kind}.{name}", layer, send, row, out[0, j]) for j, layer in enumerate(h.layers)]
    return regions


@dataclass
class Write:
    """One planned unpack: `packed` `[1, 1, n]` into `ranges` of layer `layer` of `pool`."""

    pool: torch.Tensor
    layer: int
    ranges: list[tuple[int, int]]
    packed: torch.Tensor


def plan_import(handlers, ctx, rank: int, regions: list[Region]) -> list[Write]:
    """Where each received row goes; raises `ValueError` unless every row of the rank's state is covered."""
    targets = {}
    for h in handlers:
        for name in h.transfer_states():
            mine, row = pieces(ctx.spec, ctx.dtypes, h.kind, name, ctx.layout.state_tp, rank)
            targets[f"{h.kind}.{name}"] = (h, name, mine, row)
    covered = {(key, layer): set() for key, (h, *_) in targets.items() for layer in h.layers}
    writes = []
    for reg in regions:
        if reg.role not in targets or (reg.role, reg.layer) not in covered:
            continue  # another stage's layer, or a kind this rank does not hold
        h, name, mine, row = targets[reg.role]
        pool = h.base[name].view
        if reg.row_elems != row or reg.data.dtype != pool.dtype:
            raise ValueError(f"{reg.role}: received rows of {reg.row_elems} {reg.data.dtype}, this rank holds rows of {row} {pool.dtype}")
        src, dst, offset = [], [], 0
        for p in reg.pieces:
            for part, target in intersect([Piece(p.section, p.start, p.rows, offset)], mine):
                src.append((part.local * row, part.rows * row))
                local = target.local + part.start - target.start
                dst.append((local * row, part.rows * row))
                covered[(reg.role, reg.layer)].update(range(local, local + part.rows))
            offset += p.rows
        if dst:
            data = reg.data.to(pool.device)
            packed = torch.cat([data[a : a + n] for a, n in src]).view(1, 1, -1)
            writes.append(Write(pool, h.layers.index(reg.layer), dst, packed))
    for (key, layer), rows in covered.items():
        total = sum(p.rows for p in targets[key][2])
        if len(rows) != total:
            raise ValueError(f"incomplete transfer: {key} layer {layer} got {len(rows)} of {total} rows")
    return writes


def apply_import(writes: list[Write], slot: torch.Tensor) -> None:
    """Write the planned rows into `slot`."""
    for w in writes:
        K.unpack(w.packed, w.pool[w.layer : w.layer + 1], slot, w.ranges)
