"""A sweep's sensitivity plot: each key score of each variant against the swept parameter.

One PNG per swept estimator and parameter (``sensitivity_re_tau.png``), one panel per score, one line per
bulk flow plus the median over them (thick). Written by ``ackreplay score --out`` when ``-p`` sweeps.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

#: The scores plotted (docs/scores.md §5), with their axis labels.
SCORES = (("mean_signed_rel_error", "bias (E−R)/R"), ("mean_abs_rel_error", "|E−R|/R"), ("cov", "cov"),
          ("ssthresh_over_ideal_median", "ssthresh/ideal (median)"))


class SensitivityPoints(NamedTuple):
    """A score of each variant: per flow (a row each), and the median over the flows."""

    per_flow: list[list[float]]
    medians: list[float]


def sensitivity_points(flows: Sequence[dict[str, dict[str, Any]]], variants: Sequence[tuple[str, float]],
                       score: str) -> SensitivityPoints:
    """Per flow and for the median over flows, the score of each variant (NaN where none), in ``variants``'
    order (name, parameter value)."""
    per_flow = [[_num(f.get(name, {}).get(score)) for name, _ in variants] for f in flows]
    medians = []
    for i in range(len(variants)):
        vals = [row[i] for row in per_flow if not math.isnan(row[i])]
        medians.append(statistics.median(vals) if vals else math.nan)
    return SensitivityPoints(per_flow, medians)


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def write_sensitivity(out: Path, estimator: str, param: str, variants: Sequence[tuple[str, Any]],
                      flows: Sequence[dict[str, dict[str, Any]]]) -> Path | None:
    """Plot the swept ``param`` of ``estimator`` (numbers only; a swept string or bool is not plotted)."""
    points = [(name, float(v)) for name, v in variants if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(points) < 2 or not flows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points.sort(key=lambda p: p[1])
    xs = [x for _, x in points]
    fig, axes = plt.subplots(1, len(SCORES), figsize=(4 * len(SCORES), 3.4), constrained_layout=True)
    for ax, (score, label) in zip(axes, SCORES, strict=True):
        per_flow, medians = sensitivity_points(flows, points, score)
        for row in per_flow:
            ax.plot(xs, row, color="#9aa7b8", linewidth=0.8, marker=".", alpha=0.7)
        ax.plot(xs, medians, color="#1f4e99", linewidth=2.2, marker="o", label="median over bulk flows")
        ax.set_xlabel(f"{estimator}.{param}")
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{estimator}: sensitivity to {param} ({len(flows)} bulk flows)", fontsize=11)
    path = out / f"sensitivity_{estimator}_{param}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
