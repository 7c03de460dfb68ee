"""vLLM's Mamba2 kernel as the fold's baseline (`bench/vllm_ssm.py`): the arguments it is called with, checked on CPU
against a stand-in of `selective_state_update` written here in torch from the kernel's documented contract (the
varlen path: each sequence's tokens stepped from the state at `state_batch_indices[b, 0]`, written back there, a
slot equal to the null id skipped; `A`, `dt`, `dt_bias` and `D` broadcast over a head's rows). The kernel itself runs
on the GPU (tests/test_bench_gpu.py)."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch
from paths import TINY_SPEC

from mcache.bench.kernel_ops import KernelCaseBuilder
from mcache.bench.runner import BenchConfig, Runner
from mcache.core.kinds.base import Role

FAKE = '''
import torch


def selective_state_update(state, x, dt, A, B, C, D, dt_bias, z=None, dt_softplus=False, state_batch_indices=None,
                           dst_state_batch_indices=None, {null}=0, out=None, num_accepted_tokens=None, cu_seqlens=None):
    assert A.stride(-1) == 0 and A.stride(-2) == 0 and dt.stride(-1) == 0 and dt_bias.stride(-1) == 0  # tied heads
    assert out.shape == x.shape and num_accepted_tokens is None and z is None
    H, G = x.shape[1], B.shape[1]
    for b in range(len(cu_seqlens) - 1):
        idx = int(state_batch_indices[b, 0])
        if idx == {null}:
            continue
        h = state[idx].double()
        for t in range(int(cu_seqlens[b]), int(cu_seqlens[b + 1])):
            d = dt[t].double() + dt_bias.double()
            h = h * torch.exp(A.double() * d[..., None]) + (B[t].double().repeat_interleave(H // G, 0)[:, None, :]
                                                             * (d * x[t].double())[..., None])
            out[t] = ((h * C[t].double().repeat_interleave(H // G, 0)[:, None, :]).sum(-1) + x[t] * D).to(out.dtype)
        state[idx] = h.to(state.dtype)
'''


@pytest.fixture(params=["null_block_id", "pad_slot_id"])
def fake_vllm(request, tmp_path, monkeypatch):
    """A `vllm` package holding only the kernel's module, `selective_state_update` in torch (the null id's argument
    under its name from vLLM 0.15 on and before)."""
    ops = tmp_path / "vllm" / "model_executor" / "layers" / "mamba" / "ops"
    ops.mkdir(parents=True)
    for d in [tmp_path / "vllm", *list(ops.relative_to(tmp_path).parents)[:-1]]:
        (tmp_path / d / "__init__.py").touch()
    (ops / "mamba_ssm.py").write_text(textwrap.dedent(FAKE.replace("{null}", request.param)))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield request.param
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]


def _builder():
    runner = Runner(BenchConfig(spec=TINY_SPEC, device="cpu", batches=[3], max_batch=4, scheme="replay"))
    manager = runner._build_manager()
    return KernelCaseBuilder(manager.pools.values(), "mamba2", None, len(manager.free_slots), 4, 4,
                             torch.Generator().manual_seed(0))


def test_the_vllm_row_folds_what_the_reference_folds_with_its_decay(fake_vllm):
    builder = _builder()
    case = builder.replay_fold(3)
    (impl, run, check), = [o for o in case.others if o[0] == "vllm"]
    assert check()  # final(): the stand-in on gathered states, against the torch reference with dA = A_h dt
    ssm = builder.base[Role.STATE]
    before = ssm.clone()
    run()  # in place, on the pool: the requests' slots change, no other
    changed = (ssm != before).flatten(2).any(-1).any(0)
    assert 0 < int(changed.sum()) <= 3


def test_no_vllm_row_without_vllm_or_for_other_kinds(fake_vllm, monkeypatch):
    from mcache.bench import vllm_ssm

    builder = _builder()
    rings = builder.rings[Role.STATE]
    assert vllm_ssm.vllm_cases("gdn", None, rings, None, None, 4, builder.gen, None) == []
    monkeypatch.setattr(vllm_ssm, "MODULE", "vllm.no_such_module")
    assert not vllm_ssm.available()
