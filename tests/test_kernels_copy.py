"""Copy-like kernels (reset, copy, commit, index commit, pack/unpack) against their torch references.

CPU: the Triton launchers run under the interpreter (conftest sets TRITON_INTERPRET). GPU: the same checks
on the device (`-m gpu`). Copies are compared bitwise; the slots a kernel must write are poisoned first,
and every other slot must stay bit-identical.
"""

from __future__ import annotations

import pytest
import torch
from kernel_cases import LAYOUTS, distinct_slots, make_pool, poison_slots

HAS_CUDA = torch.cuda.is_available()
DEVICES = [
    pytest.param("cpu", marks=pytest.mark.skipif(HAS_CUDA, reason="interpreter runs only without CUDA"), id="interp"),
    pytest.param("cuda", marks=pytest.mark.gpu, id="cuda"),
]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
# (BLOCK, warps): a tiny block gives several chunks and a ragged tail on tiny states; None is the default.
CONFIGS = {"block16": (16, 4), "default": None}


def _kernels():
    from mcache.kernels.commit_index.kernel import commit_index_triton
    from mcache.kernels.commit_intermediate.kernel import commit_intermediate_triton
    from mcache.kernels.copy_slots.kernel import copy_slots_triton
    from mcache.kernels.pack.kernel import pack_triton, unpack_triton
    from mcache.kernels.reset_slots.kernel import reset_slots_triton

    return {
        "reset": reset_slots_triton,
        "copy": copy_slots_triton,
        "commit": commit_intermediate_triton,
        "index": commit_index_triton,
        "pack": pack_triton,
        "unpack": unpack_triton,
    }


def _shapes(device: str):
    # Odd state sizes (not multiples of any block); the GPU run adds a realistic head-sized state.
    shapes = [(5, 9), (3, 33, 3)]
    return shapes + [(4, 64, 100)] if device == "cuda" else shapes


def _batches(device: str, S: int):
    return [1, 7, S] if device == "cuda" else [1, 7]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_reset_slots(device, layout, dtype, cfg):
    from mcache.kernels.reset_slots.reference import reset_slots_reference

    gen = torch.Generator().manual_seed(1)
    L, S = 3, 11
    for nb in _batches(device, S):
        # One call over three pools of different sizes and dtypes, as the manager resets ssm + conv together; the
        # last two share a launch (2-byte words) with different layer counts and, for slot_major, layouts.
        pools = [
            make_pool(nl, S, st, dt, lay, device, gen)
            for nl, st, dt, lay in (
                (L, _shapes(device)[-1], DTYPES[dtype], layout),
                (L, (13, 3), torch.bfloat16, layout),
                (L + 2, (7,), torch.float16, "layer_major"),
            )
        ]
        slots = distinct_slots(nb, S, gen, device)
        for p in pools:
            poison_slots(p, slots)
        expect = [p.clone() for p in pools]
        reset_slots_reference(expect, slots)
        _kernels()["reset"](pools, slots, config=CONFIGS[cfg])
        for i, (p, e) in enumerate(zip(pools, expect, strict=True)):
            assert torch.equal(p, e), f"pool {i}, batch {nb}: reset differs from reference"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("src_layout", LAYOUTS)
@pytest.mark.parametrize("dst_layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_copy_slots_between_pools(device, src_layout, dst_layout, dtype):
    from mcache.kernels.copy_slots.reference import copy_slots_reference

    gen = torch.Generator().manual_seed(2)
    L, S = 3, 12
    for state in _shapes(device):
        for cfg in CONFIGS.values():
            for nb in _batches(device, S):
                src = make_pool(L, S + 3, state, DTYPES[dtype], src_layout, device, gen)
                dst = make_pool(L, S, state, DTYPES[dtype], dst_layout, device, gen)
                ss = distinct_slots(nb, S + 3, gen, device)
                ds = distinct_slots(nb, S, gen, device, torch.int32)
                poison_slots(dst, ds)
                expect = dst.clone()
                copy_slots_reference(src, ss, expect, ds)
                src_before = src.clone()
                _kernels()["copy"](src, ss, dst, ds, config=cfg)
                assert torch.equal(dst, expect), f"state {state}, batch {nb}, config {cfg}"
                assert torch.equal(src, src_before), "source pool changed"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_copy_slots_relocate_within_pool(device, layout):
    from mcache.kernels.copy_slots.reference import copy_slots_reference

    gen = torch.Generator().manual_seed(3)
    L, S = 2, 10
    pool = make_pool(L, S, (6, 7), torch.float32, layout, device, gen)
    perm = torch.randperm(S, generator=gen)
    ss, ds = perm[:4].to(device), perm[4:8].to(device)
    poison_slots(pool, ds)
    expect = pool.clone()
    copy_slots_reference(expect, ss, expect, ds)
    _kernels()["copy"](pool, ss, pool, ds, config=(16, 4))
    assert torch.equal(pool, expect)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])
