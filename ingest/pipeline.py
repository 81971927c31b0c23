"""Ingest pipeline: a capture file → :class:`CaptureIngest` (flows, ACK streams, segments, episodes).

Streaming: the file is read in chunks; each chunk is decoded and demultiplexed at once and only a
compact set of per-packet columns (about 60 bytes a TCP packet) is kept, so memory grows with the
number of TCP packets, not with the file size (payload bytes are never held beyond one chunk).

Packets are analysed in capture-time order: a capture whose timestamps go backwards (multi-queue
capture) is re-sorted by timestamp — stable, so packets with equal timestamps keep file order — and
the number of backward steps is reported in the statistics.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from ingest import tcpflow as tf
from ingest.decode import (
    NCOL,
    REASONS,
    SUPPORTED_LINKTYPES,
    decode_records,
)
from ingest.demux import Demux
from ingest.errors import UnsupportedLinkTypeError
from ingest.fastpath import PACKET_COLUMNS, decode_demux, order_by_connection
from ingest.memory import populated
from ingest.model import CaptureIngest, CaptureStats, FlowSummary
from ingest.records import CHUNK_BYTES, RecordBatch, ScanInfo, iter_records
from ingest.source import ByteSource
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


class _PacketStore:
    """The compact packet columns, preallocated from a size estimate and grown by doubling."""

    def __init__(self) -> None:
        self.cols = [np.empty(0, dt) for _, dt in PACKET_COLUMNS]
        self.sack = np.empty((0, 8), np.int64)
        self.n = 0
        self.n_sack = 0

    def reserve(self, rows: int) -> None:
        if self.n + rows <= len(self.cols[0]):
            return
        cap = max(self.n + rows, 2 * len(self.cols[0]))
        for k, col in enumerate(self.cols):
            grown = populated(cap, col.dtype)
            grown[: self.n] = col[: self.n]
            self.cols[k] = grown

    def reserve_sack(self, rows: int) -> None:
        if self.n_sack + rows > len(self.sack):
            grown = np.empty((max(self.n_sack + rows, 2 * len(self.sack)), 8), np.int64)
            grown[: self.n_sack] = self.sack[: self.n_sack]
            self.sack = grown

    def columns(self) -> dict[str, np.ndarray]:
        return {name: col[: self.n] for (name, _), col in zip(PACKET_COLUMNS, self.cols, strict=True)}

    def sack_table(self) -> np.ndarray:
        return self.sack[: self.n_sack] if self.n_sack else np.zeros((1, 8), np.int64)


def _decode_chunks(src: ByteSource, info: ScanInfo, reasons: np.ndarray, demux: Demux, chunk_bytes: int,
                   progress: ProgressFn | None) -> _PacketStore:
    """Decode and demultiplex every chunk into the compact packet columns."""
    store = _PacketStore()
    for batch in iter_records(src, info, chunk_bytes=chunk_bytes):
        _check_linktypes(batch)
        n = len(batch)
        if store.n == 0 and n:  # first chunk: estimate the whole capture from its density
            done = max(1, src.compressed_position())
            store.reserve(int(n * max(1.0, src.compressed_size / done) * 1.05) + 1024)
        store.reserve(n)
        store.reserve_sack(n)
        i = 0
        while i < n:
            i, store.n, store.n_sack = decode_demux(  # type: ignore[call-arg]
                batch.buf, batch.offset, batch.caplen, batch.origlen, batch.ts_ns, batch.linktype, i,
                store.n, store.n_sack, reasons, *demux.tables(), *store.cols, store.sack)
            if i < n:
                demux.grow()
        if progress is not None:
            progress(min(src.compressed_position(), src.compressed_size), src.compressed_size)
    return store


def ingest_capture(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_decompressed_bytes: int | None = None,
    progress: ProgressFn | None = None,
) -> CaptureIngest:
    """Read a pcap/pcapng(.gz) capture and extract every TCP flow. Raises :class:`IngestError`."""
    path = Path(path)
    info = ScanInfo()
    reasons = np.zeros(len(REASONS), np.int64)
    demux = Demux()
    with ByteSource(path, max_decompressed_bytes=max_decompressed_bytes) as src:
        store = _decode_chunks(src, info, reasons, demux, chunk_bytes, progress)
    pk = store.columns()
    sack_tab = store.sack_table()
    n = len(pk["ts"])
    ts = pk["ts"]
    reorders = int(np.count_nonzero(ts[1:] < ts[:-1])) if n > 1 else 0
    if reorders:  # analyse in timestamp order (stable: equal timestamps keep file order)
        by_time = np.argsort(ts, kind="stable")
        pk = {name: col[by_time] for name, col in pk.items()}
        ts = pk["ts"]
    order = populated(n, np.int64)
    bounds = order_by_connection(pk["conn"], demux.n_conns, order)

    n_ackrows, n_data = tf.count_rows(pk["conn"], pk["dir"], pk["flags"], pk["plen"], demux.n_conns)
    A_i = populated((tf.AI_NCOL, n_ackrows + 1), np.int64)
    A_f = populated((tf.AF_NCOL, n_ackrows + 1), np.float64)
    S_i = populated((tf.SI_NCOL, n_data + 1), np.int64)
    S_f = populated((tf.SF_NCOL, n_data + 1), np.float64)
    E_i = np.empty((tf.EI_NCOL, max(1024, n_data // 64)), np.int64)
    F_i = np.empty((2 * demux.n_conns + 1, tf.FI_NCOL), np.int64)
    F_f = np.empty((2 * demux.n_conns + 1, tf.FF_NCOL), np.float64)
    state = np.zeros(5, np.int64)
    while True:
        c = tf.analyze_all(bounds, order, ts, pk["dir"], pk["seq"], pk["ack"], pk["flags"], pk["win"],
                           pk["plen"], pk["mss"], pk["wscale"], pk["sackok"], pk["tsval"], pk["tsecr"],
                           pk["trunc"], pk["sack_idx"], pk["nsack"], sack_tab, A_i, A_f, S_i, S_f, E_i, F_i,
                           F_f, state)
        if c >= len(bounds) - 1:
            break
        need = int(state[3] + bounds[c + 1] - bounds[c])
        grown = np.empty((tf.EI_NCOL, max(2 * E_i.shape[1], need)), np.int64)
        grown[:, : E_i.shape[1]] = E_i
        E_i = grown
    _, na, ns, ne, nf = (int(x) for x in state)
    del pk, order, ts, store

    flows = [_summary(f, F_i[f], F_f[f], A_f, S_i, demux) for f in range(nf)]
    first_pkt = np.array([s.start_t for s in flows], np.float64)
    acks = _acks_frame(A_i[:, :na], A_f[:, :na])
    segments = _segments_frame(S_i[:, :ns], S_f[:, :ns])
    episodes = _episodes_frame(E_i[:, :ne], first_pkt)
    skipped = {name: int(reasons[i]) for i, name in enumerate(REASONS) if reasons[i]}
    stats = CaptureStats(
        file=str(path), format=info.format, gzipped=info.gzipped, linktypes=sorted(info.linktypes),
        snaplen=info.snaplen, records=info.records, tcp_packets=n, skipped=skipped,
        connections=demux.n_conns, flows=nf, timestamp_reorders=reorders, truncated_at=info.truncated_at,
        skipped_blocks=info.skipped_blocks, warnings=list(info.warnings),
    )
    if reorders:
        stats.warnings.append(f"{reorders} packets had timestamps earlier than the packet before them; "
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


SEGMENT_KINDS = pl.Enum(["new", "retransmission", "keepalive", "zero_window_probe"])
EPISODE_KINDS = pl.Enum(["fast_retransmit", "timeout"])


def _rel(t_ns: np.ndarray, flow: np.ndarray, first_pkt: np.ndarray) -> np.ndarray:
    return t_ns / 1e9 - first_pkt[flow] if len(flow) else np.empty(0, np.float64)


def _enum(codes: np.ndarray, dtype: pl.Enum) -> pl.Series:
    """Category codes → an Enum column (a vectorised gather from the categories)."""
    return pl.Series(dtype.categories, dtype=dtype).gather(codes)


def _acks_frame(A_i: np.ndarray, A_f: np.ndarray) -> pl.DataFrame:
    return pl.DataFrame({
        "flow_id": A_i[tf.AI_FLOW],
        "t_ns": A_i[tf.AI_T],
        "t": A_f[tf.AF_T],
        "t_rel": A_f[tf.AF_TREL],
        "acked": A_i[tf.AI_ACKED],
        "dup": A_i[tf.AI_DUP],
        "d": A_i[tf.AI_D],
        "rtt": A_f[tf.AF_RTT],
        "srtt": A_f[tf.AF_SRTT],
        "rttmin": A_f[tf.AF_RTTMIN],
        "flight": A_i[tf.AI_FLIGHT],
        "tsval": A_i[tf.AI_TSVAL],
        "ack": A_i[tf.AI_ACK],
        "win": A_i[tf.AI_WIN],
        "sacked": A_i[tf.AI_SACKED],
    }).with_columns(
        pl.col("flow_id").cast(pl.Int32),
        pl.col("dup").cast(pl.Boolean),
        pl.col("win").cast(pl.Int32),
        pl.col("rtt", "srtt", "rttmin").fill_nan(None),
        pl.when(pl.col("tsval") >= 0).then(pl.col("tsval")).alias("tsval"),
    )


def _segments_frame(S_i: np.ndarray, S_f: np.ndarray) -> pl.DataFrame:
    kind = S_i[tf.SI_KIND]
    return pl.DataFrame({
        "flow_id": S_i[tf.SI_FLOW],
        "t_ns": S_i[tf.SI_T],
        "t": S_f[tf.SF_T],
        "t_rel": S_f[tf.SF_TREL],
        "seq": S_i[tf.SI_SEQ],
        "len": S_i[tf.SI_LEN],
        "retransmission": kind == tf.SEG_RETX,
        "kind": _enum(kind, SEGMENT_KINDS),
    }).with_columns(pl.col("flow_id").cast(pl.Int32))


def _episodes_frame(E_i: np.ndarray, first_pkt: np.ndarray) -> pl.DataFrame:
    end = E_i[tf.EI_END]
    flow = E_i[tf.EI_FLOW]
    return pl.DataFrame({
        "flow_id": flow.astype(np.int32),
        "start_t": E_i[tf.EI_START] / 1e9,
        "start_t_rel": _rel(E_i[tf.EI_START], flow, first_pkt),
        "end_t": pl.Series(np.where(end >= 0, end / 1e9, np.nan)).fill_nan(None),
        "kind": _enum(E_i[tf.EI_KIND], EPISODE_KINDS),
        "dupacks_before": E_i[tf.EI_DUPACKS],
        "silence_s": E_i[tf.EI_SILENCE_NS] / 1e9,
        "recover_seq": E_i[tf.EI_RECOVER],
        "first_retx_seq": E_i[tf.EI_SEQ],
        "retransmissions": E_i[tf.EI_RETX],
        "spurious": E_i[tf.EI_SPURIOUS].astype(bool),
        "decision_ack_row": E_i[tf.EI_ACKROW],
    })
