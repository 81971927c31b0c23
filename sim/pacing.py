"""Linux's internal TCP pacing (``tcp_update_pacing_rate``, ``tcp_pacing_check``, ``tcp_update_skb_after_send``),
for a sender whose socket is marked for pacing (``FlowSpec.pacing``: an fq qdisc, or a control whose init marks
it, as BBR's does — the socket keeps the mark when another control is set on it later).

The pacing rate is ``ratio · mss · max(cwnd, packets out) / SRTT``, the ratio 200 % while cwnd is below half of
ssthresh (``tcp_pacing_ss_ratio``: slow start) and 120 % after (``tcp_pacing_ca_ratio``); each segment sent
moves the earliest time of the next, ``tcp_wstamp_ns``, by its length at that rate — less up to half of it as
credit for the time the sender was late (``take into account OS jitter``) — and none is sent before that time:
the sender waits for the pacing timer (the stream ``S_PACE``). Linux paces only from the tenth data segment on
(``data_segs_out >= 10``: the initial window leaves at once) and only once an RTT was measured. A segment is one
``skb`` here (the testbed's offloads are off).

What it changes: in slow start an ACK no longer releases its two segments at once; the sender spreads them at
twice its rate of the last round trip, below the bottleneck's rate while cwnd is under half the BDP, so no queue
builds until the window nears the BDP — and HyStart's delay test, which reads the queue, fires a round later.
"""

from __future__ import annotations

from numba import njit

from ackreplay.sim.bbr import bbr_segment_time
from ackreplay.sim.layout import BBR, CWND, N_STREAMS, NXT, PACE_AT, PACING, S_PACE, SENT, SRTT, SSTHRESH, UNA
from ackreplay.sim.state import SimState
from ackreplay.sim.streams import heap_update

#: ``tcp_pacing_ss_ratio`` and ``tcp_pacing_ca_ratio`` (Linux's defaults, per cent / 100).
SS_RATIO, CA_RATIO = 2.0, 1.2
#: Linux paces from the data segment with this index on (``tp->data_segs_out >= 10``).
UNPACED_SEGMENTS = 10


@njit(cache=True, nogil=True, inline="always")
def _segment_time(s: SimState, f: int) -> float:
    """One segment's time at the pacing rate (s; 0: not paced — no RTT measured yet); BBR's own rate for BBR
    (sim/bbr.py)."""
    if s.alg[f] == BBR:
        return bbr_segment_time(s, f)
    srtt = s.fs[f, SRTT]
    if srtt <= 0.0:
        return 0.0
    cwnd = s.fs[f, CWND]
    ratio = SS_RATIO if cwnd < s.fs[f, SSTHRESH] / 2.0 else CA_RATIO
    return srtt / (ratio * max(cwnd, float(s.fi[f, NXT] - s.fi[f, UNA]), 1.0))


@njit(cache=True, nogil=True, inline="always")
def pace_held(s: SimState, f: int, now: float) -> bool:
    """Whether the flow's next segment must wait for its pacing time (then the pacing timer is set for it)."""
    if s.flow[f, PACING] == 0.0 or s.fi[f, SENT] < UNPACED_SEGMENTS or s.fs[f, PACE_AT] <= now:
        return False
    heap_update(s.heap, s.pos, s.key, f * N_STREAMS + S_PACE, s.fs[f, PACE_AT])
    return True


@njit(cache=True, nogil=True, inline="always")
def paced(s: SimState, f: int, now: float) -> None:
    """A segment sent now: the earliest time of the next (``tcp_update_skb_after_send``)."""
    if s.flow[f, PACING] == 0.0 or s.fi[f, SENT] < UNPACED_SEGMENTS:
        return
    length = _segment_time(s, f)
    credit = max(now - s.fs[f, PACE_AT], 0.0)
    s.fs[f, PACE_AT] = max(s.fs[f, PACE_AT], now) + length - min(length / 2.0, credit)
