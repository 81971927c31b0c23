"""Typed ingest errors: every problem with an input file is one of these, each with a stable code.

The codes are part of the public contract (CLI exit messages, and later the API's ``{"error": code}``).
"""

from __future__ import annotations


class IngestError(Exception):
    """Base class: a capture that cannot be ingested. ``code`` is stable and machine-readable."""

    code = "ingest_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class EmptyCaptureError(IngestError):
    """The file (after decompression) holds no bytes at all."""

    code = "empty_capture"


class UnknownFormatError(IngestError):
    """The first bytes are neither a pcap, a pcapng nor a gzip magic number."""

    code = "unknown_format"


class UnsupportedLinkTypeError(IngestError):
    """Packets use a link-layer header type the decoder does not know."""

    code = "unsupported_link_type"

    def __init__(self, linktype: int) -> None:
        super().__init__(f"unsupported link type {linktype}")
        self.linktype = linktype


class CorruptCaptureError(IngestError):
    """A record or block header is impossible (absurd length, mismatched trailer, bad header)."""

    code = "corrupt_capture"

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} at byte {offset}")
        self.offset = offset


class DecompressedTooLargeError(IngestError):
    """A gzip member expands beyond the configured limit (gzip bomb protection)."""

    code = "decompressed_too_large"


class CaptureReadError(IngestError):
    """The file cannot be read at all (missing, a directory, permission denied)."""

    code = "unreadable_capture"
