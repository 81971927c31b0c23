"""One flow's summary (``FlowSummary``) from its analysis results: endpoints, counts, RTTs, vantage."""

from __future__ import annotations

import ipaddress

import numpy as np

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.demux import Demux
from ackreplay.ingest.model import FlowSummary
from ackreplay.ingest.vantage import classify_vantage

MSS_SOURCES = {
    tf.MSS_SYN: "syn",
    tf.MSS_SYN_TS: "syn_minus_timestamps",
    tf.MSS_PAYLOAD: "payload_mode",
    tf.MSS_PAYLOAD_TSO: "payload_divisor",
    tf.MSS_DEFAULT: "default",
}


def format_endpoint(hi: int, lo: int, port: int) -> str:
    """"a.b.c.d:port" for IPv4 (stored IPv4-mapped), "[v6]:port" for IPv6."""
    value = ((hi & 0xFFFFFFFFFFFFFFFF) << 64) | (lo & 0xFFFFFFFFFFFFFFFF)
    addr = ipaddress.IPv6Address(value)
    if addr.ipv4_mapped is not None:
        return f"{addr.ipv4_mapped}:{port}"
    return f"[{addr.compressed}]:{port}"


def _none_if_nan(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def flow_rows(fi: np.ndarray, A_f: np.ndarray, S_i: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One flow's RTT samples (NaN = none), data segment times (ns) and kinds, from its group's analysis tables."""
    ack_lo = int(fi[tf.FI_ACK_LO])
    seg_lo = int(fi[tf.FI_SEG_LO])
    seg_hi = seg_lo + int(fi[tf.FI_NSEGS])
    return (A_f[tf.AF_RTT, ack_lo: ack_lo + int(fi[tf.FI_NACKS])], S_i[tf.SI_T, seg_lo:seg_hi],
            S_i[tf.SI_KIND, seg_lo:seg_hi])


def flow_summary(f: int, fi: np.ndarray, ff: np.ndarray, rtt: np.ndarray, seg_t: np.ndarray, seg_kind: np.ndarray,
                 demux: Demux) -> FlowSummary:
    """Flow ``f``'s summary from its ``F_i``/``F_f`` rows and its columns (:func:`flow_rows`)."""
    conn = int(fi[tf.FI_CONN])
    src, dst = demux.endpoints(conn)
    if fi[tf.FI_DIR] == 1:
        src, dst = dst, src
    first_data = int(fi[tf.FI_FIRST_DATA])
    last_ack = int(fi[tf.FI_LAST_ACK])
    bytes_acked = int(fi[tf.FI_BYTES_ACKED]) if fi[tf.FI_NACKS] else int(fi[tf.FI_BYTES_SENT])
    span = (last_ack - first_data) / 1e9 if fi[tf.FI_NACKS] and last_ack > first_data else 0.0
    new = seg_kind == tf.SEG_NEW
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
        goodput_bps=8.0 * bytes_acked / (end - start) if end > start else 0.0,
        delivery_rate_bps=8.0 * bytes_acked / span if span > 0 else 0.0,
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
