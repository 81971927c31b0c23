"""Public captures made by others (``tests/data/public/MANIFEST.md``): every TCP flow with data agrees with
tcptrace and tshark and keeps the invariants, or the difference is in :data:`EXPLAINED` (with its figures and a reason
from :data:`REASONS`: the tool is wrong, or counts something else) or in :data:`BUGS` (ackreplay is wrong, see
:data:`BUG_TEXT`: that capture's test is a strict expected failure until the bug is fixed). Any other difference, or
an explained one whose figures changed or that is no longer found, fails. docs/ingest.md, "Public captures: agreement
with tcptrace and tshark", has the same tables in words.

``ACKREPLAY_EXTRA_PUBLIC=/dir`` adds that folder's captures (a second set kept outside the repository) to the same
checks; without it those tests are skipped.

Flows (one direction of a connection with payload) are matched by sender, receiver and the connection's place among
the connections of that endpoint pair. Per pair, a tool that split it into other connections than ackreplay gives one
``connections`` difference and its flows are not compared; also compared: ackreplay's connection count with tshark's
``tcp.stream`` count. Per flow, with tshark's sequence numbers unwrapped and its frames taken in time order:

* ``data_segments``: tshark's frames with ``tcp.len > 0``; tcptrace's "actual data pkts". Exact.
* ``unique_bytes``: the union of ``[seq, seq + len)`` over the data segments (ackreplay's ``segments`` table; tshark's
  raw sequence numbers); tcptrace's "unique bytes sent". Exact.
* ``bytes_sent``: the bytes tshark shows sent from the start (ISN + 1, else the first data segment) on: the union of
  its data segments and ``[start, highest ACK)`` (the FIN left out) — a sequence gap no ACK covers is not shown sent.
  Exact.
* ``retransmissions``: data segments tshark flags retransmission, fast or spurious retransmission or out-of-order (as
  ``test_against_tools``), against ackreplay's retransmissions and reordered segments; tcptrace's "rexmt data pkts",
  which counts out-of-order segments apart and also counts a SYN or FIN sent again without payload (those tshark
  flags are added to ackreplay's count for it), against its retransmissions. Exact.
* ``rtt_min``: tshark's smallest ``tcp.analysis.ack_rtt`` of an ACK of data or of the handshake (ackreplay times no
  FIN), within 1 µs; tcptrace's "RTT min" within 0.06 ms (it prints 0.1 ms steps), or equal to the ACK time of a FIN
  below ackreplay's RTTmin (tcptrace times those). Flows rebuilt from a receiver or a tap are not compared: the tools
  time the capture point's data→ACK (often the receiver's own ACK delay), ackreplay the sender's round trip.

Invariants, on every flow whose endpoint pair tshark split as ackreplay did and that ingest does not report
``invalid`` (a flow ingest finds broken is reported with its reasons and not replayed):

* ``bytes_bound``: ``bytes_sent`` and ``bytes`` ≤ the payload of the data segments seen plus the holes the ACKs prove
  (the union of the segments and ``[first ACK or start, highest ACK)``, the FIN's sequence number left out).
* ``goodput_bound``: ``goodput_bps`` ≤ 8 × that bound / the connection's duration (tshark's first to last frame), and
  ``delivery_rate_bps`` ≤ 8 × that bound / (the receiver's last ACK − the first data segment), each duration less
  1 µs (the summary's times are float epoch seconds, in 0.24 µs steps).
* ``rtt_base``: ``rttmin_s`` ≤ every RTT sample of the flow (the ``acks`` table's ``rtt``, and ``handshake_rtt_s`` when
  the flow is not rebuilt: a rebuilt flow's handshake time is the capture point's part).
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import ipaddress
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import CAPTURE_SUFFIXES, ROOT
from tests.ingest.test_against_tools import ingest, need

PUBLIC = ROOT / "tests" / "data" / "public"
EXTRA_ENV = "ACKREPLAY_EXTRA_PUBLIC"
#: The captures of the extra set (kept outside the repository, with its own MANIFEST.md): the tables below may name
#: them whether or not the set is given.
EXTRA_NAMES = (
    "gh-ndpi__1kxun.pcap",
    "gh-ndpi__alexa-app.pcapng",
    "gh-ndpi__bittorrent.pcap",
    "gh-ndpi__heuristic_tcp_ack_payload.pcap",
    "gh-ndpi__netflix.pcap",
    "gh-ndpi__reasm_crash_anon.pcapng",
    "gh-ndpi__vnc.pcap",
    "gh-ndpi__whatsappfiles.pcap",
    "gh-packets__ek_to_cryptowall4.pcapng",
    "gh-packets__ratinfected.pcapng",
    "gh-packets__tcp_ports.pcapng",
    "gh-zeek__http_206_example_c.pcap",
    "gh-zeek__http_no_crlf.pcap",
    "gh-zeek__irc-dcc-send.pcapng",
    "gh-zeek__modbus_fuzz-72.pcap",
    "gh-zeek__smb_smb3_multichannel.pcap",
    "gh-zeek__ssh_ssh.pcap",
)

_M32 = 1 << 32
_HALF = 1 << 31


def captures_in(folder: Path) -> list[Path]:
    """The captures of ``folder`` (also gzipped), by name."""
    suffixes = CAPTURE_SUFFIXES + tuple(s + ".gz" for s in CAPTURE_SUFFIXES)
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(suffixes))


def extra_captures() -> list[Path]:
    folder = os.environ.get(EXTRA_ENV)
    return captures_in(Path(folder)) if folder else []


# ---- flows as each tool sees them ------------------------------------------------------------------------------------


def endpoint(addr: str, port: int | str) -> str:
    """"a.b.c.d:port" or "[v6]:port", as ackreplay writes a flow's ends (an IPv4-mapped address as IPv4)."""
    ip = ipaddress.ip_address(addr)
    if isinstance(ip, ipaddress.IPv6Address):
        return f"{ip.ipv4_mapped}:{port}" if ip.ipv4_mapped else f"[{ip.compressed}]:{port}"
    return f"{ip}:{port}"


def split_endpoint(text: str) -> tuple[str, str]:
    """An address and a port from tcptrace's "addr:port" (it prints ::1 as ":0001")."""
    addr, port = text.rsplit(":", 1)
    if addr.startswith(":") and not addr.startswith("::"):
        addr = ":" + addr
    return addr, port


FlowKey = tuple[str, str, int]  # sender, receiver, the connection's place among those of its endpoint pair


def key_text(key: FlowKey) -> str:
    return f"{key[0]}>{key[1]}#{key[2]}"


@dataclass
class Direction:
    """One direction of one connection in tshark's dissection (sequence numbers unwrapped, relative to none)."""

    syn_seq: int | None = None
    fin_end: int | None = None
    fin_t: int | None = None
    seqs: list[tuple[int, int]] = field(default_factory=list)  # (seq, len) of each data segment
    data_t: list[int] = field(default_factory=list)  # ns
    retransmissions: int = 0
    control_retransmissions: int = 0  # a SYN or FIN without payload sent again (tcptrace counts them)
    acks: list[int] = field(default_factory=list)  # raw ACK numbers this direction sent (not with RST)
    ack_t: list[int] = field(default_factory=list)
    ack_rtts: list[float] = field(default_factory=list)  # tshark's ack_rtt of this direction's ACKs of data (s)
    fin_ack_rtts: list[float] = field(default_factory=list)  # … of FINs and other segments without payload
    last_seq: int | None = None


def ns(epoch: str) -> int:
    """tshark's decimal epoch seconds as integer ns (a float would lose sub-µs steps at 1e9 s)."""
    whole, _, frac = epoch.partition(".")
    return int(whole) * 1_000_000_000 + int((frac + "000000000")[:9])


def unwrap(raw: int, last: int) -> int:
    """``raw`` (32 bits) as the value nearest ``last`` (unwrapped)."""
    return last + ((raw - last + _HALF) % _M32 - _HALF)


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    total, reach = 0, None
    for lo, hi in sorted(intervals):
        if hi <= lo:
            continue
        if reach is None or lo >= reach:
            total += hi - lo
            reach = hi
        elif hi > reach:
            total += hi - reach
            reach = hi
    return total


