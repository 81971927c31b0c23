"""What "best" means for each score, and the composite the leaderboards rank by.

Every score declares its direction: ``zero`` (a signed error: closest to 0 is best), ``min`` (an absolute
error or a cost: lowest), ``max`` (a share of wins: highest) or ``one`` (a ratio to the ideal: closest to
1). One-sided shares are never ranked alone: ``over_share`` and ``under_share`` are two halves of one
question — an estimator that over-estimates all the time has ``under_share`` 0 and would "win" it — so
they are reported but ranked only together, as ``off_share`` (the share of time outside ±10 %).

The leaderboard ranks by ``composite_error`` by default: per flow, the mean of the estimate's error and
the decision's error,

    composite_error = ( mean_abs_rel_error + |ln(ssthresh_over_ideal_median)| ) / 2

(either term alone when the other is missing: a flow without loss decisions is judged on its estimate),
and it shows the spread over flows (median and interquartile range), not only the mean. Lower is better.
An estimator that over-estimates everywhere has a large ``mean_abs_rel_error`` and ``mean_signed_rel_error``
and ssthresh above the ideal, so it cannot come first by any ranked score; only ``over_share`` (not
ranked) asks about over-estimation, and there it is the worst (``tests/test_ranking.py``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

#: The key, in an estimator's scores of one flow (and in the flow's diagnostics), that labels the estimator as not
#: reproducible from the flow's vantage, with the reason (``Estimator.not_reproducible``); absent where it is.
NOT_REPRODUCIBLE = "not_reproducible"

#: score → (what best means, ranked, what it measures)
DIRECTIONS: dict[str, tuple[str, bool, str]] = {
    "composite_error": ("min", True, "(|err| + |ln(ss/ideal)|)/2 per flow: the default ranking"),
    "mean_abs_rel_error": ("min", True, "time-weighted mean |E−R|/R"),
    "mean_signed_rel_error": ("zero", True, "time-weighted mean (E−R)/R (bias)"),
    "nrmse": ("min", True, "normalised RMS error"),
    "off_share": ("min", True, "share of time outside ±10 % (over + under)"),
    "over_share": ("min", False, "share of time above +10 % (one-sided: not ranked alone)"),
    "under_share": ("min", False, "share of time below −10 % (one-sided: not ranked alone)"),
    "cov": ("min", True, "coefficient of variation (stability)"),
    "convergence_s": ("min", True, "time to enter and stay within ±10 %"),
    "ssthresh_over_ideal_median": ("one", True, "median ssthresh/ideal at loss events"),
    "ssthresh_over_ideal_mean": ("one", True, "mean ssthresh/ideal at loss events"),
    "closer_than_newreno_share": ("max", True, "share of decisions closer to the ideal than NewReno's"),
}
#: the order of the leaderboard's rows: the default ranking first
ORDER = tuple(DIRECTIONS)


def derived(scores: Mapping[str, Any]) -> dict[str, float | None]:
    """The scores the ranking adds to a flow's: ``off_share`` and ``composite_error``."""
    over, under = scores.get("over_share"), scores.get("under_share")
    off = over + under if isinstance(over, int | float) and isinstance(under, int | float) else None
    err = scores.get("mean_abs_rel_error")
    ratio = scores.get("ssthresh_over_ideal_median")
    parts = [float(err)] if isinstance(err, int | float) and math.isfinite(err) else []
    if isinstance(ratio, int | float) and ratio > 0:
        parts.append(abs(math.log(ratio)))
    return {"off_share": off, "composite_error": sum(parts) / len(parts) if parts else None}


def sort_key(better: str) -> Any:
    """A key under which smaller is better."""
    return {"min": lambda v: v, "max": lambda v: -v, "zero": abs, "one": lambda v: abs(v - 1)}[better]


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) by linear interpolation."""
    s = sorted(xs)

    def q(p: float) -> float:
        pos = p * (len(s) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    return q(0.25), q(0.5), q(0.75)


def board(per_flow: Mapping[Any, Mapping[str, Mapping[str, Any]]], *, include_not_reproducible: bool = False,
          incomparable: Collection[Any] = (), include_incomparable: bool = False) -> dict[str, Any]:
    """The leaderboard over flows: ``per_flow`` maps a flow key to {estimator: its scores}. Per score (in
    ``ORDER``): its direction, whether it is ranked, and per estimator the mean, median and quartiles over
    flows, and — when ranked — the rank (by median; equal medians share a rank) and the flows it won.

    An estimator's scores on a flow that label it not reproducible from the flow's vantage (``not_reproducible``:
    BE and CRB off the sender: they read the ACKs' timing at the sender, which the return path changes unseen
    after any other capture point) are left out — of the statistics, the wins and so the ranks — unless
    ``include_not_reproducible``; ``left_out`` counts them per estimator either way (what was, or would be,
    left out), and ``include_not_reproducible`` says which it was.

    The flows keyed in ``incomparable`` (``scoring.comparable``: too little network-limited time or too few loss
    events for the estimators, or limited by the application or the receiver most of the time) are left out of
    everything unless ``include_incomparable``; ``incomparable`` counts them either way."""
    left = set(incomparable) & set(per_flow)
    if left and not include_incomparable:
        per_flow = {k: v for k, v in per_flow.items() if k not in left}
    names = sorted({e for f in per_flow.values() for e in f})
    left_out = {n: sum(1 for f in per_flow.values() if NOT_REPRODUCIBLE in f.get(n, {})) for n in names}
    flows = {key: {n: {**s, **derived(s)} for n, s in ests.items()
                   if include_not_reproducible or NOT_REPRODUCIBLE not in s} for key, ests in per_flow.items()}
    out: dict[str, Any] = {}
    for score in ORDER:
        better, ranked, meaning = DIRECTIONS[score]
        key_of = sort_key(better)
        wins = dict.fromkeys(names, 0)
        won: dict[str, list[Any]] = {n: [] for n in names}
        if ranked:
            for fkey, ests in flows.items():
                vals = {n: s.get(score) for n, s in ests.items() if isinstance(s.get(score), int | float)}
                if score == "closer_than_newreno_share":
                    vals.pop("newreno", None)  # NewReno against itself means nothing
                if vals:
                    best = min(key_of(v) for v in vals.values())
                    for n, v in vals.items():
                        if key_of(v) == best:
                            wins[n] += 1
                            won[n].append(fkey)
        entries: dict[str, dict[str, Any]] = {}
        for n in names:
            xs = [float(f[n][score]) for f in flows.values() if n in f and isinstance(f[n].get(score), int | float)
                  and not (score == "closer_than_newreno_share" and n == "newreno")]
            q1, med, q3 = quartiles(xs) if xs else (None, None, None)
            entries[n] = {"mean": sum(xs) / len(xs) if xs else None, "median": med, "q1": q1, "q3": q3,
                          "flows": len(xs), "wins": wins[n], "won_flows": won[n]}
        if ranked:
            keys = {n: key_of(e["median"]) for n, e in entries.items() if e["median"] is not None}
            for n, k in keys.items():  # competition ranking: equal medians share a rank
                entries[n]["rank"] = 1 + sum(other < k for other in keys.values())
        out[score] = {"better": better, "ranked": ranked, "meaning": meaning, "estimators": entries}
    return {"flows": len(per_flow), "estimators": names, "include_not_reproducible": include_not_reproducible,
            "left_out": {n: c for n, c in left_out.items() if c}, "incomparable": len(left),
            "include_incomparable": include_incomparable, "scores": out}
