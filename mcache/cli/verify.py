"""`mcache size --verify`: build the real cache manager for the pool `mcache size` sized and set its allocation
beside the estimate."""

import sys
from pathlib import Path

from msgspec.structs import replace

from mcache.core.errors import McacheError
from mcache.core.sizing.estimate import Estimate, estimate
from mcache.core.sizing.neutral import NeutralRun

MAX_IDS = 1 << 24  # the manager keeps every slot and block id in a Python set: about 1 GiB of host memory at this


def _ids(est: Estimate) -> list[int]:
    """The slot and KV block ids the manager would list for each stage."""
    counts = []
    for rank in est.ranks:
        ctx = rank.ctx
        blocks = {c.decl.window: c.units // ctx.runtime.tokens_per_block for c in rank.components if c.decl.per == "token"}
        counts.append(ctx.num_slots + ctx.runtime.snapshot_slots + sum(blocks.values()))
    return counts


def _too_many(est: Estimate) -> McacheError:
    """The one-line error for a pool the manager cannot list on the host."""
    stage, ids = next((rank.ctx.stage, ids) for rank, ids in zip(est.ranks, _ids(est), strict=True) if ids > MAX_IDS)
    return McacheError(f"--verify: at most {MAX_IDS} (2**24) slots and KV blocks per stage (the manager lists "
                       f"them on the host), stage {stage} has {ids}: fewer slots (--max-batch, --draft, "
                       "--reserved-slots, --snapshot-slots) or blocks (--max-seq-len, --kv-tokens, --block-size)")


def pool_to_verify(run: NeutralRun) -> Estimate:
    """The pool `run` sized; when the manager cannot list it and memory chose its size, the largest max batch it can
    (said on stderr); a one-line error when none can be (the max batch was given, or even one request is too many)."""
    est = run.estimate
    if max(_ids(est)) <= MAX_IDS:
        return est
    if not run.slots_from_memory:
        raise _too_many(est)

    def at(batch: int) -> Estimate:
        return estimate(est.spec, est.layout, replace(est.runtime, max_batch=batch), est.dtypes)

    lo, hi = 0, est.runtime.max_batch  # at(lo) fits the limit (0: not yet known), at(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if max(_ids(at(mid))) <= MAX_IDS else (lo, mid)
    if lo == 0:
        raise _too_many(est)
    print(f"mcache: --verify: the sized pool (max batch {est.runtime.max_batch}) exceeds the manager's host limit of "
          f"{MAX_IDS} (2**24) slots and KV blocks per stage; verifying the largest it can hold: max batch {lo}",
          file=sys.stderr)
    return at(lo)


def run_verify(run: NeutralRun, device: str, pool_layout: str, fmt: str, output: Path | None) -> int:
    """Compare every buffer of every stage of the pool `run` sized; 1 when any differs, else 0."""
    from mcache.cli.args import check_device, require_torch
    from mcache.cli.check_output import emit_verify
    from mcache.core.errors import allocation_error

    est = pool_to_verify(run)
    require_torch("size --verify")
    check_device(device, "size --verify")
    from mcache.cache.manager import verify

    try:
        rows = verify(est, device=device, pool_layout=pool_layout)
    except RuntimeError as err:  # torch's out-of-memory errors derive from RuntimeError
        raise allocation_error("size --verify", err, device) from None
    emit_verify(est.spec.name, device, pool_layout, rows, fmt, output)
    return 1 if any(r.difference for r in rows) else 0
