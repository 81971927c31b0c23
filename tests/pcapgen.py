"""Build small captures byte by byte for tests: headers from struct, one comment per field.

Nothing here uses the code under test. ``Conv`` scripts a TCP conversation between a data sender
(10.0.0.1:40000) and a receiver (10.0.0.2:5201) as Ethernet frames.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def opt_mss(v: int) -> bytes:
    return struct.pack(">BBH", 2, 4, v)  # kind 2, len 4, MSS


def opt_ws(v: int) -> bytes:
    return struct.pack(">BBB", 3, 3, v)  # kind 3, len 3, shift


def opt_sackok() -> bytes:
    return b"\x04\x02"  # kind 4, len 2


def opt_ts(val: int, ecr: int) -> bytes:
    return struct.pack(">BBII", 8, 10, val, ecr)  # kind 8, len 10, TSval, TSecr


def opt_sack(blocks: Sequence[tuple[int, int]]) -> bytes:
    body = b"".join(struct.pack(">II", left & 0xFFFFFFFF, right & 0xFFFFFFFF) for left, right in blocks)
    return struct.pack(">BB", 5, 2 + len(body)) + body  # kind 5, len, (left, right)*


def tcp_header(sport: int, dport: int, seq: int, ack: int, flags: int, win: int = 65535,
               options: bytes = b"") -> bytes:
    options += b"\x01" * (-len(options) % 4)  # NOP padding to 32-bit words
    doff = (20 + len(options)) // 4
    return struct.pack(
        ">HHIIBBHHH",
        sport, dport,  # ports
        seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,  # sequence and acknowledgement numbers
        doff << 4,  # data offset (words), reserved
        flags,  # flags
        win,  # window
        0, 0,  # checksum (not verified), urgent pointer
    ) + options


def ipv4(src: str, dst: str, l4: bytes, *, proto: int = 6, total_len: int | None = None,
         frag: int = 0) -> bytes:
    total = 20 + len(l4) if total_len is None else total_len
    return struct.pack(
        ">BBHHHBBH4s4s",
        0x45, 0,  # version 4, IHL 5; DSCP
        total,  # total length (0 = TSO/BIG TCP)
        1, frag,  # identification; flags + fragment offset
        64, proto, 0,  # TTL, protocol, checksum
        bytes(int(x) for x in src.split(".")), bytes(int(x) for x in dst.split(".")),
    ) + l4


def ipv6(src: bytes, dst: bytes, l4: bytes, *, ext: Sequence[tuple[int, bytes]] = (), proto: int = 6,
         payload_len: int | None = None) -> bytes:
    """``ext``: (header type, body) pairs; each body is padded to 8-byte units minus the 2-byte head."""
    chain = b""
    types = [t for t, _ in ext] + [proto]
    for i, (_t, body) in enumerate(ext):
        nxt = types[i + 1]
        if _t == 44:  # fragment header: fixed 8 bytes
            chain += struct.pack(">BB", nxt, 0) + body[:6].ljust(6, b"\0")
        else:
            raw = body + b"\0" * (-(len(body) + 2) % 8)
            chain += struct.pack(">BB", nxt, (len(raw) + 2) // 8 - 1) + raw
    first = types[0]
    plen = len(chain) + len(l4) if payload_len is None else payload_len
    return struct.pack(">IHBB16s16s", 6 << 28, plen, first, 64, src, dst) + chain + l4


def ether(ip: bytes, *, vlans: Sequence[int] = (), ethertype: int | None = None) -> bytes:
    et = ethertype if ethertype is not None else (0x0800 if ip[0] >> 4 == 4 else 0x86DD)
    head = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01"  # dst MAC, src MAC
    tags = b""
    outer = [0x88A8] + [0x8100] * (len(vlans) - 1) if len(vlans) > 1 else [0x8100] * len(vlans)
    for tpid, vid in zip(outer, vlans, strict=True):
        tags += struct.pack(">HH", tpid, vid)  # TPID, TCI (VLAN id)
    return head + tags + struct.pack(">H", et) + ip


def sll(ip: bytes) -> bytes:
    et = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    # packet type, ARPHRD, addr len, addr(8), protocol
    return struct.pack(">HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", et) + ip


def sll2(ip: bytes) -> bytes:
    et = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    # protocol, reserved, ifindex, ARPHRD, packet type, addr len, addr(8)
    return struct.pack(">HHIHBB8s", et, 0, 2, 1, 0, 6, b"\x02\0\0\0\0\x01\0\0") + ip


def null_loopback(ip: bytes, *, big_endian: bool = False, family: int | None = None) -> bytes:
    fam = family if family is not None else (2 if ip[0] >> 4 == 4 else 30)
    return struct.pack(">I" if big_endian else "<I", fam) + ip


@dataclass
class Rec:
    ts_ns: int
    data: bytes
    origlen: int | None = None  # wire length when the record is truncated
    iface: int = 0


def pcap(records: Sequence[Rec], *, linktype: int = 1, ns: bool = False, big: bool = False,
         snaplen: int = 65535) -> bytes:
    o = ">" if big else "<"
    magic = 0xA1B23C4D if ns else 0xA1B2C3D4
    out = [struct.pack(o + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for r in records:
        sec, frac = divmod(r.ts_ns, 1_000_000_000)
        if not ns:
            frac //= 1000
        data = r.data[:snaplen]
        orig = r.origlen if r.origlen is not None else len(r.data)
        out.append(struct.pack(o + "IIII", sec, frac, len(data), orig) + data)
    return b"".join(out)


def _block(o: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(o + "II", btype, n) + body + struct.pack(o + "I", n)


@dataclass
class Iface:
    linktype: int = 1
    tsresol: int | None = None  # the raw if_tsresol byte (6 = µs, 9 = ns, 0x80|k = 2^-k)
    snaplen: int = 0


def pcapng(records: Sequence[Rec], ifaces: Sequence[Iface] = (Iface(),), *, big: bool = False,
           extra_blocks: Sequence[tuple[int, bytes]] = ()) -> bytes:
    o = ">" if big else "<"
    shb = _block(o, 0x0A0D0D0A, struct.pack(o + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    out = [shb]
    for btype, body in extra_blocks:  # e.g. unknown block types, which readers must skip
        out.append(_block(o, btype, body))
    for f in ifaces:
        opts = b""
        if f.tsresol is not None:
            opts = struct.pack(o + "HH", 9, 1) + bytes([f.tsresol]) + b"\0\0\0" + struct.pack(o + "HH", 0, 0)
        out.append(_block(o, 1, struct.pack(o + "HHI", f.linktype, 0, f.snaplen) + opts))
    for r in records:
        f = ifaces[r.iface]
        res = 6 if f.tsresol is None else f.tsresol
        if res & 0x80:
            units = (r.ts_ns << (res & 0x7F)) // 1_000_000_000
        else:
            units = r.ts_ns * 10**res // 1_000_000_000
        orig = r.origlen if r.origlen is not None else len(r.data)
        body = struct.pack(o + "IIIII", r.iface, units >> 32, units & 0xFFFFFFFF, len(r.data), orig) + r.data
        out.append(_block(o, 6, body))
    return b"".join(out)


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


# ---------------------------------------------------------------- scripted conversations

S_IP, R_IP, S_PORT, R_PORT = "10.0.0.1", "10.0.0.2", 40000, 5201


@dataclass
class Conv:
    """A TCP conversation, sender 10.0.0.1:40000 → receiver 10.0.0.2:5201, as Ethernet frames.

    ``isn`` / ``irs``: initial sequence numbers of sender and receiver. Times are in ms.
    """

    isn: int = 1000
    irs: int = 5000
    records: list[Rec] = field(default_factory=list)
    snaplen: int = 65535

    def _add(self, t_ms: float, ip: bytes) -> None:
        frame = ether(ip)
        self.records.append(Rec(round(t_ms * 1e6) + 1_700_000_000_000_000_000, frame[: self.snaplen],
                                len(frame)))

    def send(self, t_ms: float, rel_seq: int, length: int, *, flags: int = ACK | PSH, ack: int = 1,
             opts: bytes = b"", total_len: int | None = None, win: int = 65535) -> None:
        """Data sender → receiver; ``rel_seq`` counts from the first data byte (ISN + 1)."""
        h = tcp_header(S_PORT, R_PORT, self.isn + 1 + rel_seq, self.irs + ack, flags, win, opts)
        self._add(t_ms, ipv4(S_IP, R_IP, h + b"\xaa" * length, total_len=total_len))

    def ack(self, t_ms: float, rel_ack: int, *, win: int = 65535, opts: bytes = b"", flags: int = ACK,
            length: int = 0, rel_seq: int = 1) -> None:
        """Receiver → sender acknowledging ``rel_ack`` data bytes."""
        h = tcp_header(R_PORT, S_PORT, self.irs + rel_seq, self.isn + 1 + rel_ack, flags, win, opts)
        self._add(t_ms, ipv4(R_IP, S_IP, h + b"\xbb" * length))

    def raw(self, t_ms: float, from_sender: bool, seq: int, ack: int, flags: int, *, length: int = 0,
            opts: bytes = b"", win: int = 65535) -> None:
        """A segment with absolute sequence and acknowledgement numbers (not relative to ``isn``/``irs``):
        another connection's numbers on the same ports, an RST's, a handshake of one's own."""
        src, dst = ((S_IP, S_PORT), (R_IP, R_PORT)) if from_sender else ((R_IP, R_PORT), (S_IP, S_PORT))
        h = tcp_header(src[1], dst[1], seq, ack, flags, win, opts)
        self._add(t_ms, ipv4(src[0], dst[0], h + (b"\xaa" if from_sender else b"\xbb") * length))

    def handshake(self, t_ms: float, rtt_ms: float, *, mss: int = 1460, ts: bool = False,
                  sack: bool = True) -> None:
        o = opt_mss(mss) + (opt_sackok() if sack else b"") + (opt_ts(1, 0) if ts else b"")
        self._add(t_ms, ipv4(S_IP, R_IP, tcp_header(S_PORT, R_PORT, self.isn, 0, SYN, 65535, o)))
        o2 = opt_mss(mss) + (opt_sackok() if sack else b"") + (opt_ts(1, 1) if ts else b"")
        self._add(t_ms + rtt_ms, ipv4(R_IP, S_IP, tcp_header(R_PORT, S_PORT, self.irs, self.isn + 1,
                                                             SYN | ACK, 65535, o2)))
        self._add(t_ms + rtt_ms + 0.01, ipv4(S_IP, R_IP, tcp_header(S_PORT, R_PORT, self.isn + 1,
                                                                    self.irs + 1, ACK)))

    def pcap(self) -> bytes:
        return pcap(self.records, snaplen=self.snaplen)
