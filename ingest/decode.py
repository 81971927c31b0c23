"""Compiled packet decoder: link layer → IPv4/IPv6 → TCP header fields, one row per TCP packet.

Link types (libpcap's LINKTYPE_ values): Ethernet (1) with any stack of 802.1Q/802.1ad/QinQ tags and
PPPoE sessions, Linux cooked SLL (113) and SLL2 (276), raw IP (12, 14, 101, 228, 229), BSD loopback NULL
(0, host byte order) and LOOP (108), PPP (9) and PPP with direction (204), PPP in HDLC-like framing or
Cisco HDLC (50), PPPoE (51), Cisco HDLC (104) and with direction (205), Linux NFLOG (239: the packet is
the payload TLV), IP over InfiniBand (242). Not decoded (a capture of them is named and refused):
802.11 and radiotap (105, 127: Wi-Fi data is normally encrypted), USB, Bluetooth and the like.
IPv6 extension headers (hop-by-hop, routing, destination options, fragment, AH) are skipped.

Lengths come from the IP header, never from the captured length, so snaplen-truncated packets keep
their true payload size. An IP length field of 0 (TSO/GSO and BIG TCP super-segments seen on the
sending host, IPv6 jumbograms) falls back to the wire length of the record.

Packets that are not TCP are counted by reason (see :data:`REASONS`); nothing here raises.
"""

from __future__ import annotations

import numpy as np

from ackreplay.jitcache.kernel_mode import njit

SUPPORTED_LINKTYPES = frozenset({0, 1, 9, 12, 14, 50, 51, 101, 104, 108, 113, 204, 205, 228, 229, 239, 242, 276})
#: PPP protocol numbers of IPv4 and IPv6 (RFC 1332, RFC 5072).
PPP_IPV4, PPP_IPV6 = 0x0021, 0x0057

# Output columns of the decoded matrix (int64 each; addresses are 64-bit halves, IPv4 mapped
# into ::ffff:a.b.c.d).
COLUMNS = (
    "index", "ts_ns", "af", "src_hi", "src_lo", "dst_hi", "dst_lo", "sport", "dport", "seq", "ack",
    "flags", "win", "plen", "opt_trunc", "mss", "wscale", "sackok", "tsval", "tsecr", "nsack",
    "sack_l0", "sack_r0", "sack_l1", "sack_r1", "sack_l2", "sack_r2", "sack_l3", "sack_r3",
)
NCOL = len(COLUMNS)
(C_INDEX, C_TS, C_AF, C_SRC_HI, C_SRC_LO, C_DST_HI, C_DST_LO, C_SPORT, C_DPORT, C_SEQ, C_ACK, C_FLAGS,
 C_WIN, C_PLEN, C_TRUNC, C_MSS, C_WSCALE, C_SACKOK, C_TSVAL, C_TSECR, C_NSACK, C_SACK0) = range(22)

#: Reasons a record is not decoded as a TCP packet, in the order of the counts array.
REASONS = ("non_ip", "non_tcp", "ip_fragment", "truncated_header", "malformed", "unsupported_link_type")
R_NON_IP, R_NON_TCP, R_FRAGMENT, R_TRUNCATED, R_MALFORMED, R_UNSUPPORTED = range(6)

# TCP flag bits the analysis reads
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10

_IPV4_MAPPED_HI = 0
_IPV4_MAPPED_LO_PREFIX = 0xFFFF << 32


@njit(cache=True, inline="always")
def _be16(b: np.ndarray, p: int) -> int:
    return (np.int64(b[p]) << 8) | np.int64(b[p + 1])


@njit(cache=True, inline="always")
def _be32(b: np.ndarray, p: int) -> int:
    return ((np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16)
            | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3]))


@njit(cache=True, inline="always")
def _be64(b: np.ndarray, p: int) -> int:
    v = np.uint64(0)
    for i in range(8):
        v = (v << np.uint64(8)) | np.uint64(b[p + i])
    return np.int64(v)


