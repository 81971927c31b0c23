"""Every container and link type decodes to the same TCP fields (synthetic captures, built by hand)."""

from __future__ import annotations

import io
import struct

import pytest
from dpkt.pcap import Reader

from ackreplay.ingest import UnsupportedLinkTypeError, ingest_capture
from ackreplay.ingest.decode import COLUMNS, NCOL, REASONS
from ackreplay.ingest.records import ScanInfo, iter_records
from ackreplay.ingest.source import ByteSource
from tests import pcapgen as g
from tests.ingest.naive import decode_batch

V6_S = bytes.fromhex("20010db8000000000000000000000001")
V6_R = bytes.fromhex("20010db8000000000000000000000002")


def pppoe(ppp: bytes, *, length: int | None = None) -> bytes:
    """A PPPoE session header — version/type 1/1, code 0 (session data), session id, the length of ``ppp`` (or
    ``length``) — and ``ppp``."""
    return b"\x11\x00\x12\x34" + struct.pack(">H", len(ppp) if length is None else length) + ppp


def decoded(path):
    import numpy as np

    reasons = np.zeros(len(REASONS), np.int64)
    info = ScanInfo()
    rows = []
    first = 0
    with ByteSource(path) as src:
        for b in iter_records(src, info):
            M, m = decode_batch(b, first, reasons)
            first += len(b)
            rows += [dict(zip(COLUMNS, r.tolist(), strict=True)) for r in M[:m]]
    return rows, {REASONS[i]: int(c) for i, c in enumerate(reasons) if c}, info


def small_ip_packets() -> list[bytes]:
    """Handshake and one data exchange as IPv4 packets (sender 10.0.0.1:40000)."""
    conv = g.Conv()
    conv.handshake(0.0, 10.0, ts=True)
    conv.send(11.0, 0, 1000, opts=g.opt_ts(2, 1))
    conv.ack(21.0, 1000, opts=g.opt_ts(9, 2) + g.opt_sack([(2000, 3000)]))
    return [r.data[14:] for r in conv.records]  # strip Ethernet


def check_same_fields(rows):
    assert len(rows) == 5
    syn = rows[0]
    assert (syn["sport"], syn["dport"], syn["seq"], syn["flags"]) == (40000, 5201, 1000, g.SYN)
    assert (syn["mss"], syn["sackok"], syn["tsval"], syn["tsecr"]) == (1460, 1, 1, 0)
    data = rows[3]
    assert (data["plen"], data["seq"], data["tsval"]) == (1000, 1001, 2)
    ack = rows[4]
    assert (ack["ack"], ack["nsack"], ack["sack_l0"], ack["sack_r0"]) == (2001, 1, 2000, 3000)
    assert ack["src_lo"] & 0xFFFFFFFF == 0x0A000002


