"""`mcache size --verify`: build the real cache manager and set its allocation beside the estimate."""

from pathlib import Path

from mcache.core.errors import McacheError

MAX_IDS = 1 << 24  # the manager keeps every slot and block id in a Python set: about 1 GiB of host memory at this


def check_ids(est) -> None:
    """A one-line error when a stage's manager would hold more than `MAX_IDS` slot and KV block ids."""
    for rank in est.ranks:
        ctx = rank.ctx
        blocks = {c.decl.window: c.units // ctx.runtime.tokens_per_block for c in rank.components if c.decl.per == "token"}
        ids = ctx.num_slots + ctx.runtime.snapshot_slots + sum(blocks.values())
        if ids > MAX_IDS:
            raise McacheError(f"--verify: at most {MAX_IDS} (2**24) slots and KV blocks per stage (the manager lists "
                              f"them on the host), stage {ctx.stage} has {ids}: fewer slots (--max-batch, --draft, "
                              "--reserved-slots, --snapshot-slots) or blocks (--max-seq-len, --kv-tokens, --block-size)")


def run_verify(est, device: str, pool_layout: str, fmt: str, output: Path | None) -> int:
    """Compare every buffer of every stage; 1 when any differs, else 0."""
    from mcache.cli.args import check_device, require_torch
    from mcache.cli.check_output import emit_verify
    from mcache.core.errors import allocation_error

    check_ids(est)
    require_torch("size --verify")
    check_device(device, "size --verify")
    from mcache.cache.manager import verify

    try:
        rows = verify(est, device=device, pool_layout=pool_layout)
    except RuntimeError as err:  # torch's out-of-memory errors derive from RuntimeError
        raise allocation_error("size --verify", err, device) from None
    emit_verify(est.spec.name, device, pool_layout, rows, fmt, output)
    return 1 if any(r.difference for r in rows) else 0
