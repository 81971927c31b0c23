"""BBR's bandwidth estimate (BBRv1, Linux ``net/ipv4/tcp_bbr.c``) over Linux's delivery-rate samples
(``net/ipv4/tcp_rate.c``; Cheng et al., draft-cheng-iccrg-delivery-rate-estimation-02).

What the sender sees, rebuilt from the capture: every data segment (``seg_t``, ``seg_seq``, ``seg_len``) is a
transmission of the byte range it carries, and each ACK event (de)livers the ranges it newly acknowledges —
the first SACK block (RFC 2018: the one holding the most recently received data), then the cumulative ACK, in
Linux's order (``tcp_sacktag_write_queue`` before ``tcp_clean_rtx_queue``). The byte ranges are the sender's
"skbs": the new data of each transmission (a retransmission updates the ranges it covers, as Linux's
``tcp_rate_skb_sent`` does on every transmit).

Off the sender (a receiver-side capture, a tap) the transmissions are moved back to when the sender sent them
(:func:`send_times`): where the TSval each carries says (:func:`tsval_send_times`: the rest of the round trip
beyond the capture point at its minimum, held within the TSval's clock tick), else by the smoothed RTT less the
segment's data→ACK time there (which counts the sender's own holding time as path delay).

Per transmission (``tcp_rate_skb_sent``): with nothing outstanding, the send phase and the delivery clock
restart at the send time; the range records the delivered count, the time of the last delivery, the send
time of the latest delivered range (``first_tx_mstamp``) and whether the sender is application-limited.

Per ACK (``tcp_rate_skb_delivered``, ``tcp_rate_gen``): of the newly (s)acked ranges the most recently sent
(later send time, then higher sequence; the first one of the ACK whatever its time) gives the sample:
``delivered = D_now − D_then``, ``interval = max(send phase, ACK phase)`` with send phase = its send time − the
``first_tx_mstamp`` it recorded, ACK phase = now − the delivery time it recorded; a sample over less than the
minimum RTT is dropped. ``D`` counts bytes: ``ack + sacked`` as ingest's scoreboard gives them on a flow that
uses SACK (every block, not only the first), ingest's ``d`` without SACK (Linux's Reno emulation counts a
duplicate ACK as one segment delivered, ``tcp_add_reno_sack``).

BBR (``bbr_update_bw``): a packet-timed round ends when a sample's ``D_then`` reaches the ``D`` recorded at the
round's start; ``bw = delivered/interval`` enters Kathleen Nichols' windowed max (``lib/win_minmax.c``,
``minmax_running_max``) over ``rtt_window`` rounds (``bbr_bw_rtts`` = 10), unless the sample is app-limited and
below the current max. The estimate is that max, in bytes/s (Linux counts segments; ``ss``'s ``bbr:(bw:…)``
is it times the MSS).

App-limited (where the capture is silent: Linux marks it when the application writes while less than a
segment is queued, the flight is below cwnd and no loss awaits retransmission, ``tcp_rate_check_app_limited``, and
at the connection's start; draft-cheng-iccrg-delivery-rate-estimation §3.4): the mark (tp->app_limited = delivered
+ in flight, cleared once delivery passes it) is set when a transmission finds nothing outstanding more than
``idle_gap`` after the ACK that emptied the pipe (or before any ACK): the first flight after an idle period; when a
new segment shorter than the MSS leaves that the receive window did not cut (it ends short of the last ACK's
``ack + rwnd``): the sender had less than a segment to send; and when new data leaves after a silence the sender
could have filled (:func:`_silent_sender`): none for more than 4 pacing intervals at the estimate (``mss / bw``;
BBR paces bursts of two segments or more at ≥ 3/4 of it) and none for more than 2 since an ACK moved snd_una, with
the receive window open and no fast recovery under way — a window-limited sender sends at the ACK that opens its
window and a paced one within its pacing interval, so one that waits had nothing queued, and the data that ends
the silence is the application's next write (an application writing blocks below the path's rate; a writer
blocked on a full send buffer, woken once a third of it is free, ``sk_stream_write_space``). BBR's own PROBE_RTT
marking (``bbr_update_min_rtt``) is not modelled: the captured sender need not be BBR (its 4-segment window drains
the flight without new data, which the silence marks as well).

Policer (``policer``; ``bbr_lt_bw_sampling``): as Linux, after two intervals of 4–16 rounds each ended by a loss
with ≥ 50/256 of its delivered bytes lost, at delivery rates within 1/8 (or 4 kbit/s) of each other, the estimate
is their mean for 48 rounds after STARTUP (``bbr_check_full_bw_reached``: 3 rounds without 25 % growth). An ACK's
losses (rs->losses, which the capture does not show) are the bytes sent again after it and before the next ACK;
fast recovery starts at an ACK with losses and ends when the cumulative ACK reaches what had been sent then, and
its start starts a round (``bbr_set_cwnd_to_recover_or_restore``). Not modelled: a timeout's round
(``bbr_set_state``), the reset at an undo (``bbr_undo_cwnd``), RACK's own loss marking, nor Linux's Reno emulation
forgetting its duplicate ACKs at a timeout (``tcp_enter_loss``: the cumulative ACK after it counts them again, an
over-estimate the replay does not copy).

Loss (``decide``): BBRv1 keeps its model. ``bbr_ssthresh`` only saves cwnd, leaving ssthresh where BBR put it
when STARTUP ended — its BDP, ``bw·min_rtt`` (``bbr_check_drain``); in recovery it conserves packets for a round
(cwnd = in flight) and then grows towards ``cwnd_gain·bw·min_rtt`` (2·BDP), restoring the saved cwnd when
recovery ends; a timeout sets cwnd to 1 (``tcp_enter_loss``). ``ssthresh`` here is that BDP (at least
``bbr_cwnd_min_target`` = 4 segments) with the flow's RTTmin for BBR's min_rtt, ``cwnd`` the flight (1 after a
timeout).
"""