@njit(cache=True, inline="always")
def _link_to_ip(b: np.ndarray, p: int, end: int, linktype: int) -> tuple[int, int, int]:
    """Return (offset of the IP header, IP version 4/6, the bytes the link layer says the IP packet has — a PPPoE
    session's length, -1 when it says none) or (-1, reason, -1).

    Untagged Ethernet is decided here, inline; everything else in :func:`_link_to_ip_general`. (Keeping
    the rare link types out of the per-packet loop body made the whole decode about 15 % faster: with
    them inline the compiled loop spilled registers and mispredicted.)
    """
    if linktype == 1 and p + 14 <= end:
        ethertype = _be16(b, p + 12)
        if ethertype == 0x0800:
            return p + 14, 4, -1
        if ethertype == 0x86DD:
            return p + 14, 6, -1
    return _link_to_ip_general(b, p, end, linktype)


@njit(cache=True)
def _link_to_ip_general(b: np.ndarray, p: int, end: int, linktype: int) -> tuple[int, int, int]:
    """Every supported link type, VLAN tags included: (offset of the IP header, version, the IP packet's length by
    the link layer or -1) or (-1, reason, -1)."""
    if linktype == 1 or linktype == 113 or linktype == 276 or linktype == 242:
        # a fixed header with the ethertype at a fixed place: Ethernet, SLL, SLL2, IPoIB (RFC 4391 §6)
        if linktype == 1:
            size, at = 14, 12
        elif linktype == 113:
            size, at = 16, 14
        elif linktype == 276:
            size, at = 20, 0
        else:
            size, at = 4, 0
        if p + size > end:
            return -1, R_TRUNCATED, -1
        return _by_ethertype(b, p + size, end, _be16(b, p + at))
    if linktype == 0 or linktype == 108:
        ip, ver = _loopback(b, p, end, linktype)
        return ip, ver, -1
    if linktype == 12 or linktype == 14 or linktype == 101 or linktype == 228 or linktype == 229:
        ip, ver = _raw_ip(b, p, end)
        return ip, ver, -1
    if linktype == 51:
        return _pppoe(b, p, end)
    if linktype == 9 or linktype == 204:
        if linktype == 204:  # one direction byte first
            p += 1
        if p + 2 > end:
            return -1, R_TRUNCATED, -1
        if b[p] == 0xFF and b[p + 1] == 0x03:  # HDLC-like framing: address, control
            p += 2
        ip, ver = _ppp(b, p, end)
        return ip, ver, -1
    if linktype == 50 or linktype == 104 or linktype == 205:
        return _cisco_hdlc(b, p, end, linktype)
    if linktype == 239:
        ip, ver = _nflog(b, p, end)
        return ip, ver, -1
    return -1, R_UNSUPPORTED, -1


@njit(cache=True)
def _pppoe(b: np.ndarray, p: int, end: int) -> tuple[int, int, int]:
    """A PPPoE session header at ``p`` (ver/type, code, session, length), then PPP (HDLC-like framing allowed): the
    IP packet, and its length by the session's length field — the bytes past it are the frame's padding, which an
    IP header claiming more (pure ACKs with IP length 46 in a 40-byte PPPoE payload) would make 6 bytes of data."""
    if p + 8 > end:
        return -1, R_TRUNCATED, -1
    payload_end = p + 6 + _be16(b, p + 4)
    q = p + 6
    if b[q] == 0xFF and b[q + 1] == 0x03:  # HDLC-like framing: address, control
        q += 2
    ip, ver = _ppp(b, q, end)
    if ip < 0:
        return ip, ver, -1
    return ip, ver, max(payload_end - ip, 0)