@dataclass(frozen=True)
class TsharkFlow:
    data_segments: int
    unique_bytes: int
    sent: int  # the bytes from the start on that a data segment carries or an ACK covers
    retransmissions: int
    control_retransmissions: int
    rtt_min_s: float | None
    rtt_min_fin_s: float | None  # the smallest ack_rtt of a FIN (or pure ACK), which tcptrace times too
    bound: int  # payload seen plus the holes the ACKs prove
    conn_duration_s: float
    delivery_span_s: float  # the receiver's last ACK − the first data segment


_TSHARK_FIELDS = ["frame.number", "frame.time_epoch", "tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst",
                  "ipv6.dst", "tcp.dstport", "tcp.len", "tcp.seq_raw", "tcp.ack_raw", "tcp.flags",
                  "tcp.analysis.ack_rtt", "tcp.analysis.acks_frame", "tcp.analysis.retransmission",
                  "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
                  "tcp.analysis.out_of_order"]


@cache
def _tshark_rows(path: Path) -> list[list[str]]:
    cmd = [need("tshark"), "-n", "-r", str(path), "-Y", "tcp && !icmp && !icmpv6", "-T", "fields",
           "-E", "separator=/t", "-E", "occurrence=f"]
    for f in _TSHARK_FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    return [line.split("\t") for line in out.splitlines()]


@cache
def tshark_connections(path: Path) -> int:
    """tshark's ``tcp.stream`` count (connections, split on port reuse)."""
    return len({row[2] for row in _tshark_rows(path)})


@cache
def tshark_flows(path: Path) -> dict[FlowKey, TsharkFlow]:
    streams: dict[str, dict[tuple[str, str], Direction]] = {}
    first_t: dict[str, int] = {}
    last_t: dict[str, int] = {}
    timed: set[str] = set()  # frames with payload or a SYN: ackreplay times the ACKs of these only
    for frame, t_s, stream, ip4s, ip6s, sport, ip4d, ip6d, dport, length, seq_s, ack_s, flags_s, ack_rtt, acks_frame, \
            *retx in sorted(_tshark_rows(path), key=lambda r: ns(r[1])):  # in time order, as ackreplay (stable)
        if not flags_s:  # a header tshark could not dissect (e.g. a data offset below 20): no segment
            continue
        t = ns(t_s)
        src, dst = endpoint(ip4s or ip6s, sport), endpoint(ip4d or ip6d, dport)
        dirs = streams.setdefault(stream, {})
        first_t[stream] = min(first_t.get(stream, t), t)
        last_t[stream] = max(last_t.get(stream, t), t)
        d = dirs.setdefault((src, dst), Direction())
        flags, n, raw = int(flags_s, 16), int(length or 0), int(seq_s)
        seq = raw if d.last_seq is None else unwrap(raw, d.last_seq)
        d.last_seq = seq
        if flags & 0x02 or n > 0:
            timed.add(frame)
        if flags & 0x02:  # SYN
            d.syn_seq = seq if d.syn_seq is None else d.syn_seq
            seq += 1
        if n > 0:
            d.seqs.append((seq, n))
            d.data_t.append(t)
            d.retransmissions += any(retx)
        elif flags & 0x03:
            d.control_retransmissions += any(retx)
        if flags & 0x01:  # FIN
            d.fin_end = seq + n if d.fin_end is None else max(d.fin_end, seq + n)
            d.fin_t = t if d.fin_t is None else d.fin_t
        if flags & 0x10 and not flags & 0x04:  # ACK, not RST
            d.acks.append(int(ack_s))
            d.ack_t.append(t)
            if ack_rtt:  # ackreplay times the ACKs of data and of the handshake only, not those of a FIN
                (d.ack_rtts if acks_frame in timed else d.fin_ack_rtts).append(float(ack_rtt))
    result: dict[FlowKey, TsharkFlow] = {}
    places: collections.Counter[frozenset[str]] = collections.Counter()
    for stream in sorted(streams, key=lambda s: (first_t[s], int(s))):
        dirs = streams[stream]
        pair = frozenset(e for k in dirs for e in k)
        place = places[pair]
        places[pair] += 1
        for (src, dst), d in dirs.items():
            if d.seqs:
                result[(src, dst, place)] = _summarise(d, dirs.get((dst, src), Direction()),
                                                       (last_t[stream] - first_t[stream]) / 1e9)
    return result


def _summarise(d: Direction, back: Direction, duration_s: float) -> TsharkFlow:
    """The flow ``d`` (its receiver's packets: ``back``) as tshark's dissection shows it."""
    # the start: ISN + 1, else the first data segment (ackreplay's bytes_sent counts from there); the ACKs prove
    # delivery from the first of them on (mid-connection: it may lie below the first data segment)
    start = d.syn_seq + 1 if d.syn_seq is not None else d.seqs[0][0]
    ref, acked, proven_from, fin_acked_t = start, start, start, None
    for i, raw in enumerate(back.acks):
        ref = unwrap(raw, ref)
        acked = max(acked, ref)
        if fin_acked_t is None and d.fin_end is not None and ref > d.fin_end:
            fin_acked_t = back.ack_t[i]
        if i == 0 and d.syn_seq is None:
            proven_from = min(start, ref)
    if d.fin_end is not None:
        acked = min(acked, d.fin_end)
    segs = [(s, s + n) for s, n in d.seqs]
    fin_rtts = [*back.fin_ack_rtts]
    if fin_acked_t is not None and d.fin_t is not None:
        fin_rtts.append((fin_acked_t - d.fin_t) / 1e9)
    acks_after = [t for t in back.ack_t if t >= d.data_t[0]]
    return TsharkFlow(
        data_segments=len(d.seqs), unique_bytes=union_length(segs),
        sent=union_length([*((max(s, start), e) for s, e in segs), (start, acked)]), retransmissions=d.retransmissions,
        control_retransmissions=d.control_retransmissions, rtt_min_s=min(back.ack_rtts, default=None),
        rtt_min_fin_s=min(fin_rtts, default=None), bound=union_length([*segs, (proven_from, acked)]),
        conn_duration_s=duration_s, delivery_span_s=(acks_after[-1] - d.data_t[0]) / 1e9 if acks_after else 0.0)


@dataclass(frozen=True)
class TcptraceFlow:
    data_segments: int
    unique_bytes: int
    retransmissions: int
    rtt_min_s: float | None


class TcptraceUnreadable(Exception):
    pass


_TT_PAIR = r"{}:\s+([\d.]+)(?: \w+)?\s+{}:\s+([\d.]+)"


@cache
def tcptrace_flows(path: Path) -> dict[FlowKey, TcptraceFlow]:
    """Each direction with data in ``tcptrace -l -r -n`` (a gzipped capture is given to it unzipped)."""
    with tempfile.TemporaryDirectory() as tmp:
        readable = path
        if path.suffix == ".gz":
            readable = Path(tmp) / path.stem
            with gzip.open(path) as packed, readable.open("wb") as unpacked:
                shutil.copyfileobj(packed, unpacked)
        run = subprocess.run([need("tcptrace"), "-l", "-r", "-n", str(readable)], capture_output=True, text=True,
                             timeout=600)
    if run.returncode != 0 or "TCP connection info" not in run.stdout:
        raise TcptraceUnreadable((run.stderr.strip().splitlines() or ["no output"])[-1])
    result: dict[FlowKey, TcptraceFlow] = {}
    places: collections.Counter[frozenset[str]] = collections.Counter()
    for block in re.split(r"\nTCP connection \d+:\n", run.stdout)[1:]:
        hosts = re.search(r"host \w+:\s+(\S+)\s*\n\s*host \w+:\s+(\S+)", block)
        if not hosts:
            continue
        a, b = (endpoint(*split_endpoint(h)) for h in (hosts[1], hosts[2]))
        place = places[frozenset((a, b))]
        places[frozenset((a, b))] += 1

        def pair(name: str, block: str = block) -> tuple[float, float]:
            m = re.search(_TT_PAIR.format(re.escape(name), re.escape(name)), block)
            assert m, name
            return float(m[1]), float(m[2])

        data, uniq, rexmt = pair("actual data pkts"), pair("unique bytes sent"), pair("rexmt data pkts")
        samples, rttmin = pair("RTT samples"), pair("RTT min")
        for i, (src, dst) in enumerate(((a, b), (b, a))):
            if data[i] == 0:
                continue
            result[(src, dst, place)] = TcptraceFlow(int(data[i]), int(uniq[i]), int(rexmt[i]),
                                                     rttmin[i] / 1e3 if samples[i] else None)
    return result


