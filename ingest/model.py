"""Result types of ingest: capture statistics, flow summaries and per-flow tables (Polars)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

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
    #: no idle tail), ackreplay's former goodput
    delivery_rate_bps: float
    mss: int
    mss_source: str
    rttmin_s: float | None
    srtt_s: float | None
    handshake_rtt_s: float | None
    acks: int
    dupacks: int
    retransmissions: int
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
    #: How the sender's view was rebuilt when the capture was not taken at the sender (ESTIMATORS.md §7):
    #: "receiver_side", or None (sender side, or a vantage that is not reconstructed).
    reconstruction: str | None = None
    reconstruction_sound: bool = False  # enough evidence to replay the flow by default
    reconstruction_evidence: str = ""
    confidence: str | None = None  # "medium" | "low" for a reconstructed flow
    confidence_note: str = ""  # what the vantage cannot see

    def to_dict(self) -> dict[str, Any]:
        # every field is a scalar held in a slot: object.__getstate__ gives them as (None, {field: value}) in
        # field order, made in C — asdict's result (a deep copy) at a fifteenth of its cost, a comprehension's
        # at two thirds
        state: Any = self.__getstate__()
        return state[1]


#: FlowSummary's field names, in order (``FlowSummary.to_dict``).
FLOW_FIELDS = tuple(f.name for f in fields(FlowSummary))


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
    flows: list[FlowSummary]
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
        for s in self.flows:
            if s.flow_id == flow_id:
                return FlowData(
                    s,
                    self.acks.filter(pl.col("flow_id") == flow_id),
                    self.segments.filter(pl.col("flow_id") == flow_id),
                    self.episodes.filter(pl.col("flow_id") == flow_id),
                )
        raise KeyError(flow_id)
