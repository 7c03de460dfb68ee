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
checked (dtype, length, device, contiguity) on every call, and their ranges when `check=True`.

An op's last call is matched without building its key (`LastCall`): the same options and tensor objects, each at
the address it had, then one call of torch's C++ `TensorGuards` (`_common.layout_guard`) for the shapes, strides,
dtypes and devices of its tensors and of index vectors like ones that passed as they were at that length, instead of a
Python read of each. That match also fixes the call's launches (a plan's `key` reads only what the guard checks,
unless the plan says otherwise: `Plan.key_by_layout`), so they run without the plan's own lookup.

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
    """A bounded cache of plans (the oldest built dropped first). `run(tag, tensors, options, build, names, indices,
    check)` runs an op once: on its last call's plan and launches when the call matches it (`LastCall`), else on the
    plan cached under its key or `build(tensors, options)`'s (which checks the tensors), with the index vectors
    checked for it (`indices_on`); their ranges too when `check`. `builds` counts the plans built (cache misses)."""

    def __init__(self, size: int = PLAN_CACHE_SIZE):
        self.size = size
        self._plans: OrderedDict[tuple, object] = OrderedDict()
        self.last: dict[str, LastCall] = {}  # each op's last call, by tag
        self.builds = 0

    def __len__(self) -> int:
        return len(self._plans)

    def run(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build: Callable[[Sequence, Hashable], object],
            names: tuple[str, ...], indices: tuple, check: bool) -> None:
        last = self.last.get(tag)
        if last is not None and last.replay(options, tensors, indices, check):
            return
        plan, indices = self._prepare(tag, tensors, options, build, names, indices)
        if plan.device is None:  # no pools: nothing launches
            return
        if check:
            plan.check(*indices)
        plan(*indices)

    def _prepare(self, tag, tensors, options, build, names, indices) -> tuple[object, tuple]:
        """The plan of a call that did not match its op's last one, and its index vectors checked (moved to its
        device); the call becomes the op's last."""
        plan = self._plan(tag, tensors, options, build)
        last = self.last.get(tag)
        # The last call's plan found again by key is of the same objects with the metadata its guards were made for:
        # they stay.
        if last is None or last.plan is not plan:
            last = self.last[tag] = LastCall(options, tensors, plan)
        if plan.device is None:
            return plan, indices
        checked = indices_on(plan.device, names, *indices, length=plan.index_length)
        last.add(checked, indices)
        return plan, checked

    def _plan(self, tag: str, tensors: Sequence[torch.Tensor], options: Hashable, build):
        """The plan cached under the key of `tensors` and `options`, else `build`'s, cached (the oldest dropped)."""
        # The key: the options, then each tensor's id, address, shape, strides and dtype. Equal ids are the same
        # objects: a cached plan keeps its tensors alive.
        key = (tag, options, *[(id(t), t.data_ptr(), t.shape, t.stride(), t.dtype) for t in tensors])
        plans = self._plans
        plan = plans.get(key)
        if plan is None:
            plan = build(tensors, options)  # raises on a bad argument: nothing is cached then
            self.builds += 1
            plans[key] = plan
            if len(plans) > self.size:
                _, dropped = plans.popitem(last=False)
                self.last = {k: v for k, v in self.last.items() if v.plan is not dropped}
        return plan

    def clear(self) -> None:
        self._plans.clear()
        self.last.clear()


