"""GatedDeltaNet: conv state `[(2*Hk*Dk + Hv*Dv)/tp, K-1]`, state `[Hv/tp, Dv, Dk]` (V-major)."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, ReplayInput, Role, StateShape, split

NAME = "gdn"


def _heads(p, tp: int) -> tuple[int, int]:
    return split(p.num_k_heads, tp, f"{NAME}.num_k_heads"), split(p.num_v_heads, tp, f"{NAME}.num_v_heads")


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Conv window over `[q|k|v]` and the delta-rule state, per slot."""
    hk, hv = _heads(p, tp)
    qk, v = hk * p.k_head_dim, hv * p.v_head_dim
    conv = StateShape("conv", "conv", (2 * qk + v, p.conv_kernel - 1), ("C", "K"), dt.conv,
                      sections=(("q", qk), ("k", qk), ("v", v)))
    ssm = StateShape("ssm", "ssm", (hv, p.v_head_dim, p.k_head_dim), ("H", "V", "K"), dt.ssm)
    return [conv, ssm]


def replay_inputs(spec, p, tp: int, dt: CacheDtypes) -> list[ReplayInput]:
    """Per-token ring entries, in fold order: normalized k, v, log gate g, beta (`replay_fold_gdn`), then the raw conv input."""
    hk, hv = _heads(p, tp)
    return [
        ReplayInput("k", Role.STATE, (hk, p.k_head_dim), ("Hk", "K"), dt.conv),
        ReplayInput("v", Role.STATE, (hv, p.v_head_dim), ("H", "V"), dt.conv),
        ReplayInput("g", Role.STATE, (hv,), ("H",), "float32"),
        ReplayInput("beta", Role.STATE, (hv,), ("H",), "float32"),
        ReplayInput("conv_in", Role.CONV, (2 * hk * p.k_head_dim + hv * p.v_head_dim,), ("C",), dt.conv),
    ]


def weights(spec, p) -> dict[str, int]:
    """in_proj `[q|k|v|z]` and out_proj; the small in_proj `[b|a]` (`gate_proj`: a linear layer too, vLLM
    qwen_gdn_linear_attn.py, but FP8-block checkpoints leave it unquantized); conv, A/dt_bias and the norm."""
    qk, v = p.num_k_heads * p.k_head_dim, p.num_v_heads * p.v_head_dim
    h = spec.hidden_size
    return {"proj": h * (2 * qk + 2 * v) + v * h, "gate_proj": h * 2 * p.num_v_heads,
            "other": (2 * qk + v) * p.conv_kernel + 2 * p.num_v_heads + p.v_head_dim}
