"""Ingest pipeline: a capture file → :class:`CaptureIngest` (flows, ACK streams, segments, episodes).

Streaming: the file is read in chunks; each chunk is decoded and demultiplexed at once and only a
compact set of per-packet columns (41 bytes a TCP packet) is kept, so memory grows with the
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

import ipaddress
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import numpy as np

from ingest import tcpflow as tf
from ingest.analyze import analyze_group, default_threads
from ingest.decode import (
    NCOL,
    REASONS,
    SUPPORTED_LINKTYPES,
    decode_records,
)
from ingest.demux import Demux
from ingest.errors import UnsupportedLinkTypeError
from ingest.fastpath import OPT_NCOL, PACKET_COLUMNS, decode_demux
from ingest.frames import (
    ACK_COLUMNS,
    EPISODE_COLUMNS,
    SEGMENT_COLUMNS,
    ack_columns,
    acks_frame,
    episode_columns,
    episodes_frame,
    segment_columns,
    segments_frame,
)
from ingest.memory import lazy, populate_in_background, populated
from ingest.model import CaptureIngest, CaptureStats, FlowSummary
from ingest.records import CHUNK_BYTES, RecordBatch, ScanInfo, iter_records, prefetch
from ingest.source import ByteSource
from ingest.spill import ColumnSpill
from ingest.vantage import classify_vantage

MSS_SOURCES = {
    tf.MSS_SYN: "syn",
    tf.MSS_SYN_TS: "syn_minus_timestamps",
    tf.MSS_PAYLOAD: "payload_mode",
    tf.MSS_PAYLOAD_TSO: "payload_divisor",
    tf.MSS_DEFAULT: "default",
}

ProgressFn = Callable[[int, int], None]

def decode_batch(batch: RecordBatch, reasons: np.ndarray) -> tuple[np.ndarray, int]:
    """Decode one batch of records into the full decoded matrix (``decode.COLUMNS``; tests, tools)."""
    _check_linktypes(batch)
    out = np.empty((len(batch), NCOL), np.int64)
    m = decode_records(batch.buf, batch.offset, batch.caplen, batch.origlen, batch.ts_ns, batch.linktype,
                       batch.first_index, out, reasons)
    return out, m


def _check_linktypes(batch: RecordBatch) -> None:
    lt = batch.linktype
    if len(lt) and (lt[0] != lt[-1] or int(lt[0]) not in SUPPORTED_LINKTYPES):
        bad = set(np.unique(lt).tolist()) - SUPPORTED_LINKTYPES
        if bad:
            raise UnsupportedLinkTypeError(min(bad))


#: Default memory budget of one ingest (bytes): a capture whose working set is estimated above it is
#: analysed in connection groups with its packet columns and output tables on disk.
DEFAULT_MEMORY_BUDGET = 1 << 30
#: Working-set estimate per TCP packet held in memory: its compact columns (41 B), the connection
#: order (8 B), the analysis rows it produces (120 B an ACK row, 56 B a segment row; a bulk
#: transfer has about one ACK per two segments) and the table columns made from them — measured
#: as the peak RSS above the interpreter's of a 2 GB capture analysed in groups (``bench.ingest``).
BYTES_PER_PACKET = 190
#: Rows per block when packet columns are read back from the spill.
SPILL_READ_ROWS = 1 << 20
OPT_COLUMNS = tuple(f"opt{k}" for k in range(OPT_NCOL))


class _PacketStore:
    """The compact packet columns, preallocated from a size estimate and grown by doubling.

    With a row limit (the memory budget), full columns are moved to a :class:`ColumnSpill` instead of
    growing past it; ``conn_packets`` counts each connection's packets either way.
    """

    def __init__(self, row_limit: int | None, spill_dir: str | Path | None) -> None:
        self.cols = [np.empty(0, dt) for _, dt in PACKET_COLUMNS]
        self.opt = np.empty((0, OPT_NCOL), np.int64)
        self.n = 0
        self.n_opt = 0
        self.row_limit = row_limit
        self.spill_dir = spill_dir
        self.spill: ColumnSpill | None = None
        self.opt_spill: ColumnSpill | None = None
        self.conn_packets = np.zeros(0, np.int64)
        self.reorders = 0
        self._last_ts = np.iinfo(np.int64).min

    def reserve(self, rows: int) -> None:
        if self.n + rows <= len(self.cols[0]):
            return
        cap = max(self.n + rows, 2 * len(self.cols[0]))
        if self.row_limit is not None:
            cap = max(self.n + rows, min(cap, self.row_limit + rows))
        for k, col in enumerate(self.cols):
            grown = lazy(cap, col.dtype)
            grown[: self.n] = col[: self.n]
            self.cols[k] = grown
        populate_in_background(self.cols, self.n)  # mapped in on the other core while decoding fills them

    def reserve_opt(self, rows: int) -> None:
        if self.n_opt + rows > len(self.opt):
            grown = np.empty((max(self.n_opt + rows, 2 * len(self.opt)), OPT_NCOL), np.int64)
            grown[: self.n_opt] = self.opt[: self.n_opt]
            self.opt = grown

    def added(self, lo: int, n_conns: int) -> None:
        """Account rows ``lo..n`` just decoded: connection packet counts, backward timestamp steps."""
        if self.n == lo:
            return
        conn = self.cols[1][lo: self.n]
        counts = np.bincount(conn, minlength=n_conns)
        if len(self.conn_packets) < n_conns:
            self.conn_packets = np.concatenate([self.conn_packets, np.zeros(n_conns - len(self.conn_packets),
                                                                            np.int64)])
        self.conn_packets[: len(counts)] += counts
        ts = self.cols[0][lo: self.n]
        self.reorders += int(np.count_nonzero(np.diff(ts) < 0)) + int(int(ts[0]) < self._last_ts)
        self._last_ts = int(ts[-1])
        if self.row_limit is not None and self.n >= self.row_limit:
            self.flush()

    def flush(self) -> None:
        """Move the rows held to the spill (created on first use)."""
        if self.spill is None:
            self.spill = ColumnSpill(dict(PACKET_COLUMNS), self.spill_dir, "packets")
            self.opt_spill = ColumnSpill({name: np.dtype(np.int64) for name in OPT_COLUMNS}, self.spill_dir,
                                         "options")
        assert self.opt_spill is not None
        cols = self.columns()
        opt_idx = cols["opt_idx"]
        cols["opt_idx"] = np.where(opt_idx >= 0, opt_idx + self.opt_spill.rows, -1).astype(np.int32)
        self.spill.append(cols)
        self.opt_spill.append({name: self.opt[: self.n_opt, k] for k, name in enumerate(OPT_COLUMNS)})
        self.n = 0
        self.n_opt = 0

    def drop_columns(self) -> None:
        """Free the in-memory columns (after the last flush, or once analysed)."""
        self.cols = [np.empty(0, dt) for _, dt in PACKET_COLUMNS]
        self.opt = np.empty((0, OPT_NCOL), np.int64)
        self.n = self.n_opt = 0

    def close(self) -> None:
        """Drop the columns held and delete the spill files."""
        self.drop_columns()
        for spill in (self.spill, self.opt_spill):
            if spill is not None:
                spill.close()

    def columns(self) -> dict[str, np.ndarray]:
        return {name: col[: self.n] for (name, _), col in zip(PACKET_COLUMNS, self.cols, strict=True)}

    def opt_table(self) -> np.ndarray:
        return self.opt[: self.n_opt] if self.n_opt else np.zeros((1, OPT_NCOL), np.int64)

    def group(self, c_lo: int, c_hi: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The spilled packets of connections ``c_lo..c_hi-1`` (capture order; ``conn`` made local)."""
        assert self.spill is not None and self.opt_spill is not None
        size = int(self.conn_packets[c_lo:c_hi].sum())
        out = {name: populated(size, dt) for name, dt in PACKET_COLUMNS}
        opt_parts: list[np.ndarray] = []
        n_opt = 0
        step = max(1 << 16, min(SPILL_READ_ROWS, (self.row_limit or SPILL_READ_ROWS) // 4))
        buf = {name: np.empty(min(step, self.spill.rows), dt) for name, dt in PACKET_COLUMNS}
        pos = 0
        for lo in range(0, self.spill.rows, step):
            hi = min(lo + step, self.spill.rows)
            conn = self.spill.read("conn", lo, hi, buf["conn"])
            take = np.flatnonzero((conn >= c_lo) & (conn < c_hi))
            if not len(take):
                continue
            k = len(take)
            for name, _ in PACKET_COLUMNS:
                col = conn if name == "conn" else self.spill.read(name, lo, hi, buf[name])
                out[name][pos: pos + k] = col[take]
            idx = out["opt_idx"][pos: pos + k]
            has = idx >= 0
            if has.any():
                first, last = int(idx[has].min()), int(idx[has].max()) + 1
                block = np.stack([self.opt_spill.read(name, first, last) for name in OPT_COLUMNS], axis=1)
                opt_parts.append(block[idx[has] - first])
                idx[has] = np.arange(n_opt, n_opt + int(has.sum()), dtype=idx.dtype)
                n_opt += int(has.sum())
            pos += k
        out["conn"] -= c_lo
        opt = np.concatenate(opt_parts) if opt_parts else np.zeros((1, OPT_NCOL), np.int64)
        return out, opt


def _decode_chunks(src: ByteSource, info: ScanInfo, reasons: np.ndarray, demux: Demux, chunk_bytes: int,
                   store: _PacketStore, progress: ProgressFn | None) -> None:
    """Decode and demultiplex every chunk into the compact packet columns."""
    with closing(prefetch(iter_records(src, info, chunk_bytes=chunk_bytes, buffers=3))) as batches:
        for batch in batches:
            _decode_one_batch(batch, src, reasons, demux, store)
            if progress is not None:
                progress(min(batch.source_position, src.compressed_size), src.compressed_size)


def _decode_one_batch(batch: RecordBatch, src: ByteSource, reasons: np.ndarray, demux: Demux,
                      store: _PacketStore) -> None:
    """Decode and demultiplex one batch of records into the store."""
    _check_linktypes(batch)
    n = len(batch)
    if len(store.cols[0]) == 0 and n:  # first chunk: estimate the whole capture from its density
        done = max(1, batch.source_position)
        estimate = int(n * max(1.0, src.compressed_size / done) * 1.05) + 1024
        store.reserve(estimate if store.row_limit is None else min(estimate, store.row_limit + n))
    store.reserve(n)
    store.reserve_opt(n)
    first = store.n
    i = 0
    while i < n:
        i, store.n, store.n_opt = decode_demux(  # type: ignore[call-arg]
            batch.buf, batch.offset, batch.caplen, batch.origlen, batch.ts_ns, batch.linktype, i,
            store.n, store.n_opt, reasons, *demux.tables(), *store.cols, store.opt)
        if i < n:
            demux.grow()
    store.added(first, demux.n_conns)


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


def memory_budget_mib(budget: int | None) -> str:
    return "unlimited" if budget is None else str(budget >> 20)


def _time_ordered(pk: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Packets stably sorted by timestamp (equal timestamps keep file order)."""
    by_time = np.argsort(pk["ts"], kind="stable")
    return {name: col[by_time] for name, col in pk.items()}


class _Tables:
    """Output columns of the groups analysed so far: in memory (one group) or appended to spills."""

    def __init__(self, spill_dir: str | Path | None, spilled: bool) -> None:
        self.parts: dict[str, list[dict[str, np.ndarray]]] = {"acks": [], "segments": [], "episodes": []}
        self.spills: dict[str, ColumnSpill] | None = None
        if spilled:
            self.spills = {
                "acks": ColumnSpill(ACK_COLUMNS, spill_dir, "acks"),
                "segments": ColumnSpill(SEGMENT_COLUMNS, spill_dir, "segments"),
                "episodes": ColumnSpill(EPISODE_COLUMNS, spill_dir, "episodes"),
            }

    def add(self, name: str, cols: dict[str, np.ndarray]) -> None:
        if self.spills is not None:
            self.spills[name].append(cols)
        else:
            self.parts[name].append(cols)

    def columns(self, name: str) -> dict[str, np.ndarray]:
        if self.spills is not None:
            return self.spills[name].mapped()
        parts = self.parts[name]
        if len(parts) == 1:
            return parts[0]
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}

    def close(self) -> None:
        if self.spills is not None:
            for spill in self.spills.values():
                spill.close()


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
    info = ScanInfo()
    reasons = np.zeros(len(REASONS), np.int64)
    demux = Demux()
    row_limit = None if memory_budget is None else max(1024, memory_budget // BYTES_PER_PACKET)
    n_threads = threads or default_threads()
    store = _PacketStore(row_limit, spill_dir)
    tables: _Tables | None = None
    try:
        with ByteSource(path, max_decompressed_bytes=max_decompressed_bytes) as src:
            _decode_chunks(src, info, reasons, demux, chunk_bytes, store, progress)
        n_conns = demux.n_conns
        n_packets = int(store.conn_packets[:n_conns].sum())
        spilled = store.spill is not None
        if spilled:
            if store.n:
                store.flush()
            store.drop_columns()
        tables = _Tables(spill_dir, spilled)
        flows: list[FlowSummary] = []
        first_pkt = np.zeros(0, np.float64)
        groups = [(0, n_conns)]
        if spilled and row_limit is not None:
            groups = _connection_groups(store.conn_packets[:n_conns], row_limit)
            for c_lo, c_hi in groups:
                size = int(store.conn_packets[c_lo:c_hi].sum())
                if size > row_limit:  # one connection (a group of one) beyond the budget is analysed whole
                    info.warnings.append(
                        f"connection {c_lo} alone holds {size} packets, about {size * BYTES_PER_PACKET >> 20} MiB "
                        f"to analyse, beyond the memory budget of {memory_budget_mib(memory_budget)} MiB")
        for c_lo, c_hi in groups:
            if spilled:
                pk, opt_tab = store.group(c_lo, c_hi)
            else:
                pk, opt_tab = store.columns(), store.opt_table()
            if store.reorders:  # analyse in timestamp order
                pk = _time_ordered(pk)
            g = analyze_group(pk, opt_tab, c_hi - c_lo, c_lo, n_threads)
            del pk, opt_tab
            if not spilled:
                store.drop_columns()
            base = len(flows)
            flows += [_summary(base + f, g.F_i[f], g.F_f[f], g.A_f, g.S_i, demux) for f in range(g.n_flows)]
            first_pkt = np.array([s.start_t for s in flows], np.float64)
            tables.add("acks", ack_columns(g.A_i, g.A_f, base))
            tables.add("segments", segment_columns(g.S_i, g.S_f, base))
            tables.add("episodes", episode_columns(g.E_i, first_pkt, base))
            del g
        store.close()
        acks = acks_frame(tables.columns("acks"))
        segments = segments_frame(tables.columns("segments"))
        episodes = episodes_frame(tables.columns("episodes"))
    finally:
        store.close()
        if tables is not None:
            tables.close()
    skipped = {name: int(reasons[i]) for i, name in enumerate(REASONS) if reasons[i]}
    stats = CaptureStats(
        file=str(path), format=info.format, gzipped=info.gzipped, linktypes=sorted(info.linktypes),
        snaplen=info.snaplen, records=info.records, tcp_packets=n_packets, skipped=skipped,
        connections=n_conns, flows=len(flows), timestamp_reorders=store.reorders,
        truncated_at=info.truncated_at, skipped_blocks=info.skipped_blocks, warnings=list(info.warnings),
        connection_groups=len(groups), spilled=spilled,
    )
    if store.reorders:
        stats.warnings.append(f"{store.reorders} packets had timestamps earlier than the packet before them; "
                              "packets were analysed in timestamp order")
    return CaptureIngest(stats, flows, acks, segments, episodes)


def format_endpoint(hi: int, lo: int, port: int) -> str:
    """"a.b.c.d:port" for IPv4 (stored IPv4-mapped), "[v6]:port" for IPv6."""
    value = ((hi & 0xFFFFFFFFFFFFFFFF) << 64) | (lo & 0xFFFFFFFFFFFFFFFF)
    addr = ipaddress.IPv6Address(value)
    if addr.ipv4_mapped is not None:
        return f"{addr.ipv4_mapped}:{port}"
    return f"[{addr.compressed}]:{port}"


def _none_if_nan(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _summary(f: int, fi: np.ndarray, ff: np.ndarray, A_f: np.ndarray, S_i: np.ndarray, demux: Demux) -> FlowSummary:
    conn = int(fi[tf.FI_CONN])
    src, dst = demux.endpoints(conn)
    if fi[tf.FI_DIR] == 1:
        src, dst = dst, src
    ack_lo = int(fi[tf.FI_ACK_LO])
    ack_hi = ack_lo + int(fi[tf.FI_NACKS])
    seg_lo = int(fi[tf.FI_SEG_LO])
    seg_hi = seg_lo + int(fi[tf.FI_NSEGS])
    first_data = int(fi[tf.FI_FIRST_DATA])
    last_ack = int(fi[tf.FI_LAST_ACK])
    bytes_acked = int(fi[tf.FI_BYTES_ACKED]) if fi[tf.FI_NACKS] else int(fi[tf.FI_BYTES_SENT])
    span = (last_ack - first_data) / 1e9 if fi[tf.FI_NACKS] and last_ack > first_data else 0.0
    rtt = A_f[tf.AF_RTT, ack_lo:ack_hi]
    seg_t = S_i[tf.SI_T, seg_lo:seg_hi]
    new = S_i[tf.SI_KIND, seg_lo:seg_hi] == tf.SEG_NEW
    vantage, evidence = classify_vantage(
        sender_is_client=bool(fi[tf.FI_SENDER_CLIENT]),
        syn_ns=int(fi[tf.FI_SYN]), synack_ns=int(fi[tf.FI_SYNACK]), hsack_ns=int(fi[tf.FI_HSACK]),
        rtt_samples=rtt[~np.isnan(rtt)], data_send_ns=seg_t[new],
    )
    start = int(fi[tf.FI_FIRST_PKT]) / 1e9
    end = int(fi[tf.FI_LAST_PKT]) / 1e9
    return FlowSummary(
        flow_id=f, connection=conn, sender=format_endpoint(*src), receiver=format_endpoint(*dst),
        start_t=start, end_t=end, duration_s=end - start, packets=int(fi[tf.FI_NPKTS]),
        data_segments=int(fi[tf.FI_NSEGS]), bytes=bytes_acked, bytes_sent=int(fi[tf.FI_BYTES_SENT]),
        goodput_bps=8.0 * bytes_acked / span if span > 0 else 0.0,
        mss=int(fi[tf.FI_MSS]), mss_source=MSS_SOURCES[int(fi[tf.FI_MSS_SRC])],
        rttmin_s=_none_if_nan(ff[tf.FF_RTTMIN]), srtt_s=_none_if_nan(ff[tf.FF_SRTT]),
        handshake_rtt_s=_none_if_nan(ff[tf.FF_RTT_HS]),
        acks=int(fi[tf.FI_NACKS]), dupacks=int(fi[tf.FI_NDUP]), retransmissions=int(fi[tf.FI_NRETX]),
        loss_events=int(fi[tf.FI_NEPS]), fast_retransmit_events=int(fi[tf.FI_NFR]),
        timeout_events=int(fi[tf.FI_NTO]), keepalives=int(fi[tf.FI_NKEEP]),
        zero_window_probes=int(fi[tf.FI_NZWP]), dsacks=int(fi[tf.FI_NDSACK]),
        sack=bool(fi[tf.FI_SACK]), timestamps=bool(fi[tf.FI_TS]), window_scaling=bool(fi[tf.FI_WS]),
        syn_seen=bool(fi[tf.FI_SYN] != tf._NONE), options_truncated_packets=int(fi[tf.FI_OPT_TRUNC]),
        vantage=vantage, vantage_evidence=evidence,
    )
