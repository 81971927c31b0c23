"""Plain-text tables for the terminal (no colour codes; safe to pipe)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from itertools import repeat

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


def column_table(headers: Sequence[str], columns: Sequence[Sequence[str]], align: str | None = None,
                 width: int | None = None) -> str:
    """A table of ``columns`` (each the same length) under ``headers``: text columns left-aligned, the others
    right-aligned (``align`` gives 'l'/'r' per column), laid out a column at a time. A header may hold several
    lines (``"bytes\\nacked"``: what it counts under its name).

    With ``width``, a table wider than that is split into blocks of whole columns, each repeating the first
    column, so that no cell is ever wrapped (``cli.score_table`` does the same for the score table)."""
    align = align or "l" * len(headers)
    head = [h.split("\n") for h in headers]
    depth = max(map(len, head), default=1)
    head = [h + [""] * (depth - len(h)) for h in head]
    widths = [max(*map(len, h), max(map(len, col), default=0)) for h, col in zip(head, columns, strict=True)]
    rest = column_blocks([w + 2 for w in widths[1:]], widths[0], width) if width else [list(range(len(widths) - 1))]
    blocks = [[i + 1 for i in b] for b in rest]

    def justified(i: int) -> Iterator[str]:
        """Column ``i``'s header lines and cells, each padded to the column's width."""
        return map(str.ljust if align[i] == "l" else str.rjust, [*head[i], *columns[i]], repeat(widths[i]))

    parts = []
    for block in blocks:
        cols = [0, *block]
        lines = map(str.rstrip, map("  ".join, zip(*map(justified, cols), strict=True)))
        parts.append("\n".join([*(next(lines) for _ in range(depth)), "  ".join("-" * widths[i] for i in cols),
                                *lines]))
    return "\n".join(parts)


def num(x: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "-" if x is None else f"{x * scale:.{digits}f}"
