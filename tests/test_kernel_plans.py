"""Launch plans: every kernel's plan, called again and again on the pools it bound, against the torch reference.

A plan's first call for a batch size goes through `kernel[grid]`; on CUDA every later call goes through the
compiled kernel's launcher with only the index vectors substituted (`mcache/kernels/_launch.py`), so each
plan here runs three rounds: a batch size, the same batch size with other slots (the direct launch on a GPU),
and another batch size. Copy outputs are poisoned before each round and compared bitwise; folds (which read the
state they write) are compared within the replay tests' tolerance. CPU: Triton's interpreter; GPU: `-m gpu`.
"""

from __future__ import annotations

import pytest
import torch
from kernel_cases import distinct_slots, make_pool, poison_slots, rel_err

HAS_CUDA = torch.cuda.is_available()
DEVICES = [
    pytest.param("cpu", marks=pytest.mark.skipif(HAS_CUDA, reason="interpreter runs only without CUDA"), id="interp"),
    pytest.param("cuda", marks=pytest.mark.gpu, id="cuda"),
]
L, S = 3, 12
ROUNDS = (2, 2, 5)  # batch sizes: the second round reuses the first one's launch


def _rounds(device, gen, sets=1):
    for nb in ROUNDS:
        yield nb, distinct_slots(sets * nb, S, gen, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["layer_major", "slot_major"])
def test_copy_reset_commit_plans_reuse_their_launches(device, layout):
    """Two pools of different dtypes and states (an SSM state and a conv window) in one plan each: copy and
    commit move both pairs in one launch, reset zeroes both."""
    from mcache.kernels.commit_intermediate.kernel import CommitIntermediatePlan
    from mcache.kernels.commit_intermediate.reference import commit_intermediate_reference
    from mcache.kernels.copy_slots.kernel import CopySlotsPlan
    from mcache.kernels.copy_slots.reference import copy_slots_reference
    from mcache.kernels.reset_slots.kernel import ResetSlotsPlan

    gen = torch.Generator().manual_seed(3)
    pool = make_pool(L, S, (4, 9), torch.bfloat16, layout, device, gen)
    conv = make_pool(L, S, (6, 3), torch.bfloat16, layout, device, gen)  # 36 bytes: 4-byte words like the pool
    inter = torch.randn(L, 6, 4, 4, 9, generator=gen).to(torch.bfloat16).to(device)
    conv_inter = torch.randn(L, 6, 4, 6, 3, generator=gen).to(torch.bfloat16).to(device)
    pools = (pool, conv)
    copy, reset = CopySlotsPlan([(pool, pool), (conv, conv)]), ResetSlotsPlan([pool, conv])
    commit = CommitIntermediatePlan([(pool, inter), (conv, conv_inter)])
    assert len(copy.groups) == len(commit.groups) == 1  # both pairs in one launch
    for nb, slots in _rounds(device, gen, sets=2):
        src, dst = slots.split(nb)
        expect = [p.clone() for p in pools]
        for e in expect:
            copy_slots_reference(e, src, e, dst)
        for p in pools:
            poison_slots(p, dst)
        copy(src, dst)
        assert all(torch.equal(p, e) for p, e in zip(pools, expect, strict=True)), f"copy, batch {nb}"

        rows = torch.randperm(6, generator=gen)[:nb].to(device)
        accepted = torch.randint(0, 5, (nb,), generator=gen).to(device)
        expect = [p.clone() for p in pools]
        for e, i in zip(expect, (inter, conv_inter), strict=True):
            commit_intermediate_reference(e, i, src, rows, accepted)
        for p in pools:
            poison_slots(p, src[accepted > 0])
        commit(src, rows, accepted)
        assert all(torch.equal(p, e) for p, e in zip(pools, expect, strict=True)), f"commit, batch {nb}"

        reset(dst)
        assert not pool[:, dst].any() and not conv[:, dst].any(), f"reset, batch {nb}"
        assert pool[:, src[accepted > 0]].ne(0).any(), "reset wrote a slot it was not given"


