"""`replay_fold_*`: fold a ring of accepted tokens into the checkpoint state (Mamba2, GDN, KDA, conv window)."""

from __future__ import annotations

from functools import cache
from importlib import import_module

import torch

from .reference import (
    replay_fold_conv_reference,
    replay_fold_gdn_reference,
    replay_fold_kda_reference,
    replay_fold_mamba2_reference,
)

__all__ = [
    "fold_plan",
    "replay_fold_conv",
    "replay_fold_conv_reference",
    "replay_fold_gdn",
    "replay_fold_gdn_reference",
    "replay_fold_kda",
    "replay_fold_kda_reference",
    "replay_fold_mamba2",
    "replay_fold_mamba2_reference",
]


def replay_fold_mamba2(ssm, x, B, dt, dA, slots, buf, count, *, check: bool = True) -> None:
    """Mamba2 fold; shapes in `reference.replay_fold_mamba2_reference`."""
    if ssm.is_cuda:
        _triton("mamba2").replay_fold_mamba2_triton(ssm, x, B, dt, dA, slots, buf, count, check=check)
    else:
        replay_fold_mamba2_reference(ssm, x, B, dt, dA, slots, buf, count)


def replay_fold_gdn(ssm, k, v, g, beta, slots, buf, count, *, check: bool = True) -> None:
    """GatedDeltaNet fold; shapes in `reference.replay_fold_gdn_reference`."""
    if ssm.is_cuda:
        _triton("gdn").replay_fold_gdn_triton(ssm, k, v, g, beta, slots, buf, count, check=check)
    else:
        replay_fold_gdn_reference(ssm, k, v, g, beta, slots, buf, count)


def replay_fold_kda(ssm, k, v, g, beta, slots, buf, count, *, check: bool = True) -> None:
    """KDA fold (per-channel gate); shapes in `reference.replay_fold_kda_reference`."""
    if ssm.is_cuda:
        _triton("kda").replay_fold_kda_triton(ssm, k, v, g, beta, slots, buf, count, check=check)
    else:
        replay_fold_kda_reference(ssm, k, v, g, beta, slots, buf, count)


def replay_fold_conv(conv: torch.Tensor, conv_in: torch.Tensor, slots, buf, count, *, check: bool = True) -> None:
    """Conv-window fold; shapes in `reference.replay_fold_conv_reference`."""
    if conv.is_cuda:
        _triton("conv").replay_fold_conv_triton(conv, conv_in, slots, buf, count, check=check)
    else:
        replay_fold_conv_reference(conv, conv_in, slots, buf, count)


_FOLD_REFERENCES = {"mamba2": replay_fold_mamba2_reference, "gdn": replay_fold_gdn_reference,
                    "kda": replay_fold_kda_reference, "conv": replay_fold_conv_reference}


def fold_plan(kind: str, state: torch.Tensor, *rings: torch.Tensor, conv=None, config: tuple[int, int] | None = None):
    """A fold bound to its state pool and rings (`kind`: `mamba2`, `gdn`, `kda` with the rings of its
    `replay_fold_<kind>`, or `conv` with `conv_in`): a callable `(slots, buf, count)` that checks nothing per
    call (the kind's Triton plan on CUDA, with the kernel's `config` if given; the torch reference otherwise).
    With `conv = (window, conv_in)` a state's fold also folds the kind's conv window, in the same launch on CUDA."""
    if state.is_cuda:
        return _triton_plans()[kind](state, *rings, config=config, **({"conv": conv} if conv else {}))
    reference = _FOLD_REFERENCES[kind]

    def fold(slots, buf, count) -> None:
        reference(state, *rings, slots, buf, count)
        if conv:
            replay_fold_conv_reference(*conv, slots, buf, count)

    return fold


def _triton_plans() -> dict[str, type]:
    """Each kind's Triton plan class."""
    return {"mamba2": _triton("mamba2").Mamba2FoldPlan, "gdn": _triton("gdn").GdnFoldPlan,
            "kda": _triton("kda").KdaFoldPlan, "conv": _triton("conv").ConvFoldPlan}


@cache
def _triton(kind: str):
    """The kind's Triton module, imported on the first CUDA call (Triton is imported only then; once: an import costs
    the host more than a one-shot call's other work)."""
    return import_module(f".{kind}", __name__)
