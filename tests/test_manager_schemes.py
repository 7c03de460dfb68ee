"""Speculative commits (intermediate, index-only, replay bookkeeping) and snapshots, for every state kind."""

from __future__ import annotations

import pytest
import torch
from manager_util import ALL_KINDS, assert_states_equal, clone_pools, make, random_state, state_shapes, write_replay_step

from mcache.core.errors import CapacityError

GEN = torch.Generator().manual_seed(1)


def _candidates(mgr, t):
    """Random states after each of `t` draft tokens: `kind.name -> [T, L, *shape]`."""
    return {k: torch.randn((t, *shape), generator=GEN).to(dtype) for k, (shape, dtype) in state_shapes(mgr).items()}


def _expect(before, cands, accepted):
    return {k: (v if accepted == 0 else cands[k][accepted - 1]) for k, v in before.items()}


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
def test_intermediate_commit_copies_the_accepted_state(pool_layout):
    mgr = make(ALL_KINDS, pool_layout=pool_layout, draft_tokens=3, spec_scheme="intermediate")
    reqs = ["a", "b", "c"]
    for r in reqs:
        mgr.add_request(r)
        mgr.write_state(r, random_state(mgr, GEN))
    for accepted in ([4, 0, 1], [2, 3, 4]):
        order = reqs[::-1] if accepted[0] == 2 else reqs  # batch rows need not follow slots
        before = {r: mgr.state(r) for r in order}
        step = mgr.begin_step(order)
        cands = {}
        for row, r in enumerate(order):
            cands[r] = _candidates(mgr, 4)
            for key, value in cands[r].items():
                kind, name = key.split(".")
                mgr.pools[f"{kind}.inter_{name}"].view[:, row] = value.transpose(0, 1)
        mgr.commit(step, accepted)
        for r, a in zip(order, accepted, strict=True):
            assert_states_equal(mgr.state(r), _expect(before[r], cands[r], a), f"{r} accepted {a}")


def _write_version(mgr, slot, v, values):
    for key, value in values.items():
        kind, name = key.split(".")
        pool = mgr.pools[key].view if v == 0 else mgr.pools[f"{kind}.{name}_versions"].view[:, :, v - 1]
        pool[:, slot] = value


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
def test_index_commit_moves_the_version(pool_layout):
    t = 3
    mgr = make(ALL_KINDS, pool_layout=pool_layout, draft_tokens=t - 1, spec_scheme="index")
    mgr.add_request("a")
    mgr.add_request("b")
    want = {r: random_state(mgr, GEN) for r in "ab"}
    for r in "ab":
        mgr.write_state(r, want[r])
    seen_versions = set()
    for accepted in ([1, 3], [3, 0], [2, 2], [0, 1], [3, 3]):
        step = mgr.begin_step(["a", "b"])
        for row, r in enumerate("ab"):
            cands = _candidates(mgr, t)
            for j in range(t):
                _write_version(mgr, mgr.slot_of(r), int(step.versions[row, j]), {k: v[j] for k, v in cands.items()})
            want[r] = _expect(want[r], cands, accepted[row])
        mgr.commit(step, accepted)
        for r in "ab":
            assert_states_equal(mgr.state(r), want[r], f"{r} after {accepted}")
            seen_versions.add(mgr.slot_buffers(r)["version_idx"].item())
    assert len(seen_versions) >= 2  # the index really moved (and wrapped)


