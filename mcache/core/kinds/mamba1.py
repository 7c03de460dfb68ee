"""Mamba1: conv state `[I/tp, K-1]`, SSM state `[I/tp, N]`."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, StateShape, split
from mcache.core.numbers import cdiv

NAME = "mamba1"


def dt_rank_auto(hidden: int) -> int:
    """Mamba1's `dt_rank="auto"`: `math.ceil(hidden_size / 16)` (transformers' configuration_mamba.py), in integers."""
    return cdiv(hidden, 16)


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """Conv window and SSM state over the rank's share of d_inner."""
    inner = split(p.intermediate_size, tp, f"{NAME}.intermediate_size", "channels")
    return [
        StateShape("conv", "conv", (inner, p.conv_kernel - 1), ("I", "K"), dt.conv),
        StateShape("ssm", "ssm", (inner, p.state_size), ("I", "N"), dt.ssm),
    ]


def weights(spec, p) -> dict[str, int]:
    """in_proj, x_proj, dt_proj, out_proj; conv, dt bias, A, D."""
    i, n = p.intermediate_size, p.state_size
    dt_rank = p.dt_rank or dt_rank_auto(spec.hidden_size)
    proj = spec.hidden_size * 2 * i + i * (dt_rank + 2 * n) + dt_rank * i + i * spec.hidden_size
    return {"proj": proj, "other": i * (p.conv_kernel + 1) + i + i * n + i}
