"""A replay task's series written batch by batch (``core.series_writer``) are the table of every flow's series
``replay.results.series_table`` makes at once, and each batch's series are dropped once written."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ackreplay.estimators as E
import ackreplay.replay.capture as C
from ackreplay.core.series_writer import SeriesWriter
from ackreplay.ingest import ingest_capture
from ackreplay.replay.results import series_table
from tests.conftest import SHARED

CAPTURE = SHARED / "generated/s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"


def test_the_series_written_batch_by_batch_are_the_whole_table(monkeypatch: pytest.MonkeyPatch) -> None:
    cap = ingest_capture(CAPTURE)
    ests = [E.create(n) for n in ("be", "re", "newreno")]
    whole = series_table(C.replay_capture(cap, ests, allow_vantage=True).flows)
    monkeypatch.setattr(C, "BATCH_EVENTS", 64)  # a batch per flow or two
    batches: list[int] = []
    with SeriesWriter() as writer:
        def add(flows: list) -> None:
            batches.append(len(flows))
            writer.add(flows)

        rep = C.replay_capture(cap, ests, allow_vantage=True, on_batch=add)
        size = writer.close()
        assert size == writer.path.stat().st_size > 0
        written = pl.read_parquet(writer.path)
        path = writer.path
    assert len(batches) > 1 and all(f.columns is None for f in rep.flows)  # (dropped once written)
    assert_frame_equal(written, whole)
    assert not path.exists()  # (removed with the writer)


def test_no_series_no_file() -> None:
    with SeriesWriter() as writer:
        writer.add([])
        assert writer.close() == 0 and not writer.path.exists()
