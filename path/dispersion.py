"""Bottleneck capacity by packet-pair dispersion (docs/path.md §9).

Two packets that queue back to back at the bottleneck leave it spaced by ``size/C`` (Keshav's packet pair;
Jacobson's "pipe"). Pairs disturbed by cross traffic read low (expansion: another packet got in between) or
high (compression: a later queue bunched them up); the capacity is the **mode of the dispersion histogram
above the flow's average dispersion rate** (ADR), as in pathrate (Dovrolis, Ramanathan, Moore,
"Packet-dispersion techniques and a capacity-estimation methodology", IEEE/ACM ToN 12(6), 2004: the capacity
mode is a local mode of the histogram above ADR; the flow's own rate-limited spacing lies at or below ADR).
The pairs:

* data seen **after the bottleneck** (receiver side): consecutive full-size, in-sequence data segments,
  ``wire bytes of the later / arrival gap`` (:func:`data_pairs`);
* at the **sender**, and at a **mid-path** tap (which may sit before the bottleneck — the testbed's does —
  while the ACKs it sees have always crossed the path): the ACKs those segments clocked — consecutive
  advancing ACKs, ``wire bytes newly acknowledged / ACK gap`` — kept only when the later segment found the
  bottleneck busy (its queueing delay, RTT sample less the minimum, is at least :data:`QUEUED` × the ACK
  gap: it waited behind the earlier one, so the bottleneck, not the sender, spaced them), none of them was
  retransmitted, and the pair before it qualified too (inside a train: a token-bucket shaper lets the first
  packets after an idle spell through at line rate) (:func:`ack_pairs`).

The histogram has log-spaced bins :data:`BIN_REL` wide, kept sparse (a short flow occupies a few of the
:data:`HIST_BINS`); its mode is the densest window of ±:data:`MODE_REL`, the capacity the median of the
samples within ±:data:`REFINE_REL` of it (:func:`mode_of`). Sizes are **wire** bytes
(:func:`ackreplay.path.links.wire_overhead`), so the figure is the link's rate, not the payload's (the
payload's ceiling, ``C·mss/wire``, is given in the evidence).
"""

from __future__ import annotations

import math

import numpy as np

from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import search_sorted, sort_in_place

#: Sender side: a pair counts when its later segment queued at least this share of the ACK gap.
QUEUED = 0.5
#: Sender side: the pairs of an ACK train averaged into one sample (sliding).
TRAIN = 4
#: Dispersion histogram: log-spaced bins of this relative width, from :data:`HIST_LO_BPS` up.
BIN_REL = 0.005
HIST_LO_BPS = 1e4
HIST_BINS = 4000  # 1e4 · 1.005^4000 ≈ 4.8e12 bit/s
#: The mode is the densest window of ± this relative width.
MODE_REL = 0.03
#: The capacity is the median of the pair rates within ± this relative width of the mode.
REFINE_REL = 0.2
#: Only pair rates at or above this share of the flow's average dispersion rate (ADR) can be the mode.
ADR_SHARE = 0.9
#: Capacity needs at least this many pairs in its mode.
MIN_MODE_PAIRS = 5
#: ACKs acknowledging more than this many segments are not pairs (stretch ACKs after a hole filled).
MAX_PAIR_SEGMENTS = 4

#: One histogram bin's width in natural-log units.
LOG_BIN = math.log1p(BIN_REL)
#: The mode's window (bins) and the reach (bins either side of its centre) of the samples the capacity is the
#: median of (:func:`mode_of`).
MODE_WIDTH = max(1, round(2 * math.log1p(MODE_REL) / LOG_BIN))
REFINE_REACH = round(math.log1p(REFINE_REL) / LOG_BIN)
#: Each bin's rate (bits/s at its centre on the log scale), computed once by Python's ``**``.
BIN_RATES = np.array([HIST_LO_BPS * (1 + BIN_REL) ** (i + 0.5) for i in range(HIST_BINS)])


@njit(cache=True, nogil=True)
def _seek(a: np.ndarray, x: int, hint: int) -> int:
    """``np.searchsorted(a, x)`` (left) for a sorted ``a``, walking from ``hint`` when ``x`` lies a few entries
    ahead of it — the ACKs advance through the segments in order, so the walk is amortised O(1) per ACK —
    and by binary search otherwise."""
    n = len(a)
    if 0 <= hint <= n and (hint == 0 or a[hint - 1] < x):
        j = hint
        for _ in range(8):
            if j >= n or a[j] >= x:
                return j
            j += 1
    return search_sorted(a, x, False)


