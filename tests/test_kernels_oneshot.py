"""The one-shot functions' plan cache (`mcache/kernels/_oneshot.py`): a repeated call on the same tensors reuses its
plan without checking the tensors again; a changed tensor, shape, stride or dtype builds (and checks) a new one; the
cache is bounded; results stay right through all of it.

CPU: the Triton launchers run under the interpreter (conftest sets TRITON_INTERPRET). Outputs are poisoned first and
inputs random.
"""

from __future__ import annotations

import pytest
import torch
from kernel_cases import distinct_slots, make_pool, poison_slots, rel_err

HAS_CUDA = torch.cuda.is_available()
DEVICE = "cuda" if HAS_CUDA else "cpu"


@pytest.fixture
def plans():
    from mcache.kernels._oneshot import PLANS

    PLANS.clear()
    PLANS.builds = 0
    yield PLANS
    PLANS.clear()


@pytest.fixture
def checks(monkeypatch):
    """Counts the state-layout checks of `copy_slots`'s plan (`state_numel`, once per pool of a plan built)."""
    from mcache.kernels.copy_slots import kernel

    seen = []
    real = kernel.state_numel

    def counting(t, nlead, name):
        seen.append(name)
        return real(t, nlead, name)

    monkeypatch.setattr(kernel, "state_numel", counting)
    return seen


def _copy(src, dst, gen, nb=3, check=False):
    """One `copy_slots` call with poisoned destinations, checked bitwise against the source."""
    from mcache.kernels.copy_slots.kernel import copy_slots_triton

    slots = distinct_slots(2 * nb, src.shape[1], gen, src.device)
    s, d = slots[:nb], slots[nb:]
    poison_slots(dst, d)
    copy_slots_triton(src, s, dst, d, check=check)
    assert torch.equal(dst[:, d], src[:, s])


def test_a_repeated_call_reuses_its_plan_without_checking_again(plans, checks):
    gen = torch.Generator().manual_seed(3)
    pool = make_pool(2, 12, (5, 3), torch.float32, "layer_major", DEVICE, gen)
    _copy(pool, pool, gen)
    assert (plans.builds, len(checks)) == (1, 2)  # the first call checks both pools
    for _ in range(3):
        _copy(pool, pool, gen)
    assert (plans.builds, len(checks)) == (1, 2)
    _copy(pool, pool, gen, check=True)  # check=True still checks the per-call ranges, on the cached plan
    assert plans.builds == 1


def test_a_repeated_call_takes_the_fast_path(plans, monkeypatch):
    """The same pools again (one pool copied within itself too: one object given twice), with new index vectors of the
    same length and dtypes: no key is built, no guard made and no index vector checked one by one. A new batch size
    takes the slow path once."""
    from mcache.kernels import _oneshot

    gen = torch.Generator().manual_seed(9)
    pool = make_pool(2, 12, (5, 3), torch.float32, "layer_major", DEVICE, gen)
    other = make_pool(2, 12, (5, 3), torch.float32, "layer_major", DEVICE, gen)
    for src, dst in ((pool, pool), (pool, other)):
        _copy(src, dst, gen)
        calls = []
        for name in ("layout_guard", "indices_on"):
            real = getattr(_oneshot, name)
            monkeypatch.setattr(_oneshot, name, lambda *a, real=real, name=name, seen=calls, **k: seen.append(name) or real(*a, **k))
        real_plan = plans._plan
        monkeypatch.setattr(plans, "_plan", lambda *a, seen=calls, real=real_plan: seen.append("key") or real(*a))
        for _ in range(3):
            _copy(src, dst, gen)
        assert calls == []
        for _ in range(3):
            _copy(src, dst, gen, nb=2)
        assert calls == ["key", "indices_on", "layout_guard"]
        monkeypatch.undo()


