"""Ingest pipeline: a capture file → :class:`CaptureIngest` (flows, ACK streams, segments, episodes).

Streaming: the file is read in chunks; each chunk is decoded and demultiplexed at once and only a
compact set of per-packet columns (45 bytes a TCP packet) is kept, so memory grows with the
number of TCP packets, not with the file size (payload bytes are never held beyond one chunk). A
thread reads and scans the next chunk while this one is decoded (``records.prefetch``); flows are
analysed on all usable cores (``ingest.analyze``).

Bounded: when the packets' working set (columns, order, output rows: about ``BYTES_PER_PACKET``) would
exceed the memory budget, full packet columns go to temporary files, connections are analysed in
contiguous groups that fit the budget (read back from the files), and each group's output columns
are appended to files that the returned tables map read-only. Flow numbering and every value are the
same as in memory (``tests/ingest/test_bounded_memory.py``).

Packets are analysed in capture-time order: a capture whose timestamps go backwards (multi-queue
capture) is re-sorted by timestamp — stable, so packets with equal timestamps keep file order — and
the number of backward steps is reported in the statistics.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import numpy as np
import polars as pl

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.analyze import GroupAnalysis, analyze_group, default_threads
from ackreplay.ingest.budget import DEFAULT_MEMORY_BUDGET
from ackreplay.ingest.chunked import analyze_connection
from ackreplay.ingest.columnize import BatchDecoder
from ackreplay.ingest.decode import REASONS
from ackreplay.ingest.demux import CS_PACKETS, Demux
from ackreplay.ingest.flow_summary import flow_summaries
from ackreplay.ingest.frames import (
    TableSink,
    ack_columns,
    acks_frame,
    episode_columns,
    episodes_frame,
    segment_columns,
    segments_frame,
)
from ackreplay.ingest.memory import trim_heap
from ackreplay.ingest.model import CaptureIngest, CaptureStats, FlowSummaries, FlowSummary
from ackreplay.ingest.packets import PacketStore
from ackreplay.ingest.reconstruct import CONFIDENCE_NOTE, reconstruct_receiver_side
from ackreplay.ingest.records import CHUNK_BYTES, ScanInfo, iter_records, prefetch
from ackreplay.ingest.reordering import mark_reordered
from ackreplay.ingest.source import ByteSource

ProgressFn = Callable[[int, int], None]


#: Working-set estimate per TCP packet held in memory: its compact columns (45 B), the connection
#: order (8 B), the analysis rows it produces (128 B an ACK row, 64 B a segment row; a bulk
#: transfer has about one ACK per two segments) and the table columns made from them — measured
#: as the peak RSS above the interpreter's of a 2 GB capture analysed in groups (``bench.ingest``): 190 B
#: before the frame numbers, which add 4 B to the packet's columns and 8 B to its analysis row and to its
#: table row (20 B; added, not measured again).
BYTES_PER_PACKET = 210
#: A connection's share of its group's working set beyond its packets, in packets' worth
#: (``BYTES_PER_PACKET`` each): its flows' summaries while they are made (per-field lists, then the objects,
#: ~0.9 KB a flow) and its per-flow analysis rows. Groups of many short connections sized by their packets alone
#: overrun the budget: 1 M connections of 2–20 packets make 2 groups and 2.17 GB peak RSS at a 1 GiB budget; with
#: 24, 7 groups and 1.59 GB (the summaries of all flows, ~0.8 GB, stay beyond the budget). It also decides whether a
#: capture is analysed in groups at all: 1 M connections of 3 packets (3 M packets, within a 1 GiB budget by their
#: packets) analysed whole peaked 1.62 GB above the interpreter (the analysis' per-flow rows, 336 B a flow, and the
#: summaries being made, beside the packets); in 6 groups 0.86 GB, in the same time (``bench.service_scale``'s small1m).
ROWS_PER_CONNECTION = 24


def decode_chunks(src: ByteSource, info: ScanInfo, decoder: BatchDecoder, chunk_bytes: int,
                   progress: ProgressFn | None) -> None:
    """Decode and demultiplex every chunk into the compact packet columns."""
    with closing(prefetch(iter_records(src, info, chunk_bytes=chunk_bytes, buffers=4))) as batches:
        for batch in batches:
            decoder.decode(batch, src.compressed_size)
            if progress is not None:
                progress(min(batch.source_position, src.compressed_size), src.compressed_size)


def _connection_groups(conn_packets: np.ndarray, row_limit: int) -> list[tuple[int, int]]:
    """Contiguous connection ranges of at most ``row_limit`` packets (a larger connection alone)."""
    groups: list[tuple[int, int]] = []
    lo = 0
    total = 0
    for c, k in enumerate(conn_packets.tolist()):
        if c > lo and total + k > row_limit:
            groups.append((lo, c))
            lo, total = c, 0
        total += k
    groups.append((lo, len(conn_packets)))
    return groups


def _large_tables(tables: TableSink) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ACK-stream and segment tables of the columns gathered so far."""
    return acks_frame(tables.columns("acks")), segments_frame(tables.columns("segments"))


