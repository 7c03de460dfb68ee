"""Plain-torch replay folds: re-run the recurrence over a ring of accepted tokens into the checkpoint state.

These are the CPU path and the oracle for the Triton kernels. Math is float32; each state is read once and
written once, in its own dtype. Ring tensors are `[L, S, 2, Hist, ...]` (two ring buffers of `Hist` tokens per
slot); for request b the tokens `0 .. count[b]` of ring buffer `buf[b]` of slot `slots[b]` are folded in order.
"""

from __future__ import annotations

import torch


def _items(slots: torch.Tensor, buf: torch.Tensor, count: torch.Tensor) -> list[tuple[int, int, int]]:
    return list(zip(slots.tolist(), buf.tolist(), count.tolist(), strict=True))


def replay_fold_mamba2_reference(
    ssm: torch.Tensor,
    x: torch.Tensor,
    B: torch.Tensor,
    dt: torch.Tensor,
    dA: torch.Tensor,
    slots: torch.Tensor,
    buf: torch.Tensor,
    count: torch.Tensor,
) -> None:
    """Mamba2: per token `h[h, p, n] = exp(dA[h]) * h[h, p, n] + dt[h] * x[h, p] * B[h // (H // G), n]`.

    `ssm` `[L, S, H, P, N]`; `x` `[L, S, 2, Hist, H, P]`; `B` `[L, S, 2, Hist, G, N]`; `dt`, `dA` `[L, S, 2, Hist, H]`.
    """
    H, G = ssm.shape[2], B.shape[-2]
    for s, r, c in _items(slots, buf, count):
        h = ssm[:, s].float()
        for t in range(c):
            xt, dtt = x[:, s, r, t].float(), dt[:, s, r, t].float()
            bt = B[:, s, r, t].float().repeat_interleave(H // G, dim=1)  # [L, H, N]
            decay = torch.exp(dA[:, s, r, t].float())
            h = decay[:, :, None, None] * h + (dtt[:, :, None] * xt)[..., None] * bt[:, :, None, :]
        ssm[:, s] = h.to(ssm.dtype)


def _delta_fold(ssm, k, v, beta, slots, buf, count, gate) -> None:
    H, Hk = ssm.shape[2], k.shape[-2]
    for s, r, c in _items(slots, buf, count):
        S = ssm[:, s].float()  # [L, H, V, K]
        for t in range(c):
            kt = k[:, s, r, t].float().repeat_interleave(H // Hk, dim=1)  # [L, H, K]
            vt = v[:, s, r, t].float()  # [L, H, V]
            bt = beta[:, s, r, t].float()  # [L, H]
            S = gate(S, s, r, t)
            err = vt - torch.einsum("lhvk,lhk->lhv", S, kt)
            S = S + bt[:, :, None, None] * err[..., None] * kt[:, :, None, :]
        ssm[:, s] = S.to(ssm.dtype)


def replay_fold_gdn_reference(
    ssm: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    slots: torch.Tensor,
    buf: torch.Tensor,
    count: torch.Tensor,
) -> None:
    """GatedDeltaNet: per token `S = exp(g) * S; S = S + beta * outer(v - S @ k, k)` (k head = h // (H // Hk)).

    `ssm` `[L, S, H, V, K]`; `k` `[L, S, 2, Hist, Hk, K]`; `v` `[L, S, 2, Hist, H, V]`; `g`, `beta` `[L, S, 2, Hist, H]`.
    """

    def gate(S, s, r, t):
        return torch.exp(g[:, s, r, t].float())[:, :, None, None] * S

    _delta_fold(ssm, k, v, beta, slots, buf, count, gate)


def replay_fold_kda_reference(
    ssm: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    slots: torch.Tensor,
    buf: torch.Tensor,
    count: torch.Tensor,
) -> None:
    """KDA: per token `S = S * exp(g)[None, :]` (a gate per K channel), then the GatedDeltaNet delta update.

    `ssm` `[L, S, H, V, K]`; `k` `[L, S, 2, Hist, Hk, K]`; `v` `[L, S, 2, Hist, H, V]`; `g` `[L, S, 2, Hist, H, K]`;
    `beta` `[L, S, 2, Hist, H]`.
    """

    def gate(S, s, r, t):
        return S * torch.exp(g[:, s, r, t].float())[:, :, None, :]

    _delta_fold(ssm, k, v, beta, slots, buf, count, gate)


def replay_fold_conv_reference(
    conv: torch.Tensor,
    conv_in: torch.Tensor,
    slots: torch.Tensor,
    buf: torch.Tensor,
    count: torch.Tensor,
) -> None:
    """Conv window: `conv[:, s]` becomes the last `K-1` columns of `[conv[:, s] | conv_in tokens 0 .. count)`.

    `conv` `[L, S, C, K-1]` (time is the last axis); `conv_in` `[L, S, 2, Hist, C]`.
    """
    km1 = conv.shape[-1]
    for s, r, c in _items(slots, buf, count):
        seq = torch.cat([conv[:, s], conv_in[:, s, r, :c].transpose(1, 2).to(conv.dtype)], dim=-1)
        conv[:, s] = seq[..., seq.shape[-1] - km1 :]
