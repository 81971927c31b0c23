"""Scores (docs/scores.md §5): time-weighted statistics of an estimate against a reference.

Each value holds from its event to the next, so a statistic over time weights it by that interval
(a plain mean over ACK rows would over-weight high-rate stretches, where ACKs are dense). Where the
reference is 0 or unknown, relative errors skip that stretch. Rates in the results are bits/s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ackreplay.jitcache.kernel_mode import njit

TOLERANCE = 0.10  # ±10 % for over/under shares and convergence
CONVERGENCE_HOLD = 1.0  # s within tolerance to count as converged

RELATIVE_SCORES = ("mean_signed_rel_error", "mean_abs_rel_error", "nrmse", "over_share", "under_share",
                   "convergence_s")


# ---- compiled kernels: one pass per estimate, linear in the ACK rows
#
# The sums reproduce numpy's own summation exactly (pairwise, in blocks of 128 with eight partial sums,
# as ``np.add.reduce`` does on a contiguous float64 array), so the scores are the same to the last bit as
# the numpy expressions of their definitions (``tests/estimators/test_scores.py`` compares them on random
# data; ``test_score_identity.py`` on every shared capture).


@njit(cache=True, nogil=True)
def _block_sum(a: np.ndarray, lo: int, n: int) -> float:
    """A leaf of numpy's pairwise sum: ``n`` ≤ 128 values, eight partial sums."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def weighted_median_in_place(v: np.ndarray, w: np.ndarray, n: int) -> float:
    """Weighted median of ``v[:n]`` (weights ``w[:n]`` > 0): the smallest value whose cumulative weight,
    in ascending order of value, reaches half the total — by selection (expected linear time; no sort).
    ``v`` and ``w`` are reordered in place."""
    total = 0.0
    for i in range(n):
        total += w[i]
    half = total / 2
    lo, hi = 0, n
    below = 0.0  # weight of the values known to lie below [lo, hi)
    state = np.uint64(0x9E3779B97F4A7C15)
    while hi - lo > 1:
        # pivot: the median of three positions drawn from a fixed pseudo-random sequence (xorshift) —
        # deterministic, and not defeated by the periodic patterns of an estimate over time
        picks = np.empty(3, np.float64)
        for j in range(3):
            state ^= state << np.uint64(13)
            state ^= state >> np.uint64(7)
            state ^= state << np.uint64(17)
            picks[j] = v[lo + np.int64(state % np.uint64(hi - lo))]
        a, b, c = picks[0], picks[1], picks[2]
        p = max(min(a, b), min(max(a, b), c))
        # three-way partition of [lo, hi): < p | == p | > p
        lt, i, gt = lo, lo, hi
        w_lt = 0.0
        w_eq = 0.0
        while i < gt:
            x = v[i]
            if x < p:
                v[i], v[lt] = v[lt], x
                w[i], w[lt] = w[lt], w[i]
                w_lt += w[lt]
                lt += 1
                i += 1
            elif x > p:
                gt -= 1
                v[i], v[gt] = v[gt], x
                w[i], w[gt] = w[gt], w[i]
            else:
                w_eq += w[i]
                i += 1
        if below + w_lt >= half:
            hi = lt
        elif below + w_lt + w_eq >= half:
            return p
        else:
            below += w_lt + w_eq
            lo = gt
    return v[lo]


# Sums of values computed on the fly. The values summed are those of events passing a selection, in event
# order, and each sum is numpy's pairwise sum over that (virtual) compacted array: the tree depends only on
# how many values there are, and its leaves are visited left to right, so a cursor walking the events fills
# each leaf's ≤ 128 values into a small buffer as it is reached. One walk computes several sums over the same
# selection, and nothing the size of the flow is written (compacting the selection into scratch rows and
# writing a product row per score to sum would take ten passes, each reading and writing flow-sized rows).
# The selections and values, by ``mode``:
#
# 0: w > 0 and est known — w, w·est        1: the same — w·(est − mean)²   (``p`` = mean)
# 2: that, ref known and > 0 — w, w·rel, w·|rel|, w·ref, w·(est − ref)²   with rel = (est − ref)/ref
# 3: mode 2's events with rel > ``p`` — w   4: mode 2's events with rel < −``p`` — w