class LastCall:
    """An op's last call: its plan, its tensors (`distinct`: each object once) and, per index length, a guard with
    the launches of calls that pass it (`entries`). `replay(options, tensors, indices, check)` runs a call with the
    same options and tensor objects, each at the address it had, whose tensors and index vectors pass the guard of
    their length, and says whether it did."""

    __slots__ = ("plan", "distinct", "entries", "replay")

    def __init__(self, options: Hashable, tensors: Sequence[torch.Tensor], plan):
        held = tuple(tensors)
        self.plan, self.distinct, self.entries = plan, tuple({id(t): t for t in held}.values()), {}
        self.replay = _replayer(options, held, self.distinct, self.entries)

    def add(self, checked: tuple, given: tuple) -> None:
        """A guard for the length of index vectors `checked` (by `indices_on`) where they passed as `given`, with
        the launches it fixes (None where the plan's launches depend on more than the guard checks,
        `Plan.key_by_layout`: the plan is called then). TensorGuards fails a check given one object twice (a vector
        given twice, or also bound): such calls get none, nor do they where this torch has no TensorGuards."""
        distinct, plan = self.distinct, self.plan
        if not all(map(is_, checked, given)) or len({id(t) for t in (*distinct, *checked)}) != len(distinct) + len(checked):
            return
        guard = layout_guard((*distinct, *checked))
        if guard is None:
            return
        launches = plan.launches(plan.key(*checked)) if plan.key_by_layout else None
        if len(self.entries) >= MAX_INDEX_LENGTHS:
            self.entries.clear()
        self.entries[checked[0].shape[0]] = (guard, plan, launches)


def _replayer(options: Hashable, held: tuple, distinct: tuple, entries: dict) -> Callable[..., bool]:
    """`LastCall.replay` for a last call of the tensors `held` (`distinct`: each object once) with `options`: the hot
    path of a repeated one-shot call, written out for two tensors (a pool pair, or one pool twice) and five (a fold's
    state and rings): a fold's match costs the host 0.57 µs less than the general form on this project's CPU-only
    machine (1.79 against 2.36 µs over the plan call; results/kernel_experiments.md). A vector's length is read as its
    element count (cheaper than its shape, which the guard checks); a call that does not match (a non-tensor too)
    takes the slow path, whose checks say what was expected."""
    addresses = [t.data_ptr() for t in held]
    n = len(held)
    if n == 2:
        h0, h1 = held
        a0, a1 = addresses
        pair = len(distinct) == 2

        def replay(opts, tensors, indices, check):
            if len(tensors) == 2:
                t0, t1 = tensors
                if t0 is h0 and t1 is h1 and opts == options and t0.data_ptr() == a0 and t1.data_ptr() == a1:
                    try:
                        entry = entries.get(indices[0].numel())
                    except AttributeError:
                        return False
                    if entry is not None and (entry[0].check(t0, t1, *indices) if pair else entry[0].check(t0, *indices)):
                        return _launch(entry, indices, check)
            return False
    elif n == 5 and len(distinct) == 5:
        h0, h1, h2, h3, h4 = held
        a0, a1, a2, a3, a4 = addresses

        def replay(opts, tensors, indices, check):
            if len(tensors) == 5:
                t0, t1, t2, t3, t4 = tensors
                if (t0 is h0 and t1 is h1 and t2 is h2 and t3 is h3 and t4 is h4 and opts == options
                        and t0.data_ptr() == a0 and t1.data_ptr() == a1 and t2.data_ptr() == a2
                        and t3.data_ptr() == a3 and t4.data_ptr() == a4):  # fmt: skip
                    try:
                        entry = entries.get(indices[0].numel())
                    except AttributeError:
                        return False
                    if entry is not None and entry[0].check(t0, t1, t2, t3, t4, *indices):
                        return _launch(entry, indices, check)
            return False
    else:

        def replay(opts, tensors, indices, check):
            if (opts == options and len(tensors) == n and all(map(is_, tensors, held))
                    and list(map(_DATA_PTR, held)) == addresses):  # fmt: skip
                try:
                    entry = entries.get(indices[0].numel())
                except AttributeError:
                    return False
                if entry is not None and entry[0].check(*distinct, *indices):
                    return _launch(entry, indices, check)
            return False

    return replay


def _launch(entry: tuple, indices: tuple, check: bool) -> bool:
    """Run a matched call: its ranges checked when `check`, then its launches (or its plan, where it has none)."""
    _, plan, launches = entry
    if check:
        plan.check(*indices)
    if launches is None:
        plan(*indices)
    else:
        for launch in launches:
            launch.run(*indices)
    return True


PLANS = PlanCache()


def clear_plan_cache() -> None:
    """Drop every cached one-shot plan (and the references they hold to their pools)."""
    PLANS.clear()
