"""Turn per-rank bytes into capacity: how many sequences fit, how long they can be, what binds."""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import replace

from mcache.core.errors import LayoutError
from mcache.core.kinds.base import CacheDtypes
from mcache.core.sizing.estimate import Estimate, RankEstimate, estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.spec.model import ModelSpec

GIB = 1 << 30


def check_budget(utilization: float, reserve_bytes: int) -> None:
    """Raise `LayoutError` unless 0 < utilization <= 1 and the reserve is not negative."""
    if not 0 < utilization <= 1:
        raise LayoutError("utilization", f"a fraction in (0, 1], got {utilization}")
    if reserve_bytes < 0:
        raise LayoutError("reserve", f"zero or more bytes, got {reserve_bytes}")


class Budget(Struct, frozen=True):
    """Memory available to one rank: `gpu_bytes * utilization - weights - reserve` goes to caches; the weights
    are `weights_bytes` when given (every rank), else the rank's estimate."""

    gpu_name: str
    gpu_bytes: int
    utilization: float = 0.9
    reserve_bytes: int = 2 << 30
    weights_bytes: int | None = None

    def __post_init__(self) -> None:
        check_budget(self.utilization, self.reserve_bytes)
        usable = int(self.gpu_bytes * self.utilization)
        if self.reserve_bytes >= usable:
            raise LayoutError("reserve", f"less than the {usable / GIB:.2f} GiB the engine may use ({self.utilization:g} of "
                                         f"{self.gpu_bytes / GIB:.2f} GiB), got {self.reserve_bytes / GIB:.2f} GiB")

    def weights(self, rank: RankEstimate) -> int:
        """The weights the rank loads: given, else estimated; a `LayoutError` when neither is known."""
        weights = rank.weight_bytes if self.weights_bytes is None else self.weights_bytes
        if weights is None:
            raise LayoutError("weights", "the weights one rank loads (the spec leaves a field they need unknown)")
        return weights

    def cache_bytes(self, rank: RankEstimate) -> int:
        """What the rank's caches may take: the usable memory less its weights and the reserve."""
        return int(self.gpu_bytes * self.utilization) - self.weights(rank) - self.reserve_bytes


class RankCapacity(Struct, frozen=True):
    """Capacity of one rank at a context length and a concurrency.

    `max_sequences` keeps the slot pool the runtime has (max batch); `binding` says what stops it:
    `state slots` (a pool fixed by `--max-batch`), `KV`, `max batch` (a rank with no state), or `memory`
    (weights and fixed buffers alone exceed the budget). A pool sized by memory (`slots_from_memory`) is
    full when `max_sequences` is reached: `binding` is then `KV` or `state`, whichever takes more of a
    sequence's bytes.
    `sequences_if_resized` is how many fit if the state pool were sized to match instead (None: no limit).
    `max_context` is the longest context every one of `concurrency` sequences can hold (None: no KV).
    """

    stage: int
    weight_bytes: int
    cache_budget_bytes: int
    fixed_bytes: int
    kv_budget_bytes: int
    kv_tokens: int | None
    context: int
    max_sequences: int
    binding: str
    sequences_if_resized: int | None
    concurrency: int
    max_context: int | None


def rank_capacity(rank: RankEstimate, budget: Budget, context: int, concurrency: int,
                  slots_from_memory: bool = False) -> RankCapacity:
    """Capacity of one rank; see `RankCapacity`."""
    cache_budget = budget.cache_bytes(rank)
    per_token, token_total = rank.token_bytes()
    fixed = rank.cache_bytes - token_total
    kv_budget = cache_budget - fixed
    kv_per_seq = rank.kv_bytes_per_seq(context)
    most = rank.ctx.max_requests
    if kv_budget < 0:
        sequences, binding = 0, "memory"
    elif kv_per_seq and kv_budget // kv_per_seq < most:
        sequences, binding = kv_budget // kv_per_seq, "KV"
    elif slots_from_memory:
        sequences, binding = most, "KV" if kv_per_seq >= rank.bytes_per_unit("slot") else "state"
    else:
        sequences, binding = most, "state slots" if rank.ctx.num_slots else "max batch"
    resized = batch_for_memory(rank, cache_budget, kv_per_seq)
    return RankCapacity(
        stage=rank.ctx.stage,
        weight_bytes=budget.weights(rank),
        cache_budget_bytes=cache_budget,
        fixed_bytes=fixed,
        kv_budget_bytes=kv_budget,
        kv_tokens=max(kv_budget, 0) // per_token if per_token else None,
        context=context,
        max_sequences=sequences,
        binding=binding,
        sequences_if_resized=None if resized is None else resized * rank.ctx.layout.pp,
        concurrency=concurrency,
        max_context=_longest_context(rank, kv_budget, concurrency),
    )