def test_commit_intermediate(device, layout, dtype):
    from mcache.kernels.commit_intermediate.reference import commit_intermediate_reference

    gen = torch.Generator().manual_seed(4)
    L, S, R, T = 3, 13, 9, 4
    for state in _shapes(device):
        for cfg in CONFIGS.values():
            for nb in _batches(device, R):
                pool = make_pool(L, S, state, DTYPES[dtype], layout, device, gen)
                # inter [L, R, T, *state]; slot-major-like layouts put the row dim first.
                inter = make_pool(L, R * T, state, DTYPES[dtype], layout, device, gen).unflatten(1, (R, T))
                slots = distinct_slots(nb, S, gen, device)
                rows = distinct_slots(nb, R, gen, device, torch.int32)
                accepted = torch.randint(0, T + 1, (nb,), generator=gen).to(device)
                if nb > 1:
                    accepted[0], accepted[1] = 0, T  # always one skipped request and one full acceptance
                poison_slots(pool, slots[accepted > 0])
                expect = pool.clone()
                commit_intermediate_reference(expect, inter, slots, rows, accepted)
                _kernels()["commit"](pool, inter, slots, rows, accepted, config=cfg)
                assert torch.equal(pool, expect), f"state {state}, batch {nb}, accepted {accepted.tolist()}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nb", [1, 7, 1500])
def test_commit_index(device, nb):
    from mcache.kernels.commit_index.reference import commit_index_reference

    gen = torch.Generator().manual_seed(5)
    S, nv = 2000, 5
    idx = torch.randint(0, nv, (S,), generator=gen, dtype=torch.int32).to(device)
    slots = distinct_slots(nb, S, gen, device)
    accepted = torch.randint(0, nv + 3, (nb,), generator=gen, dtype=torch.int32).to(device)
    expect = idx.clone()
    commit_index_reference(expect, slots, accepted, nv)
    _kernels()["index"](idx, slots, accepted, nv)
    assert torch.equal(idx, expect)


