"""Write a large synthetic pcap for benchmarks: many concurrent TCP flows, vectorised (numpy).

Two shapes, neither with a handshake:

- units (the default): each flow repeats "data, data, ACK" units (MSS 1448, timestamps option, snaplen 128
  as tcpdump -s 128 writes them), the flows' units taken in turn; every 400th unit of a flow
  (``--loss-every`` segments, default 800) retransmits an older segment, and some flows start just below
  the 32-bit sequence wrap;
- ``--packets-per-flow LO:HI``, the shape of a backbone trace: each of ``--flows`` flows holds a random
  LO–HI packets (two data segments, then an ACK of all data so far, and so on; a flow of two packets is one
  segment and its ACK), starts at a random time within ``--duration`` seconds and sends at its own pace
  (0.1–50 ms between its packets, log-uniform), the flows interleaved in time.

Flow k is client 10.0.0.1 port 40000 + k up to k = 25 535, then the next client address (10.0.1.1, 10.0.2.1,
…) with ports from 40000 again — a distinct 4-tuple for every flow; server 10.0.0.2 port 5201. Usage:
``python -m bench.make_capture OUT.pcap [--packets N] [--flows F] [--loss-every SEGMENTS]
[--packets-per-flow LO:HI [--duration SECONDS]]``.
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import numpy as np

MSS = 1448
SNAPLEN = 128
HDR = 14 + 20 + 32  # Ethernet + IPv4 + TCP with NOP NOP TS
DATA_CAP = SNAPLEN
ACK_CAP = HDR
SERVER, SERVER_PORT = 0x0A000002, 5201
CLIENT_PORT0 = 40000
PORTS_PER_CLIENT = 65536 - CLIENT_PORT0  # client ports 40000..65535 on each client address
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, 1)


def client_endpoint(flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Client address and port of each flow: 10.0.0.1 port 40000 + k for the first 25 536 flows (the
    bytes the generator always wrote for them), then 10.0.1.1, 10.0.2.1, … (carrying into the second
    octet) with ports from 40000 again."""
    block = flow // PORTS_PER_CLIENT
    return 0x0A000001 + (block << 8), CLIENT_PORT0 + flow % PORTS_PER_CLIENT


