"""Bounded-memory ingest (spilled packet columns, connection groups, mapped tables) and threaded
analysis give exactly the in-memory, single-threaded result on every capture."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import dpkt
import numpy as np
import pytest
from polars.testing import assert_frame_equal

from ackreplay.ingest import analyze, ingest_capture
from ackreplay.ingest import capture as pipeline
from ackreplay.ingest.model import CaptureIngest
from ackreplay.ingest.packets import PacketStore
from tests import pcapgen as g
from tests.conftest import shared_captures


def assert_same(got: CaptureIngest, ref: CaptureIngest) -> None:
    assert [f.to_dict() for f in got.flows] == [f.to_dict() for f in ref.flows]
    for name in ("acks", "segments", "episodes"):
        assert_frame_equal(getattr(got, name), getattr(ref, name))
    skip = {"connection_groups", "spilled", "warnings"}
    assert {k: v for k, v in got.stats.to_dict().items() if k not in skip} == {
        k: v for k, v in ref.stats.to_dict().items() if k not in skip
    }
    assert [w for w in got.stats.warnings if "memory budget" not in w] == ref.stats.warnings


@pytest.fixture
def always_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyze, "PARALLEL_MIN_PACKETS", 0)


@pytest.mark.parametrize("path", shared_captures(), ids=lambda p: p.name)
def test_spilled_groups_and_threads_equal_in_memory(path: Path, tmp_path: Path, always_parallel: None) -> None:
    ref = ingest_capture(path, threads=1, memory_budget=None)
    assert not ref.stats.spilled and ref.stats.connection_groups == 1
    threaded = ingest_capture(path, threads=2, memory_budget=None)
    assert_same(threaded, ref)
    # a 1-byte budget: packet columns spill every chunk, each group holds as few connections as fit
    bounded = ingest_capture(path, threads=2, memory_budget=1, chunk_bytes=1 << 16, spill_dir=tmp_path)
    assert_same(bounded, ref)
    per_connection = pipeline.ROWS_PER_CONNECTION * ref.stats.connections
    assert bounded.stats.spilled == (ref.stats.tcp_packets + per_connection > 1024)
    if bounded.stats.spilled and ref.stats.connections > 1:
        assert bounded.stats.connection_groups > 1
    assert list(tmp_path.iterdir()) == []  # spill files removed; the tables stay readable
    assert bounded.acks["t_ns"].sum() == ref.acks["t_ns"].sum()


def test_spilled_capture_with_backward_timestamps(tmp_path: Path) -> None:
    """Reordered capture timestamps are re-sorted per connection group exactly as for the whole capture."""
    src = next(p for p in shared_captures() if p.name.startswith("s09"))
    with src.open("rb") as f:
        recs = [g.Rec(int(ts * 1e9), bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]
    rng = np.random.default_rng(3)
    for i in rng.choice(len(recs) - 1, 300, replace=False):  # swap neighbours in file order
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
    path = tmp_path / "reordered.pcap"
    path.write_bytes(g.pcap(recs))
    ref = ingest_capture(path, memory_budget=None)
    assert ref.stats.timestamp_reorders > 0
    spill = tmp_path / "spill"
    spill.mkdir()
    bounded = ingest_capture(path, memory_budget=1, chunk_bytes=1 << 16, spill_dir=spill)
    assert bounded.stats.spilled and bounded.stats.connection_groups > 1
    assert_same(bounded, ref)


def test_many_connections_within_the_budget_by_packets_are_analysed_in_groups(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture whose packets fit the budget but whose connections' flows would not (a million small flows) is
    spilled and analysed in groups all the same, with the in-memory result."""
    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    ref = ingest_capture(path, memory_budget=None)
    budget = 1 << 30
    assert ref.stats.tcp_packets * pipeline.BYTES_PER_PACKET < budget
    monkeypatch.setattr(pipeline, "ROWS_PER_CONNECTION", budget // pipeline.BYTES_PER_PACKET)  # one is beyond it
    bounded = ingest_capture(path, memory_budget=budget, spill_dir=tmp_path)
    assert bounded.stats.spilled and bounded.stats.connection_groups == ref.stats.connections
    assert_same(bounded, ref)


def test_budget_above_the_working_set_stays_in_memory(tmp_path: Path) -> None:
    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    cap = ingest_capture(path, memory_budget=1 << 30, spill_dir=tmp_path)
    assert not cap.stats.spilled and cap.stats.connection_groups == 1
    assert list(tmp_path.iterdir()) == []


def test_connection_beyond_the_budget_is_analysed_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection larger than the budget is read back and analysed a block at a time, its state carried from
    block to block (``ingest.chunked``): same result, no warning, its packets never held whole."""
    path = next(p for p in shared_captures() if p.name.startswith("s04"))
    ref = ingest_capture(path, memory_budget=None)
    big = max(ref.flows, key=lambda f: f.packets)
    held: list[int] = []
    blocks = PacketStore.blocks

    def spy(self: PacketStore, c_lo: int, c_hi: int, rows: int | None = None, buffers: int = 1
            ) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray]]:
        for cols, opt in blocks(self, c_lo, c_hi, rows, buffers):
            held.append(len(cols["ts"]))
            yield cols, opt

    monkeypatch.setattr(PacketStore, "blocks", spy)
    monkeypatch.setattr(pipeline, "CHUNK_FRACTION", 1)  # blocks of the row limit's 1024 packets
    bounded = ingest_capture(path, memory_budget=1, spill_dir=tmp_path)
    assert_same(bounded, ref)
    assert not [w for w in bounded.stats.warnings if "memory budget" in w]
    assert len(held) > 2 * (big.packets // 1024) and max(held) <= 1024  # two passes, in blocks


def test_receiver_side_connection_beyond_the_budget_is_analysed_whole(tmp_path: Path) -> None:
    """Rebuilding a receiver-side flow's sender view rewrites the whole flow: its chunked rows are taken back and
    the connection analysed in one piece, with a warning; the result is the in-memory one."""
    path = next(p for p in shared_captures() if p.name.endswith("_2sides_rcv.pcap"))
    ref = ingest_capture(path, memory_budget=None)
    big = max(ref.flows, key=lambda f: f.packets)
    assert big.vantage == "receiver" and big.reconstruction is not None
    bounded = ingest_capture(path, memory_budget=1, spill_dir=tmp_path)
    assert_same(bounded, ref)
    assert any(f"connection {big.connection} alone holds {big.packets} packets" in w and "rebuilt whole" in w
               for w in bounded.stats.warnings), bounded.stats.warnings


def test_spilled_gzip_capture_equals_in_memory(tmp_path: Path) -> None:
    src = next(p for p in shared_captures() if p.name.startswith("s03"))
    gz = tmp_path / "s03.pcapng.gz"
    gz.write_bytes(gzip.compress(src.read_bytes(), compresslevel=1))
    spill = tmp_path / "spill"
    spill.mkdir()
    ref = ingest_capture(gz, memory_budget=None)
    bounded = ingest_capture(gz, memory_budget=1, chunk_bytes=1 << 16, spill_dir=spill)
    assert bounded.stats.spilled and bounded.stats.gzipped
    assert_same(bounded, ref)
    assert list(spill.iterdir()) == []
