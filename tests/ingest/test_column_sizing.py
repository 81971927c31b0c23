"""The packet columns are sized by the TCP packets decoded, not by the records read.

Measured structurally — the rows the :class:`PacketStore` holds room for after decoding — not by time or
RSS: a capture of many records that are not TCP packets keeps room for a batch's records (doubled at most
once: a later batch may hold a few more records than the first), a capture of TCP
packets is reserved once from its first batch (no doubling), and TCP packets arriving after a long
non-TCP lead are decoded exactly as in one batch.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from polars.testing import assert_frame_equal

from ackreplay.ingest import ingest_capture
from ackreplay.ingest.budget import DEFAULT_MEMORY_BUDGET
from ackreplay.ingest.capture import BYTES_PER_PACKET, decode_chunks
from ackreplay.ingest.columnize import BatchDecoder
from ackreplay.ingest.decode import REASONS
from ackreplay.ingest.demux import Demux
from ackreplay.ingest.packets import PacketStore
from ackreplay.ingest.records import ScanInfo
from ackreplay.ingest.source import ByteSource
from tests import pcapgen as g

CHUNK = 256 << 10  # bytes a batch: 16 384 empty records (16-byte headers), decoded as two spans
RECORD_HEADER = 16
ROW_LIMITS = [None, DEFAULT_MEMORY_BUDGET // BYTES_PER_PACKET]


def decoded_store(path: Path, row_limit: int | None) -> PacketStore:
    """The packet store after decoding every batch of ``path`` (``CHUNK`` bytes a batch, two threads)."""
    store = PacketStore(row_limit, None)
    decoder = BatchDecoder(Demux(), store, np.zeros(len(REASONS), np.int64), threads=2)
    try:
        with ByteSource(path) as src:
            decode_chunks(src, ScanInfo(), decoder, CHUNK, None)
    finally:
        decoder.close()
    return store


def udp_frame(k: int) -> bytes:
    udp = struct.pack(">HHHH", 5353, 5353, 8 + 32, 0) + bytes([k & 0xFF]) * 32
    return g.ether(g.ipv4("10.0.9.1", "10.0.9.2", udp, proto=17))


def bulk_conversation(segments: int, t0_ms: float = 0.0) -> g.Conv:
    conv = g.Conv()
    conv.handshake(t0_ms, 20.0)
    for k in range(segments):
        conv.send(t0_ms + 30 + k * 0.1, k * 1000, 1000)
        if k % 2:
            conv.ack(t0_ms + 50 + k * 0.1, (k + 1) * 1000)
    return conv


@pytest.mark.parametrize("row_limit", ROW_LIMITS, ids=["unbounded", "default-budget"])
def test_empty_records_keep_one_batch_of_rows(tmp_path: Path, row_limit: int | None) -> None:
    """16 MiB of zero bytes after the header: 1 M empty records, no TCP packet. Sized by the records'
    density the store held room (populated) for 1.1 M rows; it keeps room for two batches' records."""
    path = tmp_path / "zeros.pcap"
    path.write_bytes(g.pcap([]) + bytes(16 << 20))
    store = decoded_store(path, row_limit)
    try:
        assert store.n == 0
        assert len(store.cols[0]) <= 2 * (CHUNK // RECORD_HEADER)
    finally:
        store.close()


@pytest.mark.parametrize("row_limit", ROW_LIMITS, ids=["unbounded", "default-budget"])
def test_udp_lead_then_tcp_rows_follow_tcp_packets(tmp_path: Path, row_limit: int | None) -> None:
    """60 000 UDP datagrams, then one TCP conversation: the columns grow with the TCP packets from one
    batch's room, and the flow is decoded as when the whole capture is one batch."""
    conv = bulk_conversation(3000, t0_ms=1000.0)
    udp = [g.Rec(1_700_000_000_000_000_000 + k * 10_000, udp_frame(k)) for k in range(60_000)]
    path = tmp_path / "udp_then_tcp.pcap"
    path.write_bytes(g.pcap(udp + conv.records))
    store = decoded_store(path, row_limit)
    try:
        tcp = len(conv.records)
        assert store.n == tcp
        assert len(store.cols[0]) <= max(2 * (CHUNK // RECORD_HEADER), 2 * tcp)
    finally:
        store.close()
    small = ingest_capture(path, chunk_bytes=CHUNK, memory_budget=None)
    whole = ingest_capture(path, chunk_bytes=64 << 20, memory_budget=None)
    assert small.stats.tcp_packets == whole.stats.tcp_packets == tcp
    assert [f.to_dict() for f in small.flows] == [f.to_dict() for f in whole.flows]
    assert_frame_equal(small.acks, whole.acks)
    assert_frame_equal(small.segments, whole.segments)


def test_tcp_capture_is_reserved_once_from_its_first_batch(tmp_path: Path) -> None:
    """A capture of TCP packets only: the first batch's density sizes the columns for the whole capture
    (within its 5 % margin and 1024 rows), so they are not grown by doubling while decoding."""
    conv = bulk_conversation(6000)
    path = tmp_path / "bulk.pcap"
    path.write_bytes(conv.pcap())
    assert path.stat().st_size > 8 * CHUNK
    store = decoded_store(path, DEFAULT_MEMORY_BUDGET // BYTES_PER_PACKET)
    try:
        tcp = len(conv.records)
        assert store.n == tcp
        assert tcp <= len(store.cols[0]) <= 1.1 * tcp + 1024
    finally:
        store.close()
