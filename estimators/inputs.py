"""What an estimator reads: one flow's ACK stream merged into events (docs/estimators.md §1.1).

ACK rows with equal timestamps form one event at that instant: their ``d`` (and ``acked``) add up and
the event carries the last row's other columns. Times are seconds since the flow's first packet
(``t_rel``), whose float precision stays far below a nanosecond; the first event only opens the clock.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

#: How the ACK table's nullable columns are filled when turned into numpy arrays.
ACK_FILL: dict[str, float | int] = {"rtt": math.nan, "srtt": math.nan, "rttmin": math.nan, "tsval": -1,
                                    "sack_lo": -1, "sack_hi": -1, "rwnd": -1}
#: The ACK and segment columns replay reads.
#: (``ack``, and the segments' ``seq`` and ``kind``, are read by the path inference, ``path.flow_evidence``; ``ack``,
#: ``sacked``, ``sack_lo``/``sack_hi``, ``rwnd`` and the segments' ``seq`` and ``tsval`` by ``bbr_bw``'s delivery-rate
#: sampler.)
ACK_COLUMNS = ("t_ns", "t", "t_rel", "d", "acked", "dup", "rtt", "srtt", "rttmin", "flight", "tsval", "ack", "sacked",
               "sack_lo", "sack_hi", "rwnd")
SEGMENT_COLUMNS = ("t_rel", "len", "seq", "kind", "tsval")
#: Segment kinds as ingest codes them (the ``kind`` column's physical values).
SEGMENT_KINDS = ("new", "retransmission", "keepalive", "zero_window_probe", "reordered")


def numpy_columns(frame: pl.DataFrame, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Whole-table columns as numpy arrays (nulls filled as in :data:`ACK_FILL`), converted once."""
    out: dict[str, np.ndarray] = {}
    def column(n: str) -> pl.Expr:
        if n in ACK_FILL:
            return pl.col(n).fill_null(ACK_FILL[n])
        dtype = frame.schema[n]
        if isinstance(dtype, pl.Enum | pl.Categorical):  # (a category as its code, as ingest wrote it)
            return pl.col(n).to_physical()
        if dtype == pl.String:
            return pl.col(n).replace_strict({k: i for i, k in enumerate(SEGMENT_KINDS)}, return_dtype=pl.Int8)
        return pl.col(n)

    filled = frame.select(column(n) for n in names)
    for name in names:  # (one Polars call: the nullable columns are filled in parallel)
        arr = filled[name].to_numpy()
        arr.flags.writeable = False  # flows get views of these: an estimator writing to its inputs fails loudly
        out[name] = arr
    return out


@dataclass
class RttCursor:
    """Where a walk over a flow's RTT samples stands (``FlowInputs._rtt_cursor``) and what it has carried."""

    since: float | None  # the samples counted are those of the events after this time (None: every event)
    next: int  # the first event not yet read
    total: float = 0.0  # the running sum of the samples read (``FlowInputs.rtt_history_at``)
    count: int = 0  # how many
    latest: float = math.nan  # the last one
    minimum: float = math.inf  # the smallest (``FlowInputs.rtt_min_since``)


