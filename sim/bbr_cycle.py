"""BBR's modes and gain cycle, as Linux's net/ipv4/tcp_bbr.c (Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson,
"BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016): PROBE_BW cycles its pacing gain through
1.25, 0.75 and six phases of 1, each at least a min_rtt long (``bbr_update_cycle_phase``,
``bbr_is_next_cycle_phase``, ``bbr_advance_cycle_phase``); it starts at a random phase other than the draining 0.75
(``bbr_reset_probe_bw_mode``: ``CYCLE_LEN − 1 − prandom_u32_max(7)``, then one step); each mode sets its pacing and
cwnd gains (``bbr_update_gains``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.bbr_layout import (
    CWND_GAIN,
    CYCLE_IDX,
    CYCLE_STAMP,
    DELIVERED_STAMP,
    DRAIN,
    FULL_BW_REACHED,
    LT_USE,
    MIN_RTT,
    MODE,
    PACING_GAIN,
    PROBE_BW,
    PROBE_RTT,
    RS_LOSSES,
    RS_PRIOR_IN_FLIGHT,
    STARTUP,
)
from ackreplay.sim.bbr_window import DRAIN_GAIN, HIGH_GAIN, PROBE_CWND_GAIN, in_net_at_edt, inflight, max_bw
from ackreplay.sim.state import SimState

#: PROBE_BW's pacing gains (``bbr_pacing_gain``), and how many phases a random start may skip (``bbr_cycle_rand``)
PACING_GAINS = np.array([1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
CYCLE_LEN, CYCLE_RAND = 8, 7


@njit(cache=True, nogil=True, inline="always")
def advance_cycle_phase(s: SimState, f: int) -> None:
    """The next phase of the gain cycle, from the last delivery's time (``bbr_advance_cycle_phase``)."""
    b = s.bbr[f]
    b[CYCLE_IDX] = float((int(b[CYCLE_IDX]) + 1) & (CYCLE_LEN - 1))
    b[CYCLE_STAMP] = b[DELIVERED_STAMP]


@njit(cache=True, nogil=True, inline="always")
def reset_probe_bw_mode(s: SimState, f: int) -> None:
    """PROBE_BW at a random phase, never the draining one (``bbr_reset_probe_bw_mode``)."""
    s.bbr[f, MODE] = PROBE_BW
    s.bbr[f, CYCLE_IDX] = float(CYCLE_LEN - 1 - np.random.randint(0, CYCLE_RAND))
    advance_cycle_phase(s, f)


@njit(cache=True, nogil=True, inline="always")
def reset_mode(s: SimState, f: int) -> None:
    """Back to STARTUP if the pipe was never found full, else PROBE_BW (``bbr_reset_mode``)."""
    if s.bbr[f, FULL_BW_REACHED] == 0.0:
        s.bbr[f, MODE] = STARTUP
    else:
        reset_probe_bw_mode(s, f)


@njit(cache=True, nogil=True, inline="always")
def _is_next_cycle_phase(s: SimState, f: int, now: float) -> bool:
    """``bbr_is_next_cycle_phase``: a phase lasts a min_rtt; the probing one longer, until the flight reaches
    1.25 BDP or a loss; the draining one shorter, once the flight is down to the BDP."""
    b = s.bbr[f]
    full_length = b[DELIVERED_STAMP] - b[CYCLE_STAMP] > b[MIN_RTT]
    gain = b[PACING_GAIN]
    if gain == 1.0:
        return full_length
    in_net = in_net_at_edt(s, f, now, b[RS_PRIOR_IN_FLIGHT])
    rate = max_bw(s, f)
    if gain > 1.0:
        return full_length and (b[RS_LOSSES] > 0.0 or in_net >= inflight(s, f, rate, gain))
    return full_length or in_net <= inflight(s, f, rate, 1.0)


@njit(cache=True, nogil=True, inline="always")
def update_cycle_phase(s: SimState, f: int, now: float) -> None:
    """``bbr_update_cycle_phase``."""
    if s.bbr[f, MODE] == PROBE_BW and _is_next_cycle_phase(s, f, now):
        advance_cycle_phase(s, f)


@njit(cache=True, nogil=True, inline="always")
def update_gains(s: SimState, f: int) -> None:
    """Each mode's pacing and cwnd gains (``bbr_update_gains``)."""
    b = s.bbr[f]
    mode = b[MODE]
    if mode == STARTUP:
        b[PACING_GAIN], b[CWND_GAIN] = HIGH_GAIN, HIGH_GAIN
    elif mode == DRAIN:
        b[PACING_GAIN], b[CWND_GAIN] = DRAIN_GAIN, HIGH_GAIN
    elif mode == PROBE_BW:
        b[PACING_GAIN] = 1.0 if b[LT_USE] > 0.0 else PACING_GAINS[int(b[CYCLE_IDX])]
        b[CWND_GAIN] = PROBE_CWND_GAIN
    elif mode == PROBE_RTT:
        b[PACING_GAIN], b[CWND_GAIN] = 1.0, 1.0