from __future__ import annotations

import math

import numpy as np

from ackreplay.estimators import references as refs
from ackreplay.estimators.base import FAST_RETRANSMIT, Batched, Columns, Decision, LossContext, value_at
from ackreplay.estimators.inputs import FlowInputs
from ackreplay.estimators.params import Param
from ackreplay.estimators.registry import register
from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import search_left_from

#: The walk's decorator: cached, releasing the GIL, and without numba's reference-counting runtime (``_nrt=False``,
#: as ``ingest.fastpath``'s per-packet kernels): every helper here takes the state arrays, and with the runtime
#: each call costs an incref/decref pair per array, which the pruner leaves in (2.4 against 0.5 ms on a 6 k-event,
#: 11 k-transmission flow). They allocate nothing: :func:`bbr_batch` (with the runtime) hands them their scratch.
#: The helpers are inlined into the walk (numba's ``inline="always"``): a call passing the state arrays costs more
#: than most of their bodies (0.5 against 0.3 ms).
kernel = njit(cache=True, nogil=True, _nrt=False)
helper = njit(cache=True, nogil=True, _nrt=False, inline="always")

#: The sender's float state (``g``): tp->first_tx_mstamp, tp->delivered_mstamp, the latest ACK's time, the time of
#: the first ACK that moved snd_una since the latest new data left (NaN: none), the time new data last left.
G_FIRST_TX, G_DELIVERED_T, G_LAST_ACK_T, G_OPENED_T, G_LAST_NEW_TX = range(5)
#: Its integer state (``c``): delivered bytes (tp->delivered), snd_una, snd_nxt, ranges made, tp->app_limited (0:
#: not), the first range not cumulatively acked, the highest ack + sacked seen (where counting stands), BBR's
#: next_rtt_delivered and rtt_cnt, ACKs seen, whether the bandwidth filter holds a sample, the latest ACK's sacked
#: bytes and receive window's right edge, bytes lost (tp->lost: retransmitted), the end of the fast recovery under
#: way (high_seq; NONE: none) and whether one was under way at the last ACK that delivered data (prev_ca_state).
(C_DELIVERED, C_UNA, C_SND_NXT, C_RANGES, C_APP_LIMITED, C_UNA_RANGE, C_ACKED_HIGH, C_NEXT_RTT, C_ROUNDS, C_ACKS,
 C_HAVE, C_SACKED, C_RWND_EDGE, C_LOST, C_RECOVER, C_PREV_RECOVERY) = range(16)
#: One ACK's rate sample (``rs``): chosen (0/1), prior_delivered, prior_mstamp, is_app_limited, send phase, the
#: chosen range's end (last_end_seq).
RS_CHOSEN, RS_PRIOR_DELIVERED, RS_PRIOR_T, RS_APP, RS_SEND_PHASE, RS_LAST_END = range(6)
#: A range's record of its latest transmission (``rec``, float64): its send time, tp->first_tx_mstamp,
#: tp->delivered_mstamp and tp->delivered then, and whether the sender was app-limited.
R_TX, R_FIRST_TX, R_DELIVERED_T, R_DELIVERED, R_APP = range(5)
#: BBR's long-term ("policer") state (``lt``): lt_is_sampling, lt_rtt_cnt, lt_use_bw, lt_bw (bytes/s),
#: lt_last_delivered, lt_last_stamp (ms), lt_last_lost; and STARTUP's full-pipe detection: full_bw, full_bw_cnt,
#: full_bw_reached.
(LT_SAMPLING, LT_RTT_CNT, LT_USE, LT_BW, LT_LAST_DELIVERED, LT_LAST_STAMP, LT_LAST_LOST, FULL_BW, FULL_CNT,
 FULL_REACHED) = range(10)
NONE = -(1 << 62)
#: tcp_bbr.c: bbr_lt_intvl_min_rtts, 4·that (an interval too long), bbr_lt_loss_thresh/BBR_UNIT (50/256),
#: bbr_lt_bw_ratio (1/8), bbr_lt_bw_diff (4 kbit/s in bytes/s), bbr_lt_bw_max_rtts, the pacing margin (1 %).
LT_MIN_RTTS, LT_MAX_RTTS_SAMPLING, LT_LOSS_THRESH, LT_BW_RATIO, LT_BW_DIFF, LT_USE_RTTS, PACING_MARGIN = (
    4, 16, 50 / 256, 1 / 8, 500.0, 48, 0.99)
#: bbr_full_bw_thresh (×1.25) and bbr_full_bw_cnt (3 rounds).
FULL_BW_THRESH, FULL_BW_CNT = 1.25, 3


@helper
def minmax_reset(mt: np.ndarray, mv: np.ndarray, t: int, v: float) -> None:
    """``minmax_reset``: the three choices all (t, v)."""
    for i in range(3):
        mt[i] = t
        mv[i] = v


@helper
def minmax_running_max(mt: np.ndarray, mv: np.ndarray, win: int, t: int, v: float) -> float:
    """Linux ``lib/win_minmax.c``: the best, second and third maximum over the last ``win`` units of ``t``
    (Kathleen Nichols' algorithm), updated with the sample (t, v); returns the windowed max."""
    if v >= mv[0] or t - mt[2] > win:  # a new max, or nothing left in the window
        minmax_reset(mt, mv, t, v)
        return v
    if v >= mv[1]:
        mt[2] = mt[1] = t
        mv[2] = mv[1] = v
    elif v >= mv[2]:
        mt[2] = t
        mv[2] = v
    dt = t - mt[0]  # minmax_subwin_update
    if dt > win:  # the whole window passed without a new max: the 2nd choice, maybe the 3rd, moves up
        for _ in range(2):
            mt[0], mv[0] = mt[1], mv[1]
            mt[1], mv[1] = mt[2], mv[2]
            mt[2], mv[2] = t, v
            if t - mt[0] <= win:
                break
    elif mt[1] == mt[0] and dt > win // 4:  # a quarter of the window: a 2nd choice from the 2nd quarter
        mt[2] = mt[1] = t
        mv[2] = mv[1] = v
    elif mt[2] == mt[1] and dt > win // 2:  # half of it: a 3rd choice from the last half
        mt[2] = t
        mv[2] = v
    return mv[0]


