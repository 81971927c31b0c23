"""What the estimates are scored against (docs/scores.md §4): the achieved rate and the truth."""

from __future__ import annotations

import numpy as np

from ackreplay.jitcache.kernel_mode import njit
from ackreplay.scoring.truth import Truth


@njit(cache=True, nogil=True, error_model="numpy")
def achieved_into(t: np.ndarray, acked: np.ndarray, window: float, out: np.ndarray) -> None:
    """``Σ_{t_j > t − W} acked_j / min(W, t − t_first)`` in bytes/s at every event but the first, written to
    ``out`` (the first event's bytes are not counted: the interval starts at the first ACK). ``t`` strictly
    increasing (one per event), ``acked`` whole bytes, ``window`` > 0.

    One pass with a sliding window: the bytes of the events in (t_k − W, t_k] (from the second event on)
    are an exact integer sum, divided as numpy divides an int64 by a float64 (a zero span gives inf or NaN).
    Prefix sums and a search per event would hold ~8 flow-sized arrays at once."""
    lo = 1  # first event inside the window (never the first event)
    total = 0
    for k in range(1, len(t)):
        total += acked[k]
        key = t[k] - window
        while lo < k and t[lo] <= key:  # (t[k] > t[k] − W: the window always holds event k)
            total -= acked[lo]
            lo += 1
        out[k] = total / min(window, t[k] - t[0])


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
