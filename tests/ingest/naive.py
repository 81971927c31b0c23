"""One-at-a-time versions of ingest's batched functions — a flow, an endpoint, a record at a time — that the
tests check the batched ones against (and use where one value is all a test needs)."""

from __future__ import annotations

import numpy as np

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.columnize import check_linktypes
from ackreplay.ingest.decode import C_INDEX, C_TS, NCOL, decode_one
from ackreplay.ingest.flow_summary import format_endpoints
from ackreplay.ingest.records import RecordBatch
from ackreplay.ingest.vantage import classify_vantages

_M64 = 0xFFFFFFFFFFFFFFFF


def infer_mss(lens: np.ndarray) -> tuple[int, int]:
    """(MSS, ``tf.MSS_*`` source) of a flow's payload sizes, counted as they are (every size its own, above
    65535 too): ``tf.mss_from_counts`` of them; no payload at all gives the RFC 1122 default of 536."""
    sizes = np.asarray(lens, np.int64)
    if not len(sizes):
        return 536, tf.MSS_DEFAULT
    uniq, cnt = np.unique(sizes, return_counts=True)
    return tf.mss_from_counts(uniq, cnt, len(uniq), len(sizes))


def classify_vantage(
    *, sender_is_client: bool, syn_ns: int, synack_ns: int, hsack_ns: int,
    rtt_samples: np.ndarray, data_send_ns: np.ndarray,
) -> tuple[str, str, float | None]:
    """Return (``sender`` | ``receiver`` | ``mid_path`` | ``unknown``, evidence sentence, position): the
    position is the share of the handshake's round trip between the sender and the capture point (None
    without a usable handshake). One flow of ``vantage.classify_vantages``."""
    rtt = np.asarray(rtt_samples, np.float64)
    data = np.asarray(data_send_ns, np.int64)
    verdicts, evidence, positions, _ = classify_vantages(
        np.array([sender_is_client], bool), np.array([syn_ns], np.int64), np.array([synack_ns], np.int64),
        np.array([hsack_ns], np.int64), rtt, np.array([len(rtt)], np.int64), data, np.array([len(data)], np.int64))
    return verdicts[0], evidence[0], positions[0]


def format_endpoint(hi: int, lo: int, port: int) -> str:
    """"a.b.c.d:port" for IPv4 (stored IPv4-mapped), "[v6]:port" for IPv6: one endpoint of
    ``flow_summary.format_endpoints``."""
    words = np.array([hi & _M64, lo & _M64], np.uint64).view(np.int64)
    return format_endpoints(words[:1], words[1:], np.array([port], np.int64))[0]


def decode_batch(batch: RecordBatch, first_index: int, reasons: np.ndarray) -> tuple[np.ndarray, int]:
    """Decode one batch of records (``first_index`` records of the capture before it) into the full decoded matrix
    (``decode.COLUMNS``), a record at a time with ``decode.decode_one`` — the decoder the fast path inlines; the
    other records counted in ``reasons``. Returns the matrix and its rows in use."""
    check_linktypes(batch)
    out = np.empty((len(batch), NCOL), np.int64)
    m = 0
    for i in range(len(batch)):
        row = out[m]
        r = decode_one(batch.buf, int(batch.offset[i]), int(batch.caplen[i]), int(batch.origlen[i]),
                       int(batch.linktype[i]), row)
        if r >= 0:
            reasons[r] += 1
            continue
        row[C_INDEX] = first_index + i
        row[C_TS] = batch.ts_ns[i]
        m += 1
    return out, m
