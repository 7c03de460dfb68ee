"""Replay folds (Mamba2, GatedDeltaNet, KDA, conv window) against their torch references.

Arithmetic is checked in float32 in the interpreter (its bf16 arithmetic is not faithful) and in
bf16/fp16/fp32 on the GPU; the relative error is printed on failure. States of requests with `count == 0`
and of every other slot must stay bit-identical; the conv fold is a pure copy and is compared bitwise.
"""

from __future__ import annotations

import pytest
import torch
from kernel_cases import LAYOUTS, distinct_slots, make_pool, rel_err

HAS_CUDA = torch.cuda.is_available()
INTERP = pytest.param("cpu", marks=pytest.mark.skipif(HAS_CUDA, reason="interpreter runs only without CUDA"))
CASES = [
    pytest.param("cpu", torch.float32, id="interp-f32", marks=INTERP.marks),
    pytest.param("cuda", torch.float32, id="cuda-f32", marks=pytest.mark.gpu),
    pytest.param("cuda", torch.bfloat16, id="cuda-bf16", marks=pytest.mark.gpu),
    pytest.param("cuda", torch.float16, id="cuda-f16", marks=pytest.mark.gpu),
]
# Folds also with a float32 state and bf16 rings (the engines' float32 SSM state beside bf16 activations): the 16-bit
# tensor-core products in three pieces, held to the float32 tolerance.
FOLD_CASES = [*CASES, pytest.param("cuda", (torch.float32, torch.bfloat16), id="cuda-f32-bf16rings", marks=pytest.mark.gpu)]
TOL = {torch.float32: 2e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def _state_and_ring(dtype):
    """`(state dtype, ring dtype)` of a fold case."""
    return dtype if isinstance(dtype, tuple) else (dtype, dtype)


def _ring(L, S, hist, tail, layout, device, gen, fn=torch.randn):
    """A ring tensor `[L, S, 2, hist, *tail]` in either layout (float32 values; callers cast)."""
    if layout == "layer_major":
        return fn(L, S, 2, hist, *tail, generator=gen).to(device)
    return fn(S, L, 2, hist, *tail, generator=gen).to(device).transpose(0, 1)


def _requests(nb, S, hist, gen, device):
    slots = distinct_slots(nb, S, gen, device)
    buf = torch.randint(0, 2, (nb,), generator=gen).to(device)
    count = torch.randint(1, hist + 1, (nb,), generator=gen)
    if nb > 2:
        count[0], count[1] = 0, hist  # a request with nothing to fold and a full ring
    elif nb == 1:
        count[0] = hist
    return slots, buf, count.to(device)


def _check(name, out, expect, before, slots, count, dtype):
    active = slots[count > 0]
    err = rel_err(out[:, active], expect[:, active])
    assert err < TOL[dtype], f"{name}: relative error {err:.3e} > {TOL[dtype]:.0e}"
    mask = torch.ones(out.shape[1], dtype=torch.bool, device=out.device)
    mask[active] = False
    assert torch.equal(out[:, mask], before[:, mask]), f"{name}: a slot that must not change changed"


def _dims(device):
    # Interpreter: tiny, odd sizes (nothing a multiple of a block); GPU: head-sized states.
    if device == "cpu":
        return dict(L=2, S=9, H=4, P=20, N=24, G=2, V=12, K=20, Hk=2, C=37, batches=(1, 5), hists=(5, 17))
    return dict(L=3, S=40, H=8, P=64, N=128, G=2, V=128, K=128, Hk=4, C=1000, batches=(1, 7, 40), hists=(16, 6))


@pytest.mark.parametrize("device,dtype", FOLD_CASES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("even", [False, True], ids=["odd-head", "whole-blocks"])
@pytest.mark.parametrize("form,config", [("dot", None), ("dot", (16, 1, 4, 2)), ("fma", None), ("fma", (8, 1, 8, 2))],
                         ids=["dot", "dot-blocks", "fma", "fma-blocks"])  # -blocks: several row blocks a program (odd: a masked last one)
def test_replay_fold_mamba2(device, dtype, layout, even, form, config):
    from mcache.kernels.replay_fold.mamba2 import replay_fold_mamba2_triton
    from mcache.kernels.replay_fold.reference import replay_fold_mamba2_reference

    if config is not None and layout != "layer_major":
        pytest.skip("several row blocks a program: the pool layout is covered by the default config")
    dtype, ring_dtype = _state_and_ring(dtype)
    d = _dims(device)
    if even:  # heads that split into whole blocks: the kernel's unmasked path
        d = {**d, "P": 32, "N": 16} if device == "cpu" else d
    elif device != "cpu":
        d = {**d, "P": 40, "N": 96}
    L, S, H, P, N, G = d["L"], d["S"], d["H"], d["P"], d["N"], d["G"]
    gen = torch.Generator().manual_seed(11)
    for hist in d["hists"]:
        for nb in d["batches"]:
            ssm = make_pool(L, S, (H, P, N), dtype, layout, device, gen)
            x = _ring(L, S, hist, (H, P), layout, device, gen).to(ring_dtype)
            B = _ring(L, S, hist, (G, N), layout, device, gen).to(ring_dtype)
            dt = (_ring(L, S, hist, (H,), layout, device, gen, torch.rand) * 0.5).to(ring_dtype)
            dA = -dt.float() * _ring(L, S, hist, (H,), layout, device, gen, torch.rand).add(0.5) * 2
            slots, buf, count = _requests(nb, S, hist, gen, device)
            before = ssm.clone()
            expect = ssm.clone()
            replay_fold_mamba2_reference(expect, x, B, dt, dA, slots, buf, count)
            replay_fold_mamba2_triton(ssm, x, B, dt, dA, slots, buf, count, form=form, config=config)
            _check(f"mamba2 {form} hist={hist} batch={nb}", ssm, expect, before, slots, count, dtype)


def _delta_inputs(d, hist, layout, device, gen, dtype, per_channel):
    L, S, H, V, K, Hk = d["L"], d["S"], d["H"], d["V"], d["K"], d["Hk"]
    k = torch.nn.functional.normalize(_ring(L, S, hist, (Hk, K), layout, device, gen), dim=-1).to(dtype)
    v = _ring(L, S, hist, (H, V), layout, device, gen).to(dtype)
    gshape = (H, K) if per_channel else (H,)
    g = -_ring(L, S, hist, gshape, layout, device, gen, torch.rand)  # log gates in (-1, 0]
    beta = _ring(L, S, hist, (H,), layout, device, gen, torch.rand).to(dtype)
    return k, v, g, beta


@pytest.mark.parametrize("device,dtype", FOLD_CASES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind,form", [("gdn", "pointer"), ("gdn", "tma"), ("gdn", "step"), ("kda", None)],
                         ids=["gdn", "gdn-tma", "gdn-step", "kda"])
@pytest.mark.parametrize("small", [False, True], ids=["default", "small-blocks"])
def test_replay_fold_delta(device, dtype, layout, kind, form, small):
    """GatedDeltaNet in its three forms (chunked by pointers, chunked persistent with TMA, stepping) and KDA; the
    rings of 5-6 tokens are stepped in the static loop, those of 16-17 in the pipelined one."""
    import functools

    from mcache.kernels.replay_fold import reference
    from mcache.kernels.replay_fold.gdn import replay_fold_gdn_triton
    from mcache.kernels.replay_fold.kda import replay_fold_kda_triton

    config = ((16, 2) if kind == "gdn" else (8, 2)) if small else None  # GatedDeltaNet products need 16 rows
    triton_fn = replay_fold_gdn_triton if kind == "gdn" else replay_fold_kda_triton
    if form:
        triton_fn = functools.partial(triton_fn, form=form)
    ref_fn = getattr(reference, f"replay_fold_{kind}_reference")
    dtype, ring_dtype = _state_and_ring(dtype)
    d = _dims(device)
    if small and kind == "gdn" and device == "cpu":
        d = {**d, "V": 32, "K": 16}  # whole 16-row blocks: the GatedDeltaNet kernel's unmasked path
    gen = torch.Generator().manual_seed(12)
    for hist in d["hists"]:
        for nb in d["batches"]:
            ssm = make_pool(d["L"], d["S"], (d["H"], d["V"], d["K"]), dtype, layout, device, gen)
            k, v, g, beta = _delta_inputs(d, hist, layout, device, gen, ring_dtype, kind == "kda")
            slots, buf, count = _requests(nb, d["S"], hist, gen, device)
            for s, r, c in zip(slots.tolist(), buf.tolist(), count.tolist(), strict=True):
                for ring in (k, v, g, beta):  # tokens past the count must not be read into the state
                    ring[:, s, r, c:] = float("nan")
            before = ssm.clone()
            expect = ssm.clone()
            ref_fn(expect, k, v, g, beta, slots, buf, count)
            triton_fn(ssm, k, v, g, beta, slots, buf, count, config=config)
            _check(f"{kind} {form} hist={hist} batch={nb} config={config}", ssm, expect, before, slots, count, dtype)


def test_gdn_default_form_steps_float32_states_from_short_rings():
    """The stepping form for float32 states and rings of up to GDN_STEP_MAX tokens; the chunked form otherwise."""
    from mcache.kernels.replay_fold.gdn import GDN_STEP_MAX, gdn_form

    chunked = "tma" if HAS_CUDA else "pointer"  # the TMA form needs a 16-bit state on a Hopper GPU
    dev = "cuda" if HAS_CUDA else "cpu"
    for hist, dtype, want in [(1, torch.float32, "step"), (GDN_STEP_MAX, torch.float32, "step"),
                              (GDN_STEP_MAX + 1, torch.float32, "pointer"), (4, torch.bfloat16, chunked)]:
        ssm = torch.ones(1, 2, 2, 16, 16, dtype=dtype, device=dev)
        k = torch.ones(1, 2, 2, hist, 1, 16, dtype=dtype, device=dev)
        if want == chunked and HAS_CUDA and torch.cuda.get_device_capability()[0] < 9:
            want = "pointer"
        assert gdn_form(ssm, k) == want, (hist, dtype)


@pytest.mark.parametrize("device", [pytest.param("cpu", marks=INTERP.marks), pytest.param("cuda", marks=pytest.mark.gpu)])
def test_gdn_fold_rejects_a_bad_form(device):
    """An unknown form, and the TMA form on a pool whose strides TMA cannot take (10 float32 = 40 bytes)."""
    from mcache.kernels._common import KernelArgError
    from mcache.kernels.replay_fold.gdn import replay_fold_gdn_triton

    d = {**_dims(device), "K": 10}
    gen = torch.Generator().manual_seed(15)
    ssm = make_pool(d["L"], d["S"], (d["H"], d["V"], d["K"]), torch.float32, "layer_major", device, gen)
    k, v, g, beta = _delta_inputs(d, 4, "layer_major", device, gen, torch.float32, False)
    slots, buf, count = _requests(1, d["S"], 4, gen, device)
    with pytest.raises(KernelArgError, match="form: expected"):
        replay_fold_gdn_triton(ssm, k, v, g, beta, slots, buf, count, form="fast")
    with pytest.raises(KernelArgError, match="16-byte aligned"):
        replay_fold_gdn_triton(ssm, k, v, g, beta, slots, buf, count, form="tma")


@pytest.mark.parametrize("device,dtype", CASES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("config", [None, (16, 2)], ids=["default", "small-blocks"])  # 16 channels: several blocks, a ragged tail
def test_replay_fold_conv(device, dtype, layout, config):
    from mcache.kernels.replay_fold.conv import replay_fold_conv_triton
    from mcache.kernels.replay_fold.reference import replay_fold_conv_reference

    d = _dims(device)
    L, S, C = d["L"], d["S"], d["C"]
    gen = torch.Generator().manual_seed(13)
    for km1 in (3, 1, 5):
        for hist in d["hists"]:
            for nb in d["batches"]:
                conv = make_pool(L, S, (C, km1), dtype, layout, device, gen)
                conv_in = _ring(L, S, hist, (C,), layout, device, gen).to(dtype)
                slots, buf, count = _requests(nb, S, hist, gen, device)
                if nb > 3:
                    count[2] = 1  # fewer new tokens than the window: old columns shift left
                expect = conv.clone()
                replay_fold_conv_reference(expect, conv_in, slots, buf, count)
                replay_fold_conv_triton(conv, conv_in, slots, buf, count, config=config)
                assert torch.equal(conv, expect), f"conv K-1={km1} hist={hist} batch={nb} count={count.tolist()}"


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=pytest.mark.gpu)])
def test_public_ops_dispatch_to_triton_on_cuda(device):
    """The manager calls the public ops; on CUDA they must take the Triton path and agree with the reference."""
    import mcache.kernels as K
    from mcache.kernels.replay_fold.reference import replay_fold_gdn_reference

    d = _dims(device)
    gen = torch.Generator().manual_seed(14)
    ssm = make_pool(d["L"], d["S"], (d["H"], d["V"], d["K"]), torch.bfloat16, "slot_major", device, gen)
    k, v, g, beta = _delta_inputs(d, 16, "layer_major", device, gen, torch.bfloat16, False)
    slots, buf, count = _requests(7, d["S"], 16, gen, device)
    expect = ssm.clone()
    replay_fold_gdn_reference(expect, k, v, g, beta, slots, buf, count)
    K.replay_fold_gdn(ssm, k, v, g, beta, slots.cpu(), buf, count)
    assert rel_err(ssm, expect) < 1e-2
