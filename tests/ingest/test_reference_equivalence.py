"""The compiled decoder and the dpkt reference give identical per-packet fields on every capture."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.decode import C_TS, COLUMNS, REASONS
from ingest.pipeline import decode_batch
from ingest.records import ScanInfo, iter_records
from ingest.reference import reference_decode
from ingest.source import ByteSource
from tests import pcapgen as g
from tests.conftest import shared_captures


def fast_decode(path):
    reasons = np.zeros(len(REASONS), np.int64)
    parts = []
    with ByteSource(path) as src:
        for batch in iter_records(src, ScanInfo(), chunk_bytes=1 << 20):
            M, m = decode_batch(batch, reasons)
            parts.append(M[:m])
    return np.concatenate(parts), {REASONS[i]: int(c) for i, c in enumerate(reasons) if c}


def assert_equivalent(path):
    fast, fast_reasons = fast_decode(path)
    ref, ref_reasons = reference_decode(path)
    assert fast_reasons == ref_reasons
    assert fast.shape == ref.shape
    # dpkt hands out float seconds (~0.24 µs resolution at today's epoch); everything else is exact
    assert np.abs(fast[:, C_TS] - ref[:, C_TS]).max(initial=0) <= 1000
    others = [i for i in range(len(COLUMNS)) if i != C_TS]
    mismatch = np.argwhere(fast[:, others] != ref[:, others])
    assert len(mismatch) == 0, [(int(r), COLUMNS[others[c]]) for r, c in mismatch[:5]]
    return len(fast)


@pytest.mark.parametrize("path", shared_captures(), ids=lambda p: p.name)
def test_shared_capture_decodes_identically(path):
    assert assert_equivalent(path) > 0


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
    recs = [g.Rec(1_700_000_000_000_000_000 + i * 1000, f) for i, f in enumerate(frames)]
    assert assert_equivalent(tmp_capture(g.pcap(recs))) == 4
    assert assert_equivalent(tmp_capture(g.pcapng(recs), "x.pcapng")) == 4
