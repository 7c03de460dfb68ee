"""The plans behind the one-shot functions (`copy_slots(...)`, `commit_intermediate(...)`, `pack(...)`,
`replay_fold_*(...)`, ...): a small cache, so that calling a one-shot function again on the same tensors costs the
host about what a plan call does.

Building a plan checks the op's tensors (dtypes, one device, shapes, contiguous state dims) and prepares its
launches; on an H200 that made a one-shot call cost the host 95-107 µs against 5-11 µs for a plan call. The cache
keeps the plans of the last `PLAN_CACHE_SIZE` distinct calls, keyed by the op, its options, and each bound
tensor's identity (`id`), address (which tells the device too), shape, strides and dtype: a tensor replaced, moved, reshaped,
restrided (`t.data = ...`, `as_strided_`, `resize_`) or of another dtype is another key, so its plan is built and
its arguments checked again. A key's tensors are alive while its plan is cached (the plan holds them), so an `id`
in the cache is never one of a dead tensor's. The per-call index vectors are not part of the key: they are
checked (dtype, length, device, contiguity) on every call, and their ranges when `check=True`. An op's last call is
checked without building its key: the same objects at the same addresses, then one call of torch's C++
`TensorGuards` (`_common.layout_guard`) for the shapes, strides, dtypes and devices of its tensors and of index
vectors like ones that passed as they were at that length, instead of a Python read of each.

The cache holds references to the pools of its plans: `clear_plan_cache()` lets them go (a script that frees a
large pool and allocates another calls it first); at most `PLAN_CACHE_SIZE` plans are held.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from operator import is_

import torch

from ._common import indices_on, layout_guard

PLAN_CACHE_SIZE = 16
MAX_INDEX_LENGTHS = 256  # index lengths (batch sizes) whose guards an op's last call keeps
_DATA_PTR = torch.Tensor.data_ptr


class PlanCache:
    """A bounded cache of plans (the oldest built dropped first). `get(tag, tensors, options, build, names, indices)`
    returns the plan cached under its key, or `build()`'s (which checks the tensors) after caching it, with the
    call's index vectors checked for it (`indices_on`). `builds` counts the plans built (cache misses).

    Each tag's last call is kept beside the keys: a call with the same options and the same tensor objects, each at
    the address it had, whose tensors and index vectors pass one C++ check (`layout_guard`: shapes, strides, dtypes,
    devices; one guard per index length seen) takes that plan and its vectors as they are, building no key."""

    def __init__(self, size: int = PLAN_CACHE_SIZE):
        self.size = size
        self._plans: OrderedDict[tuple, object] = OrderedDict()
        # tag -> its last call: (options, tensors, each object once, their addresses, plan, guards by index length)
        self._last: dict[str, tuple[Hashable, tuple, tuple, list[int], object, dict]] = {}
        self.builds = 0

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build: Callable[[], object],
            names: tuple[str, ...], indices: tuple) -> tuple[object, tuple[torch.Tensor, ...]]:
        last = self._last.get(tag)
        if last is not None:
            held_options, held, distinct, addresses, plan, guards = last
            if (held_options == options and len(tensors) == len(held) and all(map(is_, tensors, held))
                    and list(map(_DATA_PTR, distinct)) == addresses):
                try:  # a vector's length as its element count (cheaper than shape[0]); the guard checks the shape
                    guard = guards.get(indices[0].numel())
                except AttributeError:  # not a tensor: indices_on says what was expected
                    guard = None
                if guard is not None and guard.check(*distinct, *indices):
                    return plan, indices
        # The key decides (a bound tensor's shape, strides or dtype may have changed in place). The last call's plan
        # found again is of the same objects with the metadata its guards were made for: they stay.
        plan = self._plan(tag, tensors, options, build)
        if last is None or last[4] is not plan:
            distinct = tuple({id(t): t for t in tensors}.values())
            guards = {}
            self._last[tag] = (options, tuple(tensors), distinct, [t.data_ptr() for t in distinct], plan, guards)
        if plan.device is None:  # no pools: nothing launches
            return plan, indices
        checked = indices_on(plan.device, names, *indices, length=plan.index_length)
        # A guard for vectors taken as they were; TensorGuards fails a check given one object twice (a pool copied
        # within itself: `distinct`), so vectors that repeat an object keep to indices_on.
        if (all(map(is_, checked, indices)) and len({id(t) for t in (*distinct, *checked)}) == len(distinct) + len(checked)
                and (guard := layout_guard((*distinct, *checked))) is not None):
            if len(guards) >= MAX_INDEX_LENGTHS:
                guards.clear()
            guards[checked[0].shape[0]] = guard
        return plan, checked

    def _plan(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build: Callable[[], object]):
        """The plan cached under the key of `tensors` and `options`, else `build()`'s, cached (the oldest dropped)."""
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
                self._last = {k: v for k, v in self._last.items() if v[4] is not dropped}
        return plan

    def clear(self) -> None:
        self._plans.clear()
        self._last.clear()


PLANS = PlanCache()


def clear_plan_cache() -> None:
    """Drop every cached one-shot plan (and the references they hold to their pools)."""
    PLANS.clear()
