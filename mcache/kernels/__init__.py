"""Cache kernels: each op is a folder with a plain-torch `reference.py` (the CPU path and the oracle) and a
Triton `kernel.py` (`replay_fold`: one module per kind, `mamba2.py`, `gdn.py`, `kda.py`, `conv.py`), used for
CUDA tensors; the op's `__init__.py` imports its Triton module only then, so the CPU path never imports Triton.

Each op comes in two forms: `op(...)` checks its arguments and launches once; `op_plan(pools...)` binds the
pools once and returns a callable that takes only the index vectors, for callers that launch the same op on
the same pools again and again (the cache manager, `mcache bench`): on CUDA its host cost is close to a torch
op's (see `_launch.py`). The one-shot form keeps the plans of its last calls (`_oneshot.py`), so calling it again on
the same tensors skips the checks and preparation a plan does once; `clear_plan_cache()` drops them."""

from ._oneshot import clear_plan_cache
from .commit_index import commit_index, commit_index_plan
from .commit_intermediate import commit_intermediate, commit_intermediate_plan
from .copy_slots import copy_slots, copy_slots_plan
from .pack import pack, pack_plan, unpack, unpack_plan
from .replay_fold import fold_plan, replay_fold_conv, replay_fold_gdn, replay_fold_kda, replay_fold_mamba2
from .reset_slots import reset_slots, reset_slots_plan

__all__ = [
    "commit_index",
    "commit_index_plan",
    "clear_plan_cache",
    "commit_intermediate",
    "commit_intermediate_plan",
    "copy_slots",
    "copy_slots_plan",
    "fold_plan",
    "pack",
    "pack_plan",
    "replay_fold_conv",
    "replay_fold_gdn",
    "replay_fold_kda",
    "replay_fold_mamba2",
    "reset_slots",
    "reset_slots_plan",
    "unpack",
    "unpack_plan",
]
