"""The sender: a SACK scoreboard (RFC 6675, simplified), loss marking, recovery with Proportional Rate Reduction
(RFC 6937, as Linux and ns-3 do by default), the retransmission timer (RFC 6298) and the send loop.

Segments are whole MSS, numbered from 0; each has a state (in flight, SACKed, lost, retransmitted). ``PIPE`` is
RFC 6675's pipe: segments in flight or retransmitted, not SACKed, not marked lost. A segment is lost once three
segments above it are SACKed (DupThresh = 3, RFC 6675 IsLost): the third-highest SACKed segment is kept, so the
marking costs O(1) a segment; a lost retransmission by RACK's rule (``lost_retransmissions``). A connection
without SACK recovers as NewReno does (``sim/dupacks.py``), and one without timestamps samples RTTs by Karn's
rule (``samples_rtt``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.acklog import log_ack, log_send
from ackreplay.sim.bbr import bbr_main, bbr_ssthresh, bbr_timeout
from ackreplay.sim.controls import EPOCH, P_BETA_MIN, P_HYSTART, P_NS3, P_RTT_STEP, grow, loss_ssthresh, westwood_ack
from ackreplay.sim.dupacks import count_dupack, cumulative_without_sack, mark_head_lost, pipe, sack_on
from ackreplay.sim.htcp import htcp_ack, htcp_ns3_ack
from ackreplay.sim.hystart import hystart_ack, hystart_restart
from ackreplay.sim.layout import (
    BBR,
    CUBIC,
    CWND,
    DUPS,
    EXT_NOW,
    EXT_SS,
    EXTERNAL,
    H1,
    H2,
    H3,
    HI_LOST,
    HTCP,
    IN_FLIGHT,
    IN_LOSS,
    IN_REC,
    INIT_RTO,
    LAST_ACK_T,
    LOSS_EVENTS,
    LOST,
    LOST_PTR,
    MIN_RTO,
    MSS,
    N_STREAMS,
    NXT,
    PACING,
    PAUSE_RECOVERY,
    PAUSE_TIMEOUT,
    PEND_ACKED,
    PEND_DELIV,
    PER_ACK,
    PIPE,
    PRR_DELIV,
    PRR_OUT,
    RECOVER,
    RECOVER_FS,
    RETRANS,
    RETRANSMITTED,
    RTO,
    RTO_ARMED,
    RTO_AT,
    RTT_LATEST,
    RTT_MIN,
    RTTVAR,
    RTX_PTR,
    RWND_SEGS,
    S_RTO,
    SACKED,
    SENT,
    SRTT,
    SSTHRESH,
    T_KIND,
    T_PAUSED,
    TIMEOUTS,
    TS_OK,
    UNA,
    WESTWOOD,
)
from ackreplay.sim.network import transmit
from ackreplay.sim.pacing import pace_held, paced
from ackreplay.sim.rate import rate_ack_start, rate_note, rate_skb_delivered, rate_skb_sent
from ackreplay.sim.state import SimState
from ackreplay.sim.streams import heap_update

MAX_RTO = 60.0  # RFC 6298 §2.5: an upper bound of at least 60 s
CLOCK = 0.001  # G, the clock granularity of RFC 6298 §2 (1 ms, as ns-3's default)


@njit(cache=True, nogil=True, inline="always")
def arm_rto(s: SimState, f: int, now: float) -> None:
    """(Re)start the retransmission timer (RFC 6298 §5.1/5.3). The stream keeps its earlier head time if that
    comes first: when it fires early it finds the new deadline and waits again."""
    at = now + s.fs[f, RTO]
    s.fs[f, RTO_AT] = at
    sid = f * N_STREAMS + S_RTO
    if s.key[sid] > at:
        heap_update(s.heap, s.pos, s.key, sid, at)
    s.fi[f, RTO_ARMED] = 1


@njit(cache=True, nogil=True, inline="always")
def rtt_sample(s: SimState, f: int, r: float) -> None:
    """RFC 6298 §2: SRTT, RTTVAR and RTO from a sample (ceiling 60 s). The floor MIN_RTO as Linux applies it by
    default: to the variance term, RTO = SRTT + max(4·RTTVAR, MIN_RTO) (``tcp_rtt_estimator`` keeps ``rttvar_us``
    at least ``mdev_max_us``, which each round trip restarts from ``tcp_rto_min_us``; ``__tcp_set_rto`` is
    ``srtt + rttvar``); with ns-3's settings (``PER_ACK``) to the whole, RTO = max(SRTT + max(G, 4·RTTVAR),
    MIN_RTO), as RFC 6298 §2.4 and ns-3's ``RttMeanDeviation``."""
    fs = s.fs
    if fs[f, SRTT] <= 0.0:
        fs[f, SRTT] = r
        fs[f, RTTVAR] = r / 2.0
    else:
        fs[f, RTTVAR] = 0.75 * fs[f, RTTVAR] + 0.25 * abs(fs[f, SRTT] - r)
        fs[f, SRTT] = 0.875 * fs[f, SRTT] + 0.125 * r
    if s.g[PER_ACK] > 0.0:
        rto = max(fs[f, SRTT] + max(CLOCK, 4.0 * fs[f, RTTVAR]), s.g[MIN_RTO])
    else:
        rto = fs[f, SRTT] + max(4.0 * fs[f, RTTVAR], s.g[MIN_RTO])
    fs[f, RTO] = min(rto, MAX_RTO)
    fs[f, RTT_LATEST] = r
    if fs[f, RTT_MIN] <= 0.0 or r < fs[f, RTT_MIN]:
        fs[f, RTT_MIN] = r


