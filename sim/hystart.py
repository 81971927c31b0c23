"""HyStart, the slow-start exit of Linux's CUBIC (``tcp_cubic.c``, on by default: ``hystart=1``,
``hystart_detect=3``): in slow start, from a window of ``hystart_low_window`` (16) segments, slow start ends
(ssthresh = cwnd) before the first loss when either

- *the ACK train* — ACKs no more than ``hystart_ack_delta_us`` (2 ms) apart have run, since the round began
  (the first ACK past what was sent at its start), longer than half of (delay_min + the ACK delay allowed for
  pacing, ``hystart_ack_delay``: min(1 ms, 4·64 KB over the pacing rate, 2·cwnd/SRTT in slow start)) — the
  halving of a sender without pacing (``SK_PACING_NONE``; a paced one, ``FlowSpec.pacing``, waits the whole); or
- *the delay increase* — the least RTT of the round's samples after its first 8 (``HYSTART_MIN_SAMPLES``) is
  above delay_min + delay_min/8 clamped to [4, 16] ms (``HYSTART_DELAY_THRESH``).

A round starts at the first ACK past what was sent when the last one started. Linux from 5.7 until a 2025 fix tracks
rounds only from a cwnd of ``hystart_low_window`` on (the round reset sat behind that test; ``hystart`` 1 here);
from the fix on (mainline 6.14, the testbed's 6.18, and stable kernels that took it as a backport) from the first
ACK, whatever cwnd (the reset before the test: "tcp_cubic: fix incorrect HyStart round start detection", 2025;
``hystart`` 2 here), so the rounds stay aligned with the initial window's — the fix's own test saw HyStart's exit on
a 1-BDP path move from a cwnd of 516, the link not yet full, to 632.

delay_min is the least RTT sample since the control was (re)set, at the start and at a timeout
(``bictcp_reset``), where the round restarts too; samples within a second of a congestion-avoidance epoch's
start are not taken (``bictcp_acked``). As of Linux 5.7 (``hystart_update``). ns-3's ``TcpCubic`` runs a HyStart
of its own with other thresholds, not this one: with ns-3's settings (``PER_ACK``) it is off.

State in ``fs[f, HS_*]`` (the columns after CUBIC's own); on when ``ap[f, P_HYSTART]`` > 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.layout import ALG, CWND, NXT, SRTT, SSTHRESH, UNA

# fs[f, ALG + k] of CUBIC beyond its own (sim/controls.py: ALG … ALG + 4)
HS_FOUND, HS_ROUND, HS_LAST_ACK, HS_END, HS_CURR, HS_COUNT, HS_DMIN = (ALG + 5, ALG + 6, ALG + 7, ALG + 8, ALG + 9,
                                                                      ALG + 10, ALG + 11)
LOW_WINDOW = 16.0
ACK_DELTA = 0.002
MIN_SAMPLES = 8
DELAY_MIN_S, DELAY_MAX_S = 0.004, 0.016
GSO_BYTES = 65536.0


@njit(cache=True, nogil=True, inline="always")
def hystart_reset(fs: np.ndarray, fi: np.ndarray, f: int, now: float) -> None:
    """``bictcp_hystart_reset``: a new round from now, ending with the segments sent so far."""
    fs[f, HS_ROUND] = now
    fs[f, HS_LAST_ACK] = now
    fs[f, HS_END] = fi[f, NXT]
    fs[f, HS_CURR] = np.inf
    fs[f, HS_COUNT] = 0.0


@njit(cache=True, nogil=True, inline="always")
def hystart_restart(fs: np.ndarray, fi: np.ndarray, f: int, now: float) -> None:
    """At a timeout (``bictcp_reset`` and ``bictcp_hystart_reset`` on ``TCP_CA_Loss``): searching again, with
    delay_min forgotten."""
    fs[f, HS_FOUND] = 0.0
    fs[f, HS_DMIN] = 0.0
    hystart_reset(fs, fi, f, now)


@njit(cache=True, nogil=True, inline="always")
def _exit_slow_start(fs: np.ndarray, f: int) -> None:
    fs[f, HS_FOUND] = 1.0
    fs[f, SSTHRESH] = np.floor(fs[f, CWND] + 1e-9)


@njit(cache=True, nogil=True, inline="always")
def hystart_ack(fs: np.ndarray, fi: np.ndarray, f: int, now: float, delay: float, epoch: float,
                mss: float, paced: bool, early_rounds: bool) -> None:
    """``bictcp_acked`` and ``hystart_update`` on an ACK with an RTT sample ``delay`` (s); ``epoch``: the start
    of CUBIC's congestion-avoidance epoch (< 0: none); ``paced``: the socket is marked for pacing, so the ACK
    train's threshold is not halved (``threshold >>= 1`` only for ``SK_PACING_NONE``); ``early_rounds``: rounds
    are tracked from the first ACK on, whatever cwnd (Linux 6.14 on), not only from ``hystart_low_window``."""
    if epoch >= 0.0 and now - epoch < 1.0:
        return
    if fs[f, HS_DMIN] <= 0.0 or delay < fs[f, HS_DMIN]:
        fs[f, HS_DMIN] = delay
    cwnd = fs[f, CWND]
    if fs[f, HS_FOUND] > 0.0 or cwnd >= fs[f, SSTHRESH]:
        return
    low = np.floor(cwnd + 1e-9) < LOW_WINDOW
    if low and not early_rounds:
        return
    if fi[f, UNA] > fs[f, HS_END]:  # a new round
        hystart_reset(fs, fi, f, now)
    if low:
        return
    dmin = fs[f, HS_DMIN]
    if now - fs[f, HS_LAST_ACK] <= ACK_DELTA:
        fs[f, HS_LAST_ACK] = now
        pacing = 2.0 * cwnd * mss / fs[f, SRTT] if fs[f, SRTT] > 0.0 else 0.0
        ack_delay = min(0.001, 4.0 * GSO_BYTES / pacing) if pacing > 0.0 else 0.0
        if now - fs[f, HS_ROUND] > (dmin + ack_delay) / (1.0 if paced else 2.0):
            _exit_slow_start(fs, f)
            return
    fs[f, HS_CURR] = min(fs[f, HS_CURR], delay)
    if fs[f, HS_COUNT] < MIN_SAMPLES:
        fs[f, HS_COUNT] += 1.0
    elif fs[f, HS_CURR] > dmin + min(max(dmin / 8.0, DELAY_MIN_S), DELAY_MAX_S):
        _exit_slow_start(fs, f)
