"""Random sequences of manager operations against a model of what every request's state must be.

Each request's state is tagged with random values; the model says what each live request must hold
after every add/free/tag/extend/step/relocate/snapshot/restore/transfer. After every operation: no slot
or KV block is held twice or lost, every live state is bitwise what the model says (so nothing leaked
into a new request and moves/copies kept every byte), and a capacity error changed nothing at all.
One machine per speculative scheme; together they run > 1,000 sequences.

Replay is kept exact here by giving Mamba2 zero step sizes (`dt = dA = 0`: the SSM state must come
back unchanged) while conv windows shift by the accepted tokens' random inputs; the recurrence
itself is checked in test_manager_replay.py.
"""

from __future__ import annotations

from math import ceil

import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from manager_util import SMALL, bits, make, random_state, scheme_runtime, state_shapes

from mcache.cache.manager import derive_seed
from mcache.core.errors import CapacityError

# SMALL's stage 0 of PP 2 holds Mamba2, windowed attention (window 10) and short conv; 4 live requests share
# 6 KV blocks.
WINDOW, BLOCK, MAX_SEQ = 10, 4, 16
SEQUENCES, STEPS = 260, 16  # per scheme; 4 schemes


def _config(scheme: str) -> dict:
    return scheme_runtime(scheme, pp=2, pp_partition=(3, 1), max_batch=2, max_seq_len=MAX_SEQ, tokens_per_block=BLOCK, replay_history=3)


def _fingerprint(mgr) -> tuple:
    tables = {r: (mgr.slot_of(r), mgr.num_tokens(r), mgr.block_table(r, "attention.kv")) for r in mgr.requests}
    return mgr.free_slots, mgr.free_blocks(WINDOW), tables, [p.storage.clone() for p in mgr.pools.values()]


def _same(a: tuple, b: tuple) -> bool:
    return a[:3] == b[:3] and all(torch.equal(bits(x), bits(y)) for x, y in zip(a[3], b[3], strict=True))


