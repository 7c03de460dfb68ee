"""Slot lifecycle, reserved and warm-up slots, KV blocks, capacity errors and relocation."""

from __future__ import annotations

import pytest
import torch
from manager_util import (
    ALL_KINDS,
    SMALL,
    assert_pools_equal,
    assert_states_equal,
    clone_pools,
    fill,
    make,
    random_state,
)

import mcache.kernels
from mcache.cache.manager import derive_seed
from mcache.core.errors import CapacityError

GEN = torch.Generator().manual_seed(0)
KERNELS = list(mcache.kernels.__all__)


def _zero_state(mgr, request):
    return {k: torch.zeros_like(v) for k, v in mgr.state(request).items()}


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
def test_add_resets_the_slot_and_touches_no_other(pool_layout):
    mgr = make(ALL_KINDS, pool_layout=pool_layout, draft_tokens=2, spec_scheme="replay", snapshot_slots=1)
    fill(mgr)  # NaN everywhere, as fresh memory might be
    slot = mgr.add_request("a")
    for key, value in mgr.slot_buffers("a").items():
        want = derive_seed("a", 0, 0) if key == "seed" else 0
        assert bool((value == want).all()), f"{key} not reset"
    for key, pool in mgr.pools.items():
        per_slot = pool.decl.per == "slot"
        others = torch.cat([pool.view[:, :slot], pool.view[:, slot + 1 :]], dim=1) if per_slot else pool.view
        if others.dtype.is_floating_point:
            assert bool(others.isnan().all()), f"{key}: add touched memory of another slot"
        else:
            assert bool((others == -7).all()), f"{key}: add touched memory of another slot"


def test_seed_is_deterministic_per_request_and_rank():
    r0, r1 = make(tp=2, tp_rank=0), make(tp=2, tp_rank=1)
    for m in (r0, r1):
        m.add_request("a")
        m.add_request(7)
    assert r0.seed_of("a") == derive_seed("a", 0, 0) and r1.seed_of("a") == derive_seed("a", 0, 1)
    assert len({r0.seed_of("a"), r1.seed_of("a"), r0.seed_of(7), r1.seed_of(7)}) == 4
    again = make(tp=2, tp_rank=1)
    again.add_request("b")
    again.add_request("a")
    assert again.seed_of("a") == r1.seed_of("a") and again.slot_of("a") != r1.slot_of("a")


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
def test_no_state_leaks_into_a_new_request(pool_layout):
    mgr = make(ALL_KINDS, pool_layout=pool_layout, draft_tokens=1, spec_scheme="index")
    mgr.add_request("a")
    mgr.write_state("a", random_state(mgr, GEN))
    slot = mgr.slot_of("a")
    mgr.free("a")
    assert mgr.add_request("b") == slot
    assert_states_equal(mgr.state("b"), _zero_state(mgr, "b"), "reused slot")


def test_reserved_slots_are_never_handed_out_and_capacity_error_changes_nothing():
    mgr = make(ALL_KINDS, max_batch=2, pp=2, draft_tokens=2)  # 2 x 2 request slots + 3 padding slots
    assert mgr.num_slots == 7 and mgr.reserved_slots == [4, 5, 6]
    assert mgr.padding_slot(0) == 4
    slots = [mgr.add_request(i) for i in range(4)]
    assert sorted(slots) == [0, 1, 2, 3]
    before, free = clone_pools(mgr), mgr.free_slots
    with pytest.raises(CapacityError, match="out of request slots"):
        mgr.add_request("one too many")
    assert_pools_equal(mgr, before)
    assert mgr.free_slots == free and "one too many" not in mgr.requests
    dp = make(ALL_KINDS, tp=2, attention_dp=True, draft_tokens=1)
    assert len(dp.reserved_slots) == 3  # two padding slots (draft 0, 1) + the attention-DP dummy


