"""Many flows as one batch: their ACK events concatenated, with offsets.

A :class:`FlowBatch` holds the events of many flows as the same columns :class:`~estimators.inputs.FlowInputs`
holds for one — concatenated in flow order, ``offsets[f]:offsets[f+1]`` being flow ``f``'s events — so that each
step of replay (the achieved rate, the time weights, every estimator's series, the scores, the diagnostics) is
one compiled call walking every flow, not one call per flow: per-flow Python around each compiled call cost
~1 ms a flow, against tcptrace's ~0.1 ms. One flow is a batch of one: :meth:`FlowBatch.flow` gives the
``FlowInputs`` view of one member, and ``FlowInputs.from_frames`` builds a batch of one and takes its flow, so
both paths run the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ackreplay.estimators.inputs import ACK_FILL, FlowInputs

#: The per-event columns of a batch (and of ``FlowInputs``), in the order the kernels take them.
EVENT_COLUMNS = ("t", "t_abs", "d", "acked", "dup", "rtt", "srtt", "rttmin", "flight", "tsval", "rtt_any", "ack",
                 "sacked", "sack_lo", "sack_hi", "rwnd")


@dataclass
class FlowBatch:
    """Per-event columns of many flows (numpy), concatenated in flow order, plus what maps them back to the
    flows and their ACK rows. Every array is read-only (members get views)."""

    flow_ids: np.ndarray  # int64, one per flow
    offsets: np.ndarray  # int64, n_flows + 1: flow f's events are offsets[f]:offsets[f+1]
    row_offsets: np.ndarray  # int64, n_flows + 1: flow f's ACK rows (in the tables the batch was built from)
    seg_offsets: np.ndarray  # int64, n_flows + 1: flow f's data segments
    mss: np.ndarray  # int64, one per flow
    t: np.ndarray  # float64 s since the flow's first packet
    t_abs: np.ndarray  # float64 epoch s
    d: np.ndarray  # int64
    acked: np.ndarray  # int64
    dup: np.ndarray  # bool
    rtt: np.ndarray  # float64 (NaN = none)
    srtt: np.ndarray
    rttmin: np.ndarray
    flight: np.ndarray  # int64
    tsval: np.ndarray  # int64 (-1 = none)
    rtt_any: np.ndarray  # float64
    ack: np.ndarray  # int64
    sacked: np.ndarray  # int64
    sack_lo: np.ndarray  # int64 (-1 = none)
    sack_hi: np.ndarray  # int64 (-1 = none)
    rwnd: np.ndarray  # int64 (-1 = unknown)
    row_event: np.ndarray  # int64, per ACK row: the index of its event inside its own flow
    seg_t: np.ndarray  # float64
    seg_len: np.ndarray  # int64
    seg_seq: np.ndarray  # int64
    seg_tsval: np.ndarray  # int64: the sender's raw TSval on each segment (-1 = none)
    _members: dict[int, FlowInputs] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.flow_ids)

    @property
    def events(self) -> int:
        return len(self.t)

    def counts(self) -> np.ndarray:
        """Events per flow."""
        return np.diff(self.offsets)

    def flow(self, i: int) -> FlowInputs:
        """Member ``i`` (position in the batch, not flow id) as one flow's inputs: views, made once."""
        got = self._members.get(i)
        if got is not None:
            return got
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        rlo, rhi = int(self.row_offsets[i]), int(self.row_offsets[i + 1])
        slo, shi = int(self.seg_offsets[i]), int(self.seg_offsets[i + 1])
        inp = FlowInputs(**{c: getattr(self, c)[lo:hi] for c in EVENT_COLUMNS},
                         row_event=self.row_event[rlo:rhi], mss=int(self.mss[i]),
                         seg_t=self.seg_t[slo:shi], seg_len=self.seg_len[slo:shi], seg_seq=self.seg_seq[slo:shi],
                         seg_tsval=self.seg_tsval[slo:shi])
        # (two threads may make it at once — the limits beside the estimators: the first one kept is everyone's)
        return self._members.setdefault(i, inp)

    def forget_members(self) -> None:
        """Drop the members' views and what estimators derived on them (``FlowInputs.derived``)."""
        self._members.clear()

    @staticmethod
    def build(acks: Mapping[str, np.ndarray], row_offsets: np.ndarray, segments: Mapping[str, np.ndarray] | None,
              seg_offsets: np.ndarray | None, mss: np.ndarray | Sequence[int], flow_ids: np.ndarray | Sequence[int]
              ) -> FlowBatch:
        """Merge the ACK rows of every flow into events (docs/estimators.md §1.1: rows with equal timestamps inside
        one flow form one event; their ``d`` and ``acked`` add up, the event carries the last row's other
        columns; RTT filters see the last sample of any row). ``acks``: the ACK columns of ``ACK_COLUMNS`` as
        numpy arrays (nulls filled as :data:`ACK_FILL`), the flows' rows concatenated in flow order;
        ``row_offsets`` (n_flows + 1) where each flow's rows start; ``segments`` (``t_rel``, ``len``, ``seq``,
        ``tsval``) and ``seg_offsets`` likewise (None: no segments)."""
        row_offsets = np.asarray(row_offsets, np.int64)
        ev = RowEvents.of(np.asarray(acks["t_ns"]), row_offsets)
        seg_t, seg_len, seg_seq, seg_tsval, seg_off = _segment_columns(segments, seg_offsets, len(row_offsets) - 1)
        # (``copy=False``: on a long flow every needless copy is pages of fresh memory to fault in)
        batch = FlowBatch(
            flow_ids=np.asarray(flow_ids, np.int64), offsets=np.asarray(ev.offsets, np.int64),
            row_offsets=row_offsets, seg_offsets=seg_off, mss=np.asarray(mss, np.int64),
            t=ev.at_last(acks["t_rel"]).astype(np.float64, copy=False),
            t_abs=ev.at_last(acks["t"]).astype(np.float64, copy=False),
            d=ev.summed(acks["d"]),
            acked=ev.summed(acks["acked"]),
            dup=ev.at_last(acks["dup"]).astype(bool, copy=False),
            rtt=ev.at_last(acks["rtt"]).astype(np.float64, copy=False),
            srtt=ev.at_last(acks["srtt"]).astype(np.float64, copy=False),
            rttmin=ev.at_last(acks["rttmin"]).astype(np.float64, copy=False),
            flight=ev.at_last(acks["flight"]).astype(np.int64, copy=False),
            tsval=ev.at_last(acks["tsval"]).astype(np.int64, copy=False),
            rtt_any=ev.latest_sample(np.asarray(acks["rtt"])),
            ack=ev.at_last(acks["ack"]).astype(np.int64, copy=False),
            sacked=ev.at_last(acks["sacked"]).astype(np.int64, copy=False),
            sack_lo=ev.at_last(acks["sack_lo"]).astype(np.int64, copy=False),
            sack_hi=ev.at_last(acks["sack_hi"]).astype(np.int64, copy=False),
            rwnd=ev.at_last(acks["rwnd"]).astype(np.int64, copy=False),
            row_event=ev.row_event.astype(np.int64, copy=False),
            seg_t=seg_t.astype(np.float64, copy=False),
            seg_len=seg_len,
            seg_seq=seg_seq,
            seg_tsval=seg_tsval,
        )
        # Read-only, every one: some are views of the capture's columns (one-row events) and the others must
        # look the same to numba — a read-only array is another type, and a kernel compiled for one would be
        # compiled again for the other on a user's first long flow (``ackreplay warmup`` compiles one set).
        for name in (*EVENT_COLUMNS, "row_event", "seg_t", "seg_len", "seg_seq", "seg_tsval", "offsets", "row_offsets",
                     "seg_offsets", "mss", "flow_ids"):
            getattr(batch, name).flags.writeable = False
        return batch

    @staticmethod
    def of_flow(acks: Any, segments: Any, mss: int, flow_id: int = 0) -> FlowBatch:
        """A batch of one flow from its ``acks`` and ``segments`` tables (Polars frames, or numpy columns with
        nulls filled as :data:`ACK_FILL`). Tables without the SACK columns are read as carrying no SACK
        (``sacked`` 0, no block), without ``rwnd`` as not knowing the receive window, without ``ack`` as
        acknowledging in order (the running sum of ``acked``), and segments without ``seq`` as sent in sequence
        order (:func:`_segment_columns`)."""
        def col(table: Any, name: str) -> np.ndarray:
            c = table[name]
            if isinstance(c, np.ndarray):
                return c
            return (c.fill_null(ACK_FILL[name]) if name in ACK_FILL else c).to_numpy()

        def has(table: Any, name: str) -> bool:
            return name in (table.columns if hasattr(table, "columns") else table)

        names = ("t_ns", "t", "t_rel", "d", "acked", "dup", "rtt", "srtt", "rttmin", "flight", "tsval")
        cols = {n: col(acks, n) for n in names}
        rows = len(cols["t_ns"])
        absent = {"ack": lambda: np.cumsum(cols["acked"], dtype=np.int64), "sacked": lambda: np.zeros(rows, np.int64),
                  "sack_lo": lambda: np.full(rows, -1, np.int64), "sack_hi": lambda: np.full(rows, -1, np.int64),
                  "rwnd": lambda: np.full(rows, -1, np.int64)}
        for n, fill in absent.items():
            cols[n] = col(acks, n) if has(acks, n) else fill()
        segs = None
        nseg = 0
        if segments is not None and len(segments["t_rel"]):
            segs = {n: col(segments, n) for n in ("t_rel", "len", "seq", "tsval") if has(segments, n)}
            nseg = len(segs["t_rel"])
        return FlowBatch.build(cols, np.array([0, rows], np.int64), segs, np.array([0, nseg], np.int64),
                               np.array([mss], np.int64), np.array([flow_id], np.int64))


