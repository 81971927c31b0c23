"""The path's figures obey what a real network allows, on every capture in the repository and the shared ones
(ESTIMATORS.md §9, ``ackreplay.path.bounds``), and its ``confidence`` is calibrated on every capture with a
known path (``tests/estimators/path_calibration.py``; the table in docs/path-calibration.md)."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.estimators.path_calibration import (
    BEGIN,
    DATA,
    DOC,
    END,
    SUFFIXES,
    markdown,
    misses,
    outcomes,
    shown_paths,
    table,
    truth_captures,
)

pytestmark = pytest.mark.slow

CAPTURES = sorted(c for folder in [SHARED / "generated", SHARED / "public", *sorted(DATA.iterdir())]
                  if folder.is_dir() for c in folder.iterdir() if c.name.endswith((*SUFFIXES, ".cap", ".trace")))


@cache
def _shown(capture: Path) -> list[dict[str, Any]]:
    return shown_paths(capture)


@pytest.mark.parametrize("capture", CAPTURES, ids=[f"{c.parent.name}/{c.name}" for c in CAPTURES])
def test_the_figures_obey_physics(capture):
    """Base RTT at or below every RTT sample of the flows it comes from and every round trip they timed (the
    handshake's at the client); a buffer no larger than their flight could fill beyond the pipe; a capacity
    that says which hop it measures; no NaN in the document."""
    for shown in _shown(capture):
        p = shown["path"]
        json.dumps(p, allow_nan=False)
        ev = p["evidence"]
        assert (p["capacity_bps"] is not None) == (p["capacity_hop"] == "bottleneck"), ev["capacity_bps"]
        assert (p["capture_link_bps"] is not None) == (p["capacity_hop"] == "capture_link"), ev["capacity_bps"]
        base = p["base_rtt_s"]
        if base is not None:
            assert base >= 0.0
            for bound in (shown["rtt_min"], shown["rttmin"]):
                assert bound is None or base <= bound + 1e-12, (base, bound, ev["base_rtt_s"])
        if p["buffer_bytes"] is not None and shown["flight"] is not None:
            room = shown["flight"] * shown["wire"] - p["capacity_bps"] * base / 8.0
            # (the replay's flight counts a segment's wire size by its own header bytes: 1 % slack)
            assert p["buffer_bytes"] <= room * 1.01 + 1.0, (p["buffer_bytes"], room, ev["buffer_bytes"])
        for key in ("capacity_bps", "base_rtt_s", "buffer_bytes", "buffer_over_bdp", "random_loss_rate"):
            assert (p[key] is None) == ev[key].startswith("null: "), (key, ev[key])
            assert p[key] is None or math.isfinite(p[key])


def test_the_confidence_is_calibrated():
    """Over every capture with a known path, a figure labelled high is within its tolerance in at least 95 %
    of cases and medium in at least 80 % (``path_calibration.BOUNDS``), and docs/path-calibration.md shows
    this very table."""
    tab = table(list(outcomes(truth_captures(), _shown)))
    assert not misses(tab), misses(tab)
    assert BEGIN + "\n" + markdown(tab) + END in DOC.read_text(), "python -m tests.estimators.path_calibration"

