"""BBR's arithmetic of windows and rates, as Linux's net/ipv4/tcp_bbr.c computes them (Cardwell, Cheng, Gunn,
Hassas Yeganeh and Jacobson, "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016): the bandwidth
estimate (``bbr_bw``: the long-term rate where a policer was detected, else the windowed max), the BDP
(``bbr_bdp``: ⌈bw · min_rtt · gain⌉ segments), the quantization budget (``bbr_quantization_budget``: three send
quanta, rounded up to an even window, two more in the probing phase), the in-flight target (``bbr_inflight``),
the packets in the network at the next departure time (``bbr_packets_in_net_at_edt``), the ACK-aggregation
allowance (``bbr_ack_aggregation_cwnd``) and the pacing rate of a bandwidth and gain (``bbr_bw_to_pacing_rate``).
Rates are in segments per second, times in seconds; Linux's fixed-point gains are kept (``BBR_UNIT`` 256)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.bbr_layout import (
    BW_FILTER,
    CYCLE_IDX,
    EXTRA_ACKED0,
    EXTRA_ACKED1,
    FULL_BW_REACHED,
    LT_BW,
    LT_USE,
    MIN_RTT,
    MODE,
    PACING_GAIN,
    PACING_RATE,
    PROBE_BW,
)
from ackreplay.sim.layout import MSS, PACE_AT
from ackreplay.sim.state import SimState

BBR_UNIT = 256.0
#: STARTUP's gain 2/ln 2 (``bbr_high_gain`` = 256·2885/1000 + 1), DRAIN's its inverse (``bbr_drain_gain``),
#: PROBE_BW's cwnd gain 2 (``bbr_cwnd_gain``)
HIGH_GAIN, DRAIN_GAIN, PROBE_CWND_GAIN = 739.0 / BBR_UNIT, 88.0 / BBR_UNIT, 2.0
#: the pacing rate's margin below the bandwidth, 1 % (``bbr_pacing_margin_percent``)
PACING_MARGIN = 0.01
#: the initial window BBR falls back to without an RTT (``TCP_INIT_CWND``), the least cwnd (``bbr_cwnd_min_target``)
INIT_CWND, CWND_MIN_TARGET = 10.0, 4.0
#: below this pacing rate (bit/s) one segment a send quantum, else two (``bbr_min_tso_rate``); the quantum is about
#: a millisecond of pacing (``sk_pacing_shift`` 10), at most a GSO packet (64 KiB less the headers' room) and 127
MIN_TSO_RATE_BPS, PACING_SHIFT, GSO_BYTES, MAX_TSO_SEGS = 1200000.0, 10, 65536 - 1 - 320, 127.0
#: ACK aggregation: the allowance at most 100 ms at the estimated rate (``bbr_extra_acked_max_us``)
EXTRA_ACKED_MAX_S = 0.1


@njit(cache=True, nogil=True, inline="always")
def max_bw(s: SimState, f: int) -> float:
    """The windowed max bandwidth, segments/s (``bbr_max_bw``)."""
    return s.bbr[f, BW_FILTER + 1]


@njit(cache=True, nogil=True, inline="always")
def bw(s: SimState, f: int) -> float:
    """The bandwidth the model runs on (``bbr_bw``): the long-term rate once a policer was detected."""
    return s.bbr[f, LT_BW] if s.bbr[f, LT_USE] > 0.0 else max_bw(s, f)


@njit(cache=True, nogil=True, inline="always")
def bdp(s: SimState, f: int, rate: float, gain: float) -> float:
    """⌈rate · min_rtt · gain⌉ segments (``bbr_bdp``; the initial window while no RTT is known)."""
    min_rtt = s.bbr[f, MIN_RTT]
    if not np.isfinite(min_rtt):
        return INIT_CWND
    return float(np.ceil(rate * min_rtt * gain - 1e-9))


@njit(cache=True, nogil=True, inline="always")
def tso_segs_goal(s: SimState, f: int) -> float:
    """The send quantum, segments (``bbr_tso_segs_goal``, ``bbr_min_tso_segs``): about 1 ms at the pacing rate."""
    mss = s.g[MSS]
    rate_bytes = s.bbr[f, PACING_RATE] * mss
    least = 1.0 if rate_bytes < MIN_TSO_RATE_BPS / 8.0 else 2.0
    quantum = min(np.floor(rate_bytes / (1 << PACING_SHIFT)), float(GSO_BYTES))
    return min(max(np.floor(quantum / mss), least), MAX_TSO_SEGS)


@njit(cache=True, nogil=True, inline="always")
def quantization_budget(s: SimState, f: int, cwnd: float) -> float:
    """``bbr_quantization_budget``: three send quanta more, rounded up to an even number (fewer delayed ACKs),
    and two more in PROBE_BW's probing phase (gain 1.25), so gain cycling lifts the flight above the BDP."""
    cwnd += 3.0 * tso_segs_goal(s, f)
    cwnd = 2.0 * np.ceil(cwnd / 2.0)
    if s.bbr[f, MODE] == PROBE_BW and s.bbr[f, CYCLE_IDX] == 0.0:
        cwnd += 2.0
    return cwnd


@njit(cache=True, nogil=True, inline="always")
def inflight(s: SimState, f: int, rate: float, gain: float) -> float:
    """The in-flight target of a rate and gain (``bbr_inflight``)."""
    return quantization_budget(s, f, bdp(s, f, rate, gain))


@njit(cache=True, nogil=True, inline="always")
def in_net_at_edt(s: SimState, f: int, now: float, in_flight: float) -> float:
    """The packets in the network when the next segment may leave (``bbr_packets_in_net_at_edt``): the flight
    (plus the quantum leaving then, when probing) less what the estimated rate delivers until then."""
    wait = max(s.fs[f, PACE_AT], now) - now
    delivered = np.floor(bw(s, f) * wait)
    at_edt = in_flight
    if s.bbr[f, PACING_GAIN] > 1.0:
        at_edt += tso_segs_goal(s, f)
    return max(at_edt - delivered, 0.0)


@njit(cache=True, nogil=True, inline="always")
def ack_aggregation_cwnd(s: SimState, f: int) -> float:
    """The window's allowance for ACK aggregation once the pipe is full (``bbr_ack_aggregation_cwnd``): the most
    extra data ACKed in the last two windows, at most 100 ms at the estimated rate."""
    b = s.bbr[f]
    if b[FULL_BW_REACHED] == 0.0:
        return 0.0
    return min(max(b[EXTRA_ACKED0], b[EXTRA_ACKED1]), np.floor(bw(s, f) * EXTRA_ACKED_MAX_S))


@njit(cache=True, nogil=True, inline="always")
def pacing_rate_of(rate: float, gain: float) -> float:
    """The pacing rate of a bandwidth and gain, segments/s, 1 % under (``bbr_bw_to_pacing_rate``)."""
    return rate * gain * (1.0 - PACING_MARGIN)