@helper
def _first_ending_above(hi: np.ndarray, ranges: int, seq: int) -> int:
    """The first of the ``ranges`` ranges (sorted) whose end is above ``seq`` (a binary search; ``ranges`` when
    none: no slice of ``hi``, whose view would cost reference counting on every call)."""
    a, b = 0, ranges
    while a < b:
        m = (a + b) // 2
        if hi[m] <= seq:
            a = m + 1
        else:
            b = m
    return a


@helper
def _next_undelivered(nxt: np.ndarray, j: int, ranges: int) -> int:
    """The first range at or after ``j`` not yet (s)acked (``nxt[j] == j``), with path compression."""
    root = j
    while root < ranges and nxt[root] != root:
        root = nxt[root]
    while j < ranges and nxt[j] != j:
        following = nxt[j]
        nxt[j] = root
        j = following
    return root


@helper
def _delivered(j: int, hi: np.ndarray, rec: np.ndarray, g: np.ndarray, rs: np.ndarray) -> None:
    """``tcp_rate_skb_delivered`` for range ``j``: the ACK's sample takes the most recently sent range (the
    first one of the ACK whatever its time; then a later send time, or the same and a higher sequence)."""
    tx = rec[j, R_TX]
    if rs[RS_CHOSEN] == 0.0 or tx > g[G_FIRST_TX] or (tx == g[G_FIRST_TX] and hi[j] > rs[RS_LAST_END]):
        rs[RS_CHOSEN] = 1.0
        rs[RS_PRIOR_DELIVERED] = rec[j, R_DELIVERED]
        rs[RS_PRIOR_T] = rec[j, R_DELIVERED_T]
        rs[RS_APP] = rec[j, R_APP]
        rs[RS_LAST_END] = hi[j]
        g[G_FIRST_TX] = tx
        rs[RS_SEND_PHASE] = tx - rec[j, R_FIRST_TX]


#: A silence (:func:`_silent_sender`): no new data for more than this many of the sender's pacing intervals at its
#: estimate (``mss / bw``) — BBR paces bursts of at least two segments (``tcp_tso_autosize``) at no less than 3/4
#: of its estimate in PROBE_BW, 2.7 intervals apart — and none for more than the second many after an ACK opened
#: the window (a window-limited sender sends at that ACK; the margin is for send times rebuilt off the sender).
SILENCE_PACING_INTERVALS, OPENED_PACING_INTERVALS = 4.0, 2.0


@helper
def _silent_sender(ts: float, mss: int, bw: float, g: np.ndarray, c: np.ndarray, idle_gap: float) -> bool:
    """New data leaving after a silence the sender could have filled (:data:`SILENCE_PACING_INTERVALS`, at the
    estimate ``bw``; each at least ``idle_gap``): no new data for longer than its pacing allows, though an ACK had
    moved snd_una (the window opened) longer ago than a window-limited sender waits, the receive window had room
    for a segment and no loss awaited retransmission (no fast recovery under way). A sender held by its window
    sends at the ACK that opens it and a paced one within a pacing interval or two: one that waits had nothing
    queued, and this data is the application's next write — where Linux's check (less than a segment unsent,
    flight below cwnd, no loss to retransmit) marks the sender."""
    opened = g[G_OPENED_T]
    if np.isnan(opened) or c[C_RECOVER] != NONE or bw <= 0.0:
        return False
    if c[C_RWND_EDGE] != NONE and c[C_SND_NXT] + mss > c[C_RWND_EDGE]:
        return False
    interval = mss / bw
    return (ts - g[G_LAST_NEW_TX] > max(idle_gap, SILENCE_PACING_INTERVALS * interval)
            and ts - opened > max(idle_gap, OPENED_PACING_INTERVALS * interval))


@helper
def _app_limited_at_send(ts: float, end: int, length: int, empty: bool, mss: int, bw: float, lo: np.ndarray,
                         g: np.ndarray, c: np.ndarray, idle_gap: float) -> None:
    """``tcp_rate_check_app_limited`` as the capture shows it: the sender had less than a segment to send when it
    sent a new segment shorter than the MSS that the receive window did not cut, or new data after a silence it
    could have filled (:func:`_silent_sender`) (tp->app_limited = delivered + in flight), or when it restarts from
    an empty pipe more than ``idle_gap`` after the ACK that emptied it (or before any ACK: Linux starts every
    connection app-limited)."""
    if empty:
        if c[C_ACKS] == 0 or ts - g[G_LAST_ACK_T] > idle_gap:
            c[C_APP_LIMITED] = max(c[C_DELIVERED], 1)
        return
    if end <= c[C_SND_NXT]:
        return
    short = length < mss and (c[C_RWND_EDGE] == NONE or end < c[C_RWND_EDGE])
    if short or _silent_sender(ts, mss, bw, g, c, idle_gap):
        in_flight = max(c[C_SND_NXT] - max(c[C_UNA], lo[0]) - c[C_SACKED], 0)
        c[C_APP_LIMITED] = max(c[C_DELIVERED] + in_flight, 1)


