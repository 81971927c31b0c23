"""BBR's model of the path, updated at every ACK from its rate sample, as Linux's net/ipv4/tcp_bbr.c
(``bbr_update_model``; Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based Congestion
Control", ACM Queue 14(5), 2016): the round count and the windowed max bandwidth over 10 rounds
(``bbr_update_bw``), the ACK aggregation (``bbr_update_ack_aggregation``), the gain cycle, full-pipe detection —
3 rounds without 25 % more bandwidth (``bbr_check_full_bw_reached``) —, STARTUP → DRAIN → PROBE_BW
(``bbr_check_drain``), min_rtt over 10 s and PROBE_RTT — 200 ms and a round at 4 packets
(``bbr_update_min_rtt``, ``bbr_check_probe_rtt_done``) —, then the gains."""

from __future__ import annotations

from numba import njit

from ackreplay.sim.bbr_cycle import reset_mode, reset_probe_bw_mode, update_cycle_phase, update_gains
from ackreplay.sim.bbr_layout import (
    ACK_EPOCH_ACKED,
    ACK_EPOCH_STAMP,
    APP_LIMITED,
    BW_FILTER,
    CONSERVATION,
    DELIVERED,
    DELIVERED_STAMP,
    DRAIN,
    EXTRA_ACKED0,
    EXTRA_WIN_IDX,
    EXTRA_WIN_RTTS,
    FULL_BW,
    FULL_BW_CNT,
    FULL_BW_REACHED,
    MIN_RTT,
    MIN_RTT_STAMP,
    MODE,
    NEXT_RTT_DELIVERED,
    PRIOR_CWND,
    PROBE_RTT,
    PROBE_RTT_DONE,
    PROBE_RTT_ROUND_DONE,
    ROUND_START,
    RS_ACKED,
    RS_APP_LIMITED,
    RS_DELIVERED,
    RS_INTERVAL,
    RS_PRIOR_DELIVERED,
    RS_RTT,
    RTT_CNT,
    STARTUP,
)
from ackreplay.sim.bbr_policer import lt_bw_sampling
from ackreplay.sim.bbr_window import CWND_MIN_TARGET, bw, in_net_at_edt, inflight, max_bw
from ackreplay.sim.dupacks import pipe
from ackreplay.sim.layout import CWND, PER_ACK, SSTHRESH
from ackreplay.sim.minmax import minmax_running_max
from ackreplay.sim.state import SimState

#: the bandwidth filter's window, rounds (``bbr_bw_rtts`` = CYCLE_LEN + 2); the min_rtt filter's, s
#: (``bbr_min_rtt_win_sec``); PROBE_RTT's least stay, s (``bbr_probe_rtt_mode_ms``)
BW_RTTS, MIN_RTT_WIN_S, PROBE_RTT_S = 10.0, 10.0, 0.2
#: the growth that counts as more bandwidth (``bbr_full_bw_thresh`` 5/4) and the rounds without it that mean a
#: full pipe (``bbr_full_bw_cnt``)
FULL_BW_THRESH, FULL_BW_CNT_MAX = 1.25, 3.0
#: ACK aggregation's window, rounds (``bbr_extra_acked_win_rtts``), and its epoch's reset (``…_reset_thresh``)
EXTRA_ACKED_WIN_RTTS, ACK_EPOCH_RESET = 5.0, float(1 << 20)


@njit(cache=True, nogil=True, inline="always")
def save_cwnd(s: SimState, f: int, prev_state_open: bool) -> None:
    """The last good cwnd, to restore after a recovery or PROBE_RTT (``bbr_save_cwnd``)."""
    b = s.bbr[f]
    cwnd = s.fs[f, CWND]
    if prev_state_open and b[MODE] != PROBE_RTT:
        b[PRIOR_CWND] = cwnd
    else:
        b[PRIOR_CWND] = max(b[PRIOR_CWND], cwnd)


