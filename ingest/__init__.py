"""ackreplay.ingest — captures (pcap, pcapng, gzip) → per-flow TCP ACK streams. Pure library.

Entry point: :func:`ingest_capture`. See ``docs/ingest.md`` for the columns and the decisions made.
"""


if not __name__.startswith("ackreplay."):  # the checkout's root is on sys.path too: one module tree only
    raise ImportError(f"import ackreplay.{__name__}, not {__name__} (this folder is the package ackreplay.{__name__})")
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackreplay.jitcache import guard

if TYPE_CHECKING:
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

# numba loads cached code at first call: drop it if these sources, or the shared kernels', changed
guard(Path(__file__).parent, Path(__file__).parent.parent / "kernels.py")

#: Where each public name is defined. They are imported on first use: the errors alone (what the command line
#: needs to report bad input) load neither Polars nor the compiled kernels.
_PUBLIC = {
    "ingest_capture": "capture",
    **dict.fromkeys(("CaptureReadError", "CorruptCaptureError", "DecompressedTooLargeError", "EmptyCaptureError",
                     "IngestError", "UnknownFormatError", "UnsupportedLinkTypeError"), "errors"),
    **dict.fromkeys(("CaptureIngest", "CaptureStats", "FlowData", "FlowSummaries", "FlowSummary"), "model"),
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
