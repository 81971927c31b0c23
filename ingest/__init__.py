"""ackreplay.ingest — captures (pcap, pcapng, gzip) → per-flow TCP ACK streams. Pure library.

Entry point: :func:`ingest_capture`. See ``docs/ingest.md`` for the columns and the decisions made.
"""

from pathlib import Path

from ackreplay.ingest.errors import (
    CaptureReadError,
    CorruptCaptureError,
    DecompressedTooLargeError,
    EmptyCaptureError,
    IngestError,
    UnknownFormatError,
    UnsupportedLinkTypeError,
)
from ackreplay.ingest.model import CaptureIngest, CaptureStats, FlowData, FlowSummaries, FlowSummary
from ackreplay.ingest.pipeline import ingest_capture
from ackreplay.jitcache import guard

guard(Path(__file__).parent)  # numba loads cached code at first call: drop it if sources changed

__all__ = [
    "CaptureIngest",
    "CaptureReadError",
    "CaptureStats",
    "CorruptCaptureError",
    "DecompressedTooLargeError",
    "EmptyCaptureError",
    "FlowData",
    "FlowSummaries",
    "FlowSummary",
    "IngestError",
    "UnknownFormatError",
    "UnsupportedLinkTypeError",
    "ingest_capture",
]
