"""Byte sources for captures: plain files and gzip-compressed files, read in bounded chunks.

Gzip is detected by its magic number (``1f 8b``), never by the file name. Decompression is streamed and
stops with :class:`DecompressedTooLargeError` once the output passes a limit, so a gzip bomb costs at
most ``limit`` bytes of work and one chunk of memory.
"""

from __future__ import annotations

import io
import zlib
from pathlib import Path
from typing import BinaryIO

from ackreplay.ingest.errors import CaptureReadError, CorruptCaptureError, DecompressedTooLargeError

GZIP_MAGIC = b"\x1f\x8b"

#: Default ceiling on the decompressed size of a gzip capture: 100× the compressed size, at least
#: 1 GiB. Real captures compress 2–10×; a deflate stream can expand ~1000×, so this stops bombs
#: early while admitting any plausible capture. Callers may pass their own limit.
DEFAULT_MIN_DECOMPRESSED_LIMIT = 1 << 30
DEFAULT_DECOMPRESSION_RATIO = 100


def read_fully(raw: io.BufferedIOBase | io.RawIOBase, view: memoryview) -> int:
    """Fill ``view`` from ``raw`` as far as the file allows (``readinto`` may return less); bytes read."""
    got = 0
    while got < len(view):
        n = raw.readinto(view[got:])
        if not n:
            break
        got += n
    return got


class _GzipReader:
    """Streaming gzip decoder (all members) that keeps what it decoded when the stream is cut short.

    ``gzip.GzipFile`` drops the bytes of the failing read on a truncated stream; this one returns
    them and then reports the truncation.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.dec = zlib.decompressobj(31)
        self.pending = b""  # compressed bytes not yet fed
        self.truncated = False
        self.done = False

    def read(self, n: int) -> bytes:
        out: list[bytes] = []
        got = 0
        while got < n and not self.done:
            if self.dec.eof:  # end of a member: another may follow
                rest = self.dec.unused_data + self.pending
                self.pending = b""
                if not rest:
                    rest = self.raw.read(1 << 16)
                if not rest:
                    self.done = True
                    break
                if rest[:2] != GZIP_MAGIC:  # trailing garbage after the last member: ignored
                    self.done = True
                    break
                self.dec = zlib.decompressobj(31)
                self.pending = rest
            if not self.pending and not self.dec.unconsumed_tail:
                self.pending = self.raw.read(1 << 16)
                if not self.pending:
                    self.truncated = True
                    self.done = True
                    break
            src = self.dec.unconsumed_tail or self.pending
            if not self.dec.unconsumed_tail:
                self.pending = b""
            chunk = self.dec.decompress(src, n - got)
            out.append(chunk)
            got += len(chunk)
        return b"".join(out)


class ByteSource:
    """Sequential reader over a capture's (decompressed) bytes.

    ``read(n)`` returns up to ``n`` bytes and ``b""`` at the end. ``truncated_stream`` is set when a
    gzip stream ended early: what was decompressed is still returned.
    """

    def __init__(self, path: str | Path, *, max_decompressed_bytes: int | None = None) -> None:
        self.path = Path(path)
        try:
            raw: io.BufferedReader = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        except IsADirectoryError as exc:
            raise CaptureReadError(f"{self.path} is a directory, not a capture file") from exc
        except OSError as exc:
            raise CaptureReadError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        self._raw = raw
        self.compressed_size = self.path.stat().st_size
        head = raw.read(2)
        raw.seek(0)
        self.gzipped = head == GZIP_MAGIC
        self._gz = _GzipReader(raw) if self.gzipped else None
        if max_decompressed_bytes is None:
            max_decompressed_bytes = max(
                DEFAULT_MIN_DECOMPRESSED_LIMIT, DEFAULT_DECOMPRESSION_RATIO * self.compressed_size
            )
        self.limit = max_decompressed_bytes
        self.position = 0

    @property
    def truncated_stream(self) -> bool:
        return self._gz is not None and self._gz.truncated

    def compressed_position(self) -> int:
        """Bytes of the file consumed so far (for progress reporting)."""
        return self._raw.tell()

    def read(self, n: int) -> bytes:
        if self._gz is None:
            data = self._raw.read(n)
        else:
            try:
                data = self._gz.read(n)
            except zlib.error as exc:
                raise CorruptCaptureError(f"corrupt gzip stream ({exc})", self.position) from exc
        self.position += len(data)
        if self.gzipped and self.position > self.limit:
            raise DecompressedTooLargeError(
                f"gzip capture expands beyond {self.limit} bytes (compressed size "
                f"{self.compressed_size}); refusing to decompress further"
            )
        return data

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` as far as the source allows; return the number of bytes written."""
        if self._gz is None:
            got = read_fully(self._raw, view)
            self.position += got
            return got
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