@njit(cache=True, nogil=True)
def ack_pairs(out: np.ndarray, t: np.ndarray, ack: np.ndarray, rtt: np.ndarray, rtt_min: float,
               seg_end: np.ndarray, retx_lo: np.ndarray, mss: int, overhead: int, bits: np.ndarray,
               gaps: np.ndarray) -> int:
    """Sender side: the wire bits/s of short ACK trains, written to ``out`` (room for ``len(t) − 1``); returns
    how many. A pair of consecutive advancing ACK events qualifies when its later data segment found the
    bottleneck busy — its queueing delay (RTT sample less the minimum) at least :data:`QUEUED` × the ACK gap,
    so it waited behind the earlier one and the bottleneck spaced them — at segment boundaries, none of its
    bytes retransmitted. Each run of qualifying pairs is a train; past its first pair (a token-bucket shaper
    lets the first packets of a burst through at line rate), every :data:`TRAIN` consecutive pairs give one
    sample, their bytes over their time (sliding): the return path's jitter moves single ACKs — one early,
    the next late — and cancels within a train (pathrate reads capacity from trains for the same reasons).
    ``t``/``ack``/``rtt``: ACK events (last row of each timestamp); ``seg_end``: the new segments' ends
    (sorted); ``retx_lo``: starts of retransmitted segments (sorted); ``bits``/``gaps``: scratch of
    :data:`TRAIN`."""
    n = len(t)
    m = 0
    run = 0
    hint = 0
    for k in range(1, n):
        ok = False
        a0, a1 = ack[k - 1], ack[k]
        gap = t[k] - t[k - 1]
        nbytes = a1 - a0
        nseg = (nbytes + mss // 2) // mss
        if a1 > a0 and gap > 0.0 and 1 <= nseg <= MAX_PAIR_SEGMENTS and rtt[k] - rtt_min >= QUEUED * gap:
            i0 = _seek(seg_end, a0, hint)
            i1 = _seek(seg_end, a1, i0)
            hint = i1
            # at segment boundaries (not partial ACKs), and none of the bytes retransmitted
            if i0 < len(seg_end) and i1 < len(seg_end) and seg_end[i0] == a0 and seg_end[i1] == a1:
                r = search_sorted(retx_lo, a0, False)
                ok = not (r < len(retx_lo) and retx_lo[r] < a1)
        if not ok:
            run = 0
            continue
        run += 1
        if run >= 2:  # the train's first pair is left out
            slot = (run - 2) % TRAIN
            bits[slot] = 8.0 * (nbytes + nseg * overhead)
            gaps[slot] = gap
            if run - 1 >= TRAIN:
                out[m] = bits.sum() / gaps.sum()
                m += 1
    return m


@njit(cache=True, nogil=True)
def data_pairs(out: np.ndarray, t: np.ndarray, seq: np.ndarray, length: np.ndarray, kind: np.ndarray, mss: int,
                overhead: int) -> int:
    """After the bottleneck: wire bits/s of consecutive, in-sequence, full-size new data segments, written to
    ``out`` (room for ``len(t) − 1``); returns how many."""
    m = 0
    for i in range(1, len(t)):
        gap = t[i] - t[i - 1]
        if (gap > 0.0 and kind[i] == 0 and kind[i - 1] == 0 and length[i] >= mss and length[i - 1] >= mss
                and seq[i] == seq[i - 1] + length[i - 1]):
            out[m] = 8.0 * (length[i] + overhead) / gap
            m += 1
    return m


def bin_index(rates: np.ndarray) -> np.ndarray:
    """Each pair rate's histogram bin (out of range below 0 and from :data:`HIST_BINS`). numpy's ``log``, not
    the C library's: the two differ in the last bit on some inputs, and the bins are numpy's."""
    return np.floor(np.log(rates / HIST_LO_BPS) / LOG_BIN).astype(np.int64)


@njit(cache=True, nogil=True)
def mode_of(bins: np.ndarray, counts: np.ndarray, floor_bps: float) -> tuple[int, int, int]:
    """The capacity mode of a dispersion histogram (pathrate), given sparse: its occupied ``bins`` ascending and
    their ``counts``. The densest window of ±:data:`MODE_REL` among the bins at or above ``floor_bps`` locates
    it; the estimate is the median of the samples within ±:data:`REFINE_REL` of that window's centre (a narrow
    window finds the peak, a wider one centres it when few pairs scatter around the capacity). Returns the
    estimate's bin (−1 = none; its rate is ``BIN_RATES[bin]``), the samples in the densest window and the
    samples at or above the floor. The dense histogram's rule walked over the occupied bins only: its densest
    window is the first of the windows that start at 0 or end at an occupied bin (a window's count rises only
    where its end reaches one), so a short flow's few bins cost a few steps, not :data:`HIST_BINS`."""
    lo = max(0, math.floor(math.log(max(floor_bps, HIST_LO_BPS) / HIST_LO_BPS) / LOG_BIN))
    size = HIST_BINS - lo  # the bins at or above the floor: positions 0 .. size − 1
    first = search_sorted(bins, lo, False)
    above = 0
    for k in range(first, len(bins)):
        above += counts[k]
    if above == 0:
        return -1, 0, 0
    j = 0  # the densest window's start and count
    count = above
    if size >= MODE_WIDTH:
        count = -1
        left = first  # the window [start, start + width): bins left .. right − 1
        right = first
        inside = 0
        for k in range(first - 1, len(bins)):
            start = 0 if k < first else bins[k] - lo - MODE_WIDTH + 1
            if k >= first and start <= 0:
                continue
            while right < len(bins) and bins[right] - lo < start + MODE_WIDTH:
                inside += counts[right]
                right += 1
            while left < right and bins[left] - lo < start:
                inside -= counts[left]
                left += 1
            if inside > count:
                count = inside
                j = start
    centre = j + MODE_WIDTH // 2
    a, b = max(0, centre - REFINE_REACH), min(size, centre + REFINE_REACH + 1)
    total = 0
    for k in range(first, len(bins)):
        if a <= bins[k] - lo < b:
            total += counts[k]
    half = (total + 1) / 2
    run = 0
    for k in range(first, len(bins)):
        if a <= bins[k] - lo < b:
            run += counts[k]
            if run >= half:
                return bins[k], count, above
    return -1, count, above  # (unreachable: the window lies within the refinement's reach)


@njit(cache=True, nogil=True)
def row_modes(offsets: np.ndarray, bins: np.ndarray, counts: np.ndarray, floor_bps: np.ndarray,
              pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mode_of` of every row of a batch (none for a row without pairs)."""
    n = len(offsets) - 1
    at = np.full(n, -1, np.int64)
    in_mode = np.zeros(n, np.int64)
    above = np.zeros(n, np.int64)
    for i in range(n):
        if pairs[i]:
            h0, h1 = offsets[i], offsets[i + 1]
            at[i], in_mode[i], above[i] = mode_of(bins[h0:h1], counts[h0:h1], floor_bps[i])
    return at, in_mode, above


@njit(cache=True, nogil=True)
def sparse_histograms(idx: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each run of bin indices (``offsets``) as a sparse histogram: its occupied bins in range, ascending, and
    their counts, concatenated, with their offsets."""
    n = len(offsets) - 1
    out_off = np.zeros(n + 1, np.int64)
    bins = np.empty(len(idx), np.int64)
    counts = np.empty(len(idx), np.int64)
    dense = np.zeros(HIST_BINS, np.int64)
    w = 0
    for i in range(n):
        for k in range(offsets[i], offsets[i + 1]):
            if 0 <= idx[k] < HIST_BINS:
                if dense[idx[k]] == 0:
                    bins[w] = idx[k]
                    w += 1
                dense[idx[k]] += 1
        w = emit_histogram(dense, bins, counts, out_off[i], w)
        out_off[i + 1] = w
    return out_off, bins[:w].copy(), counts[:w].copy()


@njit(cache=True, nogil=True)
def emit_histogram(dense: np.ndarray, bins: np.ndarray, counts: np.ndarray, lo: int, hi: int) -> int:
    """A run's histogram from its dense counts: ``bins[lo:hi]``, the bins it occupied, sorted, with their counts
    (and ``dense`` cleared for the next run); returns ``hi``."""
    sort_in_place(bins[lo:hi])
    for k in range(lo, hi):
        counts[k] = dense[bins[k]]
        dense[bins[k]] = 0
    return hi