@dataclass(frozen=True)
class OurFlow:
    flow_id: int
    vantage: str
    data_segments: int
    unique_bytes: int
    bytes_sent: int
    bytes: int
    retransmissions: int
    reordered: int  # originals delivered late (away from the sender): out-of-order for tshark and tcptrace
    rttmin_s: float | None
    handshake_rtt_s: float | None
    reconstruction: str | None
    goodput_bps: float
    delivery_rate_bps: float
    rtt_samples_min_s: float | None  # the smallest RTT sample in the acks table
    invalid: str  # the invariants ingest found broken ("" none): such a flow is reported, not replayed


@cache
def our_flows(path: Path) -> dict[FlowKey, OurFlow]:
    cap = ingest(path)
    segs = cap.segments.select("flow_id", "seq", "len").partition_by("flow_id", as_dict=True)
    rtts = dict(cap.acks.group_by("flow_id").agg(pl.col("rtt").min()).iter_rows())
    conns: dict[int, tuple[float, frozenset[str]]] = {}
    for s in cap.flows:
        start = conns.get(s.connection, (math.inf, frozenset()))[0]
        conns[s.connection] = (min(start, s.start_t), frozenset((s.sender, s.receiver)))
    places: collections.Counter[frozenset[str]] = collections.Counter()
    place_of = {}
    for conn, (_, pair) in sorted(conns.items(), key=lambda kv: (kv[1][0], kv[0])):
        place_of[conn] = places[pair]
        places[pair] += 1
    result = {}
    for s in cap.flows:
        rows = segs.get((s.flow_id,))
        spans = [] if rows is None else list(zip(rows["seq"].to_list(),
                                                 (rows["seq"] + rows["len"]).to_list(), strict=True))
        result[(s.sender, s.receiver, place_of[s.connection])] = OurFlow(
            s.flow_id, s.vantage, s.data_segments, union_length(spans), s.bytes_sent, s.bytes, s.retransmissions,
            s.reordered_segments, s.rttmin_s, s.handshake_rtt_s, s.reconstruction, s.goodput_bps,
            s.delivery_rate_bps, rtts.get(s.flow_id), s.invalid)
    return result


# ---- the checks ------------------------------------------------------------------------------------------------------

Finding = tuple[str, str, str]  # flow ("*" for the capture), check, tool ("" for an invariant)


def tool_findings(path: Path) -> dict[Finding, str]:
    """Every disagreement with tshark and tcptrace, with the figures."""
    ours, ref = our_flows(path), tshark_flows(path)
    found: dict[Finding, str] = {}
    tools: dict[str, dict[FlowKey, TsharkFlow] | dict[FlowKey, TcptraceFlow]] = {"tshark": ref}
    try:
        tools["tcptrace"] = tcptrace_flows(path)
    except TcptraceUnreadable:
        found[("*", "unreadable", "tcptrace")] = "tcptrace read no TCP connection"
    if ingest(path).stats.connections != tshark_connections(path):
        found[("*", "connections", "tshark")] = (f"ackreplay {ingest(path).stats.connections} connections, "
                                                 f"tshark {tshark_connections(path)}")
    for tool, theirs in tools.items():
        compared = []
        for pair in sorted({frozenset(k[:2]) for k in (*ours, *theirs)}, key=sorted):
            mine = {k for k in ours if frozenset(k[:2]) == pair}
            other = {k for k in theirs if frozenset(k[:2]) == pair}
            places_o, places_t = {k[2] for k in mine}, {k[2] for k in other}
            if places_o != places_t:  # split into connections differently: the flows are not comparable
                found[("<>".join(sorted(pair)), "connections", tool)] = (
                    f"ackreplay {len(places_o)} connection(s) with data, {tool} {len(places_t)}")
                continue
            for key in sorted(mine ^ other):
                found[(key_text(key), "flows", tool)] = f"flow only in {'ackreplay' if key in ours else tool}"
            compared += sorted(mine & other)
        for key in compared:
            o, t = ours[key], theirs[key]
            flow = key_text(key)
            # tcptrace counts a SYN or FIN sent again (no payload) in "rexmt data pkts": those tshark flags are added
            control = ref[key].control_retransmissions if isinstance(t, TcptraceFlow) and key in ref else 0
            # tshark's count has its out-of-order segments in it; tcptrace counts those apart ("out of order pkts")
            retx = o.retransmissions + (control if isinstance(t, TcptraceFlow) else o.reordered)
            for check, ours_n, tool_n in (("data_segments", o.data_segments, t.data_segments),
                                          ("unique_bytes", o.unique_bytes, t.unique_bytes),
                                          ("retransmissions", retx, t.retransmissions)):
                if ours_n != tool_n:
                    found[(flow, check, tool)] = f"ackreplay {ours_n}, {tool} {tool_n}"
            if isinstance(t, TsharkFlow) and o.bytes_sent != t.sent:
                found[(flow, "bytes_sent", tool)] = f"ackreplay {o.bytes_sent}, {tool} {t.sent}"
            # a rebuilt flow's RTT is the sender's; the tools time the capture point's data→ACK (a receiver's own ACK
            # delay): not compared (the invariants check it)
            if t.rtt_min_s is None or o.rttmin_s is None or o.reconstruction is not None:
                continue
            if isinstance(t, TcptraceFlow):  # 0.1 ms print steps; it also times the ACK of a FIN
                fin = ref[key].rtt_min_fin_s if key in ref else None
                if abs(o.rttmin_s - t.rtt_min_s) > 0.06e-3 and not (
                        fin is not None and fin < o.rttmin_s and abs(fin - t.rtt_min_s) <= 0.06e-3):
                    found[(flow, "rtt_min", tool)] = (f"ackreplay {o.rttmin_s * 1e3:.3f} ms, "
                                                      f"{tool} {t.rtt_min_s * 1e3:.1f} ms ({o.vantage})")
            elif abs(o.rttmin_s - t.rtt_min_s) > 1e-6 + 1e-9:  # the captures' µs steps
                found[(flow, "rtt_min", tool)] = (f"ackreplay {o.rttmin_s * 1e3:.3f} ms, "
                                                  f"{tool} {t.rtt_min_s * 1e3:.3f} ms ({o.vantage})")
    return found


def invariant_findings(path: Path) -> dict[Finding, str]:
    """Every flow that breaks an invariant and that ingest does not report ``invalid``, with the figures."""
    ours, ref = our_flows(path), tshark_flows(path)
    found: dict[Finding, str] = {}
    for key, o in sorted(ours.items()):
        flow = key_text(key)
        if o.invalid:  # ingest found it broken too: reported with its reasons, not replayed
            continue
        t = ref.get(key)
        # the bounds come from tshark's connection: only where tshark split the endpoint pair as ackreplay did (a
        # different split is a "connections" difference)
        pair = frozenset(key[:2])
        if {k[2] for k in ours if frozenset(k[:2]) == pair} != {k[2] for k in ref if frozenset(k[:2]) == pair}:
            t = None
        if t is not None:
            if max(o.bytes_sent, o.bytes) > t.bound:
                found[(flow, "bytes_bound", "")] = (f"bytes_sent {o.bytes_sent}, bytes {o.bytes}; seen and "
                                                    f"proven by ACKs {t.bound}")
            # the summary's start and end are float epoch seconds (steps of 0.24 µs): durations within 1 µs
            for what, rate, span in (("goodput", o.goodput_bps, t.conn_duration_s),
                                     ("delivery rate", o.delivery_rate_bps, t.delivery_span_s)):
                if span > 1e-6 and rate > 8 * t.bound / (span - 1e-6):
                    found[(flow, "goodput_bound", "")] = (f"{what} {rate:.0f} bit/s > {8 * t.bound / span:.0f} "
                                                          f"({t.bound} B in {span:.6f} s)")
        # a rebuilt flow's handshake_rtt_s is the capture point's part, not a sample of the rebuilt path
        hs = o.handshake_rtt_s if o.reconstruction is None else None
        samples = [x for x in (o.rtt_samples_min_s, hs) if x is not None]
        if samples and (o.rttmin_s is None or o.rttmin_s > min(samples) + 1e-12):
            found[(flow, "rtt_base", "")] = f"rttmin {o.rttmin_s}, smallest sample {min(samples)}"
    return found


