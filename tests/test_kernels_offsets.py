"""Offsets past 2**31 elements, without allocating the memory.

Each tensor here is a strided view into a sparse file mapped shared (see `kernel_cases.SparseArena`): a layer,
slot or token stride just above 2**30 elements, so index 2 along that dim lies past 2**31 elements (8 GiB of
float32) while the stride itself still fits in int32 and reaches the kernel as an int32 argument. A kernel
that multiplied in int32 would wrap; the view starts 2**31 elements into the mapping, so the wrapped address
is still mapped and the test fails on the values instead of crashing. Only a few pages are ever touched.
"""

from __future__ import annotations

import pytest
import torch
from kernel_cases import SparseArena, rel_err

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter test (CPU views of a sparse file)")

BIG = 2**30 + 64  # elements; index 2 along a dim with this stride is past 2**31


@pytest.fixture
def arena():
    made = []

    def make(size, stride, dtype=torch.float32):
        extent = sum((n - 1) * s for n, s in zip(size, stride, strict=True)) + 1
        a = SparseArena(extent, dtype)
        made.append(a)
        v = a.view(size, stride)
        v.copy_(torch.randn(size).to(dtype))
        return v

    yield make
    for a in made:
        a.close()


def _contig_strides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def _big_layer(make, L, S, state, dtype=torch.float32):
    """`[L, S, *state]` with a layer stride of BIG elements (layer 2 past 2**31)."""
    inner = _contig_strides((S, *state))
    return make((L, S, *state), (BIG, *inner), dtype)


def _big_slot(make, L, S, state, dtype=torch.float32):
    """`[L, S, *state]` slot-major with a slot stride of BIG elements (slot 2 past 2**31)."""
    st = _contig_strides(state)
    n = 1
    for s in state:
        n *= s
    return make((L, S, *state), (n, BIG, *st), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_reset_and_copy_past_2g(arena, dtype):
    from mcache.kernels.copy_slots.kernel import copy_slots_triton
    from mcache.kernels.reset_slots.kernel import reset_slots_triton

    big_l = _big_layer(arena, 3, 4, (5, 9), dtype)
    big_s = _big_slot(arena, 2, 3, (7,), dtype)
    slots = torch.tensor([2, 0], dtype=torch.int32)
    expect_l, expect_s = big_l.clone(), big_s.clone()
    expect_l[:, slots.long()] = 0
    expect_s[:, slots.long()] = 0
    reset_slots_triton([big_l, big_s], slots, config=(16, 4))
    assert torch.equal(big_l, expect_l) and torch.equal(big_s, expect_s)

    src = torch.randn(3, 5, 5, 9).to(dtype)
    copy_slots_triton(src, torch.tensor([4, 1]), big_l, torch.tensor([2, 3]))  # write past 2**31
    assert torch.equal(big_l[:, 2], src[:, 4]) and torch.equal(big_l[:, 3], src[:, 1])
    back = torch.full((2, 3, 7), float("nan")).to(dtype)
    copy_slots_triton(big_s, torch.tensor([2], dtype=torch.int32), back, torch.tensor([1]))  # read past 2**31
    assert torch.equal(back[:, 1], big_s[:, 2])


def test_commit_and_pack_past_2g(arena):
    from mcache.kernels.commit_intermediate.kernel import commit_intermediate_triton
    from mcache.kernels.pack.kernel import pack_triton, unpack_triton

    state = (3, 11)
    inter = arena((2, 2, 3, *state), (3 * 33, 33, BIG, 11, 1))  # token stride BIG: accepted 3 -> past 2**31
    pool = torch.full((2, 4, *state), float("nan"))
    commit_intermediate_triton(pool, inter, torch.tensor([1]), torch.tensor([1]), torch.tensor([3]))
    assert torch.equal(pool[:, 1], inter[:, 1, 2])

    big = _big_layer(arena, 3, 2, state)
    ranges = [(4, 9), (20, 13)]
    out = torch.full((1, 3, 22), float("nan"))
    pack_triton(big, torch.tensor([1]), ranges, out)
    flat = big[:, 1].flatten(1)
    assert torch.equal(out[0], torch.cat([flat[:, 4:13], flat[:, 20:33]], dim=1))
    unpack_triton(out.flip(1).contiguous(), big, torch.tensor([0]), ranges)
    assert torch.equal(big[2, 0].flatten()[4:13], out[0, 0, :9])


def test_replay_folds_past_2g(arena):
    from mcache.kernels.replay_fold import reference
    from mcache.kernels.replay_fold.conv import replay_fold_conv_triton
    from mcache.kernels.replay_fold.gdn import replay_fold_gdn_triton
    from mcache.kernels.replay_fold.kda import replay_fold_kda_triton
    from mcache.kernels.replay_fold.mamba2 import replay_fold_mamba2_triton

    L, S, H, P, N, hist = 3, 2, 2, 16, 16, 4
    slots, buf, count = torch.tensor([1]), torch.tensor([1]), torch.tensor([3])

    ssm = _big_layer(arena, L, S, (H, P, N))
    x, B = torch.randn(L, S, 2, hist, H, P), torch.randn(L, S, 2, hist, 1, N)
    dt = torch.rand(L, S, 2, hist, H)
    dA = -dt
    expect = ssm.clone()
    reference.replay_fold_mamba2_reference(expect, x, B, dt, dA, slots, buf, count)
    replay_fold_mamba2_triton(ssm, x, B, dt, dA, slots, buf, count)
    assert rel_err(ssm, expect) < 2e-5

    ssm = _big_layer(arena, L, S, (H, P, N))
    k = torch.nn.functional.normalize(torch.randn(L, S, 2, hist, 1, N), dim=-1)
    v, beta = torch.randn(L, S, 2, hist, H, P), torch.rand(L, S, 2, hist, H)
    gdn_g, kda_g = -torch.rand(L, S, 2, hist, H), -torch.rand(L, S, 2, hist, H, N)
    folds = {"gdn": (reference.replay_fold_gdn_reference, replay_fold_gdn_triton),
             "kda": (reference.replay_fold_kda_reference, replay_fold_kda_triton)}
    for kind, g, opts in (("gdn", gdn_g, {"form": "pointer"}), ("gdn", gdn_g, {"form": "tma"}), ("kda", kda_g, {})):
        expect = ssm.clone()
        ref_fn, triton_fn = folds[kind]
        ref_fn(expect, k, v, g, beta, slots, buf, count)
        triton_fn(ssm, k, v, g, beta, slots, buf, count, **opts)
        assert rel_err(ssm, expect) < 2e-5, (kind, opts)

    conv = _big_layer(arena, L, S, (19, 3))
    conv_in = torch.randn(L, S, 2, hist, 19)
    expect = conv.clone()
    reference.replay_fold_conv_reference(expect, conv_in, slots, buf, count)
    replay_fold_conv_triton(conv, conv_in, slots, buf, count)
    assert torch.equal(conv, expect)
