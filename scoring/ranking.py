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
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

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


#: The bootstrap of every board's medians: resamples, the interval's confidence, and its seed (fixed: a board is
#: the same every time it is computed).
RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 0
#: Under this many flows a figure's interval is too rough to trust (a percentile interval of a median from fewer
#: than ten values spans most of them): the board warns.
MIN_FLOWS = 10


def bootstrap_medians(xs: Sequence[float], groups: Sequence[Any] | None = None) -> np.ndarray:
    """:data:`RESAMPLES` bootstrap medians of ``xs`` (seeded: deterministic): resampling the values, or, with
    ``groups`` (one label per value: its capture), whole groups — the captures of a board, whose flows are not
    independent of each other. Each resample is a weight per value (how often it was drawn) and its median the
    weighted one (the smallest value with half the weight at or below it)."""
    x = np.asarray(xs, np.float64)
    if not len(x):
        return np.full(RESAMPLES, np.nan)
    rng = np.random.default_rng(SEED)
    if groups is None:
        w = rng.multinomial(len(x), np.full(len(x), 1 / len(x)), size=RESAMPLES)
    else:
        labels, member = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
        w = rng.multinomial(len(labels), np.full(len(labels), 1 / len(labels)), size=RESAMPLES)[:, member]
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(w[:, order], axis=1)
    at = (cum >= cum[:, -1:] / 2).argmax(axis=1)
    return x[order][at]


def interval(medians: np.ndarray) -> tuple[float, float] | None:
    """The percentile interval (:data:`CONFIDENCE`) of bootstrap medians; None when there are none."""
    m = medians[np.isfinite(medians)]
    if not len(m):
        return None
    a = (1 - CONFIDENCE) / 2
    return float(np.quantile(m, a)), float(np.quantile(m, 1 - a))


def _ties(entries: dict[str, dict[str, Any]], key_of: Any, boots: Mapping[str, np.ndarray]) -> None:
    """Each ranked estimator's ``ties``: the others whose interval of the ranking key (``key_of`` of the bootstrap
    medians: the distance to the best value) overlaps its own — their order may be chance."""
    spans = {}
    for n, b in boots.items():
        got = interval(np.asarray([key_of(v) for v in b], np.float64)) if "rank" in entries[n] else None
        if got is not None:
            spans[n] = got
    for n, (lo, hi) in spans.items():
        entries[n]["ties"] = sorted(m for m, (a, b) in spans.items() if m != n and a <= hi and lo <= b)


def board(per_flow: Mapping[Any, Mapping[str, Mapping[str, Any]]], *, include_not_reproducible: bool = False,
          incomparable: Collection[Any] = (), include_incomparable: bool = False,
          groups: Mapping[Any, Any] | None = None) -> dict[str, Any]:
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
    everything unless ``include_incomparable``; ``incomparable`` counts them either way.

    Statistics: each median has a bootstrap interval (``ci``, :data:`CONFIDENCE`; over flows, or over the
    captures when ``groups`` maps each flow key to its capture), ``flows`` says how many flows are behind it and
    ``few`` that they are under :data:`MIN_FLOWS`; a ranked estimator lists in ``ties`` those whose interval
    overlaps its own. The board's ``warning`` says when it rests on fewer than :data:`MIN_FLOWS` flows."""
    names = sorted({e for f in per_flow.values() for e in f})  # (listed even when every flow is left out)
    left = set(incomparable) & set(per_flow)
    if left and not include_incomparable:
        per_flow = {k: v for k, v in per_flow.items() if k not in left}
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
        entries, boots = _entries(flows, names, score, wins, won, groups)
        if ranked:
            keys = {n: key_of(e["median"]) for n, e in entries.items() if e["median"] is not None}
            for n, k in keys.items():  # competition ranking: equal medians share a rank
                entries[n]["rank"] = 1 + sum(other < k for other in keys.values())
            _ties(entries, key_of, boots)
        out[score] = {"better": better, "ranked": ranked, "meaning": meaning, "estimators": entries}
    few = len(per_flow) < MIN_FLOWS
    return {"flows": len(per_flow), "estimators": names, "include_not_reproducible": include_not_reproducible,
            "left_out": {n: c for n, c in left_out.items() if c}, "incomparable": len(left),
            "include_incomparable": include_incomparable, "confidence": CONFIDENCE, "resamples": RESAMPLES,
            "min_flows": MIN_FLOWS, "resampled": "captures" if groups is not None else "flows",
            "warning": f"{len(per_flow)} flow(s), under {MIN_FLOWS}: the intervals are rough and the ranks may "
                       f"be chance" if few else None, "scores": out}


def _entries(flows: Mapping[Any, Mapping[str, Mapping[str, Any]]], names: Sequence[str], score: str,
             wins: Mapping[str, int], won: Mapping[str, list[Any]], groups: Mapping[Any, Any] | None
             ) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
    """Each estimator's statistics of one score over the flows (:func:`board`), and its bootstrap medians."""
    entries: dict[str, dict[str, Any]] = {}
    boots: dict[str, np.ndarray] = {}
    for n in names:
        keys = [k for k, f in flows.items() if n in f and isinstance(f[n].get(score), int | float)
                and not (score == "closer_than_newreno_share" and n == "newreno")]
        xs = [float(flows[k][n][score]) for k in keys]
        q1, med, q3 = quartiles(xs) if xs else (None, None, None)
        if xs:
            boots[n] = bootstrap_medians(xs, [groups[k] for k in keys] if groups is not None else None)
        ci = interval(boots[n]) if xs else None
        entries[n] = {"mean": sum(xs) / len(xs) if xs else None, "median": med, "q1": q1, "q3": q3,
                      "ci": list(ci) if ci is not None else None, "flows": len(xs), "few": len(xs) < MIN_FLOWS,
                      "wins": wins[n], "won_flows": won[n]}
    return entries, boots