def test_a_matched_call_runs_the_launches_its_guard_fixes(plans, monkeypatch):
    """A repeated fold (five bound tensors) runs the launches its last call's guard fixed, without the plan's own `key`;
    check=True still checks its ranges there. A plan whose key reads the vectors' addresses (`commit_index`: their
    alignment) is called instead, so a misaligned vector of the same length gets its own launch."""
    from mcache.kernels._common import KernelArgError
    from mcache.kernels.commit_index.kernel import CommitIndexPlan, commit_index_triton
    from mcache.kernels.commit_index.reference import commit_index_reference
    from mcache.kernels.replay_fold.kda import KdaFoldPlan, replay_fold_kda_triton
    from mcache.kernels.replay_fold.reference import replay_fold_kda_reference

    gen = torch.Generator().manual_seed(11)
    L, S, H, V, K, hist = 2, 6, 2, 4, 8, 3
    ssm = torch.randn(L, S, H, V, K, generator=gen).to(DEVICE)
    k = torch.nn.functional.normalize(torch.randn(L, S, 2, hist, H, K, generator=gen), dim=-1).to(DEVICE)
    v = torch.randn(L, S, 2, hist, H, V, generator=gen).to(DEVICE)
    g = -torch.rand(L, S, 2, hist, H, K, generator=gen).mul(0.5).add(0.01).to(DEVICE)
    beta = torch.rand(L, S, 2, hist, H, generator=gen).to(DEVICE)
    keys = []
    real_key = KdaFoldPlan.key
    monkeypatch.setattr(KdaFoldPlan, "key", lambda self, *a: keys.append(1) or real_key(self, *a))
    for n in (2, 2, 2, 3, 3):
        slots = distinct_slots(n, S, gen, DEVICE)
        buf = torch.randint(0, 2, (n,), generator=gen).to(DEVICE)
        count = torch.randint(1, hist + 1, (n,), generator=gen).to(DEVICE)
        expect = ssm.clone()
        replay_fold_kda_reference(expect, k, v, g, beta, slots, buf, count)
        replay_fold_kda_triton(ssm, k, v, g, beta, slots, buf, count, check=False)
        assert rel_err(ssm, expect) < 2e-5  # the folded slots, and the others untouched
        ssm.copy_(expect)
    # Each length's first call keys the plan twice (its guard's launches, then the plan call); the repeats none.
    assert plans.builds == 1 and len(keys) == 4
    with pytest.raises(KernelArgError, match=r"slots: values must lie in \[0, 6\)"):
        replay_fold_kda_triton(ssm, k, v, g, beta, slots + S, buf, count, check=True)
    assert len(keys) == 4

    version_idx = torch.randint(0, 4, (S,), generator=gen).to(DEVICE)
    calls = []
    real_call = CommitIndexPlan.__call__
    monkeypatch.setattr(CommitIndexPlan, "__call__", lambda self, *a: calls.append(a[0].data_ptr() % 16) or real_call(self, *a))
    store = torch.arange(S + 1).to(DEVICE)
    accepted = torch.randint(0, 3, (S + 1,), generator=gen).to(DEVICE)
    for lo in (0, 0, 1):  # 16-byte aligned twice, then 8 bytes off
        slots, acc = store[lo : lo + S - 1], accepted[lo : lo + S - 1]
        expect = version_idx.clone()
        commit_index_reference(expect, slots, acc, 4)
        commit_index_triton(version_idx, slots, acc, 4, check=False)
        assert torch.equal(version_idx, expect)
    assert calls == [0, 0, 8]


def test_a_changed_tensor_shape_stride_or_dtype_builds_and_checks_again(plans, checks):
    gen = torch.Generator().manual_seed(4)
    pool = make_pool(2, 12, (4, 6), torch.float32, "layer_major", DEVICE, gen)
    other = make_pool(2, 12, (4, 6), torch.float32, "layer_major", DEVICE, gen)
    _copy(pool, other, gen)
    builds = plans.builds
    # Another tensor over the same memory (a new identity): rebuilt.
    _copy(pool, other.view(other.shape), gen)
    assert plans.builds == builds + 1
    # The same Python object given other memory and strides (`.data =`): rebuilt, and the copy still right.
    slot_major = torch.randn(12, 2, 4, 6, generator=gen).to(DEVICE)
    other.data = slot_major.transpose(0, 1)  # same Python object, new storage and strides
    _copy(pool, other, gen)
    assert plans.builds == builds + 2
    other.as_strided_((2, 6, 4, 6), (24, 96, 6, 1))  # same object and address, other shape and strides
    _copy(pool[:, :6], other, gen)
    assert plans.builds == builds + 3
    builds += 1
    flat = other.flatten(2)
    flat_src = pool[:, :6].flatten(2)
    _copy(flat_src, flat, gen)  # another shape (and new tensors)
    assert plans.builds == builds + 3
    # Another dtype (bit views of the same memory): rebuilt, and the dtype mismatch is still refused.
    from mcache.kernels._common import KernelArgError

    with pytest.raises(KernelArgError, match="does not convert"):
        _copy(pool[:, :6].view(torch.int32), other, gen)
    assert plans.builds == builds + 3  # a refused call caches nothing
    _copy(pool[:, :6].view(torch.int32), other.view(torch.int32), gen)
    assert plans.builds == builds + 4
    assert len(checks) == 2 * plans.builds
    # The same objects as the last call, one given another dtype in place: not the last call's plan.
    src = pool[:, :6]
    _copy(src, other, gen)
    other.data = other.data.view(torch.int32)
    with pytest.raises(KernelArgError, match="does not convert"):
        _copy(src, other, gen)
    other.data = other.data.view(torch.float32)
    _copy(src, other, gen)
    assert plans.builds == builds + 5


