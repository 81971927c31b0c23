"""A path's evidence (docs/path.md §9) as columns: :class:`PathBatch` holds the evidence of many flows (or
of many groups' pooled evidence), one row each — a sparse dispersion histogram, the RTT figures, the loss
episodes' queueing delays — and is a sequence of :class:`PathParts`, views of its rows.

The flows sharing a bottleneck (:func:`ackreplay.path.groups.bottleneck_group_rows`) are pooled
(:meth:`PathBatch.merge`) and judged as one path: their joint rate is the floor of the mode (on a shared
link one flow's pairs are spread by the others' packets: two flows interleaving read C/2).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, overload

import numpy as np

from ackreplay.jitcache.kernel_mode import njit
from ackreplay.path.dispersion import ADR_SHARE, BIN_RATES, HIST_BINS, emit_histogram, row_modes

#: Confidence grades from the lowest (a grade's code in a :class:`PathBatch` is its index; −1 = none).
GRADES = ("low", "medium", "high")
#: A grade's code.
GRADE_RANK = {g: i for i, g in enumerate(GRADES)}
#: Where a row's pairs came from (its code in a :class:`PathBatch` is the index).
SOURCES = ("data", "acks", "mixed")


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
    rtt_bound_s = _Field()  # the smallest round trip the flows' summaries timed (NaN = none)
    handshake_s = _Field()  # the handshake's capture point→receiver→capture point time (NaN = none)
    flight_bytes = _Field()  # the most payload in flight at once (NaN = not seen)
    sent_segments = _Field()  # the segments sent: the highest sequence, in MSS from the first byte

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
    def loss_exposed(self) -> list[int]:
        """The data transmissions whose fate each loss episode decides (a drop among them is repaired in it)."""
        return self.batch.loss_exposed[self._span(self.batch.loss_offsets)].tolist()

    @property
    def loss_windows(self) -> list[tuple[int, int]]:
        """Each loss episode's window in segments (from, past): the segments first sent among the transmissions
        whose fate it decides."""
        span = self._span(self.batch.loss_offsets)
        return list(zip(self.batch.loss_seg_from[span].tolist(), self.batch.loss_seg_past[span].tolist(), strict=True))

    @property
    def retransmissions(self) -> list[tuple[int, int]]:
        """Each retransmission in the order sent: the segment it resent and the index of its loss episode."""
        span = self._span(self.batch.drop_offsets)
        return list(zip(self.batch.drop_segment[span].tolist(), self.batch.drop_episode[span].tolist(), strict=True))

    @property
    def confidence_cap(self) -> str | None:
        code = int(self.batch.confidence[self.row])
        return GRADES[code] if code >= 0 else None

    @property
    def span(self) -> tuple[float, float]:
        """The first and last packet of its flows, epoch s."""
        return float(self.batch.span_start[self.row]), float(self.batch.span_end[self.row])

    def mode(self) -> tuple[float | None, int, int]:
        """The capacity mode of this evidence above :data:`ADR_SHARE` × its average dispersion rate
        (:func:`ackreplay.path.dispersion.mode_of`): the estimate (None = none), the pairs in the densest
        window, the pairs above the floor."""
        at, in_mode, above = (int(m[self.row]) for m in self.batch.modes())
        return (float(BIN_RATES[at]) if at >= 0 else None), in_mode, above

    def as_dict(self) -> dict[str, Any]:
        """Every field as Python values (the histogram as lists)."""
        return {"flows": self.flows, "source": self.source, "hist_bins": self.hist_bins.tolist(),
                "hist_counts": self.hist_counts.tolist(), "loss_queue_s": self.loss_queue_s,
                "loss_retx": self.loss_retx, "loss_exposed": self.loss_exposed,
                "confidence_cap": self.confidence_cap, "span": self.span,
                **{k: getattr(self, k) for k in ("pairs", "adr_bps", "wire_mss", "mss", "rtt_samples", "rtt_min_s",
                                                 "deep_queue_s", "top_queue_s", "data_segments", "rtt_bound_s",
                                                 "handshake_s", "flight_bytes", "sent_segments")},
                "loss_windows": self.loss_windows, "retransmissions": self.retransmissions}

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
    loss_exposed: np.ndarray  # int64: the transmissions whose fate each episode decides
    data_segments: np.ndarray  # int64
    confidence: np.ndarray  # int8: index in GRADES, −1 = none
    span_start: np.ndarray  # float64, epoch s
    span_end: np.ndarray
    #: Upper bound on the base RTT: the smallest round trip the flows' summaries timed (NaN = none).
    rtt_bound_s: np.ndarray  # float64
    #: The handshake's capture point→receiver→capture point time, a part of every round trip (NaN = none).
    handshake_s: np.ndarray  # float64
    #: The most bytes (payload) the flows had in flight at once as the capture point saw it (NaN = not seen:
    #: the receiver side sees data only as it arrives). A group's is the sum of its flows' (an upper bound).
    flight_bytes: np.ndarray  # float64
    #: Each loss episode's window in segments (the flow's k-th MSS of data from its first byte): from, past — the
    #: segments first sent among the transmissions whose fate it decides (``loss_exposed``).
    loss_seg_from: np.ndarray  # int64
    loss_seg_past: np.ndarray  # int64
    #: Each row's retransmissions in the order sent: the segment each resent and its loss episode (the index
    #: among the row's episodes; −1: none).
    drop_offsets: np.ndarray
    drop_segment: np.ndarray  # int64
    drop_episode: np.ndarray  # int64
    #: The segments the flows sent (their highest sequence, in segments from their first byte). A group's: the
    #: most of its flows'.
    sent_segments: np.ndarray  # int64
    _modes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)

    #: The ragged fields: offsets, and the columns they cut.
    RAGGED = (("flow_offsets", ("flow_ids",)), ("hist_offsets", ("hist_bins", "hist_counts")),
              ("loss_offsets", ("loss_queue_s", "loss_retx", "loss_exposed", "loss_seg_from", "loss_seg_past")),
              ("drop_offsets", ("drop_segment", "drop_episode")))

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
            self._modes = row_modes(self.hist_offsets, self.hist_bins, self.hist_counts, ADR_SHARE * self.adr_bps,
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
        the losses all of theirs."""
        off = np.asarray(offsets, np.int64)
        if len(off) < 1 or off[0] != 0 or off[-1] != len(self):
            raise ValueError("the groups must cover the rows from the first to the last")
        (source, hist_offsets, hist_bins, hist_counts, pairs, adr, wire, mss, rtt_samples, rtt_min, deep, top,
         data_segments, confidence, start, end) = _merge(
            off, self.source, self.hist_offsets, self.hist_bins, self.hist_counts, self.pairs, self.adr_bps,
            self.wire_mss, self.mss, self.rtt_samples, self.rtt_min_s, self.deep_queue_s, self.top_queue_s,
            self.data_segments, self.confidence, self.span_start, self.span_end)
        first = off[:-1]
        # a retransmission's episode counts among its group's episodes: those of the group's earlier rows first
        group_of = np.repeat(np.arange(len(first)), np.diff(off))
        shift = self.loss_offsets[:-1] - self.loss_offsets[off[:-1]][group_of]
        drop_shift = np.repeat(shift, np.diff(self.drop_offsets))
        # the bounds pool as bounds do: the smallest round trip any flow timed, the longest part any handshake
        # proves, and the flights added (the flows' queues add up at the link they share)
        return PathBatch(self.flow_ids, self.flow_offsets[off], source, hist_offsets, hist_bins, hist_counts, pairs,
                         adr, wire, mss, rtt_samples, rtt_min, deep, top, self.loss_offsets[off], self.loss_queue_s,
                         self.loss_retx, self.loss_exposed, data_segments, confidence, start, end,
                         np.fmin.reduceat(self.rtt_bound_s, first) if len(first) else np.empty(0),
                         np.fmax.reduceat(self.handshake_s, first) if len(first) else np.empty(0),
                         np.add.reduceat(self.flight_bytes, first) if len(first) else np.empty(0),
                         self.loss_seg_from, self.loss_seg_past, self.drop_offsets[off], self.drop_segment,
                         np.where(self.drop_episode >= 0, self.drop_episode + drop_shift, -1),
                         np.maximum.reduceat(self.sent_segments, first) if len(first) else np.empty(0, np.int64))


def _empty_batch() -> PathBatch:
    f, i, o = np.empty(0), np.empty(0, np.int64), np.zeros(1, np.int64)
    return PathBatch(i, o, np.empty(0, np.int8), o, i, i, i, f, i, i, i, f, f, f, o, f, i, i, i, np.empty(0, np.int8),
                     f, f, f, f, f, i, i, o, i, i, i)


def _ragged_take(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of ``rows``' runs of a ragged column taken in this order, and the indices of their values."""
    lens = offsets[rows + 1] - offsets[rows]
    out = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return out, np.repeat(offsets[rows] - out[:-1], lens) + np.arange(out[-1], dtype=np.int64)


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
        w = emit_histogram(dense, g_bins, g_counts, g_hist_off[g], w)
        g_hist_off[g + 1] = w
    return (g_source, g_hist_off, g_bins[:w].copy(), g_counts[:w].copy(), g_pairs, g_adr, g_wire, g_mss, g_samples,
            g_rtt_min, g_deep, g_top, g_segments, g_confidence, g_start, g_end)

