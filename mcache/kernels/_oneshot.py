"""The plans behind the one-shot functions (`copy_slots(...)`, `commit_intermediate(...)`, `pack(...)`,
`replay_fold_*(...)`, ...): a small cache, so that calling a one-shot function again on the same tensors costs the
host about what a plan call does.

Building a plan checks the op's tensors (dtypes, one device, shapes, contiguous state dims) and prepares its
launches; on an H200 that made a one-shot call cost the host 95-107 µs against 5-11 µs for a plan call. The cache
keeps the plans of the last `PLAN_CACHE_SIZE` distinct calls, keyed by the op, its options, and each bound
tensor's identity (`id`), address (which tells the device too), shape, strides and dtype: a tensor replaced, moved, reshaped,
restrided (`t.data = ...`, `as_strided_`, `resize_`) or of another dtype is another key, so its plan is built and
its arguments checked again. A key's tensors are alive while its plan is cached (the plan holds them), so an `id`
in the cache is never one of a dead tensor's. The per-call index vectors are not part of the key: they are checked
(dtype, shape, device) on every call, and their ranges when `check=True`.

The cache holds references to the pools of its plans: `clear_plan_cache()` lets them go (a script that frees a
large pool and allocates another calls it first); at most `PLAN_CACHE_SIZE` plans are held.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import torch

PLAN_CACHE_SIZE = 16


class PlanCache:
    """A bounded cache of plans (the oldest built dropped first): `get(tag, tensors, options, build)` returns the plan
    cached under that key, or `build()`'s (which checks the tensors) after caching it. `builds` counts the plans built
    (cache misses).

    Each tag's last call is kept beside the keys: a call with the same options and the same tensor objects, each
    with the address, shape, strides and dtype it had, takes that plan without building and hashing a key."""

    def __init__(self, size: int = PLAN_CACHE_SIZE):
        self.size = size
        self._plans: OrderedDict[tuple, object] = OrderedDict()
        self._last: dict[str, tuple] = {}  # tag -> (options, tensors, their (address, shape, strides, dtype), plan)
        self.builds = 0

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build: Callable[[], object]):
        last = self._last.get(tag)
        if last is not None and last[0] == options and _unchanged(tensors, last[1], last[2]):
            return last[3]
        key = (tag, options, *[x for t in tensors for x in (id(t), t.data_ptr(), t.shape, t.stride(), t.dtype)])
        plans = self._plans
        plan = plans.get(key)
        if plan is None:
            plan = build()  # raises on a bad argument: nothing is cached then
            self.builds += 1
            plans[key] = plan
            if len(plans) > self.size:
                _, dropped = plans.popitem(last=False)
                self._last = {k: v for k, v in self._last.items() if v[3] is not dropped}
        self._last[tag] = (options, tuple(tensors), tuple((t.data_ptr(), t.shape, t.stride(), t.dtype) for t in tensors), plan)
        return plan

    def clear(self) -> None:
        self._plans.clear()
        self._last.clear()


def _unchanged(tensors: Sequence[torch.Tensor], last: tuple, meta: tuple) -> bool:
    """Whether `tensors` are the objects `last`, each with its address, shape, strides and dtype in `meta`."""
    if len(tensors) != len(last):
        return False
    for t, u, (ptr, shape, stride, dtype) in zip(tensors, last, meta, strict=True):
        if t is not u or t.data_ptr() != ptr or t.shape != shape or t.stride() != stride or t.dtype is not dtype:
            return False
    return True


PLANS = PlanCache()


def clear_plan_cache() -> None:
    """Drop every cached one-shot plan (and the references they hold to their pools)."""
    PLANS.clear()