def test_the_cache_is_bounded(plans):
    from mcache.kernels._oneshot import PLAN_CACHE_SIZE

    gen = torch.Generator().manual_seed(5)
    pools = [make_pool(1, 4, (3,), torch.float32, "layer_major", DEVICE, gen) for _ in range(PLAN_CACHE_SIZE + 4)]
    for p in pools:
        _copy(p, p, gen, nb=1)
    assert (len(plans), plans.builds) == (PLAN_CACHE_SIZE, PLAN_CACHE_SIZE + 4)
    _copy(pools[-1], pools[-1], gen, nb=1)  # the newest is still held
    assert plans.builds == PLAN_CACHE_SIZE + 4
    _copy(pools[0], pools[0], gen, nb=1)  # the oldest was evicted
    assert plans.builds == PLAN_CACHE_SIZE + 5
    from mcache.kernels import clear_plan_cache

    clear_plan_cache()
    assert len(plans) == 0


def test_every_one_shot_function_caches_its_plan(plans):
    """commit_intermediate, pack/unpack, reset and the Mamba2 fold: the second call builds nothing, and each call's
    output matches the reference."""
    from mcache.kernels.commit_intermediate.kernel import commit_intermediate_triton
    from mcache.kernels.pack.kernel import pack_triton, unpack_triton
    from mcache.kernels.pack.reference import pack_reference
    from mcache.kernels.replay_fold.mamba2 import replay_fold_mamba2_triton
    from mcache.kernels.replay_fold.reference import replay_fold_mamba2_reference
    from mcache.kernels.reset_slots.kernel import reset_slots_triton

    gen = torch.Generator().manual_seed(6)
    L, S, T = 2, 9, 3
    pool = make_pool(L, S, (3, 5), torch.float32, "layer_major", DEVICE, gen)
    inter = torch.randn(L, S, T, 3, 5, generator=gen).to(DEVICE)
    ranges = [(1, 6), (9, 4)]
    out = torch.empty(2, L, 10, device=DEVICE)
    # Mamba2 fold: ssm [L, S, H, P, N], x [L, S, 2, Hist, H, P], B [.., G, N], dt/dA [.., H]
    H, P, N, G, hist = 2, 4, 6, 1, 3
    ssm = torch.randn(L, S, H, P, N, generator=gen).to(DEVICE)
    x = torch.randn(L, S, 2, hist, H, P, generator=gen).to(DEVICE)
    B = torch.randn(L, S, 2, hist, G, N, generator=gen).to(DEVICE)
    dt = torch.rand(L, S, 2, hist, H, generator=gen).mul(0.1).to(DEVICE)
    dA = -torch.rand(L, S, 2, hist, H, generator=gen).mul(0.5).add(0.01).to(DEVICE)
    for round_ in range(2):
        slots = distinct_slots(2, S, gen, DEVICE)
        rows = torch.randperm(S, generator=gen)[:2].to(DEVICE)
        accepted = torch.randint(1, T + 1, (2,), generator=gen).to(DEVICE)
        poison_slots(pool, slots)
        commit_intermediate_triton(pool, inter, slots, rows, accepted, check=False)
        assert torch.equal(pool[:, slots], inter[:, rows, accepted - 1])
        out.fill_(float("nan"))
        pack_triton(pool, slots, ranges, out, check=False)
        expect = torch.full_like(out, float("nan"))
        pack_reference(pool, slots, ranges, expect)
        assert torch.equal(out, expect)
        poison_slots(pool, slots)
        unpack_triton(out, pool, slots, ranges, check=False)
        back = torch.full_like(out, float("nan"))
        pack_reference(pool, slots, ranges, back)
        assert torch.equal(back, out)
        reset_slots_triton([pool], slots, check=False)
        assert bool((pool[:, slots] == 0).all())
        buf = torch.randint(0, 2, (2,), generator=gen).to(DEVICE)
        count = torch.tensor([hist, 2]).to(DEVICE)
        expect_ssm = ssm.clone()
        replay_fold_mamba2_reference(expect_ssm, x, B, dt, dA, slots, buf, count)
        replay_fold_mamba2_triton(ssm, x, B, dt, dA, slots, buf, count, check=False)
        assert rel_err(ssm[:, slots], expect_ssm[:, slots]) < 2e-5
        ssm.copy_(expect_ssm)
        if round_ == 0:
            built = plans.builds
    assert built == 5 and plans.builds == built  # commit, pack, unpack, reset, fold: once each


