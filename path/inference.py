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

**Many flows at once** (issue #26): :func:`flow_parts_batch` reads the concatenated columns of many flows (with
their offsets) in one compiled pass and returns a :class:`PathBatch` — every flow's evidence as columns, a
sequence of :class:`PathParts` (views of its rows); :meth:`PathBatch.merge` pools groups of rows and
:func:`infer_batch` computes the figures of many rows as arrays before it builds each row's ``path`` dict.
:func:`flow_parts`, :func:`merge_parts` and :func:`infer` are the same code on one flow.
"""


from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import pairwise
from typing import Any, overload

import numpy as np
import polars as pl
from numba import njit

from ackreplay.kernels import median_in_place, search_sorted, sort_in_place

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

#: One histogram bin's width in natural-log units.
LOG_BIN = math.log1p(BIN_REL)
#: The mode's window (bins) and the reach (bins either side of its centre) of the samples the capacity is the
#: median of (:func:`histogram_mode`).
MODE_WIDTH = max(1, round(2 * math.log1p(MODE_REL) / LOG_BIN))
REFINE_REACH = round(math.log1p(REFINE_REL) / LOG_BIN)
#: Each bin's rate (bits/s at its centre on the log scale), computed once by Python's ``**``.
BIN_RATES = np.array([HIST_LO_BPS * (1 + BIN_REL) ** (i + 0.5) for i in range(HIST_BINS)])
#: Confidence grades from the lowest (a grade's code in a :class:`PathBatch` is its index; −1 = none).
GRADES = ("low", "medium", "high")
_RANK = {g: i for i, g in enumerate(GRADES)}
#: Where a row's pairs came from (its code in a :class:`PathBatch` is the index).
SOURCES = ("data", "acks", "mixed")


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
        """From an ingest ``FlowSummary`` or its dict (of many: :meth:`Links.of`)."""
        get = summary.get if isinstance(summary, Mapping) else (lambda k: getattr(summary, k, None))
        return LinkInfo(str(get("vantage") or "sender"), int(get("mss") or 0),
                        _overhead(get("sender"), get("timestamps")), float(get("delivery_rate_bps") or 0.0),
                        int(get("data_segments") or 0), get("confidence"),
                        (float(get("start_t") or 0.0), float(get("end_t") or 0.0)))


def _overhead(sender: str | None, timestamps: Any) -> int:
    """The wire overhead of a flow from this sender endpoint ("10.0.0.1:80" is IPv4 with its port)."""
    sender = str(sender or "")
    return wire_overhead(sender.startswith("[") or sender.count(":") > 1, bool(timestamps))


@dataclass(frozen=True)
class Links:
    """The :class:`LinkInfo` of many flows as columns: what :func:`flow_parts_batch` reads."""

    vantage: list[str]
    mss: np.ndarray  # int64
    overhead: np.ndarray  # int64
    delivery_rate_bps: np.ndarray  # float64
    data_segments: np.ndarray  # int64
    confidence: list[str | None]
    span_start: np.ndarray  # float64, epoch s
    span_end: np.ndarray

    def __len__(self) -> int:
        return len(self.vantage)

    @staticmethod
    def of(summaries: Sequence[Any]) -> Links:
        """From ingest ``FlowSummary``s or their dicts, a field at a time (:meth:`LinkInfo.of`'s rules)."""
        maps = [isinstance(s, Mapping) for s in summaries]

        def col(name: str) -> list[Any]:
            if not any(maps):
                return [getattr(s, name, None) for s in summaries]
            return [s.get(name) if m else getattr(s, name, None) for s, m in zip(summaries, maps, strict=True)]

        overhead = [_overhead(s, ts) for s, ts in zip(col("sender"), col("timestamps"), strict=True)]
        return Links([str(v or "sender") for v in col("vantage")], _ints(col("mss")), np.array(overhead, np.int64),
                     _floats(col("delivery_rate_bps")), _ints(col("data_segments")), col("confidence"),
                     _floats(col("start_t")), _floats(col("end_t")))

    @staticmethod
    def from_infos(links: Sequence[LinkInfo]) -> Links:
        return Links([li.vantage for li in links], _ints([li.mss for li in links]),
                     _ints([li.overhead for li in links]), _floats([li.delivery_rate_bps for li in links]),
                     _ints([li.data_segments for li in links]), [li.confidence for li in links],
                     _floats([li.span[0] for li in links]), _floats([li.span[1] for li in links]))

    def info(self, i: int) -> LinkInfo:
        return LinkInfo(self.vantage[i], int(self.mss[i]), int(self.overhead[i]), float(self.delivery_rate_bps[i]),
                        int(self.data_segments[i]), self.confidence[i],
                        (float(self.span_start[i]), float(self.span_end[i])))


def _ints(values: Sequence[Any]) -> np.ndarray:
    return np.array([int(v or 0) for v in values], np.int64)


def _floats(values: Sequence[Any]) -> np.ndarray:
    return np.array([float(v or 0.0) for v in values], np.float64)


# ---------------------------------------------------------------------------------------------- the evidence


class _Field:
    """A scalar column of a :class:`PathParts`' batch, read as a Python number."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, parts: PathParts, owner: type | None = None) -> Any:
        return getattr(parts.batch, self.name)[parts.row].item()


class PathParts:
    """One flow's (or a group's pooled) evidence about its path: one row of a :class:`PathBatch`."""

    __slots__ = ("batch", "row")

    pairs = _Field()  # pair samples in the histogram
    adr_bps = _Field()  # average dispersion rate (wire bits/s), the mode's floor
    wire_mss = _Field()  # wire bytes of a full-size segment
    mss = _Field()
    rtt_samples = _Field()
    rtt_min_s = _Field()  # NaN = no sample
    deep_queue_s = _Field()  # the DEEP_QUANTILE queueing delay over the flow (NaN = none)
    top_queue_s = _Field()  # the TOP_QUANTILE one: what the buffer capped (NaN = none)
    data_segments = _Field()

    def __init__(self, batch: PathBatch, row: int) -> None:
        self.batch = batch
        self.row = row

    def _span(self, offsets: np.ndarray) -> slice:
        return slice(int(offsets[self.row]), int(offsets[self.row + 1]))

    @property
    def flows(self) -> list[int]:
        return self.batch.flow_ids[self._span(self.batch.flow_offsets)].tolist()

    @property
    def source(self) -> str:
        """"data" (after the bottleneck), "acks" (ACK spacing of data queued at the bottleneck) or "mixed"."""
        return SOURCES[self.batch.source[self.row]]

    @property
    def hist_bins(self) -> np.ndarray:
        """int64: the occupied bins of the pair-rate histogram (wire bits/s, log bins), ascending."""
        return self.batch.hist_bins[self._span(self.batch.hist_offsets)]

    @property
    def hist_counts(self) -> np.ndarray:
        """int64: their counts (sparse: a short flow holds a few bins, not HIST_BINS)."""
        return self.batch.hist_counts[self._span(self.batch.hist_offsets)]

    @property
    def loss_queue_s(self) -> list[float]:
        """The queueing delay before each loss episode."""
        return self.batch.loss_queue_s[self._span(self.batch.loss_offsets)].tolist()

    @property
    def loss_retx(self) -> list[int]:
        """The segments retransmitted in each loss episode."""
        return self.batch.loss_retx[self._span(self.batch.loss_offsets)].tolist()

    @property
    def confidence_cap(self) -> str | None:
        code = int(self.batch.confidence[self.row])
        return GRADES[code] if code >= 0 else None

    @property
    def span(self) -> tuple[float, float]:
        """The first and last packet of its flows, epoch s."""
        return float(self.batch.span_start[self.row]), float(self.batch.span_end[self.row])

    def mode(self) -> tuple[float | None, int, int]:
        """:func:`histogram_mode` of this evidence above :data:`ADR_SHARE` × its average dispersion rate."""
        at, in_mode, above = (int(m[self.row]) for m in self.batch.modes())
        return (float(BIN_RATES[at]) if at >= 0 else None), in_mode, above

    def as_dict(self) -> dict[str, Any]:
        """Every field as Python values (the histogram as lists)."""
        return {"flows": self.flows, "source": self.source, "hist_bins": self.hist_bins.tolist(),
                "hist_counts": self.hist_counts.tolist(), "loss_queue_s": self.loss_queue_s,
                "loss_retx": self.loss_retx, "confidence_cap": self.confidence_cap, "span": self.span,
                **{k: getattr(self, k) for k in ("pairs", "adr_bps", "wire_mss", "mss", "rtt_samples", "rtt_min_s",
                                                 "deep_queue_s", "top_queue_s", "data_segments")}}

    def __repr__(self) -> str:
        return f"PathParts({self.as_dict()})"


@dataclass(eq=False)
class PathBatch(Sequence[PathParts]):
    """The path evidence of many flows (or many groups' pooled evidence) as columns, one row each; a sequence
    of :class:`PathParts` (views of the rows). Variable-length fields are concatenated over the rows, with
    offsets (rows + 1): the flows of each row, its histogram (occupied bins ascending, their counts) and its
    loss episodes."""

    flow_ids: np.ndarray  # int64
    flow_offsets: np.ndarray  # int64
    source: np.ndarray  # int8: index in SOURCES
    hist_offsets: np.ndarray
    hist_bins: np.ndarray  # int64
    hist_counts: np.ndarray  # int64
    pairs: np.ndarray  # int64
    adr_bps: np.ndarray  # float64
    wire_mss: np.ndarray  # int64
    mss: np.ndarray  # int64
    rtt_samples: np.ndarray  # int64
    rtt_min_s: np.ndarray  # float64
    deep_queue_s: np.ndarray  # float64
    top_queue_s: np.ndarray  # float64
    loss_offsets: np.ndarray
    loss_queue_s: np.ndarray  # float64
    loss_retx: np.ndarray  # int64
    data_segments: np.ndarray  # int64
    confidence: np.ndarray  # int8: index in GRADES, −1 = none
    span_start: np.ndarray  # float64, epoch s
    span_end: np.ndarray
    _modes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)

    #: The ragged fields: offsets, and the columns they cut.
    RAGGED = (("flow_offsets", ("flow_ids",)), ("hist_offsets", ("hist_bins", "hist_counts")),
              ("loss_offsets", ("loss_queue_s", "loss_retx")))

    def __len__(self) -> int:
        return len(self.source)

    @overload
    def __getitem__(self, i: int) -> PathParts: ...

    @overload
    def __getitem__(self, i: slice) -> PathBatch: ...

    def __getitem__(self, i: int | slice) -> PathParts | PathBatch:
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return PathParts(self, int(i) % n)

    def __iter__(self) -> Iterator[PathParts]:
        return (PathParts(self, i) for i in range(len(self)))

    @classmethod
    def _scalars(cls) -> list[str]:
        ragged = {n for off, cols in cls.RAGGED for n in (off, *cols)}
        return [f.name for f in fields(cls) if f.init and f.name not in ragged and not f.name.startswith("_")]

    def modes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every row's :meth:`PathParts.mode` as arrays, found once for all rows: the mode's bin (−1 = none:
        its rate is ``BIN_RATES[bin]``), the pairs in the densest window, the pairs above the floor."""
        if self._modes is None:
            self._modes = _modes(self.hist_offsets, self.hist_bins, self.hist_counts, ADR_SHARE * self.adr_bps,
                                 self.pairs)
        return self._modes

    def take(self, rows: Sequence[int] | np.ndarray) -> PathBatch:
        """These rows (in this order) as a batch of their own."""
        rows = np.asarray(rows, np.int64)
        kw = {name: getattr(self, name)[rows] for name in self._scalars()}
        for off_name, cols in self.RAGGED:
            off, idx = _ragged_take(getattr(self, off_name), rows)
            kw[off_name] = off
            kw.update((c, getattr(self, c)[idx]) for c in cols)
        return PathBatch(**kw)

    @staticmethod
    def concat(batches: Sequence[PathBatch]) -> PathBatch:
        """The rows of several batches, one after the other."""
        kw = {name: np.concatenate([getattr(b, name) for b in batches]) for name in PathBatch._scalars()}
        rows = np.array([len(b) for b in batches], np.int64)
        for off_name, cols in PathBatch.RAGGED:
            offsets = [getattr(b, off_name) for b in batches]
            base = np.zeros(len(batches), np.int64)
            np.cumsum([o[-1] for o in offsets[:-1]], out=base[1:])
            kw[off_name] = np.concatenate([np.zeros(1, np.int64),
                                           np.concatenate([o[1:] for o in offsets]) + np.repeat(base, rows)])
            kw.update((c, np.concatenate([getattr(b, c) for b in batches])) for c in cols)
        return PathBatch(**kw)

    @staticmethod
    def stack(parts: Sequence[PathParts]) -> PathBatch:
        """The rows of these parts, in this order: a gather when they are rows of one batch (as
        :func:`flow_parts_batch` makes them), else the rows taken from each batch they come from, joined."""
        if not parts:
            return _empty_batch()
        if all(p.batch is parts[0].batch for p in parts):
            return parts[0].batch.take([p.row for p in parts])
        by_batch: dict[int, tuple[PathBatch, list[int], list[int]]] = {}
        for pos, p in enumerate(parts):
            _, at, rows = by_batch.setdefault(id(p.batch), (p.batch, [], []))
            at.append(pos)
            rows.append(p.row)
        # (a batch of one flow, as ``flow_parts`` makes it, joins as it is)
        joined = PathBatch.concat([b if rows == list(range(len(b))) else b.take(rows)
                                   for b, _, rows in by_batch.values()])
        where = np.concatenate([np.asarray(at, np.int64) for _, at, _ in by_batch.values()])
        return joined if bool(np.all(where[1:] > where[:-1])) else joined.take(np.argsort(where, kind="stable"))

    def merge(self, offsets: Sequence[int] | np.ndarray) -> PathBatch:
        """Pool the evidence of the flows that share one bottleneck, each group a run of consecutive rows
        (``offsets``: groups + 1, from 0 to all rows): histograms add, the floor is the flows' joint average
        rate (their bits over the span they cover together: they shared the link), the base RTT the smallest,
        the losses all of theirs (:func:`merge_parts`)."""
        off = np.asarray(offsets, np.int64)
        if len(off) < 1 or off[0] != 0 or off[-1] != len(self):
            raise ValueError("the groups must cover the rows from the first to the last")
        (source, hist_offsets, hist_bins, hist_counts, pairs, adr, wire, mss, rtt_samples, rtt_min, deep, top,
         data_segments, confidence, start, end) = _merge(
            off, self.source, self.hist_offsets, self.hist_bins, self.hist_counts, self.pairs, self.adr_bps,
            self.wire_mss, self.mss, self.rtt_samples, self.rtt_min_s, self.deep_queue_s, self.top_queue_s,
            self.data_segments, self.confidence, self.span_start, self.span_end)
        return PathBatch(self.flow_ids, self.flow_offsets[off], source, hist_offsets, hist_bins, hist_counts, pairs,
                         adr, wire, mss, rtt_samples, rtt_min, deep, top, self.loss_offsets[off], self.loss_queue_s,
                         self.loss_retx, data_segments, confidence, start, end)


def _empty_batch() -> PathBatch:
    f, i, o = np.empty(0), np.empty(0, np.int64), np.zeros(1, np.int64)
    return PathBatch(i, o, np.empty(0, np.int8), o, i, i, i, f, i, i, i, f, f, f, o, f, i, i, np.empty(0, np.int8),
                     f, f)


def _ragged_take(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of ``rows``' runs of a ragged column taken in this order, and the indices of their values."""
    lens = offsets[rows + 1] - offsets[rows]
    out = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return out, np.repeat(offsets[rows] - out[:-1], lens) + np.arange(out[-1], dtype=np.int64)


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
    return search_sorted(a, x, False)


@njit(cache=True, nogil=True)
def _ack_pairs(out: np.ndarray, t: np.ndarray, ack: np.ndarray, rtt: np.ndarray, rtt_min: float,
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
def _data_pairs(out: np.ndarray, t: np.ndarray, seq: np.ndarray, length: np.ndarray, kind: np.ndarray, mss: int,
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
def _top_ranks(v: np.ndarray, k1: int, k2: int, heap: np.ndarray) -> tuple[float, float]:
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


def _histogram(rates: np.ndarray) -> np.ndarray:
    """The dense dispersion histogram of pair rates (bits/s): :data:`HIST_BINS` log bins."""
    idx = _bin_index(rates)
    idx = idx[(idx >= 0) & (idx < HIST_BINS)]
    return np.bincount(idx, minlength=HIST_BINS).astype(np.int64)


def _bin_index(rates: np.ndarray) -> np.ndarray:
    """Each pair rate's histogram bin (out of range below 0 and from :data:`HIST_BINS`). numpy's ``log``, not
    the C library's: the two differ in the last bit on some inputs, and the bins are numpy's."""
    return np.floor(np.log(rates / HIST_LO_BPS) / LOG_BIN).astype(np.int64)


def dense_histogram(parts: PathParts) -> np.ndarray:
    """The evidence's histogram as :data:`HIST_BINS` counts."""
    return np.bincount(parts.hist_bins, weights=parts.hist_counts, minlength=HIST_BINS).astype(np.int64)


def histogram_mode(hist: np.ndarray, floor_bps: float) -> tuple[float | None, int, int]:
    """The capacity mode of a dispersion histogram (pathrate): the densest window of ±:data:`MODE_REL` among
    bins at or above ``floor_bps`` locates it; the estimate is the median of the samples within
    ±:data:`REFINE_REL` of that window's centre (a narrow window finds the peak, a wider one centres it
    when few pairs scatter around the capacity). Returns (the estimate, samples in the densest window,
    samples at or above the floor). ``hist``: :data:`HIST_BINS` counts (:func:`_mode_of` on its occupied
    bins)."""
    bins = np.flatnonzero(hist).astype(np.int64)
    at, count, above = _mode_of(bins, np.asarray(hist, np.int64)[bins], float(floor_bps))
    return (float(BIN_RATES[at]) if at >= 0 else None), int(count), int(above)


@njit(cache=True, nogil=True)
def _mode_of(bins: np.ndarray, counts: np.ndarray, floor_bps: float) -> tuple[int, int, int]:
    """:func:`histogram_mode` of a sparse histogram (occupied ``bins`` ascending, their ``counts``): the bin of
    the estimate (−1 = none), the samples in the densest window, the samples at or above the floor. The dense
    histogram's rule, walked over the occupied bins only: its densest window is the first of the windows
    that start at 0 or end at an occupied bin (a window's count rises only where its end reaches one)."""
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
def _modes(offsets: np.ndarray, bins: np.ndarray, counts: np.ndarray, floor_bps: np.ndarray, pairs: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_mode_of` of every row of a batch (none for a row without pairs)."""
    n = len(offsets) - 1
    at = np.full(n, -1, np.int64)
    in_mode = np.zeros(n, np.int64)
    above = np.zeros(n, np.int64)
    for i in range(n):
        if pairs[i]:
            h0, h1 = offsets[i], offsets[i + 1]
            at[i], in_mode[i], above[i] = _mode_of(bins[h0:h1], counts[h0:h1], floor_bps[i])
    return at, in_mode, above


@njit(cache=True, nogil=True)
def _sparse_histograms(idx: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        w = _emit(dense, bins, counts, out_off[i], w)
        out_off[i + 1] = w
    return out_off, bins[:w].copy(), counts[:w].copy()


@njit(cache=True, nogil=True)
def _emit(dense: np.ndarray, bins: np.ndarray, counts: np.ndarray, lo: int, hi: int) -> int:
    """A run's histogram from its dense counts: ``bins[lo:hi]``, the bins it occupied, sorted, with their counts
    (and ``dense`` cleared for the next run); returns ``hi``."""
    sort_in_place(bins[lo:hi])
    for k in range(lo, hi):
        counts[k] = dense[bins[k]]
        dense[bins[k]] = 0
    return hi


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


@njit(cache=True, nogil=True)
def _evidence(a_lo: np.ndarray, a_hi: np.ndarray, s_lo: np.ndarray, s_hi: np.ndarray, e_lo: np.ndarray,
              e_hi: np.ndarray, receiver: np.ndarray, mss: np.ndarray, overhead: np.ndarray, at: np.ndarray,
              ack: np.ndarray, rtt: np.ndarray, srtt: np.ndarray, st: np.ndarray, seq: np.ndarray, ln: np.ndarray,
              kind: np.ndarray, ep_start: np.ndarray, ep_retx: np.ndarray, room: int) -> tuple[Any, ...]:
    """Every flow's pair rates, RTT figures and loss evidence in one pass over the concatenated columns (flow
    ``i``: ACK rows ``a_lo[i]:a_hi[i]``, segments ``s_lo[i]:s_hi[i]``, episodes ``e_lo[i]:e_hi[i]``). Returns
    the rates (concatenated, ``room`` at most) and their offsets; per flow its RTT samples, minimum, deep and
    top queue; the episodes'
    queueing delays and retransmissions, with their offsets."""
    n = len(a_lo)
    rate_off = np.zeros(n + 1, np.int64)
    rates = np.empty(room)
    samples = np.zeros(n, np.int64)
    rtt_min = np.full(n, np.nan)
    deep = np.full(n, np.nan)
    top = np.full(n, np.nan)
    loss_off = np.zeros(n + 1, np.int64)
    for i in range(n):
        loss_off[i + 1] = loss_off[i] + e_hi[i] - e_lo[i]
    loss_q = np.empty(loss_off[n])
    loss_retx = np.empty(loss_off[n], np.int64)
    most_acks = 0
    most_segs = 0
    for i in range(n):
        most_acks = max(most_acks, a_hi[i] - a_lo[i])
        most_segs = max(most_segs, s_hi[i] - s_lo[i])
    ev_t = np.empty(most_acks)
    ev_ack = np.empty(most_acks, np.int64)
    ev_rtt = np.empty(most_acks)
    rtt_t = np.empty(most_acks)
    rtt_v = np.empty(most_acks)
    heap = np.empty(most_acks)
    ends = np.empty(most_segs, np.int64)
    retx = np.empty(most_segs, np.int64)
    bits = np.zeros(TRAIN)
    gaps = np.zeros(TRAIN)
    w = 0
    for i in range(n):
        a0, a1, s0, s1 = a_lo[i], a_hi[i], s_lo[i], s_hi[i]
        m = 0
        if receiver[i]:
            m = _data_pairs(rates[w:], st[s0:s1], seq[s0:s1], ln[s0:s1], kind[s0:s1], mss[i], overhead[i])
        else:
            # ACK rows with equal timestamps are one event (§1.1): its last row
            ne = 0
            ev_min = np.inf
            found = False
            for k in range(a0, a1):
                if k == a1 - 1 or at[k + 1] != at[k]:
                    ev_t[ne] = at[k]
                    ev_ack[ne] = ack[k]
                    ev_rtt[ne] = rtt[k]
                    ne += 1
                    if not np.isnan(rtt[k]) and (not found or rtt[k] < ev_min):
                        ev_min = rtt[k]
                        found = True
            ns = 0
            ordered = True
            for k in range(s0, s1):
                if kind[k] == 0:
                    ends[ns] = seq[k] + ln[k]
                    if ns and ends[ns] < ends[ns - 1]:
                        ordered = False
                    ns += 1
            if not ordered:  # (new data is sent in sequence order)
                sort_in_place(ends[:ns])
            nr = 0
            for k in range(s0, s1):
                if kind[k] == 1 and ln[k] > 0:
                    retx[nr] = seq[k]
                    nr += 1
            sort_in_place(retx[:nr])
            if found:
                m = _ack_pairs(rates[w:], ev_t[:ne], ev_ack[:ne], ev_rtt[:ne], ev_min, ends[:ns], retx[:nr], mss[i],
                               overhead[i], bits, gaps)
        w += m
        rate_off[i + 1] = w
        nv = 0
        for k in range(a0, a1):
            if not np.isnan(rtt[k]):
                rtt_t[nv] = at[k]
                rtt_v[nv] = rtt[k]
                nv += 1
        samples[i] = nv
        least = np.nan
        if nv:
            least = rtt_v[0]
            for k in range(1, nv):
                least = min(least, rtt_v[k])
            rtt_min[i] = least
            d, t = _top_ranks(rtt_v[:nv], int(DEEP_QUANTILE * (nv - 1)), int(TOP_QUANTILE * (nv - 1)), heap)
            deep[i] = d - least
            top[i] = t - least
        # each episode: the RTT samples of the last smoothed RTT before its first retransmission
        out = loss_off[i]
        for e in range(e_lo[i], e_hi[i]):
            start = ep_start[e]
            k = search_sorted(at[a0:a1], start, True) - 1
            sk = srtt[a0 + max(k, 0)] if a1 > a0 else np.nan
            span = sk if k >= 0 and np.isfinite(sk) else (least if np.isfinite(least) else 0.0)
            deepest = np.nan
            for j in range(search_sorted(rtt_t[:nv], start - span, False), search_sorted(rtt_t[:nv], start, True)):
                deepest = rtt_v[j] if deepest != deepest else max(deepest, rtt_v[j])
            loss_q[out] = deepest - least
            loss_retx[out] = ep_retx[e]
            out += 1
    return rates[:w], rate_off, samples, rtt_min, deep, top, loss_off, loss_q, loss_retx


def _frozen(a: Any, dtype: type) -> np.ndarray:
    """``a`` as a contiguous read-only array of ``dtype`` (a view when it is one already): the kernel then
    compiles once, whatever the caller's arrays (ingest's tables are read-only, Polars' and scratch ones not)."""
    a = np.ascontiguousarray(a, dtype)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _bounds(offsets: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (flows + 1), or a (2, flows) array of each flow's first and past-last row, as (first, past)."""
    o = np.asarray(offsets, np.int64)
    return (o[0], o[1]) if o.ndim == 2 else (o[:-1], o[1:])


def flow_parts_batch(flow_ids: Sequence[int] | np.ndarray, links: Links | Sequence[LinkInfo],
                     acks: Mapping[str, np.ndarray], row_offsets: Sequence[int] | np.ndarray,
                     segments: Mapping[str, np.ndarray], seg_offsets: Sequence[int] | np.ndarray,
                     episodes: Any) -> PathBatch:
    """The path evidence of many flows at once: what :func:`flow_parts` gives each, as a :class:`PathBatch`
    (row ``i`` is flow ``flow_ids[i]``'s). ``links``: their :class:`LinkInfo` (:meth:`Links.of` their
    summaries). ``acks``: numpy columns ``t_rel``, ``ack``, ``rtt``, ``srtt`` (nulls as NaN, as
    ``replay.engine.FlowColumns`` holds them), flow ``i``'s rows ``row_offsets[i]:row_offsets[i + 1]``;
    ``segments``: ``t_rel``, ``seq``, ``len``, ``kind`` (0 = new, 1 = retransmission), cut by
    ``seg_offsets``. Either offsets may instead be a (2, flows) array of each flow's first and past-last row
    (the whole table's columns for some of its flows). ``episodes``: the capture's episode table (columns
    ``flow_id``, ``start_t_rel``, ``retransmissions``; a Polars frame or a mapping), or its rows for these
    flows."""
    ep_ids = _column(episodes, "flow_id", np.int64)
    starts = _column(episodes, "start_t_rel", np.float64)
    retx = _column(episodes, "retransmissions", np.int64)
    if len(ep_ids) > 1 and bool(np.any(ep_ids[1:] < ep_ids[:-1])):
        order = np.argsort(ep_ids, kind="stable")
        ep_ids, starts, retx = ep_ids[order], starts[order], retx[order]
    ids = np.asarray(flow_ids, np.int64)
    a_lo, a_hi = _bounds(row_offsets)
    s_lo, s_hi = _bounds(seg_offsets)
    return _parts_batch(ids, links, acks, a_lo, a_hi, segments, s_lo, s_hi, starts, retx,
                        np.searchsorted(ep_ids, ids, side="left"), np.searchsorted(ep_ids, ids, side="right"))


def flow_parts(flow_id: int, link: LinkInfo, acks: Any, segments: Any, episodes: Any) -> PathParts:
    """One flow's path evidence (:func:`flow_parts_batch` of one). ``acks``: columns ``t_rel``, ``ack``, ``rtt``,
    ``srtt`` (ACK rows); ``segments``: ``t_rel``, ``seq``, ``len``, ``kind`` (0 = new, 1 = retransmission, as
    ingest codes them); ``episodes``: its columns ``start_t_rel`` and ``retransmissions`` (Polars frames or
    mappings of numpy arrays)."""
    at = _column(acks, "t_rel", np.float64)
    a = {"t_rel": at, "rtt": _column(acks, "rtt", np.float64), "srtt": _column(acks, "srtt", np.float64),
         # (the receiver side reads no ACK numbers: its pairs are data segments)
         "ack": _column(acks, "ack", np.int64) if link.vantage != "receiver" else np.zeros(len(at), np.int64)}
    s = {n: _column(segments, n, dt) for n, dt in (("t_rel", np.float64), ("seq", np.int64), ("len", np.int64),
                                                   ("kind", np.int64))}
    has_eps = len(episodes["start_t_rel"]) > 0
    starts = _column(episodes, "start_t_rel", np.float64) if has_eps else np.empty(0)
    retx = _column(episodes, "retransmissions", np.int64) if has_eps else np.empty(0, np.int64)
    one = np.zeros(1, np.int64)
    return _parts_batch(np.array([flow_id], np.int64), [link], a, one, np.array([len(at)]), s, one,
                        np.array([len(s["t_rel"])]), starts, retx, one, np.array([len(starts)]))[0]


def _parts_batch(ids: np.ndarray, links: Links | Sequence[LinkInfo], acks: Mapping[str, np.ndarray],
                 a_lo: np.ndarray, a_hi: np.ndarray, segments: Mapping[str, np.ndarray], s_lo: np.ndarray,
                 s_hi: np.ndarray, ep_start: np.ndarray, ep_retx: np.ndarray, e_lo: np.ndarray, e_hi: np.ndarray
                 ) -> PathBatch:
    if not isinstance(links, Links):
        links = Links.from_infos(links)
    if not len(links) == len(ids) == len(a_lo) == len(s_lo):
        raise ValueError(f"{len(ids)} flows but {len(links)} links, {len(a_lo)} ACK and {len(s_lo)} segment runs")
    receiver = np.array([v == "receiver" for v in links.vantage], bool)
    mss = np.maximum(links.mss, 1)
    wire = mss + links.overhead
    # a flow's pairs: at most one per ACK event but the first (sender side), per segment but the first (receiver)
    room = int(np.maximum(np.where(receiver, s_hi - s_lo, a_hi - a_lo) - 1, 0).sum())
    rates, rate_off, samples, rtt_min, deep, top, loss_off, loss_q, loss_retx = _evidence(
        _frozen(a_lo, np.int64), _frozen(a_hi, np.int64), _frozen(s_lo, np.int64), _frozen(s_hi, np.int64),
        _frozen(e_lo, np.int64), _frozen(e_hi, np.int64), _frozen(receiver, np.bool_), _frozen(mss, np.int64),
        _frozen(links.overhead, np.int64), _frozen(acks["t_rel"], np.float64), _frozen(acks["ack"], np.int64),
        _frozen(acks["rtt"], np.float64),
        _frozen(acks["srtt"], np.float64), _frozen(segments["t_rel"], np.float64), _frozen(segments["seq"], np.int64),
        _frozen(segments["len"], np.int64), _frozen(segments["kind"], np.uint8), _frozen(ep_start, np.float64),
        _frozen(ep_retx, np.int64), room)
    hist_off, bins, counts = _sparse_histograms(_bin_index(rates), rate_off)
    n = len(ids)
    return PathBatch(ids, np.arange(n + 1, dtype=np.int64), np.where(receiver, 0, 1).astype(np.int8), hist_off,
                     bins, counts, np.diff(rate_off), links.delivery_rate_bps * wire / mss, wire, mss, samples,
                     rtt_min, deep, top, loss_off, loss_q, loss_retx, np.asarray(links.data_segments, np.int64),
                     np.array([_RANK[c] if c else -1 for c in links.confidence], np.int8),
                     np.asarray(links.span_start, np.float64), np.asarray(links.span_end, np.float64))


@njit(cache=True, nogil=True)
def _merge(offsets: np.ndarray, source: np.ndarray, hist_off: np.ndarray, hist_bins: np.ndarray,
           hist_counts: np.ndarray, pairs: np.ndarray, adr: np.ndarray, wire: np.ndarray, mss: np.ndarray,
           rtt_samples: np.ndarray, rtt_min: np.ndarray, deep: np.ndarray, top: np.ndarray,
           data_segments: np.ndarray, confidence: np.ndarray, start: np.ndarray, end: np.ndarray
           ) -> tuple[Any, ...]:
    """:meth:`PathBatch.merge`'s per-group figures: each group of rows ``offsets[g]:offsets[g + 1]``."""
    g_n = len(offsets) - 1
    g_source = np.empty(g_n, np.int8)
    g_hist_off = np.zeros(g_n + 1, np.int64)
    g_bins = np.empty(len(hist_bins), np.int64)
    g_counts = np.empty(len(hist_bins), np.int64)
    g_pairs = np.zeros(g_n, np.int64)
    g_adr = np.empty(g_n)
    g_wire = np.zeros(g_n, np.int64)
    g_mss = np.zeros(g_n, np.int64)
    g_samples = np.zeros(g_n, np.int64)
    g_rtt_min = np.full(g_n, np.nan)
    g_deep = np.full(g_n, np.nan)
    g_top = np.full(g_n, np.nan)
    g_segments = np.zeros(g_n, np.int64)
    g_confidence = np.full(g_n, -1, np.int8)
    g_start = np.empty(g_n)
    g_end = np.empty(g_n)
    dense = np.zeros(HIST_BINS, np.int64)
    w = 0
    for g in range(g_n):
        r0, r1 = offsets[g], offsets[g + 1]
        g_source[g] = source[r0]
        lo, hi = start[r0], end[r0]
        bits = 0.0
        fastest = adr[r0]
        low = False
        for r in range(r0, r1):
            if source[r] != source[r0]:
                g_source[g] = 2  # mixed
            lo, hi = min(lo, start[r]), max(hi, end[r])
            bits += adr[r] * (end[r] - start[r])
            fastest = max(fastest, adr[r])
            g_pairs[g] += pairs[r]
            g_wire[g] = max(g_wire[g], wire[r])
            g_mss[g] = max(g_mss[g], mss[r])
            g_samples[g] += rtt_samples[r]
            g_segments[g] += data_segments[r]
            if np.isfinite(rtt_min[r]) and not rtt_min[r] >= g_rtt_min[g]:
                g_rtt_min[g] = rtt_min[r]
            if np.isfinite(deep[r]) and not deep[r] <= g_deep[g]:
                g_deep[g] = deep[r]
            if np.isfinite(top[r]) and not top[r] <= g_top[g]:
                g_top[g] = top[r]
            low = low or confidence[r] == 0
            if confidence[r] >= 0 and g_confidence[g] < 0:
                g_confidence[g] = confidence[r]
        if low:
            g_confidence[g] = 0
        g_adr[g] = bits / (hi - lo) if hi > lo else fastest
        g_start[g], g_end[g] = lo, hi
        # the histograms add
        for k in range(hist_off[r0], hist_off[r1]):
            if dense[hist_bins[k]] == 0:
                g_bins[w] = hist_bins[k]
                w += 1
            dense[hist_bins[k]] += hist_counts[k]
        w = _emit(dense, g_bins, g_counts, g_hist_off[g], w)
        g_hist_off[g + 1] = w
    return (g_source, g_hist_off, g_bins[:w].copy(), g_counts[:w].copy(), g_pairs, g_adr, g_wire, g_mss, g_samples,
            g_rtt_min, g_deep, g_top, g_segments, g_confidence, g_start, g_end)


def merge_parts(parts: Sequence[PathParts]) -> PathParts:
    """Pool the evidence of flows that share one bottleneck (:meth:`PathBatch.merge` of one group)."""
    if len(parts) == 1:
        return parts[0]
    return PathBatch.stack(parts).merge([0, len(parts)])[0]


# ---------------------------------------------------------------------------------------------- the figures

PATH_KEYS = ("capacity_bps", "base_rtt_s", "buffer_bytes", "buffer_over_bdp", "random_loss_rate", "confidence",
             "evidence")
_HOW = ("data segments seen after the bottleneck", "ACK spacing of data queued back to back at the bottleneck",
        "the pooled data and ACK pairs")


def infer(parts: PathParts, shared: PathParts | None = None) -> dict[str, Any]:
    """The §9 ``path`` object from (one flow's or a group's) evidence: exactly :data:`PATH_KEYS`; ``evidence``
    maps each figure to one sentence (its method and numbers, or why it is null). ``shared``: the pooled
    evidence of the flows that share this flow's bottleneck (:func:`merge_parts`), whose capacity and base
    RTT are the path's — one flow's pairs on a shared link are spread by the others' packets (each of n
    flows interleaving evenly reads C/n), which its own average rate does not rule out. (:func:`infer_batch`
    of one.)"""
    if shared is None:
        return infer_batch(parts.batch, rows=[parts.row])[0]
    return infer_batch(parts.batch, shared.batch, [shared.row], rows=[parts.row])[0]


def infer_batch(parts: PathBatch, shared: PathBatch | None = None, group: Sequence[int] | np.ndarray | None = None,
                rows: Sequence[int] | np.ndarray | None = None) -> list[dict[str, Any]]:
    """:func:`infer` of many rows at once: their figures as arrays (:func:`_figures`), then each row's dict.
    ``rows``: which rows of ``parts`` (all by default); ``group``: for each, its row of ``shared`` (the pooled
    evidence of the flows sharing its bottleneck: :meth:`PathBatch.merge`), or −1 for none."""
    own = np.arange(len(parts), dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    # judged on the group's evidence: rows whose group holds more than this flow
    g = np.full(len(own), -1, np.int64) if group is None or shared is None else np.asarray(group, np.int64)
    grouped = g >= 0
    if shared is not None and grouped.any():
        grouped &= _flow_count(shared, np.maximum(g, 0)) > 1
    gi = g[grouped]
    modes = parts.modes()
    # every row in order (a batch, or a batch of one flow): its columns as they are
    whole = rows is None or (len(own) == len(parts) and bool(np.all(own == np.arange(len(parts)))))

    def mine(col: np.ndarray) -> np.ndarray:
        return col if whole else col[own]

    def judged(own_col: np.ndarray, shared_col: Any) -> np.ndarray:
        if not len(gi):
            return mine(own_col)
        out = own_col[own]
        out[grouped] = shared_col[gi]
        return out

    s_modes = shared.modes() if len(gi) and shared is not None else (None, None, None)
    at_bin, in_mode, above = (judged(m, s) for m, s in zip(modes, s_modes, strict=True))
    j = {name: judged(getattr(parts, name), getattr(shared, name, None))
         for name in ("pairs", "adr_bps", "wire_mss", "mss", "rtt_samples", "rtt_min_s")}
    l_lo, l_hi = parts.loss_offsets[own], parts.loss_offsets[own + 1]
    (capacity, ser, base, deep, queued, full, delay, buffer, over, lost, rnd, grade) = _figures(
        at_bin, in_mode, above, j["wire_mss"], j["rtt_min_s"], j["rtt_samples"], mine(parts.rtt_min_s),
        mine(parts.wire_mss), mine(parts.deep_queue_s), mine(parts.top_queue_s), mine(parts.data_segments),
        mine(parts.confidence), l_lo, l_hi, parts.loss_queue_s, parts.loss_retx)
    how = _how(parts, own)
    if len(gi):
        assert shared is not None
        texts = dict(zip(np.unique(gi).tolist(), _how(shared, np.unique(gi)), strict=True))
        for k, r in zip(np.flatnonzero(grouped).tolist(), gi.tolist(), strict=True):
            how[k] = texts[r]
    out = []
    for (cap, inm, abv, npairs, adr, wire, mss, rmin, nrtt, ser_s, base_s, deep_s, queued_s, n, nfull, delay_s, buf,
         over_s, lost_n, rnd_r, grade_c, segs, judged_on_group, how_s) in zip(
            capacity.tolist(), in_mode.tolist(), above.tolist(), j["pairs"].tolist(), j["adr_bps"].tolist(),
            j["wire_mss"].tolist(), j["mss"].tolist(), j["rtt_min_s"].tolist(), j["rtt_samples"].tolist(),
            ser.tolist(), base.tolist(), deep.tolist(), queued.tolist(), (l_hi - l_lo).tolist(), full.tolist(),
            delay.tolist(), buffer.tolist(), over.tolist(), lost.tolist(), rnd.tolist(), grade.tolist(),
            mine(parts.data_segments).tolist(), grouped.tolist(), how, strict=True):
        if cap != cap:
            cap = None
            ev_cap = (f"null: too few packet pairs to find a dispersion mode ({inm} in the densest "
                      f"±{MODE_REL:.0%} window of {npairs} pairs from {how_s}; at least "
                      f"{MIN_MODE_PAIRS} needed): the flow seldom kept the bottleneck's queue busy")
        else:
            ev_cap = (f"packet-pair dispersion mode (pathrate) from {how_s}: {inm} of {abv} pairs "
                      f"above {ADR_SHARE:g}× the average dispersion rate {adr / 1e6:.3f} Mbit/s "
                      f"lie within ±{MODE_REL:.0%} of {cap / 1e6:.3f} Mbit/s ({npairs} pairs in all; "
                      f"wire size {wire} B per {mss} B segment, a payload ceiling of "
                      f"{cap * mss / wire / 1e6:.3f} Mbit/s)")
        if rmin != rmin:
            base_s = None
            ev_base = "null: no RTT sample in the capture"
        else:
            ev_base = (f"smallest of {nrtt} RTT samples{' of the group' if judged_on_group else ''}"
                       f" {rmin * 1e3:.3f} ms"
                       + (f", less half a full-size segment's transmission at capacity ({ser_s * 1e3:.3f} ms)"
                          if cap else " (capacity unknown: its own transmission time not removed)"))
        if cap is None:
            buf = None
            ev_buf = "null: the capacity is unknown, so no queueing delay converts to bytes"
        elif n == 0:
            ev_buf = ("null: no loss in the capture, so the buffer never overflowed; the deepest queue "
                      f"seen was {_queue_text(deep_s, cap)}")
        elif not nfull:
            ev_buf = (f"null: none of the {n} losses followed a full queue (the deepest queue seen, "
                      f"{_queue_text(deep_s, cap)}, is "
                      + ("below the buffer-overflow level)" if not queued_s else "never reached at a loss)"))
        else:
            ev_buf = (f"queueing delay before the {nfull} of {n} losses that followed a full "
                      f"queue (at least {FULL_QUEUE_SHARE:.0%} of the deepest, "
                      f"{deep_s * 1e3:.1f} ms): median {delay_s * 1e3:.1f} ms × capacity")
        if buf != buf:
            buf = None
        if buf is not None and base_s:
            ev_over = f"{buf:.0f} B over BDP = capacity × base RTT = {cap * base_s / 8.0:.0f} B"
        else:
            over_s = None
            ev_over = "null: " + ("no buffer figure" if buf is None else "no base RTT")
        if segs <= 0:
            rnd_r = None
            ev_rnd = "null: no data segment sent"
        elif n == 0:
            ev_rnd = f"no loss episode among {segs} data segments"
        else:
            ev_rnd = (f"{lost_n} segments retransmitted in the {n - nfull} of {n} loss episodes not "
                      f"preceded by a full queue, per {segs} data segments sent"
                      + ("" if cap else " (without the capacity no queue can be told full: every "
                         "loss is counted, an upper bound)"))
        out.append({"capacity_bps": cap, "base_rtt_s": base_s, "buffer_bytes": buf, "buffer_over_bdp": over_s,
                    "random_loss_rate": rnd_r, "confidence": GRADES[grade_c],
                    "evidence": {"capacity_bps": ev_cap, "base_rtt_s": ev_base, "buffer_bytes": ev_buf,
                                 "buffer_over_bdp": ev_over, "random_loss_rate": ev_rnd}})
    return out


def _how(batch: PathBatch, rows: np.ndarray) -> list[str]:
    """Where each row's pairs came from, in words (naming the flows of a group)."""
    out = [_HOW[s] for s in batch.source[rows].tolist()]
    many = _flow_count(batch, rows) > 1
    for k in np.flatnonzero(many).tolist():
        r = int(rows[k])
        flows = batch.flow_ids[batch.flow_offsets[r]:batch.flow_offsets[r + 1]].tolist()
        named = ", ".join(map(str, flows[:8])) + (", …" if len(flows) > 8 else "")
        out[k] += f" of the {len(flows)} flows sharing the bottleneck ({named})"
    return out


def _flow_count(batch: PathBatch, rows: np.ndarray) -> np.ndarray:
    """How many flows each of these rows holds."""
    return batch.flow_offsets[rows + 1] - batch.flow_offsets[rows]




@njit(cache=True, nogil=True)
def _figures(at_bin: np.ndarray, in_mode: np.ndarray, above: np.ndarray, wire: np.ndarray, rtt_min: np.ndarray,
             rtt_samples: np.ndarray, own_rtt_min: np.ndarray, own_wire: np.ndarray, own_deep: np.ndarray,
             own_top: np.ndarray, own_segments: np.ndarray, own_confidence: np.ndarray, l_lo: np.ndarray,
             l_hi: np.ndarray, loss_q: np.ndarray, loss_retx: np.ndarray) -> tuple[Any, ...]:
    """Each row's figures (NaN = none): capacity (its mode with at least :data:`MIN_MODE_PAIRS` pairs), the
    serialisation taken off the base RTT, the base RTT, from the judged evidence (the group's, or the flow's
    own: ``at_bin`` … ``rtt_samples``); and on the flow's own losses (``own_*``, its episodes
    ``l_lo[r]:l_hi[r]`` of ``loss_q``/``loss_retx``), their queueing delays taken relative to the path's RTT
    minimum (a flow that joined a standing queue never saw it): the deepest queue, whether it was deep enough
    to overflow, how many losses followed a full queue (:func:`_overflows`), their median queueing delay, the
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
        k_full = _overflows(q[:m], d, own_top[r] + shift, near[:m], scratch) if m and queued[r] else 0
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
def _overflows(q: np.ndarray, deep: float, top: float, near: np.ndarray, scratch: np.ndarray) -> int:
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


def _queue_text(deep: float, capacity: float) -> str:
    if not math.isfinite(deep):
        return "unknown (no RTT sample)"
    return f"{deep * 1e3:.1f} ms ≈ {deep * capacity / 8.0:.0f} B"


# ---------------------------------------------------------------------------------------------- the groups


def _hosts(endpoints: Sequence[str]) -> pl.Series:
    """``10.0.0.1:5201`` / ``[2001:db8::1]:80`` → the host part, of each."""
    s = pl.Series(endpoints, dtype=pl.String)
    port = (s.str.count_matches(":", literal=True) == 1) | s.str.starts_with("[")
    return pl.select(pl.when(port).then(s.str.replace(r":[^:]*$", "")).otherwise(s).str.strip_chars("[]")
                     ).to_series()


def endpoint_host(endpoint: str) -> str:
    """``10.0.0.1:5201`` / ``[2001:db8::1]:80`` → the host part."""
    return str(_hosts([endpoint])[0])


@njit(cache=True, nogil=True)
def _chain(pair: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The group number of each flow, the flows sorted by host pair then start: a flow that starts after every
    earlier flow of its pair's group ended opens a new group."""
    out = np.empty(len(pair), np.int64)
    g = -1
    reach = 0.0
    for i in range(len(pair)):
        if i == 0 or pair[i] != pair[i - 1] or start[i] > reach:
            g += 1
            reach = end[i]
        else:
            reach = max(reach, end[i])
        out[i] = g
    return out


def bottleneck_group_rows(flow_ids: Sequence[int] | np.ndarray, senders: Sequence[str], receivers: Sequence[str],
                          starts: Sequence[float] | np.ndarray, ends: Sequence[float] | np.ndarray,
                          min_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bottleneck_groups` as arrays: the flows' positions in the input, group after group (each group's
    flows by start), and the groups' offsets (groups + 1); groups of fewer than ``min_size`` flows left out."""
    n = len(flow_ids)
    if n == 0:
        return np.empty(0, np.int64), np.zeros(1, np.int64)
    pair = pl.DataFrame({"s": _hosts(senders), "r": _hosts(receivers)}).select(
        pl.struct("s", "r").rank("dense")).to_series().to_numpy()
    st, en = np.asarray(starts, np.float64), np.asarray(ends, np.float64)
    order = np.lexsort((st, pair))  # (stable: flows starting together keep their order)
    group = _chain(pair[order], st[order], en[order])
    first = np.flatnonzero(np.diff(group, prepend=-1))
    by_first = np.argsort(np.asarray(flow_ids, np.int64)[order[first]], kind="stable")  # groups by first flow id
    sizes = np.diff(np.append(first, n))[by_first]
    keep = sizes >= min_size
    rank = np.full(len(first), len(first))  # (groups left out sort last)
    rank[by_first[keep]] = np.arange(int(keep.sum()))
    pos = np.argsort(rank[group], kind="stable")[:int(sizes[keep].sum())]
    offsets = np.zeros(int(keep.sum()) + 1, np.int64)
    np.cumsum(sizes[keep], out=offsets[1:])
    return order[pos], offsets


def bottleneck_groups(flows: Sequence[tuple[int, str, str, float, float]]) -> list[list[int]]:
    """Flows that share a bottleneck: ``(flow_id, sender, receiver, start, end)`` → groups of flow ids (each
    flow in one; groups of one for flows alone). The rule (the capture shows no topology): flows between the
    same two hosts, in the same direction, whose lifetimes overlap, cross the same path at the same time and
    so share its bottleneck; overlaps chain (a flow overlapping two others joins them). Groups are ordered by
    their first flow's id (:func:`bottleneck_group_rows`)."""
    if not flows:
        return []
    ids, senders, receivers, starts, ends = zip(*flows, strict=True)
    rows, offsets = bottleneck_group_rows(ids, senders, receivers, starts, ends)
    members = [ids[r] for r in rows.tolist()]
    return [members[a:b] for a, b in pairwise(offsets.tolist())]


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
