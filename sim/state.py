"""Everything the compiled loop reads and writes, as one named tuple of arrays (numba passes it whole)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class SimState(NamedTuple):
    """The simulation's arrays. Columns: ackreplay.sim.layout."""

    fi: np.ndarray      # int64[F, N_FI]: each flow's integer state
    fs: np.ndarray      # float64[F, N_FS]: each flow's real state (its control's included)
    g: np.ndarray       # float64[N_G]: the link and the run
    flow: np.ndarray    # float64[F, N_FLOW]: start, one-way delays, SACK and timestamps on
    alg: np.ndarray     # int64[F]: each flow's control
    ap: np.ndarray      # float64[F, N_AP]: each flow's control's parameters
    seg: np.ndarray     # int8[F, S]: the sender's scoreboard, a state per segment
    got: np.ndarray     # bool[F, S]: the segments the receiver holds
    dqf: np.ndarray     # float64[F, R, 2]: data on its way to the receiver (arrival time, send time)
    dqs: np.ndarray     # int64[F, R]: … its segment
    aqf: np.ndarray     # float64[F, R, 3]: ACKs on their way to the sender (arrival time, echoed send time, the
    #                     send time of the last segment it newly covers)
    aqi: np.ndarray     # int64[F, R, 2]: … cumulative ACK, SACKed segment (−1: none)
    rqs: np.ndarray     # int64[F, R]: retransmissions in the order sent (their segments) …
    rqt: np.ndarray     # float64[F, R]: … and when
    ring: np.ndarray    # int64[F, 6]: data head, data count, ACK head, ACK count, retransmission head, count
    heap: np.ndarray    # int64[F·N_STREAMS]: the event streams, by head time
    pos: np.ndarray     # int64[F·N_STREAMS]: each stream's place in the heap
    key: np.ndarray     # float64[F·N_STREAMS]: each stream's head time (inf: none)
    qf: np.ndarray      # float64[Q]: the bottleneck's packets, the time each leaves the link
    qi: np.ndarray      # int64[2]: queue head, packets in the queue (the one in service included)
    last_fin: np.ndarray  # float64[1]: when the link finishes its last accepted packet
    qd_hist: np.ndarray   # int64[F, QD_BINS]: each flow's queueing delays
    ts: np.ndarray      # float64[F, P, 4]: each flow's series: time, cwnd, flight (segments), queue (bytes)
    tally: np.ndarray   # int64[N_TALLY]: events processed, overflow, the flow paused for a decision (+1), why
    alog: np.ndarray    # float64[F, A, N_LOG]: an external flow's ACKs as its sender saw them (A = 1: none kept)
    slog: np.ndarray    # float64[F, D, 2]: … its data segments sent (time, first byte)
    fate: np.ndarray    # int8[F, K]: each segment's random drops replayed (k ≥ 0: its next k transmissions are
    #                     dropped, then none; −1, and beyond K: Bernoulli at the link's rate)
    bbr: np.ndarray     # float64[F, N_BBR]: a BBR flow's model and rate sample (sim/bbr_layout.py)
    tx: np.ndarray      # float64[F, R, N_TX]: each outstanding segment's delivery-rate snapshot when sent, at its
    #                     number mod R (R = 1: no BBR flow)
