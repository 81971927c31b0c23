"""The comparison table of ``ackreplay score``: estimators as rows, key scores as columns, best marked.

Plain text (no colour codes: safe to pipe) to fit a given width: when the columns do not fit, the table is split
into blocks of whole columns, each repeating the estimator column, so that no number is ever wrapped. Headers carry
their unit; :data:`LEGEND` says what each column is, printed once under the tables. The layout is rich's (a
``SIMPLE_HEAD`` table; a borderless two-column one for the legend), written out here because importing rich costs
~0.05 s of a short command (``tests/test_score_table.py`` checks the text is rich's).
"""

from __future__ import annotations

import textwrap
from typing import Any, NamedTuple

from ackreplay.cli.render import DEFAULT_WIDTH, column_blocks

#: After an estimator's name where its scores are not reproducible from the flow's vantage (they depend on when the
#: ACKs reached the sender, which a capture elsewhere does not show).
NOT_REPRODUCIBLE_MARK = " (n/r)"

# (score key, header (name, unit), scale, digits, what "best" means: "zero" | "min" | "max" | "one" | None)
COLUMNS: tuple[tuple[str, tuple[str, str], float, int, str | None], ...] = (
    ("mean_bps", ("mean", "Mbit/s"), 1e-6, 3, None),
    ("mean_signed_rel_error", ("bias", "(E-R)/R"), 1.0, 3, "zero"),
    ("mean_abs_rel_error", ("|err|", "|E-R|/R"), 1.0, 3, "min"),
    ("over_share", ("over", "share"), 1.0, 2, None),  # one-sided shares: never marked best alone (ranking)
    ("under_share", ("under", "share"), 1.0, 2, None),
    ("cov", ("cov", "sd/mean"), 1.0, 2, "min"),
    ("convergence_s", ("conv", "s"), 1.0, 2, "min"),
    ("ssthresh_over_ideal_median", ("ss/ideal", "median"), 1.0, 2, "one"),
    ("closer_than_newreno_share", (">NewReno", "share"), 1.0, 2, "max"),
)
TRUTH_COLUMNS = (
    ("mean_signed_rel_error_truth", ("bias", "vs truth"), 1.0, 3, "zero"),
    ("mean_abs_rel_error_truth", ("|err|", "vs truth"), 1.0, 3, "min"),
)
#: What each column is (docs/scores.md §5), printed once under the tables.
LEGEND: tuple[tuple[str, str], ...] = (
    ("mean", "time-weighted mean estimate E (Mbit/s)"),
    ("bias", "time-weighted mean of (E-R)/R, R = the achieved rate (best: 0)"),
    ("|err|", "time-weighted mean of |E-R|/R (best: lowest)"),
    ("over/under", "share of time E is >10 % above/below R (shown, never ranked alone)"),
    ("cov", "coefficient of variation of E (best: lowest)"),
    ("conv", "seconds until E stays within 10 % of R (best: lowest)"),
    ("ss/ideal", "median ssthresh at loss events / (R x RTTmin) (best: 1)"),
    (">NewReno", "share of loss events whose ssthresh is closer to the ideal than NewReno's (best: highest)"),
    ("vs truth", "the same against the ground truth's fair share"),
    ("*", "the best value of the column"),
    (NOT_REPRODUCIBLE_MARK.strip(), "not reproducible from this flow's vantage: the estimate depends on when the ACKs "
     "reached the sender (BE, CRB off the sender); never marked best, left out of the rankings"),
)


def _best(values: list[float | None], how: str | None) -> set[int]:
    pts = [(i, v) for i, v in enumerate(values) if v is not None]
    if not how or not pts:
        return set()
    key = {"zero": lambda v: abs(v), "min": lambda v: v, "max": lambda v: -v, "one": lambda v: abs(v - 1)}[how]
    best = min(key(v) for _, v in pts)
    return {i for i, v in pts if abs(key(v) - best) <= 1e-12}


class ScoreCells(NamedTuple):
    """A score table's content: its rows' estimator names, its column headers (name, unit) and its cells."""

    names: list[str]
    headers: list[tuple[str, str]]
    cells: list[list[str]]


