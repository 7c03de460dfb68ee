"""`mcache bench --ops transfer --sender-tp A --receiver-tp B`: the transfer between processes (`mcache.bench.transfer`)."""

from __future__ import annotations

from pathlib import Path


def bench_transfer(spec: str, ops: list[str], batches: list[int], sender: tuple[int, int], receiver: tuple[int, int],
                   device: str, backend: str | None, reps: int, max_seq_len: int, pool_layout: str, output: Path | None) -> int:
    """Check the options, run the ranks (spawned here unless `torchrun` started them), print rank 0's results."""
    from mcache.cli.args import check_device, located, require_torch
    from mcache.core.errors import LayoutError, McacheError

    if ops != ["transfer"]:
        raise McacheError(f"bench: --sender-tp/--receiver-tp/--backend time --ops transfer alone, got --ops {','.join(ops)!r}")
    if output is not None and not output.parent.is_dir():
        raise McacheError(f"{output}: output: a file in an existing folder")
    require_torch("bench")
    check_device(device, "bench", ("cuda", "cpu"))
    if backend == "nccl" and not device.startswith("cuda"):
        raise McacheError("bench: --backend nccl needs --device cuda (gloo moves CPU buffers)")
    from mcache.bench.transfer import TransferConfig, run_transfer
    from mcache.cli.bench_output import emit_bench
    from mcache.cli.output import print_blocks
    from mcache.core.load import resolve

    cfg = TransferConfig(spec, sender, receiver, batches, device.split(":")[0], backend, reps, max_seq_len, pool_layout)
    try:
        results = run_transfer(cfg)
    except LayoutError as err:
        raise located(err, str(resolve(spec))) from None
    if results is None:  # a torchrun rank other than 0
        return 0
    emit_bench(results, output)
    print_blocks([f"batch {r.batch}: pack {r.pack_us:.1f} us, wire {r.wire_us:.1f} us, unpack {r.unpack_us:.1f} us, "
                  f"{r.pct_size_matched:.1f}% of the same sends of plain buffers ({r.size_matched_us:.1f} us)"
                  for r in results.rows if r.status == "ok"], None)
    return 0 if all(r.status == "ok" for r in results.rows) else 1
