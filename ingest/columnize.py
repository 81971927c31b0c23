"""Record batches → the compact packet columns, decoded on up to two cores.

Each batch is decoded in two compiled passes (``ingest.fastpath``):

1. ``decode_span`` — link, IP and TCP headers, the compact columns, each row's endpoint pair and its
   hash. It depends on nothing but the record, so a large batch is cut in two spans decoded at once
   (the second in a helper thread: the compiled code releases the GIL). The second span writes its
   rows after room for one row per record of the first; the rows of records that were not TCP packets
   leave a gap that ``close_gap`` closes (the options side table likewise).
2. ``demux_rows`` — connection and direction, in capture order, from the connection tables that
   persist across batches (and each connection's counts, ``demux.CS_*``): a sequential pass over the
   hashed pairs, a few nanoseconds a packet.

The columns are the same, row for row, whatever the split (``tests/ingest/test_reference_equivalence.py``).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ackreplay.ingest.decode import NCOL, REASONS, SUPPORTED_LINKTYPES
from ackreplay.ingest.demux import Demux
from ackreplay.ingest.errors import UnsupportedLinkTypeError
from ackreplay.ingest.fastpath import SCRATCH_NCOL, close_gap, decode_span, demux_rows
from ackreplay.ingest.packets import PacketStore
from ackreplay.ingest.records import RecordBatch

#: A batch of fewer records is decoded in one span (a thread hand-off costs more than it saves).
SPLIT_MIN_RECORDS = 16_384


class BatchDecoder:
    """Decodes batches in capture order into ``store``, assigning connections with ``demux``."""

    def __init__(self, demux: Demux, store: PacketStore, reasons: np.ndarray, threads: int,
                 split_min_records: int = SPLIT_MIN_RECORDS) -> None:
        self.demux = demux
        self.store = store
        self.reasons = reasons
        self.scratch = np.empty((0, SCRATCH_NCOL), np.int64)
        self.split_min_records = max(2, split_min_records)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ingest-decode") if threads > 1 else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def decode(self, batch: RecordBatch, capture_size: int) -> None:
        """Decode one batch; ``capture_size`` (bytes) sizes the columns from the first batch's density."""
        check_linktypes(batch)
        store = self.store
        n = len(batch)
        first_batch = len(store.cols[0]) == 0 and n > 0
        store.reserve(n)
        store.reserve_opt(n)
        if len(self.scratch) < n:
            self.scratch = np.empty((max(n, 2 * len(self.scratch)), SCRATCH_NCOL), np.int64)
        first = store.n
        if self._pool is None or n < self.split_min_records:
            end, store.n_opt = self._span(batch, 0, n, first, first, store.n_opt, self.reasons)
        else:
            end, store.n_opt = self._two_spans(batch, n, first, store.n_opt)
        self._demux(first, end, first)
        store.n = end
        if first_batch:
            reserve_for_capture(store, end - first, n, batch.source_position, capture_size)
        store.added(first)

    def _decoded(self) -> tuple[np.ndarray, ...]:
        """The columns ``decode_span`` and ``close_gap`` write, in their argument order."""
        c = self.store.named()
        return (c["ts"], c["seq"], c["ack"], c["flags"], c["win"], c["plen"], c["tsval"], c["tsecr"], c["opt_idx"],
                c["frame"], self.store.opt, self.scratch)

    def _span(self, batch: RecordBatch, lo: int, hi: int, m: int, t0: int, nopt: int,
              reasons: np.ndarray) -> tuple[int, int]:
        """Decode records ``lo..hi-1`` into rows ``m..``; (rows end, option rows end)."""
        return decode_span(batch.buf, batch.offset, batch.caplen, batch.origlen, batch.ts_ns, batch.linktype,
                           lo, hi, m, t0, nopt, reasons, batch.first_record, *self._decoded(),
                           np.empty(NCOL, np.int64))

    def _two_spans(self, batch: RecordBatch, n: int, first: int, nopt: int) -> tuple[int, int]:
        """Records ``0..n/2`` here and the rest in the helper thread, then close the gap between them."""
        assert self._pool is not None
        mid = n // 2
        reasons_b = np.zeros(len(REASONS), np.int64)
        later: Future[tuple[int, int]] = self._pool.submit(
            self._span, batch, mid, n, first + mid, first, nopt + mid, reasons_b)
        try:
            end_a, opt_a = self._span(batch, 0, mid, first, first, nopt, self.reasons)
        finally:
            end_b, opt_b = later.result()
        self.reasons += reasons_b
        rows_b, opt_rows_b = end_b - (first + mid), opt_b - (nopt + mid)
        close_gap(first + mid, end_a, rows_b, first, nopt + mid, opt_a, opt_rows_b, *self._decoded())
        return end_a + rows_b, opt_a + opt_rows_b

    def _demux(self, lo: int, hi: int, t0: int) -> None:
        """Connections and directions of rows ``lo..hi-1``, growing the tables as often as needed."""
        c = self.store.named()
        while lo < hi:
            lo = demux_rows(
                lo, hi, t0, self.scratch, c["ts"], c["flags"], c["seq"], c["ack"], *self.demux.tables(), c["plen"],
                c["conn"], c["dir"])
            if lo < hi:
                self.demux.grow()


def reserve_for_capture(store: PacketStore, rows: int, records: int, done: int, capture_size: int) -> None:
    """Size the columns for the whole capture from its first batch: ``rows`` TCP packets decoded of
    ``records`` records in its first ``done`` bytes. The estimate follows the TCP packets, not the records:
    a capture of records that are not TCP packets (or of empty ones) keeps room for a batch's records, where the
    records' density would reserve — and populate — up to the row limit (5 M rows, 240 MB at the default
    budget; without a budget, 45 bytes a record of the whole file). Capacity beyond the estimate grows by
    doubling (``PacketStore.reserve``)."""
    estimate = int(rows * max(1.0, capture_size / max(1, done)) * 1.05) + 1024
    if store.row_limit is not None:
        estimate = min(estimate, store.row_limit + records)
    store.reserve(max(0, estimate - store.n))


def check_linktypes(batch: RecordBatch) -> None:
    """Raise :class:`UnsupportedLinkTypeError` when a batch holds a link type the decoder does not know."""
    lt = batch.linktype
    if len(lt) and (lt[0] != lt[-1] or int(lt[0]) not in SUPPORTED_LINKTYPES):
        bad = set(np.unique(lt).tolist()) - SUPPORTED_LINKTYPES
        if bad:
            raise UnsupportedLinkTypeError(min(bad))