def _frames(n: int, caplen: int, origlen: int) -> np.ndarray:
    dt = np.dtype([
        ("sec", "<u4"), ("usec", "<u4"), ("caplen", "<u4"), ("origlen", "<u4"),
        ("eth", "u1", (12,)), ("etype", ">u2"),
        ("vihl", "u1"), ("tos", "u1"), ("tot", ">u2"), ("id", ">u2"), ("frag", ">u2"), ("ttl", "u1"),
        ("proto", "u1"), ("csum", ">u2"), ("src", ">u4"), ("dst", ">u4"),
        ("sport", ">u2"), ("dport", ">u2"), ("seq", ">u4"), ("ack", ">u4"), ("off", "u1"), ("flags", "u1"),
        ("win", ">u2"), ("tcsum", ">u2"), ("urg", ">u2"), ("nop", "u1", (2,)), ("tskind", "u1"),
        ("tslen", "u1"), ("tsval", ">u4"), ("tsecr", ">u4"), ("payload", "u1", (caplen - HDR,)),
    ])
    f = np.zeros(n, dt)
    f["caplen"] = caplen
    f["origlen"] = origlen
    f["eth"] = list(b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01")
    f["etype"] = 0x0800
    f["vihl"] = 0x45
    f["tot"] = origlen - 14
    f["ttl"] = 64
    f["proto"] = 6
    f["off"] = 8 << 4
    f["flags"] = 0x10
    f["win"] = 3000
    f["nop"] = 1
    f["tskind"] = 8
    f["tslen"] = 10
    return f


def generate(path: Path, packets: int, flows: int = 64, seed: int = 7, loss_every: int = 800) -> int:
    rng = np.random.default_rng(seed)
    units = packets // 3
    k = np.arange(units, dtype=np.int64)
    flow = k % flows
    j = k // flows  # unit index inside the flow
    isn = rng.integers(0, 2**32, flows, dtype=np.int64)
    isn[: flows // 4] = 2**32 - 50 * MSS  # a quarter of the flows wrap early
    t_us = 1_700_000_000_000_000 + k * 30
    seq1 = isn[flow] + 2 * j * MSS
    period = max(2, loss_every // 2)  # units (two data segments each) between retransmissions
    retx = (j % period == period - 1)
    seq1 = np.where(retx, isn[flow] + 2 * (j - 50) * MSS, seq1)
    seq2 = isn[flow] + (2 * j + 1) * MSS
    ack = isn[flow] + np.maximum(0, 2 * (j - 10) + 2) * MSS
    cip, cport = client_endpoint(flow)
    d1 = _frames(units, DATA_CAP, HDR + MSS)
    d2 = _frames(units, DATA_CAP, HDR + MSS)
    a = _frames(units, ACK_CAP, ACK_CAP)
    for f, dt, seq_v, is_ack in ((d1, 0, seq1, False), (d2, 10, seq2, False), (a, 20, ack, True)):
        t = t_us + dt
        f["sec"] = t // 1_000_000
        f["usec"] = t % 1_000_000
        f["src"] = SERVER if is_ack else cip
        f["dst"] = cip if is_ack else SERVER
        f["sport"] = SERVER_PORT if is_ack else cport
        f["dport"] = cport if is_ack else SERVER_PORT
        f["id"] = (k & 0xFFFF)
        ts = (t // 1000) & 0xFFFFFFFF
        if is_ack:
            f["seq"] = 1
            f["ack"] = seq_v & 0xFFFFFFFF
            f["tsval"] = ts
            f["tsecr"] = ts - 40
        else:
            f["seq"] = seq_v & 0xFFFFFFFF
            f["ack"] = 1
            f["tsval"] = ts
            f["tsecr"] = ts - 40
    with open(path, "wb") as fh:
        fh.write(PCAP_HEADER)
        step = 200_000
        for s in range(0, units, step):
            e = min(units, s + step)
            b1 = d1[s:e].view(np.uint8).reshape(e - s, -1)
            b2 = d2[s:e].view(np.uint8).reshape(e - s, -1)
            b3 = a[s:e].view(np.uint8).reshape(e - s, -1)
            fh.write(np.concatenate([b1, b2, b3], axis=1).tobytes())
    return 3 * units


def _mix_sizes(rng: np.random.Generator, flows: int, lo: int, hi: int) -> np.ndarray:
    return rng.integers(lo, hi + 1, flows)


def mix_packets(flows: int, lo: int = 2, hi: int = 20, seed: int = 7) -> int:
    """How many packets ``generate_mix`` writes for these arguments (without writing them)."""
    return int(_mix_sizes(np.random.default_rng(seed), flows, lo, hi).sum())


def generate_mix(path: Path, flows: int, lo: int = 2, hi: int = 20, seed: int = 7, duration_s: float = 60.0) -> int:
    """The backbone shape: ``flows`` flows of a random ``lo``–``hi`` packets each, interleaved in time.

    Packet i of a flow is a data segment unless it closes a unit of three (i % 3 == 2: an ACK of every segment
    before it) or closes a flow of two packets (its ACK); an ACK echoes the timestamp of the segment before it
    (one RTT sample of the flow's pace). Columns are built for all packets, put in time order once, and the
    frames written in chunks. Returns the number of packets."""
    if not 2 <= lo <= hi:
        raise ValueError(f"packets per flow {lo}:{hi}: need 2 <= LO <= HI")
    rng = np.random.default_rng(seed)
    n = _mix_sizes(rng, flows, lo, hi)
    start = rng.integers(0, max(1, int(duration_s * 1e6)), flows)
    gap = np.exp(rng.uniform(np.log(100), np.log(50_000), flows)).astype(np.int64)  # µs between its packets
    isn = rng.integers(0, 2**32, flows, dtype=np.int64)
    total = int(n.sum())
    flow = np.repeat(np.arange(flows, dtype=np.int64), n)
    i = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)  # packet index in its flow
    t = start[flow] + i * gap[flow]
    order = np.argsort(t, kind="stable")  # a flow's packets are in order already: ties keep it
    flow, i, t = flow[order], i[order], t[order]
    del order
    t += 1_700_000_000_000_000
    record = 16 + DATA_CAP
    with open(path, "wb") as fh:
        fh.write(PCAP_HEADER)
        step = 500_000
        for s in range(0, total, step):
            fl, ii, tt = flow[s:s + step], i[s:s + step], t[s:s + step]
            m = len(fl)
            r = ii % 3
            is_ack = (r == 2) | ((n[fl] == 2) & (ii == 1))
            # segments sent before this packet: two a unit, then the unit's own so far
            sent = 2 * (ii // 3) + np.minimum(r, 2)
            f = _frames(m, DATA_CAP, HDR + MSS)
            f["caplen"][is_ack] = ACK_CAP
            f["origlen"][is_ack] = ACK_CAP
            f["tot"][is_ack] = ACK_CAP - 14
            cip, cport = client_endpoint(fl)
            f["src"] = np.where(is_ack, SERVER, cip)
            f["dst"] = np.where(is_ack, cip, SERVER)
            f["sport"] = np.where(is_ack, SERVER_PORT, cport)
            f["dport"] = np.where(is_ack, cport, SERVER_PORT)
            f["id"] = (s + np.arange(m)) & 0xFFFF
            f["sec"] = tt // 1_000_000
            f["usec"] = tt % 1_000_000
            seq = (isn[fl] + sent * MSS) & 0xFFFFFFFF
            f["seq"] = np.where(is_ack, 1, seq)
            f["ack"] = np.where(is_ack, seq, 1)
            ts = (tt // 1000) & 0xFFFFFFFF
            f["tsval"] = ts
            f["tsecr"] = np.where(is_ack, ((tt - gap[fl]) // 1000) & 0xFFFFFFFF, ts - 40)
            keep = np.ones((m, record), bool)  # ACK records cut to their caplen
            keep[is_ack, 16 + ACK_CAP:] = False
            fh.write(f.view(np.uint8)[keep.reshape(-1)].data)  # (a flat mask: ~5x faster than a 2-D one)
    return total


def parse_range(text: str) -> tuple[int, int]:
    """``LO:HI`` (or ``N`` for exactly N) packets per flow."""
    lo, _, hi = text.partition(":")
    return int(lo), int(hi or lo)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--packets", type=int, default=3_000_000, help="packets in all (the units shape)")
    ap.add_argument("--flows", type=int, default=64)
    ap.add_argument("--loss-every", type=int, default=800, help="data segments between retransmissions")
    ap.add_argument("--packets-per-flow", type=parse_range, metavar="LO:HI",
                    help="the backbone shape: each flow a random LO-HI packets, interleaved in time (--packets "
                         "and --loss-every do not apply)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds over which the backbone's flows start")
    args = ap.parse_args()
    if args.packets_per_flow:
        lo, hi = args.packets_per_flow
        n = generate_mix(args.out, args.flows, lo, hi, duration_s=args.duration)
    else:
        n = generate(args.out, args.packets, args.flows, loss_every=args.loss_every)
    print(f"wrote {n} packets to {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()


def ensure(path: Path, packets: int, flows: int = 64, loss_every: int = 800,
           packets_per_flow: tuple[int, int] | None = None) -> None:
    """Create the capture if missing, in a child process: a benchmark process that grew while writing it
    would inflate the peak RSS the kernel reports for the children it forks later. Written under another
    name and renamed when whole, so that an interrupted run leaves no truncated capture to be reused.
    With ``packets_per_flow`` (LO, HI), the backbone shape of ``flows`` flows (``packets`` does not apply)."""
    if path.exists():
        return
    import subprocess
    import sys

    part = path.with_name(path.name + ".part")
    shape = (["--packets-per-flow", f"{packets_per_flow[0]}:{packets_per_flow[1]}"] if packets_per_flow else
             ["--packets", str(packets), "--loss-every", str(loss_every)])
    subprocess.run([sys.executable, "-m", "bench.make_capture", str(part), "--flows", str(flows), *shape],
                   check=True, cwd=Path(__file__).resolve().parents[1])
    part.replace(path)
