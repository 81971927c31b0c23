"""Shared test fixtures: paths to the shared captures, the real PostgreSQL/Redis servers, and the kernels compiled
ahead of time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
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


@pytest.fixture(scope="session")
def aot_extension() -> Path:
    """The extension of kernels compiled ahead of time from the current sources (``jitcache.aot``): built now (about
    2 min) if ``scripts/setup.sh`` did not build it."""
    from ackreplay.jitcache import aot

    where, print_ = aot.folder(), aot.fingerprint(aot.SOURCES, aot.SIGNATURES)
    if not aot.built(where, print_):  # (the extension and its manifest, as ``aot.load`` wants them)
        cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
        if shutil.which(cc) is None:
            pytest.fail(f"no C compiler ({cc!r} not found): the ahead-of-time kernels cannot be built; "
                        "scripts/system-deps.sh installs gcc")
        done = subprocess.run([sys.executable, "-m", "ackreplay.jitcache.aot_build"], cwd=ROOT, timeout=900,
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "ACKREPLAY_KERNELS": "compiled"})
        if done.returncode:
            pytest.fail(f"the ahead-of-time build failed ({done.returncode}):\n{done.stderr[-4000:]}")
    assert aot.built(where, print_)
    return aot.extension_path(where, print_)
