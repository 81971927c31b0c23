"""A replay task's series written batch by batch (``replay.capture.replay_capture``'s ``on_batch``) to a local
Parquet file, and each batch's series dropped once written: a task holds one batch's
series, not every flow's of every estimator (a sweep of 65 variants over a long flow held them all, then a copy
of them joined as one table, then its Parquet bytes). Stored (``Store.put_file``) once it fits in the owner's
quota; the same table ``replay.results.series_table`` makes (column ``flow_id``), as readers filter it."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from ackreplay.replay.results import FlowReplay, series_table

#: Bytes a kept series costs per event and column (float64): a batch's series have a column per estimator and
#: the flow's t, t_rel, achieved and truth columns (``SERIES_COLUMNS``).
SERIES_BYTES_PER_VALUE = 8
SERIES_COLUMNS = 4


def series_bytes_per_event(estimators: int) -> int:
    """What one event's kept series cost while its batch is replayed and written."""
    return SERIES_BYTES_PER_VALUE * (estimators + SERIES_COLUMNS)


class SeriesWriter:
    """The series of a task's batches as one local Parquet file (:attr:`path`, once :meth:`close` made it),
    removed on exit. Each batch is written as its own part (Polars, zstd) and dropped; :meth:`close` streams the
    parts into one file (``sink_parquet``: a row group at a time, never the whole table in memory). Polars
    alone: pyarrow is not among the installed package's dependencies."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ackreplay-series-")
        self.path = Path(self._dir.name) / "series.parquet"
        self._parts: list[Path] = []

    def add(self, flows: Sequence[FlowReplay]) -> None:
        """Write the series of a batch's flows (those that kept them) and drop them from the flows."""
        table = series_table(flows)
        if table.height:
            part = Path(self._dir.name) / f"part-{len(self._parts):06d}.parquet"
            table.write_parquet(part, compression="zstd")
            self._parts.append(part)
        del table
        for f in flows:
            f.columns = None

    def close(self) -> int:
        """Finish the file; its size in bytes (0: no flow kept a series, and there is no file)."""
        if not self._parts:
            return 0
        if len(self._parts) == 1:
            self._parts[0].replace(self.path)
        else:
            pl.scan_parquet(self._parts).sink_parquet(self.path, compression="zstd")
            for part in self._parts:
                part.unlink()
        self._parts = []
        return self.path.stat().st_size

    def __enter__(self) -> SeriesWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self._dir.cleanup()