@njit(cache=True, nogil=True, inline="always")
def _update_bw(s: SimState, f: int) -> None:
    """``bbr_update_bw``: a round ends when a segment sent after the last round's end is delivered; a valid
    sample enters the max filter unless it is application-limited and below the max."""
    b = s.bbr[f]
    b[ROUND_START] = 0.0
    if b[RS_DELIVERED] < 0.0 or b[RS_INTERVAL] <= 0.0:
        return
    if b[RS_PRIOR_DELIVERED] >= b[NEXT_RTT_DELIVERED]:
        b[NEXT_RTT_DELIVERED] = b[DELIVERED]
        b[RTT_CNT] += 1.0
        b[ROUND_START] = 1.0
        b[CONSERVATION] = 0.0
    lt_bw_sampling(s, f)
    sample = b[RS_DELIVERED] / b[RS_INTERVAL]
    if b[RS_APP_LIMITED] == 0.0 or sample >= max_bw(s, f):
        minmax_running_max(b, BW_FILTER, BW_RTTS, b[RTT_CNT], sample)


@njit(cache=True, nogil=True, inline="always")
def _update_ack_aggregation(s: SimState, f: int) -> None:
    """``bbr_update_ack_aggregation``: the most data ACKed beyond what the estimated rate delivers since the
    epoch's start, a max over 5–10 rounds in two windows."""
    b = s.bbr[f]
    acked = b[RS_ACKED]
    if acked <= 0.0 or b[RS_DELIVERED] < 0.0 or b[RS_INTERVAL] <= 0.0:
        return
    if b[ROUND_START] > 0.0:
        b[EXTRA_WIN_RTTS] = min(31.0, b[EXTRA_WIN_RTTS] + 1.0)
        if b[EXTRA_WIN_RTTS] >= EXTRA_ACKED_WIN_RTTS:
            b[EXTRA_WIN_RTTS] = 0.0
            b[EXTRA_WIN_IDX] = 1.0 - b[EXTRA_WIN_IDX]
            b[EXTRA_ACKED0 + int(b[EXTRA_WIN_IDX])] = 0.0
    expected = int(bw(s, f) * (b[DELIVERED_STAMP] - b[ACK_EPOCH_STAMP]))
    if b[ACK_EPOCH_ACKED] <= expected or b[ACK_EPOCH_ACKED] + acked >= ACK_EPOCH_RESET:
        b[ACK_EPOCH_ACKED] = 0.0
        b[ACK_EPOCH_STAMP] = b[DELIVERED_STAMP]
        expected = 0
    b[ACK_EPOCH_ACKED] = min(float(0xFFFFF), b[ACK_EPOCH_ACKED] + acked)
    extra = min(b[ACK_EPOCH_ACKED] - expected, s.fs[f, CWND])
    k = EXTRA_ACKED0 + int(b[EXTRA_WIN_IDX])
    b[k] = max(b[k], extra)


@njit(cache=True, nogil=True, inline="always")
def _check_full_bw_reached(s: SimState, f: int) -> None:
    """``bbr_check_full_bw_reached``: at each round's start (not app-limited), 3 rounds in a row without 25 %
    more bandwidth mean the pipe is full."""
    b = s.bbr[f]
    if b[FULL_BW_REACHED] > 0.0 or b[ROUND_START] == 0.0 or b[RS_APP_LIMITED] > 0.0:
        return
    if max_bw(s, f) >= b[FULL_BW] * FULL_BW_THRESH:
        b[FULL_BW] = max_bw(s, f)
        b[FULL_BW_CNT] = 0.0
        return
    b[FULL_BW_CNT] += 1.0
    b[FULL_BW_REACHED] = 1.0 if b[FULL_BW_CNT] >= FULL_BW_CNT_MAX else 0.0


