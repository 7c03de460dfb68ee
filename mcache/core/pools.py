"""The rank's pools: one tensor per buffer declaration, and which state kind owns each.

A layer kind owns its base states and their scheme and snapshot copies; the kind-less seed, replay
cursors and version index are the rank's slot bookkeeping; everything else (the spec's own buffers,
any other registered estimator's) is handled as an auxiliary buffer.
"""

from __future__ import annotations

import torch

from mcache.core.aux import registered
from mcache.core.buffers import BufferDecl
from mcache.core.estimator import base_declarations, declarations, units_of
from mcache.core.rank import RankContext
from mcache.core.states import state_class
from mcache.core.states.aux import AuxState
from mcache.core.states.base import Pool, StateKind, allocate
from mcache.core.states.bookkeeping import Bookkeeping

KIND_ROLES = ("base", "spec.intermediate", "spec.replay", "spec.index", "snapshot")
BOOK_ROLES = ("slot.seed", "spec.replay", "spec.index")


def tagged_declarations(ctx: RankContext) -> list[tuple[str, BufferDecl]]:
    """`(role, decl)` for every declaration of the rank, in `declarations(ctx)` order; the role is the aux
    registry key that declared it, or `base`."""
    tagged = [("base", d) for d in base_declarations(ctx)]
    tagged += [(key, d) for key, estimator in registered().items() for d in estimator(ctx)]
    if [d for _, d in tagged] != declarations(ctx):
        raise RuntimeError("the aux registry changed while the manager read it")
    return tagged


def allocate_pools(ctx: RankContext, device: torch.device, layout: str) -> dict[str, Pool]:
    """One pool per declaration, by buffer key, sized by `units_of` exactly as the estimator counts it."""
    pools: dict[str, Pool] = {}
    for role, decl in tagged_declarations(ctx):
        if decl.key in pools:
            raise ValueError(f"two buffers of the rank are both named {decl.key!r}")
        pools[decl.key] = allocate(decl, role, units_of(decl, ctx), layout, device, ctx.runtime.tokens_per_block)
    return pools


def assign_pools(ctx: RankContext, pools: dict[str, Pool]) -> tuple[Bookkeeping, list[StateKind]]:
    """The rank's bookkeeping and one state object per kind (layer kinds first, then auxiliary buffers)."""
    owned: dict[str, list[Pool]] = {}
    aux: dict[str | None, list[Pool]] = {}
    book: list[Pool] = []
    for p in pools.values():
        kind = p.decl.kind
        if kind is None and p.role in BOOK_ROLES:
            book.append(p)
        elif kind is not None and p.role in KIND_ROLES:
            owned.setdefault(kind, []).append(p)
        else:
            aux.setdefault(kind, []).append(p)
    bookkeeping = Bookkeeping(ctx, book)
    handlers: list[StateKind] = []
    for kind, mine in owned.items():
        per_token = any(p.decl.per == "token" for p in mine)
        handlers.append(state_class(kind, per_token)(kind, ctx, mine, bookkeeping))
    handlers += [AuxState(kind, ctx, mine, bookkeeping) for kind, mine in aux.items()]
    return bookkeeping, handlers