def test_replay_bookkeeping_follows_trtllm():
    t, hist = 3, 5
    mgr = make(ALL_KINDS, draft_tokens=t - 1, spec_scheme="replay", replay_history=hist)
    mgr.add_request("a")
    prev, buf = 0, 0
    for accepted in [1, 3, 2, 3, 1, 1, 0, 3, 2]:
        step = mgr.begin_step(["a"])
        overflow = prev + t > hist
        assert bool(step.overflow[0]) == overflow
        assert int(step.ring_buf[0]) == (1 - buf if overflow else buf)
        assert int(step.ring_pos[0]) == (0 if overflow else prev)
        mgr.commit(step, [accepted])
        prev, buf = (accepted, 1 - buf) if overflow else (prev + accepted, buf)
        raw = mgr.slot_buffers("a")
        assert (raw["replay_prev_accepted"].item(), raw["replay_buf_idx"].item()) == (prev, buf)
    # Mamba1 and lightning have no replay recurrence: they keep intermediate states under replay
    assert {"mamba1.inter_ssm", "lightning.inter_ssm"} <= set(mgr.pools)
    assert set(mgr.replay_metadata()) == {"mamba2", "gdn", "kda", "short_conv", "ple"}


def test_step_errors():
    mgr = make(ALL_KINDS, max_batch=2, draft_tokens=1)
    for r in "ab":
        mgr.add_request(r)
    step = mgr.begin_step(["a"])
    with pytest.raises(RuntimeError, match="in progress"):
        mgr.begin_step(["b"])
    with pytest.raises(RuntimeError, match="in progress"):
        mgr.relocate("a")
    with pytest.raises(ValueError, match="0..2"):
        mgr.commit(step, [3])
    with pytest.raises(ValueError, match="one count per row"):
        mgr.commit(step, [1, 1])
    mgr.commit(step, [1])
    with pytest.raises(ValueError, match="appears twice"):
        mgr.begin_step(["a", "a"])


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
@pytest.mark.parametrize("scheme,draft", [("none", 0), ("intermediate", 2), ("replay", 2), ("index", 2)])
def test_snapshot_and_restore(scheme, draft, pool_layout):
    mgr = make(
        ALL_KINDS,
        pool_layout=pool_layout,
        draft_tokens=draft,
        spec_scheme=scheme,
        snapshot_slots=2,
        replay_history=3 if scheme == "replay" else None,
    )
    mgr.add_request("a", tokens=5)
    mgr.add_request("b")
    mgr.write_state("a", random_state(mgr, GEN))
    if scheme in ("replay", "index"):  # leave pending ring tokens / a moved version behind
        step = mgr.begin_step(["a"])
        if scheme == "index":
            cands = _candidates(mgr, draft + 1)
            for j in range(draft + 1):
                _write_version(mgr, mgr.slot_of("a"), int(step.versions[0, j]), {k: v[j] for k, v in cands.items()})
        else:
            write_replay_step(mgr, step, GEN)
        mgr.commit(step, [2])
    want = mgr.state("a")
    snap = mgr.snapshot("a", at_token=5)
    assert mgr.snapshot_token(snap) == 5
    assert_states_equal(mgr.state("a"), want, "snapshot changed the source")
    mgr.restore(snap, "b")
    assert_states_equal(mgr.state("b"), want, "restored")
    mgr.write_state("a", random_state(mgr, GEN))
    mgr.restore(snap, "a")
    assert_states_equal(mgr.state("a"), want, "restored over a changed state")
    mgr.snapshot("b", at_token=0)
    before = clone_pools(mgr)
    with pytest.raises(CapacityError, match="out of snapshot slots"):
        mgr.snapshot("a", at_token=4)
    assert all(torch.equal(p.storage, before[k]) for k, p in mgr.pools.items() if p.decl.per == "snapshot")
    mgr.drop_snapshot(snap)
    assert mgr.snapshot("a", at_token=4) == snap
    for bad in (-1, 6, 2.0, True, None):  # past its 5 tokens, negative, not an int: refused, nothing taken
        with pytest.raises(ValueError, match="expected an int in 0..5"):
            mgr.snapshot("a", at_token=bad)


def test_no_snapshot_slots_configured():
    mgr = make(ALL_KINDS)
    mgr.add_request("a")
    with pytest.raises(CapacityError, match="snapshot_slots = 0"):
        mgr.snapshot("a", 0)
