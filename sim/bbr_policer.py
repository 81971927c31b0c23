"""BBR's long-term bandwidth: the detection of a token-bucket policer, as Linux's net/ipv4/tcp_bbr.c
(``bbr_lt_bw_sampling``, ``bbr_lt_bw_interval_done``; Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR:
Congestion-Based Congestion Control", ACM Queue 14(5), 2016). From the first loss on, the delivery rate is
measured over intervals of 4 to 16 rounds that end at a loss; two intervals in a row whose loss rate is at least
20 % (50/256) and whose rates agree within 1/8 (or 4 kbit/s) say a policer holds the flow to their mean rate, and BBR
paces at it, gain 1, for 48 rounds (``lt_use_bw``)."""

from __future__ import annotations

from numba import njit

from ackreplay.sim.bbr_cycle import reset_probe_bw_mode
from ackreplay.sim.bbr_layout import (
    DELIVERED,
    DELIVERED_STAMP,
    LOST_TOTAL,
    LT_BW,
    LT_DELIVERED,
    LT_LOST,
    LT_RTT_CNT,
    LT_SAMPLING,
    LT_STAMP,
    LT_USE,
    MODE,
    PACING_GAIN,
    PROBE_BW,
    ROUND_START,
    RS_APP_LIMITED,
    RS_LOSSES,
)
from ackreplay.sim.layout import MSS
from ackreplay.sim.state import SimState

#: ``bbr_lt_intvl_min_rtts``, ``bbr_lt_loss_thresh`` (of 256), ``bbr_lt_bw_ratio`` (1/8), ``bbr_lt_bw_diff``
#: (4000 bit/s, in bytes/s), ``bbr_lt_bw_max_rtts``
LT_INTVL_MIN_RTTS, LT_LOSS_THRESH, LT_BW_RATIO, LT_BW_DIFF_BYTES, LT_BW_MAX_RTTS = 4, 50.0 / 256.0, 0.125, 500.0, 48


@njit(cache=True, nogil=True, inline="always")
def reset_lt_interval(s: SimState, f: int) -> None:
    """A new sampling interval from now (``bbr_reset_lt_bw_sampling_interval``; Linux's stamp in ms)."""
    b = s.bbr[f]
    b[LT_STAMP] = b[DELIVERED_STAMP]
    b[LT_DELIVERED] = b[DELIVERED]
    b[LT_LOST] = b[LOST_TOTAL]
    b[LT_RTT_CNT] = 0.0


@njit(cache=True, nogil=True, inline="always")
def reset_lt(s: SimState, f: int) -> None:
    """No long-term rate, no sampling (``bbr_reset_lt_bw_sampling``)."""
    s.bbr[f, LT_BW] = 0.0
    s.bbr[f, LT_USE] = 0.0
    s.bbr[f, LT_SAMPLING] = 0.0
    reset_lt_interval(s, f)


@njit(cache=True, nogil=True, inline="always")
def _interval_done(s: SimState, f: int, rate: float) -> None:
    """``bbr_lt_bw_interval_done``: two consistent intervals in a row mean a policer."""
    b = s.bbr[f]
    if b[LT_BW] > 0.0:
        diff = abs(rate - b[LT_BW])
        if diff <= LT_BW_RATIO * b[LT_BW] or diff * s.g[MSS] <= LT_BW_DIFF_BYTES:
            b[LT_BW] = (rate + b[LT_BW]) / 2.0
            b[LT_USE] = 1.0
            b[PACING_GAIN] = 1.0
            b[LT_RTT_CNT] = 0.0
            return
    b[LT_BW] = rate
    reset_lt_interval(s, f)


@njit(cache=True, nogil=True, inline="always")
def lt_bw_sampling(s: SimState, f: int) -> None:
    """``bbr_lt_bw_sampling`` on this ACK's rate sample."""
    b = s.bbr[f]
    if b[LT_USE] > 0.0:
        if b[MODE] == PROBE_BW and b[ROUND_START] > 0.0:
            b[LT_RTT_CNT] += 1.0
            if b[LT_RTT_CNT] >= LT_BW_MAX_RTTS:
                reset_lt(s, f)
                reset_probe_bw_mode(s, f)
        return
    if b[LT_SAMPLING] == 0.0:
        if b[RS_LOSSES] == 0.0:
            return
        reset_lt_interval(s, f)
        b[LT_SAMPLING] = 1.0
    if b[RS_APP_LIMITED] > 0.0:
        reset_lt(s, f)
        return
    if b[ROUND_START] > 0.0:
        b[LT_RTT_CNT] += 1.0
    if b[LT_RTT_CNT] < LT_INTVL_MIN_RTTS:
        return
    if b[LT_RTT_CNT] > 4 * LT_INTVL_MIN_RTTS:
        reset_lt(s, f)
        return
    if b[RS_LOSSES] == 0.0:
        return
    lost = b[LOST_TOTAL] - b[LT_LOST]
    delivered = b[DELIVERED] - b[LT_DELIVERED]
    if delivered <= 0.0 or lost < LT_LOSS_THRESH * delivered:
        return
    span = b[DELIVERED_STAMP] - b[LT_STAMP]
    if span < 0.001:
        return
    _interval_done(s, f, delivered / span)