def test_ranges_change_the_key(plans):
    from mcache.kernels.pack.kernel import pack_triton
    from mcache.kernels.pack.reference import pack_reference

    gen = torch.Generator().manual_seed(7)
    pool = make_pool(2, 6, (12,), torch.float32, "layer_major", DEVICE, gen)
    out = torch.empty(1, 2, 4, device=DEVICE)
    slots = torch.tensor([3]).to(DEVICE)
    for ranges in ([(0, 4)], [(8, 4)], [(0, 2), (10, 2)]):
        out.fill_(float("nan"))
        pack_triton(pool, slots, ranges, out, check=False)
        expect = torch.empty_like(out)
        pack_reference(pool, slots, ranges, expect)
        assert torch.equal(out, expect)
    assert plans.builds == 3


def test_index_vectors_are_checked_on_every_call(plans):
    """A one-shot call's index vectors: a contiguous int32/int64 vector on the plan's device of the first one's length
    (or the length the plan asks) passes as it is; a strided one is made contiguous; anything else is refused, naming
    the vector, also right after vectors that took the fast path (one C++ check of the last ones' length, dtypes,
    device and contiguity)."""
    from mcache.kernels._common import KernelArgError, indices_on
    from mcache.kernels.copy_slots.kernel import copy_slots_triton

    cpu = torch.device("cpu")
    a, b = torch.arange(4), torch.arange(4, 8, dtype=torch.int32)
    names = ("src", "dst")
    got = indices_on(cpu, names, a, b)
    assert got[0] is a and got[1] is b
    strided = torch.arange(8)[::2]
    fixed = indices_on(cpu, names, a, strided)[1]
    assert fixed.is_contiguous() and torch.equal(fixed, strided)
    expanded = torch.tensor([5]).expand(4)  # stride 0: never read as a contiguous vector
    assert indices_on(cpu, names, a, expanded)[1].stride() == (1,)
    bad = {
        "a list": ([0, 1, 2, 3], "dst_slots: expected an int32/int64 tensor, got <class 'list'>"),
        "floats": (torch.zeros(4), "dst_slots: expected an int32/int64 tensor, got torch.float32"),
        "int16": (torch.zeros(4, dtype=torch.int16), "dst_slots: expected an int32/int64 tensor, got torch.int16"),
        "a matrix": (torch.zeros(2, 2, dtype=torch.int64), "dst_slots: expected shape [4], got (2, 2)"),
        "another length": (torch.arange(3), "dst_slots: expected shape [4], got (3,)"),
    }
    gen = torch.Generator().manual_seed(10)
    pool = make_pool(2, 12, (5, 3), torch.float32, "layer_major", DEVICE, gen)
    good_src, good_dst = torch.arange(4).to(DEVICE), torch.arange(4, 8, dtype=torch.int32).to(DEVICE)
    for case, (dst, message) in bad.items():
        for _ in range(2):  # the second call takes the fast path
            copy_slots_triton(pool, good_src, pool, good_dst, check=False)
        if isinstance(dst, torch.Tensor):
            dst = dst.to(DEVICE)
        with pytest.raises(KernelArgError) as err:
            copy_slots_triton(pool, good_src, pool, dst, check=False)
        assert str(err.value) == message, case
    with pytest.raises(KernelArgError, match=r"src: expected shape \[B\], got \(\)"):
        indices_on(cpu, ("src",), torch.tensor(3))
    indices_on(cpu, ("slots",), a, length=4)
    with pytest.raises(KernelArgError, match=r"slots: expected shape \[3\], got \(4,\)"):
        indices_on(cpu, ("slots",), a, length=3)


def test_without_torchs_tensor_guards_the_checks_run_in_python(plans, checks, monkeypatch):
    """`TensorGuards` is a private torch class: without it every one-shot call still finds its plan by key and checks
    its index vectors one by one, with the same results."""
    from mcache.kernels import _common

    monkeypatch.setattr(_common, "TensorGuards", None)
    gen = torch.Generator().manual_seed(8)
    pool = make_pool(2, 12, (5, 3), torch.float32, "layer_major", DEVICE, gen)
    for _ in range(3):
        _copy(pool, pool, gen)
    assert (plans.builds, len(checks), plans.last["copy_slots"].entries) == (1, 2, {})
    other = make_pool(2, 12, (5, 3), torch.float32, "layer_major", DEVICE, gen)
    other.data = other.data.view(torch.int32)
    from mcache.kernels._common import KernelArgError

    with pytest.raises(KernelArgError, match="does not convert"):
        _copy(pool, other, gen)
