"""Kinds with a replay recurrence (Mamba2, GatedDeltaNet, KDA, short conv): the fold calls.

Under the replay scheme the base pools hold the checkpoint; the state of a slot is the checkpoint with
the `prev` pending tokens of ring buffer `buf` folded in (see `bookkeeping.py`). A step that overflows
folds them into the checkpoint before the model writes its tokens; `current` folds into a copy.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from mcache import kernels as K
from mcache.cache.states import register
from mcache.cache.states.base import Pool, Step, arange, gather
from mcache.cache.states.recurrent import RecurrentState
from mcache.core.kinds.base import Role


@register("mamba2", "gdn", "kda", "short_conv")
class ReplayState(RecurrentState):
    """A recurrent kind whose ring can be folded: its SSM state's fold reads the rings that belong to `Role.STATE`, in
    the order the kind declares them (that of `mcache.kernels.replay_fold_<kind>`); its conv window's fold reads the
    ring that belongs to `Role.CONV` (`conv_in`)."""

    def _fold_pools(self, role: Role) -> list[Pool]:
        """The base state of `role`, then the rings that belong to it in fold order; empty without such a state."""
        base = [p for p in self.base.values() if p.decl.role is role]
        return base + [p for p in self.rings.values() if p.decl.of is role] if base else []

    def _fold(self, take: Callable[[Pool], object]) -> tuple[str, list, list] | None:
        """`(fold kind, [state, *rings], [window, conv_in] or [])` of this kind's fold, each pool through `take` (the
        pool itself, or a copy of some of its slots): the SSM state's, with the conv window folded in the same launch,
        or the conv window alone; None without either."""
        state, conv = ([take(p) for p in self._fold_pools(role)] for role in (Role.STATE, Role.CONV))
        if state:
            return self.kind, state, conv
        return ("conv", conv, []) if conv else None

    def _fold_plan(self) -> Callable | None:
        """The fold plan of the base pools with their rings, built once (see `Plans`)."""
        fold = self._fold(lambda p: p)
        if fold is None:
            return None
        kind, pools, conv = fold

        def build():
            return K.fold_plan(kind, *(p.view for p in pools), conv=tuple(c.view for c in conv) or None)

        return self.plans.get(f"fold {kind}", [*pools, *conv], build)

    def begin_step(self, step: Step) -> None:
        plan = self._fold_plan() if self.rings and step.fold is not None else None
        if plan is not None:
            plan(step.slots, step.read_buf, step.fold)

    def current(self, slots: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        if not self.rings:
            return super().current(slots)
        buf, prev = self.book.cursor(slots)
        pos = arange(len(slots), slots.device)
        copies = {p: gather(p.view, slots) for p in [*self.base.values(), *self.rings.values()]}
        fold = self._fold(copies.__getitem__)
        if fold is not None:  # copies of this call: a plan used once
            kind, tensors, conv = fold
            K.fold_plan(kind, *tensors, conv=tuple(conv) or None)(pos, buf, prev)
        return {n: (copies[p], pos) for n, p in self.base.items()}
