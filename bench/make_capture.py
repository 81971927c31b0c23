"""Write a large synthetic pcap for benchmarks: many concurrent bulk TCP flows, vectorised (numpy).

Each flow repeats "data, data, ACK" units (MSS 1448, timestamps option, snaplen 128 as tcpdump -s 128
writes them); every 400th unit of a flow (``--loss-every`` segments, default 800) retransmits an older
segment, and some flows start just below the 32-bit sequence wrap. Usage:
``python -m bench.make_capture OUT.pcap [--packets N] [--flows F] [--loss-every SEGMENTS]``.
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
    cport = 40000 + flow
    d1 = _frames(units, DATA_CAP, HDR + MSS)
    d2 = _frames(units, DATA_CAP, HDR + MSS)
    a = _frames(units, ACK_CAP, ACK_CAP)
    for f, dt, seq_v, is_ack in ((d1, 0, seq1, False), (d2, 10, seq2, False), (a, 20, ack, True)):
        t = t_us + dt
        f["sec"] = t // 1_000_000
        f["usec"] = t % 1_000_000
        src, dst = (0x0A000002, 0x0A000001) if is_ack else (0x0A000001, 0x0A000002)
        f["src"] = src
        f["dst"] = dst
        f["sport"] = 5201 if is_ack else cport
        f["dport"] = cport if is_ack else 5201
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
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, 1))
        step = 200_000
        for s in range(0, units, step):
            e = min(units, s + step)
            b1 = d1[s:e].view(np.uint8).reshape(e - s, -1)
            b2 = d2[s:e].view(np.uint8).reshape(e - s, -1)
            b3 = a[s:e].view(np.uint8).reshape(e - s, -1)
            fh.write(np.concatenate([b1, b2, b3], axis=1).tobytes())
    return 3 * units


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--packets", type=int, default=3_000_000)
    ap.add_argument("--flows", type=int, default=64)
    ap.add_argument("--loss-every", type=int, default=800, help="data segments between retransmissions")
    args = ap.parse_args()
    n = generate(args.out, args.packets, args.flows, loss_every=args.loss_every)
    print(f"wrote {n} packets to {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()


def ensure(path: Path, packets: int, flows: int = 64, loss_every: int = 800) -> None:
    """Create the capture if missing, in a child process: a benchmark process that grew while writing it
    would inflate the peak RSS the kernel reports for the children it forks later."""
    if path.exists():
        return
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "bench.make_capture", str(path), "--packets", str(packets), "--flows",
                    str(flows), "--loss-every", str(loss_every)], check=True, cwd=Path(__file__).resolve().parents[1])