@njit(cache=True, nogil=True, error_model="numpy")
def _fill(mode: int, src: int, count: int, w: np.ndarray, est: np.ndarray, ref: np.ndarray, p: float,
          tmp: np.ndarray) -> int:
    """Write the next ``count`` selected events' values into ``tmp[:, :count]`` from event ``src`` on; return
    the event after the last one taken. (``error_model="numpy"``: a division by a reference of 0 gives inf or
    NaN instead of raising — such an event is never selected.)"""
    k = 0
    end = len(w)
    if mode >= 3:  # the over/under shares: a few percent to most of the events, unpredictably — branch-free
        sign = 1.0 if mode == 3 else -1.0
        while k < count and src < end:
            e, r = est[src], ref[src]
            tmp[0, k] = w[src]
            k += (w[src] > 0) & (e == e) & (r > 0) & (sign * ((e - r) / r) > p)
            src += 1
        return src
    while k < count and src < end:  # (never short when ``count`` is the selection's size)
        i = src
        src += 1
        wi = w[i]
        e = est[i]
        if not (wi > 0 and not np.isnan(e)):
            continue
        if mode == 0:
            tmp[0, k] = wi
            tmp[1, k] = wi * e
        elif mode == 1:
            d = e - p
            tmp[0, k] = wi * (d * d)
        else:
            r = ref[i]
            if np.isnan(r) or not r > 0:
                continue
            rel = (e - r) / r
            tmp[0, k] = wi
            tmp[1, k] = wi * rel
            tmp[2, k] = wi * abs(rel)
            tmp[3, k] = wi * r
            d = e - r
            tmp[4, k] = wi * (d * d)
        k += 1
    return src


@njit(cache=True, nogil=True)
def stream_sums(mode: int, m: int, w: np.ndarray, est: np.ndarray, ref: np.ndarray, p: float) -> np.ndarray:
    """The sums of ``mode``'s values over its ``m`` selected events, each exactly ``np.sum`` of the compacted
    values: numpy's ``pairwise_sum`` (``loops_utils.h``: halves rounded down to a multiple of 8 until a block
    holds at most 128 values, summed by :func:`_block_sum`), its leaves filled by :func:`_fill`. Written with
    an explicit stack: numba's cache cannot reload a recursive function (it crashes the next process)."""
    k = 2 if mode == 0 else 5 if mode == 2 else 1
    out = np.zeros(k)
    if m == 0:
        return out
    tmp = np.empty((k, 128), np.float64)
    s_lo = np.empty(128, np.int64)
    s_n = np.empty(128, np.int64)
    s_done = np.zeros(128, np.bool_)
    vals = np.empty((k, 128), np.float64)
    sp, vp, src = 1, 0, 0
    s_lo[0], s_n[0], s_done[0] = 0, m, False
    while sp > 0:
        top = sp - 1
        size = s_n[top]
        if size <= 128:
            src = _fill(mode, src, size, w, est, ref, p, tmp)
            for j in range(k):
                vals[j, vp] = _block_sum(tmp[j], 0, size)
            vp += 1
            sp -= 1
        elif s_done[top]:
            for j in range(k):
                vals[j, vp - 2] = vals[j, vp - 2] + vals[j, vp - 1]
            vp -= 1
            sp -= 1
        else:
            half = size // 2
            half -= half % 8
            s_done[top] = True
            s_lo[sp], s_n[sp], s_done[sp] = s_lo[top] + half, size - half, False
            s_lo[sp + 1], s_n[sp + 1], s_done[sp + 1] = s_lo[top], half, False
            sp += 2
    for j in range(k):
        out[j] = vals[j, 0]
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _counts(est: np.ndarray, ref: np.ndarray, w: np.ndarray, tolerance: float) -> tuple[int, int, int]:
    """How many events have a weight, an estimate and a reference > 0 — and of those, how many are over
    and under the reference by more than ``tolerance`` (branch-free; see :func:`_fill`)."""
    m = m_over = m_under = 0
    for i in range(len(est)):
        e, r = est[i], ref[i]
        ok = (w[i] > 0) & (e == e) & (r > 0)
        rel = (e - r) / r
        m += ok
        m_over += ok & (rel > tolerance)
        m_under += ok & (rel < -tolerance)
    return m, m_over, m_under


