"""One `mcache size` run of the neutral model: the estimate, a slot pool sized by memory unless the max batch
is given, the capacity of every stage, and whether anything fits. `mcache plan` sizes its candidates here too."""

from __future__ import annotations

from msgspec import Struct

from mcache.core.errors import LayoutError
from mcache.core.kinds.base import CacheDtypes
from mcache.core.sizing.capacity import Budget, RankCapacity, capacity, memory_sized_runtime
from mcache.core.sizing.estimate import Estimate, estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.spec.model import ModelSpec


class NeutralRun(Struct, frozen=True):
    """The estimate and, with a budget, the capacity at `context` and `concurrency` (`caps` is None without one).

    `batch_given`: the max batch was set by the user; else `slots_from_memory` says the state pool was sized by
    memory (so it holds exactly what fits), or neither (no budget: the runtime's default max batch).
    """

    estimate: Estimate
    budget: Budget | None
    context: int
    concurrency: int
    batch_given: bool
    slots_from_memory: bool
    caps: list[RankCapacity] | None = None
    tightest: int | None = None

    @property
    def fits(self) -> bool | None:
        """At least one sequence of the context fits on every stage (None without a budget)."""
        return None if self.caps is None else self.caps[self.tightest].max_sequences > 0


def run_neutral(spec: ModelSpec, layout: ParallelLayout, runtime: RuntimeConfig, dtypes: CacheDtypes,
                budget: Budget | None, context: int | None = None, concurrency: int | None = None,
                batch_given: bool = True) -> NeutralRun:
    """Size one deployment; without `batch_given` and with a budget, the max batch is what memory holds at the
    context (`memory_sized_runtime`). `context` defaults to the max seq len, `concurrency` to the max batch x pp."""
    context = runtime.max_seq_len if context is None else context
    if context > runtime.max_seq_len:
        raise LayoutError("context", f"at most the max sequence length the KV pool is sized for ({runtime.max_seq_len:,} "
                                     f"tokens), got {context:,}")
    from_memory = budget is not None and not batch_given
    if from_memory:
        runtime, batch = memory_sized_runtime(spec, layout, runtime, dtypes, budget, context)
        from_memory = batch is not None
    est = estimate(spec, layout, runtime, dtypes)
    concurrency = runtime.max_batch * layout.pp if concurrency is None else concurrency
    if budget is None:
        return NeutralRun(est, None, context, concurrency, batch_given, False)
    caps, tightest = capacity(est, budget, context, concurrency, from_memory)
    return NeutralRun(est, budget, context, concurrency, batch_given, from_memory, caps, tightest)

