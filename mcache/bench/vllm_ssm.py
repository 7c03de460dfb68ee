"""vLLM's Mamba2 decode kernel as a baseline of the Mamba2 fold: `selective_state_update` of
`vllm/model_executor/layers/mamba/ops/mamba_ssm.py`, imported lazily, only where that module imports (vLLM itself,
or the kernel's file beside stand-ins for the vLLM modules it imports: `scripts/vllm_ssm_standin.py`).

One call per layer, as vLLM makes it for a batch of requests' tokens: varlen (`cu_seqlens`, each request's tokens in
order), each request's slot in `state_batch_indices`; the kernel reads the state from the pool, steps the tokens on
the CUDA cores (`h = exp(A dt) h + dt B x`, and the output `C h` of each), and writes the final state back in place.
The tokens are the fold's own, taken from the rings beforehand in the token-major layout the kernel reads (not timed:
an engine has them so), with the per-head scalars as vLLM passes them for Mamba2 (A, dt, dt_bias and D broadcast over
the head's rows: its tied-head path). The kernel takes a per-head A, not the ring's per-token dA: its row folds the
ring's x, B and dt with `dA = A_h dt` (A_h drawn per head), and is checked against the torch reference given that dA.
`null_block_id` (`pad_slot_id` before vLLM 0.15) is -1: every slot of the pool is a request's.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable

import torch

MODULE = "vllm.model_executor.layers.mamba.ops.mamba_ssm"


def available() -> bool:
    """Whether vLLM's kernel module can be imported (vLLM or its stand-in installed); imports it to know."""
    try:
        if importlib.util.find_spec("vllm") is None:
            return False
        importlib.import_module(MODULE)
    except Exception:  # noqa: BLE001 - vLLM installed without what it imports: no baseline, as without vLLM
        return False
    return True


def vllm_cases(kind: str, ssm: torch.Tensor, rings: list[torch.Tensor], slots: torch.Tensor, buf: torch.Tensor,
               tokens: int, gen: torch.Generator, reference: Callable) -> list[tuple[str, Callable, Callable, Callable]]:
    """`(impl, run, final, reference)` of the vLLM row for folding `tokens` of ring `buf` of `slots` into `ssm`
    (`rings`: x, B, dt, dA): `final()` runs once and returns the folded states `[L, B, H, P, N]` without touching the
    pool, `reference()` folds the same job into the pool with the torch reference (`reference(dA)` of the fold's, given
    the dA the kernel derives). Empty where vLLM's kernel is missing or the kind is not Mamba2."""
    if kind != "mamba2" or not available():
        return []
    fn = importlib.import_module(MODULE).selective_state_update
    null = "null_block_id" if "null_block_id" in inspect.signature(fn).parameters else "pad_slot_id"
    x, B, dt, dA = rings
    L, H, P = ssm.shape[0], ssm.shape[2], ssm.shape[3]
    nb, G, N = slots.shape[0], B.shape[-2], B.shape[-1]
    dev = ssm.device
    A = -(torch.rand(H, generator=gen) * 4.9 + 0.1).to(dev)  # a Mamba2 layer's A = -exp(A_log), per head
    ring_dA = dt.float() * A  # [L, S, 2, T, H]: the decay the kernel derives from A and dt
    # Token-major per layer, [L, B * T, heads, dim] (gathered once, not timed); the per-head scalars broadcast over P.
    xt = x[:, slots, buf, :tokens].reshape(L, nb * tokens, H, P)
    Bt = B[:, slots, buf, :tokens].reshape(L, nb * tokens, G, N)
    Ct = (torch.rand(Bt.shape, generator=gen) * 2 - 1).to(Bt)
    dtt = dt[:, slots, buf, :tokens].reshape(L, nb * tokens, H, 1).expand(-1, -1, -1, P)
    A3 = A.float().view(H, 1, 1).expand(H, P, N)
    zeros = torch.zeros(H, 1, device=dev).expand(H, P)  # dt_bias and D: none in the fold
    out = torch.empty_like(xt)
    cu = torch.arange(0, nb + 1, device=dev, dtype=torch.int32) * tokens
    rows = slots.view(nb, 1)

    def layer(i: int, state: torch.Tensor, at: torch.Tensor) -> None:
        fn(state, xt[i], dtt[i], A3, Bt[i], Ct[i], D=zeros, dt_bias=zeros, dt_softplus=False,
           state_batch_indices=at, out=out[i], cu_seqlens=cu, **{null: -1})

    def run() -> None:
        for i in range(L):
            layer(i, ssm[i], rows)

    def final() -> torch.Tensor:
        states = ssm[:, slots].clone()
        own = torch.arange(nb, device=dev).view(nb, 1)
        for i in range(L):
            layer(i, states[i], own)
        return states

    def ref() -> None:
        reference(ring_dA)

    return [("vllm", run, final, ref)]
