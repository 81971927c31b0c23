"""Plain-text tables for the terminal (no colour codes; safe to pipe)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

#: The width tables fit when stdout is not a terminal (and the default everywhere else).
DEFAULT_WIDTH = 80


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` when set; 80 when stdout is not a terminal)."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def column_blocks(widths: Sequence[int], first: int, width: int) -> list[list[int]]:
    """Column indices per block: as many whole columns (each ``widths[i]`` wide, separators included) as fit
    in ``width`` beside a first column ``first`` wide that every block repeats."""
    blocks: list[list[int]] = [[]]
    used = first
    for i, w in enumerate(widths):
        if blocks[-1] and used + w > width:
            blocks.append([])
            used = first
        blocks[-1].append(i)
        used += w
    return blocks


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None,
          width: int | None = None) -> str:
    """Left-align text columns and right-align the others (``align`` gives 'l'/'r' per column).

    With ``width``, a table wider than that is split into blocks of whole columns, each repeating the first
    column, so that no cell is ever wrapped (``cli.score_table`` does the same for the score table)."""
    align = align or "l" * len(headers)
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    rest = column_blocks([w + 2 for w in widths[1:]], widths[0], width) if width else [list(range(len(widths) - 1))]
    blocks = [[i + 1 for i in b] for b in rest]

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
