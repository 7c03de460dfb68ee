"""The plans behind the one-shot functions (`copy_slots(...)`, `commit_intermediate(...)`, `pack(...)`,
`replay_fold_*(...)`, ...): a small cache, so that calling a one-shot function again on the same tensors costs the
host about what a plan call does.

Building a plan checks the op's tensors (dtypes, one device, shapes, contiguous state dims) and prepares its
launches; on an H200 that made a one-shot call cost the host 95-107 µs against 5-11 µs for a plan call. The cache
keeps the plans of the last `PLAN_CACHE_SIZE` distinct calls, keyed by the op, its options, and each bound
tensor's identity (`id`), address (which tells the device too), shape, strides and dtype: a tensor replaced, moved, reshaped,
restrided (`t.data = ...`, `as_strided_`, `resize_`) or of another dtype is another key, so its plan is built and
its arguments checked again. A key's tensors are alive while its plan is cached (the plan holds them), so an `id`
in the cache is never one of a dead tensor's. An op's last call is checked without building its key: the same
objects at the same addresses, and torch's C++ `TensorGuards` (`_common.layout_guard`) for their shapes, strides,
dtypes and devices, in one call instead of a Python read of each. The per-call index vectors are not part of the
key: they are checked (dtype, length, device, contiguity) on every call, by one such guard when they look like
vectors that passed before, and their ranges when `check=True`.

The cache holds references to the pools of its plans: `clear_plan_cache()` lets them go (a script that frees a
large pool and allocates another calls it first); at most `PLAN_CACHE_SIZE` plans are held.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from operator import is_

import torch

from ._common import layout_guard

PLAN_CACHE_SIZE = 16
_DATA_PTR = torch.Tensor.data_ptr


class PlanCache:
    """A bounded cache of plans (the oldest built dropped first): `get(tag, tensors, options, build)` returns the plan
    cached under that key, or `build()`'s (which checks the tensors) after caching it. `builds` counts the plans built
    (cache misses).

    Each tag's last call is kept beside the keys: a call with the same options and the same tensor objects, each
    with the address it had and passing `layout_guard`'s one C++ check of the rest (shape, strides, dtype, device),
    takes that plan without building a key."""

    def __init__(self, size: int = PLAN_CACHE_SIZE):
        self.size = size
        self._plans: OrderedDict[tuple, object] = OrderedDict()
        # tag -> its last call: (options, tensors, each object once, their guard, their addresses, plan)
        self._last: dict[str, tuple[Hashable, tuple, tuple, object, list[int], object]] = {}
        self.builds = 0

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build: Callable[[], object]):
        last = self._last.get(tag)
        if last is not None:
            held_options, held, distinct, guard, addresses, plan = last
            if (held_options == options and len(tensors) == len(held) and all(map(is_, tensors, held))
                    and guard.check(*distinct) and list(map(_DATA_PTR, distinct)) == addresses):
                return plan
        # The key: the options, then each tensor's id, address, shape, strides and dtype. Equal ids are the same
        # objects: a cached plan keeps its tensors alive.
        key = (tag, options, *[(id(t), t.data_ptr(), t.shape, t.stride(), t.dtype) for t in tensors])
        plans = self._plans
        plan = plans.get(key)
        if plan is None:
            plan = build()  # raises on a bad argument: nothing is cached then
            self.builds += 1
            plans[key] = plan
            if len(plans) > self.size:
                _, dropped = plans.popitem(last=False)
                self._last = {k: v for k, v in self._last.items() if v[5] is not dropped}
        # The guard takes each object once (TensorGuards fails a check given one object twice: a pool copied within
        # itself); the objects are the held ones once `is` has matched them.
        distinct = tuple({id(t): t for t in tensors}.values())
        guard = layout_guard(distinct)
        if guard is None:
            self._last.pop(tag, None)
        else:
            self._last[tag] = (options, tuple(tensors), distinct, guard, [t.data_ptr() for t in distinct], plan)
        return plan

    def clear(self) -> None:
        self._plans.clear()
        self._last.clear()


PLANS = PlanCache()


def clear_plan_cache() -> None:
    """Drop every cached one-shot plan (and the references they hold to their pools)."""
    PLANS.clear()
