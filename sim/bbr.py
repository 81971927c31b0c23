"""BBR (v1) in the loop, as Linux's net/ipv4/tcp_bbr.c runs it (the testbed's kernel, 6.18) and ns-3.37's
``TcpBbr`` after it: Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based Congestion
Control", ACM Queue 14(5), 2016.

BBR takes the stack's congestion control whole (``cong_control``: no PRR, no cwnd = ssthresh at a recovery's
end). At each ACK (``bbr_main``) its rate sample (sim/rate.py) updates the model (sim/bbr_model.py), then the
pacing rate — pacing gain × bandwidth, 1 % under, never lowered before the pipe is found full
(``bbr_set_pacing_rate``) — and cwnd (``bbr_set_cwnd``): towards cwnd gain × BDP plus the ACK-aggregation and
quantization allowances, growing by the segments delivered while below it (every segment before the pipe is
full), at least 4, at most 4 in PROBE_RTT; in a recovery's first round packet conservation — the flight plus
what this ACK delivered —, and the cwnd from before the recovery restored at its end
(``bbr_set_cwnd_to_recover_or_restore``); each lost segment takes one off. A loss event leaves ssthresh where it
is and notes cwnd (``bbr_ssthresh``, ``bbr_save_cwnd``); a timeout ends a round and restarts full-pipe detection
(``bbr_set_state``). The sender paces every segment at the pacing rate (sim/pacing.py), as ``bbr_init`` marks its
socket for pacing. Not modelled: the idle restart (a bulk sender is never idle) and the undo of a spurious
recovery (``bbr_undo_cwnd``; the loop has no undo)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ackreplay.sim.bbr_layout import (
    ACK_EPOCH_STAMP,
    APP_LIMITED,
    BW_FILTER,
    CA_LOSS,
    CA_OPEN,
    CA_RECOVERY,
    CONSERVATION,
    CWND_GAIN,
    DELIVERED,
    DELIVERED_STAMP,
    FIRST_TX,
    FULL_BW,
    FULL_BW_REACHED,
    LT_STAMP,
    MIN_RTT,
    MIN_RTT_STAMP,
    MODE,
    N_BBR,
    NEXT_RTT_DELIVERED,
    NO_STAMP,
    PACING_GAIN,
    PACING_RATE,
    PREV_STATE,
    PRIOR_CWND,
    PROBE_RTT,
    ROUND_START,
    RS_ACKED,
    RS_APP_LIMITED,
    RS_LOSSES,
    RS_PRIOR_STAMP,
    STARTUP,
)
from ackreplay.sim.bbr_model import save_cwnd, update_model
from ackreplay.sim.bbr_policer import lt_bw_sampling
from ackreplay.sim.bbr_window import (
    CWND_MIN_TARGET,
    HIGH_GAIN,
    INIT_CWND,
    ack_aggregation_cwnd,
    bdp,
    bw,
    pacing_rate_of,
    quantization_budget,
)
from ackreplay.sim.dupacks import pipe
from ackreplay.sim.layout import CWND, IN_LOSS, IN_REC, SSTHRESH
from ackreplay.sim.minmax import minmax_reset
from ackreplay.sim.rate import rate_gen
from ackreplay.sim.state import SimState

#: ``tp->app_limited`` at a socket's start (Linux's ``~0U``, which the first ACK's ``after()`` clears): the
#: initial window's segments are marked application-limited
INITIAL_APP_LIMITED = 0.5


def bbr_row(rtt_s: float, start_s: float, initial_window: int) -> np.ndarray:
    """A BBR flow's state at its start (``bbr_init``): STARTUP, min_rtt and the pacing rate from the handshake's
    RTT sample (the path's base RTT: the loop has no handshake; Linux measures the SYN's), high gain × the
    initial window over it; the bandwidth filter empty; the sampler's stamps unset."""
    b = np.zeros(N_BBR)
    b[MODE] = STARTUP
    b[MIN_RTT], b[MIN_RTT_STAMP] = rtt_s, start_s
    b[PACING_GAIN], b[CWND_GAIN] = HIGH_GAIN, HIGH_GAIN
    b[PACING_RATE] = pacing_rate_of(initial_window / rtt_s, HIGH_GAIN) if rtt_s > 0 else math.inf
    b[PREV_STATE] = CA_OPEN
    b[ACK_EPOCH_STAMP], b[LT_STAMP] = start_s, start_s
    b[DELIVERED_STAMP], b[FIRST_TX], b[RS_PRIOR_STAMP] = start_s, start_s, NO_STAMP
    b[APP_LIMITED] = INITIAL_APP_LIMITED
    minmax_reset(b, BW_FILTER, 0.0, 0.0)
    return b


