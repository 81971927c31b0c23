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
    C_ACK,
    C_FLAGS,
    C_MSS,
    C_NSACK,
    C_PLEN,
    C_SACK0,
    C_SACKOK,
    C_SEQ,
    C_TRUNC,
    C_TS,
    C_TSECR,
    C_TSVAL,
    C_WIN,
    C_WSCALE,
    NCOL,
    R_UNSUPPORTED,
    REASONS,
    SUPPORTED_LINKTYPES,
    decode_records,
)
from ingest.demux import Demux
from ingest.errors import UnsupportedLinkTypeError
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

# (name, decoded column, dtype) of the compact per-packet columns kept after decoding
_KEEP = (
    ("ts", C_TS, np.int64), ("seq", C_SEQ, np.int64), ("ack", C_ACK, np.int64),
    ("flags", C_FLAGS, np.int16), ("win", C_WIN, np.int32), ("plen", C_PLEN, np.int64),
    ("mss", C_MSS, np.int32), ("wscale", C_WSCALE, np.int8), ("sackok", C_SACKOK, np.int8),
    ("tsval", C_TSVAL, np.int64), ("tsecr", C_TSECR, np.int64), ("trunc", C_TRUNC, np.int8),
    ("nsack", C_NSACK, np.int8),
)


def decode_batch(batch: RecordBatch, reasons: np.ndarray) -> tuple[np.ndarray, int]:
    """Decode one batch of records into the full decoded matrix (``decode.COLUMNS``)."""
    bad = set(np.unique(batch.linktype).tolist()) - SUPPORTED_LINKTYPES
    if bad:
        raise UnsupportedLinkTypeError(min(bad))
    out = np.empty((len(batch), NCOL), np.int64)
    m = decode_records(batch.buf, batch.offset, batch.caplen, batch.origlen, batch.ts_ns, batch.linktype,
                       batch.first_index, out, reasons)
    return out, m


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
    cols: dict[str, list[np.ndarray]] = {name: [] for name, _, _ in _KEEP}
    conn_parts: list[np.ndarray] = []
    dir_parts: list[np.ndarray] = []
    sack_parts: list[np.ndarray] = []
    sack_idx_parts: list[np.ndarray] = []
    n_sack = 0
    with ByteSource(path, max_decompressed_bytes=max_decompressed_bytes) as src:
        total = src.compressed_size
        for batch in iter_records(src, info, chunk_bytes=chunk_bytes):
            M, m = decode_batch(batch, reasons)
            M = M[:m]
            conn, dirs = demux.assign(M, m)
            for name, c, dt in _KEEP:
                cols[name].append(M[:, c].astype(dt))
            conn_parts.append(conn)
            dir_parts.append(dirs)
            has = np.flatnonzero(M[:, C_NSACK] > 0)
            idx = np.full(m, -1, np.int32)
            idx[has] = np.arange(n_sack, n_sack + len(has), dtype=np.int32)
            n_sack += len(has)
            sack_idx_parts.append(idx)
            sack_parts.append(M[has, C_SACK0 : C_SACK0 + 8].copy())
            if progress is not None:
                progress(min(src.compressed_position(), total), total)
    if reasons[R_UNSUPPORTED]:
        raise UnsupportedLinkTypeError(min(set(info.linktypes) - SUPPORTED_LINKTYPES))

    def cat(parts: list[np.ndarray], dt: type, shape: tuple[int, ...] = ()) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty((0, *shape), dt)

    pk = {name: cat(cols[name], dt) for name, _, dt in _KEEP}
    conn = cat(conn_parts, np.int32)
    dirs = cat(dir_parts, np.int8)
    sack_idx = cat(sack_idx_parts, np.int32)
    sack_tab = cat(sack_parts, np.int64, (8,))
    if len(sack_tab) == 0:
        sack_tab = np.zeros((1, 8), np.int64)
    n = len(conn)
    ts = pk["ts"]
    reorders = int(np.count_nonzero(ts[1:] < ts[:-1])) if n > 1 else 0
    order = np.lexsort((ts, conn)) if reorders else np.argsort(conn, kind="stable")
    for name in pk:
        pk[name] = pk[name][order]
    conn = conn[order]
    dirs = dirs[order]
    sack_idx = sack_idx[order]
    starts = np.flatnonzero(np.diff(conn)) + 1 if n else np.empty(0, np.int64)
    bounds = np.concatenate(([0], starts, [n])).astype(np.int64) if n else np.zeros(1, np.int64)
    conn_ids = conn[bounds[:-1]].astype(np.int64) if n else np.empty(0, np.int64)

    n_ackrows = int(np.count_nonzero(pk["flags"] & 0x10)) + 1
    n_data = int(np.count_nonzero(pk["plen"] > 0)) + 1
    A_i = np.empty((n_ackrows, tf.AI_NCOL), np.int64)
    A_f = np.empty((n_ackrows, tf.AF_NCOL), np.float64)
    S_i = np.empty((n_data, tf.SI_NCOL), np.int64)
    E_i = np.empty((max(1024, n_data // 64), tf.EI_NCOL), np.int64)
    F_i = np.empty((2 * len(conn_ids) + 1, tf.FI_NCOL), np.int64)
    F_f = np.empty((2 * len(conn_ids) + 1, tf.FF_NCOL), np.float64)
    state = np.zeros(5, np.int64)
    while True:
        c = tf.analyze_all(bounds, conn_ids, ts := pk["ts"], dirs, pk["seq"], pk["ack"],
                           pk["flags"].astype(np.int64), pk["win"].astype(np.int64), pk["plen"],
                           pk["mss"].astype(np.int64), pk["wscale"].astype(np.int64),
                           pk["sackok"].astype(np.int64), pk["tsval"], pk["tsecr"], pk["trunc"],
                           sack_idx.astype(np.int64), pk["nsack"].astype(np.int64), sack_tab,
                           A_i, A_f, S_i, E_i, F_i, F_f, state)
        if c >= len(bounds) - 1:
            break
        need = int(state[3] + bounds[c + 1] - bounds[c])
        grown = np.empty((max(2 * len(E_i), need), tf.EI_NCOL), np.int64)
        grown[: len(E_i)] = E_i
        E_i = grown
    _, na, ns, ne, nf = (int(x) for x in state)
    del ts

    flows = [_summary(f, F_i[f], F_f[f], A_i, A_f, S_i, na, ns, ne, nf, F_i, demux) for f in range(nf)]
    first_pkt = {s.flow_id: s.start_t for s in flows}
    acks = _acks_frame(A_i[:na], A_f[:na], first_pkt)
    segments = _segments_frame(S_i[:ns], first_pkt)
    episodes = _episodes_frame(E_i[:ne], first_pkt)
    skipped = {name: int(reasons[i]) for i, name in enumerate(REASONS) if reasons[i]}
    stats = CaptureStats(
        file=str(path), format=info.format, gzipped=info.gzipped, linktypes=sorted(info.linktypes),
        snaplen=info.snaplen, records=info.records, tcp_packets=n, skipped=skipped,
        connections=len(conn_ids), flows=nf, timestamp_reorders=reorders, truncated_at=info.truncated_at,
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


def _summary(f: int, fi: np.ndarray, ff: np.ndarray, A_i: np.ndarray, A_f: np.ndarray, S_i: np.ndarray,
             na: int, ns: int, ne: int, nf: int, F_i: np.ndarray, demux: Demux) -> FlowSummary:
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
    rtt = A_f[ack_lo:ack_hi, tf.AF_RTT]
    seg_t = S_i[seg_lo:seg_hi, tf.SI_T]
    new = S_i[seg_lo:seg_hi, tf.SI_KIND] == tf.SEG_NEW
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


def _rel(t_ns: np.ndarray, flow: np.ndarray, first_pkt: dict[int, float]) -> np.ndarray:
    base = np.array([first_pkt[i] for i in range(len(first_pkt))], np.float64)
    return t_ns / 1e9 - base[flow] if len(flow) else np.empty(0, np.float64)


def _acks_frame(A_i: np.ndarray, A_f: np.ndarray, first_pkt: dict[int, float]) -> pl.DataFrame:
    flow = A_i[:, tf.AI_FLOW]
    tsval = A_i[:, tf.AI_TSVAL]
    return pl.DataFrame({
        "flow_id": flow.astype(np.int32),
        "t_ns": A_i[:, tf.AI_T],
        "t": A_i[:, tf.AI_T] / 1e9,
        "t_rel": _rel(A_i[:, tf.AI_T], flow, first_pkt),
        "acked": A_i[:, tf.AI_ACKED],
        "dup": A_i[:, tf.AI_DUP].astype(bool),
        "d": A_i[:, tf.AI_D],
        "rtt": A_f[:, tf.AF_RTT],
        "srtt": A_f[:, tf.AF_SRTT],
        "rttmin": A_f[:, tf.AF_RTTMIN],
        "flight": A_i[:, tf.AI_FLIGHT],
        "tsval": pl.Series(tsval, dtype=pl.Int64).scatter(np.flatnonzero(tsval < 0), None),
        "ack": A_i[:, tf.AI_ACK],
        "win": A_i[:, tf.AI_WIN].astype(np.int32),
        "sacked": A_i[:, tf.AI_SACKED],
    }).with_columns(pl.col("rtt", "srtt", "rttmin").fill_nan(None))


def _segments_frame(S_i: np.ndarray, first_pkt: dict[int, float]) -> pl.DataFrame:
    kind = S_i[:, tf.SI_KIND]
    names = np.array(["new", "retransmission", "keepalive", "zero_window_probe"])
    return pl.DataFrame({
        "flow_id": S_i[:, tf.SI_FLOW].astype(np.int32),
        "t_ns": S_i[:, tf.SI_T],
        "t": S_i[:, tf.SI_T] / 1e9,
        "t_rel": _rel(S_i[:, tf.SI_T], S_i[:, tf.SI_FLOW], first_pkt),
        "seq": S_i[:, tf.SI_SEQ],
        "len": S_i[:, tf.SI_LEN],
        "retransmission": kind == tf.SEG_RETX,
        "kind": names[kind] if len(kind) else np.empty(0, str),
    })


def _episodes_frame(E_i: np.ndarray, first_pkt: dict[int, float]) -> pl.DataFrame:
    end = E_i[:, tf.EI_END]
    flow = E_i[:, tf.EI_FLOW]
    return pl.DataFrame({
        "flow_id": flow.astype(np.int32),
        "start_t": E_i[:, tf.EI_START] / 1e9,
        "start_t_rel": _rel(E_i[:, tf.EI_START], flow, first_pkt),
        "end_t": pl.Series(np.where(end >= 0, end / 1e9, np.nan)).fill_nan(None),
        "kind": np.where(E_i[:, tf.EI_KIND] == tf.EP_TIMEOUT, "timeout", "fast_retransmit")
        if len(end) else np.empty(0, str),
        "dupacks_before": E_i[:, tf.EI_DUPACKS],
        "silence_s": E_i[:, tf.EI_SILENCE_NS] / 1e9,
        "recover_seq": E_i[:, tf.EI_RECOVER],
        "first_retx_seq": E_i[:, tf.EI_SEQ],
        "retransmissions": E_i[:, tf.EI_RETX],
        "spurious": E_i[:, tf.EI_SPURIOUS].astype(bool),
        "decision_ack_row": E_i[:, tf.EI_ACKROW],
    })