@njit(cache=True, nogil=True)
def relative_array(t: np.ndarray, est: np.ndarray, ref: np.ndarray, w: np.ndarray, start: float,
              tolerance: float, hold: float) -> np.ndarray:
    """Every relative score of ``est`` against ``ref`` (``RELATIVE_SCORES`` order, NaN = none): a counting
    walk, then three summing walks over the events (no scratch)."""
    out = np.full(len(RELATIVE_SCORES), np.nan)
    m, m_over, m_under = _counts(est, ref, w, tolerance)
    sums = stream_sums(2, m, w, est, ref, 0.0)
    total = sums[0]
    if m > 0 and total > 0:
        out[0] = sums[1] / total
        out[1] = sums[2] / total
        mean_r = sums[3] / total
        out[2] = math.sqrt(sums[4] / total) / mean_r
        out[3] = stream_sums(3, m_over, w, est, ref, tolerance)[0] / total
        out[4] = stream_sums(4, m_under, w, est, ref, tolerance)[0] / total
    # convergence: the first run of events within ±tolerance lasting ``hold`` s
    run = -1
    n = len(t)
    for k in range(n):
        if abs(est[k] - ref[k]) <= tolerance * ref[k] and ref[k] > 0 and t[k] >= start:
            if run < 0:
                run = k
            nxt = t[k + 1] if k + 1 < n else t[k]
            if nxt - t[run] >= hold:
                out[5] = t[run] - start
                break
        else:
            run = -1
    return out


@njit(cache=True, nogil=True)
def _level(est: np.ndarray, w: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Mean, weighted median and coefficient of variation of ``est`` over time (NaN = none). The events
    with a weight and an estimate are compacted into ``buf[0]`` (weights) and ``buf[1]`` (values), which the
    weighted median's selection reorders."""
    out = np.full(3, np.nan)
    ww, e = buf[0], buf[1]
    m = 0
    for i in range(len(est)):
        if w[i] > 0 and not np.isnan(est[i]):
            ww[m] = w[i]
            e[m] = est[i]
            m += 1
    sums = stream_sums(0, m, ww, e, e, 0.0)
    wsum = sums[0]
    if m > 0 and wsum > 0:
        mean = sums[1] / wsum
        var = stream_sums(1, m, ww, e, e, mean)[0] / wsum
        out[0] = mean
        out[2] = math.sqrt(var) / mean if mean > 0 else np.nan
        out[1] = weighted_median_in_place(e, ww, m)  # reorders e and ww: last
    return out


@njit(cache=True, nogil=True)
def level_relative_scores(t: np.ndarray, est: np.ndarray, ref: np.ndarray, w: np.ndarray, start: float,
                          tolerance: float, hold: float, buf: np.ndarray) -> np.ndarray:
    """:func:`_level` then :func:`relative_array` in one compiled call (a fresh process loads one cached kernel,
    ~7 ms, instead of two)."""
    out = np.empty(3 + len(RELATIVE_SCORES))
    out[:3] = _level(est, w, buf)
    out[3:] = relative_array(t, est, ref, w, start, tolerance, hold)
    return out


#: Scratch rows a score of one estimate needs (:func:`level_relative_scores`' ``buf``: ``SCRATCH_ROWS × len(t)``).
SCRATCH_ROWS = 2


def jain(values: Iterable[float | None]) -> float | None:
    """Jain's fairness index (Σx)²/(n·Σx²); None with fewer than two values."""
    x = np.array([v for v in values if v is not None and math.isfinite(v)], float)
    if len(x) < 2 or (x**2).sum() == 0:
        return None
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))
