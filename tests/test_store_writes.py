"""The object store's Parquet writes are atomic: a reader of a key sees the old table or the new one, never a partial
one, even while another ingest of the same capture rewrites it (``core.storage.Store.write_parquet``)."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ackreplay.core.storage import Store


def test_a_rewrite_is_never_seen_half_written(tmp_path: Path) -> None:
    store = Store(str(tmp_path))
    old = pl.DataFrame({"flow_id": list(range(1000)), "x": [1.0] * 1000})
    new = pl.DataFrame({"flow_id": list(range(200_000)), "x": [2.0] * 200_000})
    store.write_parquet("captures/c/flows.parquet", old)
    target = tmp_path / "captures" / "c" / "flows.parquet"
    seen: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:  # one open per read, as a task reads an object: the old file or the new one, whole
        while not done.is_set():
            try:
                seen.append(pl.read_parquet(io.BytesIO(target.read_bytes())).height)
            except BaseException as exc:  # a partial file (a thread's exception would not fail the test)
                errors.append(exc)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(5):
            store.write_parquet("captures/c/flows.parquet", new, row_group_size=1000)
            store.write_parquet("captures/c/flows.parquet", old)
    finally:
        done.set()
        reader.join()
    assert not errors, errors
    assert seen and set(seen) <= {1000, 200_000}
    assert sorted(p.name for p in target.parent.iterdir()) == ["flows.parquet"]  # no temporary object left


def test_a_failed_write_keeps_the_old_table_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    store = Store(str(tmp_path))
    store.write_parquet("t.parquet", pl.DataFrame({"a": [1, 2, 3]}))

    def fail_midway(self: pl.DataFrame, out: Any, **_: Any) -> None:
        out.write(b"PAR1 half a table")
        raise OSError("no space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", fail_midway)
    with pytest.raises(OSError, match="no space left"):
        store.write_parquet("t.parquet", pl.DataFrame({"a": [1]}))
    monkeypatch.undo()
    assert pl.read_parquet(tmp_path / "t.parquet")["a"].to_list() == [1, 2, 3]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]
