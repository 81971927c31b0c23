"""One flow's rows out of a table of many: zero-copy slices of ingest's flow-ordered tables, and the
same rows from a table in any order."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ackreplay.ingest import ingest_capture
from ackreplay.replay.engine import flow_rows
from tests.conftest import shared_captures


def test_flow_rows_of_sorted_and_shuffled_tables() -> None:
    cap = ingest_capture(next(p for p in shared_captures() if p.name.startswith("s09")))
    ids = [f.flow_id for f in cap.flows] + [999]
    for name in ("acks", "segments", "episodes"):
        table = getattr(cap, name)
        by_slice = flow_rows(table)
        by_partition = flow_rows(table.sample(fraction=1.0, shuffle=True, seed=1).with_row_index("i")
                                 .sort("i", descending=True).drop("i"))
        for fid in ids:
            want = table.filter(pl.col("flow_id") == fid)
            assert_frame_equal(by_slice(fid), want)
            assert_frame_equal(by_partition(fid).sort(want.columns), want.sort(want.columns))
        assert len(by_slice(999)) == 0


def test_scores_without_keeping_the_series_are_the_same() -> None:
    """``keep_series=False`` (what ``ackreplay score`` does without ``--out``) drops each flow's series once
    scored: scores, decisions and diagnostics are those of a full replay; asking for the series says why not."""
    import ackreplay.estimators as E
    from ackreplay.replay.capture import replay_capture

    cap = ingest_capture(next(p for p in shared_captures() if p.name.startswith("s09")))
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    full = replay_capture(cap, ests)
    lean = replay_capture(cap, ests, keep_series=False)
    assert lean.scores == full.scores and lean.skipped == full.skipped
    for a, b in zip(lean.flows, full.flows, strict=True):
        assert a.scores == b.scores and a.diagnostics == b.diagnostics and a.window == b.window
        assert_frame_equal(a.decisions, b.decisions)
        assert a.columns is None and b.series.height == len(b.columns["t"]) == a.events == b.events  # type: ignore[index]
        assert f"{a.events} ACK events" in a._repr_html_()  # a notebook shows it without the series
        with pytest.raises(ValueError, match="not kept"):
            _ = a.series