def score_cells(scores: dict[str, dict[str, Any]], with_truth: bool, best: bool = True) -> ScoreCells:
    """The table's content: estimator names, column headers (name, unit) and cells (``*`` on the best, unless
    not ``best``: a flow the estimators cannot be compared on, ``scoring.comparable``)."""
    from ackreplay.scoring.ranking import NOT_REPRODUCIBLE  # (here: other commands start without the estimators)

    names = [n for n in scores if n != "fairness"]
    cols = COLUMNS + (TRUTH_COLUMNS if with_truth else ())
    cells: list[list[str]] = [[] for _ in names]
    off = {i for i, n in enumerate(names) if NOT_REPRODUCIBLE in scores[n]}  # never marked best (not reproducible)
    for key, _, scale, digits, how in cols:
        vals = [scores[n].get(key) for n in names]
        if key == "closer_than_newreno_share" and "newreno" in names:
            vals[names.index("newreno")] = None  # NewReno against itself means nothing
        marked = _best([None if i in off else v for i, v in enumerate(vals)], how) if best else set()
        for i, v in enumerate(vals):
            cell = "-" if v is None else f"{v * scale:.{digits}f}"
            cells[i].append(cell + ("*" if i in marked and len(names) > 1 else " "))
    return ScoreCells([n + NOT_REPRODUCIBLE_MARK if i in off else n for i, n in enumerate(names)],
                      [c[1] for c in cols], cells)


def score_table(scores: dict[str, dict[str, Any]], with_truth: bool, width: int | None = DEFAULT_WIDTH,
                best: bool = True) -> str:
    """The table as text no wider than ``width`` (None: one block however wide); ``best``: mark the best."""
    names, headers, cells = score_cells(scores, with_truth, best)
    return block_table("estimator", names, headers, cells, width)


def block_table(first: str, names: list[str], headers: list[tuple[str, str]], cells: list[list[str]],
                width: int | None = DEFAULT_WIDTH) -> str:
    """Rows ``names`` × columns ``headers`` (name, unit) as plain text no wider than ``width``: whole columns
    per block, the first column repeated in each, no cell ever wrapped or cut. Each block: the names, the units
    (and ``first``), a rule, the rows; the first column left-aligned, the others right-aligned (a cell's trailing
    space dropped, as rich drops it), three spaces between columns."""
    pad = 3  # the space between two columns
    first_w = max([len(first)] + [len(n) for n in names]) + pad
    widths = [max(len(h[0]), len(h[1]), *(len(r[i]) for r in cells)) + pad for i, h in enumerate(headers)]
    blocks = column_blocks(widths, first_w, width) if width else [list(range(len(headers)))]
    lines = []
    for block in blocks:
        sizes = [first_w - pad, *(widths[i] - pad for i in block)]
        names_row, units_row = ["", *(headers[i][0] for i in block)], [first, *(headers[i][1] for i in block)]
        for row in [names_row, units_row, None, *([n, *(r[i] for i in block)] for n, r in zip(names, cells,
                                                                                            strict=True))]:
            if row is None:
                lines.append("─" * (sum(sizes) + pad * (len(sizes) - 1)))
                continue
            rest = (c.rstrip().rjust(s) for c, s in zip(row[1:], sizes[1:], strict=True))
            lines.append((" " * pad).join([row[0].ljust(sizes[0]), *rest]))
    return "\n".join(line.rstrip() for line in lines)


def legend(width: int | None = DEFAULT_WIDTH, *, truth: bool = True, not_reproducible: bool = True) -> str:
    """What each column is, one line per column (wrapped to ``width``); the truth columns' line only with
    ``truth``, the not-reproducible mark's only with ``not_reproducible``."""
    left_out = {"vs truth"} if not truth else set()
    if not not_reproducible:
        left_out.add(NOT_REPRODUCIBLE_MARK.strip())
    rows = [(key, text) for key, text in LEGEND if key not in left_out]
    key_w = max(len(key) for key, _ in rows)
    text_w = max(1, min((width or 200) - key_w - 2, max(len(text) for _, text in rows)))
    lines = []
    for key, text in rows:  # wrapped at spaces to what is left of the width, a longer word cut with "…", as rich does
        parts = textwrap.wrap(text, text_w, break_on_hyphens=False, break_long_words=False) or [""]
        for i, part in enumerate(part if len(part) <= text_w else part[:text_w - 1] + "…" for part in parts):
            lines.append(f"{key if i == 0 else '':<{key_w}}  {part}".rstrip())
    return "\n".join(lines)
