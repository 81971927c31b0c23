"""Plain-text tables for the terminal (no colour codes; safe to pipe)."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> str:
    """Left-align text columns and right-align the others (``align`` gives 'l'/'r' per column)."""
    align = align or "l" * len(headers)
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def fmt(cells: Sequence[str]) -> str:
        out = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align, strict=True)]
        return "  ".join(out).rstrip()

    lines = [fmt(headers), "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in rows]
    return "\n".join(lines)


def num(x: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "-" if x is None else f"{x * scale:.{digits}f}"
