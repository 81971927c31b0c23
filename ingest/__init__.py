"""ackreplay.ingest — captures (pcap, pcapng, gzip) → per-flow TCP ACK streams. Pure library.

Entry point: :func:`ingest_capture`. See ``docs/ingest.md`` for the columns and the decisions made.
"""


if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
from pathlib import Path

from ackreplay.ingest.capture import ingest_capture
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
from ackreplay.jitcache import guard

# numba loads cached code at first call: drop it if these sources, or the shared kernels', changed
guard(Path(__file__).parent, Path(__file__).parent.parent / "kernels.py")

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
