"""Per-slot bookkeeping shared by every kind of a rank: seeds, replay cursors and the version index.

Replay (TRT-LLM): `replay_prev_accepted` tokens accepted but not yet folded, in ring buffer
`replay_buf_idx`. A step overflows when `prev + T > history`: the `prev` tokens are folded into the
checkpoint and the step's tokens go to position 0 of the other buffer. Commit:
`prev' = accepted if overflow else prev + accepted`, `buf' = 1 - buf if overflow else buf`.

Index-only: `version_idx` is the current version of a slot (0 = the base pool, `v > 0` =
`*_versions[v - 1]`); a step writes the state after token `j` to version `(cur + j + 1) % (T + 1)` and
commit moves the index by the accepted count.
"""

from __future__ import annotations

import torch

from mcache import kernels as K
from mcache.cache.states.base import Pool, StateKind, Step, arange, gather, scatter
from mcache.core.sizing.auxiliary import REPLAY_BUFFER, REPLAY_PENDING, SEED, VERSION_INDEX


class Bookkeeping(StateKind):
    """The rank's per-slot pools of `Role.BOOKKEEPING`, each found by its declaration in `core.sizing.auxiliary`
    (`seed`, `replay_prev_accepted`, `replay_buf_idx`, `version_idx`)."""

    def __init__(self, ctx, pools: list[Pool]):
        super().__init__(None, ctx, pools)
        by_decl = {p.decl: p for p in pools}
        self.seed = by_decl.get(SEED)
        self.prev = by_decl.get(REPLAY_PENDING)
        self.buf = by_decl.get(REPLAY_BUFFER)
        self.version = by_decl.get(VERSION_INDEX)

    def reseed(self, slots: torch.Tensor, seeds: list[int]) -> None:
        """Write each slot's seed."""
        if self.seed is not None and len(seeds):
            scatter(self.seed.view, slots, torch.tensor([seeds], dtype=torch.int64))

    def seeds(self, slots: torch.Tensor) -> list[int]:
        return gather(self.seed.view, slots)[0].tolist() if self.seed is not None else []

    def cursor(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Replay `(buf, prev)` of `slots`, int64 `[B]` each."""
        return gather(self.buf.view, slots)[0].long(), gather(self.prev.view, slots)[0].long()

    def versions_of(self, slots: torch.Tensor) -> list[int]:
        """Index scheme: the current version of each slot (0 without the scheme)."""
        if self.version is None:
            return [0] * len(slots)
        return gather(self.version.view, slots)[0].tolist()

    def clear_pending(self, slots: torch.Tensor) -> None:
        """The base state of `slots` is now the whole state: no pending replay tokens, version 0."""
        pools = [p for p in (self.prev, self.version) if p is not None]
        if pools:
            self.plans.get("clear", pools, lambda: K.reset_slots_plan([p.view for p in pools]))(slots)

    def begin_step(self, step: Step) -> None:
        t = step.tokens
        if self.prev is not None:
            buf, prev = self.cursor(step.slots)
            overflow = prev + t > self.runtime.history
            step.overflow, step.read_buf, step.pending = overflow, buf, prev
            step.fold = torch.where(overflow, prev, torch.zeros_like(prev))
            step.ring_buf = torch.where(overflow, 1 - buf, buf)
            step.ring_pos = torch.where(overflow, torch.zeros_like(prev), prev)
        if self.version is not None:
            cur = gather(self.version.view, step.slots)[0].long()
            step.versions = (cur[:, None] + arange(t, cur.device)[None, :] + 1) % (t + 1)

    def commit(self, step: Step, accepted: torch.Tensor) -> None:
        if self.prev is not None:
            prev = torch.where(step.overflow, accepted, step.pending + accepted)
            scatter(self.prev.view, step.slots, prev[None].to(torch.int32))
            scatter(self.buf.view, step.slots, step.ring_buf[None].to(torch.int32))
        if self.version is not None:
            v = self.version
            self.plans.get("commit", [v], lambda: K.commit_index_plan(v.view[0], step.tokens + 1))(step.slots, accepted)
