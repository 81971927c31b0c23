"""The delivery-rate sampler BBR's model reads, as Linux's net/ipv4/tcp_rate.c (``tcp_rate_skb_sent``,
``tcp_rate_skb_delivered``, ``tcp_rate_gen``), after Cheng, Cardwell, Hassas Yeganeh and Jacobson's "Delivery Rate
Estimation" (IETF draft-cheng-iccrg-delivery-rate-estimation) and Cardwell, Cheng, Gunn, Hassas Yeganeh and
Jacobson, "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016.

Each segment, when sent or resent, keeps a snapshot (``SimState.tx``, a ring indexed by the segment's number:
the segments outstanding never span more than the receive window, half the ring): the segments delivered so far,
when the last of them was delivered (``delivered_mstamp``), when the segment that opened the current send flight
left (``first_tx_mstamp``), its own send time, and whether the sender was application-limited. An ACK's rate sample
takes the snapshot of the most recently sent segment it newly delivers, cumulatively or by SACK: the segments
delivered since, over the longer of the send and the ACK interval (never shorter than the minimum RTT: such a
sample is discarded). The columns: ackreplay.sim.bbr_layout."""

from __future__ import annotations

from numba import njit

from ackreplay.sim.bbr_layout import (
    APP_LIMITED,
    DELIVERED,
    DELIVERED_STAMP,
    FIRST_TX,
    LOST_TOTAL,
    NO_STAMP,
    RS_ACKED,
    RS_APP_LIMITED,
    RS_DELIVERED,
    RS_INTERVAL,
    RS_LAST_SEG,
    RS_LOSSES,
    RS_PRIOR_DELIVERED,
    RS_PRIOR_IN_FLIGHT,
    RS_PRIOR_STAMP,
    RS_RTT,
    TX_APP_LIMITED,
    TX_DELIVERED,
    TX_DELIVERED_STAMP,
    TX_FIRST,
    TX_SENT,
)
from ackreplay.sim.dupacks import pipe
from ackreplay.sim.layout import RTT_MIN
from ackreplay.sim.state import SimState


@njit(cache=True, nogil=True, inline="always")
def rate_ack_start(s: SimState, f: int) -> None:
    """An ACK arrives: a fresh rate sample (``struct rate_sample rs = {}`` in ``tcp_ack``), with the packets in
    flight before it (``prior_in_flight``)."""
    b = s.bbr[f]
    b[RS_PRIOR_DELIVERED] = 0.0
    b[RS_PRIOR_STAMP] = NO_STAMP
    b[RS_APP_LIMITED] = 0.0
    b[RS_INTERVAL] = -1.0
    b[RS_LAST_SEG] = -1.0
    b[RS_PRIOR_IN_FLIGHT] = float(pipe(s, f))


@njit(cache=True, nogil=True, inline="always")
def rate_skb_sent(s: SimState, f: int, x: int, now: float, empty: bool) -> None:
    """Segment ``x`` (re)sent at ``now`` (``tcp_rate_skb_sent``); ``empty``: nothing was outstanding before it, so
    a new send flight starts here."""
    b = s.bbr[f]
    if empty:
        b[FIRST_TX] = now
        b[DELIVERED_STAMP] = now
    t = s.tx[f, x & (s.tx.shape[1] - 1)]
    t[TX_FIRST] = b[FIRST_TX]
    t[TX_DELIVERED_STAMP] = b[DELIVERED_STAMP]
    t[TX_DELIVERED] = b[DELIVERED]
    t[TX_SENT] = now
    t[TX_APP_LIMITED] = 1.0 if b[APP_LIMITED] != 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def rate_skb_delivered(s: SimState, f: int, x: int) -> None:
    """Segment ``x`` newly delivered by this ACK (``tcp_rate_skb_delivered``): the sample takes the snapshot of
    the most recently sent such segment (the higher one on a tie), and its send interval from the start of its
    flight; the next flight's start is this segment's send time."""
    b = s.bbr[f]
    t = s.tx[f, x & (s.tx.shape[1] - 1)]
    if t[TX_DELIVERED_STAMP] == NO_STAMP:
        return
    sent = t[TX_SENT]
    later = sent > b[FIRST_TX] or (sent == b[FIRST_TX] and x > b[RS_LAST_SEG])
    if b[RS_PRIOR_DELIVERED] == 0.0 or later:
        b[RS_PRIOR_DELIVERED] = t[TX_DELIVERED]
        b[RS_PRIOR_STAMP] = t[TX_DELIVERED_STAMP]
        b[RS_APP_LIMITED] = t[TX_APP_LIMITED]
        b[RS_LAST_SEG] = float(x)
        b[FIRST_TX] = sent
        b[RS_INTERVAL] = sent - t[TX_FIRST]
    t[TX_DELIVERED_STAMP] = NO_STAMP  # (Linux clears it for a SACKed segment; delivered once either way here)


@njit(cache=True, nogil=True, inline="always")
def rate_note(s: SimState, f: int, lost: int, rtt: float) -> None:
    """What the sender's ACK processing found for the sample: ``lost`` segments newly marked lost, ``rtt`` the
    ACK's RTT sample of the last segment it delivered (Linux's ``ca_rtt_us``; −1: none)."""
    s.bbr[f, RS_LOSSES] = float(lost)
    s.bbr[f, RS_RTT] = rtt


@njit(cache=True, nogil=True, inline="always")
def rate_gen(s: SimState, f: int, now: float, delivered: int) -> None:
    """The ACK's rate sample (``tcp_rate_gen``) once it ``delivered`` segments: the sample's ``delivered`` is −1 (not
    valid) when nothing it delivered carried a snapshot or its interval is shorter than the minimum RTT."""
    b = s.bbr[f]
    b[DELIVERED] += delivered
    b[LOST_TOTAL] += b[RS_LOSSES]
    if b[APP_LIMITED] != 0.0 and b[DELIVERED] > b[APP_LIMITED]:
        b[APP_LIMITED] = 0.0
    if delivered > 0:
        b[DELIVERED_STAMP] = now
    b[RS_ACKED] = float(delivered)
    if b[RS_PRIOR_STAMP] == NO_STAMP:
        b[RS_DELIVERED] = -1.0
        b[RS_INTERVAL] = -1.0
        return
    b[RS_DELIVERED] = b[DELIVERED] - b[RS_PRIOR_DELIVERED]
    b[RS_INTERVAL] = max(b[RS_INTERVAL], now - b[RS_PRIOR_STAMP])
    if b[RS_INTERVAL] < s.fs[f, RTT_MIN]:
        b[RS_INTERVAL] = -1.0
