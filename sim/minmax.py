"""The windowed running maximum BBR keeps its bandwidth in: Kathleen Nichols' algorithm as Linux's
lib/win_minmax.c runs it (``minmax_running_max``, ``minmax_subwin_update``) — the best, second-best and third-best
samples of the window, each a (time, value) pair, so the maximum over the last ``win`` time units is kept in O(1)
a sample. BBR's time is its round count (``bbr_bw_rtts`` = 10 rounds: Cardwell, Cheng, Gunn, Hassas Yeganeh and
Jacobson, "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016).

The three samples sit in a row of a float array from column ``c``: t0, v0, t1, v1, t2, v2."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def minmax_reset(row: np.ndarray, c: int, t: float, v: float) -> float:
    """Every sample the new one (``minmax_reset``); returns it."""
    for k in range(3):
        row[c + 2 * k] = t
        row[c + 2 * k + 1] = v
    return v


@njit(cache=True, nogil=True, inline="always")
def _set(row: np.ndarray, c: int, k: int, t: float, v: float) -> None:
    row[c + 2 * k] = t
    row[c + 2 * k + 1] = v


@njit(cache=True, nogil=True, inline="always")
def _shift(row: np.ndarray, c: int, t: float, v: float) -> None:
    """s0 ← s1, s1 ← s2, s2 ← the new sample."""
    _set(row, c, 0, row[c + 2], row[c + 3])
    _set(row, c, 1, row[c + 4], row[c + 5])
    _set(row, c, 2, t, v)


@njit(cache=True, nogil=True, inline="always")
def _subwin_update(row: np.ndarray, c: int, win: float, t: float, v: float) -> float:
    """``minmax_subwin_update``: age the best sample out after ``win``, and refresh the second and third best
    after a quarter and a half of the window without news."""
    dt = t - row[c]
    if dt > win:
        _shift(row, c, t, v)
        if t - row[c] > win:
            _shift(row, c, t, v)
    elif row[c + 2] == row[c] and dt > win / 4.0:
        _set(row, c, 1, t, v)
        _set(row, c, 2, t, v)
    elif row[c + 4] == row[c + 2] and dt > win / 2.0:
        _set(row, c, 2, t, v)
    return row[c + 1]


@njit(cache=True, nogil=True, inline="always")
def minmax_running_max(row: np.ndarray, c: int, win: float, t: float, v: float) -> float:
    """A new sample ``v`` at time ``t``: the window's maximum after it (``minmax_running_max``)."""
    if v >= row[c + 1] or t - row[c + 4] > win:
        return minmax_reset(row, c, t, v)
    if v >= row[c + 3]:
        _set(row, c, 1, t, v)
        _set(row, c, 2, t, v)
    elif v >= row[c + 5]:
        _set(row, c, 2, t, v)
    return _subwin_update(row, c, win, t, v)
