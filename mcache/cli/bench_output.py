"""The bench renderers: the results table (columns fitted to the page) and the markdown kernel table."""

from __future__ import annotations

import sys
from pathlib import Path

from mcache.cli.output import emit_text, human_bytes, markdown_table, print_blocks, text_table, write_file

# Bench table columns, most important first: at a narrow page the last ones are dropped, never a number cut.
_BENCH_COLUMNS = ("op", "kind", "batch", "impl", "device us", "eager us", "host us", "host/copy_", "% size-matched",
                  "% roofline", "bound", "speed-up", "layer", "bytes", "GB/s", "% ceiling", "p10", "p90")
_BENCH_TEXT = ("op", "kind", "impl")


def _num(v, fmt="{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def _bound(row) -> str:
    """Which floor a row's roofline is: `memory`, or `arith` where its arithmetic time is the larger."""
    if row.memory_us is None:
        return "-"
    return "arith" if (row.arith_us or 0) > row.memory_us else "memory"


def _bench_cells(row, copy_host: float | None) -> dict[str, str]:
    ratio = row.host_us / copy_host if row.host_us is not None and copy_host else None
    return {"op": row.op, "kind": row.kind, "batch": str(row.batch), "impl": row.impl,
            "device us": _num(row.median_us, "{:.2f}"), "eager us": _num(row.eager_us, "{:.2f}"),
            "host us": _num(row.host_us, "{:.2f}"), "host/copy_": _num(ratio, "{:.2f}x"),
            "% size-matched": _num(row.pct_size_matched), "% roofline": _num(row.pct_roofline),
            "bound": _bound(row), "speed-up": _num(row.speedup_vs_baseline, "{:.2f}x"),
            "layer": _num(row.layer, "{}"), "bytes": human_bytes(row.bytes), "GB/s": _num(row.gbps),
            "% ceiling": _num(row.pct_ceiling), "p10": _num(row.p10_us, "{:.2f}"), "p90": _num(row.p90_us, "{:.2f}")}


def bench_columns(cells: list[dict[str, str]], width: int) -> list[str]:
    """The most important columns whose cells fit in `width` characters (a rich table's borders included)."""
    kept: list[str] = []
    used = 1
    for name in _BENCH_COLUMNS:
        need = max(len(name), *(len(c[name]) for c in cells)) + 3  # padding and border
        if all(c[name] == "-" for c in cells):  # nothing to show (no layer rows, no ceiling on the CPU)
            continue
        if used + need <= width or len(kept) < 4:
            kept.append(name)
            used += need
    return kept


def _bench_title(meta) -> str:
    ceiling = f"ceiling {meta.ceiling.gbps:.0f} GB/s ({human_bytes(meta.ceiling.bytes)} copy)" if meta.ceiling else "no ceiling"
    if meta.compute:
        tf32 = f", tf32 {meta.compute.tf32_tflops:.0f}" if meta.compute.tf32_tflops else ""
        ceiling += f", fp32 FMA {meta.compute.fma_tflops:.1f}{tf32} TFLOP/s"
    memory = ""
    if meta.memory:
        memory = (f" · memory: estimated {human_bytes(meta.memory.estimated_bytes)}, allocated "
                  f"{human_bytes(meta.memory.allocated_bytes)}, torch {human_bytes(meta.memory.torch_allocated_bytes)}, "
                  f"NVML {human_bytes(meta.memory.nvml_used_delta_bytes)}")
    host = ""
    if meta.host_reference:
        host = " · host cost per call: " + ", ".join(f"{op} {us:.1f} us" for op, us in meta.host_reference.items())
    ring = f" · ring {meta.runtime['history']} tokens" if meta.runtime.get('history') else ""
    return (f"{meta.spec_name} on {meta.device_name} · {meta.runtime.get('spec_scheme')}{ring} · {ceiling}{memory}{host}"
            f"{' · INTERRUPTED' if meta.interrupted else ''}{'' if meta.comparable else ' · CPU smoke run, not comparable'}")


def _skipped_lines(results) -> list[str]:
    lines = []
    for row in results.rows:
        if row.status != "ok":
            layer = "" if row.layer is None else f" layer {row.layer}"
            reason = " ".join((row.reason or "").split())  # one line, whatever the reason held
            lines.append(f"skipped {row.op} {row.kind}{layer} batch {row.batch} {row.impl}: {reason}")
    return lines


def page_width() -> int:
    """Columns of the terminal, or 240 when stdout is no terminal (piped output is never cut)."""
    import shutil

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else 240


def emit_bench(results, output: Path | None, fmt: str = "table") -> None:
    """Write a bench run to `output` (JSON, atomically) and print its table (or markdown) on stdout.

    The table keeps the columns that fit the page (most important first); skipped rows are listed under it,
    one line each.
    """
    from mcache.results.schema import dump

    if output is not None:
        write_file(output, dump(results))
    if fmt == "markdown":
        emit_text(bench_markdown(results))
        return
    copy_host = (results.meta.host_reference or {}).get("copy_")
    cells = [_bench_cells(row, copy_host) for row in results.rows if row.status == "ok"]
    head = bench_columns(cells, page_width()) if cells else []
    blocks: list = [_bench_title(results.meta)]
    if cells:
        blocks.append(text_table(tuple(head), [[c[name] for name in head] for c in cells],
                                 lambda i, name: name not in _BENCH_TEXT))
    print_blocks(blocks + _skipped_lines(results), None)


_MD_HEAD = ("op", "kind", "layer", "batch", "impl", "bytes", "device µs", "GB/s", "% ceiling", "matched copy µs",
            "% matched", "% roofline", "bound", "eager µs", "host µs", "host / copy_", "baseline µs", "speed-up")


def bench_markdown(results) -> str:
    """The kernel rows (mcache's kernels and sweep variants, each beside its baseline) as a markdown table."""
    meta = results.meta
    copy_host = (meta.host_reference or {}).get("copy_")
    base = {(r.op, r.kind, r.layer, r.batch): r for r in results.rows if r.impl.startswith("torch-") and r.status == "ok"}
    lines = []
    for r in results.rows:
        if r.status != "ok" or r.impl.startswith("torch-") or r.impl == "host":
            continue
        b = base.get((r.op, r.kind, r.layer, r.batch))
        c = _bench_cells(r, copy_host)
        lines.append([r.op, r.kind, c["layer"], c["batch"], r.impl, c["bytes"], c["device us"], c["GB/s"],
                      c["% ceiling"], _num(r.size_matched_us), c["% size-matched"], c["% roofline"], c["bound"],
                      c["eager us"], c["host us"],
                      c["host/copy_"], _num(b.median_us if b else None), c["speed-up"]])
    text = (f"# {_bench_title(meta)}\n\nTimer: {meta.timer}. Device µs: CUDA-graph replays; eager µs: one call with the "
            "GPU idle, launch included; host µs: the host's cost per call on a busy GPU; '% matched' = time of a "
            "contiguous copy moving the same bytes / kernel time; '% roofline' = the larger of the memory time (bytes at "
            "the ceiling) and the arithmetic time (at the FMA and tf32 rates measured in the run) / kernel time.\n\n")
    return text + markdown_table(_MD_HEAD, lines) + "\n" + "".join(f"\n{line}" for line in _skipped_lines(results))