@helper
def _sent(ts: float, seq: int, length: int, mss: int, bw: float, lo: np.ndarray, hi: np.ndarray, nxt: np.ndarray,
          rec: np.ndarray, g: np.ndarray, c: np.ndarray, idle_gap: float, mark_app: bool) -> None:
    """One transmission of ``[seq, seq + length)`` at ``ts`` (``tcp_rate_skb_sent`` on every range it covers; its
    part above snd_nxt is a new range)."""
    if length <= 0:
        return
    end = seq + length
    if c[C_ACKED_HIGH] == NONE:  # delivery is counted from the first byte seen sent
        c[C_ACKED_HIGH] = seq
    empty = c[C_RANGES] == 0 or c[C_UNA] >= c[C_SND_NXT]  # packets_out == 0: the phases restart now
    if empty:
        g[G_FIRST_TX] = ts
        g[G_DELIVERED_T] = ts
    if mark_app:
        _app_limited_at_send(ts, end, length, empty, mss, bw, lo, g, c, idle_gap)
    n = c[C_RANGES]
    if n == 0 or end > c[C_SND_NXT]:  # new data: a silence starts again at the next ACK that opens the window
        g[G_OPENED_T] = np.nan
        g[G_LAST_NEW_TX] = ts
    if n == 0 or end > c[C_SND_NXT]:
        lo[n] = seq if n == 0 else max(seq, c[C_SND_NXT])
        hi[n] = end
        nxt[n] = n
        c[C_RANGES] = n + 1
        c[C_SND_NXT] = end
    if lo[c[C_RANGES] - 1] <= seq:  # new data only: the last range
        j = c[C_RANGES] - 1
    else:  # a retransmission: the first range ending above seq
        j = _first_ending_above(hi, c[C_RANGES], seq)
    while j < c[C_RANGES] and lo[j] < end:
        rec[j, R_TX] = ts
        rec[j, R_FIRST_TX] = g[G_FIRST_TX]
        rec[j, R_DELIVERED_T] = g[G_DELIVERED_T]
        rec[j, R_DELIVERED] = c[C_DELIVERED]
        rec[j, R_APP] = 1.0 if c[C_APP_LIMITED] != 0 else 0.0
        j += 1


@helper
def _acked_ranges(ack: int, sack_lo: int, sack_hi: int, lo: np.ndarray, hi: np.ndarray, nxt: np.ndarray,
                  rec: np.ndarray, g: np.ndarray, c: np.ndarray, rs: np.ndarray) -> None:
    """The ranges one ACK delivers, in Linux's order: those its first SACK block covers whole, then those the
    cumulative ACK passes that no SACK delivered before (and one it acknowledges in part, not marked)."""
    ranges = c[C_RANGES]
    if sack_lo >= 0 and sack_hi > sack_lo:
        j = _next_undelivered(nxt, _first_ending_above(hi, ranges, sack_lo), ranges)
        while j < ranges and lo[j] < sack_hi:
            if lo[j] >= sack_lo and hi[j] <= sack_hi:
                _delivered(j, hi, rec, g, rs)
                nxt[j] = j + 1
            j = _next_undelivered(nxt, j + 1, ranges)
    if ack <= c[C_UNA]:
        return
    j = c[C_UNA_RANGE]
    while j < ranges and hi[j] <= ack:
        if nxt[j] == j:
            _delivered(j, hi, rec, g, rs)
            nxt[j] = j + 1
        j += 1
    c[C_UNA_RANGE] = j
    if j < ranges and lo[j] < ack and nxt[j] == j:
        _delivered(j, hi, rec, g, rs)
    c[C_UNA] = ack


@helper
def _count_delivered(ack: int, sacked: int, d: int, uses_sack: bool, c: np.ndarray) -> int:
    """Bytes this ACK delivers (tp->delivered's step): the rise of ack + sacked on a SACK flow, ingest's ``d``
    (Linux's Reno emulation) without SACK; counted from the first byte seen sent (an ACK before any
    transmission only sets where counting starts)."""
    step = 0
    if c[C_ACKED_HIGH] == NONE:
        c[C_ACKED_HIGH] = ack + sacked
    elif uses_sack:
        total = ack + sacked
        if total > c[C_ACKED_HIGH]:
            step = total - c[C_ACKED_HIGH]
            c[C_ACKED_HIGH] = total
    else:
        step = max(d, 0)
    c[C_DELIVERED] += step
    return step


@helper
def _lt_reset_interval(dmst: float, c: np.ndarray, lt: np.ndarray) -> None:
    """``bbr_reset_lt_bw_sampling_interval``."""
    lt[LT_LAST_STAMP] = math.floor(dmst * 1000.0)
    lt[LT_LAST_DELIVERED] = c[C_DELIVERED]
    lt[LT_LAST_LOST] = c[C_LOST]
    lt[LT_RTT_CNT] = 0.0


@helper
def _lt_reset(dmst: float, c: np.ndarray, lt: np.ndarray) -> None:
    """``bbr_reset_lt_bw_sampling``."""
    lt[LT_BW] = 0.0
    lt[LT_USE] = 0.0
    lt[LT_SAMPLING] = 0.0
    _lt_reset_interval(dmst, c, lt)


