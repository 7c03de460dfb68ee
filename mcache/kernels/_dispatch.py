"""Which implementation a public kernel op runs: the Triton kernel for CUDA tensors, the torch reference otherwise."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache


def run(cuda: bool, package: str, name: str, reference: Callable[..., None], *args, check: bool) -> None:
    """`<package>.kernel.<name>_triton(*args, check=check)` when `cuda` (Triton is imported only then), else
    `reference(*args)`."""
    if cuda:
        getattr(_kernel_module(package), f"{name}_triton")(*args, check=check)
    else:
        reference(*args)


@cache
def _kernel_module(package: str):
    """`<package>.kernel`, imported once (an import per call cost microseconds of every launch)."""
    return importlib.import_module(".kernel", package)
