"""The path a flow crossed, read from its capture (ESTIMATORS.md §9): bottleneck capacity, base RTT, buffer,
buffer/BDP and the random-loss rate, each with its evidence — or ``None`` with the reason.

**Capacity** — packet-pair dispersion. Two packets that queue back to back at the bottleneck leave it spaced
by ``size/C`` (Keshav's packet pair; Jacobson's "pipe"). Pairs disturbed by cross traffic read low
(expansion: another packet got in between) or high (compression: a later queue bunched them up); the
capacity is the **mode of the dispersion histogram above the flow's average dispersion rate** (ADR), as in
pathrate (Dovrolis, Ramanathan, Moore, "Packet-dispersion techniques and a capacity-estimation
methodology", IEEE/ACM ToN 12(6), 2004: the capacity mode is a local mode of the histogram above ADR; the
flow's own rate-limited spacing lies at or below ADR). The pairs:

* data seen **after the bottleneck** (receiver side): consecutive full-size, in-sequence data segments,
  ``wire bytes of the later / arrival gap``;
* at the **sender**, and at a **mid-path** tap (which may sit before the bottleneck — the testbed's does —
  while the ACKs it sees have always crossed the path): the ACKs those segments clocked — consecutive
  advancing ACKs, ``wire bytes newly acknowledged / ACK gap`` — kept only when the later segment found the
  bottleneck busy (its queueing delay, RTT sample less the minimum, is at least :data:`QUEUED` × the ACK
  gap: it waited behind the earlier one, so the bottleneck, not the sender, spaced them), none of them was
  retransmitted, and the pair before it qualified too (inside a train: a token-bucket shaper lets the first
  packets after an idle spell through at line rate).

The histogram has log-spaced bins :data:`BIN_REL` wide; its mode is the densest window of ±:data:`MODE_REL`,
the capacity the median of the samples within ±:data:`REFINE_REL` of it. Sizes are **wire** bytes: payload
plus TCP/IP headers plus a 14-byte Ethernet header — what a Linux qdisc (and so the testbed's ``tbf rate``)
counts — so the figure is the link's rate, not the payload's (the payload's ceiling, ``C·mss/wire``, is
given in the evidence).

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
:data:`DEEP_QUANTILE` RTT quantile, at least :data:`MIN_QUEUE_PACKETS` full-size packets) are candidates; they
are overflows when at least half of them lie within ±:data:`OVERFLOW_SPREAD` of their median (those are),
else none is. The buffer is ``median queueing delay at the overflows × C``; ``buffer_over_bdp`` =
B/(C·base RTT).

**Random loss** — the segments retransmitted in loss episodes not preceded by a full queue, per new data
segment sent.

Every figure is ``None`` with its reason when the capture cannot show it. :class:`PathParts` holds what one
flow contributes (a fixed-size dispersion histogram, its RTT and loss evidence), so that the flows sharing a
bottleneck (:func:`bottleneck_groups`) are pooled (:func:`merge_parts`) and judged as one path: their joint
rate is the floor of the mode (on a shared link one flow's pairs are spread by the others' packets: two flows
interleaving read C/2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numba import njit

#: Bytes of one Ethernet header: the link layer a Linux qdisc counts in its rate.
ETHERNET_HEADER = 14
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
#: The share of one full-size segment's transmission time at capacity taken off the smallest RTT sample.
SERIALISATION_SHARE = 0.5
#: Only pair rates at or above this share of the flow's average dispersion rate (ADR) can be the mode.
ADR_SHARE = 0.9
#: Capacity needs at least this many pairs in its mode.
MIN_MODE_PAIRS = 5
#: ACKs acknowledging more than this many segments are not pairs (stretch ACKs after a hole filled).
MAX_PAIR_SEGMENTS = 4
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


def wire_overhead(ipv6: bool, timestamps: bool) -> int:
    """Header bytes a full-size segment carries on an Ethernet link: Ethernet + IP + TCP (+ timestamps)."""
    return ETHERNET_HEADER + (40 if ipv6 else 20) + 20 + (12 if timestamps else 0)


@dataclass(frozen=True)
class LinkInfo:
    """What the path inference needs from the flow's summary besides its tables."""

    vantage: str
    mss: int
    overhead: int  # header bytes per segment on the wire (:func:`wire_overhead`)
    delivery_rate_bps: float  # payload bits/s while the flow delivered (ingest's ``delivery_rate_bps``)
    data_segments: int
    confidence: str | None = None  # a reconstructed flow's own confidence (§7), which caps the path's
    span: tuple[float, float] = (0.0, 0.0)  # the flow's first and last packet, epoch s

    @staticmethod
    def of(summary: Any) -> LinkInfo:
        """From an ingest ``FlowSummary`` or its dict."""
        get = summary.get if isinstance(summary, Mapping) else (lambda k: getattr(summary, k, None))
        sender = str(get("sender") or "")
        ipv6 = sender.startswith("[") or sender.count(":") > 1  # "10.0.0.1:80" is IPv4 with its port
        return LinkInfo(str(get("vantage") or "sender"), int(get("mss") or 0),
                        wire_overhead(ipv6, bool(get("timestamps"))), float(get("delivery_rate_bps") or 0.0),
                        int(get("data_segments") or 0), get("confidence"),
                        (float(get("start_t") or 0.0), float(get("end_t") or 0.0)))


