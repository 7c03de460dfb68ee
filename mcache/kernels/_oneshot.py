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
    with the address, shape, strides and dtype it had, takes that plan without hashing a key."""

    def __init__(self, size: int = PLAN_CACHE_SIZE):
        self.size = size
        self._plans: OrderedDict[tuple, object] = OrderedDict()
        self._last: dict[str, tuple[list, object]] = {}  # tag -> (its last call's signature, plan)
        self.builds = 0

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build: Callable[[], object]):
        # The signature: the options, then each tensor's id, address, shape, strides and dtype. Equal ids are the
        # same objects: a cached plan keeps its tensors alive. A list compares without being hashed.
        sig = [options]
        for t in tensors:
            sig += (id(t), t.data_ptr(), t.shape, t.stride(), t.dtype)
        last = self._last.get(tag)
        if last is not None and last[0] == sig:
            return last[1]
        key = (tag, *sig)
        plans = self._plans
        plan = plans.get(key)
        if plan is None:
            plan = build()  # raises on a bad argument: nothing is cached then
            self.builds += 1
            plans[key] = plan
            if len(plans) > self.size:
                _, dropped = plans.popitem(last=False)
                self._last = {k: v for k, v in self._last.items() if v[1] is not dropped}
        self._last[tag] = (sig, plan)
        return plan

    def clear(self) -> None:
        self._plans.clear()
        self._last.clear()


PLANS = PlanCache()


def clear_plan_cache() -> None:
    """Drop every cached one-shot plan (and the references they hold to their pools)."""
    PLANS.clear()
