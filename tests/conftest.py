"""Shared test fixtures: paths to the shared captures, and the real PostgreSQL/Redis servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services import postgres_server, redis_server  # noqa: F401  (session fixtures)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".trace")


def shared_captures() -> list[Path]:
    """Every capture listed in the shared SHA256SUMS (the test suite needs ../shared beside the repo)."""
    sums = SHARED / "SHA256SUMS"
    if not sums.exists():
        raise RuntimeError(f"{sums} is missing: the tests need ../shared/captures beside the repository")
    names = [line.split()[-1].lstrip("*") for line in sums.read_text().splitlines() if line.strip()]
    return [SHARED / n for n in names if n.endswith(CAPTURE_SUFFIXES)]


@pytest.fixture
def tmp_capture(tmp_path: Path):
    """Write bytes to a capture file and return its path."""

    def write(data: bytes, name: str = "cap.pcap") -> Path:
        p = tmp_path / name
        p.write_bytes(data)
        return p

    return write