@helper
def _lt_sampling(round_start: bool, losses: int, app: bool, dmst: float, c: np.ndarray, lt: np.ndarray) -> None:
    """``bbr_lt_bw_sampling`` and ``bbr_lt_bw_interval_done``: two consecutive intervals of 4–16 rounds, each
    ended by a loss with ≥ 50/256 of its delivered bytes lost, at delivery rates within 1/8 (or 4 kbit/s) of
    each other: a token-bucket policer, whose rate (their mean) is the estimate for the next 48 rounds of
    PROBE_BW (here: rounds after STARTUP)."""
    if lt[LT_USE]:
        if lt[FULL_REACHED] and round_start:
            lt[LT_RTT_CNT] += 1.0
            if lt[LT_RTT_CNT] >= LT_USE_RTTS:
                _lt_reset(dmst, c, lt)
        return
    if not lt[LT_SAMPLING]:
        if losses <= 0:
            return
        _lt_reset_interval(dmst, c, lt)
        lt[LT_SAMPLING] = 1.0
    if app:
        _lt_reset(dmst, c, lt)
        return
    if round_start:
        lt[LT_RTT_CNT] += 1.0
    if lt[LT_RTT_CNT] < LT_MIN_RTTS:
        return
    if lt[LT_RTT_CNT] > LT_MAX_RTTS_SAMPLING:
        _lt_reset(dmst, c, lt)
        return
    if losses <= 0:
        return
    lost = c[C_LOST] - lt[LT_LAST_LOST]
    delivered = c[C_DELIVERED] - lt[LT_LAST_DELIVERED]
    ms = math.floor(dmst * 1000.0) - lt[LT_LAST_STAMP]
    if delivered <= 0 or lost < LT_LOSS_THRESH * delivered or ms < 1:
        return
    bw = delivered / (ms / 1000.0)
    if lt[LT_BW] > 0.0:
        diff = abs(bw - lt[LT_BW])
        if diff <= LT_BW_RATIO * lt[LT_BW] or diff * PACING_MARGIN <= LT_BW_DIFF:  # consistent: policed
            lt[LT_BW] = (bw + lt[LT_BW]) / 2.0
            lt[LT_USE] = 1.0
            lt[LT_RTT_CNT] = 0.0
            return
    lt[LT_BW] = bw
    _lt_reset_interval(dmst, c, lt)


@helper
def _full_bw(round_start: bool, app: bool, max_bw: float, lt: np.ndarray) -> None:
    """``bbr_check_full_bw_reached``: STARTUP ends after 3 rounds without the max growing by 25 %."""
    if lt[FULL_REACHED] or not round_start or app:
        return
    if max_bw >= lt[FULL_BW] * FULL_BW_THRESH:
        lt[FULL_BW] = max_bw
        lt[FULL_CNT] = 0.0
        return
    lt[FULL_CNT] += 1.0
    lt[FULL_REACHED] = 1.0 if lt[FULL_CNT] >= FULL_BW_CNT else 0.0


@helper
def _rate_sample(t: float, rttmin: float, step: int, losses: int, g: np.ndarray, c: np.ndarray, rs: np.ndarray,
                 mt: np.ndarray, mv: np.ndarray, lt: np.ndarray, win: int, mark_app: bool) -> float:
    """``tcp_rate_gen`` and ``bbr_update_bw`` (with ``bbr_lt_bw_sampling`` and ``bbr_check_full_bw_reached``):
    the ACK's delivery-rate sample, the round count, the max filter. Returns the sample's interval (NaN: no valid
    sample)."""
    if c[C_APP_LIMITED] != 0 and c[C_DELIVERED] > c[C_APP_LIMITED]:  # the app-limited bubble is acked and gone
        c[C_APP_LIMITED] = 0
    if step > 0:
        g[G_DELIVERED_T] = t
    if rs[RS_CHOSEN] == 0.0:  # no timing information
        return np.nan
    delivered = c[C_DELIVERED] - rs[RS_PRIOR_DELIVERED]
    interval = max(rs[RS_SEND_PHASE], t - rs[RS_PRIOR_T])
    if not interval >= rttmin or interval <= 0.0:  # shorter than the min RTT (or no min RTT yet): dropped
        return np.nan
    round_start = rs[RS_PRIOR_DELIVERED] >= c[C_NEXT_RTT]
    if round_start:  # a packet-timed round ends
        c[C_NEXT_RTT] = c[C_DELIVERED]
        c[C_ROUNDS] += 1
    app = mark_app and rs[RS_APP] != 0.0
    _lt_sampling(round_start, losses, app, g[G_DELIVERED_T], c, lt)
    bw = delivered / interval
    if not app or bw >= mv[0]:
        minmax_running_max(mt, mv, win, c[C_ROUNDS], bw)
        c[C_HAVE] = 1
    _full_bw(round_start, app, mv[0], lt)
    return interval


@helper
def _ca_state(ack: int, losses: int, c: np.ndarray) -> None:
    """Fast recovery as ``tcp_fastretrans_alert`` moves it: it starts at an ACK after which data is sent again (the
    capture's sign of a loss marked) and ends when the cumulative ACK reaches what had been sent by then."""
    if c[C_RECOVER] != NONE and ack >= c[C_RECOVER]:
        c[C_RECOVER] = NONE
    if c[C_RECOVER] == NONE and losses > 0:
        c[C_RECOVER] = c[C_SND_NXT]


@helper
def _recovery_round(step: int, c: np.ndarray) -> None:
    """``bbr_set_cwnd_to_recover_or_restore`` on an ACK that delivered data: entering fast recovery starts a
    packet-timed round now (next_rtt_delivered = delivered)."""
    if step <= 0:
        return
    now = 1 if c[C_RECOVER] != NONE else 0
    if now and not c[C_PREV_RECOVERY]:
        c[C_NEXT_RTT] = c[C_DELIVERED]
    c[C_PREV_RECOVERY] = now


@helper
def _retransmitted(k: int, i: int, t: np.ndarray, seg_t: np.ndarray, seg_seq: np.ndarray, seg_len: np.ndarray,
                   snd_nxt: int) -> int:
    """Bytes sent again after ACK ``k`` and before the next: what that ACK marked lost (rs->losses; Linux
    retransmits what it marks, the capture shows only the retransmissions)."""
    out = 0
    j = i
    while j < len(seg_t) and (k + 1 == len(t) or seg_t[j] < t[k + 1]):
        if seg_len[j] > 0 and seg_seq[j] < snd_nxt:
            out += min(seg_seq[j] + seg_len[j], snd_nxt) - seg_seq[j]
        j += 1
    return out


