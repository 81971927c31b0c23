"""Linux CUBIC's HyStart (``tcp_cubic.c`` as of Linux 6.x) replayed over a sender-side capture's own ACK stream:
``python -m tests.whatif.hystart_replay CAPTURE [--port 40001] [--no-halving] [--early-rounds]`` prints how many
segments the receiver's ACKs covered through the first slow start, and where each HyStart test would have ended
it, with the RTT sample of the first and of the last segment each ACK newly covers. docs/whatif.md ("The end of
the first slow start") reads it beside the kernel's own counters (tests/data/kernel/nosack_mib, r5_mib).

The replay follows the kernel: ``cubictcp_acked`` feeds every ACK's RTT sample to delay_min, and ``hystart_update``
(with its round reset when snd_una passes the round's end, snd_nxt at the reset) only from a cwnd of 16, as Linux
5.7–6.13 — with ``--early-rounds`` the round reset from the first ACK on and the tests from a cwnd of 16, as Linux
6.14 on ("tcp_cubic: fix incorrect HyStart round start detection"), which on the testbed's captures gives the
kernel's own exits (tests/whatif/test_hystart_replay.py); the ACK train: ACKs no more than 2 ms apart have run,
since the round's first, longer than delay_min/2 (no pacing; with ``--no-halving``, delay_min plus 1 ms, as for a
socket marked for pacing); the delay test: the least RTT of the round's samples after its first 8 above
delay_min plus delay_min/8 clamped to [4, 16] ms. cwnd is counted as the kernel's slow start grows it, by the
segments each ACK newly acknowledges. An approximation of the kernel's state: the
capture's clock for the kernel's, the segments for its skbs (the testbed's offloads are off)."""

from __future__ import annotations

import argparse
import bisect
import gzip
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import dpkt

LOW_WINDOW = 16
ACK_DELTA_S = 0.002
MIN_SAMPLES = 8
SPAN_ACKS = 10


class Ack(NamedTuple):
    t: float  # arrival at the sender (s, from the first data segment)
    segments: int  # newly acknowledged
    rtt_first: float  # RTT of the first newly acknowledged segment (s)
    rtt_last: float  # of the last
    snd_nxt: int  # the highest byte sent before it (relative)
    una: int  # its cumulative ACK (relative)


class Exit(NamedTuple):
    test: str
    cwnd: int
    t: float


class SlowStartEnd(NamedTuple):
    t: float  # the ACK from which the sender stopped doubling (s, from the first data segment)
    outstanding: float  # segments sent and not yet acknowledged then


def _packets(path: Path) -> list[tuple[float, dpkt.tcp.TCP, int]]:
    with (gzip.open(path) if path.suffix == ".gz" else path.open("rb")) as fh:
        out = []
        for ts, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                out.append((ts, ip.data, ip.len - ip.hl * 4 - ip.data.off * 4))
    return out


def acks_of(path: Path, port: int, mss: int = 1448) -> list[Ack]:
    """The ACKs of new data the sender on ``port`` received, with their RTT samples (first transmissions)."""
    pk = _packets(path)
    data = [(ts, tcp, n) for ts, tcp, n in pk if tcp.sport == port and n > 0]
    isn, t0 = data[0][1].seq, data[0][0]
    first_sent: dict[int, float] = {}
    times, highest, top = [], [], 0
    for ts, tcp, n in data:
        end = ((tcp.seq - isn) & 0xFFFFFFFF) + n
        first_sent.setdefault(end, ts)
        top = max(top, end)
        times.append(ts)
        highest.append(top)
    ends = sorted(first_sent)
    una, out = 0, []
    for ts, tcp, _ in pk:
        ack = (tcp.ack - isn) & 0xFFFFFFFF
        if tcp.dport != port or not tcp.flags & dpkt.tcp.TH_ACK or not una < ack < 1 << 31:
            continue
        covered = ends[bisect.bisect_right(ends, una):bisect.bisect_right(ends, ack)]
        i = bisect.bisect_right(times, ts) - 1
        if covered:
            out.append(Ack(ts - t0, round((ack - una) / mss), ts - first_sent[covered[0]],
                           ts - first_sent[covered[-1]], highest[i] if i >= 0 else 0, ack))
        una = ack
    return out


