"""The compiled helpers several packages share: searches, an in-place sort and median, and a float for JSON.

:func:`searchsorted_right` (and :func:`searchsorted_merge`, either side) is ``np.searchsorted`` for many sorted keys
at once, by one merge pass instead of a binary search per key. Replay looks up every event's time, or every event's
time minus the reference window, in a sorted column of as many times (and what limited the sender, ACK times among
data segments' times): one binary search per key costs a cache miss per step (~45 ns a key on 2 M keys), while
walking both arrays together is sequential. Keys that are not in ascending order, and NaNs, fall back to a binary
search for that key, so the result is always ``np.searchsorted(a, v, side="right")``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from ackreplay.jitcache.kernel_mode import njit

#: Fewer keys than this are looked up by numpy's binary search (the same result).
MERGE_MIN_KEYS = 65536


@njit(cache=True, nogil=True)
def search_right_into(a: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    n = len(a)
    i = 0
    prev = -np.inf
    for k in range(len(v)):
        x = v[k]
        if np.isnan(x):  # numpy sorts NaN after every number
            out[k] = n
            continue
        if x >= prev:  # ascending: carry on from the previous key's position
            while i < n and a[i] <= x:
                i += 1
        else:  # a step back: binary search (the first a[i] > x)
            lo, hi = 0, n
            while lo < hi:
                mid = (lo + hi) >> 1
                if a[mid] <= x:
                    lo = mid + 1
                else:
                    hi = mid
            i = lo
        out[k] = i
        prev = x


def searchsorted_right(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``np.searchsorted(a, v, side="right")`` for float64 ``a`` (sorted, no NaN) and keys ``v``."""
    a = np.ascontiguousarray(a, np.float64)
    v = np.ascontiguousarray(v, np.float64)
    if len(v) < MERGE_MIN_KEYS or np.isnan(a).any():  # short: not worth loading the compiled kernel
        return np.searchsorted(a, v, side="right")
    # read-only views, whatever the arrays: to numba a read-only array is another type, and one compiled
    # signature (``ackreplay warmup``'s) then serves every caller
    a, v = a.view(), v.view()
    a.flags.writeable = v.flags.writeable = False
    out = np.empty(len(v), np.int64)
    search_right_into(a, v, out)
    return out


def searchsorted_merge(a: np.ndarray, v: np.ndarray, side: Literal["left", "right"]) -> np.ndarray:
    """``np.searchsorted(a, v, side=side)``: by :func:`searchsorted_right`'s merge pass when ``a`` is sorted float64
    without NaN or −inf and the keys are many float64 (else numpy's binary search) — the same indices. Side left is
    side right of the next float below each key (no float lies between: the elements below ``x`` are those at most
    that float)."""
    if len(v) < MERGE_MIN_KEYS or a.dtype != np.float64 or v.dtype != np.float64 or not len(a) \
            or a[0] == -np.inf or a[-1] != a[-1] or not (a[1:] >= a[:-1]).all():  # (a NaN: False too)
        return np.searchsorted(a, v, side=side)
    return searchsorted_right(a, v if side == "right" else np.nextafter(v, -np.inf))


@njit(cache=True, nogil=True)
def search_sorted(a: np.ndarray, x: Any, right: bool) -> int:
    """``np.searchsorted(a, x, side="right" if right else "left")`` for a sorted ``a`` without NaN (a NaN ``x``
    sorts last, as numpy's)."""
    if x != x:
        return len(a)
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x or (right and a[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def search_left_from(a: np.ndarray, x: float, hint: int) -> int:
    """``np.searchsorted(a, x)`` (side left) for a sorted ``a`` without NaN, searched from ``hint`` (the previous
    key's answer): forward by galloping steps (1, 2, 4, …) then a binary search in the last step, or a binary search
    below ``hint`` when the key stepped back. Keys that mostly ascend cost a few steps each, near in memory, instead
    of a binary search's cache miss per step over the whole array."""
    n = len(a)
    if x != x:  # numpy sorts NaN last
        return n
    i = min(max(hint, 0), n)
    if i > 0 and not a[i - 1] < x:  # the answer is below the hint
        lo, hi = 0, i - 1
    else:
        step = 1
        lo = i  # a[lo - 1] < x (or lo = 0)
        while lo + step <= n and a[lo + step - 1] < x:
            lo += step
            step *= 2
        hi = min(lo + step - 1, n)
    while lo < hi:  # the first a[j] >= x in [lo, hi]
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def sort_in_place(x: np.ndarray) -> None:
    """Sort ``x`` in place, ascending (Shell's sort: the runs sorted here are short or nearly sorted, and it
    compiles in a fraction of the time numba's own sort takes)."""
    n = len(x)
    gap = 1
    while gap < n // 3:
        gap = 3 * gap + 1
    while gap >= 1:
        for i in range(gap, n):
            v = x[i]
            j = i
            while j >= gap and x[j - gap] > v:
                x[j] = x[j - gap]
                j -= gap
            x[j] = v
        gap //= 3


@njit(cache=True, nogil=True)
def median_in_place(x: np.ndarray) -> float:
    """``np.median`` of samples without NaN (sorts ``x`` in place)."""
    sort_in_place(x)
    h = len(x) // 2
    return x[h] if len(x) % 2 else (x[h - 1] + x[h]) / 2.0


def finite_or_none(x: float | None) -> float | None:
    """A number for JSON: ``None`` for a missing, NaN or infinite value, else a plain float."""
    return None if x is None or not math.isfinite(x) else float(x)
