"""The comparison table of ``ackreplay score``: estimators as rows, key scores as columns, best marked."""

from __future__ import annotations

from typing import Any

from cli.render import table

# (score key, header, scale, digits, what "best" means: "zero" | "min" | "max" | "one" | None)
COLUMNS: tuple[tuple[str, str, float, int, str | None], ...] = (
    ("mean_bps", "mean Mbit/s", 1e-6, 3, None),
    ("mean_signed_rel_error", "bias", 1.0, 3, "zero"),
    ("mean_abs_rel_error", "|err|", 1.0, 3, "min"),
    ("over_share", "over", 1.0, 2, None),  # one-sided shares: never marked best alone (estimators.ranking)
    ("under_share", "under", 1.0, 2, None),
    ("cov", "cov", 1.0, 2, "min"),
    ("convergence_s", "conv s", 1.0, 2, "min"),
    ("ssthresh_over_ideal_median", "ss/ideal", 1.0, 2, "one"),
    ("closer_than_newreno_share", ">NewReno", 1.0, 2, "max"),
)
TRUTH_COLUMNS = (
    ("mean_signed_rel_error_truth", "bias(truth)", 1.0, 3, "zero"),
    ("mean_abs_rel_error_truth", "|err|(truth)", 1.0, 3, "min"),
)


def _best(values: list[float | None], how: str | None) -> set[int]:
    pts = [(i, v) for i, v in enumerate(values) if v is not None]
    if not how or not pts:
        return set()
    key = {"zero": lambda v: abs(v), "min": lambda v: v, "max": lambda v: -v, "one": lambda v: abs(v - 1)}[how]
    best = min(key(v) for _, v in pts)
    return {i for i, v in pts if abs(key(v) - best) <= 1e-12}


def score_table(scores: dict[str, dict[str, Any]], with_truth: bool) -> str:
    names = [n for n in scores if n != "fairness"]
    cols = COLUMNS + (TRUTH_COLUMNS if with_truth else ())
    rows = [[n] for n in names]
    for key, _, scale, digits, how in cols:
        vals = [scores[n].get(key) for n in names]
        if key == "closer_than_newreno_share" and "newreno" in names:
            vals[names.index("newreno")] = None  # NewReno against itself means nothing
        best = _best(vals, how)
        for i, v in enumerate(vals):
            cell = "-" if v is None else f"{v * scale:.{digits}f}"
            rows[i].append(cell + ("*" if i in best and len(names) > 1 else " "))
    return table(["estimator"] + [c[1] for c in cols], rows, "l" + "r" * len(cols))
