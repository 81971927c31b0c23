"""Flow summaries (``FlowSummary``) from an analysis group's results: endpoints, counts, RTTs, vantage.

All the flows of a group are summarised at once, column by column over its ``F_i``/``F_f`` tables (a capture of
a million small flows has no per-flow numpy call).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import numpy as np
import polars as pl

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.demux import Demux
from ackreplay.ingest.invariants import FlowFigures, violations
from ackreplay.ingest.model import SUMMARY_SCHEMA, FlowSummaries, FlowSummary
from ackreplay.ingest.vantage import classify_vantages, run_sums

MSS_SOURCES = {
    tf.MSS_SYN: "syn",
    tf.MSS_SYN_TS: "syn_minus_timestamps",
    tf.MSS_PAYLOAD: "payload_mode",
    tf.MSS_PAYLOAD_TSO: "payload_divisor",
    tf.MSS_DEFAULT: "default",
}
_M64 = 0xFFFFFFFFFFFFFFFF
#: The names of the MSS sources, by their code.
MSS_SOURCE_NAMES = [MSS_SOURCES.get(code, "") for code in range(max(MSS_SOURCES) + 1)]


def format_endpoints(hi: np.ndarray, lo: np.ndarray, port: np.ndarray) -> list[str]:
    """Endpoints (address words as the demultiplexer keeps them) as text: "a.b.c.d:port" for IPv4 (stored
    IPv4-mapped), "[v6]:port" for IPv6. Each distinct IPv4 endpoint is written once, without ``ipaddress``; IPv6
    addresses once each with it."""
    hi, lo, port = (np.asarray(x, np.int64) for x in (hi, lo, port))
    out = np.empty(len(hi), object)
    v4 = (hi == 0) & ((lo >> 32) == 0xFFFF) & ((port >> 16) == 0)  # ::ffff:a.b.c.d, a 16-bit port
    if v4.any():
        distinct, at = np.unique(((lo[v4] & 0xFFFFFFFF) << 16) | port[v4], return_inverse=True)
        ip = distinct >> 16
        names = map("{}.{}.{}.{}:{}".format, (ip >> 24).tolist(), ((ip >> 16) & 255).tolist(),
                    ((ip >> 8) & 255).tolist(), (ip & 255).tolist(), (distinct & 0xFFFF).tolist())
        out[v4] = _objects(names)[at]
    others = np.flatnonzero(~v4)
    if len(others):
        addresses: dict[tuple[int, int], str] = {}
        texts = []
        for h, lw, p in zip(hi[others].tolist(), lo[others].tolist(), port[others].tolist(), strict=True):
            name = addresses.get((h, lw))
            if name is None:
                addr = ipaddress.IPv6Address(((h & _M64) << 64) | (lw & _M64))
                name = addresses[h, lw] = (f"{addr.ipv4_mapped}" if addr.ipv4_mapped is not None
                                           else f"[{addr.compressed}]")
            texts.append(f"{name}:{p}")
        out[others] = _objects(texts)
    return out.tolist()


def _objects(items: Iterator[str] | list[str]) -> np.ndarray:
    """Strings as an object array (``np.array`` would make them a fixed-width string array)."""
    items = list(items)
    arr = np.empty(len(items), object)
    arr[:] = items
    return arr


def _runs(column: np.ndarray, lo: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Rows ``lo[f]`` .. ``lo[f] + n[f]`` of ``column`` for each flow ``f`` in turn (a view when they follow
    one another)."""
    if not len(lo):
        return column[:0]
    if np.array_equal(lo[1:], lo[:-1] + n[:-1]):
        return column[lo[0]: lo[-1] + n[-1]]
    before = np.zeros(len(n), np.int64)
    np.cumsum(n[:-1], out=before[1:])
    return column[np.repeat(lo - before, n) + np.arange(int(n.sum()))]



