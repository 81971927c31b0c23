"""One connection larger than the memory budget, analysed in chunks with its state carried over.

A bounded ingest (``ingest.capture``) analyses connections in groups that fit the budget; a single
connection above it would otherwise have to be held whole — its packet columns, and its ACK and segment
rows until they are written out. Here its packets are read back from the spill a block at a time, each
direction passes over them twice — the pre-pass (``tcpflow.flow_prepass``: handshake options, payload
sizes) and the main pass (``tcpflow.flow_main``) — with every variable the analysis carries from one packet
to the next kept in the state arrays between blocks, and each block's ACK and segment rows are appended to
the output spill at once (a helper thread writes one block's rows while the next block is analysed, and
the next block is read ahead). What stays in memory is a few blocks of packets and rows, the per-flow working
arrays (a few words per data segment: segments sent, for retransmissions and Karn's rule) and the loss
episodes. The rows, flows and episodes are exactly those of the analysis in one pass
(``tests/ingest/test_bounded_memory.py``).

Not chunked, analysed whole (beyond the budget, with a warning): a capture whose timestamps go
backwards (its packets must be re-sorted by time first), and a connection with a receiver-side or mid-path
flow — rebuilding the sender's view (``ingest.reconstruct``) rewrites rows of the whole flow; such a
connection's chunked rows are taken back and it is analysed again in one piece.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass

import numpy as np

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.demux import CS_PAYLOAD0
from ackreplay.ingest.frames import TableSink, ack_columns, segment_columns
from ackreplay.ingest.packets import PacketStore, options_table
from ackreplay.ingest.records import prefetch


@dataclass
class ChunkedAnalysis:
    """A connection's flows (``F_i``/``F_f`` rows, group-local row offsets) and episodes; its ACK and
    segment rows are in the table sink from ``acks_before``/``segments_before`` on."""

    F_i: np.ndarray
    F_f: np.ndarray
    E_i: np.ndarray
    acks_before: int
    segments_before: int

    @property
    def n_flows(self) -> int:
        return len(self.F_i)


def analyze_connection(store: PacketStore, c: int, stats: np.ndarray, flow_base: int,
                       tables: TableSink, block_rows: int) -> ChunkedAnalysis:
    """Analyse spilled connection ``c`` (``stats``: its ``demux.conn_stats`` row) in blocks of ``block_rows``
    spilled packets, appending its rows to the spilled ``tables`` (flow ids from ``flow_base``)."""
    assert tables.spills is not None
    acks_before, segments_before = tables.spills["acks"].rows, tables.spills["segments"].rows
    work = tf.work_arrays(stats[None, :])
    sb = tf.scoreboard()  # the SACK scoreboard (flow_main grows it as needed)
    F_i = np.empty((2, tf.FI_NCOL), np.int64)
    F_f = np.empty((2, tf.FF_NCOL), np.float64)
    E_i = np.empty((tf.EI_NCOL, 1024), np.int64)
    # two sets of output rows: a helper thread appends one set to the spill while the next block is analysed
    # into the other (the analysis releases the GIL, file writes too); the next block is read ahead likewise
    outs = [(np.empty((tf.AI_NCOL, block_rows + 1), np.int64), np.empty((tf.AF_NCOL, block_rows + 1), np.float64),
             np.empty((tf.SI_NCOL, block_rows + 1), np.int64), np.empty((tf.SF_NCOL, block_rows + 1), np.float64))
            for _ in range(2)]
    pending: list[Future[None] | None] = [None, None]
    order = np.arange(block_rows + 1, dtype=np.int32)
    rows = np.zeros(3, np.int64)  # the rows flow_start and flow_main start at (tf.NEXT_*); flow_main advances them
    na = ns = ne = nf = k = 0

    def write(out: tuple[np.ndarray, ...], a: int, s: int) -> None:
        A_i, A_f, S_i, S_f = out
        tables.add("acks", ack_columns(A_i[:, :a], A_f[:, :a], flow_base))
        tables.add("segments", segment_columns(S_i[:, :s], S_f[:, :s], flow_base))

    with ThreadPoolExecutor(1, thread_name_prefix="ingest-write") as writer:
        for d in range(2):
            if stats[CS_PAYLOAD0 + d] == 0:  # no payload: not a flow
                continue
            st = tf.flow_state()
            with closing(prefetch(store.blocks(c, c + 1, block_rows, buffers=3))) as blocks:
                for pk, opt in blocks:
                    tf.flow_prepass(0, len(pk["ts"]), d, order, tf.flow_columns(pk, options_table(opt)), work, st)
            rows[:] = (na, ns, ne)
            if not tf.flow_start(st, work, rows):
                continue
            with closing(prefetch(store.blocks(c, c + 1, block_rows, buffers=3))) as blocks:
                for pk, opt in blocks:
                    n = len(pk["ts"])
                    if ne + n > E_i.shape[1]:  # at most one episode per packet
                        grown = np.empty((tf.EI_NCOL, max(2 * E_i.shape[1], ne + n)), np.int64)
                        grown[:, :ne] = E_i[:, :ne]
                        E_i = grown
                    j = k % 2
                    prev = pending[j]
                    if prev is not None:  # that set is written out before it is reused
                        prev.result()
                    rows[:] = (0, 0, ne)  # the block's rows from the first of its output set
                    sb = tf.flow_main(0, n, d, nf, order, tf.flow_columns(pk, options_table(opt)), work, sb,
                                      tf.FlowTables(*outs[j], E_i), rows, st)
                    a, s, ne = (int(x) for x in rows)
                    pending[j] = writer.submit(write, outs[j], a, s)
                    na += a
                    ns += s
                    k += 1
            tf.flow_finish(nf, d, rows, st, F_i, F_f)
            F_i[nf, tf.FI_CONN] = c
            nf += 1
        for f in pending:  # every block written (and any error raised) before the rows are read
            if f is not None:
                f.result()
    return ChunkedAnalysis(F_i[:nf].copy(), F_f[:nf].copy(), E_i[:, :ne].copy(), acks_before, segments_before)
