"""`mcache size --verify`: build the real cache manager and set its allocation beside the estimate."""

from pathlib import Path


def run_verify(est, device: str, pool_layout: str, fmt: str, output: Path | None) -> int:
    """Compare every buffer of every stage; 1 when any differs, else 0."""
    from mcache.cli.output import emit_verify
    from mcache.core.manager import verify

    rows = verify(est, device=device, pool_layout=pool_layout)
    emit_verify(est.spec.name, device, pool_layout, rows, fmt, output)
    return 1 if any(r.difference for r in rows) else 0
