"""The score table and its legend are laid out as rich lays them out (``cli/score_table.py`` writes the layout
itself, to spare a short command rich's import): both are compared with rich's rendering of the same table on
random contents and every width from 20 to 200 columns."""

from __future__ import annotations

import io
import random

import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from ackreplay.cli.render import column_blocks
from ackreplay.cli.score_table import LEGEND, NOT_REPRODUCIBLE_MARK, block_table, legend


def rich_block_table(first: str, names: list[str], headers: list[tuple[str, str]], cells: list[list[str]],
                     width: int | None) -> str:
    """What ``block_table`` printed through rich (its code before the layout was written out)."""
    pad = 3
    first_w = max([len(first)] + [len(n) for n in names]) + pad
    widths = [max(len(h[0]), len(h[1]), *(len(r[i]) for r in cells)) + pad for i, h in enumerate(headers)]
    blocks = column_blocks(widths, first_w, width) if width else [list(range(len(headers)))]
    out = io.StringIO()
    console = Console(file=out, width=max(width or 0, first_w + max(sum(widths[i] for i in b) for b in blocks) + 2),
                      color_system=None, highlight=False, emoji=False, markup=False)
    for block in blocks:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=False)
        table.add_column(first, no_wrap=True, min_width=first_w - pad)
        for i in block:
            table.add_column(f"{headers[i][0]}\n{headers[i][1]}", justify="right", no_wrap=True,
                             min_width=widths[i] - pad)
        for name, row in zip(names, cells, strict=True):
            table.add_row(name, *(row[i] for i in block))
        console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").splitlines())


def rich_legend(width: int | None, truth: bool, not_reproducible: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width or 200, color_system=None, highlight=False, emoji=False, markup=False)
    table = Table(box=None, show_header=False, pad_edge=False, title=None)
    table.add_column(no_wrap=True)
    table.add_column()
    left_out = {"vs truth"} if not truth else set()
    if not not_reproducible:
        left_out.add(NOT_REPRODUCIBLE_MARK.strip())
    for key, text in LEGEND:
        if key not in left_out:
            table.add_row(key, text)
    console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").splitlines())


def random_table(rng: random.Random) -> tuple[list[str], list[tuple[str, str]], list[list[str]]]:
    names = [rng.choice(["be", "abse", "westwood_plus", "newreno (n/r)", "x"]) for _ in range(rng.randint(1, 6))]
    headers = [(rng.choice(["mean", "bias", "|err|", "ss/ideal", ">NewReno", "c"]),
                rng.choice(["Mbit/s", "(E-R)/R", "", "share", "s"])) for _ in range(rng.randint(1, 12))]
    cells = [[rng.choice(["-", "7.46 ", "0.1*", "-0.200 ", "12345.678*", ""]) for _ in headers] for _ in names]
    return names, headers, cells


@pytest.mark.parametrize("seed", range(40))
def test_the_score_table_is_riches(seed: int) -> None:
    rng = random.Random(seed)
    names, headers, cells = random_table(rng)
    for width in (None, *range(20, 201, 7)):
        assert block_table("estimator", names, headers, cells, width) == \
            rich_block_table("estimator", names, headers, cells, width), (seed, width)


@pytest.mark.parametrize("truth", [True, False])
@pytest.mark.parametrize("not_reproducible", [True, False])
def test_the_legend_is_riches(truth: bool, not_reproducible: bool) -> None:
    for width in (None, *range(20, 201)):
        assert legend(width, truth=truth, not_reproducible=not_reproducible) == \
            rich_legend(width, truth, not_reproducible), width
