"""Per-layer n-gram embeddings (Qwen3.8-Flash-Next's PLE): a dilated depthwise conv over every residual stream, whose
window `[streams * hidden, (conv_kernel - 1) * dilation]` is a slot's state, whole on every TP rank."""

from __future__ import annotations

from mcache.core.kinds.base import CacheDtypes, ReplayInput, Role, StateShape

NAME = "ple"
PRE_NORM = False  # no norm of the hidden size of its own: its norms are its own (`other`)


def _channels(spec, p) -> int:
    return p.streams * spec.hidden_size


def states(spec, p, tp: int, dt: CacheDtypes) -> list[StateShape]:
    """The conv window: the last `(conv_kernel - 1) * dilation` inputs of each channel (transformers
    modeling_qwen4_exp.py Qwen4ExpTextPLELayer `short_conv_state_len`; vLLM v0.34.0 models/qwen4_exp/nvidia/model.py
    `get_ple_mamba_state_shape_from_config`, tp_world_size 1)."""
    return [StateShape("conv", "conv", (_channels(spec, p), (p.conv_kernel - 1) * p.dilation), ("C", "K"), dt.conv)]


def replay_inputs(spec, p, tp: int, dt: CacheDtypes) -> list[ReplayInput]:
    """The conv input per token: the window rolls over the accepted ones, whatever its taps' spacing."""
    return [ReplayInput("conv_in", Role.CONV, (_channels(spec, p),), ("C",), dt.conv)]


def weights(spec, p) -> dict[str, int]:
    """The n-gram table, the key (to every stream) and value projections, the conv and three grouped norms."""
    channels = _channels(spec, p)
    return {"ngram_embedding": p.embedding_rows * p.embedding_dim,
            "proj": p.embed_dim * (channels + spec.hidden_size),
            "other": channels * p.conv_kernel + 3 * channels}