# ---- known differences -----------------------------------------------------------------------------------------------

#: Why a difference is not ackreplay's fault (docs/ingest.md, "Public captures: agreement with tcptrace and tshark").
REASONS = {
    "tcptrace-idle": "tcptrace starts a new connection after 4 minutes without a packet (its idle rule); tshark and "
                     "ackreplay keep one: the same ISNs, the sequence numbers go on (a 254 s pause, a capture merged "
                     "over 14 days, a capture stitched from parts hours apart)",
    "tcptrace-rst": "tcptrace starts a new connection at a SYN or SYN-ACK that follows a RST; tshark and ackreplay "
                    "keep one: the SYN sent again has the same ISN (rtsp), the SYN-ACK acknowledges the SYN's ISN + 1 "
                    "after an injected RST (rst-inject-rae)",
    "rst-same-isn": "after a RST the client sends its SYN again with the same ISN: ackreplay starts a new connection "
                    "there (the RST closed the old one; merged, a challenge ACK's far acknowledgement would make a "
                    "phantom flow), tshark keeps one stream; the invariants' bounds then use tshark's longer span "
                    "(from the first SYN) against ackreplay's bytes of the second connection alone",
    "tcptrace-unreadable": "tcptrace reads no packet of this file (link types 228, 239, 276, PPPoE, or pcapng "
                           "interfaces of different snaplens, which libpcap refuses): compared with tshark only",
    "tcptrace-qinq": "tcptrace does not decode 802.1ad double-tagged frames: it misses the copy of the connection on "
                     "VLANs 10/20, which tshark and ackreplay count",
    "tcptrace-tso": "tcptrace leaves out TSO super-segments (payload above the MTU, recorded on the sending host "
                    "before segmentation), which tshark and ackreplay count (docs: MSS, super-segments)",
    "tcptrace-32bit": "tcptrace keeps 32-bit sequence numbers: in this transfer past 4 GiB a segment sent 4 GiB after "
                      "another with the same 32-bit sequence number is a retransmission to it, not new bytes; tshark "
                      "(unwrapped here) and ackreplay agree",
    "hole-fill": "a segment that fills a hole below the highest sequence seen (bytes never seen before) is "
                 "'out of order' for tcptrace, a retransmission for ackreplay (§1.2: a sender does not reorder its "
                 "own segments) and for tshark (out-of-order flag, counted as in test_against_tools); whatsappfiles: "
                 "two holes of a mid-path capture filled 0.38 and 0.58 s after they opened on a 71 ms path",
    "bigtcp-ipv6": "IPv6 BIG TCP (payload length 0, no jumbo option): tshark 4.0 calls the packet malformed and "
                   "tcptrace finds no payload; ackreplay takes the length from the record (docs: formats)",
    "ip-length": "frames shorter on the wire than their IP total length (the record's original length, not a "
                 "snaplen cut): ackreplay and tshark take the bytes the frame held, tcptrace the IP length (docs: "
                 "formats). In tcp_reassembly the frames are 8 bytes short and the next segment's sequence number "
                 "and the ACKs confirm the IP length: tcptrace right about what was sent, ackreplay counts those 44 "
                 "bytes as holes the ACKs prove (bytes_sent unchanged). In ndpi_match_string the fuzzed frame's IP "
                 "length is 2610 in 576 bytes: ackreplay right",
    "synack-reuse": "the ports are used again 56 min after both FINs, from a SYN-ACK with a new ISN (its SYN not "
                    "captured): ackreplay and tcptrace start a new connection there, tshark (4.0) keeps one stream. "
                    "The FIN the client sends below its highest sequence in the second is a control retransmission "
                    "for tcptrace (#1) and tshark, whose count — from its one stream — goes to the first (#0)",
    "fuzzed-ack": "the fuzzed frame (IP length 2610 in 576 bytes) acknowledges 16 384 bytes of the server's before the "
                  "server sent any: ackreplay takes an ACK above the highest sequence for bytes the capture missed, so "
                  "the server's first 685 bytes are a retransmission; tcptrace ignores the acknowledgement",
    "file-order": "tshark analyses in file order, ackreplay in time order (docs: capture order): the parts of this "
                  "stitched capture are out of time order, and tshark flags as retransmissions the segments that "
                  "come first in time but later in the file",
    "copies-rtt": "every packet is captured 2 to 4 times: tshark times an ACK from the last copy of what it "
                  "acknowledges (wireshark-retrans: 6 µs from the fourth SYN; vlan-collisions: 19 ms from the copy "
                  "50 ms after the original, with a 69.7 ms handshake), ackreplay applies Karn's rule to the copies "
                  "and times by the echoed TSval from the first one — right there; in ssh-dups (copies with one "
                  "timestamp, a 1 ms TSval clock) its TSecr match starts at the first segment of the tick, 5 µs "
                  "above tshark's; tcptrace, with Karn's rule, keeps only the handshake (0.2 ms)",
    "tcptrace-keepalive": "tcptrace counts keep-alives (1 byte at the cumulative ACK − 1, sent again every 30 s or "
                          "after an idle spell: smb3_multichannel 5 and 1, 1kxun's 192.168.115.8 flows 1 to 3) as "
                          "retransmitted data; tshark flags them keep-alive and ackreplay counts them apart "
                          "(keepalives): ackreplay and tshark right, the byte is not data",
    "unknown-vantage-reorder": "captured at the receiver (192.168.2.126) without the handshake and the receiver's "
                               "ACKs of these bytes: a segment filling a hole arrives 0–1.3 ms after the segment "
                               "above it, with the same TSval, on a path with a 0.2 s request/response time — the "
                               "original delivered late, out of order for tcptrace and tshark (right). ackreplay "
                               "cannot place the capture (vantage unknown), so its reordering rule, which needs a "
                               "capture point away from the sender and a lower TSval or the handshake's round trip, "
                               "does not apply and it counts a retransmission",
    "dupack-rtt": "tshark times a duplicate ACK (1kxun frame 921, acknowledging nothing new) from the spurious "
                  "retransmission (frame 920) it answers, 23 µs; ackreplay times only ACKs that advance the "
                  "cumulative ACK, never from a retransmission (Karn), 32 µs from the original (918 → 919): "
                  "ackreplay right",
    "dupack-karn": "the client's request (frame 1273) is sent again (1291, spurious); the server's duplicate ACK "
                   "of it (1330) comes after the next segment (1312, sent once). ackreplay's Karn rule also skips "
                   "bytes above a hole the receiver reported with duplicate ACKs, so it does not time 1312 → 1338 "
                   "(71.3 ms, ACK 299 = its end): tshark and tcptrace right, one valid sample fewer for ackreplay, "
                   "never a wrong one",
    "ack-padding": "pure ACKs and FINs carry 2–6 padding bytes inside their IP length, so every tool takes them "
                   "for payload at the ACK's sequence number, where the next real segment starts too. Where a "
                   "padded ACK comes before data or padding at the same numbers (58155 frame 61, 6946 frame 239), "
                   "ackreplay counts the later one a retransmission (it starts below the highest sequence) and "
                   "skips its RTT by Karn's rule (27453: frame 149's "
                   "2 bytes at 1357 before 150's 46; tshark times 150 → 151, 23.873 ms, right); a padded "
                   "keep-alive (2 bytes at the ACK − 1, 58155 frame 56) is a retransmission for ackreplay and "
                   "tcptrace, for tshark a new segment. tcptrace's unique bytes end at the FIN: the padding of an "
                   "ACK sent after it (27453 frame 160: 2 bytes at 1481, the FIN at 1482) reaches 1 byte past, "
                   "which tshark and ackreplay count. No count is right about data: it is padding",
    "rst-payload": "the client's RST (frame 177) carries 2 bytes at sequence 612 (padding in its IP length): tshark "
                   "and tcptrace count it as a data segment, below the FIN's 613 a retransmission; a RST's payload "
                   "is not delivered as data (RFC 9293 §3.5.3), ackreplay leaves it out: ackreplay right",
    "synack-karn": "the server's SYN-ACK is sent 4 times (frames 217, 218, 222, 223): tshark times the handshake's "
                   "ACK (228) from the third, 33.2 ms; the sample is ambiguous (Karn), ackreplay and tcptrace do "
                   "not take it: ackreplay right",
    "fuzzed-rst": "frame 96 carries every flag (SYN, ACK, RST, FIN, …: fuzzed): ackreplay takes its RST as the end "
                  "of the connection, as a TCP stack would (RFC 9293 checks RST before SYN), and the client's "
                  "segments from frame 101 on start a second one; tshark and tcptrace keep one stream. The client's "
                  "sequence numbers go on (1006331165 before and after): the tools are right that the connection "
                  "went on; the flags of frame 96 are garbage",
    "tshark-vnc-split": "tshark 4.0 starts a new tcp.stream at the client's first data segment (frame 3548) of "
                        "each VNC connection, whose SYN, SYN-ACK and ACK it has in the first: the sequence and "
                        "acknowledgement numbers go on (3812374510 / 1331395002); ackreplay and tcptrace keep one "
                        "connection: they are right",
    "fuzzed-seq": "a fuzzed Modbus connection: sequence numbers jump 2^31 and back (frame 30: 1911349326 in a "
                  "stream at 4058832962), ACK numbers are random (frames 17, 18, 20, 23, 27, 36) and frame 20's IP "
                  "length claims 35 084 bytes of payload in a 52-byte frame (tcptrace takes them, ackreplay and "
                  "tshark the 12 bytes the frame held). No tool is right: the server's flow rests on an ACK "
                  "2^31 beyond its data and ingest reports it invalid (not replayed); the client's differs by "
                  "which jumps each tool counts as retransmissions or bytes sent",
    "first-ack": "the capture starts mid-connection: ackreplay takes the receiver's first ACK as its starting point "
                 "and does not time it, tshark and tcptrace do when it acknowledges a segment they saw — one valid "
                 "sample fewer for ackreplay, never a wrong one",
    "uneven-acks": "segments advance the sequence by 1446 bytes but are acknowledged 1430 bytes at a time: no ACK ends "
                   "on a segment, so tshark and tcptrace time only the handshake (185.4 ms); ackreplay times the "
                   "highest segment each ACK covers (111.1 ms, Karn-clean)",
}

