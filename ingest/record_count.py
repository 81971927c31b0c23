"""How many packet records a small capture holds, counted from its record headers alone in plain Python.

For choosing how to run before anything heavy is imported (``cli/kernel_choice.py``): it reads at most
``max_bytes`` of the (decompressed) capture, walks the pcap record headers or the pcapng blocks (Enhanced, Simple
and obsolete Packet Blocks count), and answers ``None`` for anything it does not settle — a larger capture, an
unknown format, a block of impossible length — which the ingest proper then reads and reports as usual.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

from ackreplay.ingest.formats import PCAP_MAGICS, PCAPNG_BOM, PCAPNG_SHB
from ackreplay.ingest.source import GZIP_MAGIC

#: pcapng block types that carry a packet: obsolete Packet Block, Simple Packet Block, Enhanced Packet Block.
PACKET_BLOCKS = (2, 3, 6)


def head_bytes(path: Path, max_bytes: int) -> bytes | None:
    """The capture's bytes, decompressed if gzipped, or ``None`` if there are more than ``max_bytes`` (or it cannot
    be read)."""
    try:
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            data = gzip.GzipFile(fileobj=raw).read(max_bytes + 1) if gzipped else raw.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error):
        return None
    return data if len(data) <= max_bytes else None


def pcap_records(data: bytes) -> int | None:
    order = PCAP_MAGICS[data[:4]][0]
    pos, n = 24, 0
    while pos + 16 <= len(data):
        pos += 16 + struct.unpack_from(order + "I", data, pos + 8)[0]
        n += 1
    return n


def pcapng_records(data: bytes) -> int | None:
    order, pos, n = "<", 0, 0
    while pos + 12 <= len(data):
        if data[pos:pos + 4] == PCAPNG_SHB:
            order = "<" if struct.unpack_from("<I", data, pos + 8)[0] == PCAPNG_BOM else ">"
        btype, blen = struct.unpack_from(order + "II", data, pos)
        if blen < 12:
            return None
        n += btype in PACKET_BLOCKS
        pos += blen
    return n


def count_records(path: Path, max_bytes: int) -> int | None:
    """The number of packet records in the capture at ``path``, if it is a pcap or pcapng capture of at most
    ``max_bytes`` (decompressed); else ``None``."""
    data = head_bytes(path, max_bytes)
    if data is None:
        return None
    if data[:4] in PCAP_MAGICS:
        return pcap_records(data)
    if data[:4] == PCAPNG_SHB:
        return pcapng_records(data)
    return None