def test_warmup_requests_are_freed_and_reserved_slots_survive():
    mgr = make(ALL_KINDS, draft_tokens=1)
    reserved = mgr.reserved_slots
    for pool in mgr.pools.values():
        if pool.decl.per == "slot" and pool.view.dtype.is_floating_point:
            pool.view[:, reserved] = 3.0  # what CUDA-graph padding left there
    before = {k: p.view[:, reserved].clone() for k, p in mgr.pools.items() if p.decl.per == "slot"}
    mgr.add_request("real", tokens=5)
    for i in range(2):
        mgr.add_request(("warmup", i), tokens=8, warmup=True)
    mgr.end_warmup()
    assert mgr.requests == ["real"]
    assert sorted(mgr.free_slots) == sorted(set(range(mgr.max_requests)) - {mgr.slot_of("real")})
    for k, p in mgr.pools.items():
        if p.decl.per == "slot":
            assert torch.equal(p.view[:, reserved], before[k]), f"{k}: warm-up touched a reserved slot"


def test_rank_without_recurrent_layers_does_no_state_work(monkeypatch):
    # Stage 1 holds only the attention layer: no slots, and no kernel may run.
    spec = ALL_KINDS.replace("num_layers: 9", "num_layers: 2").replace(
        "[mamba2, attention+indexer, gdn+ple+hc, kda, mamba1, short_conv, lightning, mla+dsa_indexer+mhc, mamba2]",
        "[mamba2, attention]"
    )
    mgr = make(spec, pp=2, stage=1, draft_tokens=2, spec_scheme="replay", snapshot_slots=2)
    assert mgr.num_slots == 0 and not mgr.has_state

    def forbidden(*args, **kwargs):
        raise AssertionError("a kernel ran on a rank without recurrent layers")

    for name in KERNELS:
        monkeypatch.setattr(mcache.kernels, name, forbidden)
    assert mgr.add_request(("warmup", 0), tokens=4, warmup=True) is None
    assert mgr.add_request("a", tokens=3) is None
    step = mgr.begin_step(["a", ("warmup", 0)])
    mgr.commit(step, [2, 1])
    snap = mgr.snapshot("a", 3)
    mgr.restore(snap, "a")
    assert mgr.relocate("a") is None
    assert mgr.export("a") == [] and mgr.state("a") == {}
    mgr.end_warmup()
    mgr.free("a")
    assert mgr.requests == []


def test_kv_blocks_grow_with_tokens_and_return_on_free():
    mgr = make(SMALL, max_batch=2, max_seq_len=16, tokens_per_block=4)  # 8 blocks; the window group 3 each
    assert len(mgr.free_blocks(10)) == 2 * 12 // 4  # SMALL has only a windowed attention layer
    mgr.add_request("a", tokens=5)
    assert len(mgr.block_table("a", "attention.kv")) == 2
    mgr.extend("a", 4)
    assert len(mgr.block_table("a", "attention.kv")) == 3 and mgr.num_tokens("a") == 9
    mgr.extend("a", 7)  # 16 tokens, but the window keeps ceil(10 / 4) = 3 blocks as a ring
    assert len(mgr.block_table("a", "attention.kv")) == 3
    mgr.add_request("b", tokens=12)
    tables = mgr.block_table("a", "attention.kv") + mgr.block_table("b", "attention.kv")
    assert len(set(tables)) == 6 and not set(tables) & set(mgr.free_blocks(10))
    mgr.free("a")
    assert len(mgr.free_blocks(10)) == 3


