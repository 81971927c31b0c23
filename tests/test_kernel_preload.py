"""A worker's pool process loads the compiled kernels when it starts (``core.kernel_preload``), not in its first
task: after :func:`preload_kernels` the kernels replay calls are in memory, and a capture it cannot read is logged,
never raised (the tasks then load what they need themselves)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ackreplay.core.kernel_preload import WARMUP_CAPTURE, preload_kernels

ROOT = Path(__file__).resolve().parents[1]

#: In a fresh process: which of replay's batched kernels have a machine-code signature loaded, before and after.
PROBE = """
import json
from ackreplay.jitcache.kernel_mode import plain_python
from ackreplay.replay import batch_kernels as k
names = ("score_windows", "achieved_rates", "time_weights_batch", "diagnostics_scan")
before = [len(getattr(k, n).signatures) for n in names]
from ackreplay.core.kernel_preload import preload_kernels
preload_kernels()
print(json.dumps([plain_python(), before, [len(getattr(k, n).signatures) for n in names]]))
"""


def test_the_warm_up_capture_is_there() -> None:
    assert WARMUP_CAPTURE.is_file()


def test_after_the_preload_replays_kernels_are_loaded() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "ACKREPLAY_KERNELS": "compiled"}).stdout
    plain, before, after = json.loads(out.strip().splitlines()[-1])
    assert not plain, "the probe ran the kernels as plain Python"
    assert before == [0, 0, 0, 0]
    assert all(n >= 1 for n in after), after


def test_a_capture_that_cannot_be_read_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "none.pcap"
    with caplog.at_level(logging.INFO, logger="ackreplay.worker"):
        preload_kernels(missing)
    messages = [r.getMessage() for r in caplog.records]
    assert any("not preloaded" in m for m in messages)
    assert not any("preloaded in" in m for m in messages), messages
