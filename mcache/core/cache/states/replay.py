"""Kinds with a replay recurrence (Mamba2, GatedDeltaNet, KDA, short conv): the fold calls.

Under the replay scheme the base pools hold the checkpoint; the state of a slot is the checkpoint with
the `prev` pending tokens of ring buffer `buf` folded in (see `bookkeeping.py`). A step that overflows
folds them into the checkpoint before the model writes its tokens; `current` folds into a copy.
"""

from __future__ import annotations

import torch

from mcache import kernels as K
from mcache.core.cache.states import register
from mcache.core.cache.states.base import Step, arange, gather
from mcache.core.cache.states.recurrent import RecurrentState


class ReplayState(RecurrentState):
    """A recurrent kind whose ring can be folded: subclasses say how (`fold_ssm`); the conv window is shared."""

    def fold(self, states: dict[str, torch.Tensor], rings: dict[str, torch.Tensor], slots, buf, count) -> None:
        """Fold ring tokens `0 .. count[b]` of buffer `buf[b]` into `states` at `slots[b]` (`[L, S, ...]` views)."""
        if "conv" in states:
            K.replay_fold_conv(states["conv"], rings["conv_in"], slots, buf, count, check=False)
        if "ssm" in states:
            self.fold_ssm(states["ssm"], rings, slots, buf, count)

    def fold_ssm(self, ssm: torch.Tensor, rings: dict[str, torch.Tensor], slots, buf, count) -> None:
        raise NotImplementedError

    def begin_step(self, step: Step) -> None:
        if self.rings and step.fold is not None:
            views = {n: p.view for n, p in self.base.items()}
            self.fold(views, {n: p.view for n, p in self.rings.items()}, step.slots, step.read_buf, step.fold)

    def current(self, slots: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        if not self.rings:
            return super().current(slots)
        buf, prev = self.book.cursor(slots)
        pos = arange(len(slots), slots.device)
        states = {n: gather(p.view, slots) for n, p in self.base.items()}
        rings = {n: gather(p.view, slots) for n, p in self.rings.items()}
        self.fold(states, rings, pos, buf, prev)
        return {n: (t, pos) for n, t in states.items()}


@register("mamba2")
class Mamba2State(ReplayState):
    """Ring: x `[H, P]`, B `[G, N]`, dt and dA `[H]`, conv_in `[C]` per token."""

    def fold_ssm(self, ssm, rings, slots, buf, count) -> None:
        K.replay_fold_mamba2(ssm, rings["x"], rings["B"], rings["dt"], rings["dA"], slots, buf, count, check=False)


@register("gdn")
class GatedDeltaNetState(ReplayState):
    """Ring: normalized k `[Hk, K]`, v `[H, V]`, log gate g and beta `[H]`, conv_in `[C]` per token."""

    def fold_ssm(self, ssm, rings, slots, buf, count) -> None:
        K.replay_fold_gdn(ssm, rings["k"], rings["v"], rings["g"], rings["beta"], slots, buf, count, check=False)


@register("kda")
class KDAState(ReplayState):
    """Ring: like GatedDeltaNet with a per-channel log gate g `[H, K]`."""

    def fold_ssm(self, ssm, rings, slots, buf, count) -> None:
        K.replay_fold_kda(ssm, rings["k"], rings["v"], rings["g"], rings["beta"], slots, buf, count, check=False)


@register("short_conv")
class ShortConvState(ReplayState):
    """Ring: the conv input `[C]` per token; there is no SSM state."""
