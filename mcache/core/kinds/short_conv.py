"""Short convolution (LFM2): conv state `[hidden/tp, K-1]`, no recurrent state."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, ReplayInput, Role, StateShape, split

NAME = "short_conv"


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """The conv window over the rank's share of the hidden channels."""
    channels = split(spec.hidden_size, tp, "hidden_size", "channels")
    return [StateShape("conv", "conv", (channels, p.conv_kernel - 1), ("C", "K"), dt.conv)]


def replay_inputs(spec, p, tp: int, dt: CacheDtypes) -> list[ReplayInput]:
    """The raw conv input per token: rolling the window back needs nothing else."""
    channels = split(spec.hidden_size, tp, "hidden_size", "channels")
    return [ReplayInput("conv_in", Role.CONV, (channels,), ("C",), dt.conv)]


def weights(spec, p) -> dict[str, int]:
    """in_proj `[B|C|x]` and out_proj; the depthwise conv."""
    h = spec.hidden_size
    return {"proj": h * 3 * h + h * h, "other": h * p.conv_kernel}