@njit(cache=True, nogil=True, inline="always")
def _remember_retransmission(s: SimState, f: int, x: int, now: float) -> None:
    size = s.rqs.shape[1]
    if s.ring[f, 5] >= size:
        s.tally[1] = 1
        return
    i = (s.ring[f, 4] + s.ring[f, 5]) & (size - 1)
    s.rqs[f, i] = x
    s.rqt[f, i] = now
    s.ring[f, 5] += 1


@njit(cache=True, nogil=True, inline="always")
def lost_retransmissions(s: SimState, f: int, delivered_sent: float) -> int:
    """RACK's rule for retransmissions (RFC 8985 §6.2, Linux's default): a retransmission still unacknowledged
    when a segment sent more than a reordering window (RTTmin/4) after it was delivered is lost."""
    fi = s.fi
    size = s.rqs.shape[1]
    window = s.fs[f, RTT_MIN] / 4.0
    marked = 0
    while s.ring[f, 5] > 0:
        i = s.ring[f, 4]
        x = s.rqs[f, i]
        live = x >= fi[f, UNA] and s.seg[f, x] == RETRANSMITTED
        if live and s.rqt[f, i] >= delivered_sent - window:
            break
        s.ring[f, 4] = (i + 1) & (size - 1)
        s.ring[f, 5] -= 1
        if live:
            s.seg[f, x] = LOST
            fi[f, PIPE] -= 1
            fi[f, HI_LOST] = max(fi[f, HI_LOST], x)
            fi[f, RTX_PTR] = min(fi[f, RTX_PTR], x)
            marked += 1
    return marked


@njit(cache=True, nogil=True, inline="always")
def send_loop(s: SimState, f: int, now: float) -> None:
    """Send while pipe < cwnd: the lowest lost segment first (RFC 6675 NextSeg rule 1), else new data within the
    receive window (the flow's receiver's: new data ends at the cumulative ACK + the window); a paced sender no
    faster than its pacing rate (sim/pacing.py: the rest when the pacing timer fires)."""
    fi = s.fi
    seg = s.seg
    limit = min(s.seg.shape[1], np.int64(s.flow[f, RWND_SEGS]))
    while pipe(s, f) < np.int64(s.fs[f, CWND] + 1e-9):
        if pace_held(s, f, now):
            break
        empty = fi[f, NXT] == fi[f, UNA]
        p = max(fi[f, RTX_PTR], fi[f, UNA])
        while p <= fi[f, HI_LOST] and seg[f, p] != LOST:
            p += 1
        fi[f, RTX_PTR] = p
        if p <= fi[f, HI_LOST]:
            seg[f, p] = RETRANSMITTED
            fi[f, RETRANS] += 1
            _remember_retransmission(s, f, p, now)
            if p == fi[f, UNA] and s.g[PER_ACK] == 0.0:  # Linux tcp_xmit_retransmit_queue: the head's
                arm_rto(s, f, now)  # retransmission restarts the timer (ns-3 keeps it running)
        elif fi[f, NXT] < min(fi[f, UNA] + limit, s.seg.shape[1]):
            p = fi[f, NXT]
            seg[f, p] = IN_FLIGHT
            fi[f, NXT] += 1
        else:
            break
        fi[f, PIPE] += 1
        fi[f, SENT] += 1
        if fi[f, IN_REC] == 1:
            fi[f, PRR_OUT] += 1
        if s.alg[f] == BBR:
            rate_skb_sent(s, f, p, now, empty)
        transmit(s, f, now, p)
        paced(s, f, now)
        if s.alg[f] == EXTERNAL:
            log_send(s, f, now, p)
        if fi[f, RTO_ARMED] == 0:
            arm_rto(s, f, now)


