"""The compiled decoder and the dpkt reference give identical per-packet fields on every capture."""

from __future__ import annotations

import numpy as np
import pytest

from ackreplay.ingest.capture import decode_chunks, ingest_capture
from ackreplay.ingest.columnize import BatchDecoder
from ackreplay.ingest.decode import C_TS, COLUMNS, REASONS
from ackreplay.ingest.demux import Demux
from ackreplay.ingest.fastpath import O_MSS, O_NSACK, O_SACK0, O_SACKOK, O_WSCALE, P_HAS_TS, P_OPT_TRUNC
from ackreplay.ingest.packets import PacketStore
from ackreplay.ingest.records import ScanInfo, iter_records
from ackreplay.ingest.source import ByteSource
from tests import pcapgen as g
from tests.conftest import shared_captures
from tests.ingest.naive import decode_batch
from tests.ingest.reference_decoder import reference_decode

C = {name: i for i, name in enumerate(COLUMNS)}  # decoded-matrix column by name


def fast_decode(path):
    reasons = np.zeros(len(REASONS), np.int64)
    parts = []
    first = 0
    with ByteSource(path) as src:
        for batch in iter_records(src, ScanInfo(), chunk_bytes=1 << 20):
            M, m = decode_batch(batch, first, reasons)
            parts.append(M[:m])
            first += len(batch)
    return np.concatenate(parts), {REASONS[i]: int(c) for i, c in enumerate(reasons) if c}


def assert_same_fields(path, decoded, not_kept=()):
    """``decoded`` (matrix, skip reasons) equals the dpkt reference's decoding of ``path``."""
    fast, fast_reasons = decoded
    ref, ref_reasons = reference_decode(path)
    assert fast_reasons == ref_reasons
    assert fast.shape == ref.shape
    # dpkt hands out float seconds (~0.24 µs resolution at today's epoch); everything else is exact
    assert np.abs(fast[:, C_TS] - ref[:, C_TS]).max(initial=0) <= 1000
    others = [i for i, name in enumerate(COLUMNS) if i != C_TS and name not in not_kept]
    mismatch = np.argwhere(fast[:, others] != ref[:, others])
    assert len(mismatch) == 0, [(int(r), COLUMNS[others[c]]) for r, c in mismatch[:5]]
    return len(fast)


def assert_equivalent(path):
    return assert_same_fields(path, fast_decode(path))


@pytest.mark.parametrize("path", shared_captures(), ids=lambda p: p.name)
def test_shared_capture_decodes_identically(path):
    assert assert_equivalent(path) > 0


def fast_columns(path, threads=1, chunk_bytes=1 << 20):
    """The compact columns of the ingest fast path (decode and demultiplex) and its connection tables.
    With 2 threads every batch is decoded as two spans at once (the split the pipeline makes of large ones)."""
    store = PacketStore(None, None)
    demux = Demux()
    reasons = np.zeros(len(REASONS), np.int64)
    decoder = BatchDecoder(demux, store, reasons, threads, split_min_records=2)
    with ByteSource(path) as src:
        decode_chunks(src, ScanInfo(), decoder, chunk_bytes, None)
    decoder.close()
    return store, demux, reasons


def fast_packets(path, threads=1):
    """The compact columns the ingest fast path keeps, in capture order, as the reference
    decoder's columns: endpoints from the connection and direction, options from the side table."""
    store, demux, reasons = fast_columns(path, threads)
    pk, opt = store.columns(), store.opt_table()
    n = len(pk["ts"])
    out = np.zeros((n, len(COLUMNS)), np.int64)
    ends = np.array([[*a, *b] for a, b in (demux.endpoints(c) for c in range(demux.n_conns))], np.int64)
    e = ends[pk["conn"]].reshape(n, 2, 3)
    d = pk["dir"].astype(np.int64)
    src, dst = e[np.arange(n), d], e[np.arange(n), 1 - d]
    for k, name in enumerate(("hi", "lo")):
        out[:, C[f"src_{name}"]] = src[:, k]
        out[:, C[f"dst_{name}"]] = dst[:, k]
    out[:, C["sport"]], out[:, C["dport"]] = src[:, 2], dst[:, 2]
    out[:, C["ts_ns"]] = pk["ts"]
    out[:, C["index"]] = pk["frame"].astype(np.int64) - 1  # the frame number: 1-based, every record counted
    for name in ("seq", "ack", "win", "plen"):
        out[:, C[name]] = pk[name]
    flags = pk["flags"].astype(np.int64)
    out[:, C["flags"]] = flags & 0x1FF
    has_ts = (flags & P_HAS_TS) != 0
    out[:, C["tsval"]] = np.where(has_ts, pk["tsval"].astype(np.int64), -1)
    out[:, C["tsecr"]] = np.where(has_ts, pk["tsecr"].astype(np.int64), -1)
    out[:, C["opt_trunc"]] = (flags & P_OPT_TRUNC) != 0
    k = pk["opt_idx"]
    has_opt = k >= 0
    row = opt[np.where(has_opt, k, 0)]
    out[:, C["mss"]] = np.where(has_opt, row[:, O_MSS], -1)
    out[:, C["wscale"]] = np.where(has_opt, row[:, O_WSCALE], -1)
    out[:, C["sackok"]] = np.where(has_opt, row[:, O_SACKOK], 0)
    out[:, C["nsack"]] = np.where(has_opt, row[:, O_NSACK], 0)
    for j in range(8):
        out[:, C["sack_l0"] + j] = np.where(has_opt, row[:, O_SACK0 + j], 0)
    return out, {REASONS[i]: int(c) for i, c in enumerate(reasons) if c}