def _time_ordered(pk: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Packets stably sorted by timestamp (equal timestamps keep file order)."""
    by_time = np.argsort(pk["ts"], kind="stable")
    return {name: col[by_time] for name, col in pk.items()}


def _place_tap_by_pairs(s: FlowSummary, pairs: float | None) -> None:
    """A rebuilt tap's position from its data/ACK pairs: their shortest data→ACK time is the
    tap→receiver→tap part, the rebuilt RTTmin the whole round trip — many samples, where the handshake's split
    is one (a host or a delay stage slow on the connection's first packets moves it by milliseconds)."""
    if pairs is None or s.rttmin_s is None or not 0 < pairs < s.rttmin_s:
        return
    by_handshake = s.vantage_position
    s.vantage_position = 1.0 - pairs / s.rttmin_s
    s.reconstruction_evidence += (f"; the tap at {100 * s.vantage_position:.1f} % of the round trip from the sender "
                                  f"by its data/ACK pairs ({1e3 * pairs:.3f} ms tap→receiver→tap of a rebuilt RTTmin "
                                  f"of {1e3 * s.rttmin_s:.3f} ms)"
                                  + (f", {100 * by_handshake:.1f} % by the handshake" if by_handshake is not None
                                     else ""))


def reconstruct_flows(g: GroupAnalysis, summaries: FlowSummaries) -> FlowSummaries:
    """Rebuild every receiver-side and mid-path flow of an analysed group as its sender saw it (``ingest.reconstruct``)
    and record how, with the evidence and a confidence, in its summary: the group's summaries with those flows'
    replaced."""
    rebuilt = np.flatnonzero(summaries.column("vantage").is_in(["receiver", "mid_path"]).to_numpy()).tolist()
    if not rebuilt:
        return summaries
    n_eps = g.F_i[:, tf.FI_NEPS].tolist()  # as analysed (the episodes' rows), before any flow is rebuilt
    ep_los = np.cumsum([0, *n_eps]).tolist()
    merged = False
    changed: dict[int, FlowSummary] = {}
    for f in rebuilt:
        s, ep_lo = summaries[f], ep_los[f]
        changed[f] = s
        a_lo = int(g.F_i[f, tf.FI_ACK_LO])
        a_hi = a_lo + int(g.F_i[f, tf.FI_NACKS])
        own = g.A_f[tf.AF_RTT, a_lo:a_hi]  # the capture point's own data→ACK times, before they are rewritten
        pairs = float(np.nanmin(own)) if a_hi > a_lo and not np.isnan(own).all() else None
        s.reordered_segments = mark_reordered(g.S_i, g.E_i, g.F_i[f], ep_lo)
        s.retransmissions -= s.reordered_segments
        rec = reconstruct_receiver_side(g.A_i, g.A_f, g.S_i, g.E_i, g.F_i[f], ep_lo, s.vantage == "mid_path")
        s.reconstruction = rec.method
        s.reconstruction_sound = rec.sound
        s.reconstruction_evidence = rec.evidence
        s.confidence = rec.confidence
        s.confidence_note = CONFIDENCE_NOTE
        if a_hi > a_lo:
            last = g.A_f[:, a_hi - 1]
            s.srtt_s = None if np.isnan(last[tf.AF_SRTT]) else float(last[tf.AF_SRTT])
            s.rttmin_s = None if np.isnan(last[tf.AF_RTTMIN]) else float(last[tf.AF_RTTMIN])
        if s.vantage == "mid_path" and rec.sound:
            _place_tap_by_pairs(s, pairs)
        eps = g.E_i[:, ep_lo: ep_lo + n_eps[f]]
        kept = eps[tf.EI_FLOW] >= 0
        if not kept.all():  # episodes merged into the sender's same recovery
            merged = True
            kinds = eps[tf.EI_KIND][kept]
            s.loss_events = int(kept.sum())
            s.fast_retransmit_events = int((kinds == tf.EP_FAST_RETRANSMIT).sum())
            s.timeout_events = int((kinds == tf.EP_TIMEOUT).sum())
    if merged:
        g.E_i = g.E_i[:, g.E_i[tf.EI_FLOW] >= 0]
    return summaries.replaced(changed)


#: Spilled packets per block when one connection is analysed in chunks: a fraction of the budget's rows.
CHUNK_FRACTION = 16
#: The fewest packets a bounded ingest holds (groups, chunks), however small the budget. ``ackreplay warmup``
#: lowers it for a moment to compile the chunked analysis on its 600-packet capture.
MIN_ROWS = 1024


def _chunked(store: PacketStore, c: int, demux: Demux, tables: TableSink, flow_base: int,
             row_limit: int) -> tuple[FlowSummaries, np.ndarray] | None:
    """Analyse connection ``c`` in chunks (``ingest.chunked``) and return its flows' summaries and episodes
    (``E_i``, flows numbered from 0); None, with its rows taken back, when a flow was captured away from its
    sender (it is analysed whole instead)."""
    assert tables.spills is not None
    acks, segs = tables.spills["acks"], tables.spills["segments"]
    ch = analyze_connection(store, c, demux.stats(c, c + 1)[0], flow_base, tables,
                            max(MIN_ROWS, row_limit // CHUNK_FRACTION))
    summaries = flow_summaries(flow_base, ch.F_i, ch.F_f, acks.read("rtt", ch.acks_before, acks.rows),
                               segs.read("t_ns", ch.segments_before, segs.rows),
                               segs.read("kind", ch.segments_before, segs.rows), demux)
    if summaries.column("vantage").is_in(["receiver", "mid_path"]).any():
        acks.truncate(ch.acks_before)
        segs.truncate(ch.segments_before)
        return None
    return summaries, ch.E_i


class _Ingest:
    """One :func:`ingest_capture` between its steps: what the container said, the packets' columns and connections,
    and the tables made of them."""

    def __init__(self, memory_budget: int | None, spill_dir: str | Path | None, threads: int) -> None:
        self.info = ScanInfo()
        self.reasons = np.zeros(len(REASONS), np.int64)
        self.demux = Demux()
        self.memory_budget = memory_budget
        self.row_limit = None if memory_budget is None else max(MIN_ROWS, memory_budget // BYTES_PER_PACKET)
        self.threads = threads
        self.spill_dir = spill_dir
        self.store = PacketStore(self.row_limit, spill_dir)
        self.tables: TableSink | None = None
        self.decoder = BatchDecoder(self.demux, self.store, self.reasons, threads)
        self.helper = ThreadPoolExecutor(1, thread_name_prefix="ingest-tables")
        self.large: Future[tuple[pl.DataFrame, pl.DataFrame]] | None = None
        self.spilled = False
        self.n_packets = 0
        self.groups = [(0, 0)]

    def analyse(self) -> list[FlowSummaries]:
        """Analyse every connection decoded, in groups that fit the memory budget (one group when the packets
        were not spilled): each group's flow summaries; the rows go to the tables."""
        store, demux = self.store, self.demux
        conn_packets = demux.stats()[:, CS_PACKETS]
        self.n_packets = int(conn_packets.sum())
        if store.spill is None and self.row_limit is not None and (
                store.n + ROWS_PER_CONNECTION * demux.n_conns > self.row_limit):
            store.flush()  # packets within the budget but too many connections: analysed in groups all the same
        self.spilled = store.spill is not None
        if self.spilled:
            if store.n:
                store.flush()
            store.drop_columns()
        tables = self.tables = TableSink(self.spill_dir, self.spilled)
        flows: list[FlowSummaries] = []  # each group's
        n_flows = 0
        first_pkt = np.zeros(0, np.float64)
        self.groups = [(0, demux.n_conns)]
        if self.spilled and self.row_limit is not None:
            self.groups = _connection_groups(conn_packets + ROWS_PER_CONNECTION, self.row_limit)
        for c_lo, c_hi in self.groups:
            base = n_flows
            summaries, E_i = self._group(tables, c_lo, c_hi, int(conn_packets[c_lo:c_hi].sum()), base)
            flows.append(summaries)
            n_flows += len(summaries)
            first_pkt = np.concatenate([first_pkt, summaries.column("start_t").to_numpy()])
            tables.add("episodes", episode_columns(E_i, first_pkt, base))
        return flows

    def _group(self, tables: TableSink, c_lo: int, c_hi: int, size: int, base: int) -> tuple[FlowSummaries, np.ndarray]:
        """Connections ``c_lo..c_hi-1`` (``size`` packets; flows numbered from ``base``) analysed: their flows'
        summaries and episodes (``E_i``); one connection beyond the budget in chunks, or whole with a warning."""
        row_limit, budget = self.row_limit, self.memory_budget
        if self.spilled and row_limit is not None and budget is not None and size > row_limit:
            chunked = None if self.store.reorders else _chunked(self.store, c_lo, self.demux, tables, base, row_limit)
            if chunked is not None:
                return chunked
            why = "timestamps go backwards" if self.store.reorders else "a flow's sender view is rebuilt whole"
            self.info.warnings.append(
                f"connection {c_lo} alone holds {size} packets, about {size * BYTES_PER_PACKET >> 20} MiB "
                f"to analyse, beyond the memory budget of {budget >> 20} MiB, and is analysed whole ({why})")
        store = self.store
        if self.spilled:
            pk, opt_tab = store.group(c_lo, c_hi, size)
        else:
            pk, opt_tab = store.columns(), store.opt_table()
        if store.reorders:  # analyse in timestamp order
            pk = _time_ordered(pk)
        g = analyze_group(pk, opt_tab, self.demux.stats(c_lo, c_hi), c_lo, self.threads)
        del pk, opt_tab
        if not self.spilled:
            store.drop_columns(background=True)
        summaries = flow_summaries(base, g.F_i, g.F_f, g.A_f[tf.AF_RTT], g.S_i[tf.SI_T], g.S_i[tf.SI_KIND], self.demux)
        summaries = reconstruct_flows(g, summaries)  # receiver-side flows: the sender's view (§7)
        tables.add("acks", ack_columns(g.A_i, g.A_f, base))
        tables.add("segments", segment_columns(g.S_i, g.S_f, base))
        if not self.spilled:  # the two large tables are built on the other core while the flows are summarised
            self.large = self.helper.submit(_large_tables, tables)
        return summaries, g.E_i

    def close(self) -> None:
        self.helper.shutdown()
        self.decoder.close()
        self.store.close()
        if self.tables is not None:
            self.tables.close()

    def stats(self, path: Path, flows: int) -> CaptureStats:
        """The capture's statistics, ``flows`` found."""
        info, reasons, store = self.info, self.reasons, self.store
        skipped = {name: int(reasons[i]) for i, name in enumerate(REASONS) if reasons[i]}
        stats = CaptureStats(
            file=str(path), format=info.format, gzipped=info.gzipped, linktypes=sorted(info.linktypes),
            snaplen=info.snaplen, records=info.records, tcp_packets=self.n_packets, skipped=skipped,
            connections=self.demux.n_conns, flows=flows, timestamp_reorders=store.reorders,
            truncated_at=info.truncated_at, skipped_blocks=info.skipped_blocks, warnings=list(info.warnings),
            connection_groups=len(self.groups), spilled=self.spilled,
        )
        if store.reorders:
            stats.warnings.append(f"{store.reorders} packets had timestamps earlier than the packet before them; "
                                  "packets were analysed in timestamp order")
        return stats


def ingest_capture(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_decompressed_bytes: int | None = None,
    memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    spill_dir: str | Path | None = None,
    threads: int | None = None,
    progress: ProgressFn | None = None,
) -> CaptureIngest:
    """Read a pcap/pcapng(.gz) capture and extract every TCP flow. Raises :class:`IngestError`.

    ``memory_budget`` (bytes, None = unlimited) bounds the working set: beyond it the packet columns
    are kept in temporary files under ``spill_dir`` (the system's temporary directory by default),
    connections are analysed in groups that fit the budget, and the returned tables are memory-mapped
    from files (read-only, reclaimable by the kernel) instead of held in RAM. ``threads`` (default:
    the usable cores) analyse disjoint connection ranges in parallel; the result does not depend on it.
    """
    path = Path(path)
    run = _Ingest(memory_budget, spill_dir, threads or default_threads())
    try:
        with ByteSource(path, max_decompressed_bytes=max_decompressed_bytes) as src:
            decode_chunks(src, run.info, run.decoder, chunk_bytes, progress)
        run.decoder.close()
        flows = run.analyse()
        assert run.tables is not None
        acks, segments = run.large.result() if run.large is not None else _large_tables(run.tables)
        episodes = episodes_frame(run.tables.columns("episodes"))
    finally:
        run.close()
    stats = run.stats(path, sum(len(f) for f in flows))
    cap = CaptureIngest(stats, FlowSummaries.concat(flows), acks, segments, episodes,
                        mapped=run.tables.mapped if run.tables is not None else {}, memory_budget=memory_budget)
    for name, cols in cap.mapped.items():  # pages read while the tables were built: the kernel's again
        cap.release(name, 0, len(next(iter(cols.values()))) if cols else 0)
    if run.spilled:  # the chunk buffers' memory, freed, back to the kernel rather than kept by the allocator
        trim_heap()
    return cap
