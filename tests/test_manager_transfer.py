"""Moving a request's state between managers of different TP, PP and layout: bitwise, each rank its share."""

from __future__ import annotations

import pytest
import torch
from manager_util import ALL_KINDS, assert_pools_equal, assert_states_equal, clone_pools, make, random_state, write_replay_step

from mcache.core.errors import CapacityError

GEN = torch.Generator().manual_seed(2)

# Global (TP 1) rows of each section of axis 0, and the groups a section is made of when TP may
# replicate it (Mamba2's B and C: 2 groups, so TP 4 gives each pair of ranks one whole group; the PLE window is one).
SECTIONS = {
    "mamba2.conv": [("x", 12, None), ("B", 10, 2), ("C", 10, 2)],
    "mamba2.ssm": [("heads", 4, None)],
    "gdn.conv": [("q", 12, None), ("k", 12, None), ("v", 40, None)],
    "gdn.ssm": [("heads", 8, None)],
    "kda.conv": [("q", 12, None), ("k", 12, None), ("v", 12, None)],
    "kda.ssm": [("heads", 4, None)],
    "mamba1.conv": [("channels", 8, None)],
    "mamba1.ssm": [("channels", 8, None)],
    "short_conv.conv": [("channels", 12, None)],
    "lightning.ssm": [("heads", 4, None)],
    "ple.conv": [("channels", 24, 1)],  # one group: whole on every rank
}


def share(full: dict[str, torch.Tensor], tp: int, rank: int) -> dict[str, torch.Tensor]:
    """What TP rank `rank` of `tp` holds of a full TP-1 state: its heads, its part of each conv section."""
    out = {}
    for key, value in full.items():
        parts, offset = [], 0
        for _, rows, groups in SECTIONS[key]:
            if groups and tp > groups:
                per = rows // groups
                start = rank // (tp // groups) * per
            else:
                per = rows // tp
                start = rank * per
            parts.append(value[:, offset + start : offset + start + per])
            offset += rows
        out[key] = torch.cat(parts, dim=1)
    return out


def _managers(tp, layout, **kw):
    return [make(ALL_KINDS, tp=tp, tp_rank=r, pool_layout=layout, **kw) for r in range(tp)]


@pytest.mark.parametrize("targeted", [True, False], ids=["to-receiver", "broadcast"])
@pytest.mark.parametrize("src_tp,dst_tp", [(1, 2), (2, 1), (4, 2), (2, 4), (1, 4), (2, 2)])
def test_transfer_across_tp_is_bitwise_and_each_rank_gets_its_share(src_tp, dst_tp, targeted):
    full_mgr = make(ALL_KINDS)
    full_mgr.add_request("r")
    full_mgr.write_state("r", random_state(full_mgr, GEN))
    full = full_mgr.state("r")
    assert set(full) == set(SECTIONS)
    senders = _managers(src_tp, "layer")
    for rank, s in enumerate(senders):
        s.add_request("r")
        s.write_state("r", share(full, src_tp, rank))
    receivers = _managers(dst_tp, "slot")
    for q, recv in enumerate(receivers):
        recv.add_request("other")  # the request lands in another slot than the sender's
        to = (dst_tp, q) if targeted else None
        regions = [reg for s in senders for reg in s.export("r", to=to)]
        recv.import_("r", regions)
        assert_states_equal(recv.state("r"), share(full, dst_tp, q), f"receiver {q} of tp {dst_tp}")
        assert bool((recv.state("other")["mamba2.ssm"] == 0).all())
        if targeted and src_tp <= dst_tp:  # one sender holds all of it: exactly the receiver's bytes move
            mine = sum(v.numel() * v.element_size() for v in share(full, dst_tp, q).values())
            assert sum(reg.nbytes for reg in regions) == mine


def test_equal_tp_sends_one_region_per_layer_and_state():
    sender = make(ALL_KINDS, tp=2, tp_rank=1)
    sender.add_request("r")
    regions = sender.export("r", to=(2, 1))
    # every state of the rank but the PLE window, which every rank holds whole and rank 0 sends
    assert len(regions) == sum(len(h.layers) * len(h.transfer_states()) for h in sender.handlers if h.kind != "ple")
    first = make(ALL_KINDS, tp=2, tp_rank=0)
    first.add_request("r")
    assert [reg.layer for reg in first.export("r", to=(2, 1)) if reg.role == "ple.conv"] == [2]
    assert {(reg.role, reg.layer) for reg in regions} >= {("mamba2.ssm", 0), ("mamba2.ssm", 8)}


def test_transfer_from_replay_sends_the_folded_state_and_clears_the_ring():
    sender = make(ALL_KINDS, draft_tokens=2, spec_scheme="replay", replay_history=4)
    sender.add_request("r")
    sender.write_state("r", random_state(sender, GEN))
    step = sender.begin_step(["r"])
    write_replay_step(sender, step, GEN, scale=0.5)
    sender.commit(step, [3])
    want = sender.state("r")
    receiver = make(ALL_KINDS, draft_tokens=2, spec_scheme="replay", replay_history=4, pool_layout="slot")
    receiver.import_("r", sender.export("r"))
    assert_states_equal(receiver.state("r"), want, "received")
    raw = receiver.slot_buffers("r")
    assert raw["replay_prev_accepted"].item() == 0
    assert all(bool((v == 0).all()) for k, v in raw.items() if ".ring_" in k)


def test_attention_dp_and_pp_differences():
    # Sender: attention-DP rank 1 of 2 (whole state); receivers: TP 2 x PP 2, each stage takes its layers.
    sender = make(ALL_KINDS, tp=2, tp_rank=1, attention_dp=True)
    sender.add_request("r")
    sender.write_state("r", random_state(sender, GEN))
    full = sender.state("r")
    for stage in (0, 1):
        for q in (0, 1):
            recv = make(ALL_KINDS, tp=2, tp_rank=q, pp=2, stage=stage)
            recv.import_("r", sender.export("r", to=(2, q)))
            got = recv.state("r")
            layers = {h.kind: h.layers for h in recv.handlers}
            sender_layers = {h.kind: h.layers for h in sender.handlers}
            for key, value in share(full, 2, q).items():
                kind = key.split(".")[0]
                if kind not in layers:
                    assert key not in got
                    continue
                idx = [sender_layers[kind].index(layer) for layer in layers[kind]]
                assert torch.equal(got[key], value[idx]), f"stage {stage} rank {q} {key}"


def test_incomplete_or_mismatched_transfer_changes_nothing():
    senders = _managers(2, "layer")
    for s in senders:
        s.add_request("r")
    receiver = make(ALL_KINDS)
    before = clone_pools(receiver)
    with pytest.raises(ValueError, match="incomplete transfer"):
        receiver.import_("r", senders[0].export("r"))  # half of the heads
    assert receiver.requests == []
    assert_pools_equal(receiver, before)
    other = make(ALL_KINDS.replace("dtype: float32", "dtype: bfloat16"))
    with pytest.raises(ValueError, match="rows of"):
        other.import_("r", [reg for s in senders for reg in s.export("r")])
    full = make(ALL_KINDS, max_batch=1)
    full.add_request("x")
    before = clone_pools(full)
    with pytest.raises(CapacityError):
        full.import_("r", [reg for s in senders for reg in s.export("r")])
    assert full.requests == ["x"]
    assert_pools_equal(full, before)
