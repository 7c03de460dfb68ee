"""Kimi Delta Attention: conv `[(H*D + 2*Hk*Dk)/tp, K-1]`, state `[H/tp, D, Dk]` in the SSM dtype (float32 unless one
is asked for: `resolve_dtypes`)."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, ReplayInput, Role, StateShape, split

NAME = "kda"


def _dims(p, tp: int) -> tuple[int, int, int]:
    h = split(p.num_heads, tp, f"{NAME}.num_heads")
    hk = split(p.num_k_heads or p.num_heads, tp, f"{NAME}.num_k_heads")
    return h, hk, p.k_head_dim or p.head_dim


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Conv window over `[q|k|v]` and the delta-rule state, per slot."""
    h, hk, dk = _dims(p, tp)
    qk, v = hk * dk, h * p.head_dim
    conv = StateShape("conv", "conv", (2 * qk + v, p.conv_kernel - 1), ("C", "K"), dt.conv,
                      sections=(("q", qk), ("k", qk), ("v", v)))
    ssm = StateShape("ssm", "ssm", (h, p.head_dim, dk), ("H", "V", "K"), dt.ssm)
    return [conv, ssm]


def replay_inputs(spec, p, tp: int, dt: CacheDtypes) -> list[ReplayInput]:
    """Per-token ring entries, in fold order: normalized k, v, per-channel log gate g, beta (`replay_fold_kda`), then the raw
    conv input."""
    h, hk, dk = _dims(p, tp)
    return [
        ReplayInput("k", Role.STATE, (hk, dk), ("Hk", "K"), dt.conv),
        ReplayInput("v", Role.STATE, (h, p.head_dim), ("H", "V"), dt.conv),
        ReplayInput("g", Role.STATE, (h, dk), ("H", "K"), "float32"),
        ReplayInput("beta", Role.STATE, (h,), ("H",), "float32"),
        ReplayInput("conv_in", Role.CONV, (2 * hk * dk + h * p.head_dim,), ("C",), dt.conv),
    ]


def weights(spec, p) -> dict[str, int]:
    """q/k/v and beta, the gate and output-gate projections and out_proj (linear layers: vLLM
    kimi_gdn_linear_attn.py builds them with the quant config); conv, A and the norm. The gates are low-rank
    (f_a/f_b and g_a/g_b through head_dim, Kimi-Linear) or full-rank (f_proj to the key width, g_proj to the value
    width: transformers modeling_bailing_hybrid.py BailingHybridForgetGate, BailingHybridDeltaAttention)."""
    h = spec.hidden_size
    qk = (p.num_k_heads or p.num_heads) * (p.k_head_dim or p.head_dim)
    v = p.num_heads * p.head_dim
    gates = 2 * (h * p.head_dim + p.head_dim * v) if p.low_rank_gates else h * qk + h * v
    return {"proj": h * (2 * qk + v) + h * p.num_heads + gates + v * h,
            "other": (2 * qk + v) * p.conv_kernel + p.num_heads + qk}
