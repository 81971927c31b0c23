"""The figures judged from a path's evidence (docs/path.md §9), compiled over many rows at once
(:func:`row_figures`): the capacity (the dispersion mode, :mod:`ackreplay.path.dispersion`), the base RTT,
the buffer, buffer/BDP and the random-loss rate.

**Base RTT** — the smallest RTT sample, less half a full-size segment's transmission at C: a sample
includes the data segment's own transmission at the bottleneck (an idle ping hardly does), unless a
token-bucket shaper with tokens to spare let it through at line rate (the testbed's ``tbf``, a flow that
idles the link: BBR's ProbeRTT); taking off half leaves at most half a transmission time of error either way
(0.6 ms at 10 Mbit/s).

**Buffer** — at each loss episode, the queueing delay just before the sender retransmitted: the largest
RTT sample (less the minimum) of the ACKs that arrived in the smoothed RTT before its first retransmission
(they timed the segments sent just before the dropped one). A lone flow's queue peaks at every loss, so the
level alone does not tell an overflow from a random loss; a drop-tail buffer overflows at one level, again
and again. Losses at a queue of at least :data:`FULL_QUEUE_SHARE` of the deepest queue the flow built (its
:data:`DEEP_QUANTILE` RTT quantile, :func:`top_ranks`, at least :data:`MIN_QUEUE_PACKETS` full-size packets)
are candidates; they are overflows when at least half of them lie within ±:data:`OVERFLOW_SPREAD` of their
median (those are), else none is (:func:`overflows`). The buffer is ``median queueing delay at the overflows
× C``; ``buffer_over_bdp`` = B/(C·base RTT).

**Random loss** — the segments retransmitted in loss episodes not preceded by a full queue, per new data
segment sent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import median_in_place
from ackreplay.path.dispersion import BIN_RATES, MIN_MODE_PAIRS

#: The share of one full-size segment's transmission time at capacity taken off the smallest RTT sample.
SERIALISATION_SHARE = 0.5
#: Buffer evidence: the deepest queue is this quantile of the queueing delays over the flow.
DEEP_QUANTILE = 0.98
#: What the buffer caps: this quantile of the queueing delays over the flow (the deepest, bar outliers).
TOP_QUANTILE = 0.999
#: Overflows: this many losses at one level, or one at a level the flow never queued beyond this × it.
MIN_OVERFLOWS = 2
CAP_SLACK = 1.25
#: A loss whose queueing delay is at least this share of the deepest queue came from a full buffer.
FULL_QUEUE_SHARE = 0.6
#: Buffer-overflow losses recur at one queue level: within ± this share of their median.
OVERFLOW_SPREAD = 0.15
#: No buffer-overflow loss is believed unless the deepest queue held at least this many full-size packets.
MIN_QUEUE_PACKETS = 3.0


@njit(cache=True, nogil=True)
def _sift(heap: np.ndarray, n: int, i: int) -> None:
    """Restore the min-heap ``heap[:n]`` below position ``i``."""
    v = heap[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= v:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = v


@njit(cache=True, nogil=True)
def top_ranks(v: np.ndarray, k1: int, k2: int, heap: np.ndarray) -> tuple[float, float]:
    """The samples at ranks ``k1 ≤ k2`` (ascending, from 0) of ``v`` — both near the top: the quantiles of
    the deepest queue — by a min-heap of the ``len(v) − k1`` largest (``heap``: room for them), in
    O(n log(n − k1)) whatever the samples (``np.partition`` slows to seconds on a million samples of two
    distinct values)."""
    size = len(v) - k1
    for i in range(size):
        heap[i] = v[i]
    for i in range(size // 2 - 1, -1, -1):
        _sift(heap, size, i)
    for i in range(size, len(v)):
        if v[i] > heap[0]:
            heap[0] = v[i]
            _sift(heap, size, 0)
    low = heap[0]
    n = size
    for _ in range(k2 - k1):  # pop the smallest until rank k2 is the smallest
        n -= 1
        heap[0] = heap[n]
        _sift(heap, n, 0)
    return low, heap[0]


@njit(cache=True, nogil=True)
def row_figures(at_bin: np.ndarray, in_mode: np.ndarray, above: np.ndarray, wire: np.ndarray,
                rtt_min: np.ndarray, rtt_samples: np.ndarray, own_rtt_min: np.ndarray, own_wire: np.ndarray,
                own_deep: np.ndarray, own_top: np.ndarray, own_segments: np.ndarray, own_confidence: np.ndarray,
                l_lo: np.ndarray, l_hi: np.ndarray, loss_q: np.ndarray, loss_retx: np.ndarray) -> tuple[Any, ...]:
    """Each row's figures (NaN = none): capacity (its mode with at least :data:`MIN_MODE_PAIRS` pairs), the
    serialisation taken off the base RTT, the base RTT, from the judged evidence (the group's, or the flow's
    own: ``at_bin`` … ``rtt_samples``); and on the flow's own losses (``own_*``, its episodes
    ``l_lo[r]:l_hi[r]`` of ``loss_q``/``loss_retx``), their queueing delays taken relative to the path's RTT
    minimum (a flow that joined a standing queue never saw it): the deepest queue, whether it was deep enough
    to overflow, how many losses followed a full queue (:func:`overflows`), their median queueing delay, the
    buffer, buffer/BDP, the segments lost at random and their rate; and the confidence grade."""
    n = len(at_bin)
    capacity = np.full(n, np.nan)
    ser = np.zeros(n)
    base = np.full(n, np.nan)
    deep = np.empty(n)
    queued = np.zeros(n, np.bool_)
    full = np.zeros(n, np.int64)
    delay = np.full(n, np.nan)
    buffer = np.full(n, np.nan)
    over = np.full(n, np.nan)
    lost = np.zeros(n, np.int64)
    rnd = np.full(n, np.nan)
    grade = np.zeros(n, np.int8)
    longest = 0
    for r in range(n):
        longest = max(longest, l_hi[r] - l_lo[r])
    q = np.empty(longest)
    near = np.zeros(longest, np.bool_)
    scratch = np.empty(longest)
    for r in range(n):
        cap = np.nan
        g = 0
        if at_bin[r] >= 0 and in_mode[r] >= MIN_MODE_PAIRS:
            cap = BIN_RATES[at_bin[r]]
            share = in_mode[r] / above[r]
            g = 2 if in_mode[r] >= 30 and share >= 0.2 else (1 if in_mode[r] >= 10 else 0)
        has_cap = not np.isnan(cap)
        capacity[r] = cap
        rm = rtt_min[r]
        if np.isfinite(rm):
            s = SERIALISATION_SHARE * 8.0 * wire[r] / cap if has_cap else 0.0
            ser[r] = s
            base[r] = rm - s if rm > s else rm
            g = min(g, 2 if rtt_samples[r] >= 20 else 0)
        if own_confidence[r] >= 0:
            g = min(g, own_confidence[r])
        grade[r] = g
        shift = own_rtt_min[r] - rm if np.isfinite(own_rtt_min[r]) and np.isfinite(rm) else 0.0
        d = own_deep[r] + shift
        deep[r] = d
        min_deep = MIN_QUEUE_PACKETS * 8.0 * own_wire[r] / cap if has_cap else np.inf
        queued[r] = np.isfinite(d) and d >= min_deep
        l0 = l_lo[r]
        m = l_hi[r] - l0
        for k in range(m):
            q[k] = loss_q[l0 + k] + shift
        k_full = overflows(q[:m], d, own_top[r] + shift, near[:m], scratch) if m and queued[r] else 0
        full[r] = k_full
        if has_cap and k_full:
            w = 0
            for k in range(m):
                if near[k]:
                    scratch[w] = q[k]
                    w += 1
            delay[r] = median_in_place(scratch[:w])
            buffer[r] = delay[r] * cap / 8.0
            if not np.isnan(base[r]) and base[r] != 0.0:
                over[r] = buffer[r] / (cap * base[r] / 8.0)
        if own_segments[r] > 0:
            if m == 0:
                rnd[r] = 0.0
            else:
                for k in range(m):
                    if k_full == 0 or not near[k]:
                        lost[r] += loss_retx[l0 + k]
                rnd[r] = lost[r] / own_segments[r]
    return capacity, ser, base, deep, queued, full, delay, buffer, over, lost, rnd, grade


@njit(cache=True, nogil=True)
def overflows(q: np.ndarray, deep: float, top: float, near: np.ndarray, scratch: np.ndarray) -> int:
    """Which losses came from a full buffer (marked in ``near``; returns how many: 0 = none). Every loss of a
    lone flow ends a climb of its queue, so the level alone does not tell; what does is that a drop-tail
    buffer overflows at one level, again and again, and caps the queue there, while random losses strike at
    any level. Candidates are the losses at a queue of at least :data:`FULL_QUEUE_SHARE` of the deepest; those
    within ±:data:`OVERFLOW_SPREAD` of the candidates' median are overflows when they are at least half of the
    candidates and either :data:`MIN_OVERFLOWS` losses recur there or the flow never queued beyond
    :data:`CAP_SLACK` × that level (one loss alone must be the cap: else a random loss merely struck a high
    queue under a larger buffer); else none is."""
    m = 0
    for k in range(len(q)):
        if np.isfinite(q[k]) and q[k] >= FULL_QUEUE_SHARE * deep:
            scratch[m] = q[k]
            m += 1
    if m == 0:
        return 0
    mid = median_in_place(scratch[:m])
    k_near = 0
    for k in range(len(q)):
        near[k] = np.isfinite(q[k]) and q[k] >= FULL_QUEUE_SHARE * deep and abs(q[k] - mid) <= OVERFLOW_SPREAD * mid
        if near[k]:
            scratch[k_near] = q[k]
            k_near += 1
    capped = k_near > 0 and (not np.isfinite(top) or top <= CAP_SLACK * median_in_place(scratch[:k_near]))
    return k_near if 2 * k_near >= m and (k_near >= MIN_OVERFLOWS or capped) else 0

