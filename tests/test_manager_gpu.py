"""The manager on CUDA (Triton kernels) does what it does on CPU (torch references), and moves state across devices.

One scripted run per scheme and layout on both devices with the same random inputs: copies must agree
bitwise, replay folds to a tight float32 tolerance.
"""

from __future__ import annotations

import pytest
import torch
from manager_util import ALL_KINDS, make, random_state, scheme_runtime, state_shapes, write_replay_step

from mcache.cache.manager import verify
from mcache.core.load import bundled_names, load_spec
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes

pytestmark = pytest.mark.gpu


def _script(device: str, scheme: str, pool_layout: str) -> tuple[dict, object]:
    """add, tag, three verify steps, relocation, snapshot/restore, free and re-add: the states at the end."""
    gen = torch.Generator().manual_seed(5)
    mgr = make(ALL_KINDS, device=device, pool_layout=pool_layout, **scheme_runtime(scheme, replay_history=4, max_batch=4))
    reqs = ["a", "b", "c"]
    for r in reqs:
        mgr.add_request(r, tokens=3)
        mgr.write_state(r, random_state(mgr, gen))
    t = mgr.ctx.runtime.tokens_per_step
    for accepted in ([1, 3, 0], [3, 3, 2], [2, 1, 3]):
        step = mgr.begin_step(reqs)
        if scheme == "replay":
            write_replay_step(mgr, step, gen, scale=0.5)
        elif scheme in ("intermediate", "index"):
            for row, r in enumerate(reqs):
                for j in range(t):
                    for key, (shape, dtype) in state_shapes(mgr).items():
                        kind, name = key.split(".")
                        value = torch.randn(shape, generator=gen).to(device, dtype)
                        if scheme == "intermediate":
                            mgr.pools[f"{kind}.inter_{name}"].view[:, row, j] = value
                        else:
                            v = int(step.versions[row, j])
                            pool = mgr.pools[key].view if v == 0 else mgr.pools[f"{kind}.{name}_versions"].view[:, :, v - 1]
                            pool[:, mgr.slot_of(r)] = value
        mgr.commit(step, [min(a, t) for a in accepted])
    mgr.relocate("b")
    snap = mgr.snapshot("a", at_token=3)
    mgr.free("c")
    mgr.add_request("c")
    mgr.restore(snap, "c")
    return {r: {k: v.cpu() for k, v in mgr.state(r).items()} for r in reqs}, mgr


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
@pytest.mark.parametrize("scheme", ["none", "intermediate", "replay", "index"])
def test_cuda_manager_matches_cpu(scheme, pool_layout):
    cpu, _ = _script("cpu", scheme, pool_layout)
    gpu, mgr = _script("cuda", scheme, pool_layout)
    for r, states in cpu.items():
        for key, want in states.items():
            got = gpu[r][key]
            if scheme == "replay" and key.endswith(".ssm") and not key.startswith(("mamba1", "lightning")):
                err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-6)).item()
                assert err < 1e-5, f"{r} {key}: error ratio {err:.2e}"
            else:
                assert torch.equal(got, want), f"{r} {key} differs between CUDA and CPU"
    # Across devices: CUDA sender, CPU receivers of TP 2, back to a CUDA manager of TP 1.
    halves = [make(ALL_KINDS, tp=2, tp_rank=q) for q in range(2)]
    for q, half in enumerate(halves):
        half.import_("a", mgr.export("a", to=(2, q)))
    back = make(ALL_KINDS, device="cuda", pool_layout="slot")
    back.import_("a", [reg for half in halves for reg in half.export("a")])
    for key, want in mgr.state("a").items():
        assert torch.equal(back.state("a")[key], want), f"{key} changed crossing devices"


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
def test_verify_on_cuda(pool_layout):
    for name in bundled_names()[:3]:
        spec = load_spec(name)
        runtime = RuntimeConfig(max_batch=4, max_seq_len=1024, draft_tokens=2, spec_scheme="replay", snapshot_slots=1)
        rows = verify(estimate(spec, ParallelLayout(tp=2, pp=2), runtime, resolve_dtypes(spec)), "cuda", pool_layout)
        assert rows and all(r.difference == 0 for r in rows), name