def assert_fast_equivalent(path, threads=1):
    """What the analysis reads — the fast path's compact columns, connections and directions — carries every
    field of the dpkt reference decoder, packet by packet — the frame number (the reference's record ``index`` + 1)
    too; ``af`` is not kept."""
    return assert_same_fields(path, fast_packets(path, threads), not_kept=("af",))


@pytest.mark.parametrize("threads", [1, 2], ids=["one_span", "two_spans"])
@pytest.mark.parametrize("path", shared_captures(), ids=lambda p: p.name)
def test_fast_path_columns_equal_the_reference(path, threads):
    assert assert_fast_equivalent(path, threads) > 0


def test_odd_packets_decode_identically(tmp_capture):
    v6s, v6r = bytes(15) + b"\1", bytes(15) + b"\2"
    tcp = g.tcp_header(1, 2, 3, 4, g.ACK, options=g.opt_sack([(5, 6), (7, 8), (9, 10), (11, 12)]))
    frames = [
        g.ether(g.ipv4("1.2.3.4", "5.6.7.8", tcp + b"x" * 10), vlans=[7, 8]),
        g.ether(g.ipv6(v6s, v6r, tcp, ext=[(0, b"\1\4\0\0\0\0"), (60, b"\1\4\0\0\0\0")])),
        g.ether(g.ipv4("1.2.3.4", "5.6.7.8", tcp, total_len=0)),  # length from the wire
        g.ether(g.ipv4("1.2.3.4", "5.6.7.8", g.tcp_header(1, 2, 3, 4, g.ACK, options=g.opt_ts(1, 2))))[:60],
        g.ether(g.ipv4("1.2.3.4", "5.6.7.8", b"\0" * 8, proto=17)),
        g.ether(b"\0" * 30, ethertype=0x0806),
    ]
    # reversed, the first of two spans holds the non-TCP records: the second span's rows and option
    # rows move down to close the gap they leave
    for order in (frames, frames[::-1]):
        recs = [g.Rec(1_700_000_000_000_000_000 + i * 1000, f) for i, f in enumerate(order)]
        for path in (tmp_capture(g.pcap(recs)), tmp_capture(g.pcapng(recs), "x.pcapng")):
            assert assert_equivalent(path) == 4
            assert assert_fast_equivalent(path) == 4
            assert assert_fast_equivalent(path, threads=2) == 4


def test_thousands_of_connections_grow_the_tables_mid_batch(tmp_capture):
    """3000 connections in one batch (the tables start at 1024), half of them reused with a new ISN,
    non-TCP records between them: both decode paths give the reference's fields, connection by connection."""
    recs = []
    t = 1_700_000_000_000_000_000
    for rnd, isn in enumerate((1000, 900_000)):  # the second round reuses every port pair
        for k in range(3000 if rnd == 0 else 1500):
            a, b = f"10.{k >> 8}.{k & 255}.1", "10.200.0.1"
            sport = 20_000 + k
            for frame in (
                g.ipv4(a, b, g.tcp_header(sport, 80, isn, 0, g.SYN, options=g.opt_mss(1460))),
                g.ipv4(b, a, g.tcp_header(80, sport, 5, isn + 1, g.SYN | g.ACK)),
                g.ipv4(a, b, g.tcp_header(sport, 80, isn + 1, 6, g.ACK | g.PSH) + b"x" * 100),
                g.ipv4(b, a, g.tcp_header(80, sport, 6, isn + 101, g.ACK, options=g.opt_sack([(1, 2)]))),
            ):
                recs.append(g.Rec(t, g.ether(frame)))
                t += 1000
            if k % 7 == 0:
                recs.append(g.Rec(t, g.ether(g.ipv4(a, b, b"\0" * 8, proto=17))))
    path = tmp_capture(g.pcap(recs))
    for threads in (1, 2):
        assert assert_fast_equivalent(path, threads) == 4 * 4500
        _, demux, _ = fast_columns(path, threads)
        assert demux.n_conns == 4500
        assert demux.stats()[:, 0].tolist() == [4] * 4500
    c = ingest_capture(path)
    assert (c.stats.connections, len(c.flows), len(c.segments), len(c.acks)) == (4500, 4500, 4500, 4500)
