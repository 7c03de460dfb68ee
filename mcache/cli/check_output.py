"""`mcache compare`'s and `mcache size --verify`'s tables."""

from __future__ import annotations

from pathlib import Path

from mcache.cli.output import emit_json, emit_text, markdown_table, print_blocks, safe_text, text_table

_VERDICT_MARK = {"regression": "❌ regression", "improvement": "✅ improvement"}


_COMPARE_HEAD = ("benchmark", "base (us)", "new (us)", "Δ%", "Δ eager", "Δ host", "verdict")


def _compare_cells(change) -> list[str]:
    def us(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:+.1f}%"

    verdict = _VERDICT_MARK.get(change.verdict, change.verdict)
    which = [name for name, v in change.verdicts.items() if v == change.verdict]
    if change.verdict in ("regression", "improvement", "slower", "faster") and which != ["device"]:
        verdict += f" ({', '.join(which)})"
    return [change.key, us(change.base_us), us(change.new_us), pct(change.delta_pct), pct(change.eager_delta_pct),
            pct(change.host_delta_pct), verdict]


def emit_comparison(comparison, fmt: str, output: Path | None) -> None:
    """Render a `mcache compare` result: a table, a Markdown table for PR comments, or JSON."""
    regressions = len(comparison.regressions)
    summary = (f"{comparison.new} vs {comparison.base}: {len(comparison.changes)} rows, {regressions} regression(s) "
               f"beyond {comparison.threshold_pct:g}%")
    if fmt == "json":
        import msgspec

        data = msgspec.to_builtins(comparison)
        data["regressions"] = regressions
        emit_json(data, output)
    elif fmt == "markdown":
        rows = [_compare_cells(c) for c in comparison.changes]
        notes = "".join(f"\n\nnote: {safe_text(note, one_line=True)}" for note in comparison.notes)
        emit_text(f"**{summary}**{notes}\n\n{markdown_table(_COMPARE_HEAD, rows)}\n", output)
    else:
        table = text_table(_COMPARE_HEAD, [_compare_cells(c) for c in comparison.changes], lambda i, head: 0 < i < 6)
        print_blocks([summary, *(f"note: {safe_text(note, one_line=True)}" for note in comparison.notes), table], output)


_VERIFY_HEAD = ("stage", "buffer", "component", "estimated", "allocated", "difference")


def emit_verify(model: str, device: str, layout: str, rows, fmt: str, output: Path | None) -> None:
    """Render `mcache size --verify`: per buffer, the estimate, the bytes allocated and the difference."""
    bad = sum(1 for r in rows if r.difference)
    summary = (f"{model}: {len(rows)} buffers allocated on {device} ({layout}-major pools), "
               f"{'no differences' if not bad else f'{bad} differ'}")
    cells = [[str(r.stage), r.key, r.component, str(r.estimated), str(r.allocated), f"{r.difference:+d}"] for r in rows]
    if fmt == "json":
        emit_json({"model": model, "device": device, "pool_layout": layout, "differences": bad,
                   "rows": [dict(zip(_VERIFY_HEAD, (r.stage, r.key, r.component, r.estimated, r.allocated,
                                                    r.difference), strict=True)) for r in rows]}, output)
    elif fmt in ("markdown", "csv"):
        emit_text(f"**{summary}**\n\n{markdown_table(_VERIFY_HEAD, cells)}" if fmt == "markdown"
                  else "\n".join(",".join(c) for c in [list(_VERIFY_HEAD), *cells]), output)
    else:
        table = text_table(_VERIFY_HEAD, cells, lambda i, head: i >= 3)
        print_blocks([summary, table], output)