@dataclass
class FlowInputs:
    """Aligned per-event columns of one flow (numpy), plus what maps them back to ACK rows."""

    t: np.ndarray  # float64 s since the flow's first packet
    t_abs: np.ndarray  # float64 epoch s
    d: np.ndarray  # int64 bytes delivered (westwood_acked_count)
    acked: np.ndarray  # int64 bytes newly acknowledged
    dup: np.ndarray  # bool: the last row of the event is a duplicate ACK
    rtt: np.ndarray  # float64 s, NaN = no sample on the event's last row
    srtt: np.ndarray  # float64 s, NaN before the first sample
    rttmin: np.ndarray  # float64 s, NaN before the first sample
    flight: np.ndarray  # int64 bytes outstanding after the event
    tsval: np.ndarray  # int64 receiver TSval, -1 = none
    rtt_any: np.ndarray  # float64: the last RTT sample of any row in the event (NaN = none)
    ack: np.ndarray  # int64: the cumulative ACK (relative sequence number)
    sacked: np.ndarray  # int64 bytes SACKed above the cumulative ACK (every block the receiver reported)
    sack_lo: np.ndarray  # int64: the first SACK block (RFC 2018: the most recently received data), -1 = none
    sack_hi: np.ndarray  # int64: its end (exclusive), -1 = none
    rwnd: np.ndarray  # int64 bytes: the receive window the ACK advertises (scaled), -1 = unknown
    row_event: np.ndarray  # int64: event index of every ACK row
    mss: int
    seg_t: np.ndarray  # float64 s: the sender's data segments (for tibet_tx, bbr_bw)
    seg_len: np.ndarray  # int64 bytes
    seg_seq: np.ndarray  # int64: their first sequence number (relative)
    #: int64: the sender's raw 32-bit TSval on each (-1 = none; for ``bbr_bw``'s send times off the sender)
    seg_tsval: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    #: Per-event state derived once per flow and read at every loss event (never recomputed per event:
    #: replay stays linear in ACK rows + loss events), keyed by who derived it (an estimator drops its own in
    #: ``Estimator.forget``).
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.t)

    def _rtt_cursor(self, name: str, event: int, since: float | None) -> tuple[RttCursor, np.ndarray]:
        """A cursor over the RTT samples (any row) for loss events decided in time order, one per thread
        (replay runs jobs side by side): amortised O(1) per event. Returns its state (:class:`RttCursor`, the
        caller keeping its own running values in it) and the samples of the events up to ``event`` it had not
        reached. It starts again, from the first event after ``since`` (every event when None) with fresh
        running values, when ``since`` changes or ``event`` is behind it."""
        key = f"{name}:{threading.get_ident()}"
        cur: RttCursor | None = self.derived.get(key)
        if cur is None or cur.since != since or event + 1 < cur.next:
            lo = 0 if since is None else int(np.searchsorted(self.t, since, side="right"))
            cur = self.derived[key] = RttCursor(since, lo)
        seg = self.rtt_any[cur.next: event + 1]
        cur.next = max(cur.next, event + 1)
        return cur, seg[~np.isnan(seg)]

    def rtt_history_at(self, event: int) -> tuple[float, float]:
        """At ``event``: the latest RTT sample of any row so far, and the mean of all samples so far (NaN
        before the first). A cursor carries the count and the running sum from one loss event to the next
        (:meth:`_rtt_cursor`): nothing the size of the flow is kept. The sum is the sequential ``total += r``
        (``np.cumsum`` continued from the carried total), so it is the same float however the events are
        spaced."""
        cur, ok = self._rtt_cursor("rtt_history", event, None)
        if len(ok):
            cur.total = float(np.cumsum(np.concatenate(([cur.total], ok)))[-1])
            cur.count += len(ok)
            cur.latest = float(ok[-1])
        return cur.latest, (cur.total / cur.count if cur.count else math.nan)

    def rtt_min_since(self, event: int, after_t: float | None) -> float:
        """The smallest RTT sample (any row) of the events up to ``event`` whose time is after ``after_t``
        (all of them when None); NaN when there is none. A cursor carries the running minimum from one loss
        event to the next (:meth:`_rtt_cursor`); a new reset time starts it again from the reset."""
        if event < 0:
            return math.nan
        cur, ok = self._rtt_cursor("rtt_min_since", event, after_t)
        if len(ok):
            cur.minimum = min(cur.minimum, float(ok.min()))
        return cur.minimum if math.isfinite(cur.minimum) else math.nan

    @staticmethod
    def from_frames(acks: pl.DataFrame | Mapping[str, np.ndarray], segments: pl.DataFrame | Mapping[str, np.ndarray]
                    | None, mss: int) -> FlowInputs:
        """Build from one flow's ``acks`` (and ``segments``) tables as ingest produces them — Polars frames,
        or the same columns as numpy arrays with nulls filled (:data:`ACK_FILL`), such as zero-copy slices of a
        capture's columns (``replay.engine.FlowColumns``): per-flow Polars calls cost ~1 ms, most of the time on
        captures of thousands of small flows."""
        from ackreplay.estimators.flow_batch import FlowBatch  # (one code path: a flow is a batch of one)

        return FlowBatch.of_flow(acks, segments, mss).flow(0)

    @staticmethod
    def from_arrays(t: np.ndarray, d: np.ndarray, *, mss: int, srtt: np.ndarray | None = None,
                    rttmin: np.ndarray | None = None, rtt: np.ndarray | None = None,
                    flight: np.ndarray | None = None, tsval: np.ndarray | None = None,
                    acked: np.ndarray | None = None, ack: np.ndarray | None = None,
                    sacked: np.ndarray | None = None, sack_lo: np.ndarray | None = None,
                    sack_hi: np.ndarray | None = None, rwnd: np.ndarray | None = None,
                    segments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> FlowInputs:
        """Events given directly (tests, benchmarks): one event per element, times strictly increasing. ``ack``
        defaults to the running sum of ``acked`` (no SACK: ``sacked`` 0, no block; ``rwnd`` unknown); ``segments``
        is the sender's data segments as ``(seg_t, seg_len, seg_seq)`` (none by default)."""
        n = len(t)
        nan = np.full(n, np.nan)
        rtt_a = nan if rtt is None else np.asarray(rtt, np.float64)
        acked_a = np.asarray(d if acked is None else acked, np.int64)
        none = np.full(n, -1, np.int64)
        seg_t, seg_len, seg_seq = segments if segments is not None else (np.empty(0), np.empty(0), np.empty(0))
        return FlowInputs(
            t=np.asarray(t, np.float64), t_abs=np.asarray(t, np.float64), d=np.asarray(d, np.int64),
            acked=acked_a, dup=np.zeros(n, bool),
            rtt=rtt_a, srtt=nan.copy() if srtt is None else np.asarray(srtt, np.float64),
            rttmin=nan.copy() if rttmin is None else np.asarray(rttmin, np.float64),
            flight=np.zeros(n, np.int64) if flight is None else np.asarray(flight, np.int64),
            tsval=np.full(n, -1, np.int64) if tsval is None else np.asarray(tsval, np.int64),
            rtt_any=rtt_a,
            ack=np.cumsum(acked_a) if ack is None else np.asarray(ack, np.int64),
            sacked=np.zeros(n, np.int64) if sacked is None else np.asarray(sacked, np.int64),
            sack_lo=none.copy() if sack_lo is None else np.asarray(sack_lo, np.int64),
            sack_hi=none.copy() if sack_hi is None else np.asarray(sack_hi, np.int64),
            rwnd=none if rwnd is None else np.asarray(rwnd, np.int64),
            row_event=np.arange(n, dtype=np.int64), mss=mss,
            seg_t=np.asarray(seg_t, np.float64), seg_len=np.asarray(seg_len, np.int64),
            seg_seq=np.asarray(seg_seq, np.int64),
        )
