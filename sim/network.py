"""The bottleneck link (a FIFO served at the link rate, drop-tail in packets and/or bytes, random loss on data
before it: Bernoulli, or a flow's drops replayed segment by segment) and the receiver (cumulative ACK, a SACK
for what came out of order, delayed ACKs)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.sim.layout import (
    BUF_BYTES,
    BUF_PKTS,
    DELACK_COUNT,
    DELACK_ECHO,
    DELACK_GEN,
    DELACK_LAST,
    DELACK_N,
    DELACK_T,
    DELIVERED,
    LOSS_P,
    N_STREAMS,
    OVERFLOWS,
    PROP_FWD,
    PROP_REV,
    QD_BIN,
    QD_BINS,
    QD_N,
    QD_SUM,
    RATE,
    RCV_NXT,
    S_ACK,
    S_DATA,
    S_DELACK,
    SACK_OK,
    WIRE,
)
from ackreplay.sim.state import SimState
from ackreplay.sim.streams import heap_update


@njit(cache=True, nogil=True, inline="always")
def queue_packets(s: SimState, now: float) -> int:
    """Packets at the bottleneck at ``now`` (the one being sent included), those gone dropped from the ring."""
    mask = len(s.qf) - 1
    while s.qi[1] > 0 and s.qf[s.qi[0]] <= now:
        s.qi[0] = (s.qi[0] + 1) & mask
        s.qi[1] -= 1
    return s.qi[1]


@njit(cache=True, nogil=True, inline="always")
def random_drop(s: SimState, f: int, seg: int) -> bool:
    """Whether the random loss before the bottleneck drops this transmission of flow ``f``'s segment ``seg``: as
    its replayed fate says (``fate``: its next k transmissions dropped, k counted down), else — no fate, or
    beyond the replayed segments — a Bernoulli draw at the link's rate."""
    if seg < s.fate.shape[1] and s.fate[f, seg] >= 0:
        if s.fate[f, seg] == 0:
            return False
        s.fate[f, seg] -= 1
        return True
    return s.g[LOSS_P] > 0.0 and np.random.random() < s.g[LOSS_P]


@njit(cache=True, nogil=True, inline="always")
def enqueue(s: SimState, f: int, now: float, seg: int) -> float:
    """A data packet of flow ``f`` (its segment ``seg``) reaches the bottleneck: the time it leaves the link, or
    −1 if dropped."""
    g = s.g
    if random_drop(s, f, seg):
        return -1.0
    n = queue_packets(s, now)
    waiting = n - 1 if n > 0 else 0
    if waiting >= g[BUF_PKTS] or (waiting + 1) * g[WIRE] > g[BUF_BYTES]:
        s.fi[f, OVERFLOWS] += 1
        return -1.0
    if n + 1 >= len(s.qf):
        s.tally[1] = 1
        return -1.0
    start = max(now, s.last_fin[0])
    fin = start + g[WIRE] * 8.0 / g[RATE]
    s.last_fin[0] = fin
    s.qf[(s.qi[0] + n) & (len(s.qf) - 1)] = fin
    s.qi[1] = n + 1
    delay = start - now
    s.fs[f, QD_SUM] += delay
    s.fi[f, QD_N] += 1
    s.qd_hist[f, min(int(delay / g[QD_BIN]), QD_BINS - 1)] += 1
    return fin


@njit(cache=True, nogil=True, inline="always")
def push_data(s: SimState, f: int, at: float, seg: int, sent: float) -> None:
    """Put a data segment on its way to the receiver (arrives ``at``)."""
    r = s.ring
    size = s.dqs.shape[1]
    if r[f, 1] >= size:
        s.tally[1] = 1
        return
    i = (r[f, 0] + r[f, 1]) & (size - 1)
    s.dqf[f, i, 0] = at
    s.dqf[f, i, 1] = sent
    s.dqs[f, i] = seg
    r[f, 1] += 1
    if r[f, 1] == 1:
        heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_DATA, at)


@njit(cache=True, nogil=True, inline="always")
def send_ack(s: SimState, f: int, now: float, sack: int, echo: float, last: float) -> None:
    """The receiver sends an ACK (cumulative to RCV_NXT, SACKing ``sack`` if ≥ 0) echoing the send time ``echo``
    of the first segment it answers (RFC 7323's TSecr) and carrying ``last``, that of the last; it reaches the
    sender after the flow's reverse delay (the ACK path is uncongested)."""
    r = s.ring
    size = s.aqi.shape[1]
    s.fi[f, DELACK_N] = 0
    s.fi[f, DELACK_GEN] += 1
    heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_DELACK, np.inf)
    if r[f, 3] >= size:
        s.tally[1] = 1
        return
    at = now + s.flow[f, PROP_REV]
    i = (r[f, 2] + r[f, 3]) & (size - 1)
    s.aqf[f, i, 0] = at
    s.aqf[f, i, 1] = echo
    s.aqf[f, i, 2] = last
    s.aqi[f, i, 0] = s.fi[f, RCV_NXT]
    s.aqi[f, i, 1] = sack
    r[f, 3] += 1
    if r[f, 3] == 1:
        heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_ACK, at)


@njit(cache=True, nogil=True, inline="always")
def receive(s: SimState, f: int, now: float, seg: int, sent: float) -> None:
    """A data segment reaches the receiver. In order: ACK every DELACK_COUNT-th segment, or when the delayed-ACK
    timer fires; out of order, a duplicate, or filling a hole: ACK at once (RFC 5681 §4.2, RFC 2018)."""
    fi = s.fi
    nxt = fi[f, RCV_NXT]
    if seg < nxt or s.got[f, seg]:
        send_ack(s, f, now, -1, sent, sent)
        return
    s.got[f, seg] = True
    if seg > nxt:
        send_ack(s, f, now, seg if s.flow[f, SACK_OK] > 0.0 else -1, sent, sent)  # (without SACK: a duplicate ACK)
        return
    while nxt < s.got.shape[1] and s.got[f, nxt]:
        nxt += 1
    filled = nxt - seg > 1
    fi[f, DELIVERED] += nxt - seg
    fi[f, RCV_NXT] = nxt
    if fi[f, DELACK_N] == 0:
        s.fs[f, DELACK_ECHO] = sent
    s.fs[f, DELACK_LAST] = sent
    fi[f, DELACK_N] += 1
    if filled or fi[f, DELACK_N] >= s.g[DELACK_COUNT]:
        send_ack(s, f, now, -1, s.fs[f, DELACK_ECHO], sent)
    elif fi[f, DELACK_N] == 1:
        heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_DELACK, now + s.g[DELACK_T])


@njit(cache=True, nogil=True, inline="always")
def transmit(s: SimState, f: int, now: float, seg: int) -> None:
    """The sender puts segment ``seg`` on the wire now (the access link's delay is in PROP_FWD)."""
    fin = enqueue(s, f, now, seg)
    if fin >= 0.0:
        push_data(s, f, fin + s.flow[f, PROP_FWD], seg, now)
