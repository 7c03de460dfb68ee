"""Lightning / linear attention (MiniMax-01): state `[H/tp, D, D]`, no conv."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, StateShape, split

NAME = "lightning"


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """The `k^T v` state per head."""
    heads = split(p.num_heads, tp, f"{NAME}.num_heads")
    return [StateShape("ssm", "ssm", (heads, p.head_dim, p.head_dim), ("H", "V", "K"), dt.ssm)]


def weights(spec, p) -> dict[str, int]:
    """qkv, output gate and out_proj; the norm."""
    inner = p.num_heads * p.head_dim
    h = spec.hidden_size
    return {"proj": h * 3 * inner + (h * inner if p.output_gate else 0) + inner * h, "other": inner}