def hystart_exit(acks: list[Ack], last: bool = True, halving: bool = True, train: bool = True,
                 early_rounds: bool = False) -> Exit | None:
    """Where Linux's HyStart would have ended slow start on these ACKs (None: neither test fired; ``train``
    False: the delay test alone; ``early_rounds``: rounds from the first ACK on, whatever cwnd, as Linux 6.14 on
    reset them — before 6.14 only from a cwnd of 16)."""
    cwnd, dmin, end = 10, 0.0, -1
    start = last_ack = curr = 0.0
    count = 0
    for a in acks:
        rtt = a.rtt_last if last else a.rtt_first
        dmin = rtt if dmin == 0.0 else min(dmin, rtt)
        if early_rounds and cwnd < LOW_WINDOW and a.una > end:
            start, last_ack, end, curr, count = a.t, a.t, a.snd_nxt, float("inf"), 0
        if cwnd >= LOW_WINDOW:
            if a.una > end:
                start, last_ack, end, curr, count = a.t, a.t, a.snd_nxt, float("inf"), 0
            if train and a.t - last_ack <= ACK_DELTA_S:
                last_ack = a.t
                if a.t - start > (dmin / 2 if halving else dmin + 0.001):
                    return Exit("train", cwnd, a.t)
            curr = min(curr, rtt)
            if count < MIN_SAMPLES:
                count += 1
            elif curr > dmin + min(max(dmin / 8, 0.004), 0.016):
                return Exit("delay", cwnd, a.t)
        cwnd += a.segments
    return None


def slow_start_end(acks: list[Ack], mss: int = 1448, span: int = SPAN_ACKS) -> SlowStartEnd | None:
    """Where the captured sender's first slow start ended, as its capture shows it: the first ACK from which the
    segments it sent over the next ``span`` ACKs of new data are at most 1.25 times those they acknowledged (slow
    start sends two for each, congestion avoidance one), with at least 32 segments outstanding (past the first
    rounds, whose paced trains leave gaps in the ACK clock). None: it never stopped doubling."""
    for a, b in zip(acks, acks[span:], strict=False):
        acked, sent = b.una - a.una, b.snd_nxt - a.snd_nxt
        if acked > 0 and sent <= 1.25 * acked and a.snd_nxt - a.una >= 2 * LOW_WINDOW * mss:
            return SlowStartEnd(a.t, (a.snd_nxt - a.una) / mss)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("--port", type=int, default=40001, help="the sender's port (the testbed's first flow)")
    ap.add_argument("--no-halving", action="store_true", help="the ACK train's threshold of a paced socket")
    ap.add_argument("--mss", type=int, default=1448, help="the flow's segment size (1460 without timestamps)")
    ap.add_argument("--early-rounds", action="store_true",
                    help="rounds from the first ACK on, whatever cwnd (Linux 6.14 on)")
    args = ap.parse_args()
    acks = acks_of(args.capture, args.port, args.mss)
    early = [a.segments for a in acks if a.t < 0.35]
    print(f"ACKs of new data in the first 0.35 s: {len(early)}, segments each: {dict(Counter(early))}")
    for last in (False, True):
        print(f"sample of the {'last' if last else 'first'} segment: both tests",
              hystart_exit(acks, last, not args.no_halving, early_rounds=args.early_rounds), "| the delay test alone",
              hystart_exit(acks, last, not args.no_halving, train=False, early_rounds=args.early_rounds))
    print("the sender's own first slow start ended (sending one segment per segment acknowledged):",
          slow_start_end(acks, args.mss))


if __name__ == "__main__":
    main()
