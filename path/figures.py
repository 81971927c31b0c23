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

**Random loss** — the maximum-likelihood estimate of the drop probability of a Bernoulli loss on every data
transmission: the segments retransmitted in loss episodes not preceded by a full queue (each one a drop), over the
transmissions whose fate the capture shows — all data segments sent, less those an overflow's episode decides
(``loss_exposed``: a random drop among them is repaired in the overflow's recovery, and cannot be told from its
other drops). Dividing by every segment sent would count that exposure without its drops, and read low.
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
#: An episode off the overflow level holding more drops than a Bernoulli loss at the flow's rate puts in its window
#: less often than this (given one at least) is no random loss: an overflow at another level, or a burst.
BERNOULLI_TAIL = 1e-3
#: A loss episode's kind as the random-loss rate judges it: its drops counted as random, a buffer overflow (its window
#: left out), set aside (:data:`BERNOULLI_TAIL`: left out, drops and window).
RANDOM_EPISODE, OVERFLOW_EPISODE, ASIDE_EPISODE = 0, 1, 2


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
                l_lo: np.ndarray, l_hi: np.ndarray, loss_q: np.ndarray, loss_retx: np.ndarray,
                loss_exposed: np.ndarray) -> tuple[Any, ...]:
    """Each row's figures (NaN = none): capacity (its mode with at least :data:`MIN_MODE_PAIRS` pairs), the
    serialisation taken off the base RTT, the base RTT, from the judged evidence (the group's, or the flow's
    own: ``at_bin`` … ``rtt_samples``); and on the flow's own losses (``own_*``, its episodes
    ``l_lo[r]:l_hi[r]`` of ``loss_q``/``loss_retx``/``loss_exposed``), their queueing delays taken relative to the
    path's RTT minimum (a flow that joined a standing queue never saw it): the deepest queue, whether it was deep
    enough to overflow, how many losses followed a full queue (:func:`overflows`), their median queueing delay, the
    buffer, buffer/BDP; the segments lost at random, the transmissions whose fate shows, the episodes set aside and
    the rate (:func:`random_rate`); and the confidence grade. Last, each loss episode's kind (the columns of
    ``loss_q``): :data:`RANDOM_EPISODE` (counted in the rate), :data:`OVERFLOW_EPISODE`, :data:`ASIDE_EPISODE`."""
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
    seen = np.zeros(n, np.int64)
    odd = np.zeros(n, np.int64)
    rnd = np.full(n, np.nan)
    grade = np.zeros(n, np.int8)
    kinds = np.zeros(len(loss_q), np.int8)
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
        lost[r], seen[r], odd[r], rnd[r] = random_rate(loss_retx[l0:l0 + m], loss_exposed[l0:l0 + m], near[:m],
                                                       k_full > 0, own_segments[r], has_cap, kinds[l0:l0 + m])
    return capacity, ser, base, deep, queued, full, delay, buffer, over, lost, seen, odd, rnd, grade, kinds


@njit(cache=True, nogil=True)
def random_rate(retx: np.ndarray, exposed: np.ndarray, near: np.ndarray, any_full: bool, segments: int,
                judged: bool, kinds: np.ndarray) -> tuple[int, int, int, float]:
    """One flow's random-loss rate from its episodes (``retx`` retransmissions and ``exposed`` transmissions each,
    ``near``: at the overflow level where ``any_full``) and its ``segments`` data segments: the segments lost at
    random (retransmitted in the episodes off the overflow level), the transmissions whose fate shows (every data
    segment but those the overflows' episodes decide), the episodes set aside and the rate (NaN where no fate
    shows: the overflows' windows cover every data segment, or fewer than were lost).
    Set aside are the episodes off the level that a Bernoulli loss cannot explain: more drops in the
    episode's window than one at the rate puts there with a probability of :data:`BERNOULLI_TAIL`, given one at
    least — an overflow read at another level (its first drop a random one at a lower queue), or a burst; the rate
    is found again without them until none is left. An episode whose window is shorter than its drops (it shares
    the previous one's) is not judged, nor any without ``judged`` (no capacity: every loss is counted, an upper
    bound). Each episode's kind is written to ``kinds``: :data:`RANDOM_EPISODE` (counted), :data:`OVERFLOW_EPISODE`,
    :data:`ASIDE_EPISODE`."""
    lost = 0
    seen = segments
    for k in range(len(retx)):
        if any_full and near[k]:
            seen -= exposed[k]
        else:
            lost += retx[k]
    odd = 0
    gone = np.zeros(len(retx), np.bool_)
    again = judged
    while again and seen > 0:
        again = False
        p = lost / seen
        for k in range(len(retx)):
            if (any_full and near[k]) or gone[k] or retx[k] < 2 or exposed[k] < retx[k]:
                continue
            if binomial_tail(retx[k], exposed[k], p) < BERNOULLI_TAIL * binomial_tail(1, exposed[k], p):
                gone[k] = again = True
                odd += 1
                lost -= retx[k]
                seen -= exposed[k]
    for k in range(len(retx)):
        kinds[k] = OVERFLOW_EPISODE if any_full and near[k] else (ASIDE_EPISODE if gone[k] else RANDOM_EPISODE)
    if seen <= 0 or seen < lost:  # the overflows' windows cover the flow: no transmission's fate shows
        return lost, max(seen, 0), odd, np.nan
    return lost, seen, odd, lost / seen


@njit(cache=True, nogil=True)
def binomial_tail(r: int, w: int, p: float) -> float:
    """P(X ≥ r) for X binomial of ``w`` trials at ``p`` (summed from the pmf up to r − 1: r is small)."""
    if p <= 0.0:
        return 1.0 if r <= 0 else 0.0
    if p >= 1.0:
        return 1.0 if r <= w else 0.0
    pmf = (1.0 - p) ** w
    below = 0.0
    for k in range(r):
        below += pmf
        pmf *= (w - k) / (k + 1) * p / (1.0 - p)
    return max(0.0, 1.0 - below)


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