#: ackreplay bugs the public captures show, by name: what is wrong, with the figures. A capture's test with one of them
#: is an expected failure until it is fixed (none is open).
BUG_TEXT: dict[str, str] = {
}

#: Differences that are explained: capture → {(flow, check, tool): (the figures, the reason in REASONS)}. Flow "*" is
#: the whole capture, "a<>b" an endpoint pair. The figures are compared too: a difference that changed is a new one.
EXPLAINED: dict[str, dict[Finding, tuple[str, str]]] = {
    'gh-arkime__modbus.pcap.gz': {
        ('10.0.0.3:502<>10.0.0.57:2578', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 2', 'tcptrace-idle'),
    },
    'gh-arkime__mqtt_synthetic.pcap': {
        ('*', 'unreadable', 'tcptrace'):
            ('tcptrace read no TCP connection', 'tcptrace-unreadable'),
    },
    'gh-arkime__tcpseq_synthetic.pcap': {
        ('10.0.0.3:40002>10.0.0.4:8001#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'hole-fill'),
    },
    'gh-arkime__wireshark-retrans.pcap': {
        ('172.17.96.143:59221>172.17.96.77:4000#0', 'rtt_min', 'tshark'):
            ('ackreplay 6.893 ms, tshark 0.006 ms (unknown)', 'copies-rtt'),
    },
    'gh-ndpi__1kxun.pcap': {
        ('14.136.136.108:80>192.168.2.126:49370#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'unknown-vantage-reorder'),
        ('14.136.136.108:80>192.168.2.126:49372#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'unknown-vantage-reorder'),
        ('14.136.136.108:80>192.168.2.126:49412#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 3.644 ms, tcptrace 1.8 ms (unknown)', 'first-ack'),
        ('14.136.136.108:80>192.168.2.126:49412#0', 'rtt_min', 'tshark'):
            ('ackreplay 3.644 ms, tshark 1.756 ms (unknown)', 'first-ack'),
        ('142.250.186.174:80>192.168.2.126:36732#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 3, tcptrace 0', 'unknown-vantage-reorder'),
        ('172.105.121.82:80>192.168.2.126:38314#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'unknown-vantage-reorder'),
        ('172.105.121.82:80>192.168.2.126:38316#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'unknown-vantage-reorder'),
        ('172.105.121.82:80>192.168.2.126:38326#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'unknown-vantage-reorder'),
        ('172.217.18.98:80>192.168.2.126:44368#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'unknown-vantage-reorder'),
        ('192.168.115.8:49581>64.233.189.128:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'tcptrace-keepalive'),
        ('192.168.115.8:49596>203.66.182.87:443#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 3', 'tcptrace-keepalive'),
        ('192.168.115.8:49597>106.185.35.110:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 2, tcptrace 4', 'tcptrace-keepalive'),
        ('192.168.115.8:49598>222.73.254.167:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 2, tcptrace 4', 'tcptrace-keepalive'),
        ('192.168.115.8:49599>106.187.35.246:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 2, tcptrace 4', 'tcptrace-keepalive'),
        ('192.168.115.8:49600>106.187.35.246:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 2, tcptrace 4', 'tcptrace-keepalive'),
        ('192.168.115.8:49601>106.187.35.246:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 3, tcptrace 5', 'tcptrace-keepalive'),
        ('192.168.115.8:49602>106.187.35.246:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 3, tcptrace 5', 'tcptrace-keepalive'),
        ('192.168.115.8:49603>106.187.35.246:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 2, tcptrace 4', 'tcptrace-keepalive'),
        ('192.168.115.8:49604>106.187.35.246:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 3, tcptrace 5', 'tcptrace-keepalive'),
        ('192.168.2.126:42554>35.156.44.13:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 24.739 ms, tcptrace 23.2 ms (unknown)', 'first-ack'),
        ('192.168.2.126:42554>35.156.44.13:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 24.739 ms, tshark 23.156 ms (unknown)', 'first-ack'),
        ('192.168.2.126:45388>161.117.13.29:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 184.512 ms, tcptrace 184.1 ms (unknown)', 'first-ack'),
        ('192.168.2.126:45388>161.117.13.29:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 184.512 ms, tshark 184.069 ms (unknown)', 'first-ack'),
        ('192.168.2.126:46184>172.105.121.82:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 359.566 ms, tcptrace 353.7 ms (unknown)', 'first-ack'),
        ('192.168.2.126:46184>172.105.121.82:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 359.566 ms, tshark 353.699 ms (unknown)', 'first-ack'),
        ('192.168.2.126:46200>172.105.121.82:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 350.008 ms, tcptrace 348.4 ms (unknown)', 'first-ack'),
        ('192.168.2.126:46200>172.105.121.82:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 350.008 ms, tshark 348.410 ms (unknown)', 'first-ack'),
        ('192.168.2.126:46212>172.105.121.82:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 363.662 ms, tcptrace 347.5 ms (unknown)', 'first-ack'),
        ('192.168.2.126:46212>172.105.121.82:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 363.662 ms, tshark 347.497 ms (unknown)', 'first-ack'),
        ('192.168.2.126:49412>14.136.136.108:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 204.604 ms, tcptrace 194.2 ms (unknown)', 'first-ack'),
        ('192.168.2.126:49412>14.136.136.108:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 204.604 ms, tshark 194.161 ms (unknown)', 'first-ack'),
        ('192.168.5.16:53580>31.13.87.36:443#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 48.043 ms, tcptrace 5.4 ms (unknown)', 'first-ack'),
        ('192.168.5.16:53580>31.13.87.36:443#0', 'rtt_min', 'tshark'):
            ('ackreplay 48.043 ms, tshark 5.353 ms (unknown)', 'first-ack'),
        ('31.13.87.1:443>192.168.5.16:53578#0', 'rtt_min', 'tshark'):
            ('ackreplay 0.032 ms, tshark 0.023 ms (unknown)', 'dupack-rtt'),
    },
    'gh-ndpi__alexa-app.pcapng': {
        ('172.16.42.216:45709>52.94.232.134:443#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 119.631 ms, tcptrace 71.3 ms (sender)', 'dupack-karn'),
        ('172.16.42.216:45709>52.94.232.134:443#0', 'rtt_min', 'tshark'):
            ('ackreplay 119.631 ms, tshark 71.302 ms (sender)', 'dupack-karn'),
    },
    'gh-ndpi__bittorrent.pcap': {
        ('192.168.1.3:52902>190.103.195.56:46633#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 481.709 ms, tcptrace 460.3 ms (unknown)', 'first-ack'),
        ('192.168.1.3:52902>190.103.195.56:46633#0', 'rtt_min', 'tshark'):
            ('ackreplay 481.709 ms, tshark 460.277 ms (unknown)', 'first-ack'),
        ('192.168.1.3:52907>82.58.216.115:38305#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 902.689 ms, tcptrace 770.4 ms (unknown)', 'first-ack'),
        ('192.168.1.3:52907>82.58.216.115:38305#0', 'rtt_min', 'tshark'):
            ('ackreplay 902.689 ms, tshark 770.369 ms (unknown)', 'first-ack'),
        ('192.168.1.3:52914>190.103.195.56:46633#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 616.617 ms, tcptrace 441.1 ms (unknown)', 'first-ack'),
        ('192.168.1.3:52914>190.103.195.56:46633#0', 'rtt_min', 'tshark'):
            ('ackreplay 616.617 ms, tshark 441.113 ms (unknown)', 'first-ack'),
    },
    'gh-ndpi__heuristic_tcp_ack_payload.pcap': {
        ('194.226.199.103:62580>217.69.139.59:443#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 729, tcptrace 728', 'ack-padding'),
        ('194.226.199.21:58155>52.18.127.189:443#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 10, tcptrace 9', 'ack-padding'),
        ('194.226.199.21:58155>52.18.127.189:443#0', 'retransmissions', 'tshark'):
            ('ackreplay 10, tshark 8', 'ack-padding'),
        ('194.226.199.226:34101>8.247.226.126:80#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 499, tcptrace 498', 'ack-padding'),
        ('194.226.199.61:27453>35.241.9.150:443#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 24.020 ms, tcptrace 23.9 ms (sender)', 'ack-padding'),
        ('194.226.199.61:27453>35.241.9.150:443#0', 'rtt_min', 'tshark'):
            ('ackreplay 24.020 ms, tshark 23.873 ms (sender)', 'ack-padding'),
        ('194.226.199.61:27453>35.241.9.150:443#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 1482, tcptrace 1481', 'ack-padding'),
        ('194.226.199.9:49756>92.223.106.21:443#0', 'bytes_sent', 'tshark'):
            ('ackreplay 612, tshark 613', 'rst-payload'),
        ('194.226.199.9:49756>92.223.106.21:443#0', 'data_segments', 'tcptrace'):
            ('ackreplay 5, tcptrace 6', 'rst-payload'),
        ('194.226.199.9:49756>92.223.106.21:443#0', 'data_segments', 'tshark'):
            ('ackreplay 5, tshark 6', 'rst-payload'),
        ('194.226.199.9:49756>92.223.106.21:443#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 3, tcptrace 4', 'rst-payload'),
        ('194.226.199.9:49756>92.223.106.21:443#0', 'retransmissions', 'tshark'):
            ('ackreplay 2, tshark 3', 'rst-payload'),
        ('194.226.199.9:49756>92.223.106.21:443#0', 'unique_bytes', 'tshark'):
            ('ackreplay 612, tshark 613', 'rst-payload'),
        ('2.22.40.186:443>194.226.199.61:6946#0', 'retransmissions', 'tshark'):
            ('ackreplay 16, tshark 15', 'ack-padding'),
        ('2.22.40.186:443>194.226.199.61:6946#0', 'rtt_min', 'tshark'):
            ('ackreplay 722.793 ms, tshark 33.150 ms (sender)', 'synack-karn'),
        ('35.241.9.150:443>194.226.199.61:27453#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 34982, tcptrace 34981', 'ack-padding'),
        ('52.18.127.189:443>194.226.199.21:58155#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 7010, tcptrace 7009', 'ack-padding'),
        ('8.247.226.126:80>194.226.199.226:34101#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 1029, tcptrace 1028', 'ack-padding'),
    },
    'gh-ndpi__ndpi_match_string_subprotocol__error.pcapng': {
        ('*', 'connections', 'tshark'):
            ('ackreplay 2 connections, tshark 1', 'synack-reuse'),
        ('10.3.9.19:40632<>10.68.137.118:8091', 'connections', 'tshark'):
            ('ackreplay 2 connection(s) with data, tshark 1', 'synack-reuse'),
        ('10.3.9.19:40632>10.68.137.118:8091#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'synack-reuse'),
        ('10.3.9.19:40632>10.68.137.118:8091#1', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'synack-reuse'),
        ('10.3.9.19:40632>10.68.137.118:8091#1', 'unique_bytes', 'tcptrace'):
            ('ackreplay 522, tcptrace 2570', 'ip-length'),
        ('10.68.137.118:8091>10.3.9.19:40632#1', 'retransmissions', 'tcptrace'):
            ('ackreplay 1, tcptrace 0', 'fuzzed-ack'),
    },
    'gh-ndpi__quickplay.pcap.gz': {
        ('10.54.169.250:50668>120.28.35.41:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 125.946 ms, tcptrace 100.0 ms (unknown)', 'first-ack'),
        ('10.54.169.250:50668>120.28.35.41:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 125.946 ms, tshark 99.975 ms (unknown)', 'first-ack'),
        ('10.54.169.250:50669>120.28.35.41:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 250.580 ms, tcptrace 65.5 ms (unknown)', 'first-ack'),
        ('10.54.169.250:50669>120.28.35.41:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 250.580 ms, tshark 65.522 ms (unknown)', 'first-ack'),
        ('10.54.169.250:52017>120.28.35.40:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 2869.904 ms, tcptrace 2335.8 ms (unknown)', 'first-ack'),
        ('10.54.169.250:52017>120.28.35.40:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 2869.904 ms, tshark 2335.754 ms (unknown)', 'first-ack'),
        ('10.54.169.250:52018>120.28.35.40:80#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 2226.044 ms, tcptrace 2040.4 ms (unknown)', 'first-ack'),
        ('10.54.169.250:52018>120.28.35.40:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 2226.044 ms, tshark 2040.405 ms (unknown)', 'first-ack'),
    },
    'gh-ndpi__reasm_crash_anon.pcapng': {
        ('*', 'connections', 'tshark'):
            ('ackreplay 2 connections, tshark 1', 'fuzzed-rst'),
        ('10.209.8.148:21999<>192.168.145.147:51218', 'connections', 'tcptrace'):
            ('ackreplay 2 connection(s) with data, tcptrace 1', 'fuzzed-rst'),
        ('10.209.8.148:21999<>192.168.145.147:51218', 'connections', 'tshark'):
            ('ackreplay 2 connection(s) with data, tshark 1', 'fuzzed-rst'),
    },
    'gh-ndpi__rtsp.pcap.gz': {
        ('10.1.1.10:52478<>10.2.2.2:8554', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 1', 'tcptrace-rst'),
        ('*', 'connections', 'tshark'):
            ('ackreplay 8 connections, tshark 7', 'rst-same-isn'),
        ('10.1.1.10:52478>10.2.2.2:8554#0', 'goodput_bound', ''):
            ('goodput 129 bit/s > 127 (940 B in 59.023975 s)', 'rst-same-isn'),
        ('10.2.2.2:8554>10.1.1.10:52478#0', 'goodput_bound', ''):
            ('goodput 258 bit/s > 255 (1885 B in 59.023975 s)', 'rst-same-isn'),
    },
    'gh-ndpi__tls-appdata.pcap': {
        ('192.168.2.100:58976<>52.223.198.7:443', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 5', 'tcptrace-idle'),
        ('192.168.2.100:58976>52.223.198.7:443#0', 'retransmissions', 'tshark'):
            ('ackreplay 0, tshark 2', 'file-order'),
        ('52.223.198.7:443>192.168.2.100:58976#0', 'retransmissions', 'tshark'):
            ('ackreplay 0, tshark 4', 'file-order'),
    },
    'gh-ndpi__vnc.pcap': {
        ('*', 'connections', 'tshark'):
            ('ackreplay 2 connections, tshark 4', 'tshark-vnc-split'),
        ('192.168.2.110:6900<>95.237.48.208:51559', 'connections', 'tshark'):
            ('ackreplay 1 connection(s) with data, tshark 2', 'tshark-vnc-split'),
        ('192.168.2.110:6900<>95.237.48.208:59791', 'connections', 'tshark'):
            ('ackreplay 1 connection(s) with data, tshark 2', 'tshark-vnc-split'),
    },
    'gh-ndpi__whatsappfiles.pcap': {
        ('192.168.2.29:49674>185.60.216.53:443#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 24, tcptrace 22', 'hole-fill'),
    },
    'gh-tcpdump__bigtcp-ipv6.pcap.gz': {
        ('*', 'connections', 'tshark'):
            ('ackreplay 1 connections, tshark 0', 'bigtcp-ipv6'),
        ('[2604:1380:4091:ce00::b]:43267<>[2604:1380:4091:ce00::d]:41219', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 0', 'bigtcp-ipv6'),
        ('[2604:1380:4091:ce00::b]:43267<>[2604:1380:4091:ce00::d]:41219', 'connections', 'tshark'):
            ('ackreplay 1 connection(s) with data, tshark 0', 'bigtcp-ipv6'),
    },
    'gh-tcpdump__of13_ericsson.pcapng.gz': {
        ('127.0.0.1:34887<>127.0.0.1:6633', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 3', 'tcptrace-idle'),
        ('127.0.0.1:51984<>127.0.0.1:6633', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 2', 'tcptrace-idle'),
        ('127.0.0.1:51987<>127.0.0.1:6633', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 3', 'tcptrace-idle'),
        ('127.0.0.1:58445<>127.0.0.1:6633', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 2', 'tcptrace-idle'),
        ('127.0.0.1:6633>127.0.0.1:34887#0', 'rtt_min', 'tshark'):
            ('ackreplay 1.984 ms, tshark 1.772 ms (unknown)', 'first-ack'),
        ('127.0.0.1:6633>127.0.0.1:36547#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 0.955 ms, tcptrace 0.8 ms (sender)', 'first-ack'),
        ('127.0.0.1:6633>127.0.0.1:36547#0', 'rtt_min', 'tshark'):
            ('ackreplay 0.955 ms, tshark 0.772 ms (sender)', 'first-ack'),
        ('127.0.0.1:6633>127.0.0.1:51984#0', 'rtt_min', 'tshark'):
            ('ackreplay 0.968 ms, tshark 0.596 ms (unknown)', 'first-ack'),
        ('127.0.0.1:6633>127.0.0.1:58449#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 2.848 ms, tcptrace 2.2 ms (unknown)', 'first-ack'),
        ('127.0.0.1:6633>127.0.0.1:58449#0', 'rtt_min', 'tshark'):
            ('ackreplay 2.848 ms, tshark 2.194 ms (unknown)', 'first-ack'),
    },
    'gh-zeek__ftp_bigtransfer.pcap': {
        ('192.168.56.101:37150>192.168.56.1:59764#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'tcptrace-32bit'),
        ('192.168.56.101:37150>192.168.56.1:59764#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 23822, tcptrace 23070', 'tcptrace-32bit'),
    },
    'gh-zeek__krb_kerberos_tso.pcapng.gz': {
        ('172.16.0.211:49811>172.16.0.5:445#0', 'data_segments', 'tcptrace'):
            ('ackreplay 37, tcptrace 36', 'tcptrace-tso'),
        ('172.16.0.211:49811>172.16.0.5:445#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 7445, tcptrace 5538', 'tcptrace-tso'),
        ('172.16.0.211:49814>172.16.0.100:88#0', 'flows', 'tcptrace'):
            ('flow only in ackreplay', 'tcptrace-tso'),
        ('172.16.0.211:49815>172.16.0.100:445#0', 'data_segments', 'tcptrace'):
            ('ackreplay 8, tcptrace 7', 'tcptrace-tso'),
        ('172.16.0.211:49815>172.16.0.100:445#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 4153, tcptrace 875', 'tcptrace-tso'),
        ('172.16.0.211:49821>172.16.0.100:445#0', 'data_segments', 'tcptrace'):
            ('ackreplay 18, tcptrace 17', 'tcptrace-tso'),
        ('172.16.0.211:49821>172.16.0.100:445#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 5612, tcptrace 2367', 'tcptrace-tso'),
        ('172.16.0.211:49822>172.16.0.100:88#0', 'flows', 'tcptrace'):
            ('flow only in ackreplay', 'tcptrace-tso'),
        ('172.16.0.211:49827>172.16.0.5:445#0', 'data_segments', 'tcptrace'):
            ('ackreplay 37, tcptrace 36', 'tcptrace-tso'),
        ('172.16.0.211:49827>172.16.0.5:445#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 7445, tcptrace 5538', 'tcptrace-tso'),
        ('172.16.0.211:49830>172.16.0.100:88#0', 'flows', 'tcptrace'):
            ('flow only in ackreplay', 'tcptrace-tso'),
    },
    'gh-zeek__ldap_modify-request.pcapng': {
        ('*', 'unreadable', 'tcptrace'):
            ('tcptrace read no TCP connection', 'tcptrace-unreadable'),
    },
    'gh-zeek__modbus_fuzz-72.pcap': {
        ('166.161.16.230:502>192.168.66.235:2582#0', 'bytes_sent', 'tshark'):
            ('ackreplay 1979711718, tshark 96', 'fuzzed-seq'),
        ('166.161.16.230:502>192.168.66.235:2582#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 8, tcptrace 0', 'fuzzed-seq'),
        ('166.161.16.230:502>192.168.66.235:2582#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 46.984 ms, tcptrace 15.8 ms (unknown)', 'fuzzed-seq'),
        ('166.161.16.230:502>192.168.66.235:2582#0', 'rtt_min', 'tshark'):
            ('ackreplay 46.984 ms, tshark 15.849 ms (unknown)', 'fuzzed-seq'),
        ('166.161.16.230:502>192.168.66.235:2582#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 105, tcptrace 108', 'fuzzed-seq'),
        ('192.168.66.235:2582>166.161.16.230:502#0', 'bytes_sent', 'tshark'):
            ('ackreplay 384, tshark 468', 'fuzzed-seq'),
        ('192.168.66.235:2582>166.161.16.230:502#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 6, tcptrace 5', 'fuzzed-seq'),
        ('192.168.66.235:2582>166.161.16.230:502#0', 'retransmissions', 'tshark'):
            ('ackreplay 6, tshark 3', 'fuzzed-seq'),
        ('192.168.66.235:2582>166.161.16.230:502#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 248, tcptrace 35272', 'fuzzed-seq'),
    },
    'gh-zeek__nflog-http.pcap': {
        ('*', 'unreadable', 'tcptrace'):
            ('tcptrace read no TCP connection', 'tcptrace-unreadable'),
    },
    'gh-zeek__pppoe-over-qinq.pcap': {
        ('*', 'unreadable', 'tcptrace'):
            ('tcptrace read no TCP connection', 'tcptrace-unreadable'),
    },
    'gh-zeek__smb_smb3_multichannel.pcap': {
        ('172.17.0.184:57092>172.17.0.189:445#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 5', 'tcptrace-keepalive'),
        ('172.17.0.184:57093>172.17.0.189:445#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 5', 'tcptrace-keepalive'),
        ('172.17.0.184:57094>172.17.0.189:445#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 5', 'tcptrace-keepalive'),
        ('172.17.0.184:57095>172.17.0.189:445#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 5', 'tcptrace-keepalive'),
        ('172.17.0.189:445>172.17.0.184:57092#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'tcptrace-keepalive'),
        ('172.17.0.189:445>172.17.0.184:57093#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'tcptrace-keepalive'),
        ('172.17.0.189:445>172.17.0.184:57094#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'tcptrace-keepalive'),
        ('172.17.0.189:445>172.17.0.184:57095#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 0, tcptrace 1', 'tcptrace-keepalive'),
    },
    'gh-zeek__ssh_kex-quadratic-1000.pcap.gz': {
        ('*', 'unreadable', 'tcptrace'):
            ('tcptrace read no TCP connection', 'tcptrace-unreadable'),
    },
    'gh-zeek__tcp_reassembly.pcap': {
        ('63.193.213.194:2564>128.3.97.175:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 17, tcptrace 14', 'hole-fill'),
        ('63.193.213.194:2564>128.3.97.175:80#0', 'unique_bytes', 'tcptrace'):
            ('ackreplay 28832, tcptrace 28876', 'ip-length'),
    },
    'gh-zeek__tcp_retransmit-fast009.pcap': {
        ('192.168.0.27:80>10.0.88.85:50368#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 111.143 ms, tcptrace 185.4 ms (sender)', 'uneven-acks'),
        ('192.168.0.27:80>10.0.88.85:50368#0', 'rtt_min', 'tshark'):
            ('ackreplay 111.143 ms, tshark 185.385 ms (sender)', 'uneven-acks'),
    },
    'gh-zeek__tcp_rst-inject-rae.pcap': {
        ('1.2.0.2:2527<>1.2.0.3:6649', 'connections', 'tcptrace'):
            ('ackreplay 1 connection(s) with data, tcptrace 1', 'tcptrace-rst'),
    },
    'gh-zeek__tcp_ssh-dups.pcap.gz': {
        ('192.168.0.112:22>192.168.0.102:53206#0', 'rtt_min', 'tcptrace'):
            ('ackreplay 0.076 ms, tcptrace 0.2 ms (sender)', 'copies-rtt'),
        ('192.168.0.112:22>192.168.0.102:53206#0', 'rtt_min', 'tshark'):
            ('ackreplay 0.076 ms, tshark 0.071 ms (sender)', 'copies-rtt'),
    },
    'gh-zeek__tls_openjdk-25.0.2-zeek.org.pcap': {
        ('*', 'unreadable', 'tcptrace'):
            ('tcptrace read no TCP connection', 'tcptrace-unreadable'),
    },
    'gh-zeek__vlan-collisions.pcap': {
        ('141.142.228.5:59856>192.150.187.43:80#0', 'data_segments', 'tcptrace'):
            ('ackreplay 3, tcptrace 2', 'tcptrace-qinq'),
        ('141.142.228.5:59856>192.150.187.43:80#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 6, tcptrace 3', 'tcptrace-qinq'),
        ('141.142.228.5:59856>192.150.187.43:80#0', 'rtt_min', 'tshark'):
            ('ackreplay 68.982 ms, tshark 18.982 ms (sender)', 'copies-rtt'),
        ('192.150.187.43:80>141.142.228.5:59856#0', 'data_segments', 'tcptrace'):
            ('ackreplay 12, tcptrace 8', 'tcptrace-qinq'),
        ('192.150.187.43:80>141.142.228.5:59856#0', 'retransmissions', 'tcptrace'):
            ('ackreplay 12, tcptrace 6', 'tcptrace-qinq'),
    },
}

#: Differences caused by the bugs in BUG_TEXT: capture → {(flow, check, tool): the bug}. Their tests are expected to
#: fail (strict: once the bug is fixed they pass, and then its entries must go).
BUGS: dict[str, dict[Finding, str]] = {
}


class KnownBug(AssertionError):
    """Only the differences :data:`BUGS` lists were found."""


def check(path: Path, found: dict[Finding, str], family: Iterable[str]) -> None:
    family = set(family)
    explained = {k: v for k, v in EXPLAINED.get(path.name, {}).items() if k[1] in family}
    bugs = {k: v for k, v in BUGS.get(path.name, {}).items() if k[1] in family}
    new = {k: v for k, v in found.items() if k not in bugs and (k not in explained or explained[k][0] != v)}
    gone = sorted(k for k in explained if k not in found)
    lines = [f"{f} {c} {t}: {v}" for (f, c, t), v in sorted(new.items())]
    lines += [f"{f} {c} {t}: listed in EXPLAINED, no longer found" for f, c, t in gone]
    assert not lines, f"{path.name}: new differences\n" + "\n".join(lines)
    present = sorted(k for k in bugs if k in found)
    if present:
        raise KnownBug("; ".join(f"{f} {c} {t}: {found[(f, c, t)]} ({bugs[(f, c, t)]})" for f, c, t in present))


TOOL_CHECKS = ("connections", "flows", "unreadable", "data_segments", "unique_bytes", "bytes_sent", "retransmissions",
               "rtt_min")
INVARIANTS = ("bytes_bound", "goodput_bound", "rtt_base")


def params(paths: list[Path], family: Iterable[str]) -> list:
    family = set(family)
    out = []
    for p in paths:
        bugs = sorted({v for k, v in BUGS.get(p.name, {}).items() if k[1] in family})
        reason = "; ".join(f"bug {b}: {BUG_TEXT[b]}" for b in bugs)
        marks = [pytest.mark.xfail(strict=True, raises=KnownBug, reason=reason)] if bugs else []
        out.append(pytest.param(p, marks=marks, id=p.name))
    return out


PUBLIC_CAPTURES = captures_in(PUBLIC)
EXTRA_CAPTURES = extra_captures()
needs_extra = pytest.mark.skipif(not EXTRA_CAPTURES, reason=f"{EXTRA_ENV} names no folder of captures")


def test_public_set_is_large_and_documented():
    """At least 20 captures, under 15 MB, each with its provenance in MANIFEST.md and its checksum in SHA256SUMS."""
    assert len(PUBLIC_CAPTURES) >= 20
    assert sum(p.stat().st_size for p in PUBLIC_CAPTURES) < 15_000_000
    manifest = (PUBLIC / "MANIFEST.md").read_text()
    sums = dict(reversed(line.split()) for line in (PUBLIC / "SHA256SUMS").read_text().splitlines())
    for p in PUBLIC_CAPTURES:
        assert f"`{p.name}`" in manifest, p.name
        assert sums.pop(p.name) == hashlib.sha256(p.read_bytes()).hexdigest(), p.name
    assert not sums, f"listed in SHA256SUMS, missing: {sorted(sums)}"
    for name in (*EXPLAINED, *BUGS):  # a capture of the extra set: checked against the folder when it is given
        assert name in {p.name for p in PUBLIC_CAPTURES + EXTRA_CAPTURES} or (
            not EXTRA_CAPTURES and name in EXTRA_NAMES), f"{name}: no such capture"


@pytest.mark.parametrize("path", params(PUBLIC_CAPTURES, TOOL_CHECKS))
def test_flows_agree_with_tcptrace_and_tshark(path):
    check(path, tool_findings(path), TOOL_CHECKS)


@pytest.mark.parametrize("path", params(PUBLIC_CAPTURES, INVARIANTS))
def test_flows_keep_the_invariants(path):
    check(path, invariant_findings(path), INVARIANTS)


@needs_extra
@pytest.mark.parametrize("path", params(EXTRA_CAPTURES, TOOL_CHECKS))
def test_extra_flows_agree_with_tcptrace_and_tshark(path):
    check(path, tool_findings(path), TOOL_CHECKS)


@needs_extra
@pytest.mark.parametrize("path", params(EXTRA_CAPTURES, INVARIANTS))
def test_extra_flows_keep_the_invariants(path):
    check(path, invariant_findings(path), INVARIANTS)