@njit(cache=True, nogil=True, inline="always")
def _sack(s: SimState, f: int, x: int) -> int:
    """Segment ``x`` SACKed: 1 if that is news (it left the pipe unless it was marked lost)."""
    fi = s.fi
    st = s.seg[f, x]
    if x < fi[f, UNA] or x >= fi[f, NXT] or st == SACKED:
        return 0
    if st != LOST:
        fi[f, PIPE] -= 1
    s.seg[f, x] = SACKED
    if s.alg[f] == BBR:
        rate_skb_delivered(s, f, x)
    if x > fi[f, H1]:
        fi[f, H3], fi[f, H2], fi[f, H1] = fi[f, H2], fi[f, H1], x
    elif x > fi[f, H2]:
        fi[f, H3], fi[f, H2] = fi[f, H2], x
    elif x > fi[f, H3]:
        fi[f, H3] = x
    return 1


@njit(cache=True, nogil=True, inline="always")
def _cumulative(s: SimState, f: int, cum: int) -> tuple[int, bool]:
    """The cumulative ACK moved to ``cum``: the segments newly delivered (those not SACKed before), and whether
    one of them was a retransmission (Karn's rule: then the ACK's timing gives no RTT sample)."""
    fi = s.fi
    news = 0
    retransmitted = False
    for x in range(fi[f, UNA], cum):
        st = s.seg[f, x]
        if st in (IN_FLIGHT, RETRANSMITTED):
            fi[f, PIPE] -= 1
        if st != SACKED:
            news += 1
            if s.alg[f] == BBR:
                rate_skb_delivered(s, f, x)
        retransmitted |= st == RETRANSMITTED
    fi[f, UNA] = cum
    return news, retransmitted


@njit(cache=True, nogil=True, inline="always")
def mark_lost(s: SimState, f: int) -> int:
    """Mark lost every segment in flight below the third-highest SACKed one (three SACKed above it)."""
    fi = s.fi
    top = fi[f, H3]
    marked = 0
    for x in range(max(fi[f, LOST_PTR], fi[f, UNA]), top):
        if s.seg[f, x] == IN_FLIGHT:
            s.seg[f, x] = LOST
            fi[f, PIPE] -= 1
            marked += 1
            fi[f, HI_LOST] = max(fi[f, HI_LOST], x)
            fi[f, RTX_PTR] = min(fi[f, RTX_PTR], x)
    fi[f, LOST_PTR] = max(fi[f, LOST_PTR], top)
    return marked


@njit(cache=True, nogil=True, inline="always")
def _prr(s: SimState, f: int, delivered: int) -> None:
    """RFC 6937 §3: cwnd = pipe + sndcnt, PRR while pipe > ssthresh, else slow-start reduction bound."""
    fi = s.fi
    fi[f, PRR_DELIV] += delivered
    ss = s.fs[f, SSTHRESH]
    in_flight = pipe(s, f)
    if in_flight > ss:
        sndcnt = int(np.ceil(fi[f, PRR_DELIV] * ss / max(fi[f, RECOVER_FS], 1))) - fi[f, PRR_OUT]
    else:
        limit = max(fi[f, PRR_DELIV] - fi[f, PRR_OUT], delivered) + 1
        sndcnt = min(int(ss) - in_flight, limit)
    s.fs[f, CWND] = in_flight + max(sndcnt, 0)