@kernel
def bbr_walk(t: np.ndarray, d: np.ndarray, ack: np.ndarray, sacked: np.ndarray, sack_lo: np.ndarray,
             sack_hi: np.ndarray, rwnd: np.ndarray, rttmin: np.ndarray, seg_t: np.ndarray, seg_len: np.ndarray,
             seg_seq: np.ndarray, mss: int, win: int, idle_gap: float, mark_app: bool, policer: bool,
             lo: np.ndarray, hi: np.ndarray, nxt: np.ndarray, rec: np.ndarray, state: np.ndarray, c: np.ndarray,
             mt: np.ndarray, trace: np.ndarray, out: np.ndarray) -> None:
    """BBR's bandwidth estimate of one flow written into ``out`` (bytes/s; NaN before its first sample and at
    the first event), in the scratch given (``lo``, ``hi``, ``nxt``, ``rec``: a row per transmission at least;
    ``state``: :data:`STATE` floats, ``c``: :data:`COUNTS` integers, ``mt``: 3). Transmissions at an ACK's
    time come after it (sent in response). ``trace`` (a row per event, or none): each event's sample —
    delivered bytes, interval, app-limited (0/1), the round count — NaN where the event gave no valid sample."""
    n, ns = len(t), len(seg_t)
    g, rs, lt, mv = state[0:5], state[5:11], state[11:21], state[21:24]
    for q in range(len(state)):
        state[q] = 0.0
    g[G_OPENED_T] = np.nan
    for q in range(len(c)):
        c[q] = 0
    c[C_UNA] = c[C_SND_NXT] = c[C_ACKED_HIGH] = c[C_RWND_EDGE] = c[C_RECOVER] = NONE
    mt[0] = mt[1] = mt[2] = 0
    uses_sack = False
    for k in range(n):
        if sack_hi[k] >= 0 or sacked[k] > 0:
            uses_sack = True
            break
    i = 0
    for k in range(n):
        while i < ns and seg_t[i] < t[k]:
            _sent(seg_t[i], seg_seq[i], seg_len[i], mss, mv[0] if c[C_HAVE] else 0.0, lo, hi, nxt, rec, g, c, idle_gap,
                  mark_app)
            i += 1
        rs[RS_CHOSEN] = 0.0  # (the rest is written when a range is chosen)
        if ack[k] > c[C_UNA] and np.isnan(g[G_OPENED_T]):
            g[G_OPENED_T] = t[k]
        _acked_ranges(ack[k], sack_lo[k], sack_hi[k], lo, hi, nxt, rec, g, c, rs)
        step = _count_delivered(ack[k], sacked[k], d[k], uses_sack, c)
        losses = _retransmitted(k, i, t, seg_t, seg_seq, seg_len, c[C_SND_NXT])
        c[C_LOST] += losses
        _ca_state(ack[k], losses, c)
        interval = _rate_sample(t[k], rttmin[k], step, losses, g, c, rs, mt, mv, lt, win, mark_app)
        _recovery_round(step, c)
        if len(trace):
            valid = not np.isnan(interval)
            trace[k, 0] = c[C_DELIVERED] - rs[RS_PRIOR_DELIVERED] if valid else np.nan
            trace[k, 1] = interval
            trace[k, 2] = rs[RS_APP] if valid else np.nan
            trace[k, 3] = c[C_ROUNDS] if valid else np.nan
        c[C_ACKS] += 1
        c[C_SACKED] = sacked[k]
        c[C_RWND_EDGE] = ack[k] + rwnd[k] if rwnd[k] >= 0 else NONE
        g[G_LAST_ACK_T] = t[k]
        if c[C_HAVE]:
            out[k] = lt[LT_BW] if policer and lt[LT_USE] else mv[0]
        else:
            out[k] = np.nan
    if n:
        out[0] = np.nan


#: The walk's float state (``g``, ``rs``, ``lt``, the filter's values) and integer state (``c``), in one array each.
STATE, COUNTS = 24, 16


#: Off the sender (:func:`send_times`): a flow's transmissions are moved back when their median shift exceeds this
#: share of its minimum RTT and a tenth of its new segments were acknowledged within less than the minimum RTT
#: less that share (at the sender no segment is acknowledged sooner than the minimum RTT, and the shift is the
#: RTT's jitter around its smoothed value, or its delayed ACKs).
PAST_SENDER = 0.1
#: The clock ticks a sender's TSval may count (RFC 7323 §5.4 allows 1 ms to 1 s): Linux's 1 ms (and 1 µs with
#: its microsecond timestamps), jiffies on kernels before 4.13 (HZ 1000, 300, 250, 100); FreeBSD's and Windows'
#: 1 ms or 10 ms. A flow's tick is the one nearest (on a log scale) to its TSvals' rate against their arrival
#: times, used only within a factor :data:`TICK_SLACK` of it (the arrivals carry the queueing delay's changes).
TSVAL_TICKS = (1e-6, 1e-3, 1.0 / 300.0, 4e-3, 1e-2)
TICK_SLACK = 1.5


@njit(cache=True, nogil=True)
def unwrapped_tsvals(raw: np.ndarray, out: np.ndarray) -> int:
    """The 32-bit TSvals (−1: none) as ticks since the first one, unwrapped (each against the previous one present:
    a signed 32-bit step) into ``out`` (NaN: none); returns how many are present."""
    present, prev, acc = 0, -1, 0
    for i in range(len(raw)):
        if raw[i] < 0:
            out[i] = np.nan
            continue
        if prev >= 0:
            step = (raw[i] - prev) & 0xFFFFFFFF
            acc += step - (1 << 32) if step >= (1 << 31) else step
        prev = raw[i]
        out[i] = acc
        present += 1
    return present


