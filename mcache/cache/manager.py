"""The cache manager: one rank's cache, allocated exactly as the estimator declares it.

Every buffer declaration of the rank (`estimator.declarations`) becomes one tensor, layer-major
(`[layers, units, *shape]`) or slot-major (`[units, layers, *shape]`). The manager keeps the free lists
(state slots, KV blocks, snapshot slots) and the request table; what an operation does to the pools
of each layer kind is the kind's business (`mcache.cache.states`), and every write to pool memory goes
through `mcache.kernels`. Imports torch: the sizing modules never import this one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch

from mcache.cache.pools import allocate_pools, assign_pools
from mcache.cache.slots import BlockGroup, FreeList
from mcache.cache.states.base import Plans, Pool, Step, gather, reset_kinds
from mcache.cache.states.transfer import Region, apply_import, export_regions, plan_import
from mcache.core.errors import CapacityError
from mcache.core.sizing.estimate import Estimate
from mcache.core.sizing.rank import RankContext, resolve_dtypes


def derive_seed(request: Hashable, stage: int, tp_rank: int) -> int:
    """A deterministic non-negative int64 seed from the request id and the rank."""
    digest = hashlib.blake2b(f"{request!r}/{stage}/{tp_rank}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


@dataclass
class _Request:
    slot: int | None
    tokens: int
    blocks: dict[int | None, list[int]]
    warmup: bool = False


class CacheManager:
    """The cache of one rank (TP rank `tp_rank` of PP stage `ctx.stage`) on `device` (`meta`, `cpu`, `cuda`).

    Requests are any hashable ids. A request gets a state slot (if the rank has recurrent layers) and
    KV blocks as its tokens grow; `CapacityError` when either runs out, with nothing changed.
    """

    def __init__(self, ctx: RankContext, *, tp_rank: int = 0, device: str | torch.device = "cpu", pool_layout: str = "layer"):
        if not 0 <= tp_rank < ctx.layout.tp:
            raise ValueError(f"tp_rank {tp_rank} out of range for tp={ctx.layout.tp}")
        self.ctx, self.tp_rank, self.pool_layout = ctx, tp_rank, pool_layout
        self.device = torch.device(device)
        self.state_rank = tp_rank % ctx.layout.state_tp  # its place in the attention-TP group that splits the state
        rt = ctx.runtime
        self.pools: dict[str, Pool] = allocate_pools(ctx, self.device, pool_layout)
        self.book, self.handlers = assign_pools(ctx, self.pools)
        self.num_slots = ctx.num_slots
        self.max_requests = ctx.max_requests
        reserved = range(self.max_requests, self.num_slots) if self.num_slots else range(0)
        self._slots = FreeList(self.num_slots, "state slots", reserved)
        self._groups: dict[int | None, BlockGroup] = {}
        for p in self.pools.values():
            if p.decl.per == "token" and p.decl.window not in self._groups:
                self._groups[p.decl.window] = BlockGroup(p.decl.window, p.units // rt.tokens_per_block, rt.tokens_per_block)
        self._snaps = FreeList(rt.snapshot_slots, "snapshot slots")
        self._snapshots: dict[int, int] = {}  # snapshot slot -> token boundary
        self._requests: dict[Hashable, _Request] = {}
        self._step: Step | None = None
        self._plans = Plans()  # the reset of every kind's slots at once
        if self.device.type != "meta" and self.num_slots:
            self.book.reset(self._index(range(self.num_slots)))
            self._reset(list(reserved), [0] * len(reserved))

    @classmethod
    def build(cls, spec, layout, runtime, dtypes=None, *, stage: int = 0, **kwargs) -> CacheManager:
        """The manager of PP stage `stage` (dtypes default to the spec's policy)."""
        ctx = RankContext.build(spec, layout, runtime, dtypes or resolve_dtypes(spec), stage)
        return cls(ctx, **kwargs)

    # -- inspection -------------------------------------------------------------------------------
    @property
    def has_state(self) -> bool:
        """Whether the rank has recurrent layers (and so state slots)."""
        return self.num_slots > 0

    @property
    def reserved_slots(self) -> list[int]:
        """Padding/dummy slots never handed to requests: one per draft length, +1 for the attention-DP dummy."""
        return list(self._slots.reserved)

    def padding_slot(self, i: int = 0) -> int:
        """The `i`-th reserved slot (CUDA-graph padding for draft length `i`; the last is the DP dummy)."""
        return self._slots.reserved[i]

    @property
    def free_slots(self) -> list[int]:
        return self._slots.free

    def free_blocks(self, window: int | None = None) -> list[int]:
        return self._groups[window].blocks.free

    @property
    def requests(self) -> list[Hashable]:
        return list(self._requests)

    def allocated_bytes(self) -> dict[str, int]:
        """Bytes of every pool, by buffer key."""
        return {k: p.nbytes for k, p in self.pools.items()}

    def slot_of(self, request: Hashable) -> int | None:
        return self._req(request).slot

    def num_tokens(self, request: Hashable) -> int:
        return self._req(request).tokens

    def block_table(self, request: Hashable, key: str) -> list[int]:
        """KV blocks of `request` in the per-token pool `key`, in token order (a ring for windowed pools)."""
        return list(self._req(request).blocks[self.pools[key].decl.window])

    def views(self, kind: str | None, layer: int = 0) -> dict[str, torch.Tensor]:
        """Every pool of `kind` at global layer `layer`: `name -> [units, *shape]` (`kind=None`: rank buffers)."""
        out: dict[str, torch.Tensor] = {}
        for h in self.handlers + [self.book]:
            if h.kind == kind and h.pools:
                out.update(h.views(layer))
        if not out:
            raise KeyError(f"no {kind} buffers on this rank")
        return out

    def replay_metadata(self) -> dict:
        """`kind -> ReplayMeta` of every kind with a replay ring on this rank."""
        return {h.kind: m for h in self.handlers if (m := h.replay_metadata()) is not None}

    def state(self, request: Hashable) -> dict[str, torch.Tensor]:
        """The current base state of `request` (`kind.name -> [L, *shape]`, a copy): a replay checkpoint with
        its pending tokens folded in, the current version under the index scheme. Changes nothing."""
        self._idle()
        slot = self._slot_tensor(request)
        if slot is None:
            return {}
        return {f"{h.kind}.{n}": gather(src, idx)[:, 0] for h in self.handlers for n, (src, idx) in h.current(slot).items()}

    def write_state(self, request: Hashable, values: dict[str, torch.Tensor]) -> None:
        """Set the whole base state of `request` (`kind.name -> [L, *shape]`, every key of `state`)."""
        self._idle()
        slot = self._slot_tensor(request)
        if slot is None:
            return
        missing = {f"{h.kind}.{n}" for h in self.handlers for n in h.transfer_states()} - set(values)
        if missing:
            raise ValueError(f"write_state needs every base state; missing {sorted(missing)}")
        for h in self.handlers:
            h.write(slot, {n: values[f"{h.kind}.{n}"][:, None] for n in h.transfer_states()})
        self.book.clear_pending(slot)

    def slot_buffers(self, request: Hashable) -> dict[str, torch.Tensor]:
        """A copy of every per-slot pool at the request's slot (states, rings, versions, bookkeeping, seed)."""
        slot = self._slot_tensor(request)
        if slot is None:
            return {}
        return {k: gather(p.view, slot)[:, 0] for k, p in self.pools.items() if p.decl.per == "slot"}

    def seed_of(self, request: Hashable) -> int | None:
        slot = self._slot_tensor(request)
        return self.book.seeds(slot)[0] if slot is not None and self.book.seed is not None else None

    # -- lifecycle --------------------------------------------------------------------------------
    def add_request(self, request: Hashable, tokens: int = 0, *, warmup: bool = False) -> int | None:
        """Give `request` a slot (reset, re-seeded) and KV blocks for `tokens` tokens; returns the slot.

        `warmup` marks a dummy request that `end_warmup` frees; on a rank without recurrent layers a
        request does no state work at all.
        """
        if request in self._requests:
            raise ValueError(f"request {request!r} is already live")
        if len(self._requests) >= self.max_requests:
            raise CapacityError(f"out of request slots: all {self.max_requests} (max batch x pp) are in use")
        take = self._check_tokens(tokens, {w: [] for w in self._groups})
        slot = self._slots.take(1, f" (request {request!r})")[0] if self.has_state else None
        blocks = {w: self._groups[w].blocks.take(n) for w, n in take.items()}
        self._requests[request] = _Request(slot, tokens, blocks, warmup)
        if slot is not None:
            self._reset([slot], [derive_seed(request, self.ctx.stage, self.tp_rank)])
        return slot

    def extend(self, request: Hashable, tokens: int) -> None:
        """Grow `request` by `tokens` tokens, taking KV blocks as needed."""
        req = self._req(request)
        if tokens < 0:
            raise ValueError(f"extend by {tokens} tokens: requests only grow")
        take = self._check_tokens(req.tokens + tokens, req.blocks)
        for w, n in take.items():
            req.blocks[w] += self._groups[w].blocks.take(n)
        req.tokens += tokens

    def free(self, request: Hashable) -> None:
        """Return the request's slot and KV blocks."""
        req = self._req(request)
        if self._step is not None and request in self._step.requests:
            raise RuntimeError(f"request {request!r} is in the step in progress; commit first")
        for w, blocks in req.blocks.items():
            self._groups[w].blocks.give(blocks)
        if req.slot is not None:
            self._slots.give([req.slot])
        del self._requests[request]

    def end_warmup(self) -> None:
        """Free every warm-up request; reserved slots stay reserved and untouched."""
        for request in [r for r, q in self._requests.items() if q.warmup]:
            self.free(request)

    def relocate(self, request: Hashable, slot: int | None = None) -> int | None:
        """Move a live request and all its per-slot buffers to `slot` (default: the lowest free slot)."""
        self._idle()
        req = self._req(request)
        if req.slot is None:
            return None
        if slot is None:
            dst = self._slots.take(1, f" (relocating {request!r})")[0]
        else:
            self._slots.take_id(slot)
            dst = slot
        src_t, dst_t = self._index([req.slot]), self._index([dst])
        for h in self.handlers + [self.book]:
            h.relocate(src_t, dst_t)
        self._slots.give([req.slot])
        req.slot = dst
        return dst

    # -- speculative decoding ---------------------------------------------------------------------
    def begin_step(self, requests: Sequence[Hashable]) -> Step:
        """Start a verify step of `requests` (batch rows in that order); see `Step` for where the model writes.

        Under replay this folds the pending tokens of every overflowing slot into its checkpoint.
        """
        if self._step is not None:
            raise RuntimeError("a step is already in progress; commit it first")
        if len(requests) > self.ctx.runtime.max_batch:
            raise CapacityError(f"a step holds at most max_batch={self.ctx.runtime.max_batch} rows, got {len(requests)}")
        if len(set(requests)) != len(requests):
            raise ValueError("a request appears twice in one step")
        slots = [self._req(r).slot for r in requests]
        step = Step(
            list(requests),
            self._index(slots if self.has_state else []),
            self._index(range(len(requests))),
            self.ctx.runtime.tokens_per_step,
        )
        if self.has_state and requests:
            self.book.begin_step(step)
            for h in self.handlers:
                h.begin_step(step)
        self._step = step
        return step

    def commit(self, step: Step, accepted: Sequence[int] | torch.Tensor) -> None:
        """Keep, for each row of `step`, the state after its `accepted` tokens (0 .. T)."""
        if step is not self._step:
            raise ValueError("commit of a step that is not in progress")
        acc = torch.as_tensor(accepted, dtype=torch.int64)
        if acc.shape != (len(step.requests),):
            raise ValueError(f"accepted needs one count per row ({len(step.requests)}), got shape {tuple(acc.shape)}")
        lo, hi = torch.stack(torch.aminmax(acc)).tolist() if len(acc) else (0, 0)  # one read of a device tensor
        if lo < 0 or hi > step.tokens:
            raise ValueError(f"accepted counts must be in 0..{step.tokens}, got {acc.tolist()}")
        acc = acc.to(self.device)
        if self.has_state and len(acc):
            for h in self.handlers:
                h.commit(step, acc)
            self.book.commit(step, acc)
        self._step = None

    # -- snapshots --------------------------------------------------------------------------------
    def snapshot(self, request: Hashable, at_token: int) -> int:
        """Copy the request's current state into a free snapshot slot; returns the snapshot id.

        `at_token` labels the token boundary the state stands at (see `snapshot_token`); it cannot lie past
        the tokens the request holds.
        """
        self._idle()
        held = self.num_tokens(request)
        if isinstance(at_token, bool) or not isinstance(at_token, int) or not 0 <= at_token <= held:
            raise ValueError(f"snapshot of {request!r} at token {at_token!r}: expected an int in 0..{held} (its tokens)")
        slot = self._slot_tensor(request)
        if not self.ctx.runtime.snapshot_slots:
            raise CapacityError("no snapshot slots: the runtime config has snapshot_slots = 0")
        snap = self._snaps.take(1, f" (snapshot of {request!r} at token {at_token})")[0]
        if slot is not None:
            for h in self.handlers:
                h.snapshot(slot, self._index([snap]))
        self._snapshots[snap] = at_token
        return snap

    def restore(self, snapshot: int, request: Hashable) -> None:
        """Copy snapshot `snapshot` into the state of live `request`."""
        self._idle()
        if snapshot not in self._snapshots:
            raise KeyError(f"no snapshot {snapshot}")
        slot = self._slot_tensor(request)
        if slot is not None:
            for h in self.handlers:
                h.restore(self._index([snapshot]), slot)
            self.book.clear_pending(slot)

    def snapshot_token(self, snapshot: int) -> int:
        """The token boundary a snapshot was taken at."""
        return self._snapshots[snapshot]

    def drop_snapshot(self, snapshot: int) -> None:
        """Free a snapshot slot."""
        del self._snapshots[snapshot]
        self._snaps.give([snapshot])

    # -- transfer ---------------------------------------------------------------------------------
    def export(self, request: Hashable, to: tuple[int, int] | None = None) -> list[Region]:
        """The request's base conv/SSM state as regions (role, global layer, rows, data) to send.

        `to = (state_tp, rank)` of a receiver keeps only what that receiver holds (its heads, its part of
        each conv section); without it every row of this rank is sent.
        """
        self._idle()
        slot = self._slot_tensor(request)
        return [] if slot is None else export_regions(self.handlers, self.ctx, self.state_rank, slot, to)

    def import_(self, request: Hashable, regions: Sequence[Region]) -> None:
        """Write received regions (from one or several senders) as the state of `request`, adding it if new.

        Raises before changing anything if the regions do not cover this rank's state or no slot is free.
        """
        self._idle()
        writes = plan_import(self.handlers, self.ctx, self.state_rank, list(regions))
        if request not in self._requests:
            self.add_request(request)
        slot = self._slot_tensor(request)
        if slot is None:
            return
        apply_import(writes, slot)
        for h in self.handlers:
            h.on_transfer_complete(slot)
        self.book.clear_pending(slot)

    # -- helpers ----------------------------------------------------------------------------------
    def _req(self, request: Hashable) -> _Request:
        try:
            return self._requests[request]
        except KeyError:
            raise KeyError(f"request {request!r} is not live on this rank") from None

    def _index(self, ids) -> torch.Tensor:
        return torch.tensor(list(ids), dtype=torch.int64, device=self.device)

    def _slot_tensor(self, request: Hashable) -> torch.Tensor | None:
        slot = self._req(request).slot
        return None if slot is None else self._index([slot])

    def _idle(self) -> None:
        if self._step is not None:
            raise RuntimeError("a step is in progress; commit it first")

    def _reset(self, slots: list[int], seeds: list[int]) -> None:
        if not slots:
            return
        index = self._index(slots)
        reset_kinds(self._plans, [*self.handlers, self.book], index)
        self.book.reseed(index, seeds)

    def _check_tokens(self, total: int, held: dict) -> dict[int | None, int]:
        """Blocks to take from each group for `total` tokens; raises `CapacityError` before taking any."""
        limit = self.ctx.runtime.max_seq_len
        if total < 0:
            raise ValueError(f"a request cannot hold {total} tokens")
        if total > limit:
            raise CapacityError(f"a request of {total} tokens exceeds max_seq_len={limit}")
        take = {w: max(0, g.needed(total) - len(held[w])) for w, g in self._groups.items()}
        for w, n in take.items():
            self._groups[w].blocks.check(n, f" for {total} tokens")
        return take


@dataclass(frozen=True)
class VerifyRow:
    """One buffer of one rank: what the estimator said and what the manager allocated."""

    stage: int
    tp_rank: int
    key: str
    component: str
    estimated: int
    allocated: int

    @property
    def difference(self) -> int:
        return self.allocated - self.estimated


def verify(estimate: Estimate, device: str = "meta", pool_layout: str = "layer") -> list[VerifyRow]:
    """Build the manager of every PP stage (TP rank 0; TP ranks are identical) and compare each buffer."""
    rows = []
    for rank in estimate.ranks:
        manager = CacheManager(rank.ctx, device=device, pool_layout=pool_layout)
        allocated = manager.allocated_bytes()
        for comp in rank.components:
            got = allocated.pop(comp.decl.key, 0)
            rows.append(VerifyRow(rank.ctx.stage, 0, comp.decl.key, comp.decl.component, comp.total_bytes, got))
        for key, got in allocated.items():
            pool = manager.pools[key]
            rows.append(VerifyRow(rank.ctx.stage, 0, key, pool.decl.component, 0, got))
        del manager
    return rows
