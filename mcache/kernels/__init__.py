"""Cache kernels: each op is a folder with a plain-torch `reference.py` (the CPU path and the oracle) and a
Triton `kernel.py` (used for CUDA tensors; Triton is imported only then)."""

from .commit_index import commit_index
from .commit_intermediate import commit_intermediate
from .copy_slots import copy_slots
from .pack import pack, unpack
from .replay_fold import replay_fold_conv, replay_fold_gdn, replay_fold_kda, replay_fold_mamba2
from .reset_slots import reset_slots

__all__ = [
    "commit_index",
    "commit_intermediate",
    "copy_slots",
    "pack",
    "replay_fold_conv",
    "replay_fold_gdn",
    "replay_fold_kda",
    "replay_fold_mamba2",
    "reset_slots",
    "unpack",
]
