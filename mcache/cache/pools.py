"""The rank's pools: one tensor per buffer declaration, and which state kind owns each.

Each pool goes by its declaration's role: a layer kind owns its base states and their scheme and snapshot
copies; the seed, replay cursors and version index are the rank's slot bookkeeping; everything else (the
spec's own buffers, any other registered estimator's) is handled as an auxiliary buffer.
"""

from __future__ import annotations

import torch

from mcache.cache.states import state_class
from mcache.cache.states.auxiliary import AuxState
from mcache.cache.states.base import Pool, StateKind, allocate
from mcache.cache.states.bookkeeping import Bookkeeping
from mcache.core.kinds.base import Role
from mcache.core.sizing.estimate import declarations, units_of
from mcache.core.sizing.rank import RankContext

# The roles a layer kind's state object owns: its base states and their scheme and snapshot copies.
KIND_ROLES = (Role.KV, Role.CONV, Role.STATE, Role.INTERMEDIATE, Role.VERSIONS, Role.RING, Role.SNAPSHOT)


def allocate_pools(ctx: RankContext, device: torch.device, layout: str) -> dict[str, Pool]:
    """One pool per declaration, by buffer key, sized by `units_of` exactly as the estimator counts it."""
    pools: dict[str, Pool] = {}
    for decl in declarations(ctx):  # keys are unique: the estimator checks
        pools[decl.key] = allocate(decl, units_of(decl, ctx), layout, device, ctx.runtime.tokens_per_block)
    return pools


def assign_pools(ctx: RankContext, pools: dict[str, Pool]) -> tuple[Bookkeeping, list[StateKind]]:
    """The rank's bookkeeping and one state object per kind (layer kinds first, then auxiliary buffers)."""
    owned: dict[str, list[Pool]] = {}
    aux: dict[str | None, list[Pool]] = {}
    book: list[Pool] = []
    for p in pools.values():
        kind = p.decl.kind
        if p.decl.role is Role.BOOKKEEPING:
            book.append(p)
        elif kind is not None and p.decl.role in KIND_ROLES:
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