@pytest.mark.parametrize("device", DEVICES)
def test_pack_unpack_and_index_plans_reuse_their_launches(device):
    from mcache.kernels.commit_index.kernel import CommitIndexPlan
    from mcache.kernels.commit_index.reference import commit_index_reference
    from mcache.kernels.pack.kernel import PackPlan
    from mcache.kernels.pack.reference import pack_reference

    gen = torch.Generator().manual_seed(4)
    pool = make_pool(L, S, (6, 5), torch.float16, "layer_major", device, gen)
    conv = make_pool(L, S, (4, 3), torch.float16, "slot_major", device, gen)
    ranges, conv_ranges = [(4, 10), (20, 8)], [(0, 12)]  # even fp16 offsets: 4-byte words in both pools
    out = torch.empty(2, L, 18, dtype=torch.float16, device=device)
    conv_out = torch.empty(2, L, 12, dtype=torch.float16, device=device)
    items = [(pool, ranges, out), (conv, conv_ranges, conv_out)]
    pack, unpack = PackPlan(items), PackPlan(items, to_pool=True)
    assert len(pack.groups) == 1  # both pools in one launch
    version = torch.randint(0, 4, (S,), generator=gen).to(torch.int32).to(device)
    index = CommitIndexPlan(version, 4)
    for nb, slots in _rounds(device, gen, sets=2):
        if nb != out.shape[0]:
            break  # a pack plan is bound to its buffers' batch
        src, dst = slots.split(nb)
        for p, r, o in items:
            expect = torch.empty_like(o)
            pack_reference(p, src, r, expect)
            o.fill_(float("nan"))
        pack(src)
        for p, r, o in items:
            expect = torch.empty_like(o)
            pack_reference(p, src, r, expect)
            assert torch.equal(o, expect), "pack"
        unpack(dst)
        flat = pool.flatten(2)
        assert torch.equal(flat[:, dst, 4:14], flat[:, src, 4:14]) and torch.equal(flat[:, dst, 20:28], flat[:, src, 20:28])
        assert torch.equal(conv[:, dst], conv[:, src])

        accepted = torch.randint(0, 4, (nb,), generator=gen).to(device)
        expect = version.clone()
        commit_index_reference(expect, src, accepted, 4)
        index(src, accepted)
        assert torch.equal(version, expect), "commit_index"


def _fold_case(kind, device, gen, hist=6):
    """`(plan class, state, rings, reference)` of a fold on random inputs (float32: the interpreter's bf16 is not
    faithful)."""
    from mcache.kernels.replay_fold import reference as ref
    from mcache.kernels.replay_fold.conv import ConvFoldPlan
    from mcache.kernels.replay_fold.gdn import GdnFoldPlan
    from mcache.kernels.replay_fold.kda import KdaFoldPlan
    from mcache.kernels.replay_fold.mamba2 import Mamba2FoldPlan

    def ring(*tail, lo=-1.0, hi=1.0):
        return (torch.rand(L, S, 2, hist, *tail, generator=gen) * (hi - lo) + lo).to(device)

    H = 4
    if kind == "mamba2":
        state = torch.randn(L, S, H, 20, 24, generator=gen).to(device)
        rings = (ring(H, 20), ring(2, 24), ring(H, lo=0.0, hi=0.1), ring(H, lo=-0.5, hi=-0.01))
        return Mamba2FoldPlan, state, rings, ref.replay_fold_mamba2_reference
    if kind == "conv":
        state = torch.randn(L, S, 37, 3, generator=gen).to(device)
        return ConvFoldPlan, state, (ring(37),), ref.replay_fold_conv_reference
    # K = 24: masked (BK = 32), and a row of 48 bytes in bf16, which TMA can address
    state = torch.randn(L, S, H, 12, 24, generator=gen).to(device)
    gate = ring(H, 24, lo=-0.5, hi=-0.01) if kind == "kda" else ring(H, lo=-0.5, hi=-0.01)
    rings = (ring(2, 24, lo=-0.1, hi=0.1), ring(H, 12), gate, ring(H, lo=0.05, hi=1.0))
    if kind == "kda":
        return KdaFoldPlan, state, rings, ref.replay_fold_kda_reference
    return GdnFoldPlan, state, rings, ref.replay_fold_gdn_reference


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["mamba2", "gdn", "kda", "conv"])
def test_fold_plans_reuse_their_launches(device, kind):
    gen = torch.Generator().manual_seed(5)
    plan_class, state, rings, reference = _fold_case(kind, device, gen)
    plan = plan_class(state, *rings)
    for nb, slots in _rounds(device, gen):
        buf = torch.randint(0, 2, (nb,), generator=gen).to(device)
        count = torch.randint(1, 7, (nb,), generator=gen).to(device)
        expect = state.clone()
        reference(expect, *rings, slots, buf, count)  # folds read the state they write: nothing to poison, and a
        plan(slots, buf, count)  # plan that did nothing leaves the state the reference changed
        err = rel_err(state, expect)
        assert err < 2e-5, f"{kind} fold, batch {nb}: relative error {err:.2e}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind,form", [("mamba2", None), ("gdn", "step"), ("gdn", "pointer"), ("kda", None)],
                         ids=["mamba2", "gdn-step", "gdn-chunked", "kda"])