@njit(cache=True, nogil=True, inline="always")
def loss_window(s: SimState, f: int) -> float:
    """The window (segments) a loss event's decrease multiplies where the control takes it from the sender
    (NewReno, Westwood+'s floor and fallback, STCP, HSTCP, an external estimator's flight), as the stack
    modelled takes it. Linux (the default): ``snd_cwnd``, a whole number of segments (``tcp_reno_ssthresh``,
    ``tcp_scalable_ssthresh``, ``hstcp_ssthresh``, at a recovery entry and at a timeout alike; RFC 5681's FlightSize
    is also taken before the losses are marked). ns-3 (``PER_ACK``, its settings): ``BytesInFlight`` when
    ``EnterRecovery`` or the RTO asks for it — the pipe once this ACK's SACK and loss marking are done; at a
    timeout, before its marking."""
    if s.g[PER_ACK] > 0.0:
        return float(pipe(s, f))
    return float(np.floor(s.fs[f, CWND] + 1e-9))


@njit(cache=True, nogil=True, inline="always")
def _enter_recovery(s: SimState, f: int, alg: int, now: float) -> None:
    """A loss event: the control's ssthresh from the window it multiplies (``loss_window``), PRR's counters
    reset."""
    fi = s.fi
    window = loss_window(s, f)
    fi[f, IN_REC] = 1
    fi[f, LOSS_EVENTS] += 1
    fi[f, RECOVER] = fi[f, NXT] - 1
    fi[f, RECOVER_FS] = fi[f, NXT] - fi[f, UNA]
    fi[f, PRR_DELIV] = 0
    fi[f, PRR_OUT] = 0
    if alg == EXTERNAL:
        s.fs[f, SSTHRESH] = s.fs[f, EXT_SS]
    elif alg == BBR:
        s.fs[f, SSTHRESH] = bbr_ssthresh(s, f)
    else:
        s.fs[f, SSTHRESH] = loss_ssthresh(alg, s.fs, s.ap, f, s.g[MSS], window, False, now)


@njit(cache=True, nogil=True, inline="always")
def _hystart_on(s: SimState, f: int) -> bool:
    """CUBIC's HyStart runs: asked for (``hystart``, Linux's default) and not with ns-3's settings."""
    return s.ap[f, P_HYSTART] > 0.0 and s.g[PER_ACK] == 0.0


@njit(cache=True, nogil=True, inline="always")
def _pause(s: SimState, f: int, now: float, kind: int) -> None:
    """Stop the loop after this event: an external flow's decision is due (ackreplay.sim.external)."""
    s.fs[f, EXT_NOW] = now
    s.tally[T_PAUSED] = f + 1
    s.tally[T_KIND] = kind


@njit(cache=True, nogil=True, inline="always")
def samples_rtt(s: SimState, f: int, delivered: int, retransmitted: bool, echo: float) -> bool:
    """Whether an ACK that ``delivered`` segments gives an RTT sample (``echo``: the send time it answers). With
    timestamps (RFC 7323) every ACK that delivers data does, retransmissions included (Linux falls back on TSecr
    where the ACK's timing is ambiguous); without, Karn's rule (RFC 6298 §3, Linux ``tcp_clean_rtx_queue``): not when
    the data it delivers includes a retransmission. Without SACK only an ACK of new data delivers any (a duplicate
    ACK gives no sample)."""
    if delivered <= 0 or echo < 0.0:
        return False
    return s.flow[f, TS_OK] > 0.0 or not retransmitted


