"""The compact packet columns of a capture being ingested: held in memory, or spilled to files.

``PacketStore`` receives the fast path's columns (``fastpath.PACKET_COLUMNS``) chunk by chunk. Without a
row limit it grows by doubling; with one (the memory budget) it moves full columns to a
:class:`~ingest.spill.ColumnSpill` and later reads back one contiguous range of connections at a time
(:meth:`PacketStore.group`, given each connection's packet count). It also counts the backward
timestamp steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ackreplay.ingest.fastpath import OPT_NCOL, PACKET_COLUMNS
from ackreplay.ingest.memory import lazy, populate_in_background, populated, release_in_background
from ackreplay.ingest.spill import ColumnSpill
from ackreplay.jitcache.kernel_mode import njit

#: Rows per block when packet columns are read back from the spill.
SPILL_READ_ROWS = 1 << 20
OPT_COLUMNS = tuple(f"opt{k}" for k in range(OPT_NCOL))


class Packets(NamedTuple):
    """Packets' columns by name (``fastpath.PACKET_COLUMNS``) and the option rows their ``opt_idx`` points into."""

    columns: dict[str, np.ndarray]
    opt: np.ndarray


class PacketStore:
    """The compact packet columns, preallocated from a size estimate and grown by doubling.

    With a row limit (the memory budget), full columns are moved to a :class:`ColumnSpill` instead of
    growing past it.
    """

    def __init__(self, row_limit: int | None, spill_dir: str | Path | None) -> None:
        self.cols = [np.empty(0, dt) for _, dt in PACKET_COLUMNS]
        self.opt = np.empty((0, OPT_NCOL), np.int64)
        self.n = 0
        self.n_opt = 0
        self.row_limit = row_limit
        self.spill_dir = spill_dir
        self.spill: ColumnSpill | None = None
        self.opt_spill: ColumnSpill | None = None
        self.reorders = 0
        self._last_ts = np.iinfo(np.int64).min

    def reserve(self, rows: int) -> None:
        if self.n + rows <= len(self.cols[0]):
            return
        cap = max(self.n + rows, 2 * len(self.cols[0]))
        if self.row_limit is not None:
            cap = max(self.n + rows, min(cap, self.row_limit + rows))
        for k, col in enumerate(self.cols):
            grown = lazy(cap, col.dtype)
            grown[: self.n] = col[: self.n]
            self.cols[k] = grown
        populate_in_background(self.cols, self.n)  # mapped in on the other core while decoding fills them

    def reserve_opt(self, rows: int) -> None:
        if self.n_opt + rows > len(self.opt):
            grown = np.empty((max(self.n_opt + rows, 2 * len(self.opt)), OPT_NCOL), np.int64)
            grown[: self.n_opt] = self.opt[: self.n_opt]
            self.opt = grown

    def added(self, lo: int) -> None:
        """Account rows ``lo..n`` just decoded: backward timestamp steps; spill when full."""
        if self.n == lo:
            return
        ts = self.cols[0][lo: self.n]
        self.reorders += backward_steps(ts, self._last_ts)
        self._last_ts = int(ts[-1])
        if self.row_limit is not None and self.n >= self.row_limit:
            self.flush()

    def flush(self) -> None:
        """Move the rows held to the spill (created on first use)."""
        if self.spill is None:
            self.spill = ColumnSpill(dict(PACKET_COLUMNS), self.spill_dir, "packets")
            self.opt_spill = ColumnSpill({name: np.dtype(np.int64) for name in OPT_COLUMNS}, self.spill_dir,
                                         "options")
        assert self.opt_spill is not None
        cols = self.columns()
        opt_idx = cols["opt_idx"]
        cols["opt_idx"] = np.where(opt_idx >= 0, opt_idx + self.opt_spill.rows, -1).astype(np.int32)
        self.spill.append(cols)
        self.opt_spill.append({name: self.opt[: self.n_opt, k] for k, name in enumerate(OPT_COLUMNS)})
        self.n = 0
        self.n_opt = 0

    def drop_columns(self, background: bool = False) -> None:
        """Free the in-memory columns (after the last flush, or once analysed); with ``background``,
        unmapped by a thread."""
        if background:
            release_in_background(self.cols)
        self.cols = [np.empty(0, dt) for _, dt in PACKET_COLUMNS]
        self.opt = np.empty((0, OPT_NCOL), np.int64)
        self.n = self.n_opt = 0

    def close(self) -> None:
        """Drop the columns held and delete the spill files."""
        self.drop_columns()
        for spill in (self.spill, self.opt_spill):
            if spill is not None:
                spill.close()

    def named(self) -> dict[str, np.ndarray]:
        """The columns by name, at their full capacity (for the decoder to write into)."""
        return {name: col for (name, _), col in zip(PACKET_COLUMNS, self.cols, strict=True)}

    def columns(self) -> dict[str, np.ndarray]:
        return {name: col[: self.n] for (name, _), col in zip(PACKET_COLUMNS, self.cols, strict=True)}

    def opt_table(self) -> np.ndarray:
        return options_table(self.opt[: self.n_opt])

    def group(self, c_lo: int, c_hi: int, size: int) -> Packets:
        """The ``size`` spilled packets of connections ``c_lo..c_hi-1`` (capture order; ``conn`` made local)."""
        out = {name: populated(size, dt) for name, dt in PACKET_COLUMNS}
        opt_parts: list[np.ndarray] = []
        n_opt = 0
        pos = 0
        for cols, opt in self.blocks(c_lo, c_hi):
            k = len(cols["conn"])
            for name, _ in PACKET_COLUMNS:
                out[name][pos: pos + k] = cols[name]
            idx = out["opt_idx"][pos: pos + k]
            idx[idx >= 0] += n_opt
            if len(opt):
                opt_parts.append(opt)
                n_opt += len(opt)
            pos += k
        out["conn"] -= c_lo
        return Packets(out, options_table(np.concatenate(opt_parts) if opt_parts else self.opt[:0]))

    def blocks(self, c_lo: int, c_hi: int, rows: int | None = None, buffers: int = 1
               ) -> Iterator[Packets]:
        """The spilled packets of connections ``c_lo..c_hi-1`` in capture order, one read block (``rows`` spilled
        packets; by default a quarter of the row limit, at most ``SPILL_READ_ROWS``) at a time: the block's
        columns, and its option rows (``opt_idx`` points into them). The arrays stay valid while ``buffers``
        − 1 newer blocks are read (a ring of read buffers)."""
        assert self.spill is not None and self.opt_spill is not None
        step = rows or max(1 << 16, min(SPILL_READ_ROWS, (self.row_limit or SPILL_READ_ROWS) // 4))
        ring = [{name: np.empty(min(step, self.spill.rows), dt) for name, dt in PACKET_COLUMNS}
                for _ in range(buffers)]
        for k, lo in enumerate(range(0, self.spill.rows, step)):
            buf = ring[k % buffers]
            hi = min(lo + step, self.spill.rows)
            conn = self.spill.read("conn", lo, hi, buf["conn"])
            take = np.flatnonzero((conn >= c_lo) & (conn < c_hi))
            if not len(take):
                continue
            whole = len(take) == hi - lo  # every packet of the block: the read buffers as they are
            cols: dict[str, np.ndarray] = {}
            for name, _ in PACKET_COLUMNS:
                col = conn if name == "conn" else self.spill.read(name, lo, hi, buf[name])
                cols[name] = col if whole else col[take]
            idx = cols["opt_idx"]
            has = idx >= 0
            opt = self.opt[:0]
            if has.any():
                first, last = int(idx[has].min()), int(idx[has].max()) + 1
                block = np.stack([self.opt_spill.read(name, first, last) for name in OPT_COLUMNS], axis=1)
                opt = block[idx[has] - first]
                idx[has] = np.arange(int(has.sum()), dtype=idx.dtype)  # (the read buffer: read again next block)
            yield Packets(cols, opt)


def options_table(rows: np.ndarray) -> np.ndarray:
    """An options table for the analysis: the rows, or one row of zeros when there are none (no packet
    points into it, and the compiled code is given a non-empty array)."""
    return rows if len(rows) else np.zeros((1, OPT_NCOL), np.int64)


@njit(cache=True, nogil=True)
def backward_steps(ts: np.ndarray, before: int) -> int:
    """How many timestamps are earlier than the one before them (``before``: the previous chunk's last)."""
    n = 0
    prev = before
    for x in ts:
        if x < prev:
            n += 1
        prev = x
    return n
