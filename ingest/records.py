"""Capture containers → batches of raw packet records (pcap and pcapng), streamed in chunks.

Formats (detected by magic number, never by file name):

* pcap: magic ``a1b2c3d4`` (µs) or ``a1b23c4d`` (ns), in either byte order; one link type per file.
* pcapng: every section (each with its own byte order) and every interface (each with its own link
  type, ``if_tsresol`` and ``if_tsoffset``). Enhanced, Simple and obsolete Packet Blocks carry packets;
  unknown block types are skipped, as the specification requires.

The per-record loop is compiled (numba): it walks record headers over a chunk of bytes and writes
offsets, lengths and nanosecond timestamps into arrays. Rare blocks (section and interface headers,
unknown types) return control to Python, which parses them and resumes the scan.

A file cut in the middle of a record keeps everything before the cut and reports
``truncated at byte N``; an impossible header (a 2 GB record, a block whose trailer does not match
its header) raises :class:`CorruptCaptureError` naming the offset.
"""

from __future__ import annotations

import queue
import struct
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ackreplay.ingest.errors import CorruptCaptureError, EmptyCaptureError, UnknownFormatError
from ackreplay.ingest.formats import PCAP_MAGICS, PCAPNG_BOM, PCAPNG_SHB
from ackreplay.ingest.source import ByteSource
from ackreplay.jitcache.kernel_mode import njit

#: Largest record accepted regardless of the declared snaplen (Wireshark's WTAP_MAX_PACKET_SIZE is
#: 256 KiB; BIG TCP super-segments reach 512 KiB). A header announcing more is corrupt.
MAX_RECORD_BYTES = 1 << 20
#: Bytes read from the source per chunk: the ring of four stays small enough for the caches (4 MiB
#: chunks ingested 3 M packets ~7 % faster than 16 MiB ones; 1 MiB no faster than 4).
CHUNK_BYTES = 4 << 20

# scan status codes returned by the compiled loops
_OK = 0  # output arrays full; call again
_NEED_MORE = 1  # the next record is not complete in this buffer
_BAD_LENGTH = 2  # impossible record/block length at pos
_OTHER_BLOCK = 3  # pcapng: a block the compiled loop does not handle starts at pos
_BAD_TRAILER = 4  # pcapng: trailing block length differs from the leading one
_BAD_INTERFACE = 5  # pcapng: packet block names an interface that was never described


@dataclass
class RecordBatch:
    """Raw records of one chunk: views into ``buf`` plus per-record metadata."""

    buf: np.ndarray  # uint8 bytes of the chunk
    offset: np.ndarray  # int64: start of the packet bytes in buf
    caplen: np.ndarray  # int64: captured bytes
    origlen: np.ndarray  # int64: length on the wire
    ts_ns: np.ndarray  # int64: epoch nanoseconds
    linktype: np.ndarray  # int32
    source_position: int = 0  # bytes of the file consumed when the batch was scanned (progress, estimates)
    #: packet records of the file before this batch: record ``i``'s frame number (Wireshark's ``frame.number``,
    #: 1-based, every packet record of the file counted, pcapng's across all interfaces) is ``first_record + i + 1``
    first_record: int = 0

    def __len__(self) -> int:
        return len(self.offset)


@dataclass
class ScanInfo:
    """What the container told us, filled while scanning."""

    format: str = ""
    gzipped: bool = False
    linktypes: set[int] = field(default_factory=set)
    snaplen: int = 0
    records: int = 0
    warnings: list[str] = field(default_factory=list)
    truncated_at: int | None = None
    skipped_blocks: int = 0