@njit(cache=True)
def _by_ethertype(b: np.ndarray, p: int, end: int, ethertype: int) -> tuple[int, int, int]:
    """The payload at ``p`` of an Ethernet-like header whose ethertype is ``ethertype``: VLAN tags (802.1Q 0x8100,
    802.1ad 0x88a8, old QinQ 0x9100) skipped, then IPv4, IPv6 or a PPPoE session (:func:`_pppoe`)."""
    while ethertype == 0x8100 or ethertype == 0x88A8 or ethertype == 0x9100:
        if p + 4 > end:
            return -1, R_TRUNCATED, -1
        ethertype = _be16(b, p + 2)
        p += 4
    if ethertype == 0x0800:
        return p, 4, -1
    if ethertype == 0x86DD:
        return p, 6, -1
    if ethertype == 0x8864:  # PPPoE session
        return _pppoe(b, p, end)
    return -1, R_NON_IP, -1


@njit(cache=True)
def _loopback(b: np.ndarray, p: int, end: int, linktype: int) -> tuple[int, int]:
    """BSD loopback: a 4-byte address family, in the capturing host's byte order (NULL, 0: try both) or in
    network order (LOOP, 108)."""
    if p + 4 > end:
        return -1, R_TRUNCATED
    if linktype == 108:
        fam = _be32(b, p)
    else:
        fam = (np.int64(b[p]) | (np.int64(b[p + 1]) << 8)
               | (np.int64(b[p + 2]) << 16) | (np.int64(b[p + 3]) << 24))
        if fam > 0xFFFF:
            fam = _be32(b, p)
    p += 4
    if fam == 2:
        return p, 4
    if fam == 10 or fam == 24 or fam == 28 or fam == 30:
        return p, 6
    return -1, R_NON_IP


@njit(cache=True)
def _cisco_hdlc(b: np.ndarray, p: int, end: int, linktype: int) -> tuple[int, int, int]:
    """Cisco HDLC (104; 205 with a direction byte first) — address, control, ethertype — or, on link type 50,
    PPP in HDLC-like framing."""
    if linktype == 205:
        p += 1
    if p + 4 > end:
        return -1, R_TRUNCATED, -1
    if linktype == 50 and b[p] == 0xFF and b[p + 1] == 0x03:  # PPP in HDLC-like framing
        ip, ver = _ppp(b, p + 2, end)
        return ip, ver, -1
    if (b[p] != 0x0F and b[p] != 0x8F) or b[p + 1] != 0:
        return -1, R_MALFORMED, -1
    return _by_ethertype(b, p + 4, end, _be16(b, p + 2))