@njit(cache=True, nogil=True, inline="always")
def _ca_state(s: SimState, f: int) -> float:
    """The stack's congestion state as BBR reads it: Recovery, Loss (after a timeout) or Open."""
    if s.fi[f, IN_REC] == 1:
        return CA_RECOVERY
    return CA_LOSS if s.fi[f, IN_LOSS] == 1 else CA_OPEN


@njit(cache=True, nogil=True, inline="always")
def bbr_ssthresh(s: SimState, f: int) -> float:
    """A loss event (recovery or timeout): cwnd noted to restore later, ssthresh unchanged (``bbr_ssthresh``)."""
    save_cwnd(s, f, s.bbr[f, PREV_STATE] < CA_RECOVERY)
    return s.fs[f, SSTHRESH]


@njit(cache=True, nogil=True, inline="always")
def bbr_timeout(s: SimState, f: int) -> None:
    """The stack entered Loss at a timeout (``bbr_set_state``): a round ends, full-pipe detection restarts, and
    the long-term sampler counts a loss."""
    b = s.bbr[f]
    b[PREV_STATE] = CA_LOSS
    b[FULL_BW] = 0.0
    b[ROUND_START] = 1.0
    b[RS_LOSSES] = 1.0
    b[RS_APP_LIMITED] = 0.0
    lt_bw_sampling(s, f)


@njit(cache=True, nogil=True, inline="always")
def _recover_or_restore(s: SimState, f: int, acked: float) -> tuple[bool, float]:
    """``bbr_set_cwnd_to_recover_or_restore``: cwnd less the segments newly lost; at a recovery's start the flight
    plus what this ACK delivered, and packet conservation for a round; at its end the cwnd from before it."""
    b = s.bbr[f]
    state = _ca_state(s, f)
    prev = b[PREV_STATE]
    cwnd = s.fs[f, CWND]
    in_flight = float(pipe(s, f))
    if b[RS_LOSSES] > 0.0:
        cwnd = max(cwnd - b[RS_LOSSES], 1.0)
    if state == CA_RECOVERY and prev != CA_RECOVERY:
        b[CONSERVATION] = 1.0
        b[NEXT_RTT_DELIVERED] = b[DELIVERED]
        cwnd = in_flight + acked
    elif prev >= CA_RECOVERY and state < CA_RECOVERY:
        cwnd = max(cwnd, b[PRIOR_CWND])
        b[CONSERVATION] = 0.0
    b[PREV_STATE] = state
    if b[CONSERVATION] > 0.0:
        return True, max(cwnd, in_flight + acked)
    return False, cwnd


@njit(cache=True, nogil=True, inline="always")
def _set_cwnd(s: SimState, f: int, acked: float, rate: float, gain: float) -> None:
    """``bbr_set_cwnd``: towards gain × BDP plus the allowances, by ``acked`` a step while below it."""
    b = s.bbr[f]
    cwnd = s.fs[f, CWND]
    if acked > 0.0:
        conserving, cwnd = _recover_or_restore(s, f, acked)
        if not conserving:
            target = bdp(s, f, rate, gain) + ack_aggregation_cwnd(s, f)
            target = quantization_budget(s, f, target)
            if b[FULL_BW_REACHED] > 0.0:
                cwnd = min(cwnd + acked, target)
            elif cwnd < target or b[DELIVERED] < INIT_CWND:
                cwnd = cwnd + acked
            cwnd = max(cwnd, CWND_MIN_TARGET)
    if b[MODE] == PROBE_RTT:
        cwnd = min(cwnd, CWND_MIN_TARGET)
    s.fs[f, CWND] = cwnd


@njit(cache=True, nogil=True, inline="always")
def bbr_main(s: SimState, f: int, now: float, delivered: int) -> None:
    """An ACK that ``delivered`` segments (``bbr_main``, the rate sample's losses and RTT noted by the sender):
    the rate sample, the model, the pacing rate, cwnd."""
    rate_gen(s, f, now, delivered)
    b = s.bbr[f]
    update_model(s, f, now, b[PREV_STATE] < CA_RECOVERY)
    rate = bw(s, f)
    paced = pacing_rate_of(rate, b[PACING_GAIN])
    if b[FULL_BW_REACHED] > 0.0 or paced > b[PACING_RATE]:
        b[PACING_RATE] = paced
    _set_cwnd(s, f, b[RS_ACKED], rate, b[CWND_GAIN])


@njit(cache=True, nogil=True, inline="always")
def bbr_segment_time(s: SimState, f: int) -> float:
    """One segment's time at the pacing rate, s."""
    return 1.0 / s.bbr[f, PACING_RATE]