@dataclass(frozen=True)
class RowEvents:
    """Where the events of many flows' ACK rows lie (:meth:`FlowBatch.build`): rows with equal timestamps inside
    one flow form one event."""

    rows: int
    one_row_events: bool  # every row is an event of its own: the columns are the events' as they are
    offsets: np.ndarray  # n_flows + 1: flow f's events are offsets[f]:offsets[f+1]
    starts: np.ndarray  # per event: its first row
    last: np.ndarray  # per event: its last row
    row_event: np.ndarray  # per row: the index of its event inside its own flow

    @staticmethod
    def of(t_ns: np.ndarray, row_offsets: np.ndarray) -> RowEvents:
        """The events of rows at times ``t_ns`` (ns), flow f's rows being ``row_offsets[f]:row_offsets[f+1]``."""
        n = len(t_ns)
        new_event = np.empty(n, bool)
        if n:
            new_event[0] = True
            np.not_equal(t_ns[1:], t_ns[:-1], out=new_event[1:])
            firsts = row_offsets[:-1][row_offsets[:-1] < row_offsets[1:]]
            new_event[firsts] = True  # a flow's first row opens an event whatever the previous flow's time
        if bool(new_event.all()):  # the rows are the events: the columns are used as they are (views, no index)
            starts = np.arange(n, dtype=np.int64)
            return RowEvents(n, True, row_offsets, starts, starts,
                             starts - np.repeat(row_offsets[:-1], np.diff(row_offsets)))
        before = np.zeros(n + 1, np.int64)  # events opened before each row, and in all
        np.cumsum(new_event, out=before[1:])
        offsets = before[row_offsets]
        starts = np.flatnonzero(new_event)
        last = np.append(starts[1:] - 1, n - 1) if n else starts
        return RowEvents(n, False, offsets, starts, last,
                         before[1:] - 1 - np.repeat(offsets[:-1], np.diff(row_offsets)))

    def summed(self, rows: np.ndarray) -> np.ndarray:
        """A column's sum over each event's rows (int64)."""
        v = np.asarray(rows).astype(np.int64, copy=False)
        if self.one_row_events:
            return v
        return np.add.reduceat(v, self.starts) if self.rows else np.empty(0, np.int64)

    def at_last(self, rows: np.ndarray) -> np.ndarray:
        """A column's value on each event's last row."""
        col = np.asarray(rows)
        return col if self.one_row_events else col[self.last]

    def latest_sample(self, rtt_rows: np.ndarray) -> np.ndarray:
        """The last RTT sample inside each event (NaN: none), which the RTT filters read: no sample is lost by
        merging rows."""
        if self.one_row_events:
            return rtt_rows
        n, last = self.rows, self.last
        idx = np.where(~np.isnan(rtt_rows), np.arange(n), -1)
        latest = np.maximum.accumulate(idx) if n else idx
        out = np.full(len(last), np.nan)
        li = latest[last] if n else latest
        ok = li >= self.starts if n else np.zeros(0, bool)
        out[ok] = rtt_rows[li[ok]]
        return out