def flow_summaries(base: int, F_i: np.ndarray, F_f: np.ndarray, rtt: np.ndarray, seg_t: np.ndarray,
                   seg_kind: np.ndarray, demux: Demux) -> FlowSummaries:
    """The summaries of flows ``base``, ``base + 1``, … from their ``F_i``/``F_f`` rows and their group's ACK
    RTT column (``rtt``, NaN = no sample) and segment time and kind columns, which ``F_i``'s ACK and segment
    row offsets index."""
    F = F_i
    n = len(F)
    n_acks, n_segs = F[:, tf.FI_NACKS], F[:, tf.FI_NSEGS]
    conn = F[:, tf.FI_CONN]
    key = demux.slot_key[demux.conn_slot[conn]]
    swap = ((demux.conn_src_side[conn] != 0) != (F[:, tf.FI_DIR] == 1))[:, None]  # direction 0 is key[:, 3:]
    src, dst = np.where(swap, key[:, 3:], key[:, :3]), np.where(swap, key[:, :3], key[:, 3:])
    ends = np.concatenate([src, dst])
    endpoints = format_endpoints(ends[:, 0], ends[:, 1], ends[:, 2])

    new = _runs(seg_kind, F[:, tf.FI_SEG_LO], n_segs) == tf.SEG_NEW
    verdicts, evidence, positions, capture_positions = classify_vantages(
        F[:, tf.FI_SENDER_CLIENT] != 0, F[:, tf.FI_SYN], F[:, tf.FI_SYNACK], F[:, tf.FI_HSACK],
        _runs(rtt, F[:, tf.FI_ACK_LO], n_acks), n_acks,
        _runs(seg_t, F[:, tf.FI_SEG_LO], n_segs)[new], run_sums(new, n_segs), conn)

    start = F[:, tf.FI_FIRST_PKT] / 1e9
    end = F[:, tf.FI_LAST_PKT] / 1e9
    duration = end - start
    acked = np.where(n_acks != 0, F[:, tf.FI_BYTES_ACKED], F[:, tf.FI_BYTES_SENT])
    delivering = (n_acks != 0) & (F[:, tf.FI_LAST_ACK] > F[:, tf.FI_FIRST_DATA])
    span = np.zeros(n)
    span[delivering] = (F[delivering, tf.FI_LAST_ACK] - F[delivering, tf.FI_FIRST_DATA]) / 1e9
    goodput, delivery = np.zeros(n), np.zeros(n)
    np.divide(8.0 * acked, duration, out=goodput, where=end > start)
    np.divide(8.0 * acked, span, out=delivery, where=span > 0)

    def optional(values: np.ndarray) -> pl.Series:  # NaN = no value: null
        return pl.Series(values, dtype=pl.Float64, nan_to_null=True)

    made: dict[str, Any] = {
        "flow_id": np.arange(base, base + n, dtype=np.int64), "connection": conn,
        "sender": endpoints[:n], "receiver": endpoints[n:],
        "start_t": start, "end_t": end, "duration_s": duration,
        "packets": F[:, tf.FI_NPKTS], "data_segments": n_segs, "bytes": acked,
        "bytes_sent": F[:, tf.FI_BYTES_SENT], "goodput_bps": goodput, "delivery_rate_bps": delivery,
        "mss": F[:, tf.FI_MSS],
        "mss_source": pl.Series(MSS_SOURCE_NAMES, dtype=pl.String).gather(F[:, tf.FI_MSS_SRC]),
        "rttmin_s": optional(F_f[:, tf.FF_RTTMIN]), "srtt_s": optional(F_f[:, tf.FF_SRTT]),
        "handshake_rtt_s": optional(F_f[:, tf.FF_RTT_HS]),
        "acks": n_acks, "dupacks": F[:, tf.FI_NDUP], "retransmissions": F[:, tf.FI_NRETX],
        "spurious_retransmissions": F[:, tf.FI_NSPUR], "reordered_segments": np.zeros(n, np.int64),
        "loss_events": F[:, tf.FI_NEPS], "fast_retransmit_events": F[:, tf.FI_NFR],
        "timeout_events": F[:, tf.FI_NTO], "keepalives": F[:, tf.FI_NKEEP], "zero_window_probes": F[:, tf.FI_NZWP],
        "dsacks": F[:, tf.FI_NDSACK], "sack": F[:, tf.FI_SACK] != 0, "timestamps": F[:, tf.FI_TS] != 0,
        "window_scaling": F[:, tf.FI_WS] != 0, "syn_seen": F[:, tf.FI_SYN] != tf.NOT_SEEN,
        "options_truncated_packets": F[:, tf.FI_OPT_TRUNC],
        "vantage": verdicts, "vantage_evidence": evidence, "vantage_position": positions,
        "capture_position": capture_positions,
        "invalid": violations(FlowFigures.of(F, acked, duration, goodput)),
    }
    for f in fields(FlowSummary):  # the reconstruction's fields, as a flow not rebuilt has them
        if f.name not in made:
            default: Any = f.default
            made[f.name] = pl.repeat(default, n, dtype=SUMMARY_SCHEMA[f.name], eager=True)
    return FlowSummaries.from_columns(made)