class ManagerMachine(RuleBasedStateMachine):
    scheme = "none"

    @initialize(layout=st.sampled_from(["layer", "slot"]), peer_layout=st.sampled_from(["layer", "slot"]), seed=st.integers(0, 2**16))
    def setup(self, layout, peer_layout, seed):
        cfg = _config(self.scheme)
        self.mgr = make(SMALL, pool_layout=layout, **cfg)
        self.peer = make(SMALL, pool_layout=peer_layout, **cfg)
        self.halves = [make(SMALL, tp=2, tp_rank=q, pool_layout=peer_layout, **cfg) for q in range(2)]
        self.gen = torch.Generator().manual_seed(seed)
        self.t = self.mgr.ctx.runtime.tokens_per_step
        self.want: dict[str, dict] = {}
        self.snaps: dict[int, dict] = {}
        self.warmup: set[str] = set()
        self.next_id = 0

    def _pick(self, data):
        return data.draw(st.sampled_from(sorted(self.want)))

    def _expect_capacity_error(self, fn, predicted: bool):
        before = _fingerprint(self.mgr)
        try:
            fn()
        except CapacityError:
            assert predicted, "unexpected capacity error"
            assert _same(before, _fingerprint(self.mgr)), "a capacity error changed the manager"
            return False
        assert not predicted, "a capacity error was expected"
        return True

    # -- operations -------------------------------------------------------------------------------
    @rule(tokens=st.integers(0, 12), warmup=st.booleans())
    def add(self, tokens, warmup):
        request = f"r{self.next_id}"
        self.next_id += 1
        full = len(self.want) >= self.mgr.max_requests
        short = ceil(min(tokens, WINDOW) / BLOCK) > len(self.mgr.free_blocks(WINDOW))
        if self._expect_capacity_error(lambda: self.mgr.add_request(request, tokens, warmup=warmup), full or short):
            self.want[request] = {k: torch.zeros(s, dtype=d) for k, (s, d) in state_shapes(self.mgr).items()}
            if warmup:
                self.warmup.add(request)

    @precondition(lambda self: self.want)
    @rule(data=st.data())
    def free(self, data):
        request = self._pick(data)
        self.mgr.free(request)
        del self.want[request]
        self.warmup.discard(request)

    @precondition(lambda self: self.warmup)
    @rule()
    def end_warmup(self):
        self.mgr.end_warmup()
        for request in self.warmup:
            del self.want[request]
        self.warmup.clear()

    @precondition(lambda self: self.want)
    @rule(data=st.data())
    def tag(self, data):
        request = self._pick(data)
        self.want[request] = random_state(self.mgr, self.gen)
        self.mgr.write_state(request, self.want[request])

    @precondition(lambda self: self.want)
    @rule(data=st.data(), tokens=st.integers(0, 9))
    def extend(self, data, tokens):
        request = self._pick(data)
        total = self.mgr.num_tokens(request) + tokens
        need = ceil(min(total, WINDOW) / BLOCK) - len(self.mgr.block_table(request, "attention.kv"))
        predicted = total > MAX_SEQ or need > len(self.mgr.free_blocks(WINDOW))
        self._expect_capacity_error(lambda: self.mgr.extend(request, tokens), predicted)

    @precondition(lambda self: self.want)
    @rule(data=st.data())
    def step(self, data):
        live = sorted(self.want)
        batch = data.draw(st.lists(st.sampled_from(live), min_size=1, max_size=2, unique=True))
        accepted = data.draw(st.lists(st.integers(0, self.t), min_size=len(batch), max_size=len(batch)))
        step = self.mgr.begin_step(batch)
        for row, request in enumerate(batch):
            getattr(self, f"_write_{self.scheme}")(step, row, request, accepted[row])
        self.mgr.commit(step, accepted)

    def _candidates(self):
        shapes = state_shapes(self.mgr).items()
        return [{k: torch.randn(s, generator=self.gen).to(d) for k, (s, d) in shapes} for _ in range(self.t)]

    def _write_none(self, step, row, request, accepted):
        pass

    def _write_intermediate(self, step, row, request, accepted):
        cands = self._candidates()
        for j, cand in enumerate(cands):
            for key, value in cand.items():
                kind, name = key.split(".")
                self.mgr.pools[f"{kind}.inter_{name}"].view[:, row, j] = value
        if accepted:
            self.want[request] = cands[accepted - 1]

    def _write_index(self, step, row, request, accepted):
        cands, slot = self._candidates(), self.mgr.slot_of(request)
        for j, cand in enumerate(cands):
            v = int(step.versions[row, j])
            for key, value in cand.items():
                kind, name = key.split(".")
                pool = self.mgr.pools[key].view if v == 0 else self.mgr.pools[f"{kind}.{name}_versions"].view[:, :, v - 1]
                pool[:, slot] = value
        if accepted:
            self.want[request] = cands[accepted - 1]

    def _write_replay(self, step, row, request, accepted):
        slot, buf, pos = self.mgr.slot_of(request), int(step.ring_buf[row]), int(step.ring_pos[row])
        want = dict(self.want[request])
        for kind, meta in self.mgr.replay_metadata().items():
            for name, ring in meta.rings.items():
                value = torch.randn((ring.shape[0], self.t, *ring.shape[4:]), generator=self.gen).to(ring.dtype)
                if name in ("dt", "dA"):
                    value.zero_()
                ring[:, slot, buf, pos : pos + self.t] = value
                if name == "conv_in":
                    window = want[f"{kind}.conv"]
                    seq = torch.cat([window, value[:, :accepted].transpose(1, 2)], dim=-1)
                    want[f"{kind}.conv"] = seq[..., seq.shape[-1] - window.shape[-1] :]
        self.want[request] = want

    @precondition(lambda self: self.want)
    @rule(data=st.data(), anywhere=st.booleans())
    def relocate(self, data, anywhere):
        request = self._pick(data)
        raw = self.mgr.slot_buffers(request)
        free = self.mgr.free_slots
        target = None if anywhere or not free else data.draw(st.sampled_from(free))
        if self._expect_capacity_error(lambda: self.mgr.relocate(request, target), not free):
            got = self.mgr.slot_buffers(request)
            assert all(torch.equal(got[k], v) for k, v in raw.items()), "relocation changed bytes"
            assert target is None or self.mgr.slot_of(request) == target

    @precondition(lambda self: self.want)
    @rule(data=st.data())
    def snapshot(self, data):
        request = self._pick(data)
        box = []
        if self._expect_capacity_error(lambda: box.append(self.mgr.snapshot(request, 0)), len(self.snaps) >= 2):
            self.snaps[box[0]] = dict(self.want[request])

    @precondition(lambda self: self.want and self.snaps)
    @rule(data=st.data())
    def restore(self, data):
        snap = data.draw(st.sampled_from(sorted(self.snaps)))
        request = self._pick(data)
        self.mgr.restore(snap, request)
        self.want[request] = dict(self.snaps[snap])

    @precondition(lambda self: self.snaps)
    @rule(data=st.data())
    def drop_snapshot(self, data):
        snap = data.draw(st.sampled_from(sorted(self.snaps)))
        self.mgr.drop_snapshot(snap)
        del self.snaps[snap]

    @precondition(lambda self: self.want)
    @rule(data=st.data(), targeted=st.booleans())
    def transfer(self, data, targeted):
        """TP 1 -> TP 2 (two ranks) -> TP 1: every hop bitwise, nothing left behind."""
        request = self._pick(data)
        for q, half in enumerate(self.halves):
            half.import_(request, self.mgr.export(request, to=(2, q) if targeted else None))
        self.peer.import_(request, [reg for half in self.halves for reg in half.export(request)])
        got = self.peer.state(request)
        assert all(torch.equal(got[k], v) for k, v in self.want[request].items()), "transfer changed bytes"
        for m in (self.peer, *self.halves):
            m.free(request)

    # -- invariants -------------------------------------------------------------------------------
    @invariant()
    def slots_and_blocks_are_held_once(self):
        if not hasattr(self, "mgr"):
            return
        mgr = self.mgr
        assert sorted(mgr.requests) == sorted(self.want)
        slots = [mgr.slot_of(r) for r in mgr.requests]
        assert len(set(slots)) == len(slots) and not set(slots) & set(mgr.reserved_slots)
        assert sorted(slots + mgr.free_slots) == list(range(mgr.max_requests))
        blocks = [b for r in mgr.requests for b in mgr.block_table(r, "attention.kv")] + mgr.free_blocks(WINDOW)
        assert sorted(blocks) == list(range(mgr.pools["attention.kv"].view.shape[1]))

    @invariant()
    def every_state_is_what_the_model_says(self):
        if not hasattr(self, "mgr"):
            return
        for request, want in self.want.items():
            got = self.mgr.state(request)
            for key, value in want.items():
                assert torch.equal(got[key], value), f"{request} {key} differs from the model"
            assert self.mgr.seed_of(request) == derive_seed(request, 0, 0)


MACHINE_SETTINGS = settings(
    max_examples=SEQUENCES,
    stateful_step_count=STEPS,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _machine(scheme: str):
    cls = type(f"Machine_{scheme}", (ManagerMachine,), {"scheme": scheme})
    cls.TestCase.settings = MACHINE_SETTINGS
    return cls.TestCase


TestNone = _machine("none")
TestIntermediate = _machine("intermediate")
TestReplay = _machine("replay")
TestIndex = _machine("index")
