"""Reference decoder built on dpkt: the slow, independent implementation the fast path is tested
(and benchmarked: ``bench.ingest``) against, packet by packet.

It produces the same matrix as ``tests.ingest.naive.decode_batch`` (columns ``decode.COLUMNS``) and
the same skip-reason counts, using dpkt's capture readers (``dpkt.pcap.Reader``,
``dpkt.pcapng.Reader``) and its protocol classes (Ethernet with VLAN tags, SLL, SLL2, IP, IP6 with
its extension-header classes, TCP and ``tcp.parse_opts``). dpkt's pcapng reader supports a single
interface, so multi-interface pcapng files are outside what this reference can read.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import dpkt
import numpy as np

from ackreplay.ingest.decode import C_ACK as C_ACKNO
from ackreplay.ingest.decode import (
    C_AF,
    C_DPORT,
    C_DST_HI,
    C_DST_LO,
    C_FLAGS,
    C_INDEX,
    C_MSS,
    C_NSACK,
    C_PLEN,
    C_SACK0,
    C_SACKOK,
    C_SEQ,
    C_SPORT,
    C_SRC_HI,
    C_SRC_LO,
    C_TRUNC,
    C_TS,
    C_TSECR,
    C_TSVAL,
    C_WIN,
    C_WSCALE,
    NCOL,
    R_FRAGMENT,
    R_MALFORMED,
    R_NON_IP,
    R_NON_TCP,
    R_TRUNCATED,
    R_UNSUPPORTED,
    REASONS,
)
from ackreplay.ingest.source import ByteSource

_EXT = {0, 43, 60, 44, 51}


class _Skip(Exception):
    def __init__(self, reason: int) -> None:
        self.reason = reason


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _addr6(raw: bytes) -> tuple[int, int]:
    hi, lo = struct.unpack(">QQ", raw)
    return _signed64(hi), _signed64(lo)


def _link(linktype: int, buf: bytes) -> tuple[int, bytes]:
    """(IP version, bytes from the IP header on)."""
    if linktype == 1:
        try:
            eth = dpkt.ethernet.Ethernet(buf)
        except (dpkt.NeedData, dpkt.UnpackError) as exc:
            raise _Skip(R_TRUNCATED) from exc
        tags = getattr(eth, "vlan_tags", None) or []
        hdr = 14 + 4 * len(tags)
        etype = tags[-1].type if tags else eth.type  # with tags, the payload type is in the last tag
        if etype == 0x8864:  # PPPoE session
            return _pppoe(buf[hdr:])
        if etype not in (dpkt.ethernet.ETH_TYPE_IP, dpkt.ethernet.ETH_TYPE_IP6):
            raise _Skip(R_NON_IP)
        return (4 if etype == dpkt.ethernet.ETH_TYPE_IP else 6), buf[hdr:]
    if linktype == 113:
        if len(buf) < 16:
            raise _Skip(R_TRUNCATED)
        sll = dpkt.sll.SLL(buf)
        return _by_ethertype(sll.ethtype, buf[16:])
    if linktype == 276:
        if len(buf) < 20:
            raise _Skip(R_TRUNCATED)
        sll2 = dpkt.sll2.SLL2(buf)
        return _by_ethertype(sll2.ethtype, buf[20:])
    if linktype in (0, 108):
        if len(buf) < 4:
            raise _Skip(R_TRUNCATED)
        fam = struct.unpack(">I" if linktype == 108 else "<I", buf[:4])[0]
        if linktype == 0 and fam > 0xFFFF:
            fam = struct.unpack(">I", buf[:4])[0]
        if fam == 2:
            return 4, buf[4:]
        if fam in (10, 24, 28, 30):
            return 6, buf[4:]
        raise _Skip(R_NON_IP)
    if linktype in (12, 14, 101, 228, 229):
        if not buf:
            raise _Skip(R_TRUNCATED)
        v = buf[0] >> 4
        if v in (4, 6):
            return v, buf
        raise _Skip(R_NON_IP)
    if linktype == 51:
        return _pppoe(buf)
    if linktype in (9, 204):
        rest = buf[1:] if linktype == 204 else buf
        if len(rest) < 2:
            raise _Skip(R_TRUNCATED)
        return _ppp(rest[2:] if rest[:2] == b"\xff\x03" else rest)
    if linktype in (50, 104, 205):
        rest = buf[1:] if linktype == 205 else buf
        if len(rest) < 4:
            raise _Skip(R_TRUNCATED)
        if linktype == 50 and rest[:2] == b"\xff\x03":
            return _ppp(rest[2:])
        if rest[0] not in (0x0F, 0x8F) or rest[1] != 0:
            raise _Skip(R_MALFORMED)
        return _by_ethertype(struct.unpack(">H", rest[2:4])[0], rest[4:])
    if linktype == 239:
        return _nflog_payload(buf)
    if linktype == 242:
        if len(buf) < 4:
            raise _Skip(R_TRUNCATED)
        return _by_ethertype(struct.unpack(">H", buf[:2])[0], buf[4:])
    raise _Skip(R_UNSUPPORTED)


class _Limited(bytes):
    """An IP packet's bytes with the length the link layer gives it (``limit``): a PPPoE session's."""

    limit: int


def _pppoe(rest: bytes) -> tuple[int, bytes]:
    """A PPPoE session header (ver/type, code, session, length), then PPP: the IP packet, limited to the session's
    length (the frame's padding after it is not payload)."""
    if len(rest) < 8:
        raise _Skip(R_TRUNCATED)
    length = struct.unpack(">H", rest[4:6])[0]
    body = rest[6:]
    ver, ipb = _ppp(body[2:] if body[:2] == b"\xff\x03" else body)
    out = _Limited(ipb)
    out.limit = max(6 + length - (len(rest) - len(ipb)), 0)
    return ver, out


def _ppp(rest: bytes) -> tuple[int, bytes]:
    """PPP: a protocol field of one byte (compressed, odd) or two, then IPv4 (0x21) or IPv6 (0x57)."""
    if not rest:
        raise _Skip(R_TRUNCATED)
    if rest[0] & 1:
        proto, rest = rest[0], rest[1:]
    elif len(rest) < 2:
        raise _Skip(R_TRUNCATED)
    else:
        proto, rest = struct.unpack(">H", rest[:2])[0], rest[2:]
    if proto == 0x21:
        return 4, rest
    if proto == 0x57:
        return 6, rest
    raise _Skip(R_NON_IP)


def _nflog_payload(buf: bytes) -> tuple[int, bytes]:
    """Linux NFLOG: a 4-byte header, then TLVs (length, type: little-endian here) padded to 4 bytes; the
    packet is the NFULA_PAYLOAD (9) TLV's value."""
    at = 4
    while True:
        if len(buf) < at + 4:
            raise _Skip(R_TRUNCATED)
        length, kind = struct.unpack("<HH", buf[at:at + 4])
        if length < 4:
            raise _Skip(R_MALFORMED)
        if kind == 9:
            rest = buf[at + 4:]
            if not rest:
                raise _Skip(R_TRUNCATED)
            if rest[0] >> 4 in (4, 6):
                return rest[0] >> 4, rest
            raise _Skip(R_NON_IP)
        at += (length + 3) & ~3


def _by_ethertype(etype: int, rest: bytes) -> tuple[int, bytes]:
    while etype in (0x8100, 0x88A8, 0x9100):
        if len(rest) < 4:
            raise _Skip(R_TRUNCATED)
        etype = struct.unpack(">H", rest[2:4])[0]
        rest = rest[4:]
    if etype == 0x0800:
        return 4, rest
    if etype == 0x86DD:
        return 6, rest
    if etype == 0x8864:
        return _pppoe(rest)
    raise _Skip(R_NON_IP)


def _ipv4(ipb: bytes, origlen: int, link_len: int, row: list[int]) -> tuple[int, bytes]:
    """An IPv4 header's addresses into ``row``; (TCP length, bytes from the TCP header on)."""
    if len(ipb) < 20:
        raise _Skip(R_TRUNCATED)
    ip = dpkt.ip.IP.__new__(dpkt.ip.IP)
    dpkt.Packet.unpack(ip, ipb[:20])  # header fields only; lengths are ours to check
    if ip.v != 4 or ip.hl < 5:
        raise _Skip(R_MALFORMED)
    if ip.mf or ip.offset:
        raise _Skip(R_FRAGMENT)
    if ip.p != dpkt.ip.IP_PROTO_TCP:
        raise _Skip(R_NON_TCP)
    total = ip.len or origlen - link_len
    if total < ip.hl * 4:
        raise _Skip(R_MALFORMED)
    row[C_AF] = 4
    row[C_SRC_HI], row[C_SRC_LO] = 0, (0xFFFF << 32) | struct.unpack(">I", ip.src)[0]
    row[C_DST_HI], row[C_DST_LO] = 0, (0xFFFF << 32) | struct.unpack(">I", ip.dst)[0]
    return total - ip.hl * 4, ipb[ip.hl * 4 :]


def _ipv6(ipb: bytes, origlen: int, link_len: int, row: list[int]) -> tuple[int, bytes]:
    """An IPv6 header (and its extension headers)'s addresses into ``row``; (TCP length, bytes from the TCP
    header on)."""
    if len(ipb) < 40:
        raise _Skip(R_TRUNCATED)
    ip6 = dpkt.ip6.IP6.__new__(dpkt.ip6.IP6)
    dpkt.Packet.unpack(ip6, ipb[:40])
    if ip6.v != 6:
        raise _Skip(R_MALFORMED)
    plen = ip6.plen or origlen - link_len - 40
    nxt, off = ip6.nxt, 40
    while nxt in _EXT:
        if len(ipb) < off + 8:
            raise _Skip(R_TRUNCATED)
        cls = dpkt.ip6.EXT_HDRS_CLS[nxt]
        hdr: Any = cls(ipb[off:])
        if nxt == 44 and (hdr.frag_off or hdr.m_flag):
            raise _Skip(R_FRAGMENT)
        nxt = hdr.nxt
        off += hdr.length
    if nxt != dpkt.ip.IP_PROTO_TCP:
        raise _Skip(R_NON_TCP)
    l4_len = plen - (off - 40)
    if l4_len < 0:
        raise _Skip(R_MALFORMED)
    row[C_AF] = 6
    row[C_SRC_HI], row[C_SRC_LO] = _addr6(ip6.src)
    row[C_DST_HI], row[C_DST_LO] = _addr6(ip6.dst)
    return l4_len, ipb[off:]


def _tcp_options(opts: bytes, row: list[int]) -> None:
    """The TCP options the decoder keeps (MSS, window scale, SACK-permitted, SACK blocks, timestamps) into
    ``row``, up to the first one the header does not carry whole."""
    row[C_MSS] = row[C_WSCALE] = row[C_TSVAL] = row[C_TSECR] = -1
    expected = {2: 2, 3: 1, 4: 0, 8: 8}
    for opt in dpkt.tcp.parse_opts(opts):
        if opt is None:
            break
        kind, data = opt
        if kind == 0:
            break
        if kind == 1:
            continue
        # parse_opts keeps options the capture cut short; the header must carry the whole option
        if kind in expected and len(data) != expected[kind]:
            break
        if kind == 5 and len(data) < 8:
            break
        if kind == 2:
            row[C_MSS] = struct.unpack(">H", data)[0]
        elif kind == 3:
            row[C_WSCALE] = data[0]
        elif kind == 4:
            row[C_SACKOK] = 1
        elif kind == 5:
            blocks = [struct.unpack(">II", data[i : i + 8]) for i in range(0, len(data) - 7, 8)][:4]
            row[C_NSACK] = len(blocks)
            for i, (left, right) in enumerate(blocks):
                row[C_SACK0 + 2 * i], row[C_SACK0 + 2 * i + 1] = left, right
        elif kind == 8:
            row[C_TSVAL], row[C_TSECR] = struct.unpack(">II", data)


def _decode(linktype: int, buf: bytes, origlen: int) -> list[int]:
    row = [0] * NCOL
    ver, ipb = _link(linktype, buf)
    link_len = len(buf) - len(ipb)
    l4_len, tcpb = (_ipv4 if ver == 4 else _ipv6)(ipb, origlen, link_len, row)
    limit = getattr(ipb, "limit", None)
    ip_hdr = len(ipb) - len(tcpb)
    if limit is not None and limit < ip_hdr + l4_len:
        l4_len = max(limit - ip_hdr, 0)
    if len(tcpb) < 20:
        raise _Skip(R_TRUNCATED)
    try:
        tcp = dpkt.tcp.TCP(tcpb)
    except (dpkt.NeedData, dpkt.UnpackError) as exc:
        if (tcpb[12] >> 4) * 4 < 20:
            raise _Skip(R_MALFORMED) from exc
        tcp = dpkt.tcp.TCP.__new__(dpkt.tcp.TCP)
        dpkt.Packet.unpack(tcp, tcpb[:20])
    doff = tcp.off * 4
    if doff < 20 or l4_len < doff:
        raise _Skip(R_MALFORMED)
    row[C_SPORT], row[C_DPORT] = tcp.sport, tcp.dport
    row[C_SEQ], row[C_ACKNO] = tcp.seq, tcp.ack
    row[C_FLAGS] = tcp.flags | ((tcpb[12] & 1) << 8)
    row[C_WIN] = tcp.win
    on_wire = origlen - link_len - (len(ipb) - len(tcpb))  # the payload is what the frame held on the wire
    row[C_PLEN] = min(l4_len, max(on_wire, doff)) - doff
    row[C_TRUNC] = 1 if len(tcpb) < doff else 0
    _tcp_options(bytes(tcpb[20:doff]), row)
    return row


def reference_decode(path: str | Path) -> tuple[np.ndarray, dict[str, int]]:
    """Decode a capture with dpkt. Returns (matrix of TCP packets, skip-reason counts)."""
    records, linktype = _records_with_wire_len(Path(path))
    rows: list[list[int]] = []
    counts = [0] * len(REASONS)
    for i, (ts_ns, buf, origlen) in enumerate(records):
        try:
            row = _decode(linktype, buf, origlen)
        except _Skip as skip:
            counts[skip.reason] += 1
            continue
        row[C_INDEX] = i  # the record's place in the file, every record counted: its frame number − 1
        row[C_TS] = ts_ns
        rows.append([_signed64(v) if v >= 1 << 63 else v for v in row])
    matrix = np.array(rows, dtype=np.int64).reshape(-1, NCOL)
    return matrix, {REASONS[i]: c for i, c in enumerate(counts) if c}


def _read_all(path: Path) -> bytes:
    """The whole decompressed capture (gzip too, as ingest reads it)."""
    out = io.BytesIO()
    with ByteSource(path) as src:
        while chunk := src.read(1 << 20):
            out.write(chunk)
    return out.getvalue()


def _records_with_wire_len(path: Path) -> tuple[list[tuple[int, bytes, int]], int]:
    """dpkt's readers give (ts, buf); the wire length comes from the header class each reader uses."""
    data = _read_all(path)
    stream = io.BytesIO(data)
    out: list[tuple[int, bytes, int]] = []
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        ng = dpkt.pcapng.Reader(stream)
        linktype = ng.datalink()
        for ts, buf in ng:
            out.append((round(ts * 1e9), bytes(buf), len(buf)))
        # wire lengths: re-read the enhanced packet blocks through dpkt's block class
        wire = _pcapng_wire_lengths(data, ng)
        out = [(t, b, max(w, len(b))) for (t, b, _), w in zip(out, wire, strict=True)]
        return out, linktype
    pc = dpkt.pcap.Reader(stream)
    linktype = pc.datalink()
    hdr_cls = pc._Reader__ph  # the (byte-order specific) record header class
    pos = 24
    for ts, buf in pc:
        ph = hdr_cls(data[pos : pos + 16])
        out.append((round(ts * 1e9), bytes(buf), max(ph.len, len(buf))))
        pos += 16 + ph.caplen
    return out, linktype


def _pcapng_wire_lengths(data: bytes, ng: Any) -> list[int]:
    le = ng._Reader__le
    epb_cls = dpkt.pcapng.EnhancedPacketBlockLE if le else dpkt.pcapng.EnhancedPacketBlock
    fmt = "<II" if le else ">II"
    pos = 0
    out = []
    while pos + 8 <= len(data):
        btype, blen = struct.unpack(fmt, data[pos : pos + 8])
        if blen < 12:
            break
        if btype == dpkt.pcapng.PCAPNG_BT_EPB:
            out.append(epb_cls(data[pos : pos + blen]).pkt_len)
        pos += blen
    return out