def batch_for_memory(rank: RankEstimate, cache_budget: int, kv_per_seq: int) -> int | None:
    """The largest max batch whose `max batch x pp` state slots, batch rows of scratch and KV of `kv_per_seq`
    bytes per request fit in `cache_budget` beside the reserved slots and static buffers (None: a request costs
    nothing on this rank, so it never binds)."""
    ctx = rank.ctx
    reserved = ctx.num_slots - ctx.max_requests if ctx.num_slots else 0
    per_slot = rank.bytes_per_unit("slot")
    per_batch_row = ctx.layout.pp * (per_slot + kv_per_seq) + rank.bytes_per_request
    if per_batch_row == 0:
        return None
    available = cache_budget - rank.static_bytes - reserved * per_slot
    return max(0, available // per_batch_row)


def memory_sized_runtime(spec: ModelSpec, layout: ParallelLayout, runtime: RuntimeConfig, dtypes: CacheDtypes,
                         budget: Budget, context: int) -> tuple[RuntimeConfig, int | None]:
    """`runtime` with the max batch that memory holds at `context` on every stage (at least 1, so the
    estimate stays a deployment), and that batch (None: no stage limits it, the runtime is unchanged)."""
    probe = estimate(spec, layout, replace(runtime, max_batch=1), dtypes)
    batches = [batch_for_memory(r, budget.cache_bytes(r), r.kv_bytes_per_seq(context)) for r in probe.ranks]
    known = [b for b in batches if b is not None]
    if not known:
        return runtime, None
    return replace(runtime, max_batch=max(1, min(known))), min(known)


def _longest_context(rank: RankEstimate, kv_budget: int, concurrency: int) -> int | None:
    """Largest block-aligned context that `concurrency` sequences can all hold (binary search);
    None when no per-token buffer grows with the context (none at all, or only window-capped ones)."""
    if not any(c.decl.per == "token" and c.decl.window is None for c in rank.components):
        windows = max((c.decl.window for c in rank.components if c.decl.per == "token"), default=0)
        return None if concurrency * rank.kv_bytes_per_seq(windows) <= kv_budget else 0
    if kv_budget <= 0:
        return 0
    block = rank.ctx.runtime.tokens_per_block
    lo, hi = 0, kv_budget // block + 1  # in blocks; a context of hi blocks cannot fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if concurrency * rank.kv_bytes_per_seq(mid * block) <= kv_budget:
            lo = mid
        else:
            hi = mid
    return lo * block


def capacity(est: Estimate, budget: Budget, context: int, concurrency: int,
             slots_from_memory: bool = False) -> tuple[list[RankCapacity], int]:
    """Capacity of every stage and the index of the tightest one (fewest sequences, then shortest context)."""
    if context < 1 or concurrency < 1:
        raise LayoutError("context" if context < 1 else "concurrency", "a positive integer")
    caps = [rank_capacity(r, budget, context, concurrency, slots_from_memory) for r in est.ranks]

    def tightness(c: RankCapacity) -> tuple:
        unbounded = 1 << 62
        resized = c.sequences_if_resized if c.sequences_if_resized is not None else unbounded
        return (c.max_sequences, resized, c.max_context if c.max_context is not None else unbounded)

    tightest = min(range(len(caps)), key=lambda i: tightness(caps[i]))
    return caps, tightest

