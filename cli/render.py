"""Plain-text tables for the terminal (no colour codes; safe to pipe)."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None,
          width: int | None = None) -> str:
    """Left-align text columns and right-align the others (``align`` gives 'l'/'r' per column).

    With ``width``, a table wider than that is split into blocks of whole columns, each repeating the first
    column, so that no cell is ever wrapped (``cli.score_table`` does the same for the score table)."""
    align = align or "l" * len(headers)
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for i in range(1, len(headers)):
        if width and blocks[-1] and used + 2 + widths[i] > width:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(i)
        used += 2 + widths[i]

    def fmt(cells: Sequence[str], cols: list[int]) -> str:
        out = [cells[i].ljust(widths[i]) if align[i] == "l" else cells[i].rjust(widths[i]) for i in cols]
        return "  ".join(out).rstrip()

    parts = []
    for block in blocks:
        cols = [0, *block]
        lines = [fmt(headers, cols), "  ".join("-" * widths[i] for i in cols)]
        lines += [fmt(r, cols) for r in rows]
        parts.append("\n".join(lines))
    return "\n".join(parts)


def num(x: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "-" if x is None else f"{x * scale:.{digits}f}"
