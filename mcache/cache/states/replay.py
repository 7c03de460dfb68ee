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
from mcache.cache.states.base import Step, arange, gather
from mcache.cache.states.recurrent import RecurrentState


class ReplayState(RecurrentState):
    """A recurrent kind whose ring can be folded: `fold_inputs` names the rings its SSM fold reads, in the order
    of `mcache.kernels.replay_fold_<kind>`; the conv window folds from `conv_in` whatever the kind."""

    fold_inputs: tuple[str, ...] = ()

    def _fold(self, states: dict, rings: dict) -> tuple[str, list, list] | None:
        """`(fold kind, [state, *rings], [window, conv_in] or [])` of this kind's fold (pools or tensors alike): the
        SSM state's, with the conv window folded in the same launch, or the conv window alone; None without either."""
        conv = [states["conv"], rings["conv_in"]] if "conv" in states else []
        if "ssm" in states:
            return self.kind, [states["ssm"], *(rings[n] for n in self.fold_inputs)], conv
        return ("conv", conv, []) if conv else None

    def _fold_plan(self) -> Callable | None:
        """The fold plan of the base pools with their rings, built once (see `Plans`)."""
        fold = self._fold(self.base, self.rings)
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
        states = {n: gather(p.view, slots) for n, p in self.base.items()}
        rings = {n: gather(p.view, slots) for n, p in self.rings.items()}
        fold = self._fold(states, rings)
        if fold is not None:  # copies of this call: a plan used once
            kind, tensors, conv = fold
            K.fold_plan(kind, *tensors, conv=tuple(conv) or None)(pos, buf, prev)
        return {n: (t, pos) for n, t in states.items()}


@register("mamba2")
class Mamba2State(ReplayState):
    """Ring: x `[H, P]`, B `[G, N]`, dt and dA `[H]`, conv_in `[C]` per token."""

    fold_inputs = ("x", "B", "dt", "dA")


@register("gdn")
class GatedDeltaNetState(ReplayState):
    """Ring: normalized k `[Hk, K]`, v `[H, V]`, log gate g and beta `[H]`, conv_in `[C]` per token."""

    fold_inputs = ("k", "v", "g", "beta")


@register("kda")
class KDAState(ReplayState):
    """Ring: like GatedDeltaNet with a per-channel log gate g `[H, K]`."""

    fold_inputs = ("k", "v", "g", "beta")


@register("short_conv")
class ShortConvState(ReplayState):
    """Ring: the conv input `[C]` per token; there is no SSM state."""
