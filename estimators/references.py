"""What the estimates are scored against (ESTIMATORS.md §4): the achieved rate and the truth."""

from __future__ import annotations

import numpy as np

from estimators.search import searchsorted_right
from estimators.truth import Truth


def achieved_rate(t: np.ndarray, acked: np.ndarray, window: float) -> np.ndarray:
    """``Σ_{t_j > t − W} acked_j / min(W, t − t_first)`` in bytes/s at every event (NaN at the first).

    The first event's bytes are not counted (the interval starts at the first ACK).
    """
    n = len(t)
    out = np.full(n, np.nan)
    if n < 2:
        return out
    cum = np.concatenate(([0], np.cumsum(acked[1:])))  # cum[k] = Σ acked[1..k]
    lo = searchsorted_right(t, t - window)  # first event inside (t − W, t]
    lo = np.maximum(lo, 1)
    total = cum - cum[lo - 1]
    span = np.minimum(window, t - t[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        out[1:] = total[1:] / span[1:]
    return out


def active_counts(at_abs: np.ndarray, delivery_times: list[np.ndarray], window: float) -> np.ndarray:
    """How many of the flows delivered data in (t − W, t] at each absolute time ``at_abs``."""
    count = np.zeros(len(at_abs), np.int64)
    for times in delivery_times:
        if len(times) == 0:
            continue
        hi = np.searchsorted(times, at_abs, side="right")
        lo = np.searchsorted(times, at_abs - window, side="right")
        count += hi > lo
    return count


def truth_rate(truth: Truth, flow_id: int, at_abs: np.ndarray, bulk_deliveries: list[np.ndarray],
               window: float) -> np.ndarray:
    """The true fair share (bytes/s) at each time for one flow."""
    if flow_id in truth.flows:
        return np.full(len(at_abs), truth.flows[flow_id] / 8)
    if truth.fair_share_bps is not None and truth.bottleneck_bps is None:
        return np.full(len(at_abs), truth.fair_share_bps / 8)
    assert truth.bottleneck_bps is not None
    if truth.shared_by == "each":
        return np.full(len(at_abs), truth.bottleneck_bps / 8)
    active = np.maximum(active_counts(at_abs, bulk_deliveries, window), 1)
    return truth.bottleneck_bps / 8 / active
