"""Pages of a spilled capture's tables go back to the kernel once replay is done with a flow
(``CaptureIngest.release``, ``ingest.memory.release_mapped``): RSS falls, the data stays readable, and
arrays in anonymous memory are never touched."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ackreplay.estimators as E
from ackreplay.ingest import ingest_capture
from ackreplay.ingest.memory import release_mapped
from ackreplay.ingest.spill import ColumnSpill
from ackreplay.replay.capture import replay_capture
from tests.conftest import shared_captures


def rss_file_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


def test_released_rows_leave_rss_and_stay_readable(tmp_path: Path) -> None:
    spill = ColumnSpill({"x": np.float64}, tmp_path)
    data = np.arange(8 << 20, dtype=np.float64)  # 64 MiB
    spill.append({"x": data})
    col = spill.mapped()["x"]
    assert float(col.sum()) == float(data.sum())  # every page read in
    before = rss_file_kb()
    release_mapped(col, 0, len(col))
    assert before - rss_file_kb() > 60_000  # ~64 MiB of file pages left the process
    assert np.array_equal(col[1000:2000], data[1000:2000])  # read again from the page cache
    release_mapped(col, 5, 3)  # an empty range: nothing


def test_arrays_in_memory_are_left_alone() -> None:
    a = np.arange(1 << 20, dtype=np.float64)
    release_mapped(a, 0, len(a))
    assert float(a[-1]) == (1 << 20) - 1


def test_spilled_capture_replays_the_same_after_releasing_each_flow(tmp_path: Path) -> None:
    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    ref = replay_capture(ingest_capture(path, memory_budget=None), ests)
    cap = ingest_capture(path, memory_budget=1, spill_dir=tmp_path)
    assert cap.stats.spilled and cap.mapped["acks"] and cap.mapped["segments"]
    got = replay_capture(cap, ests)
    assert got.scores == ref.scores
    assert [f.scores for f in got.flows] == [f.scores for f in ref.flows]
    assert cap.acks.equals(ingest_capture(path, memory_budget=None).acks)  # the tables still read right


def test_a_spilled_table_s_nullable_columns_are_read_from_its_files_as_the_fill_would_make_them(tmp_path: Path
                                                                                                ) -> None:
    """Replay takes the RTT and TSval columns of a spilled capture as the files hold them (NaN, −1 at the
    nulls) instead of a filled copy of each: the same values as the fill, on every shared capture."""
    from ackreplay.estimators.inputs import ACK_COLUMNS, ACK_FILL, numpy_columns
    from ackreplay.replay.engine import flow_columns

    spilled = 0
    for path in shared_captures():
        cap = ingest_capture(path, memory_budget=1, spill_dir=tmp_path)
        if not cap.stats.spilled:  # (a capture too small to spill at any budget)
            continue
        spilled += 1
        raw = cap.mapped["acks"]
        cols = flow_columns(cap.acks, ACK_COLUMNS, raw).cols
        filled = numpy_columns(cap.acks, ACK_COLUMNS)
        for name in ACK_FILL:
            assert np.shares_memory(cols[name], raw[name]), (path.name, name)
            assert not cols[name].flags.writeable
            assert np.array_equal(cols[name], filled[name], equal_nan=True), (path.name, name)
    assert spilled >= 5


def test_a_long_flow_hands_its_input_pages_back_after_every_estimator(tmp_path: Path, monkeypatch) -> None:
    """Above ``RELEASE_PER_JOB_ROWS`` ACK rows a spilled flow's pages are released after each estimator's job
    (as well as once the flow is done), and the scores do not change."""
    import ackreplay.replay.capture as replay

    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    ests = [E.create(n) for n in E.DEFAULT_ORDER]
    ref = replay_capture(ingest_capture(path, memory_budget=None), ests)
    cap = ingest_capture(path, memory_budget=1, spill_dir=tmp_path)
    calls: list[str] = []
    release = cap.release

    def counted(table: str, lo: int, hi: int) -> None:
        calls.append(table)
        release(table, lo, hi)

    monkeypatch.setattr(cap, "release", counted)
    monkeypatch.setattr(replay, "RELEASE_PER_JOB_ROWS", 0)
    got = replay_capture(cap, ests)
    assert [f.scores for f in got.flows] == [f.scores for f in ref.flows]
    flows_with_spans = len(got.flows)
    assert calls.count("acks") >= flows_with_spans * (len(ests) + 1)