def test_running_out_of_kv_blocks_changes_nothing():
    # PP 2: 4 live requests (max batch x pp) share a KV pool capped at 32 tokens = 8 blocks.
    mgr = make(ALL_KINDS, pp=2, max_batch=2, max_seq_len=16, tokens_per_block=4, kv_tokens=32)
    mgr.add_request("a", tokens=16)
    mgr.add_request("b", tokens=8)
    mgr.add_request("c", tokens=2)
    table = mgr.block_table("b", "attention.kv")
    state = (mgr.free_blocks(None), mgr.free_slots, mgr.requests)
    before = clone_pools(mgr)
    with pytest.raises(CapacityError, match="out of KV blocks: 2 needed, 1 of 8 free"):
        mgr.add_request("d", tokens=5)
    mgr.extend("c", 2)  # c's block has room: no new block
    with pytest.raises(CapacityError, match="out of KV blocks"):
        mgr.extend("b", 5)
    with pytest.raises(CapacityError, match="max_seq_len"):
        mgr.extend("a", 1)
    assert mgr.num_tokens("b") == 8 and mgr.block_table("b", "attention.kv") == table
    assert (mgr.free_blocks(None), mgr.free_slots, mgr.requests) == state
    assert_pools_equal(mgr, before)
    mgr.extend("b", 4)
    assert mgr.free_blocks(None) == [] and len(mgr.block_table("b", "attention.kv")) == 3
    mgr.free("a")
    assert len(mgr.free_blocks(None)) == 4


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
@pytest.mark.parametrize("scheme,draft", [("none", 0), ("replay", 2), ("index", 2)])
def test_relocation_moves_every_side_buffer(scheme, draft, pool_layout):
    mgr = make(ALL_KINDS, pool_layout=pool_layout, draft_tokens=draft, spec_scheme=scheme)
    mgr.add_request("x")
    mgr.add_request("a", tokens=6)
    for pool in mgr.pools.values():  # random bytes in every buffer of a's slot: rings, versions, cursors
        if pool.decl.per == "slot":
            slot = mgr.slot_of("a")
            shape = pool.view[:, slot].shape
            if pool.view.dtype.is_floating_point:
                pool.view[:, slot] = torch.randn(shape, generator=GEN).to(pool.view.dtype)
            else:  # cursors and version indices must stay valid: 0 or 1
                pool.view[:, slot] = torch.randint(0, 2, shape, generator=GEN).to(pool.view.dtype)
    raw, state, blocks = mgr.slot_buffers("a"), mgr.state("a"), mgr.block_table("a", "attention.kv")
    other = mgr.slot_buffers("x")
    old = mgr.slot_of("a")
    new = mgr.relocate("a")
    assert new != old and old in mgr.free_slots and new not in mgr.free_slots
    assert_states_equal(mgr.slot_buffers("a"), raw, "relocated buffers")
    assert_states_equal(mgr.state("a"), state, "relocated state")
    assert_states_equal(mgr.slot_buffers("x"), other, "bystander")
    assert mgr.block_table("a", "attention.kv") == blocks
    assert mgr.relocate("a", old) == old
    assert_states_equal(mgr.slot_buffers("a"), raw, "relocated back")


def test_relocation_errors_leave_everything():
    mgr = make(ALL_KINDS, max_batch=2, draft_tokens=1)
    mgr.add_request("a")
    mgr.add_request("b")
    before = clone_pools(mgr)
    with pytest.raises(CapacityError, match="out of state slots"):
        mgr.relocate("a")
    with pytest.raises(ValueError, match="reserved"):
        mgr.relocate("a", mgr.reserved_slots[0])
    with pytest.raises(ValueError, match="in use"):
        mgr.relocate("a", mgr.slot_of("b"))
    assert_pools_equal(mgr, before)
    assert mgr.slot_of("a") == 0 and mgr.slot_of("b") == 1


def test_views_are_per_layer_windows_into_the_pools():
    mgr = make(ALL_KINDS, pool_layout="slot")
    mgr.add_request("a")
    slot = mgr.slot_of("a")
    views = mgr.views("mamba2", 8)  # the second Mamba2 layer (global index 8)
    assert set(views) == {"conv", "ssm", "extra"}
    assert views["ssm"].shape == (mgr.num_slots, 4, 3, 5)
    views["ssm"][slot] = 1.5
    state = mgr.state("a")["mamba2.ssm"]
    assert bool((state[1] == 1.5).all()) and bool((state[0] == 0).all())
    assert mgr.views("attention", 1)["kv"].shape[1:] == (4, 2, 2, 6)
    assert set(mgr.views(None)) == {"seed", "step_counter"}
    with pytest.raises(KeyError):
        mgr.views("mamba2", 1)
