"""Mamba2: conv state `[(H*P + 2*G'*N)/tp, K-1]`, SSM state `[H/tp, P, N]`."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, ReplayInput, Role, StateShape, replicated_split, split

NAME = "mamba2"


def groups_per_rank(p, tp: int) -> int:
    """Groups each rank holds: `G/tp`, or one whole replicated group when `tp > G` (0 when B and C are not in
    the conv window)."""
    return replicated_split(p.n_groups, tp, f"{NAME}.n_groups") if p.n_groups else 0


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Conv window over `[x|B|C]` (`[x]` without groups) and the SSM state, per slot."""
    heads = split(p.num_heads, tp, f"{NAME}.num_heads")
    g = groups_per_rank(p, tp)
    x, bc = heads * p.head_dim, g * p.state_size
    sections = (("x", x), ("B", bc), ("C", bc)) if bc else (("x", x),)
    conv = StateShape("conv", "conv", (x + 2 * bc, p.conv_kernel - 1), ("C", "K"), dt.conv, sections=sections)
    ssm = StateShape("ssm", "ssm", (heads, p.head_dim, p.state_size), ("H", "P", "N"), dt.ssm)
    return [conv, ssm]


def replay_inputs(spec, p, tp: int, dt: CacheDtypes) -> list[ReplayInput]:
    """Per-token inputs the replay ring keeps, in fold order: x, B, dt, dA (`replay_fold_mamba2`), then the raw conv input."""
    heads = split(p.num_heads, tp, f"{NAME}.num_heads")
    g = groups_per_rank(p, tp)
    conv_dim = heads * p.head_dim + 2 * g * p.state_size
    return [
        ReplayInput("x", Role.STATE, (heads, p.head_dim), ("H", "P"), dt.conv),
        ReplayInput("B", Role.STATE, (max(g, 1), p.state_size), ("G", "N"), dt.conv),  # no groups: one B for all heads
        ReplayInput("dt", Role.STATE, (heads,), ("H",), "float32"),
        ReplayInput("dA", Role.STATE, (heads,), ("H",), "float32"),
        ReplayInput("conv_in", Role.CONV, (conv_dim,), ("C",), dt.conv),
    ]


def weights(spec, p) -> dict[str, int]:
    """in_proj `[z|x|B|C|dt]`, conv, A/D/dt_bias, gated norm, out_proj; without groups (PLaMo-2, vLLM
    plamo2.py), in_proj `[z|x]`, then `bcdt_proj` from x to dt, B and C, normed, and `dt_proj`."""
    d_inner = p.num_heads * p.head_dim
    if not p.n_groups:
        dt_dim = max(64, spec.hidden_size // 16)
        proj = spec.hidden_size * 2 * d_inner + d_inner * (dt_dim + 2 * p.state_size) + dt_dim * p.num_heads
        other = d_inner * p.conv_kernel + (dt_dim + 2 * p.state_size) + 3 * p.num_heads
        return {"proj": proj + d_inner * spec.hidden_size, "other": other}
    conv_dim = d_inner + 2 * p.n_groups * p.state_size
    in_proj = spec.hidden_size * (d_inner + conv_dim + p.num_heads)
    return {"proj": in_proj + d_inner * spec.hidden_size,
            "other": conv_dim * (p.conv_kernel + 1) + 3 * p.num_heads + d_inner}
