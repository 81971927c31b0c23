"""A replay task's series written batch by batch (``replay.capture.replay_capture``'s ``on_batch``) to a local
Parquet file, one row group per batch, and each batch's series dropped once written: a task holds one batch's
series, not every flow's of every estimator (a sweep of 65 variants over a long flow held them all, then a copy
of them joined as one table, then its Parquet bytes). Stored (``Store.put_file``) once it fits in the owner's
quota; the same table ``replay.results.series_table`` makes (column ``flow_id``), as readers filter it."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ackreplay.replay.results import FlowReplay, series_table

#: Bytes a kept series costs per event and column (float64): a batch's series have a column per estimator and
#: the flow's t, t_rel, achieved and truth columns (``SERIES_COLUMNS``).
SERIES_BYTES_PER_VALUE = 8
SERIES_COLUMNS = 4


def series_bytes_per_event(estimators: int) -> int:
    """What one event's kept series cost while its batch is replayed and written."""
    return SERIES_BYTES_PER_VALUE * (estimators + SERIES_COLUMNS)


class SeriesWriter:
    """The series of a task's batches as one local Parquet file (:attr:`path`), removed on exit."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="ackreplay-series-")
        self.path = Path(self._dir.name) / "series.parquet"
        self._writer: Any = None  # (a pyarrow ParquetWriter once a batch kept series)

    def add(self, flows: Sequence[FlowReplay]) -> None:
        """Write the series of a batch's flows (those that kept them) and drop them from the flows."""
        table = series_table(flows)
        if table.height:
            arrow = table.to_arrow()
            if self._writer is None:
                import pyarrow.parquet as pq  # (on first use: the API imports this module too)

                self._writer = pq.ParquetWriter(self.path, arrow.schema, compression="zstd")
            self._writer.write_table(arrow)
            del arrow
        for f in flows:
            f.columns = None

    def close(self) -> int:
        """Finish the file; its size in bytes (0: no flow kept a series, and there is no file)."""
        if self._writer is None:
            return 0
        self._writer.close()
        self._writer = None
        return self.path.stat().st_size

    def __enter__(self) -> SeriesWriter:
        return self

    def __exit__(self, *_: object) -> None:
        if self._writer is not None:
            self._writer.close()
        self._dir.cleanup()
