"""Per-pixel downsampling of long series (M4: Jugel et al., "M4: a visualization-oriented time series data
aggregation", PVLDB 7(10), 2014).

A series of *n* points drawn into *px* pixel columns needs at most four points per column — the first, the
last, the minimum and the maximum — for the drawn line to be pixel-identical to the full series. Every
extreme survives, so a one-ACK spike of BE's stays on the graph however long the flow. Both kernels are a
single compiled pass over points sorted by time: O(n), a few milliseconds per million points.
"""

from __future__ import annotations

import numpy as np

from ackreplay.jitcache.kernel_mode import njit


@njit(cache=True)
def _window(x: np.ndarray, t0: float, t1: float) -> tuple[int, int]:
    """Rows start..end-1: those in [t0, t1] and one more on each side, so that lines reach the edges."""
    lo = np.searchsorted(x, t0, side="left")
    hi = np.searchsorted(x, t1, side="right")
    return max(int(lo) - 1, 0), min(int(hi) + 1, len(x))


@njit(cache=True)
def m4_indices(x: np.ndarray, y: np.ndarray, t0: float, t1: float, px: int) -> np.ndarray:
    """Indices (ascending) of the points to draw of ``y`` over ``x`` (sorted) in [t0, t1] on ``px`` columns.

    Points whose ``y`` is NaN are never drawn. When the window holds no more than 4·px drawable points,
    all of them are returned (full resolution)."""
    start, end = _window(x, t0, t1)
    out = np.empty(max(end - start, 0), np.int64)
    k = 0
    for i in range(start, end):
        if y[i] == y[i]:
            out[k] = i
            k += 1
    if k <= 4 * px:
        return out[:k]
    width = (t1 - t0) / px
    k = 0
    cur = -2
    first = last = imin = imax = -1
    for i in range(start, end):
        yi = y[i]
        if yi != yi:
            continue
        c = _column(x[i], t0, t1, width, px)
        if c != cur:
            if first >= 0:
                k = _emit(out, k, first, imin, imax, last)
            cur = c
            first = last = imin = imax = i
        else:
            last = i
            if yi < y[imin]:
                imin = i
            if yi > y[imax]:
                imax = i
    if first >= 0:
        k = _emit(out, k, first, imin, imax, last)
    return out[:k]


@njit(cache=True, inline="always")
def _column(xi: float, t0: float, t1: float, width: float, px: int) -> int:
    """The pixel column of time ``xi``: -1 left of the window, ``px`` right of it."""
    if xi < t0:
        return -1
    if xi > t1:
        return px
    return min(int((xi - t0) / width), px - 1)


@njit(cache=True, inline="always")
def _emit(out: np.ndarray, k: int, a: int, b: int, c: int, d: int) -> int:
    """Append a ≤ {b, c} ≤ d to ``out`` in ascending order without repeats (a is first, d last)."""
    lo, hi = (b, c) if b <= c else (c, b)
    out[k] = a
    k += 1
    for v in (lo, hi, d):
        if v != out[k - 1]:
            out[k] = v
            k += 1
    return k


@njit(cache=True)
def column_hull(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, t0: float, t1: float,
                px: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals [lo, hi] at times ``x`` (sorted; rows with lo < 0 are absent) in [t0, t1] on ``px`` columns.

    Up to 2·px intervals are returned as they are; beyond that, one per column: the union hull of the
    column's intervals (lowest lo, highest hi) at its first time."""
    start, end = _window(x, t0, t1)
    n = 0
    for i in range(start, end):
        if lo[i] >= 0:
            n += 1
    ox = np.empty(n, np.float64)
    ol = np.empty(n, np.int64)
    oh = np.empty(n, np.int64)
    k = 0
    if n <= 2 * px:
        for i in range(start, end):
            if lo[i] >= 0:
                ox[k] = x[i]
                ol[k] = lo[i]
                oh[k] = hi[i]
                k += 1
        return ox, ol, oh
    width = (t1 - t0) / px
    cur = -2
    for i in range(start, end):
        if lo[i] < 0:
            continue
        c = _column(x[i], t0, t1, width, px)
        if c != cur:
            cur = c
            ox[k] = x[i]
            ol[k] = lo[i]
            oh[k] = hi[i]
            k += 1
        else:
            ol[k - 1] = min(ol[k - 1], lo[i])
            oh[k - 1] = max(oh[k - 1], hi[i])
    return ox[:k], ol[:k], oh[:k]