def _segment_columns(segments: Mapping[str, np.ndarray] | None, seg_offsets: np.ndarray | None, flows: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The data segments' times, lengths (int64), first sequence numbers (int64), the sender's TSvals (int64, −1:
    none) and per-flow offsets (all empty without segments). Segments given without ``seq`` are taken as sent in
    sequence order, each flow's from 0 (``seq`` = the running sum of the lengths before it): no retransmission;
    without ``tsval`` as carrying none."""
    if segments is not None and seg_offsets is not None and len(segments["t_rel"]):
        seg_len = np.asarray(segments["len"]).astype(np.int64, copy=False)
        offsets = np.asarray(seg_offsets, np.int64)
        if "seq" in segments:
            seq = np.asarray(segments["seq"]).astype(np.int64, copy=False)
        else:
            before = np.concatenate(([0], np.cumsum(seg_len)))  # bytes before each segment, over all flows
            seq = before[:-1] - np.repeat(before[offsets[:-1]], np.diff(offsets))
        tsval = (np.asarray(segments["tsval"]).astype(np.int64, copy=False) if "tsval" in segments
                 else np.full(len(seg_len), -1, np.int64))
        return np.asarray(segments["t_rel"]), seg_len, seq, tsval, offsets
    none = np.empty(0, np.int64)
    return np.empty(0), none, none.copy(), none.copy(), np.zeros(flows + 1, np.int64)


# ---- batched kernels: one compiled call walks every flow, calling the per-flow kernels on its slice


def per_flow(batch: FlowBatch, fn: Callable[[FlowInputs], np.ndarray]) -> np.ndarray:
    """``fn`` of every member, concatenated in flow order (an estimator without a batched kernel)."""
    if len(batch) == 1:
        return np.asarray(fn(batch.flow(0)), np.float64)
    parts = [np.asarray(fn(batch.flow(i)), np.float64) for i in range(len(batch))]
    return np.concatenate(parts) if parts else np.empty(0)