@njit(cache=True, nogil=True)
def tsval_tick(seg_t: np.ndarray, ticks: np.ndarray) -> float:
    """The sender's TSval tick (:data:`TSVAL_TICKS`) from the rate of the unwrapped ``ticks`` (NaN: none) against
    the arrival times ``seg_t``; NaN when there are too few or none fits within :data:`TICK_SLACK`."""
    i0, i1 = -1, -1
    for i in range(len(ticks)):
        if not np.isnan(ticks[i]):
            i1 = i
            if i0 < 0:
                i0 = i
    if i0 < 0 or ticks[i1] - ticks[i0] < 2 or seg_t[i1] <= seg_t[i0]:
        return np.nan
    rate = (seg_t[i1] - seg_t[i0]) / (ticks[i1] - ticks[i0])
    best = np.nan
    for tick in TSVAL_TICKS:
        if np.isnan(best) or abs(math.log(rate / tick)) < abs(math.log(rate / best)):
            best = tick
    return best if abs(math.log(rate / best)) <= math.log(TICK_SLACK) else np.nan


@njit(cache=True, nogil=True)
def tsval_send_times(seg_t: np.ndarray, seg_tsval: np.ndarray, rest: float, out: np.ndarray) -> bool:
    """Send times off the sender from the TSval each transmission carries (the sender's clock when it sent it), into
    ``out``: on the ACKs' axis a segment left ``rest`` (the round trip beyond the capture point, at its minimum)
    before it was captured, less its queueing delay, which the capture cannot see but its TSval bounds: it left
    within the tick its TSval names. The sender's clock is put on the capture's by the least delayed segment (the
    lower envelope of arrival − TSval·tick: the forward path's base delay, no queue). Each send time is the arrival
    less ``rest``, held within its tick; a segment without a TSval keeps the previous one's shift. False (``out``
    untouched) when the flow's TSvals give no tick (:func:`tsval_tick`)."""
    ns = len(seg_t)
    ticks = np.empty(ns)
    if len(seg_tsval) != ns or unwrapped_tsvals(seg_tsval, ticks) < 2:
        return False
    tick = tsval_tick(seg_t, ticks)
    if np.isnan(tick):
        return False
    clock = np.inf  # the capture's time at TSval 0's tick, plus the forward path's base delay
    for i in range(ns):
        if not np.isnan(ticks[i]):
            clock = min(clock, seg_t[i] - ticks[i] * tick)
    shift = rest
    for i in range(ns):
        if not np.isnan(ticks[i]):
            earliest = ticks[i] * tick + clock - rest
            shift = seg_t[i] - min(max(seg_t[i] - rest, earliest), earliest + tick)
        out[i] = seg_t[i] - shift
    return True


@njit(cache=True, nogil=True)
def send_times(t: np.ndarray, ack: np.ndarray, srtt: np.ndarray, rttmin: np.ndarray, seg_t: np.ndarray,
               seg_seq: np.ndarray, seg_len: np.ndarray, seg_tsval: np.ndarray, shift: np.ndarray, out: np.ndarray
               ) -> None:
    """The transmissions' times as the sender saw them, on the ACKs' clock, into ``out``. A capture point past the
    sender (a receiver-side capture, a tap) sees a segment one data→ACK time — from the segment to the first ACK
    after it that covers it — before that ACK, not a round trip. The flow's transmissions are moved back when it
    was captured past the sender (:data:`PAST_SENDER`: the shifts below), else they stay as captured. Moved, they
    are put where their TSvals say the sender sent them (:func:`tsval_send_times`, with the round trip beyond the
    capture point at its minimum: the minimum RTT less the least data→ACK time there); without usable TSvals each
    transmission's shift is the rest of the round trip, the smoothed RTT at that ACK less its data→ACK time (none
    below 0; a segment no ACK covers takes the shift before it) — which counts the time the sender held the data
    after the ACK it answers (its pacing, its application's silence) as path delay, and so moves it too far back.
    The times are kept in order (a running max). ``shift``: scratch (a transmission each)."""
    n, ns = len(t), len(seg_t)
    if ns == 0 or n == 0 or np.isnan(rttmin[n - 1]):
        out[:ns] = seg_t
        return
    covers = np.empty(n, np.int64)  # the highest cumulative ACK so far
    for k in range(n):
        covers[k] = ack[k] if k == 0 else max(covers[k - 1], ack[k])
    local = np.empty(ns)  # the data→ACK time of each new segment (NaN: a retransmission, or none covers it)
    last, high = 0.0, NONE
    kt = kc = 0  # the previous transmission's answers: the searches walk on from them (search_left_from)
    for i in range(ns):
        end = seg_seq[i] + seg_len[i]
        kt = search_left_from(t, seg_t[i], kt)
        kc = search_left_from(covers, end, kc)
        k = max(kt, kc)
        local[i] = t[k] - seg_t[i] if k < n and end > high else np.nan
        high = max(high, end)
        if k < n and not np.isnan(srtt[k]):
            last = max(srtt[k] - (t[k] - seg_t[i]), 0.0)
        shift[i] = last
    known = local[~np.isnan(local)]
    floor = rttmin[n - 1]
    moved = (len(known) > 0 and np.median(shift[:ns]) > PAST_SENDER * floor
             and np.percentile(known, 10) < (1 - PAST_SENDER) * floor)
    if not moved:
        out[:ns] = seg_t
        return
    if not tsval_send_times(seg_t, seg_tsval, max(floor - known.min(), 0.0), out):
        for i in range(ns):
            out[i] = seg_t[i] - shift[i]
    for i in range(1, ns):
        out[i] = max(out[i], out[i - 1])


