"""Replay equivalence: committing through the replay ring gives the state of stepping token by token.

The per-token recurrences below are written out head by head, independently of the kernels' references.
Float32 throughout; conv windows are data movement and must match bitwise.
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from manager_util import ALL_KINDS, make

from mcache import kernels
from mcache.core.kinds.base import Role

SPECS = {
    "mamba2": "mamba2: {num_heads: 4, head_dim: 3, state_size: 5, n_groups: 2, conv_kernel: 4}",
    "gdn": "gdn: {num_k_heads: 2, num_v_heads: 4, k_head_dim: 3, v_head_dim: 5, conv_kernel: 4}",
    "kda": "kda: {num_heads: 4, head_dim: 3, conv_kernel: 3}",
}


def spec_text(kind: str) -> str:
    return f"""
name: tiny-{kind}
source: test
hidden_size: 8
vocab_size: 10
num_layers: 2
dtype: float32
layers: {{types: [{kind}, {kind}]}}
{SPECS[kind]}
"""


def token(kind: str, meta, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Random inputs of one token for every ring entry: `name -> [L, *shape]`."""
    out = {}
    for entry in meta.inputs:
        shape = (meta.rings[entry.name].shape[0], *entry.shape)
        if entry.name in ("dA", "g"):
            value = -torch.rand(shape, generator=gen) * 0.5  # log decays
        elif entry.name in ("dt", "beta"):
            value = torch.rand(shape, generator=gen)
        else:
            value = torch.randn(shape, generator=gen)
        if entry.name == "k":
            value = value / value.norm(dim=-1, keepdim=True)  # the ring holds normalized keys
        out[entry.name] = value
    return out


def step_reference(kind: str, state: dict[str, torch.Tensor], tok: dict[str, torch.Tensor]) -> dict:
    """One token of the recurrence, head by head, on `[L, ...]` float32 states."""
    conv = torch.cat([state[f"{kind}.conv"], tok["conv_in"][..., None]], dim=-1)[..., 1:]
    ssm = state[f"{kind}.ssm"].clone()
    heads = ssm.shape[1]
    for h in range(heads):
        if kind == "mamba2":
            g = h // (heads // tok["B"].shape[1])
            decay = torch.exp(tok["dA"][:, h])[:, None, None]
            ssm[:, h] = decay * ssm[:, h] + (tok["dt"][:, h, None] * tok["x"][:, h])[:, :, None] * tok["B"][:, g, None, :]
            continue
        k = tok["k"][:, h // (heads // tok["k"].shape[1])]  # [L, K]
        gate = torch.exp(tok["g"][:, h])  # GDN: one per head [L]; KDA: one per key channel [L, K]
        s = ssm[:, h] * (gate[:, None, None] if kind == "gdn" else gate[:, None, :])  # [L, V, K]
        err = tok["v"][:, h] - torch.bmm(s, k[:, :, None])[..., 0]
        ssm[:, h] = s + tok["beta"][:, h, None, None] * err[:, :, None] * k[:, None, :]
    return {f"{kind}.conv": conv, f"{kind}.ssm": ssm}


def assert_close(got, want, what):
    conv, key = (next(k for k in want if k.endswith(s)) for s in ("conv", "ssm"))
    assert torch.equal(got[conv], want[conv]), f"{what}: conv window differs"
    err = ((got[key] - want[key]).abs().max() / want[key].abs().max().clamp_min(1e-6)).item()
    assert err < 2e-6, f"{what}: ssm error ratio {err:.2e}"


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
@pytest.mark.parametrize("draft,history", [(2, 4), (3, 16), (1, 2)], ids=["T3-hist4", "T4-hist16", "T2-hist2"])
@pytest.mark.parametrize("kind", ["mamba2", "gdn", "kda"])
def test_replay_commit_equals_token_by_token(kind, draft, history, pool_layout):
    t = draft + 1
    gen = torch.Generator().manual_seed(hash((kind, draft, pool_layout)) % 2**31)
    mgr = make(
        spec_text(kind),
        draft_tokens=draft,
        spec_scheme="replay",
        replay_history=history,
        pool_layout=pool_layout,
        max_batch=4,
        snapshot_slots=1,
    )
    meta = mgr.replay_metadata()[kind]
    assert meta.history == history
    reqs = ["a", "b", "c"]
    ref = {}
    for r in reqs:
        mgr.add_request(r)
        ref[r] = {k: torch.randn(v.shape, generator=gen) for k, v in mgr.state(r).items()}
        mgr.write_state(r, ref[r])
    overflows = folded = 0
    steps = math.ceil(3 * history / t) + 4
    for i in range(steps):
        batch = reqs if i % 3 else reqs[::-1]
        step = mgr.begin_step(batch)
        overflows += int(step.overflow.sum())
        folded += int(step.fold.sum())
        toks = {}
        for row, r in enumerate(batch):
            toks[r] = [token(kind, meta, gen) for _ in range(t)]
            slot, buf, pos = mgr.slot_of(r), int(step.ring_buf[row]), int(step.ring_pos[row])
            for j, tok in enumerate(toks[r]):
                for name, value in tok.items():
                    meta.rings[name][:, slot, buf, pos + j] = value
        # mostly full or partial acceptance, sometimes none
        accepted = [int(torch.randint(0, t + 1, (1,), generator=gen)) if i % 4 else t for _ in batch]
        mgr.commit(step, accepted)
        for r, a in zip(batch, accepted, strict=True):
            for tok in toks[r][:a]:
                ref[r] = step_reference(kind, ref[r], tok)
        for r in reqs:
            raw = mgr.slot_buffers(r)
            assert_close(mgr.state(r), ref[r], f"{kind} step {i} request {r}")
            assert all(torch.equal(v, raw[k]) for k, v in mgr.slot_buffers(r).items()), "state() mutated the slot"
        if i == steps // 2:  # relocation and snapshots carry pending ring tokens along
            mgr.relocate("b")
            snap = mgr.snapshot("a", at_token=mgr.num_tokens("a"))
            mgr.free("c")
            mgr.add_request("c")
            mgr.restore(snap, "c")
            ref["c"] = dict(ref["a"])
            assert_close(mgr.state("c"), ref["c"], f"{kind} restored")
    assert overflows > 0 and folded > 0, "the test never overflowed the ring"



@pytest.mark.parametrize("kind", ["mamba2", "gdn", "kda", "short_conv"])
def test_a_kind_declares_its_fold_inputs_in_the_order_of_its_fold(kind):
    """The replay inputs of the SSM state follow `replay_fold_<kind>`'s arguments after the state, the conv input
    `replay_fold_conv`'s after the window; the manager's rings keep that order."""
    mgr = make(ALL_KINDS, draft_tokens=1, spec_scheme="replay", max_batch=1)
    inputs = mgr.ctx.replay_inputs(kind)
    for role, fold, state in ((Role.STATE, f"replay_fold_{kind}", "ssm"), (Role.CONV, "replay_fold_conv", "conv")):
        names = [r.name for r in inputs if r.of is role]
        if kind == "short_conv" and role is Role.STATE:
            assert names == []  # a conv window only: no SSM fold
            continue
        params = list(inspect.signature(getattr(kernels, fold)).parameters)
        assert params[: len(names) + 2] == [state, *names, "slots"]
    assert list(mgr.replay_metadata()[kind].rings) == [r.name for r in inputs]
