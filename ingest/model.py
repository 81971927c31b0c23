"""Result types of ingest: capture statistics, flow summaries and per-flow tables (Polars)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from itertools import starmap
from types import NoneType, UnionType
from typing import Any, get_args, get_type_hints, overload

import numpy as np
import polars as pl

from ackreplay.ingest.memory import release_mapped


@dataclass
class CaptureStats:
    """What reading the container found, with every skipped packet counted by reason."""

    file: str
    format: str
    gzipped: bool
    linktypes: list[int]
    snaplen: int
    records: int
    tcp_packets: int
    skipped: dict[str, int]
    connections: int
    flows: int
    timestamp_reorders: int
    truncated_at: int | None
    skipped_blocks: int
    warnings: list[str] = field(default_factory=list)
    connection_groups: int = 1  # > 1: analysed in groups within the memory budget
    spilled: bool = False  # packet columns and tables went through temporary files

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class FlowSummary:
    """One direction of a TCP connection that carried payload (a *flow*), as ingest saw it.

    Rates are bits/s (``*_bps``), times seconds (``t_*`` epoch, ``*_s`` durations), sizes bytes.
    """

    flow_id: int
    connection: int
    sender: str
    receiver: str
    start_t: float
    end_t: float
    duration_s: float
    packets: int  # packets of the connection, both directions
    data_segments: int
    bytes: int  # payload bytes cumulatively acknowledged (bytes sent when no ACK was captured)
    bytes_sent: int
    #: bytes × 8 / the connection's duration (its first to last packet, either direction): the convention
    #: of tcptrace's "throughput" and Wireshark's conversation statistics, for comparing with them
    goodput_bps: float
    #: bytes × 8 / (last ACK − first data segment): the rate while the flow was delivering (no handshake,
    #: no idle tail)
    delivery_rate_bps: float
    mss: int
    mss_source: str
    rttmin_s: float | None
    srtt_s: float | None
    handshake_rtt_s: float | None
    acks: int
    dupacks: int
    retransmissions: int  # data segments sent again (not the reordered originals)
    loss_events: int
    fast_retransmit_events: int
    timeout_events: int
    keepalives: int
    zero_window_probes: int
    dsacks: int
    sack: bool
    timestamps: bool
    window_scaling: bool
    syn_seen: bool
    options_truncated_packets: int
    vantage: str
    vantage_evidence: str
    #: Where the capture point lies: the share of the handshake's round trip between the sender and it (0 at the
    #: sender, 1 at the receiver, between for a tap; ``ingest.vantage``), None without a usable handshake.
    vantage_position: float | None
    #: The connection's capture point, the same for both its directions: the share of the handshake's round trip
    #: between the client and the capture point (0 at the client, 1 at the server; ``ingest.vantage``), each part
    #: bounded by the data/ACK pairs; None without a usable handshake.
    capture_position: float | None = None
    #: How the sender's view was rebuilt when the capture was not taken at the sender (docs/estimators.md §7):
    #: "receiver_side", or None (sender side, or a vantage that is not reconstructed).
    reconstruction: str | None = None
    reconstruction_sound: bool = False  # enough evidence to replay the flow by default
    reconstruction_evidence: str = ""
    confidence: str | None = None  # "medium" | "low" for a reconstructed flow
    confidence_note: str = ""  # what the vantage cannot see
    #: The invariants the flow's figures break, in words (``ingest.invariants``): "" when it keeps them all. A flow
    #: that breaks one (its numbers come partly from another sequence space) is not replayed.
    invalid: str = ""
    #: retransmissions a D-SACK (RFC 2883) reported received twice: the original had arrived
    spurious_retransmissions: int = 0
    #: originals delivered after later segments (``ingest.reordering``: only away from the sender), which a capture
    #: at the sender would not see out of order
    reordered_segments: int = 0

    def to_dict(self) -> dict[str, Any]:
        # every field is a scalar held in a slot: object.__getstate__ gives them as (None, {field: value}) in
        # field order, made in C — asdict's result (a deep copy) at a fifteenth of its cost, a comprehension's
        # at two thirds
        state: Any = self.__getstate__()
        return state[1]


#: FlowSummary's field names, in order (``FlowSummary.to_dict``).
FLOW_FIELDS = tuple(f.name for f in fields(FlowSummary))

# Text is plain strings, short values (a vantage, an MSS source) held inline by Polars: no categories, whose
# process-wide list would only grow in a long-running worker and which Polars 1.0 cannot concatenate across frames.
_DTYPES: dict[type, pl.DataType] = {int: pl.Int64(), float: pl.Float64(), bool: pl.Boolean(), str: pl.String()}


def _dtype(hint: Any) -> pl.DataType:
    kinds = [t for t in get_args(hint) if t is not NoneType] if isinstance(hint, UnionType) else [hint]
    return _DTYPES[kinds[0]]


_HINTS = get_type_hints(FlowSummary)
#: The columns of :class:`FlowSummaries`: one per FlowSummary field, in order (null where the field is None).
SUMMARY_SCHEMA: dict[str, pl.DataType] = {name: _dtype(_HINTS[name]) for name in FLOW_FIELDS}
#: Rows made into summaries at a time when :class:`FlowSummaries` is iterated.
_ITER_ROWS = 1 << 14


class FlowSummaries(Sequence[FlowSummary]):
    """The summaries of many flows held as columns: one row per flow of a Polars DataFrame (``frame``, columns
    :data:`SUMMARY_SCHEMA`), each row made a :class:`FlowSummary` when it is read.

    A capture of a million small flows keeps about 300 bytes a flow this way, against about 800 for as many
    objects. Code that reads every flow's field reads its column (``column``, ``ids``); code that
    wants objects indexes or iterates. The table is not changed through the objects it hands out: changing one
    changes that copy only (:meth:`replaced` puts changed summaries back).
    """

    __slots__ = ("_order", "frame")

    def __init__(self, frame: pl.DataFrame | None = None) -> None:
        self.frame = frame if frame is not None else pl.DataFrame(schema=SUMMARY_SCHEMA)
        self._order: tuple[np.ndarray, np.ndarray] | None = None  # (flow ids sorted, their rows) for by_id

    @classmethod
    def of(cls, summaries: Iterable[FlowSummary]) -> FlowSummaries:
        """``summaries`` as columns (itself when it already is)."""
        if isinstance(summaries, FlowSummaries):
            return summaries
        items = list(summaries)
        return cls(pl.DataFrame({name: [getattr(s, name) for s in items] for name in FLOW_FIELDS},
                                schema=SUMMARY_SCHEMA))

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> FlowSummaries:
        """Summaries from one column per field (lists or numpy arrays; a NaN float is kept, not made None)."""
        return cls(pl.DataFrame({name: columns[name] for name in FLOW_FIELDS}, schema=SUMMARY_SCHEMA))

    @classmethod
    def concat(cls, parts: Sequence[FlowSummaries]) -> FlowSummaries:
        """The summaries of ``parts`` one after the other."""
        if not parts:
            return cls()
        return cls(pl.concat([p.frame for p in parts], rechunk=False) if len(parts) > 1 else parts[0].frame)

    def __len__(self) -> int:
        return self.frame.height

    @overload
    def __getitem__(self, i: int) -> FlowSummary: ...

    @overload
    def __getitem__(self, i: slice) -> FlowSummaries: ...

    def __getitem__(self, i: int | slice) -> FlowSummary | FlowSummaries:
        if isinstance(i, slice):
            return FlowSummaries(self.frame[i])
        n = self.frame.height
        if not -n <= i < n:
            raise IndexError(f"flow summary {i} of {n}")
        return FlowSummary(*self.frame.row(i))

    def __iter__(self) -> Iterator[FlowSummary]:
        for part in self.frame.iter_slices(_ITER_ROWS):  # a column's values at a time: a fifth of iter_rows' cost
            yield from starmap(FlowSummary, zip(*(col.to_list() for col in part.iter_columns()), strict=True))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FlowSummaries):
            return self.frame.equals(other.frame)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FlowSummaries({len(self)} flows)"

    def column(self, name: str) -> pl.Series:
        """One field of every flow, in order."""
        return self.frame.get_column(name)

    def ids(self) -> np.ndarray:
        """Every flow's id, in order (int64)."""
        return self.frame.get_column("flow_id").to_numpy()

    def select(self, keep: Callable[[FlowSummary], bool]) -> FlowSummaries:
        """The flows ``keep`` accepts (each made a summary to be asked), in order."""
        rows = [i for i, s in enumerate(self) if keep(s)]
        return self if len(rows) == len(self) else FlowSummaries(self.frame[rows])

    def rows_of(self, flow_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The rows of flows ``flow_ids`` (−1 for an id no flow has)."""
        if self._order is None:
            ids = self.ids()
            rows = np.arange(len(ids)) if bool(np.all(ids[1:] > ids[:-1])) else np.argsort(ids, kind="stable")
            self._order = (ids[rows], rows)
        ids, rows = self._order
        want = np.asarray(flow_ids, np.int64)
        at = np.minimum(np.searchsorted(ids, want), max(len(ids) - 1, 0))
        found = (ids[at] == want) if len(ids) else np.zeros(len(want), bool)
        return np.where(found, rows[at] if len(ids) else -1, -1)

    def row_of(self, flow_id: int) -> int | None:
        """The row of flow ``flow_id``, or None."""
        row = int(self.rows_of([flow_id])[0])
        return row if row >= 0 else None

    def take(self, flow_ids: Sequence[int] | np.ndarray) -> FlowSummaries:
        """The summaries of flows ``flow_ids``, in that order (KeyError for an id no flow has)."""
        rows = self.rows_of(flow_ids)
        if (rows < 0).any():
            raise KeyError(int(np.asarray(flow_ids)[np.argmax(rows < 0)]))
        return FlowSummaries(self.frame[rows])

    def by_id(self) -> SummariesById:
        """The summaries by flow id, each made when it is looked up."""
        return SummariesById(self)

    def replaced(self, changed: Mapping[int, FlowSummary]) -> FlowSummaries:
        """These summaries with the rows of ``changed`` (row → summary) replaced."""
        if not changed:
            return self
        rows = np.array(sorted(changed), np.int64)
        new = FlowSummaries.of(changed[r] for r in rows.tolist()).frame
        kept = np.ones(len(self), bool)
        kept[rows] = False
        # the kept rows then the new ones, put back in row order
        order = np.argsort(np.concatenate([np.flatnonzero(kept), rows]), kind="stable")
        return FlowSummaries(pl.concat([self.frame.filter(pl.Series(kept)), new])[order])


class SummariesById(Mapping[int, FlowSummary]):
    """:meth:`FlowSummaries.by_id`: a mapping of flow id to summary that makes each summary when it is read."""

    __slots__ = ("_of",)

    def __init__(self, summaries: FlowSummaries) -> None:
        self._of = summaries

    def __getitem__(self, flow_id: int) -> FlowSummary:
        row = self._of.row_of(flow_id)
        if row is None:
            raise KeyError(flow_id)
        return self._of[row]

    def __contains__(self, flow_id: object) -> bool:
        return isinstance(flow_id, int) and self._of.row_of(flow_id) is not None

    def __iter__(self) -> Iterator[int]:
        return iter(self._of.ids().tolist())

    def __len__(self) -> int:
        return len(self._of)


@dataclass
class FlowData:
    """A flow's summary with its ACK stream, data segments and loss episodes."""

    summary: FlowSummary
    acks: pl.DataFrame
    segments: pl.DataFrame
    episodes: pl.DataFrame


@dataclass
class CaptureIngest:
    """Everything ingest extracted from one capture. Tables hold all flows (column ``flow_id``)."""

    stats: CaptureStats
    flows: FlowSummaries
    acks: pl.DataFrame
    segments: pl.DataFrame
    episodes: pl.DataFrame
    #: A spilled capture's table columns mapped from files (table → column name → its raw values: NaN and −1
    #: where the table has nulls, as the analysis wrote them); empty when held in memory.
    mapped: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    #: The memory budget (bytes) the capture was ingested within (None = unlimited); replay keeps to it too.
    memory_budget: int | None = None

    def release(self, table: str, lo: int, hi: int) -> None:
        """Done with rows ``lo..hi`` of a spilled table for now: their file pages stop counting in this
        process's memory (read again from the page cache if used later). A no-op for tables in memory."""
        for col in self.mapped.get(table, {}).values():
            release_mapped(col, lo, hi)

    def flow(self, flow_id: int) -> FlowData:
        """One flow's tables (KeyError when the capture has no such flow)."""
        s = self.flows.by_id()[flow_id]
        return FlowData(
            s,
            self.acks.filter(pl.col("flow_id") == flow_id),
            self.segments.filter(pl.col("flow_id") == flow_id),
            self.episodes.filter(pl.col("flow_id") == flow_id),
        )
