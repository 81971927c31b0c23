"""Column tables kept on disk while ingesting a capture too large for the memory budget.

A :class:`ColumnSpill` is a directory of append-only raw files, one per column (numpy's native byte
order, no header). Ingest appends blocks of rows and reads them back in blocks with ``readinto`` —
page-cache reads, which do not count against the process's memory — and finally maps the output
columns read-only with ``np.memmap``, so the returned Polars tables are backed by the files (zero
copy) and their pages are reclaimable by the kernel instead of needing RAM.

The files are unlinked as soon as they are mapped (POSIX keeps a mapped file until it is unmapped),
so nothing is left on disk when the tables are dropped or the process ends.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ackreplay.ingest.source import read_fully


class ColumnSpill:
    """Append-only column files in a private temporary directory."""

    def __init__(self, columns: Mapping[str, Any], base_dir: str | Path | None = None,
                 prefix: str = "spill") -> None:
        self.dtypes = {name: np.dtype(dt) for name, dt in columns.items()}
        self.dir = Path(tempfile.mkdtemp(prefix=f"ackreplay-{prefix}-", dir=base_dir))
        self.rows = 0
        self._files = {name: open(self.dir / f"{name}.bin", "wb") for name in self.dtypes}  # noqa: SIM115

    def append(self, cols: dict[str, np.ndarray]) -> None:
        """Append one block of rows (every column, equal lengths)."""
        n = -1
        for name, dt in self.dtypes.items():
            col = np.ascontiguousarray(cols[name], dtype=dt)
            if n < 0:
                n = len(col)
            elif len(col) != n:
                raise ValueError(f"column {name} has {len(col)} rows, expected {n}")
            self._files[name].write(col.data.cast("B"))
        self.rows += max(n, 0)

    def truncate(self, rows: int) -> None:
        """Drop every row from ``rows`` on (rows appended since a given count)."""
        self._flush()
        for name, dt in self.dtypes.items():
            self._files[name].truncate(rows * dt.itemsize)
            self._files[name].seek(rows * dt.itemsize)
        self.rows = rows

    def _flush(self) -> None:
        for f in self._files.values():
            f.flush()

    def read(self, name: str, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows ``lo:hi`` of one column, read into ``out`` (or a new array)."""
        self._flush()
        dt = self.dtypes[name]
        n = hi - lo
        arr = out[:n] if out is not None else np.empty(n, dt)
        with open(self.dir / f"{name}.bin", "rb", buffering=0) as f:
            f.seek(lo * dt.itemsize)
            view = arr.data.cast("B")
            if read_fully(f, view) < len(view):
                raise OSError(f"spill file {name}.bin ends early")
        return arr

    def mapped(self) -> dict[str, np.ndarray]:
        """Every column, mapped read-only from its file; the directory is removed afterwards."""
        self._flush()
        out: dict[str, np.ndarray] = {}
        for name, dt in self.dtypes.items():
            self._files[name].close()
            path = self.dir / f"{name}.bin"
            out[name] = np.memmap(path, dtype=dt, mode="r") if self.rows else np.empty(0, dt)
        self.close()
        return out

    def close(self) -> None:
        """Close and delete the files (mapped columns stay readable until dropped)."""
        for f in self._files.values():
            if not f.closed:
                f.close()
        shutil.rmtree(self.dir, ignore_errors=True)