@njit(cache=True, nogil=True)
def bbr_batch(offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray, t: np.ndarray, d: np.ndarray,
              ack: np.ndarray, sacked: np.ndarray, sack_lo: np.ndarray, sack_hi: np.ndarray, rwnd: np.ndarray,
              srtt: np.ndarray, rttmin: np.ndarray, seg_t: np.ndarray, seg_len: np.ndarray, seg_seq: np.ndarray,
              seg_tsval: np.ndarray, win: int, idle_gap: float, mark_app: bool, policer: bool) -> np.ndarray:
    """:func:`bbr_walk` on every flow of a batch (``offsets``, ``seg_offsets``), in one compiled call, in one
    scratch sized for its flow of most transmissions, on the transmissions' times as the sender saw them
    (:func:`send_times`)."""
    out = np.empty(len(t))
    most = 0
    for f in range(len(offsets) - 1):
        most = max(most, seg_offsets[f + 1] - seg_offsets[f])
    lo, hi, nxt, rec = np.empty(most, np.int64), np.empty(most, np.int64), np.empty(most, np.int64), np.empty((most, 5))
    state, c, mt, trace = np.empty(STATE), np.empty(COUNTS, np.int64), np.empty(3, np.int64), np.empty((0, 4))
    sent, shift = np.empty(most), np.empty(most)
    for f in range(len(offsets) - 1):
        a, b = offsets[f], offsets[f + 1]
        sa, sb = seg_offsets[f], seg_offsets[f + 1]
        send_times(t[a:b], ack[a:b], srtt[a:b], rttmin[a:b], seg_t[sa:sb], seg_seq[sa:sb], seg_len[sa:sb],
                   seg_tsval[sa:sb], shift, sent)
        bbr_walk(t[a:b], d[a:b], ack[a:b], sacked[a:b], sack_lo[a:b], sack_hi[a:b], rwnd[a:b], rttmin[a:b],
                 sent[:sb - sa], seg_len[sa:sb], seg_seq[sa:sb], mss[f], win, idle_gap, mark_app, policer, lo, hi, nxt,
                 rec, state, c, mt, trace, out[a:b])
    return out


#: bbr_cwnd_min_target: BBR keeps at least 4 segments in flight.
CWND_MIN_TARGET = 4.0
#: bbr_cwnd_gain: the steady-state cwnd is 2·BDP.
CWND_GAIN = 2.0


@register
class BbrBw(Batched):
    """BBR's bottleneck bandwidth: Linux's delivery-rate samples (tcp_rate.c) through BBRv1's windowed max over
    10 packet-timed rounds (tcp_bbr.c); at a loss BBR keeps its model (ssthresh = bw·min_rtt)."""

    name = "bbr_bw"
    #: ~45 ns an event (s07's largest flow: 6.4 k events, 11 k transmissions), against BE's ~1.5 (cost 1).
    cost = 30.0
    #: Its series and the nine event columns it reads (80 bytes an event), and per transmission (~1.8 an event on
    #: bulk flows) the three segment columns, its ranges' scratch and the send times (112 bytes): estimated.
    footprint = 280.0
    title = "BBR bandwidth (Linux BBRv1)"
    citation = ("Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson: BBR: Congestion-Based Congestion Control, ACM "
                "Queue 14(5), 2016; Cheng, Cardwell, Hassas Yeganeh, Jacobson: Delivery Rate Estimation, "
                "draft-cheng-iccrg-delivery-rate-estimation-02, 2022; Linux net/ipv4/tcp_rate.c, "
                "net/ipv4/tcp_bbr.c, lib/win_minmax.c")
    doc = refs.doc("estimators", "bbr_bw")
    PARAMS = (
        Param("rtt_window", int, 10, "length of the max filter in packet-timed rounds (bbr_bw_rtts = CYCLE_LEN + 2)",
              unit="rounds", minimum=1, maximum=1000, source="tcp_bbr.c bbr_bw_rtts"),
        Param("app_limited", bool, True, "skip app-limited samples below the current max (bbr_update_bw)",
              source="tcp_bbr.c bbr_update_bw; tcp_rate.c tcp_rate_check_app_limited"),
        Param("policer", bool, True, "BBR's long-term bandwidth: after two lossy intervals (≥ 50/256 lost) of "
              "consistent delivery rate, their mean for 48 rounds (a token-bucket policer's rate); false: the max "
              "filter alone", source="tcp_bbr.c bbr_lt_bw_sampling"),
        Param("idle_gap", float, 0.001, "a transmission finding nothing outstanding this long after the ACK that "
              "emptied the pipe marks the sender app-limited, and no silence shorter than it does (assumed: Linux "
              "marks it at the application's write, which the capture does not show)", unit="s", minimum=0.0,
              maximum=10.0,
              source="assumed (docs/estimators.md, bbr_bw)"),
    )

    def run(self, cols: Columns, offsets: np.ndarray, seg_offsets: np.ndarray, mss: np.ndarray) -> np.ndarray:
        p = self.params
        return bbr_batch(offsets, seg_offsets, mss, cols.t, cols.d, cols.ack, cols.sacked, cols.sack_lo, cols.sack_hi,
                         cols.rwnd, cols.srtt, cols.rttmin, cols.seg_t, cols.seg_len, cols.seg_seq, cols.seg_tsval,
                         p["rtt_window"],
                         p["idle_gap"], p["app_limited"], p["policer"])

    def decide(self, inputs: FlowInputs, estimate: np.ndarray, ctx: LossContext) -> Decision:
        e = value_at(estimate, ctx.event)
        if e is None or math.isnan(ctx.rttmin):
            return Decision(e, None, None)
        bdp = e * ctx.rttmin / ctx.mss
        ss = max(bdp, CWND_MIN_TARGET)
        if ctx.kind == FAST_RETRANSMIT:
            note = (f"model kept: BDP bw·min_rtt = {bdp:.1f} seg; packet conservation for a round (cwnd = in flight), "
                    f"then growth towards {CWND_GAIN:g}·BDP = {CWND_GAIN * bdp:.1f} seg; the saved cwnd restored when "
                    "recovery ends")
            return Decision(e, ss, ctx.flight / ctx.mss, note)
        return Decision(e, ss, 1.0, f"model kept: BDP bw·min_rtt = {bdp:.1f} seg; cwnd 1, then growth towards "
                        f"{CWND_GAIN:g}·BDP = {CWND_GAIN * bdp:.1f} seg")
