"""Recurrent kinds (conv window and/or SSM state per slot): the behaviour every one of them shares.

Pools of a kind `k` with base states `s` (`conv`, `ssm`), by role: `k.s` `[L, S, *s]`, and per scheme
`k.inter_s` `[L, R, T, *s]` (intermediate), `k.s_versions` `[L, S, T, *s]` (versions), `k.ring_*`
`[L, S, 2, Hist, *input]` (ring, see `replay.py`), `k.snap_s` `[L, snapshots, *s]` (snapshot); each derived
pool's `decl.of` is the role of the base state it belongs to.
"""

from __future__ import annotations

import torch

from mcache import kernels as K
from mcache.cache.states import register
from mcache.cache.states.base import Pool, ReplayMeta, StateKind, Step, arange, scatter
from mcache.core.kinds.base import Role


@register("mamba1", "lightning")
class RecurrentState(StateKind):
    """Conv/SSM slots with intermediate-state and index-only commits, snapshots and transfers.

    Kinds without a replay recurrence (Mamba1, lightning) use this as is; under the replay scheme the
    aux registry gives them intermediate states, which `commit` handles the same way.
    """

    def __init__(self, kind: str, ctx, pools: list[Pool], book=None):
        super().__init__(kind, ctx, pools, book)
        self.base = {p.decl.name: p for p in pools if p.decl.role in (Role.CONV, Role.STATE)}
        name_of = {p.decl.role: name for name, p in self.base.items()}

        def derived(role: Role) -> dict[str, Pool]:
            """The `role` pools of the kind, by the name of the base state each belongs to."""
            return {name_of[p.decl.of]: p for p in pools if p.decl.role is role}

        self.inter = derived(Role.INTERMEDIATE)
        self.versions = derived(Role.VERSIONS)
        self.snap = derived(Role.SNAPSHOT)
        # The ring pools are declared in the order of the kind's replay inputs (its fold order).
        replay = ctx.runtime.spec_scheme == "replay"
        self.inputs = tuple(ctx.replay_inputs(kind) or []) if replay else ()
        rings = [p for p in pools if p.decl.role is Role.RING]
        self.rings = {r.name: p for r, p in zip(self.inputs, rings, strict=True)}

    def commit(self, step: Step, accepted: torch.Tensor) -> None:
        if self.inter:
            pairs = [(self.base[name], inter) for name, inter in self.inter.items()]
            pools = [p for pair in pairs for p in pair]
            plan = self.plans.get("commit", pools, lambda: K.commit_intermediate_plan([(b.view, i.view) for b, i in pairs]))
            plan(step.slots, step.rows, accepted)

    def current(self, slots: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        if not self.versions:
            return {n: (p.view, slots) for n, p in self.base.items()}
        version = self.book.versions_of(slots)
        pos = arange(len(slots), slots.device)
        out = {}
        for name, p in self.base.items():
            tmp = torch.empty((p.view.shape[0], len(slots), *p.view.shape[2:]), dtype=p.view.dtype, device=slots.device)
            for v in sorted(set(version)):
                sel = torch.tensor([i for i, x in enumerate(version) if x == v], device=slots.device)
                src = p.view if v == 0 else self.versions[name].view.select(2, v - 1)
                K.copy_slots(src, slots[sel], tmp, pos[sel])
            out[name] = (tmp, pos)
        return out

    def write(self, slots: torch.Tensor, values: dict[str, torch.Tensor]) -> None:
        for name, value in values.items():
            scatter(self.base[name].view, slots, value)

    def snapshot(self, slot: torch.Tensor, snap: torch.Tensor) -> None:
        if not self.versions and not self.rings:  # the base pools hold the state: copy pool to pool
            self._copy("snapshot", [(self.base[n], p) for n, p in self.snap.items()])(slot, snap)
            return
        for name, (src, index) in self.current(slot).items():
            K.copy_slots(src, index, self.snap[name].view, snap)

    def restore(self, snap: torch.Tensor, slot: torch.Tensor) -> None:
        self._copy("restore", [(p, self.base[n]) for n, p in self.snap.items()])(snap, slot)

    def _copy(self, name: str, pairs: list[tuple[Pool, Pool]]):
        """The copy plan of pool pairs `(src, dst)`, all in one launch."""
        pools = [p for pair in pairs for p in pair]
        return self.plans.get(name, pools, lambda: K.copy_slots_plan([(s.view, d.view) for s, d in pairs]))

    def on_transfer_complete(self, slots: torch.Tensor) -> None:
        # The received base state is the whole state: stale rings and versions of the slot go.
        pools = [*self.rings.values(), *self.versions.values()]
        if pools:
            self.plans.get("clear", pools, lambda: K.reset_slots_plan([p.view for p in pools]))(slots)

    def replay_metadata(self) -> ReplayMeta | None:
        if not self.rings:
            return None
        return ReplayMeta(self.kind, self.runtime.history, self.inputs, {n: p.view for n, p in self.rings.items()})

    def transfer_states(self) -> list[str]:
        return list(self.base)