@njit(cache=True, nogil=True, inline="always")
def on_ack(s: SimState, f: int, now: float, cum: int, sack: int, echo: float, last: float) -> None:
    """An ACK reaches the sender: scoreboard, RTT, the control, recovery, then the send loop. An external flow
    entering recovery pauses the loop before its decision; ``finish_ack`` completes the ACK once it is taken.
    ``echo``: the send time of the first segment it answers, SRTT's sample (Linux ``seq_rtt_us``, from
    ``first_ackt``); ``last``: that of the last, HyStart's and HyStart's delay_min's sample (Linux ``ca_rtt_us``, from
    ``last_ackt`` in ``tcp_clean_rtx_queue``: the rate sample's ``rtt_us`` that ``cubictcp_acked`` is given) —
    they part on a delayed ACK of two segments, by the time between their sending."""
    fi = s.fi
    alg = s.alg[f]
    if alg == BBR:
        rate_ack_start(s, f)
    sack_ok = sack_on(s, f)
    retransmitted = sack >= 0 and s.seg[f, sack] == RETRANSMITTED
    delivered = _sack(s, f, sack) if sack >= 0 else 0
    acked = 0
    if cum > fi[f, UNA]:
        acked = cum - fi[f, UNA]
        news, retx = _cumulative(s, f, cum)
        retransmitted |= retx
        delivered += news if sack_ok else cumulative_without_sack(s, f, acked)
        if fi[f, UNA] >= fi[f, NXT]:
            s.fs[f, RTO_AT] = np.inf
            fi[f, RTO_ARMED] = 0
        else:
            arm_rto(s, f, now)
    elif not sack_ok:
        delivered = count_dupack(s, f)
    sampled = samples_rtt(s, f, delivered if sack_ok else acked, retransmitted, echo)
    if sampled:
        rtt_sample(s, f, now - echo)
    if alg == WESTWOOD:
        westwood_ack(s.fs, s.ap, f, now, delivered * s.g[MSS])
    elif alg == HTCP and s.ap[f, P_NS3] > 0.0:
        htcp_ns3_ack(s.fs, f, s.fs[f, SRTT], acked * s.g[MSS], fi[f, IN_REC] == 1 or fi[f, IN_LOSS] == 1)
    elif alg == HTCP:
        htcp_ack(s.fs, f, now, s.fs[f, SRTT], acked * s.g[MSS], fi[f, IN_REC] == 1 or fi[f, IN_LOSS] == 1,
                 s.ap[f, P_BETA_MIN], s.ap[f, P_RTT_STEP])
    elif alg == EXTERNAL:
        log_ack(s, f, now, delivered, acked, now - echo if sampled else np.nan, sack)
    elif alg == CUBIC and sampled and _hystart_on(s, f):
        hystart_ack(s.fs, fi, f, now, now - last, s.fs[f, EPOCH], s.g[MSS], s.flow[f, PACING] > 0.0,
                    s.ap[f, P_HYSTART] >= 2.0)
    if sack_ok:
        newly_lost = mark_lost(s, f)
        if sampled:
            newly_lost += lost_retransmissions(s, f, echo)
    else:
        newly_lost = mark_head_lost(s, f, acked > 0 and fi[f, UNA] <= fi[f, RECOVER])
    if alg == BBR:
        rate_note(s, f, newly_lost, now - last if sampled and last >= 0.0 else -1.0)
    if fi[f, IN_REC] == 1 and fi[f, UNA] > fi[f, RECOVER]:
        fi[f, IN_REC] = 0  # Linux tcp_end_cwnd_reduction, ns-3 ExitRecovery: cwnd = ssthresh (not BBR's: its own)
        if alg != BBR:
            s.fs[f, CWND] = s.fs[f, SSTHRESH]
        fi[f, DUPS] = 0  # (without SACK: Linux tcp_reset_reno_sack as recovery ends)
    if fi[f, IN_LOSS] == 1 and fi[f, UNA] > fi[f, RECOVER]:
        fi[f, IN_LOSS] = 0
    enter = fi[f, IN_REC] == 0 and fi[f, IN_LOSS] == 0 and newly_lost > 0
    if enter and alg == EXTERNAL:
        fi[f, PEND_DELIV] = delivered
        fi[f, PEND_ACKED] = acked
        _pause(s, f, now, PAUSE_RECOVERY)
        return
    finish_ack(s, f, now, enter, delivered, acked)


@njit(cache=True, nogil=True, inline="always")
def grown_segments(s: SimState, f: int, delivered: int, acked: int) -> int:
    """The segments an ACK's window growth counts (outside recovery). Linux (``tcp_cong_control``): its
    ``acked_sacked`` — the segments it newly delivered, cumulatively or by SACK (without SACK, ``max(acked − counted
    duplicate ACKs, 1)``) — and only if it moved the cumulative ACK (``tcp_may_raise_cwnd``: ``FLAG_DATA_ACKED``).
    So the ACK that ends a recovery counts the hole it filled, not the segments SACKed meanwhile that its
    cumulative ACK passes: they were delivered, and counted by PRR, when they were SACKed. Counting them too gave a
    CUBIC window ``W_est``'s and the cubic's growth for about a window's worth of ACKs at once — a segment more after
    each recovery than the kernel's trace, whose cwnd leaves recovery at ssthresh (tests/sim/test_growth_count.py).
    ns-3's settings (``PER_ACK``): the segments the cumulative ACK acknowledged (``segsAcked``), with SACK; those
    delivered without."""
    if s.g[PER_ACK] == 0.0:
        return delivered if acked > 0 else 0
    return acked if sack_on(s, f) else delivered


