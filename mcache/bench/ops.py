"""The cache operations `mcache bench` times: each as mcache's kernel and as the torch-indexing baseline.

An `OpCase` binds one op of one layer kind (all its layers, or one layer) at one batch size to the
manager's pools: `run` calls the op's plans from `mcache.kernels` (bound to the pools once, as the cache
manager keeps them; Triton on CUDA, the torch reference on the CPU),
`baseline` does the same with the torch indexing that serving code writes in Python, `nbytes` is the
least the op must read plus write, and `check` compares the op's output with the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from mcache import kernels as K
from mcache.bench.roofline import Work, fold_work
from mcache.cache.states.base import Pool
from mcache.core.kinds.base import Role
from mcache.core.sizing.buffers import BufferDecl
from mcache.kernels.replay_fold import reference as fold_ref


class Needs(NamedTuple):
    """The buffers an op needs beside the state: one of `role` that belongs to the state of role `of` (any state when
    None); a skip reason shows them as `shown*`."""

    role: Role
    of: Role | None
    shown: str

    def met_by(self, decls: Iterable[BufferDecl]) -> bool:
        """Whether one of `decls` is such a buffer."""
        return any(d.role is self.role and self.of in (None, d.of) for d in decls)


NO_WORK = Work()  # what a copy-like op computes
OPS = ("alloc", "reset", "commit", "replay", "relocate", "snapshot", "pack", "transfer")
# A kind or scheme without an op's buffers has no such rows.
OP_BUFFERS = {"commit": Needs(Role.INTERMEDIATE, None, "inter_"), "replay": Needs(Role.RING, None, "ring_")}
# What an op takes beside the state: disjoint sets of free slots (one unless named), and rows of a derived pool.
SLOT_SETS = {"relocate": 2, "transfer": 2, "copy_slots": 2}
ROW_POOLS = {"commit": Role.INTERMEDIATE, "commit_intermediate": Role.INTERMEDIATE, "snapshot": Role.SNAPSHOT}
FOLD_REFS = {"mamba2": fold_ref.replay_fold_mamba2_reference, "gdn": fold_ref.replay_fold_gdn_reference,
             "kda": fold_ref.replay_fold_kda_reference}


@dataclass
class OpCase:
    """One timed op: the kernel, its baseline, the bytes it moves, and a correctness check."""

    op: str
    kind: str
    batch: int
    nbytes: int
    run: Callable[[], None]
    baseline: Callable[[], None] | None
    check: Callable[[], bool]
    graph_baseline: bool = True
    baseline_impl: str = "torch-index"
    work: Work = NO_WORK  # its arithmetic (`roofline.fold_work`); none for copy-like ops
    # Other implementations timed beside it as rows of their own: `(impl, run, check)` (FLA's kernels for a fold).
    others: list = field(default_factory=list)


def _nbytes(views: list[torch.Tensor], batch: int, per_state: int = 2) -> int:
    """Bytes of `batch` slots of every view, `per_state` times (2: read + write)."""
    return sum(per_state * batch * v.shape[0] * v[0, 0].numel() * v.element_size() for v in views)


def _index_put(dst: torch.Tensor, slots: torch.Tensor, value: torch.Tensor) -> None:
    dst[:, slots] = value


class CaseBuilder:
    """Builds `OpCase`s over the pools of one manager, each pool's `[L, units, *shape]` view picked by its role."""

    def __init__(self, pools: Iterable[Pool], kind: str, local_layer: int | None, free_slots: int,
                 tokens_per_step: int, history: int, generator: torch.Generator):
        """`local_layer` picks one layer of the kind's pools (`None`: all of them in one launch)."""
        sl = slice(local_layer, local_layer + 1) if local_layer is not None else slice(None)
        self.kind, self.gen = kind, generator
        mine = [(p.decl, p.view[sl]) for p in pools if p.decl.kind == kind]
        # The conv window and SSM state by role; derived pools by the role of the state they belong to.
        self.base = {d.role: v for d, v in mine if d.role in (Role.CONV, Role.STATE)}
        self.states = list(self.base.values())
        self.inter = {d.of: v for d, v in mine if d.role is Role.INTERMEDIATE}
        self.snap = {d.of: v for d, v in mine if d.role is Role.SNAPSHOT}
        # Each state's rings in the kind's fold order (the order of the declarations).
        self.rings = {role: [v for d, v in mine if d.role is Role.RING and d.of is role] for role in (Role.STATE, Role.CONV)}
        self.free_slots, self.tokens, self.history = free_slots, tokens_per_step, history

    def _slots(self, batch: int, sets: int = 1) -> torch.Tensor:
        """`sets` disjoint random sets of `batch` slots, as `[sets * batch]` (`unfit` says when they do not fit)."""
        perm = torch.randperm(self.free_slots, generator=self.gen)
        return perm[: sets * batch].to(self.states[0].device)

    def unfit(self, op: str, batch: int) -> str | None:
        """Why `op` at `batch` does not fit these pools (its slot sets or derived-pool rows), or None when it does."""
        sets = SLOT_SETS.get(op, 1)
        if sets * batch > self.free_slots:
            disjoint = f" ({sets} disjoint sets of {batch})" if sets > 1 else ""
            return f"needs {sets * batch} free slots{disjoint}, the pool has {self.free_slots}"
        role = ROW_POOLS.get(op)
        pools = {Role.INTERMEDIATE: self.inter, Role.SNAPSHOT: self.snap}.get(role, {})
        rows = min((v.shape[1] for v in pools.values()), default=batch)
        if rows < batch:
            return f"needs {batch} rows of its {role.value} pool, which has {rows}"
        return None

    def _case(self, op, batch, nbytes, run, baseline, check, graph_baseline=True, baseline_impl="torch-index",
              work: Work = NO_WORK) -> OpCase:
        return OpCase(op, self.kind, batch, nbytes, run, baseline, check, graph_baseline, baseline_impl, work)

    def fold_work(self, batch: int) -> Work:
        """The arithmetic of folding the whole ring into `batch` requests' states (`roofline.fold_work`)."""
        rings = self.rings[Role.STATE]
        k = rings[1] if self.kind == "mamba2" else rings[0]  # Mamba2's B ring (x, B, dt, dA), the delta rules' k
        return fold_work(self.kind, self.base[Role.STATE], k, batch, self.history, rings[0].shape[3])

    def reset(self, batch: int) -> OpCase:
        slots = self._slots(batch)
        views = self.states

        def check() -> bool:
            return all(bool((v[:, slots] == 0).all()) for v in views)

        # Zeros on the device: a Python 0 is copied from the host on every call, which a CUDA graph cannot capture.
        zeros = [torch.zeros((), dtype=v.dtype, device=v.device) for v in views]
        plan = K.reset_slots_plan(views)
        return self._case("reset", batch, _nbytes(views, batch, 1), lambda: plan(slots),
                          lambda: [_index_put(v, slots, z) for v, z in zip(views, zeros, strict=True)], check)

    def commit(self, batch: int) -> OpCase | None:
        pairs = [(self.base[of], inter) for of, inter in self.inter.items()]
        if not pairs:
            return None
        device = pairs[0][0].device
        slots = self._slots(batch)
        rows = torch.randperm(pairs[0][1].shape[1], generator=self.gen)[:batch].to(device)
        accepted = torch.randint(1, self.tokens + 1, (batch,), generator=self.gen).to(device)
        plan = K.commit_intermediate_plan(pairs)

        def run() -> None:
            plan(slots, rows, accepted)

        def baseline() -> None:
            for pool, inter in pairs:
                pool[:, slots] = inter[:, rows, accepted - 1]

        def check() -> bool:
            return all(torch.equal(pool[:, slots], inter[:, rows, accepted - 1]) for pool, inter in pairs)

        return self._case("commit", batch, _nbytes([p for p, _ in pairs], batch), run, baseline, check)

    def replay(self, batch: int) -> OpCase | None:
        rings = self.rings[Role.STATE]
        if not rings:
            return None
        device = self.states[0].device
        slots = self._slots(batch)
        buf = torch.randint(0, 2, (batch,), generator=self.gen).to(device)
        count = torch.full((batch,), self.history, dtype=torch.int64, device=device)
        ssm, conv = self.base[Role.STATE], self.base[Role.CONV]
        (conv_in,) = self.rings[Role.CONV]
        fold_ref_fn = FOLD_REFS[self.kind]
        fold = K.fold_plan(self.kind, ssm, *rings, conv=(conv, conv_in))  # the manager's fold: one launch of both
        # Each fold reads the state once, writes it once, and reads `count` tokens of every ring entry.
        ring_bytes = sum(batch * r.shape[0] * r[0, 0, 0, 0].numel() * r.element_size() * self.history
                         for r in [*rings, conv_in])
        nbytes = _nbytes([ssm, conv], batch) + ring_bytes

        def run() -> None:
            fold(slots, buf, count)

        def baseline() -> None:
            fold_ref_fn(ssm, *rings, slots, buf, count)
            fold_ref.replay_fold_conv_reference(conv, conv_in, slots, buf, count)

        def check() -> bool:
            before = [ssm[:, slots].clone(), conv[:, slots].clone()]
            run()
            got = [ssm[:, slots].clone(), conv[:, slots].clone()]
            ssm[:, slots], conv[:, slots] = before
            baseline()
            want = [ssm[:, slots].float(), conv[:, slots].float()]
            return all(torch.allclose(g.float(), w, rtol=2e-2, atol=2e-2) for g, w in zip(got, want, strict=True))

        return self._case("replay", batch, nbytes, run, baseline, check, graph_baseline=False, baseline_impl="torch-loop",
                          work=self.fold_work(batch))

    def relocate(self, batch: int) -> OpCase:
        src, dst = self._slots(batch, 2).split(batch)
        views = self.states
        plan = K.copy_slots_plan([(v, v) for v in views])

        def check() -> bool:
            return all(torch.equal(v[:, dst], v[:, src]) for v in views)

        return self._case("relocate", batch, _nbytes(views, batch), lambda: plan(src, dst),
                          lambda: [_index_put(v, dst, v[:, src]) for v in views], check)

    def snapshot(self, batch: int) -> OpCase | None:
        pairs = [(self.base[of], snap) for of, snap in self.snap.items()]
        if not pairs:
            return None
        slots = self._slots(batch)
        snaps = torch.randperm(pairs[0][1].shape[1], generator=self.gen)[:batch].to(slots.device)
        plan = K.copy_slots_plan(pairs)

        def check() -> bool:
            return all(torch.equal(snap[:, snaps], pool[:, slots]) for pool, snap in pairs)

        return self._case("snapshot", batch, _nbytes([p for p, _ in pairs], batch),
                          lambda: plan(slots, snaps),
                          lambda: [_index_put(s, snaps, p[:, slots]) for p, s in pairs], check)

    def _packed(self, batch: int) -> list[tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]]]]:
        return [(v, torch.empty((batch, v.shape[0], v[0, 0].numel()), dtype=v.dtype, device=v.device),
                 [(0, v[0, 0].numel())]) for v in self.states]

    def pack(self, batch: int) -> OpCase:
        slots = self._slots(batch)
        packed = self._packed(batch)
        plan = K.pack_plan([(v, r, out) for v, out, r in packed])

        def baseline() -> None:
            for v, out, _ in packed:
                out.copy_(v[:, slots].flatten(2).transpose(0, 1))

        def check() -> bool:
            return all(torch.equal(out, v[:, slots].flatten(2).transpose(0, 1)) for v, out, _ in packed)

        return self._case("pack", batch, _nbytes(self.states, batch),
                          lambda: plan(slots), baseline, check)

    def transfer(self, batch: int) -> OpCase:
        """Pack a request's state on the sender, unpack it into other slots on the receiver (same TP)."""
        src, dst = self._slots(batch, 2).split(batch)
        packed = self._packed(batch)
        items = [(v, r, out) for v, out, r in packed]
        pack, unpack = K.pack_plan(items), K.unpack_plan(items)

        def run() -> None:
            pack(src)
            unpack(dst)

        def baseline() -> None:
            for v, out, _ in packed:
                out.copy_(v[:, src].flatten(2).transpose(0, 1))
                v[:, dst] = out.transpose(0, 1).reshape(v[:, dst].shape)

        def check() -> bool:
            return all(torch.equal(v[:, dst], v[:, src]) for v, _, _ in packed)

        return self._case("transfer", batch, 2 * _nbytes(self.states, batch), run, baseline, check)

    def build(self, op: str, batch: int) -> OpCase | None:
        """The case of `op` at `batch`, or None when this kind or scheme has no such op."""
        return getattr(self, op)(batch)
