"""What an external decision reads (ackreplay.sim.external): the ACKs an external flow's sender received and
the data segments it sent, logged by the compiled loop as they happen, in the columns the replay's estimators
read from a capture."""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.layout import (
    LOG_ACK,
    LOG_ACKED,
    LOG_D,
    LOG_DUP,
    LOG_FLIGHT,
    LOG_N,
    LOG_RTT,
    LOG_RTTMIN,
    LOG_SACK,
    LOG_SRTT,
    LOG_T,
    MSS,
    NXT,
    RTT_MIN,
    SEND_N,
    SRTT,
    T_OVERFLOW,
    UNA,
)
from ackreplay.sim.state import SimState

#: How long after the ACK that clocked it a segment is logged as sent.
SEND_AFTER_ACK_S = 1e-9


@njit(cache=True, nogil=True, inline="always")
def log_ack(s: SimState, f: int, now: float, delivered: int, acked: int, rtt: float, sack: int) -> None:
    """One ACK into flow ``f``'s log (segments counted as whole MSS; ``rtt`` NaN when it gave no sample)."""
    k = s.fi[f, LOG_N]
    if k >= s.alog.shape[1]:
        s.tally[T_OVERFLOW] = 2
        return
    mss = s.g[MSS]
    row = s.alog[f, k]
    row[LOG_T] = now
    row[LOG_D] = delivered * mss
    row[LOG_ACKED] = acked * mss
    row[LOG_RTT] = rtt
    row[LOG_SRTT] = s.fs[f, SRTT] if s.fs[f, SRTT] > 0.0 else np.nan
    row[LOG_RTTMIN] = s.fs[f, RTT_MIN] if s.fs[f, RTT_MIN] > 0.0 else np.nan
    row[LOG_FLIGHT] = (s.fi[f, NXT] - s.fi[f, UNA]) * mss
    row[LOG_ACK] = s.fi[f, UNA] * mss
    row[LOG_SACK] = sack * mss if sack >= 0 else -1.0
    row[LOG_DUP] = 1.0 if acked == 0 else 0.0
    s.fi[f, LOG_N] = k + 1


@njit(cache=True, nogil=True, inline="always")
def log_send(s: SimState, f: int, now: float, seg: int) -> None:
    """One data segment sent (a retransmission too) into flow ``f``'s log, a nanosecond after ``now``: the ACK that
    clocked it out comes first, as on a capture at the sender (so an estimator reading the sender's segments,
    ``tibet_tx``, sees at an ACK only those sent before it)."""
    k = s.fi[f, SEND_N]
    if k >= s.slog.shape[1]:
        s.tally[T_OVERFLOW] = 2
        return
    s.slog[f, k, 0] = now + SEND_AFTER_ACK_S
    s.slog[f, k, 1] = seg * s.g[MSS]
    s.fi[f, SEND_N] = k + 1