@njit(cache=True, nogil=True, inline="always")
def finish_ack(s: SimState, f: int, now: float, enter: bool, delivered: int, acked: int) -> None:
    """The rest of an ACK: recovery entry (``enter``), PRR in recovery or the control's growth, the send loop."""
    alg = s.alg[f]
    if enter:
        _enter_recovery(s, f, alg, now)
    grown = grown_segments(s, f, delivered, acked)
    if alg == BBR:  # (Linux tcp_cong_control: a cong_control of its own replaces PRR and the growth)
        bbr_main(s, f, now, delivered)
    elif s.fi[f, IN_REC] == 1:
        _prr(s, f, delivered)
    elif grown > 0:
        grow(alg, s.fs, s.ap, f, float(grown), now, s.g[PER_ACK] > 0.0, s.g[MSS])
    s.fs[f, LAST_ACK_T] = now
    send_loop(s, f, now)


@njit(cache=True, nogil=True, inline="always")
def on_rto(s: SimState, f: int, now: float) -> None:
    """The retransmission timer's stream fires: wait again if the deadline moved, else time out (an external
    flow pauses the loop first for its decision; ``time_out`` then)."""
    sid = f * N_STREAMS + S_RTO
    if s.fi[f, RTO_ARMED] == 0 or s.fi[f, UNA] >= s.fi[f, NXT]:
        heap_update(s.heap, s.pos, s.key, sid, np.inf)
        return
    if s.fs[f, RTO_AT] > now:
        heap_update(s.heap, s.pos, s.key, sid, s.fs[f, RTO_AT])
        return
    if s.alg[f] == EXTERNAL:
        _pause(s, f, now, PAUSE_TIMEOUT)
        return
    time_out(s, f, now)


@njit(cache=True, nogil=True, inline="always")
def time_out(s: SimState, f: int, now: float) -> None:
    """A timeout (RFC 6298 §5.4–5.7: back off; RFC 5681 §3.1: ssthresh from the control, cwnd = 1; every segment
    not SACKed is lost)."""
    fi = s.fi
    fs = s.fs
    fi[f, TIMEOUTS] += 1
    fi[f, LOSS_EVENTS] += 1
    if s.alg[f] == EXTERNAL:
        fs[f, SSTHRESH] = fs[f, EXT_SS]
    elif s.alg[f] == BBR:
        fs[f, SSTHRESH] = bbr_ssthresh(s, f)
        bbr_timeout(s, f)
    else:
        fs[f, SSTHRESH] = loss_ssthresh(s.alg[f], fs, s.ap, f, s.g[MSS], loss_window(s, f), True, now)
    fs[f, CWND] = 1.0
    fi[f, DUPS] = 0  # (without SACK: Linux tcp_enter_loss resets the counted duplicates)
    for x in range(fi[f, UNA], fi[f, NXT]):
        if s.seg[f, x] != SACKED:
            s.seg[f, x] = LOST
    fi[f, PIPE] = 0
    s.ring[f, 5] = 0  # (every retransmission is lost now)
    fi[f, IN_REC] = 0
    fi[f, IN_LOSS] = 1
    fi[f, RECOVER] = fi[f, NXT] - 1
    fi[f, RTX_PTR] = fi[f, UNA]
    fi[f, HI_LOST] = fi[f, NXT] - 1
    if s.alg[f] == WESTWOOD:
        fs[f, RTT_MIN] = 0.0  # tcp_westwood.c: reset_rtt_min on CA_EVENT_LOSS (the next sample restarts it)
    elif s.alg[f] == CUBIC and _hystart_on(s, f):
        hystart_restart(fs, fi, f, now)
    fs[f, RTO] = min(fs[f, RTO] * 2.0, MAX_RTO)
    heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_RTO, np.inf)
    fi[f, RTO_ARMED] = 0
    send_loop(s, f, now)


@njit(cache=True, nogil=True, inline="always")
def start_flow(s: SimState, f: int, now: float) -> None:
    """The flow opens with the initial window (RFC 6928: 10 segments) and RTO = INIT_RTO (RFC 6298 §2.1)."""
    s.fs[f, RTO] = s.g[INIT_RTO]
    send_loop(s, f, now)

