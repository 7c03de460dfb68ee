"""`mcache size --verify`: build the real cache manager and set its allocation beside the estimate."""

from pathlib import Path


def run_verify(est, device: str, pool_layout: str, fmt: str, output: Path | None) -> int:
    """Compare every buffer of every stage; 1 when any differs, else 0."""
    from mcache.cli.args import check_device, require_torch
    from mcache.cli.output import emit_verify
    from mcache.core.errors import allocation_error

    require_torch("size --verify")
    check_device(device, "size --verify")
    from mcache.core.cache.manager import verify

    try:
        rows = verify(est, device=device, pool_layout=pool_layout)
    except RuntimeError as err:  # torch's out-of-memory errors derive from RuntimeError
        raise allocation_error("size --verify", err, device) from None
    emit_verify(est.spec.name, device, pool_layout, rows, fmt, output)
    return 1 if any(r.difference for r in rows) else 0