@dataclass
class PathParts:
    """One flow's (or a group's pooled) evidence about its path."""

    flows: list[int]
    source: str  # "data" (after the bottleneck) | "acks" (ACK spacing of data queued at the bottleneck)
    hist_bins: np.ndarray  # int64: the occupied bins of the pair-rate histogram (wire bits/s, log bins)
    hist_counts: np.ndarray  # int64: their counts (sparse: a short flow holds a few bins, not HIST_BINS)
    pairs: int  # pair samples in the histogram
    adr_bps: float  # average dispersion rate (wire bits/s), the mode's floor
    wire_mss: int  # wire bytes of a full-size segment
    mss: int
    rtt_samples: int
    rtt_min_s: float  # NaN = no sample
    deep_queue_s: float  # the DEEP_QUANTILE queueing delay over the flow (NaN = none)
    top_queue_s: float  # the TOP_QUANTILE one: what the buffer capped (NaN = none)
    loss_queue_s: list[float] = field(default_factory=list)  # queueing delay before each loss episode
    loss_retx: list[int] = field(default_factory=list)  # segments retransmitted in each episode
    data_segments: int = 0
    confidence_cap: str | None = None
    span: tuple[float, float] = (0.0, 0.0)  # epoch s
    #: The histogram's mode once found (a group's pooled evidence is judged once per member)
    _mode: tuple[float | None, int, int] | None = field(default=None, repr=False, compare=False)

    def mode(self) -> tuple[float | None, int, int]:
        """:func:`histogram_mode` of this evidence above :data:`ADR_SHARE` × its average dispersion rate."""
        if self._mode is None:
            self._mode = (histogram_mode(dense_histogram(self), ADR_SHARE * self.adr_bps) if self.pairs
                          else (None, 0, 0))
        return self._mode


# ---------------------------------------------------------------------------------------------- capacity


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
    return int(np.searchsorted(a, x))