def _head_ranges(H: int, per_head: int, first: int, count: int) -> list[tuple[int, int]]:
    return [(first * per_head, count * per_head)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_pack_unpack(device, layout, dtype):
    from mcache.kernels.pack.reference import pack_reference, unpack_reference

    gen = torch.Generator().manual_seed(6)
    L, S = 3, 9
    H, P, N = (6, 5, 3) if device == "cpu" else (8, 64, 100)
    C, K1 = (7 + 2 * 3, 3)  # conv: sections [x(7) | B(3) | C(3)] over K-1 columns
    cases = [
        ((H, P, N), _head_ranges(H, P * N, 2, 3)),  # a TP receiver's head slice of an SSM state
        ((H, P, N), [(0, H * P * N)]),  # the whole state
        ((C, K1), [(2 * K1, 3 * K1), (7 * K1, 1 * K1), (10 * K1, 2 * K1)]),  # per-section slices of a conv state
        ((H, P, N), [(1, 2), (P * N + 3, 7), (H * P * N - 1, 1)]),  # odd offsets: narrow words
    ]
    for (state, ranges), padded in [(c, False) for c in cases] + [(cases[0], True)]:
        for cfg in CONFIGS.values():
            for nb in _batches(device, S):
                pool = make_pool(L, S, state, DTYPES[dtype], layout, device, gen)
                slots = distinct_slots(nb, S, gen, device)
                total = sum(n for _, n in ranges)
                # A padded buffer's layers are not side by side: with a layer-major pool, units go layer by layer.
                out = torch.full((nb, L, total + 5 * padded), float("nan"), dtype=DTYPES[dtype], device=device)[..., :total]
                expect = out.clone()
                pack_reference(pool, slots, ranges, expect)
                _kernels()["pack"](pool, slots, ranges, out, config=cfg)
                assert torch.equal(out, expect), f"pack: state {state}, ranges {ranges}, batch {nb}"
                # Unpack into other slots of a second pool whose target ranges are poisoned.
                dst = make_pool(L, S, state, DTYPES[dtype], layout, device, gen)
                dslots = distinct_slots(nb, S, gen, device)
                flat = dst.flatten(2)
                for s, n in ranges:
                    flat[:, dslots, s : s + n] = float("nan")
                expect_pool = dst.clone()
                unpack_reference(out, expect_pool, dslots, ranges)
                _kernels()["unpack"](out, dst, dslots, ranges, config=cfg)
                assert torch.equal(dst, expect_pool), f"unpack: state {state}, ranges {ranges}, batch {nb}"


@pytest.mark.parametrize("device", DEVICES)
def test_empty_batch_is_a_no_op(device):
    k = _kernels()
    pool = make_pool(2, 4, (3, 5), torch.float32, "layer_major", device)
    before = pool.clone()
    none = torch.empty(0, dtype=torch.int64, device=device)
    k["reset"]([pool], none)
    k["copy"](pool, none, pool, none)
    k["commit"](pool, pool.unsqueeze(2), none, none, none)
    k["pack"](pool, none, [(0, 4)], torch.empty(0, 2, 4, device=device))
    assert torch.equal(pool, before)


@pytest.mark.parametrize("device", DEVICES)
def test_launchers_reject_bad_arguments(device):
    from mcache.kernels._common import KernelArgError

    k = _kernels()
    pool = make_pool(2, 4, (3, 5), torch.float32, "layer_major", device)
    other = make_pool(2, 4, (3, 5), torch.bfloat16, "layer_major", device)
    ok = torch.tensor([1], device=device)
    bad_cases = {
        "slot out of range": lambda: k["reset"]([pool], torch.tensor([4], device=device)),
        "negative slot": lambda: k["copy"](pool, torch.tensor([-1], device=device), other.float(), ok),
        "dtype mismatch": lambda: k["copy"](pool, ok, other, ok),
        "float index": lambda: k["reset"]([pool], torch.tensor([1.0], device=device)),
        "state not contiguous": lambda: k["reset"]([pool.transpose(2, 3)], ok),
        "same slot read and written": lambda: k["copy"](pool, ok, pool, ok),
        "accepted past T": lambda: k["commit"](pool, pool.unsqueeze(2), ok, ok, torch.tensor([2], device=device)),
        "range outside state": lambda: k["pack"](pool, ok, [(10, 6)], torch.empty(1, 2, 6, device=device)),
        "wrong packed shape": lambda: k["pack"](pool, ok, [(0, 4)], torch.empty(1, 2, 5, device=device)),
    }
    for name, call in bad_cases.items():
        with pytest.raises(KernelArgError):
            call()
        assert name  # readable failure: pytest shows the dict key in the traceback locals


def test_public_ops_use_the_reference_on_cpu_without_importing_triton():
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "import mcache.kernels as K\n"
        "p = torch.randn(2, 3, 4)\n"
        "K.reset_slots([p], torch.tensor([1]))\n"
        "assert p[:, 1].abs().sum() == 0 and p[:, 0].abs().sum() > 0\n"
        "assert 'triton' not in sys.modules, 'triton imported on the CPU path'\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr


def test_cpu_path_refuses_mixed_dtypes_like_the_launchers():
    from mcache import kernels as K
    from mcache.kernels._common import KernelArgError

    f32, bf16 = torch.ones(2, 4, 3), torch.ones(2, 4, 3, dtype=torch.bfloat16)
    idx = torch.tensor([0, 1])
    with pytest.raises(KernelArgError, match="does not convert"):
        K.copy_slots(f32, idx, bf16, idx)
    with pytest.raises(KernelArgError, match="does not convert"):
        K.pack(f32, idx, [(0, 3)], torch.empty(2, 2, 3, dtype=torch.bfloat16))
    with pytest.raises(KernelArgError, match="does not convert"):
        K.commit_intermediate(f32, torch.ones(2, 4, 2, 3, dtype=torch.bfloat16), idx, idx, idx + 1)


@pytest.mark.parametrize("module,name", [
    ("commit_index.kernel", "commit_index"), ("commit_intermediate.kernel", "commit_intermediate"),
    ("copy_slots.kernel", "copy_slots"), ("pack.kernel", "pack"), ("pack.kernel", "unpack"),
    ("reset_slots.kernel", "reset_slots"), ("replay_fold.mamba2", "replay_fold_mamba2"),
    ("replay_fold.gdn", "replay_fold_gdn"), ("replay_fold.kda", "replay_fold_kda"), ("replay_fold.conv", "replay_fold_conv"),
])  # fmt: skip
def test_public_op_dispatches_cuda_tensors_to_its_triton_launcher(module, name, monkeypatch):
    """Each public op sends CUDA tensors to `<name>_triton` of its Triton module, with the caller's `check` (the CPU
    path is every other test's); the launcher is replaced here, so this runs without a GPU."""
    import importlib

    import mcache.kernels as ops

    module = importlib.import_module(f"mcache.kernels.{module}")
    calls = []
    monkeypatch.setattr(module, f"{name}_triton", lambda *args, check: calls.append((len(args), check)))
    cuda = type("CudaTensor", (), {"is_cuda": True})()
    op = getattr(ops, name)
    args = [[cuda], None] if name == "reset_slots" else [cuda] * op.__code__.co_argcount  # reset takes a list of pools
    op(*args, check=False)
    assert calls == [(len(args), False)]


def test_layer_inner_when_the_layers_of_a_request_lie_side_by_side():
    from mcache.kernels._common import layer_inner

    layer_major = torch.empty(3, 5, 7)  # [L, S, words]: layer stride 35
    slot_major = torch.empty(5, 3, 7).transpose(0, 1)  # layer stride 7
    packed = torch.empty(4, 3, 7)  # [B, L, words]: layer stride 7
    padded = torch.empty(4, 3, 9)[..., :7]  # layer stride 9
    assert not layer_inner((layer_major, 0))
    assert layer_inner((slot_major, 0))
    assert layer_inner((layer_major, 0), (packed, 1))
    assert not layer_inner((layer_major, 0), (padded, 1))
    assert not layer_inner((torch.empty(5, 1, 7).transpose(0, 1), 0))  # one layer: no order to choose


def test_copy_config_runs_small_programs_when_a_launch_is_mostly_its_last_wave(monkeypatch):
    from mcache.kernels import _common

    monkeypatch.setattr(_common, "sm_count", lambda device: None if device.type == "cpu" else 132)
    gpu, cpu = torch.device("cuda", 0), torch.device("cpu")
    state = (1 << 20) // 4  # a 1 MiB state in 4-byte words
    # Below 4 programs of 128 KiB per SM (4 * 132 * 128 KiB = 66 MiB): 32 KiB programs on 16 warps.
    assert _common.copy_config(state, 4, None, 36 * state, gpu) == (8192, 16)  # 36 MiB
    assert _common.copy_config(state, 4, None, 66 * state - 1, gpu) == (8192, 16)
    assert _common.copy_config(state, 4, None, 66 * state, gpu) == (32768, 16)
    assert _common.copy_config(state, 2, None, 36 * state, gpu) == (16384, 16)  # 2-byte words
    assert _common.copy_config(1000, 4, None, 1000, gpu) == (1024, 4)  # a 4 KiB state: one block of it
    assert _common.copy_config(state, 4, None, 36 * state, cpu) == (32768, 16)  # no SM count off the GPU
    assert _common.copy_config(state, 4, (64, 2), 36 * state, gpu) == (64, 2)
