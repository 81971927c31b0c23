"""The batched kernels of replay: score windows, achieved rates, time weights, scores and diagnostics scans over
a :class:`~estimators.flow_batch.FlowBatch` of many flows, each one compiled call walking every flow.

The batched kernels below call the per-flow kernels on each flow's slice, so every number is the same, to the
bit, as replaying the flow alone (``tests/estimators/test_batch_replay.py``).
"""

from __future__ import annotations

import numpy as np

from ackreplay.jitcache.kernel_mode import njit
from ackreplay.scoring.diagnostics import COMPRESSED_S
from ackreplay.scoring.references import achieved_into
from ackreplay.scoring.scores import RELATIVE_SCORES, level_relative_scores, relative_array


@njit(cache=True, nogil=True)
def score_windows(offsets: np.ndarray, t: np.ndarray, srtt: np.ndarray, seg_offsets: np.ndarray,
                  seg_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each flow's score window: from one smoothed RTT (its first sample) after the first data segment (the
    first event when no segment was seen; 0 without either) to its last event."""
    nf = len(offsets) - 1
    start = np.empty(nf)
    end = np.empty(nf)
    for f in range(nf):
        lo, hi = offsets[f], offsets[f + 1]
        if seg_offsets[f + 1] > seg_offsets[f]:
            first_data = seg_t[seg_offsets[f]]
        elif hi > lo:
            first_data = t[lo]
        else:
            first_data = 0.0
        s = first_data
        for k in range(lo, hi):
            if not np.isnan(srtt[k]):
                s = first_data + srtt[k]
                break
        start[f] = s
        end[f] = t[hi - 1] if hi > lo else s
    return start, end


@njit(cache=True, nogil=True, error_model="numpy")
def achieved_rates(offsets: np.ndarray, t: np.ndarray, acked: np.ndarray, window: float) -> np.ndarray:
    """The achieved rate (docs/scores.md §4, ``references.achieved_into``) of every flow (NaN at each flow's first
    event)."""
    out = np.full(len(t), np.nan)
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        if hi - lo >= 2:
            achieved_into(t[lo:hi], acked[lo:hi], window, out[lo:hi])
    return out


@njit(cache=True, nogil=True)
def time_weights_batch(offsets: np.ndarray, t: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The time weights of every flow: how long each event's value holds inside its flow's window."""
    w = np.empty(len(t))
    for f in range(len(offsets) - 1):
        lo, hi = offsets[f], offsets[f + 1]
        s, e = start[f], end[f]
        for k in range(lo, hi):
            nxt = t[k + 1] if k + 1 < hi else t[hi - 1]
            a = min(max(nxt, s), e)
            b = min(max(t[k], s), e)
            w[k] = a - b
    return w


@njit(cache=True, nogil=True)
def series_scores_batch(offsets: np.ndarray, t: np.ndarray, est: np.ndarray, ref: np.ndarray, w: np.ndarray,
                        start: np.ndarray, tolerance: float, hold: float, buf: np.ndarray) -> np.ndarray:
    """The scores over time (§5, ``scores.level_relative_scores``) of every flow: one row per flow, the mean,
    the median and the coefficient of variation, then ``RELATIVE_SCORES`` (NaN = none; rates in bytes/s).
    ``buf``: scratch of ``SCRATCH_ROWS`` rows at least as long as the longest flow (the job's, reused flow
    after flow)."""
    nf = len(offsets) - 1
    out = np.empty((nf, 3 + len(RELATIVE_SCORES)))
    for f in range(nf):
        lo, hi = offsets[f], offsets[f + 1]
        out[f] = level_relative_scores(t[lo:hi], est[lo:hi], ref[lo:hi], w[lo:hi], start[f], tolerance, hold,
                                       buf[:, : hi - lo])
    return out


@njit(cache=True, nogil=True)
def relative_scores_batch(offsets: np.ndarray, t: np.ndarray, est: np.ndarray, ref: np.ndarray, w: np.ndarray,
                          start: np.ndarray, tolerance: float, hold: float) -> np.ndarray:
    """``scores.relative_array``' numbers for every flow (the scores against the truth)."""
    nf = len(offsets) - 1
    out = np.empty((nf, len(RELATIVE_SCORES)))
    for f in range(nf):
        lo, hi = offsets[f], offsets[f + 1]
        out[f] = relative_array(t[lo:hi], est[lo:hi], ref[lo:hi], w[lo:hi], start[f], tolerance, hold)
    return out


@njit(cache=True, nogil=True)
def diagnostics_scan(offsets: np.ndarray, t: np.ndarray, d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per flow: how many ACK intervals are under ``COMPRESSED_S``, and the intervals of BE's ``k`` largest raw
    samples d/Δt (Δt > 0, d > 0), largest first, equal rates the later interval first (the order
    ``scoring.diagnostics`` states), as interval indices inside the flow (-1 = fewer samples)."""
    nf = len(offsets) - 1
    compressed = np.zeros(nf, np.int64)
    top = np.full((nf, k), -1, np.int64)
    best = np.empty(k)
    for f in range(nf):
        lo, hi = offsets[f], offsets[f + 1]
        have = 0
        for i in range(hi - lo - 1):
            dt = t[lo + i + 1] - t[lo + i]
            if dt < COMPRESSED_S:
                compressed[f] += 1
            dd = d[lo + i + 1]
            if not (dt > 0.0 and dd > 0):
                continue
            r = dd / dt
            # insert (r, i) into the k best, ordered by rate then interval, both descending
            j = have
            while j > 0 and (best[j - 1] < r or (best[j - 1] == r and top[f, j - 1] < i)):
                j -= 1
            if j >= k:
                continue
            stop = min(have, k - 1)
            for m in range(stop, j, -1):
                best[m] = best[m - 1]
                top[f, m] = top[f, m - 1]
            best[j] = r
            top[f, j] = i
            have = min(have + 1, k)
    return compressed, top
