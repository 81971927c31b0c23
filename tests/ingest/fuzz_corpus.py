"""Seeded mutations of small valid captures, shared by the fuzz tests (and runnable on its own:
``python -m tests.ingest.fuzz_corpus N`` ingests N mutants and exits non-zero on any non-typed error).
"""

from __future__ import annotations

import contextlib
import random
import sys
import tempfile
from pathlib import Path

from ackreplay.ingest import IngestError, ingest_capture
from tests import pcapgen as g


def seeds() -> list[bytes]:
    conv = g.Conv()
    conv.handshake(0, 10, ts=True)
    base = conv.isn + 1
    for i in range(6):
        conv.send(11 + i, i * 1000, 1000, opts=g.opt_ts(2 + i, 1))
        conv.ack(21 + i, (i + 1) * 1000, opts=g.opt_ts(9, 2 + i) + g.opt_sack([(base + 9000, base + 9500)]))
    recs = conv.records
    v6 = g.ether(g.ipv6(bytes(16), bytes(15) + b"\1", g.tcp_header(1, 2, 3, 4, g.ACK) + b"x" * 9,
                        ext=[(0, b"\1\4\0\0\0\0")]))
    return [
        g.pcap(recs),
        g.pcap(recs, ns=True, big=True),
        g.pcapng([*recs, g.Rec(5, v6, iface=1)], [g.Iface(1), g.Iface(1, 9)]),
        g.pcap([g.Rec(r.ts_ns, g.sll(r.data[14:])) for r in recs], linktype=113),
        g.gz(g.pcap(recs)),
    ]


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        if op < 0.5 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.7 and b:
            i = rng.randrange(len(b))
            del b[i : i + rng.randint(1, 64)]
        elif op < 0.85:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        else:
            b = b[: rng.randrange(len(b) + 1)]
    return bytes(b)


def ingest_bytes(data: bytes, directory: Path) -> None:
    path = directory / "fuzz.pcap"
    path.write_bytes(data)
    with contextlib.suppress(IngestError):
        ingest_capture(path, max_decompressed_bytes=1 << 22)


def main(n: int, seed: int = 1234) -> int:
    rng = random.Random(seed)
    corpus = seeds()
    with tempfile.TemporaryDirectory() as d:
        for i in range(n):
            ingest_bytes(mutate(rng, corpus[i % len(corpus)]), Path(d))
    print(f"{n} mutants ingested without an untyped error")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
