"""What a zip archive's end-of-central-directory record says of its directory — how many entries, how many
bytes — read from the archive's tail before :mod:`zipfile` reads the directory itself.

``zipfile.ZipFile`` builds an object for every entry of the central directory as soon as it opens an archive,
before a caller can count them: a 26 MB upload of 300 000 empty entries costs 157 MB and 1.4 s, and the
2 GiB an upload may hold would cost tens of GB. The record (APPNOTE.TXT 4.3.16, and 4.3.14 for ZIP64) is
read in a few kB, so an archive whose directory is past the bounds is refused before it is parsed.
"""

from __future__ import annotations

import struct
from typing import IO, NamedTuple

END = b"PK\x05\x06"
END_SIZE = 22
ZIP64_LOCATOR = b"PK\x06\x07"
ZIP64_LOCATOR_SIZE = 20
ZIP64_END = b"PK\x06\x06"
ZIP64_END_SIZE = 56
#: The record may follow a comment of up to 65 535 bytes.
TAIL = END_SIZE + 0xFFFF


class Directory(NamedTuple):
    """The central directory as the end record describes it."""

    entries: int
    size: int


def directory(src: IO[bytes]) -> Directory | None:
    """The entries and bytes of the archive's central directory, as its end record (ZIP64's when there is one)
    states them; None when no end record is found (not a zip: :mod:`zipfile` says how). The stream is left
    at its start."""
    src.seek(0, 2)
    length = src.tell()
    start = max(0, length - TAIL)
    src.seek(start)
    tail = src.read()
    src.seek(0)
    at = tail.rfind(END)
    if at < 0 or len(tail) - at < END_SIZE:
        return None
    entries, size = struct.unpack_from("<HI", tail, at + 10)
    found = Directory(entries, size)
    locator = at - ZIP64_LOCATOR_SIZE
    record = locator - ZIP64_END_SIZE  # (where zipfile reads it: just before the locator)
    if record >= 0 and tail[locator:locator + 4] == ZIP64_LOCATOR and tail[record:record + 4] == ZIP64_END:
        entries64, size64 = struct.unpack_from("<QQ", tail, record + 32)
        found = Directory(max(entries, entries64), max(size, size64))
    return found