@njit(cache=True)
def _nflog(b: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """Linux NFLOG: family, version, resource id; then TLVs (host byte order, 4-aligned), the packet from its
    network header in the NFULA_PAYLOAD one."""
    if p + 4 > end:
        return -1, R_TRUNCATED
    p += 4
    while True:
        if p + 4 > end:
            return -1, R_TRUNCATED
        tlv_len = np.int64(b[p]) | (np.int64(b[p + 1]) << 8)
        tlv_type = np.int64(b[p + 2]) | (np.int64(b[p + 3]) << 8)
        if tlv_len < 4:
            return -1, R_MALFORMED
        if tlv_type == 9:  # NFULA_PAYLOAD
            return _raw_ip(b, p + 4, end)
        p += (tlv_len + 3) & ~3


@njit(cache=True)
def _raw_ip(b: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """An IP header at ``p`` with nothing before it: its version decides (raw IP link types, NFLOG payload)."""
    if p + 1 > end:
        return -1, R_TRUNCATED
    v = b[p] >> 4
    if v == 4 or v == 6:
        return p, np.int64(v)
    return -1, R_NON_IP


@njit(cache=True)
def _ppp(b: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """The PPP protocol field at ``p`` (one byte when compressed: odd first byte, RFC 1661 §6.5)."""
    if p + 1 > end:
        return -1, R_TRUNCATED
    if b[p] & 1:
        proto = np.int64(b[p])
        p += 1
    else:
        if p + 2 > end:
            return -1, R_TRUNCATED
        proto = _be16(b, p)
        p += 2
    if proto == PPP_IPV4:
        return p, 4
    if proto == PPP_IPV6:
        return p, 6
    return -1, R_NON_IP


@njit(cache=True, inline="always")
def _ipv4(b: np.ndarray, ip: int, wire: int, end: int, row: np.ndarray) -> tuple[int, int]:
    """The IPv4 header at ``ip`` (``wire``: the record's length on the wire from there): its addresses into
    ``row``; (offset of the TCP header, TCP length) or (-1, reason)."""
    if ip + 20 > end:
        return -1, R_TRUNCATED
    if b[ip] >> 4 != 4:
        return -1, R_MALFORMED
    ihl = np.int64(b[ip] & 0x0F) * 4
    if ihl < 20:
        return -1, R_MALFORMED
    total = _be16(b, ip + 2)
    frag = _be16(b, ip + 6)
    if (frag & 0x2000) != 0 or (frag & 0x1FFF) != 0:
        return -1, R_FRAGMENT
    if b[ip + 9] != 6:
        return -1, R_NON_TCP
    if total == 0:  # TSO / BIG TCP: the length is the record's wire length
        total = wire
    if total < ihl:
        return -1, R_MALFORMED
    row[C_AF] = 4
    row[C_SRC_HI] = _IPV4_MAPPED_HI
    row[C_SRC_LO] = _IPV4_MAPPED_LO_PREFIX | _be32(b, ip + 12)
    row[C_DST_HI] = _IPV4_MAPPED_HI
    row[C_DST_LO] = _IPV4_MAPPED_LO_PREFIX | _be32(b, ip + 16)
    return ip + ihl, total - ihl


@njit(cache=True, inline="always")
def _ipv6(b: np.ndarray, ip: int, wire: int, end: int, row: np.ndarray) -> tuple[int, int]:
    """The IPv6 header at ``ip`` (``wire``: the record's length on the wire from there) and its extension
    headers: its addresses into ``row``; (offset of the TCP header, TCP length) or (-1, reason)."""
    if ip + 40 > end:
        return -1, R_TRUNCATED
    if b[ip] >> 4 != 6:
        return -1, R_MALFORMED
    plen6 = _be16(b, ip + 4)
    if plen6 == 0:  # jumbogram / BIG TCP
        plen6 = wire - 40
    nxt = np.int64(b[ip + 6])
    q = ip + 40
    ext = 0
    while nxt == 0 or nxt == 43 or nxt == 60 or nxt == 44 or nxt == 51:
        if q + 8 > end:
            return -1, R_TRUNCATED
        if nxt == 44:
            fo = _be16(b, q + 2)
            if (fo & 0xFFF8) != 0 or (fo & 1) != 0:
                return -1, R_FRAGMENT
            hl = 8
        elif nxt == 51:
            hl = (np.int64(b[q + 1]) + 2) * 4
        else:
            hl = (np.int64(b[q + 1]) + 1) * 8
        nxt = np.int64(b[q])
        q += hl
        ext += hl
    if nxt != 6:
        return -1, R_NON_TCP
    l4_len = plen6 - ext
    if l4_len < 0:
        return -1, R_MALFORMED
    row[C_AF] = 6
    row[C_SRC_HI] = _be64(b, ip + 8)
    row[C_SRC_LO] = _be64(b, ip + 16)
    row[C_DST_HI] = _be64(b, ip + 24)
    row[C_DST_LO] = _be64(b, ip + 32)
    return q, l4_len


@njit(cache=True, inline="always")
def _tcp_options(b: np.ndarray, q: int, opt_end: int, row: np.ndarray) -> None:
    """The TCP options from ``q`` to ``opt_end`` into ``row``: MSS, window scale, SACK-permitted, SACK blocks
    (four at most), timestamps; up to the end-of-options or the first option cut short."""
    if (opt_end - q == 12 and b[q] == 1 and b[q + 1] == 1 and b[q + 2] == 8 and b[q + 3] == 10):
        # the usual layout of a segment with timestamps (NOP, NOP, TS): no option loop
        row[C_TSVAL] = _be32(b, q + 4)
        row[C_TSECR] = _be32(b, q + 8)
        return
    while q < opt_end:
        kind = b[q]
        if kind == 0:
            break
        if kind == 1:
            q += 1
            continue
        if q + 2 > opt_end:
            break
        olen = np.int64(b[q + 1])
        if olen < 2 or q + olen > opt_end:
            break
        if kind == 2 and olen == 4:
            row[C_MSS] = _be16(b, q + 2)
        elif kind == 3 and olen == 3:
            row[C_WSCALE] = b[q + 2]
        elif kind == 4 and olen == 2:
            row[C_SACKOK] = 1
        elif kind == 5 and olen >= 10:
            nb = (olen - 2) // 8
            if nb > 4:
                nb = 4
            row[C_NSACK] = nb
            for i in range(nb):
                row[C_SACK0 + 2 * i] = _be32(b, q + 2 + 8 * i)
                row[C_SACK0 + 2 * i + 1] = _be32(b, q + 6 + 8 * i)
        elif kind == 8 and olen == 10:
            row[C_TSVAL] = _be32(b, q + 2)
            row[C_TSECR] = _be32(b, q + 6)
        q += olen


@njit(cache=True, inline="always")
def _tcp(b: np.ndarray, tcp: int, l4_len: int, on_wire: int, end: int, row: np.ndarray) -> int:
    """The TCP header at ``tcp`` (``l4_len`` bytes with its payload, ``on_wire`` of them in the record's wire
    length) into ``row``; -1, or a reason code. The payload is what the frame held on the wire: bytes an IP length
    claims beyond it (a fuzzed or edited length; a snaplen cut keeps the wire length whole) were never seen."""
    if tcp + 20 > end:
        return R_TRUNCATED
    doff = np.int64(b[tcp + 12] >> 4) * 4
    if doff < 20 or l4_len < doff:
        return R_MALFORMED
    row[C_SPORT] = _be16(b, tcp)
    row[C_DPORT] = _be16(b, tcp + 2)
    row[C_SEQ] = _be32(b, tcp + 4)
    row[C_ACK] = _be32(b, tcp + 8)
    row[C_FLAGS] = np.int64(b[tcp + 13]) | ((np.int64(b[tcp + 12]) & 1) << 8)
    row[C_WIN] = _be16(b, tcp + 14)
    row[C_PLEN] = min(l4_len, max(on_wire, doff)) - doff
    row[C_MSS] = -1
    row[C_WSCALE] = -1
    row[C_SACKOK] = 0
    row[C_TSVAL] = -1
    row[C_TSECR] = -1
    row[C_NSACK] = 0
    for i in range(8):
        row[C_SACK0 + i] = 0
    opt_end = tcp + doff
    row[C_TRUNC] = 1 if opt_end > end else 0
    if opt_end > end:
        opt_end = end
    _tcp_options(b, tcp + 20, opt_end, row)
    return -1


@njit(cache=True, inline="always")
def decode_one(b: np.ndarray, p: int, cap: int, orig: int, linktype: int, row: np.ndarray) -> int:
    """Decode one record into ``row``; return -1 on success or a reason code."""
    end = p + cap
    ip, ver, link_len = _link_to_ip(b, p, end, linktype)
    if ip < 0:
        return ver
    wire = orig - (ip - p)  # the record's length on the wire from the IP header on
    if ver == 4:
        tcp, l4_len = _ipv4(b, ip, wire, end, row)
    else:
        tcp, l4_len = _ipv6(b, ip, wire, end, row)
    if tcp < 0:
        return l4_len
    if 0 <= link_len < tcp - ip + l4_len:  # the link layer's length bounds the IP packet's (PPPoE: padding after)
        l4_len = max(link_len - (tcp - ip), 0)
    return _tcp(b, tcp, l4_len, wire - (tcp - ip), end, row)