@njit(cache=True, inline="always")
def _u16(buf: np.ndarray, p: int, big: bool) -> int:
    if big:
        return (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    return (np.int64(buf[p + 1]) << 8) | np.int64(buf[p])


@njit(cache=True, inline="always")
def _u32(buf: np.ndarray, p: int, big: bool) -> int:
    if big:
        return (
            (np.int64(buf[p]) << 24)
            | (np.int64(buf[p + 1]) << 16)
            | (np.int64(buf[p + 2]) << 8)
            | np.int64(buf[p + 3])
        )
    return (
        (np.int64(buf[p + 3]) << 24)
        | (np.int64(buf[p + 2]) << 16)
        | (np.int64(buf[p + 1]) << 8)
        | np.int64(buf[p])
    )


@njit(cache=True, nogil=True)
def _scan_pcap(
    buf: np.ndarray,
    pos: int,
    big: bool,
    frac_ns: int,
    max_caplen: int,
    out_off: np.ndarray,
    out_cap: np.ndarray,
    out_orig: np.ndarray,
    out_ts: np.ndarray,
) -> tuple[int, int, int]:
    n = 0
    end = len(buf)
    status = _OK
    while n < len(out_off):
        if pos + 16 > end:
            status = _NEED_MORE
            break
        sec = _u32(buf, pos, big)
        frac = _u32(buf, pos + 4, big)
        cap = _u32(buf, pos + 8, big)
        orig = _u32(buf, pos + 12, big)
        if cap > max_caplen:
            status = _BAD_LENGTH
            break
        if pos + 16 + cap > end:
            status = _NEED_MORE
            break
        out_off[n] = pos + 16
        out_cap[n] = cap
        out_orig[n] = orig if orig >= cap else cap
        out_ts[n] = sec * 1_000_000_000 + frac * frac_ns
        n += 1
        pos += 16 + cap
    return n, pos, status


@njit(cache=True, inline="always")
def _ts_to_ns(ts: int, kind: int, exp: int, offset_ns: int) -> int:
    # kind 0: units of 10^-exp s; kind 1: units of 2^-exp s (pcapng if_tsresol)
    if kind == 0:
        if exp <= 9:
            return ts * 10 ** (9 - exp) + offset_ns
        return ts // 10 ** (exp - 9) + offset_ns
    if exp <= 30:
        whole = ts >> exp
        frac = ts & ((np.int64(1) << exp) - 1)
        return whole * 1_000_000_000 + ((frac * 1_000_000_000) >> exp) + offset_ns
    return np.int64(np.float64(ts) / 2.0**exp * 1e9) + offset_ns


@njit(cache=True, nogil=True)
def _scan_pcapng(
    buf: np.ndarray,
    pos: int,
    big: bool,
    if_link: np.ndarray,
    if_kind: np.ndarray,
    if_exp: np.ndarray,
    if_offset: np.ndarray,
    if_snap: np.ndarray,
    n_if: int,
    last_ts: int,
    max_block: int,
    out_off: np.ndarray,
    out_cap: np.ndarray,
    out_orig: np.ndarray,
    out_ts: np.ndarray,
    out_link: np.ndarray,
) -> tuple[int, int, int, int]:
    n = 0
    end = len(buf)
    status = _OK
    while n < len(out_off):
        if pos + 12 > end:
            status = _NEED_MORE
            break
        btype = _u32(buf, pos, big)
        blen = _u32(buf, pos + 4, big)
        if btype != 6 and btype != 3 and btype != 2:
            status = _OTHER_BLOCK
            break
        if blen < 16 or blen % 4 != 0 or blen > max_block:
            status = _BAD_LENGTH
            break
        if pos + blen > end:
            status = _NEED_MORE
            break
        if _u32(buf, pos + blen - 4, big) != blen:
            status = _BAD_TRAILER
            break
        if btype == 3:  # Simple Packet Block: interface 0, no timestamp
            if n_if == 0:
                status = _BAD_INTERFACE
                break
            orig = _u32(buf, pos + 8, big)
            cap = min(orig, blen - 16)
            if if_snap[0] > 0:
                cap = min(cap, if_snap[0])
            data = pos + 12
            iface = 0
            ts = last_ts
        else:
            if blen < 32:
                status = _BAD_LENGTH
                break
            iface = _u32(buf, pos + 8, big) if btype == 6 else _u16(buf, pos + 8, big)
            if iface >= n_if:
                status = _BAD_INTERFACE
                break
            ts_raw = (_u32(buf, pos + 12, big) << 32) | _u32(buf, pos + 16, big)
            cap = _u32(buf, pos + 20, big)
            orig = _u32(buf, pos + 24, big)
            if cap > blen - 32:
                status = _BAD_LENGTH
                break
            data = pos + 28
            ts = _ts_to_ns(ts_raw, if_kind[iface], if_exp[iface], if_offset[iface])
        out_off[n] = data
        out_cap[n] = cap
        out_orig[n] = orig if orig >= cap else cap
        out_ts[n] = ts
        out_link[n] = if_link[iface]
        last_ts = ts
        n += 1
        pos += blen
    return n, pos, status, last_ts


def _alloc(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
    )


class _Chunker:
    """Reusable read buffers: ``buf`` is the filled part of the current one; a refill moves the unread
    tail to the front of another buffer of the ring (the same one when there is one) and reads after it.

    A buffer is reallocated only when a record needs more room than it has. With a ring, a refill never
    writes into the buffers of the last two batches handed out (:meth:`pin`), however many refills
    happen between batches (a record larger than the chunk takes two): with four buffers one is always
    free (see :func:`prefetch`).
    """

    def __init__(self, src: ByteSource, chunk_bytes: int, buffers: int = 1) -> None:
        self.src = src
        self.chunk_bytes = chunk_bytes
        self.base = 0  # absolute offset of buf[0]
        self.stores = [bytearray(chunk_bytes)] + [bytearray(0) for _ in range(buffers - 1)]
        self.current = 0
        self.pinned: list[int] = []  # buffers of the last two batches handed out
        self.buf = memoryview(self.stores[0])[:0]
        self.eof = False

    def pin(self) -> None:
        """The current buffer backs a batch about to be handed out: keep it until two later batches."""
        if len(self.stores) > 1:
            self.pinned = [*self.pinned, self.current][-2:]

    def fill(self, pos: int, need: int = 0) -> int:
        """Drop bytes before ``pos``, read until the buffer is full (or ``need`` bytes); return new pos."""
        tail = len(self.buf) - pos
        size = max(self.chunk_bytes, need)
        ring = len(self.stores)
        nxt = next((k for k in ((self.current + d) % ring for d in range(1, ring)) if k not in self.pinned),
                   self.current)
        store = self.stores[nxt]
        if size > len(store):
            store = bytearray(size)
            store[:tail] = self.buf[pos:]
            self.stores[nxt] = store
        elif tail:
            store[:tail] = self.buf[pos:]
        self.current = nxt
        self.base += pos
        view = memoryview(store)
        got = self.src.readinto(view[tail:])
        if tail + got < len(store):
            self.eof = True
        self.buf = view[: tail + got]
        return 0

    def array(self) -> np.ndarray:
        return np.frombuffer(self.buf, dtype=np.uint8)


def iter_records(
    src: ByteSource, info: ScanInfo, *, chunk_bytes: int = CHUNK_BYTES, buffers: int = 1
) -> Iterator[RecordBatch]:
    """Yield the capture's packet records chunk by chunk, filling ``info`` as it goes.

    A batch's ``buf`` is overwritten by a later refill: with ``buffers=1`` by the next one; with a ring of
    ``buffers`` ≥ 4, only after two more batches have been handed out.
    """
    info.gzipped = src.gzipped
    ch = _Chunker(src, chunk_bytes, buffers)
    ch.fill(0)
    if not ch.buf:
        if src.truncated_stream:
            raise EmptyCaptureError("the gzip stream ends before any capture byte")
        raise EmptyCaptureError("the file is empty (0 bytes)")
    magic = bytes(ch.buf[:4])
    if magic in PCAP_MAGICS:
        yield from _iter_pcap(ch, info)
    elif magic == PCAPNG_SHB:
        yield from _iter_pcapng(ch, info)
    else:
        head = bytes(ch.buf[:8])
        printable = head and all(32 <= b < 127 or b in (9, 10, 13) for b in head)
        what = "looks like text" if printable else f"starts with bytes {head[:4].hex()}"
        raise UnknownFormatError(f"not a pcap or pcapng capture: the file {what}")
    if src.truncated_stream:
        info.warnings.append(f"gzip stream truncated after {src.position} decompressed bytes")


def _finish_truncation(ch: _Chunker, pos: int, info: ScanInfo) -> None:
    if pos < len(ch.buf):
        info.truncated_at = ch.base + pos
        info.warnings.append(f"truncated at byte {ch.base + pos}: the last record is incomplete")


def _iter_pcap(ch: _Chunker, info: ScanInfo) -> Iterator[RecordBatch]:
    if len(ch.buf) < 24:
        raise CorruptCaptureError("pcap global header cut short (24 bytes needed)", len(ch.buf))
    order, frac_ns = PCAP_MAGICS[bytes(ch.buf[:4])]
    _, vmaj, _vmin, _tz, _sig, snaplen, network = struct.unpack(order + "IHHiIII", ch.buf[:24])
    if vmaj != 2:
        raise CorruptCaptureError(f"pcap header has unsupported version {vmaj}", 4)
    linktype = network & 0xFFFF  # upper bits carry FCS information
    info.format = "pcap-ns" if frac_ns == 1 else "pcap"
    info.snaplen = snaplen
    info.linktypes.add(linktype)
    max_cap = min(max(snaplen, 262_144), MAX_RECORD_BYTES)
    big = order == ">"
    pos = 24
    while True:
        arr = ch.array()
        cap_n = max(1, (len(arr) - pos) // 16 + 1)
        off, caplen, orig, ts = _alloc(cap_n)
        n, pos, status = _scan_pcap(arr, pos, big, frac_ns, max_cap, off, caplen, orig, ts)
        if n:
            ch.pin()
            yield RecordBatch(arr, off[:n], caplen[:n], orig[:n], ts[:n], np.full(n, linktype, np.int32),
                              ch.src.compressed_position(), info.records)
            info.records += n
        if status == _BAD_LENGTH:
            cap_bad = struct.unpack(order + "I", ch.buf[pos + 8 : pos + 12])[0]
            raise CorruptCaptureError(
                f"record header announces a {cap_bad}-byte packet (limit {max_cap})", ch.base + pos
            )
        if status == _NEED_MORE:
            if ch.eof:
                _finish_truncation(ch, pos, info)
                return
            need = 16
            if pos + 16 <= len(ch.buf):
                need += struct.unpack(order + "I", ch.buf[pos + 8 : pos + 12])[0]
            pos = ch.fill(pos, need)


@dataclass
class _Interfaces:
    link: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    exp: list[int] = field(default_factory=list)
    offset_ns: list[int] = field(default_factory=list)
    snap: list[int] = field(default_factory=list)

    def arrays(self) -> tuple[np.ndarray, ...]:
        size = max(1, len(self.link))
        pad = [0] * (size - len(self.link))
        return (
            np.array(self.link + pad, np.int32),
            np.array(self.kind + pad, np.int64),
            np.array(self.exp + pad, np.int64),
            np.array(self.offset_ns + pad, np.int64),
            np.array(self.snap + pad, np.int64),
        )


def _parse_idb(body: bytes, order: str, ifs: _Interfaces) -> None:
    linktype, _res, snaplen = struct.unpack(order + "HHI", body[:8])
    kind, exp, offset_ns = 0, 6, 0  # default resolution: microseconds
    p = 8
    while p + 4 <= len(body):
        code, length = struct.unpack(order + "HH", body[p : p + 4])
        value = body[p + 4 : p + 4 + length]
        if code == 0:
            break
        if code == 9 and length >= 1:
            kind, exp = (1, value[0] & 0x7F) if value[0] & 0x80 else (0, value[0])
        elif code == 14 and length >= 8:
            offset_ns = struct.unpack(order + "q", value[:8])[0] * 1_000_000_000
        p += 4 + length + (-length % 4)
    ifs.link.append(linktype)
    ifs.kind.append(kind)
    ifs.exp.append(exp)
    ifs.offset_ns.append(offset_ns)
    ifs.snap.append(snaplen)


def _iter_pcapng(ch: _Chunker, info: ScanInfo) -> Iterator[RecordBatch]:
    info.format = "pcapng"
    order = "<"
    ifs = _Interfaces()
    pos = 0
    last_ts = 0
    max_block = MAX_RECORD_BYTES + 64
    while True:
        arr = ch.array()
        link, kind, exp, offs, snap = ifs.arrays()
        cap_n = max(1, (len(arr) - pos) // 16 + 1)
        off, caplen, orig, ts = _alloc(cap_n)
        lt = np.empty(cap_n, np.int32)
        n, pos, status, last_ts = _scan_pcapng(
            arr, pos, order == ">", link, kind, exp, offs, snap, len(ifs.link), last_ts, max_block,
            off, caplen, orig, ts, lt,
        )
        if n:
            ch.pin()
            yield RecordBatch(arr, off[:n], caplen[:n], orig[:n], ts[:n], lt[:n], ch.src.compressed_position(),
                              info.records)
            info.records += n
        if status == _BAD_LENGTH:
            raise CorruptCaptureError("pcapng block has an impossible length", ch.base + pos)
        if status == _BAD_TRAILER:
            raise CorruptCaptureError("pcapng block trailer does not repeat its length", ch.base + pos)
        if status == _BAD_INTERFACE:
            raise CorruptCaptureError("pcapng packet block names an undeclared interface", ch.base + pos)
        if status == _OTHER_BLOCK:
            # parse a block the compiled loop left to us: SHB, IDB or an unknown (skipped) type
            if ch.buf[pos : pos + 4] == PCAPNG_SHB:
                if pos + 12 > len(ch.buf) and not ch.eof:
                    pos = ch.fill(pos, 12)
                    continue
                if pos + 12 > len(ch.buf):
                    _finish_truncation(ch, pos, info)
                    return
                bom_le = struct.unpack("<I", ch.buf[pos + 8 : pos + 12])[0]
                if bom_le == PCAPNG_BOM:
                    order = "<"
                elif struct.unpack(">I", ch.buf[pos + 8 : pos + 12])[0] == PCAPNG_BOM:
                    order = ">"
                else:
                    raise CorruptCaptureError("pcapng section header has a bad byte-order magic",
                                              ch.base + pos)
                ifs = _Interfaces()  # a new section starts a new interface list
            btype, blen = struct.unpack(order + "II", ch.buf[pos : pos + 8])
            if blen < 12 or blen % 4 != 0 or blen > max(max_block, 16 << 20):
                raise CorruptCaptureError(f"pcapng block of type {btype:#x} has an impossible length {blen}",
                                          ch.base + pos)
            if pos + blen > len(ch.buf):
                if ch.eof:
                    _finish_truncation(ch, pos, info)
                    return
                pos = ch.fill(pos, blen)
                continue
            if struct.unpack(order + "I", ch.buf[pos + blen - 4 : pos + blen])[0] != blen:
                raise CorruptCaptureError("pcapng block trailer does not repeat its length", ch.base + pos)
            body = bytes(ch.buf[pos + 8 : pos + blen - 4])
            if btype == 1:
                if len(body) < 8:
                    raise CorruptCaptureError("pcapng interface block too short", ch.base + pos)
                _parse_idb(body, order, ifs)
                info.linktypes.add(ifs.link[-1])
                info.snaplen = max(info.snaplen, ifs.snap[-1])
            elif btype != 0x0A0D0D0A:
                info.skipped_blocks += 1
            pos += blen
            continue
        if status == _NEED_MORE:
            if ch.eof:
                _finish_truncation(ch, pos, info)
                return
            need = 12
            if pos + 8 <= len(ch.buf):
                need = max(need, struct.unpack(order + "I", ch.buf[pos + 4 : pos + 8])[0])
            pos = ch.fill(pos, need)


_DONE = object()


T = TypeVar("T")


def prefetch(batches: Iterator[T]) -> Generator[T, None, None]:
    """Run ``batches`` (``iter_records(..., buffers=4)``, or any iterator whose items stay valid while the
    next two are made) one batch ahead in a thread.

    Reading, decompressing and scanning the next chunk then overlap the caller's work on this one (file
    reads, zlib and the compiled scan release the GIL). Safe with the ring: while the thread works on
    batch k+2, the caller holds batch k (or k+1) and the queue at most k+1 — the last two batches handed
    out, whose buffers a refill never touches. Errors are raised in the caller; a caller that stops
    early stops the thread.
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(_DONE)
        except BaseException as exc:  # handed to the caller, raised there
            put(exc)

    worker = threading.Thread(target=produce, name="ingest-read", daemon=True)
    worker.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