@njit(cache=True, nogil=True, inline="always")
def _check_drain(s: SimState, f: int, now: float) -> None:
    """``bbr_check_drain``: a full pipe ends STARTUP (ssthresh the BDP's target); DRAIN ends once the packets in
    the network are down to it."""
    b = s.bbr[f]
    if b[MODE] == STARTUP and b[FULL_BW_REACHED] > 0.0:
        b[MODE] = DRAIN
        s.fs[f, SSTHRESH] = inflight(s, f, max_bw(s, f), 1.0)
    if b[MODE] == DRAIN and in_net_at_edt(s, f, now, float(pipe(s, f))) <= inflight(s, f, max_bw(s, f), 1.0):
        reset_probe_bw_mode(s, f)


@njit(cache=True, nogil=True, inline="always")
def _update_min_rtt(s: SimState, f: int, now: float, prev_state_open: bool) -> None:
    """``bbr_update_min_rtt``: the least RTT over 10 s; when it expires, PROBE_RTT holds the flight at 4
    packets for 200 ms and a round, then restores cwnd (``bbr_check_probe_rtt_done``). Its samples are
    application-limited (``tp->app_limited``). A sample refreshes the filter when it is *below* the least (Linux's
    ``rs->rtt_us < bbr->min_rtt_us`` since the 2020 fix "tcp: only postpone PROBE_RTT if RTT is < current min_rtt
    estimate": an equal RTT does not put PROBE_RTT off), or at or below it with ns-3's settings (``PER_ACK``: ns-3.37's
    ``TcpBbr::UpdateRTprop`` keeps ``<=``). With ``<=`` each sample equal to the least (the engine's RTT repeats it
    exactly when a packet meets an empty queue) put a Linux flow's PROBE_RTT off by up to a round."""
    b = s.bbr[f]
    expired = now > b[MIN_RTT_STAMP] + MIN_RTT_WIN_S
    rtt = b[RS_RTT]
    lower = rtt <= b[MIN_RTT] if s.g[PER_ACK] > 0.0 else rtt < b[MIN_RTT]
    if rtt >= 0.0 and (lower or expired):
        b[MIN_RTT] = rtt
        b[MIN_RTT_STAMP] = now
    if expired and b[MODE] != PROBE_RTT:
        b[MODE] = PROBE_RTT
        save_cwnd(s, f, prev_state_open)
        b[PROBE_RTT_DONE] = 0.0
    if b[MODE] != PROBE_RTT:
        return
    in_flight = float(pipe(s, f))
    b[APP_LIMITED] = max(b[DELIVERED] + in_flight, 1.0)
    if b[PROBE_RTT_DONE] == 0.0 and in_flight <= CWND_MIN_TARGET:
        b[PROBE_RTT_DONE] = now + PROBE_RTT_S
        b[PROBE_RTT_ROUND_DONE] = 0.0
        b[NEXT_RTT_DELIVERED] = b[DELIVERED]
    elif b[PROBE_RTT_DONE] > 0.0:
        if b[ROUND_START] > 0.0:
            b[PROBE_RTT_ROUND_DONE] = 1.0
        if b[PROBE_RTT_ROUND_DONE] > 0.0 and now > b[PROBE_RTT_DONE]:
            b[MIN_RTT_STAMP] = now
            s.fs[f, CWND] = max(s.fs[f, CWND], b[PRIOR_CWND])
            reset_mode(s, f)


@njit(cache=True, nogil=True, inline="always")
def update_model(s: SimState, f: int, now: float, prev_state_open: bool) -> None:
    """``bbr_update_model`` on this ACK's rate sample (``prev_state_open``: BBR's last seen congestion state was
    below Recovery, for ``bbr_save_cwnd``)."""
    _update_bw(s, f)
    _update_ack_aggregation(s, f)
    update_cycle_phase(s, f, now)
    _check_full_bw_reached(s, f)
    _check_drain(s, f, now)
    _update_min_rtt(s, f, now, prev_state_open)
    update_gains(s, f)
