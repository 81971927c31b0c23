"""Flow analysis of a group of connections, on several cores.

The packets of a group (every connection of a capture that fits the memory budget, else a range of
connections) are ordered by connection (a counting sort), their output rows known per connection from
the demultiplexer's counts (``demux.CS_*``), and the connections split into contiguous ranges of
about equal packet counts, several per thread.
``tcpflow.analyze_all`` releases the GIL; each range writes its ACK and segment rows at offsets known
from the counts, so the result is identical to one sequential pass — only the episode tables, whose
sizes are not known in advance, are per range and concatenated in range order.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from ackreplay.ingest import tcpflow as tf
from ackreplay.ingest.demux import CS_ACKS0, CS_ACKS1, CS_PACKETS, CS_PAYLOAD0, CS_PAYLOAD1, CS_SEGMENTS
from ackreplay.ingest.fastpath import order_by_connection
from ackreplay.ingest.memory import lazy, populate_in_background, populated
from ackreplay.jitcache import load_cached

#: Below this many packets a group is analysed in the calling thread (threads cost more than they save).
PARALLEL_MIN_PACKETS = 200_000
RANGES_PER_THREAD = 4


def default_threads() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class GroupAnalysis:
    """Outputs of one group: column-major row tables trimmed to the rows written, per-flow results."""

    A_i: np.ndarray
    A_f: np.ndarray
    S_i: np.ndarray
    S_f: np.ndarray
    E_i: np.ndarray
    F_i: np.ndarray  # one row per flow of the group, in flow order
    F_f: np.ndarray

    @property
    def n_flows(self) -> int:
        return len(self.F_i)


def output_rows(stats: np.ndarray) -> np.ndarray:
    """Per connection (rows of ``demux.conn_stats``): the ACK rows, data segments and flows
    ``tcpflow.analyze_all`` writes — an ACK row for each pure ACK of a direction whose opposite direction
    carried payload, a segment row for each data segment, a flow for each direction with payload."""
    counts = np.empty((len(stats), 3), np.int64)
    counts[:, 0] = stats[:, CS_ACKS0] * stats[:, CS_PAYLOAD1] + stats[:, CS_ACKS1] * stats[:, CS_PAYLOAD0]
    counts[:, 1] = stats[:, CS_SEGMENTS]
    counts[:, 2] = stats[:, CS_PAYLOAD0] + stats[:, CS_PAYLOAD1]
    return counts


def analyze_group(pk: dict[str, np.ndarray], opt_tab: np.ndarray, stats: np.ndarray, conn_base: int,
                  threads: int = 1) -> GroupAnalysis:
    """Analyse the connections of the packet columns ``pk`` (``pk["conn"]`` local to the group) with
    ``opt_tab``, the options side table ``pk["opt_idx"]`` points into; ``stats`` holds the connections'
    ``demux.conn_stats`` rows.

    Flow numbers in the outputs start at 0 for the group; ``F_i[:, FI_CONN]`` is ``conn_base + c``.
    """
    n = len(pk["ts"])
    n_conns = len(stats)
    bounds = np.zeros(n_conns + 1, np.int64)
    np.cumsum(stats[:, CS_PACKETS], out=bounds[1:])
    assert bounds[-1] == n, "connection packet counts do not add up to the packets"
    order = populated(n, np.int32 if n < 1 << 31 else np.int64)
    order_by_connection(pk["conn"], bounds, order)
    cols = tf.flow_columns(pk, opt_tab)
    counts = output_rows(stats)
    offsets = np.zeros((n_conns + 1, 3), np.int64)
    np.cumsum(counts, axis=0, out=offsets[1:])
    n_ack, n_seg, n_flows = (int(x) for x in offsets[-1])
    A_i = lazy((tf.AI_NCOL, n_ack + 1), np.int64)
    A_f = lazy((tf.AF_NCOL, n_ack + 1), np.float64)
    S_i = lazy((tf.SI_NCOL, n_seg + 1), np.int64)
    S_f = lazy((tf.SF_NCOL, n_seg + 1), np.float64)
    F_i = np.empty((n_flows + 1, tf.FI_NCOL), np.int64)
    F_f = np.empty((n_flows + 1, tf.FF_NCOL), np.float64)

    # several ranges a thread, taken in turn, so that a slow range does not leave a core idle
    cuts = _split(bounds, RANGES_PER_THREAD * threads if threads > 1 and n >= PARALLEL_MIN_PACKETS else 1)
    # One range (one connection holds most packets): the analysis runs on one core, and the other maps the
    # pages of its outputs and working arrays in ahead of it — first touches of fresh pages are most of
    # its time (0.8 of 1.2 s on a 6 M-packet flow). With several ranges the analysis threads take their
    # own faults in parallel.
    single = len(cuts) == 2 and threads > 1 and n >= PARALLEL_MIN_PACKETS
    if single:
        load_cached(tf.analyze_all)  # before the page faults below, which slow its loading down (jitcache)
        populate_in_background([*A_i, *A_f], 0)
        populate_in_background([*S_i, *S_f], 0)

    def run(lo: int, hi: int) -> np.ndarray:
        state = np.array([lo, offsets[lo, 0], offsets[lo, 1], 0, offsets[lo, 2]], np.int64)
        work = tf.work_arrays(stats[lo:hi])
        if single:
            populate_in_background([getattr(work, name) for name, _ in tf.SEGMENT_ARRAYS], 0)
        E_i = np.empty((tf.EI_NCOL, max(1024, int(offsets[hi, 1] - offsets[lo, 1]) // 64)), np.int64)
        while True:
            c = tf.analyze_all(bounds, order, cols, tf.FlowTables(A_i, A_f, S_i, S_f, E_i), F_i, F_f, state, hi,
                               conn_base, stats, work)
            if c >= hi:  # a copy of the rows used: the table was sized for one episode per packet
                return E_i[:, : int(state[3])].copy()
            need = int(state[3] + bounds[c + 1] - bounds[c])
            grown = np.empty((tf.EI_NCOL, max(2 * E_i.shape[1], need)), np.int64)
            grown[:, : E_i.shape[1]] = E_i
            E_i = grown

    ranges = list(pairwise(cuts))
    if len(ranges) == 1:
        parts = [run(*ranges[0])]
    else:
        with ThreadPoolExecutor(threads, thread_name_prefix="ingest-analyze") as pool:
            parts = list(pool.map(lambda r: run(*r), ranges))
    E_i = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
    return GroupAnalysis(A_i[:, :n_ack], A_f[:, :n_ack], S_i[:, :n_seg], S_f[:, :n_seg], E_i,
                         F_i[:n_flows], F_f[:n_flows])


def _split(bounds: np.ndarray, parts: int) -> list[int]:
    """Connection indices cutting ``0..n_conns`` into at most ``parts`` ranges of similar packet counts."""
    n_conns = len(bounds) - 1
    total = int(bounds[-1])
    cuts = [0]
    for k in range(1, parts):
        c = int(np.searchsorted(bounds, total * k / parts))
        if cuts[-1] < c < n_conns:
            cuts.append(c)
    cuts.append(n_conns)
    return cuts