@pytest.mark.parametrize("ns", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_pcap_resolutions_and_byte_orders(tmp_capture, ns, big):
    recs = [g.Rec(1_700_000_000_123_456_789 + i * 1000, g.ether(p)) for i, p in enumerate(small_ip_packets())]
    rows, reasons, _ = decoded(tmp_capture(g.pcap(recs, ns=ns, big=big)))
    check_same_fields(rows)
    assert reasons == {}
    # µs files lose the sub-µs digits; ns files keep them
    assert rows[0]["ts_ns"] == (1_700_000_000_123_456_789 if ns else 1_700_000_000_123_456_000)


@pytest.mark.parametrize(
    "linktype,wrap",
    [
        (1, lambda ip: g.ether(ip)),
        (1, lambda ip: g.ether(ip, vlans=[100])),  # 802.1Q
        (1, lambda ip: g.ether(ip, vlans=[100, 200])),  # QinQ: 802.1ad outer + 802.1Q inner
        (113, g.sll),
        (276, g.sll2),
        (101, lambda ip: ip),  # raw IP
        (228, lambda ip: ip),  # raw IPv4
        (0, lambda ip: g.null_loopback(ip)),  # BSD loopback, little-endian host
        (0, lambda ip: g.null_loopback(ip, big_endian=True)),  # ... big-endian host
        (108, lambda ip: g.null_loopback(ip, big_endian=True)),  # OpenBSD LOOP (network order)
        (9, lambda ip: b"\x00\x21" + ip),  # PPP (RFC 1661), no framing
        (9, lambda ip: b"\xff\x03\x00\x21" + ip),  # PPP with HDLC address and control
        (9, lambda ip: b"\x21" + ip),  # PPP, compressed protocol field
        (204, lambda ip: b"\x01\xff\x03\x00\x21" + ip),  # PPP with a direction byte
        (50, lambda ip: b"\xff\x03\x00\x21" + ip),  # PPP in HDLC-like framing (RFC 1662)
        (50, lambda ip: b"\x0f\x00\x08\x00" + ip),  # ... or Cisco HDLC on the same link type
        (104, lambda ip: b"\x8f\x00\x08\x00" + ip),  # Cisco HDLC
        (205, lambda ip: b"\x00\x0f\x00\x08\x00" + ip),  # Cisco HDLC with a direction byte
        (51, lambda ip: pppoe(b"\x00\x21" + ip)),  # PPPoE (session header, PPP)
        (1, lambda ip: g.ether(pppoe(b"\x00\x21" + ip), ethertype=0x8864)),  # PPPoE on Ethernet
        (239, lambda ip: nflog(ip)),  # Linux NFLOG (iptables -j NFLOG, tcpdump -i nflog)
        (242, lambda ip: b"\x08\x00\x00\x00" + ip),  # IP over InfiniBand
    ],
)
def test_link_types(tmp_capture, linktype, wrap):
    """The compiled decoder reads each link type, and the pure-Python reference agrees field by field."""
    from tests.ingest.test_reference_equivalence import assert_equivalent

    recs = [g.Rec(1_700_000_000_000_000_000 + i, wrap(p)) for i, p in enumerate(small_ip_packets())]
    path = tmp_capture(g.pcap(recs, linktype=linktype))
    rows, reasons, _ = decoded(path)
    assert reasons == {}
    check_same_fields(rows)
    assert assert_equivalent(path) == 5



@pytest.mark.parametrize("linktype", [51, 1])
def test_the_pppoe_session_length_bounds_the_ip_packet(tmp_capture, linktype):
    """Pure ACKs whose IP header claims 6 bytes more than the PPPoE session carries (a Zeek capture: IP length 46 in a
    40-byte payload) are not 6-byte data segments; the session's length decides, as for tshark."""
    packets = small_ip_packets()
    ack = bytearray(packets[2])  # the handshake's ACK: 40 bytes, its IP header made to claim 46
    ack[2:4] = struct.pack(">H", 46)
    ppps = [b"\x00\x21" + p for p in packets]
    ppps[2] = b"\x00\x21" + bytes(ack) + b"\0" * 6  # 6 bytes past the session's length: the frame's padding
    lengths = [len(x) for x in ppps]
    lengths[2] -= 6
    sessions = [pppoe(x, length=n) for x, n in zip(ppps, lengths, strict=True)]
    frames = sessions if linktype == 51 else [g.ether(x, ethertype=0x8864) for x in sessions]
    recs = [g.Rec(1_700_000_000_000_000_000 + i, f) for i, f in enumerate(frames)]
    path = tmp_capture(g.pcap(recs, linktype=linktype))
    rows, reasons, _ = decoded(path)
    assert reasons == {} and [r["plen"] for r in rows] == [0, 0, 0, 1000, 0]
    from tests.ingest.test_reference_equivalence import assert_equivalent

    assert assert_equivalent(path) == 5

def test_the_wire_length_bounds_the_ip_length(tmp_capture):
    """A data segment whose IP header claims more than the frame held on the wire (a fuzzed length: the extra
    public set's modbus_fuzz-72 claims 35 084 bytes in 52) carries only the bytes on the wire; a snaplen cut (the
    record's wire length whole) keeps the IP length's payload."""
    packets = small_ip_packets()
    data = packets[3]  # the 1000-byte segment
    fuzzed = bytearray(data[:-900])  # 100 of its 1000 bytes on the wire, the IP length still claiming 1000
    recs = [g.Rec(1_700_000_000_000_000_000 + i, g.ether(p)) for i, p in enumerate(packets)]
    recs[3] = g.Rec(recs[3].ts_ns, g.ether(bytes(fuzzed)))
    recs.append(g.Rec(recs[4].ts_ns + 1, g.ether(data[:-900]), origlen=14 + len(data)))  # cut by the snaplen
    path = tmp_capture(g.pcap(recs))
    rows, reasons, _ = decoded(path)
    assert reasons == {} and [r["plen"] for r in rows] == [0, 0, 0, 100, 0, 1000]
    from tests.ingest.test_reference_equivalence import assert_equivalent

    assert assert_equivalent(path) == 6


def nflog(ip: bytes) -> bytes:
    """An NFLOG record: family AF_INET, version 0, group 5; a prefix TLV (type 10, 7 bytes, padded to 8)
    and a hardware-protocol TLV before the payload TLV (type 9); lengths and types little-endian."""
    import struct

    prefix = struct.pack("<HH", 4 + 7, 10) + b"drop-\x00\x00" + b"\x00"
    proto = struct.pack("<HH", 4 + 4, 1) + b"\x08\x00\x03\x00"
    payload = struct.pack("<HH", 4 + len(ip), 9) + ip
    return b"\x02\x00\x00\x05" + prefix + proto + payload


def test_ppp_without_ip_and_malformed_cisco_hdlc_are_counted_not_fatal(tmp_capture):
    ip = small_ip_packets()[0]
    recs = [g.Rec(1, b"\xc0\x21" + b"\x00" * 20),  # PPP LCP: not IP
            g.Rec(2, b"\x00\x21" + ip)]
    rows, reasons, _ = decoded(tmp_capture(g.pcap(recs, linktype=9)))
    assert reasons == {"non_ip": 1} and len(rows) == 1
    rows, reasons, _ = decoded(tmp_capture(g.pcap([g.Rec(1, b"\x42\x00\x08\x00" + ip)], linktype=104)))
    assert reasons == {"malformed": 1} and rows == []


def test_ipv6_with_extension_headers(tmp_capture):
    tcp = g.tcp_header(40000, 5201, 7, 9, g.ACK, options=g.opt_ts(5, 6)) + b"x" * 100
    ext = [(0, b"\x01\x04\0\0\0\0"), (43, b"\0\0\0\0\0\0"), (60, b"\x01\x04\0\0\0\0"), (44, b"\0\0\0\0\0\x01")]
    pkt = g.ipv6(V6_S, V6_R, tcp, ext=ext)
    frag = g.ipv6(V6_S, V6_R, tcp, ext=[(44, b"\x00\x09\0\0\0\x01")])  # offset 1: a later fragment
    recs = [g.Rec(1, g.ether(pkt)), g.Rec(2, g.ether(frag))]
    rows, reasons, _ = decoded(tmp_capture(g.pcap(recs)))
    assert reasons == {"ip_fragment": 1}
    (row,) = rows
    assert (row["af"], row["plen"], row["tsval"], row["seq"]) == (6, 100, 5, 7)
    assert row["src_hi"] == 0x20010DB800000000 and row["src_lo"] == 1


def test_non_tcp_and_fragments_are_counted_not_fatal(tmp_capture):
    tcp = g.tcp_header(1, 2, 0, 0, g.ACK)
    recs = [
        g.Rec(1, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", b"\0" * 8, proto=17))),  # UDP
        g.Rec(2, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", tcp, frag=0x2000))),  # first fragment (MF)
        g.Rec(3, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", tcp, frag=0x0010))),  # offset fragment
        g.Rec(4, g.ether(b"\0" * 28, ethertype=0x0806)),  # ARP
        g.Rec(5, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", tcp))[:40]),  # TCP header cut by snaplen
        g.Rec(6, g.ether(g.ipv4("1.1.1.1", "2.2.2.2", tcp))),
    ]
    rows, reasons, _ = decoded(tmp_capture(g.pcap(recs)))
    assert reasons == {"non_tcp": 1, "ip_fragment": 2, "non_ip": 1, "truncated_header": 1}
    assert len(rows) == 1


def test_pcapng_interfaces_each_with_link_type_and_resolution(tmp_capture):
    ips = small_ip_packets()
    ifaces = [g.Iface(1, None), g.Iface(113, 9), g.Iface(101, 0x80 | 20)]  # µs, ns, 2^-20 s
    wraps = [g.ether, g.sll, lambda ip: ip]
    base = 1_700_000_000_000_000_000
    recs = [g.Rec(base + i * 1_000_000, wraps[i % 3](p), iface=i % 3) for i, p in enumerate(ips)]
    unknown = [(0x0BAD, b"\xde\xad\xbe\xef" * 3)]  # unknown block type: skipped, as pcapng requires
    for big in (False, True):
        rows, reasons, info = decoded(tmp_capture(g.pcapng(recs, ifaces, big=big, extra_blocks=unknown)))
        assert reasons == {}
        check_same_fields(rows)
        assert info.linktypes == {1, 113, 101} and info.skipped_blocks == 1
        assert rows[1]["ts_ns"] == base + 1_000_000  # ns interface: exact
        assert abs(rows[2]["ts_ns"] - (base + 2_000_000)) < 1000  # 2^-20 s units: within a µs


def test_gzip_is_detected_by_content(tmp_capture):
    recs = [g.Rec(i, g.ether(p)) for i, p in enumerate(small_ip_packets())]
    rows, _, info = decoded(tmp_capture(g.gz(g.pcap(recs)), name="no-gz-suffix.pcap"))
    check_same_fields(rows)
    assert info.gzipped
    rows, _, info = decoded(tmp_capture(g.gz(g.pcapng(recs)), name="x.pcapng.gz"))
    check_same_fields(rows)


def test_unsupported_link_type_is_named(tmp_capture):
    with pytest.raises(UnsupportedLinkTypeError, match="unsupported link type 147"):
        ingest_capture(tmp_capture(g.pcap([g.Rec(1, b"\0" * 40)], linktype=147)))


def test_chunk_boundaries_do_not_change_results(tmp_capture):
    conv = g.Conv()
    conv.handshake(0, 10)
    for i in range(300):
        conv.send(11 + i, i * 1000, 1000)
        conv.ack(21 + i, (i + 1) * 1000)
    path = tmp_capture(conv.pcap())
    whole = ingest_capture(path)
    for chunk in (64, 1000, 4099):
        part = ingest_capture(path, chunk_bytes=chunk)
        assert part.acks.equals(whole.acks) and part.segments.equals(whole.segments)
    assert len(COLUMNS) == NCOL


def _records(batch) -> list[bytes]:
    buf = bytes(batch.buf)
    return [buf[o: o + c] for o, c in zip(batch.offset.tolist(), batch.caplen.tolist(), strict=True)]


@pytest.mark.parametrize("chunk", [64, 100, 1000, 4099])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_read_buffer_ring_keeps_the_last_batches_intact(tmp_capture, chunk, fmt):
    """With a ring of buffers (the read-ahead thread's), a batch's bytes stay intact until two later
    batches have been handed out, however many refills a batch takes (records larger than the chunk)."""
    conv = g.Conv()
    conv.handshake(0, 10)
    for i in range(200):
        conv.send(11 + i, i * 1000, 1000 + 7 * (i % 5))
        conv.ack(21 + i, (i + 1) * 1000)
    data = conv.pcap()
    if fmt == "pcapng":

        data = g.pcapng([g.Rec(int(ts * 1e9), bytes(b)) for ts, b in Reader(io.BytesIO(data))])  # same records
    path = tmp_capture(data, f"x.{fmt}")
    with ByteSource(path) as src:
        expected = [r for b in iter_records(src, ScanInfo(), chunk_bytes=chunk) for r in _records(b)]
    seen: list[bytes] = []
    held: list = []
    with ByteSource(path) as src:
        for batch in iter_records(src, ScanInfo(), chunk_bytes=chunk, buffers=4):
            held = [*held, (len(seen), batch)][-3:]
            seen += _records(batch)
            for start, b in held:  # this batch and the two before it
                recs = _records(b)
                assert recs == expected[start: start + len(recs)]
    assert seen == expected