def test_a_state_fold_folds_its_conv_window_in_the_same_launch(device, kind, form):
    """With `conv`, a state's plan also folds the kind's conv window, as trailing programs of its (first) launch:
    one launch for Mamba2, KDA and GatedDeltaNet stepped, two for GatedDeltaNet chunked as without the window. Both
    against their references, three rounds, with counts below and above the window's width (3)."""
    from mcache.kernels.replay_fold.reference import replay_fold_conv_reference

    gen = torch.Generator().manual_seed(7)
    plan_class, state, rings, reference = _fold_case(kind, device, gen)
    _, window, (conv_in,), _ = _fold_case("conv", device, gen)
    plan = plan_class(state, *rings, conv=(window, conv_in), **({"form": form} if form else {}))
    for nb, slots in _rounds(device, gen):
        buf = torch.randint(0, 2, (nb,), generator=gen).to(device)
        count = torch.randint(1, 7, (nb,), generator=gen).to(device)
        expect, expect_window = state.clone(), window.clone()
        reference(expect, *rings, slots, buf, count)
        replay_fold_conv_reference(expect_window, conv_in, slots, buf, count)
        plan(slots, buf, count)
        err = rel_err(state, expect)
        assert err < 2e-5, f"{kind} fold with the window, batch {nb}: relative error {err:.2e}"
        assert torch.equal(window, expect_window), f"{kind} fold's conv window, batch {nb}"
        assert len(plan.launches((nb, slots.dtype, buf.dtype, count.dtype))) == (2 if form == "pointer" else 1)


def test_a_fold_refuses_a_window_of_other_slots_or_rings():
    from mcache.kernels._common import KernelArgError

    gen = torch.Generator().manual_seed(8)
    plan_class, state, rings, _ = _fold_case("mamba2", "cpu", gen)
    _, window, (conv_in,), _ = _fold_case("conv", "cpu", gen)
    with pytest.raises(KernelArgError, match="conv: the window's layers, slots and ring dims"):
        plan_class(state, *rings, conv=(window[:, :-1], conv_in[:, :-1]))
    with pytest.raises(KernelArgError, match="conv: the window's layers, slots and ring dims"):
        plan_class(state, *rings, conv=(window, conv_in[:, :, :, :-1]))


def test_a_launch_binds_once_and_substitutes_only_the_per_call_arguments():
    """The launch keeps its bound arguments and replaces exactly the per-call positions on every call."""
    from mcache.kernels._launch import Launch

    seen = []

    class Kernel:  # stands in for a JIT function (interpreted: no compiled launcher)
        def __getitem__(self, grid):
            return lambda *args, **kw: seen.append((grid, args, kw))

    bound = torch.zeros(3)
    launch = Launch(Kernel(), 7, (bound, None, 5, None), (1, 3), dict(BLOCK=16), num_warps=4)
    launch.run("a", "b")
    launch.run("c", "d")
    assert [s[1] for s in seen] == [(bound, "a", 5, "b"), (bound, "c", 5, "d")]
    assert seen[0][0] == (7,) and seen[0][2] == {"BLOCK": 16, "num_warps": 4}


def test_the_manager_rebuilds_a_plan_when_its_pool_changes_and_not_otherwise():
    from mcache.cache.states.base import Plans, Pool

    builds = []

    def build():
        builds.append(1)
        return object()

    pool = Pool(decl=None, units=4, storage=torch.zeros(2, 4, 3), layout="layer")
    plans = Plans()
    first = plans.get("copy", [pool], build)
    assert plans.get("copy", [pool], build) is first and len(builds) == 1  # same pool: the plan it has
    pool.storage = torch.zeros(2, 4, 3)  # a new tensor of the same shape
    second = plans.get("copy", [pool], build)
    assert second is not first and len(builds) == 2
    pool.layout = "slot"  # another layout over the same tensor
    assert plans.get("copy", [pool], build) is not second and len(builds) == 3
    assert plans.get("other", [pool], build) is not None and len(builds) == 4  # plans are kept by name


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_gdn_tma_plan_encodes_its_descriptor_once_and_stays_right():
    """The persistent TMA form of the GatedDeltaNet fold (bf16 state on Hopper) through its plan, with the conv window
    in its mix launch, three rounds: the direct launch encodes the tensor descriptor once at bind time."""
    from mcache.kernels.replay_fold.gdn import GdnFoldPlan, gdn_tma_fits
    from mcache.kernels.replay_fold.reference import replay_fold_conv_reference

    gen = torch.Generator().manual_seed(6)
    _, state, rings, reference = _fold_case("gdn", "cuda", gen)
    _, window, (conv_in,), _ = _fold_case("conv", "cuda", gen)
    state, window, conv_in = state.to(torch.bfloat16), window.to(torch.bfloat16), conv_in.to(torch.bfloat16)
    rings = tuple(r.to(torch.bfloat16) for r in rings)
    if not gdn_tma_fits(state, rings[0]):
        pytest.skip("the TMA form needs a Hopper GPU")
    plan = GdnFoldPlan(state, *rings, form="tma", conv=(window, conv_in))
    for nb, slots in _rounds("cuda", gen):
        buf = torch.randint(0, 2, (nb,), generator=gen).cuda()
        count = torch.randint(1, 7, (nb,), generator=gen).cuda()
        expect, expect_window = state.float(), window.clone()
        reference(expect, *(r.float() for r in rings), slots, buf, count)
        replay_fold_conv_reference(expect_window, conv_in, slots, buf, count)
        plan(slots, buf, count)
        err = rel_err(state, expect)
        assert err < 1e-2, f"gdn TMA fold, batch {nb}: relative error {err:.2e}"
        assert torch.equal(window, expect_window), f"gdn TMA fold's conv window, batch {nb}"
