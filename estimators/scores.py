"""Scores (ESTIMATORS.md §5): time-weighted statistics of an estimate against a reference.

Each value holds from its event to the next, so a statistic over time weights it by that interval
(a plain mean over ACK rows would over-weight high-rate stretches, where ACKs are dense). Where the
reference is 0 or unknown, relative errors skip that stretch. Rates in the results are bits/s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numba import njit

TOLERANCE = 0.10  # ±10 % for over/under shares and convergence
CONVERGENCE_HOLD = 1.0  # s within tolerance to count as converged

SERIES_SCORES = ("mean_bps", "median_bps", "mean_signed_rel_error", "mean_abs_rel_error", "nrmse", "over_share",
                 "under_share", "cov", "convergence_s")
RELATIVE_SCORES = ("mean_signed_rel_error", "mean_abs_rel_error", "nrmse", "over_share", "under_share",
                   "convergence_s")
DECISION_SCORES = ("decisions", "ssthresh_over_ideal_mean", "ssthresh_over_ideal_median",
                   "newreno_over_ideal_median", "closer_than_newreno_share")


def time_weights(t: np.ndarray, start: float, end: float) -> np.ndarray:
    """Weight of each event: how long its value holds inside [start, end]."""
    if len(t) == 0:
        return np.empty(0)
    nxt = np.append(t[1:], t[-1])
    return np.clip(nxt, start, end) - np.clip(t, start, end)


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    return float(v[np.searchsorted(cum, cum[-1] / 2)])


def relative_scores(t: np.ndarray, est: np.ndarray, ref: np.ndarray, w: np.ndarray, start: float) -> dict:
    ok = (w > 0) & ~np.isnan(est) & ~np.isnan(ref) & (ref > 0)
    out: dict[str, float | None] = dict.fromkeys(RELATIVE_SCORES)
    if ok.any() and w[ok].sum() > 0:
        ww = w[ok]
        e, r = est[ok], ref[ok]
        rel = (e - r) / r
        total = ww.sum()
        out["mean_signed_rel_error"] = _num(float((ww * rel).sum() / total))
        out["mean_abs_rel_error"] = _num(float((ww * np.abs(rel)).sum() / total))
        mean_r = float((ww * r).sum() / total)
        out["nrmse"] = _num(math.sqrt(float((ww * (e - r) ** 2).sum() / total)) / mean_r)
        out["over_share"] = _num(float(ww[rel > TOLERANCE].sum() / total))
        out["under_share"] = _num(float(ww[rel < -TOLERANCE].sum() / total))
    out["convergence_s"] = convergence(t, est, ref, start)
    return out


def convergence(t: np.ndarray, est: np.ndarray, ref: np.ndarray, start: float) -> float | None:
    """Time from ``start`` to first enter, and stay for ``CONVERGENCE_HOLD`` s, within ±10 % of the reference."""
    with np.errstate(invalid="ignore", divide="ignore"):
        inside = (np.abs(est - ref) <= TOLERANCE * ref) & (ref > 0) & (t >= start)
    k = _converged_at(np.asarray(t, np.float64), inside, CONVERGENCE_HOLD)
    return None if k < 0 else float(t[k] - start)


@njit(cache=True)
def _converged_at(t: np.ndarray, inside: np.ndarray, hold: float) -> int:
    """Index of the first event of the first run of ``inside`` events lasting ``hold`` s (each event's
    value holding until the next event), or -1."""
    run = -1
    for k in range(len(t)):
        if inside[k]:
            if run < 0:
                run = k
            nxt = t[k + 1] if k + 1 < len(t) else t[k]
            if nxt - t[run] >= hold:
                return run
        else:
            run = -1
    return -1


def series_scores(t: np.ndarray, est: np.ndarray, ref: np.ndarray, start: float, end: float,
                  truth: np.ndarray | None) -> dict[str, Any]:
    """Every §5 score over time of one estimate (bytes/s in, bits/s out)."""
    w = time_weights(t, start, end)
    ok = (w > 0) & ~np.isnan(est)
    out: dict[str, Any] = {"mean_bps": None, "median_bps": None, "cov": None}
    if ok.any() and w[ok].sum() > 0:
        e, ww = est[ok], w[ok]
        mean = float((ww * e).sum() / ww.sum())
        out["mean_bps"] = _num(8 * mean)
        out["median_bps"] = _num(8 * weighted_median(e, ww))
        var = float((ww * (e - mean) ** 2).sum() / ww.sum())
        out["cov"] = _num(math.sqrt(var) / mean) if mean > 0 else None
    out.update(relative_scores(t, est, ref, w, start))
    if truth is not None:
        for k, v in relative_scores(t, est, truth, w, start).items():
            out[f"{k}_truth"] = v
    return out


def decision_scores(ratios: Sequence[float | None], newreno_ratios: Sequence[float | None],
                    closer: Sequence[bool | None], suffix: str = "") -> dict[str, Any]:
    r = np.array([x for x in ratios if x is not None], float)
    nr = np.array([x for x in newreno_ratios if x is not None], float)
    c = [x for x in closer if x is not None]
    out = {
        f"ssthresh_over_ideal_mean{suffix}": _num(float(r.mean())) if len(r) else None,
        f"ssthresh_over_ideal_median{suffix}": _num(float(np.median(r))) if len(r) else None,
        f"newreno_over_ideal_median{suffix}": _num(float(np.median(nr))) if len(nr) else None,
        f"closer_than_newreno_share{suffix}": float(np.mean(c)) if c else None,
    }
    if not suffix:
        out["decisions"] = len(r)
    return out


def jain(values: Iterable[float | None]) -> float | None:
    """Jain's fairness index (Σx)²/(n·Σx²); None with fewer than two values."""
    x = np.array([v for v in values if v is not None and math.isfinite(v)], float)
    if len(x) < 2 or (x**2).sum() == 0:
        return None
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def aggregate(per_flow: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean of every numeric score over flows (None where no flow has it), plus the number of flows."""
    keys: list[str] = []
    for s in per_flow:
        keys += [k for k in s if k not in keys and k != "parameters"]
    out: dict[str, Any] = {"flows": len(per_flow)}
    for k in keys:
        vals = [s[k] for s in per_flow if isinstance(s.get(k), int | float) and s.get(k) is not None]
        out[k] = float(np.mean(vals)) if vals else None
    return out