@njit(cache=True, nogil=True)
def _ack_pairs(t: np.ndarray, ack: np.ndarray, rtt: np.ndarray, rtt_min: float, seg_end: np.ndarray,
               retx_lo: np.ndarray, mss: int, overhead: int, queued: float, max_segments: int, train: int
               ) -> np.ndarray:
    """Sender side: the wire bits/s of short ACK trains. A pair of consecutive advancing ACK events qualifies
    when its later data segment found the bottleneck busy — its queueing delay (RTT sample less the minimum)
    at least ``queued`` × the ACK gap, so it waited behind the earlier one and the bottleneck spaced them —
    at segment boundaries, none of its bytes retransmitted. Each run of qualifying pairs is a train; past
    its first pair (a token-bucket shaper lets the first packets of a burst through at line rate), every
    ``train`` consecutive pairs give one sample, their bytes over their time (sliding): the return path's
    jitter moves single ACKs — one early, the next late — and cancels within a train (pathrate reads
    capacity from trains for the same reasons). ``t``/``ack``/``rtt``: ACK events (last row of each
    timestamp); ``seg_end``: the new segments' ends (sorted); ``retx_lo``: starts of retransmitted segments
    (sorted)."""
    n = len(t)
    out = np.empty(max(n - 1, 0))
    bits = np.zeros(train)
    gaps = np.zeros(train)
    m = 0
    run = 0
    hint = 0
    for k in range(1, n):
        ok = False
        a0, a1 = ack[k - 1], ack[k]
        gap = t[k] - t[k - 1]
        nbytes = a1 - a0
        nseg = (nbytes + mss // 2) // mss
        if a1 > a0 and gap > 0.0 and 1 <= nseg <= max_segments and rtt[k] - rtt_min >= queued * gap:
            i0 = _seek(seg_end, a0, hint)
            i1 = _seek(seg_end, a1, i0)
            hint = i1
            # at segment boundaries (not partial ACKs), and none of the bytes retransmitted
            if i0 < len(seg_end) and i1 < len(seg_end) and seg_end[i0] == a0 and seg_end[i1] == a1:
                r = np.searchsorted(retx_lo, a0)
                ok = not (r < len(retx_lo) and retx_lo[r] < a1)
        if not ok:
            run = 0
            continue
        run += 1
        if run >= 2:  # the train's first pair is left out
            slot = (run - 2) % train
            bits[slot] = 8.0 * (nbytes + nseg * overhead)
            gaps[slot] = gap
            if run - 1 >= train:
                out[m] = bits.sum() / gaps.sum()
                m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def _data_pairs(t: np.ndarray, seq: np.ndarray, length: np.ndarray, new: np.ndarray, mss: int,
                overhead: int) -> np.ndarray:
    """After the bottleneck: wire bits/s of consecutive, in-sequence, full-size new data segments."""
    n = len(t)
    out = np.empty(max(n - 1, 0))
    m = 0
    for i in range(1, n):
        gap = t[i] - t[i - 1]
        if (gap > 0.0 and new[i] and new[i - 1] and length[i] >= mss and length[i - 1] >= mss
                and seq[i] == seq[i - 1] + length[i - 1]):
            out[m] = 8.0 * (length[i] + overhead) / gap
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def _range_max(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``max(v[lo[i]:hi[i]])`` per range, NaN for an empty one."""
    out = np.full(len(lo), np.nan)
    for i in range(len(lo)):
        if hi[i] > lo[i]:
            out[i] = v[lo[i]:hi[i]].max()
    return out


def _rank_value(x: np.ndarray, q: float) -> float:
    """The sample at rank ``q·(n−1)`` (no interpolation): a sort for a short flow (``np.quantile``'s own cost
    is most of a short flow's inference), ``np.quantile`` for a long one (``np.partition`` alone slows to
    seconds on a million samples of two distinct values)."""
    if len(x) <= 4096:
        return float(np.sort(x)[int(q * (len(x) - 1))])
    return float(np.quantile(x, q, method="lower"))


def _histogram(rates: np.ndarray) -> np.ndarray:
    """The dense dispersion histogram of pair rates (bits/s): :data:`HIST_BINS` log bins."""
    idx = np.floor(np.log(rates / HIST_LO_BPS) / math.log1p(BIN_REL)).astype(np.int64)
    idx = idx[(idx >= 0) & (idx < HIST_BINS)]
    return np.bincount(idx, minlength=HIST_BINS).astype(np.int64)


def _sparse(hist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bins = np.flatnonzero(hist)
    return bins, hist[bins]


def dense_histogram(parts: PathParts) -> np.ndarray:
    """The evidence's histogram as :data:`HIST_BINS` counts (pooled groups add their flows' bins)."""
    return np.bincount(parts.hist_bins, weights=parts.hist_counts, minlength=HIST_BINS).astype(np.int64)


def _bin_rate(i: float) -> float:
    return HIST_LO_BPS * (1 + BIN_REL) ** (i + 0.5)


def histogram_mode(hist: np.ndarray, floor_bps: float) -> tuple[float | None, int, int]:
    """The capacity mode of a dispersion histogram (pathrate): the densest window of ±:data:`MODE_REL` among
    bins at or above ``floor_bps`` locates it; the estimate is the median of the samples within
    ±:data:`REFINE_REL` of that window's centre (a narrow window finds the peak, a wider one centres it
    when few pairs scatter around the capacity). Returns (the estimate, samples in the densest window,
    samples at or above the floor)."""
    lo = max(0, math.floor(math.log(max(floor_bps, HIST_LO_BPS) / HIST_LO_BPS) / math.log1p(BIN_REL)))
    h = hist[lo:]
    above = int(h.sum())
    if above == 0:
        return None, 0, 0
    width = max(1, round(2 * math.log1p(MODE_REL) / math.log1p(BIN_REL)))
    csum = np.concatenate(([0], np.cumsum(h)))
    win = csum[width:] - csum[:-width] if len(h) >= width else csum[-1:] - csum[:1]
    j = int(np.argmax(win))
    count = int(win[j])
    reach = round(math.log1p(REFINE_REL) / math.log1p(BIN_REL))
    centre = j + width // 2
    a, b = max(0, centre - reach), min(len(h), centre + reach + 1)
    sel = h[a:b]
    half = int(np.searchsorted(np.cumsum(sel), (int(sel.sum()) + 1) / 2))
    return _bin_rate(lo + a + half), count, above


# ---------------------------------------------------------------------------------------------- evidence


def _column(table: Any, name: str, dtype: type) -> np.ndarray:
    """A column of a Polars frame (nulls as NaN) or of a mapping of numpy arrays, as numpy."""
    col = table[name]
    if isinstance(col, pl.Series):
        if isinstance(col.dtype, pl.Enum | pl.Categorical):
            col = col.to_physical()
        elif col.dtype == pl.String:
            col = col.replace_strict({"new": 0, "retransmission": 1}, default=2, return_dtype=pl.Int8)
        if dtype is np.float64 and col.null_count():  # (a Polars call costs ~0.1 ms: only when needed)
            col = col.cast(pl.Float64).fill_null(math.nan)
        col = col.to_numpy()
    return np.asarray(col, dtype)


def flow_parts(flow_id: int, link: LinkInfo, acks: Any, segments: Any, episodes: Any) -> PathParts:
    """One flow's path evidence. ``acks``: columns ``t_rel``, ``ack``, ``rtt``, ``srtt`` (ACK rows);
    ``segments``: ``t_rel``, ``seq``, ``len``, ``kind`` (0 = new, 1 = retransmission, as ingest codes them);
    ``episodes``: columns ``start_t_rel`` and ``retransmissions`` (a Polars frame or a mapping)."""
    mss = max(int(link.mss), 1)
    after = link.vantage == "receiver"  # a mid-path tap may sit before the bottleneck: its ACKs crossed it
    st = _column(segments, "t_rel", np.float64)
    seq = _column(segments, "seq", np.int64)
    ln = _column(segments, "len", np.int64)
    kind = _column(segments, "kind", np.int64)
    new = kind == 0
    at = _column(acks, "t_rel", np.float64)
    if after:
        rates = _data_pairs(st, seq, ln, new, mss, link.overhead)
    else:
        # ACK rows with equal timestamps are one event (§1.1): its last row (views when every row is one)
        last = np.ones(len(at), bool)
        if len(at) > 1:
            last[:-1] = at[1:] != at[:-1]

        def events(a: np.ndarray) -> np.ndarray:
            return a if every else a[last]

        every = bool(last.all())
        end = seq[new] + ln[new] if not new.all() else seq + ln
        if len(end) > 1 and bool(np.any(end[1:] < end[:-1])):  # (new data is sent in sequence order)
            end.sort()
        retx = np.sort(seq[(kind == 1) & (ln > 0)])
        rtt_ev = events(_column(acks, "rtt", np.float64))
        rtt_min_ev = float(np.nanmin(rtt_ev)) if len(rtt_ev) and not np.isnan(rtt_ev).all() else math.nan
        rates = (_ack_pairs(events(at), events(_column(acks, "ack", np.int64)), rtt_ev, rtt_min_ev, end, retx,
                            mss, link.overhead, QUEUED, MAX_PAIR_SEGMENTS, TRAIN)
                 if math.isfinite(rtt_min_ev) else np.empty(0))
    wire_mss = mss + link.overhead
    adr = link.delivery_rate_bps * wire_mss / mss
    rtt = _column(acks, "rtt", np.float64)
    have = ~np.isnan(rtt)
    rtt_t, rtt_v = at[have], rtt[have]
    rtt_min = float(rtt_v.min()) if len(rtt_v) else math.nan
    deep = _rank_value(rtt_v, DEEP_QUANTILE) - rtt_min if len(rtt_v) else math.nan
    top = _rank_value(rtt_v, TOP_QUANTILE) - rtt_min if len(rtt_v) else math.nan
    srtt = _column(acks, "srtt", np.float64)
    has_eps = len(episodes["start_t_rel"]) > 0
    starts = _column(episodes, "start_t_rel", np.float64) if has_eps else np.empty(0)
    retx_n = [int(x) for x in _column(episodes, "retransmissions", np.int64)] if has_eps else []
    # the RTT samples of the last smoothed RTT before each episode's first retransmission
    k = np.searchsorted(at, starts, side="right") - 1
    sk = srtt[np.maximum(k, 0)] if len(srtt) else np.full(len(starts), math.nan)
    span = np.where((k >= 0) & np.isfinite(sk), sk, rtt_min if math.isfinite(rtt_min) else 0.0)
    lo = np.searchsorted(rtt_t, starts - span, side="left")
    hi = np.searchsorted(rtt_t, starts, side="right")
    loss_q = [float(x) for x in _range_max(rtt_v, lo, hi) - rtt_min]
    bins, counts = _sparse(_histogram(rates)) if len(rates) else (np.empty(0, np.int64), np.empty(0, np.int64))
    return PathParts([flow_id], "data" if after else "acks", bins, counts, len(rates), adr, wire_mss, mss,
                     len(rtt_v), rtt_min, deep, top, loss_q, retx_n, int(link.data_segments), link.confidence,
                     link.span)


def merge_parts(parts: Sequence[PathParts]) -> PathParts:
    """Pool the evidence of flows that share one bottleneck: histograms add, the floor is the flows' joint
    average rate (their bits over the span they cover together: they shared the link), the base RTT the
    smallest, the losses all of theirs."""
    if len(parts) == 1:
        return parts[0]
    caps = [p.confidence_cap for p in parts if p.confidence_cap]
    lo, hi = min(p.span[0] for p in parts), max(p.span[1] for p in parts)
    bits = sum(p.adr_bps * (p.span[1] - p.span[0]) for p in parts)
    return PathParts(
        [f for p in parts for f in p.flows], parts[0].source if len({p.source for p in parts}) == 1 else "mixed",
        np.concatenate([p.hist_bins for p in parts]), np.concatenate([p.hist_counts for p in parts]),
        sum(p.pairs for p in parts),
        bits / (hi - lo) if hi > lo else max(p.adr_bps for p in parts),
        max(p.wire_mss for p in parts), max(p.mss for p in parts), sum(p.rtt_samples for p in parts),
        float(np.nanmin([p.rtt_min_s for p in parts])) if any(math.isfinite(p.rtt_min_s) for p in parts) else math.nan,
        float(np.nanmax([p.deep_queue_s for p in parts])) if any(math.isfinite(p.deep_queue_s) for p in parts)
        else math.nan,
        float(np.nanmax([p.top_queue_s for p in parts])) if any(math.isfinite(p.top_queue_s) for p in parts)
        else math.nan,
        [q for p in parts for q in p.loss_queue_s], [r for p in parts for r in p.loss_retx],
        sum(p.data_segments for p in parts), "low" if "low" in caps else (caps[0] if caps else None), (lo, hi))


# ---------------------------------------------------------------------------------------------- the figures

PATH_KEYS = ("capacity_bps", "base_rtt_s", "buffer_bytes", "buffer_over_bdp", "random_loss_rate", "confidence",
             "evidence")
_RANK = {"low": 0, "medium": 1, "high": 2}


def infer(parts: PathParts, shared: PathParts | None = None) -> dict[str, Any]:
    """The §9 ``path`` object from (one flow's or a group's) evidence: exactly :data:`PATH_KEYS`; ``evidence``
    maps each figure to one sentence (its method and numbers, or why it is null). ``shared``: the pooled
    evidence of the flows that share this flow's bottleneck (:func:`merge_parts`), whose capacity and base
    RTT are the path's — one flow's pairs on a shared link are spread by the others' packets (each of n
    flows interleaving evenly reads C/n), which its own average rate does not rule out."""
    ev: dict[str, str] = {}
    grades: list[str] = []
    own = parts
    if shared is not None and len(shared.flows) > 1:
        parts = shared
    how = ("data segments seen after the bottleneck" if parts.source == "data" else
           "ACK spacing of data queued back to back at the bottleneck" if parts.source == "acks" else
           "the pooled data and ACK pairs")
    if len(parts.flows) > 1:
        named = ", ".join(map(str, parts.flows[:8])) + (", …" if len(parts.flows) > 8 else "")
        how += f" of the {len(parts.flows)} flows sharing the bottleneck ({named})"
    cap, in_mode, above = parts.mode()
    if cap is None or in_mode < MIN_MODE_PAIRS:
        capacity = None
        grades.append("low")  # without it no queue has a depth in packets: the other figures are guesses
        ev["capacity_bps"] = (f"null: too few packet pairs to find a dispersion mode ({in_mode} in the densest "
                              f"±{MODE_REL:.0%} window of {parts.pairs} pairs from {how}; at least "
                              f"{MIN_MODE_PAIRS} needed): the flow seldom kept the bottleneck's queue busy")
    else:
        capacity = cap
        share = in_mode / above
        grades.append("high" if in_mode >= 30 and share >= 0.2 else "medium" if in_mode >= 10 else "low")
        ev["capacity_bps"] = (f"packet-pair dispersion mode (pathrate) from {how}: {in_mode} of {above} pairs "
                              f"above {ADR_SHARE:g}× the average dispersion rate {parts.adr_bps / 1e6:.3f} Mbit/s "
                              f"lie within ±{MODE_REL:.0%} of {cap / 1e6:.3f} Mbit/s ({parts.pairs} pairs in all; "
                              f"wire size {parts.wire_mss} B per {parts.mss} B segment, a payload ceiling of "
                              f"{cap * parts.mss / parts.wire_mss / 1e6:.3f} Mbit/s)")
    if not math.isfinite(parts.rtt_min_s):
        base = None
        ev["base_rtt_s"] = "null: no RTT sample in the capture"
    else:
        ser = SERIALISATION_SHARE * 8.0 * parts.wire_mss / capacity if capacity else 0.0
        base = parts.rtt_min_s - ser if parts.rtt_min_s > ser else parts.rtt_min_s
        grades.append("high" if parts.rtt_samples >= 20 else "low")
        ev["base_rtt_s"] = (f"smallest of {parts.rtt_samples} RTT samples{' of the group' if parts is not own else ''}"
                            f" {parts.rtt_min_s * 1e3:.3f} ms"
                            + (f", less half a full-size segment's transmission at capacity ({ser * 1e3:.3f} ms)"
                               if capacity else " (capacity unknown: its own transmission time not removed)"))
    buffer, over, random_rate = _buffer_and_loss(own if parts is not own else parts, capacity, base, ev,
                                                 parts.rtt_min_s)
    if own.confidence_cap:
        grades.append(own.confidence_cap)
    confidence = min(grades, key=_RANK.__getitem__) if grades else "low"
    return {"capacity_bps": capacity, "base_rtt_s": base, "buffer_bytes": buffer, "buffer_over_bdp": over,
            "random_loss_rate": random_rate, "confidence": confidence,
            "evidence": {k: ev[k] for k in PATH_KEYS[:5]}}


def _buffer_and_loss(parts: PathParts, capacity: float | None, base: float | None, ev: dict[str, str],
                     rtt_min: float) -> tuple[float | None, float | None, float | None]:
    # queueing delays relative to the path's RTT minimum (a flow that joined a standing queue never saw it)
    shift = parts.rtt_min_s - rtt_min if math.isfinite(parts.rtt_min_s) and math.isfinite(rtt_min) else 0.0
    q = np.array(parts.loss_queue_s, np.float64) + shift
    retx = np.array(parts.loss_retx, np.int64)
    n = len(q)
    deep = parts.deep_queue_s + shift
    min_deep = MIN_QUEUE_PACKETS * 8.0 * parts.wire_mss / capacity if capacity else math.inf
    queued = bool(math.isfinite(deep) and deep >= min_deep)
    full = _overflows(q, deep, parts.top_queue_s + shift) if n and queued else np.zeros(n, bool)
    buffer = over = None
    if capacity is None:
        ev["buffer_bytes"] = "null: the capacity is unknown, so no queueing delay converts to bytes"
    elif n == 0:
        ev["buffer_bytes"] = ("null: no loss in the capture, so the buffer never overflowed; the deepest queue "
                              f"seen was {_queue_text(deep, capacity)}")
    elif not full.any():
        ev["buffer_bytes"] = (f"null: none of the {n} losses followed a full queue (the deepest queue seen, "
                              f"{_queue_text(deep, capacity)}, is "
                              + ("below the buffer-overflow level)" if not queued else
                                 "never reached at a loss)"))
    else:
        delay = float(np.median(q[full]))
        buffer = delay * capacity / 8.0
        ev["buffer_bytes"] = (f"queueing delay before the {int(full.sum())} of {n} losses that followed a full "
                              f"queue (at least {FULL_QUEUE_SHARE:.0%} of the deepest, "
                              f"{deep * 1e3:.1f} ms): median {delay * 1e3:.1f} ms × capacity")
    if buffer is not None and base:
        over = buffer / (capacity * base / 8.0)  # type: ignore[operator]  # capacity is known with a buffer
        ev["buffer_over_bdp"] = (f"{buffer:.0f} B over BDP = capacity × base RTT = "
                                 f"{capacity * base / 8.0:.0f} B")  # type: ignore[operator]
    else:
        ev["buffer_over_bdp"] = "null: " + ("no buffer figure" if buffer is None else "no base RTT")
    if parts.data_segments <= 0:
        ev["random_loss_rate"] = "null: no data segment sent"
        return buffer, over, None
    if n == 0:
        ev["random_loss_rate"] = f"no loss episode among {parts.data_segments} data segments"
        return buffer, over, 0.0
    rnd = ~full
    lost = int(retx[rnd].sum())
    ev["random_loss_rate"] = (f"{lost} segments retransmitted in the {int(rnd.sum())} of {n} loss episodes not "
                              f"preceded by a full queue, per {parts.data_segments} data segments sent"
                              + ("" if capacity else " (without the capacity no queue can be told full: every "
                                 "loss is counted, an upper bound)"))
    return buffer, over, lost / parts.data_segments


def _overflows(q: np.ndarray, deep: float, top: float) -> np.ndarray:
    """Which losses came from a full buffer. Every loss of a lone flow ends a climb of its queue, so the level
    alone does not tell; what does is that a drop-tail buffer overflows at one level, again and again, and
    caps the queue there, while random losses strike at any level. Candidates are the losses at a queue of
    at least :data:`FULL_QUEUE_SHARE` of the deepest; those within ±:data:`OVERFLOW_SPREAD` of the
    candidates' median are overflows when they are at least half of the candidates and either
    :data:`MIN_OVERFLOWS` losses recur there or the flow never queued beyond :data:`CAP_SLACK` × that level
    (one loss alone must be the cap: else a random loss merely struck a high queue under a larger buffer);
    else none is."""
    none = np.zeros(len(q), bool)
    cand = np.isfinite(q) & (q >= FULL_QUEUE_SHARE * deep)
    if not cand.any():
        return none
    mid = float(np.median(q[cand]))
    near = cand & (np.abs(q - mid) <= OVERFLOW_SPREAD * mid)
    k = int(near.sum())
    capped = not math.isfinite(top) or top <= CAP_SLACK * float(np.median(q[near])) if k else False
    return near if 2 * k >= int(cand.sum()) and (k >= MIN_OVERFLOWS or capped) else none


def _queue_text(deep: float, capacity: float) -> str:
    if not math.isfinite(deep):
        return "unknown (no RTT sample)"
    return f"{deep * 1e3:.1f} ms ≈ {deep * capacity / 8.0:.0f} B"


def endpoint_host(endpoint: str) -> str:
    """``10.0.0.1:5201`` / ``[2001:db8::1]:80`` → the host part."""
    host = endpoint.rsplit(":", 1)[0] if endpoint.count(":") == 1 or endpoint.startswith("[") else endpoint
    return host.strip("[]")


def bottleneck_groups(flows: Sequence[tuple[int, str, str, float, float]]) -> list[list[int]]:
    """Flows that share a bottleneck: ``(flow_id, sender, receiver, start, end)`` → groups of flow ids (each
    flow in one; groups of one for flows alone). The rule (the capture shows no topology): flows between the
    same two hosts, in the same direction, whose lifetimes overlap, cross the same path at the same time and
    so share its bottleneck; overlaps chain (a flow overlapping two others joins them)."""
    by_pair: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for fid, snd, rcv, start, end in flows:
        by_pair.setdefault((endpoint_host(snd), endpoint_host(rcv)), []).append((fid, start, end))
    groups: list[list[int]] = []
    for members in by_pair.values():
        members.sort(key=lambda m: m[1])
        current: list[int] = []
        reach = -math.inf
        for fid, start, end in members:
            if current and start > reach:
                groups.append(current)
                current = []
            current.append(fid)
            reach = max(reach, end) if current[1:] else end
        if current:
            groups.append(current)
    return sorted(groups, key=lambda g: g[0])


def group_line(group: Mapping[str, Any]) -> str:
    """The CLI's line for a group of flows sharing a bottleneck: its path, how each sender backed off, and
    seed 002 beside the measured shares where a NewReno-like and a Westwood+-like sender share it."""
    kinds = ", ".join(f"{m['flow_id']} {m['kind']}" + (f" (b {m['decrease']:.2f})" if m.get("decrease") is not None
                                                       else "") for m in group.get("members") or [])
    text = f"path: {path_line(group['path'])}; senders: {kinds}"
    s = group.get("seed002")
    if s:
        text += (f"; seed 002 at this buffer/BDP: NewReno {s['model']['newreno']:.2f}, Westwood+ "
                 f"{s['model']['westwood_plus']:.2f} of C (measured {s['measured']['newreno']:.2f}, "
                 f"{s['measured']['westwood_plus']:.2f})")
    return text


def path_line(path: Mapping[str, Any]) -> str:
    """The CLI's concise ``path:`` line."""
    def num(v: Any, fmt: str) -> str:
        return "—" if v is None else format(v, fmt)
    cap = path.get("capacity_bps")
    rtt = path.get("base_rtt_s")
    loss = path.get("random_loss_rate")
    return (f"capacity {num(None if cap is None else cap / 1e6, '.2f')} Mbit/s, base RTT "
            f"{num(None if rtt is None else rtt * 1e3, '.1f')} ms, buffer {num(path.get('buffer_bytes'), '.0f')} B "
            f"({num(path.get('buffer_over_bdp'), '.2f')}×BDP), random loss "
            f"{num(None if loss is None else 100 * loss, '.2f')} %, confidence {path.get('confidence')}")
