#!/usr/bin/env python3
"""Keep the first SECONDS of a pcap (every packet up to its first timestamp + SECONDS), so that a testbed pair
kept as test data stays small; with T0, from that absolute time instead (cut both ends of a pair at the same
instant: the first run prints the T0 it used).

    cut_pcap.py IN.pcap OUT.pcap SECONDS [T0]

Standard library only (pcap with µs or ns timestamps, either byte order)."""

from __future__ import annotations

import struct
import sys


def cut(src: str, dst: str, seconds: float, t0: float | None = None) -> float:
    with open(src, "rb") as f, open(dst, "wb") as g:
        head = f.read(24)
        magic = head[:4]
        order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
                 b"\xa1\xb2\x3c\x4d": ">"}.get(magic)
        if order is None:
            raise SystemExit(f"{src}: not a pcap file")
        scale = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        g.write(head)
        while len(rec := f.read(16)) == 16:
            sec, frac, caplen, _ = struct.unpack(order + "IIII", rec)
            ts = sec + frac * scale
            if t0 is None:
                t0 = ts
            if ts > t0 + seconds:
                break
            g.write(rec + f.read(caplen))
    return t0 if t0 is not None else 0.0


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    start = float(sys.argv[4]) if len(sys.argv) == 5 else None
    print(f"{cut(sys.argv[1], sys.argv[2], float(sys.argv[3]), start):.6f}")
