"""A sender without SACK (the connection did not negotiate it, RFC 2018): NewReno's loss recovery (RFC 6582) as
Linux runs it with SACK off (``tcp_is_reno``).

Without SACK blocks the sender knows only the cumulative ACK and how many duplicate ACKs came. Linux counts each
duplicate ACK as one segment that left the network (``tcp_add_reno_sack``: ``sacked_out``, here ``DUPS``), so
the pipe is the segments in flight less those (``pipe``). The third duplicate ACK marks the first unacknowledged
segment lost and starts a loss event (``tcp_newreno_mark_lost`` with ``reordering`` 3); in recovery each partial
ACK (one that moves the cumulative ACK but not past ``recover``) marks the new first unacknowledged segment lost
(RFC 6582 §3.2 step 3, ``tcp_newreno_mark_lost`` on ``FLAG_SND_UNA_ADVANCED``): one hole repaired per round
trip. A cumulative ACK of ``acked`` segments takes back ``acked − 1`` of the counted duplicates and delivered
``max(acked − DUPS, 1)`` (``tcp_remove_reno_sacks``). RACK's rule for lost retransmissions needs SACK, so a lost
retransmission waits for the timer, as in Linux (``tcp_identify_packet_loss`` runs only NewReno's marking).
"""

from __future__ import annotations

from numba import njit

from ackreplay.sim.layout import DUPS, HI_LOST, IN_FLIGHT, IN_REC, LOST, NXT, PIPE, RTX_PTR, SACK_OK, UNA
from ackreplay.sim.state import SimState

#: Duplicate ACKs that start a loss event (RFC 5681 §3.2's DupThresh; Linux's initial ``tp->reordering``).
DUP_THRESH = 3


@njit(cache=True, nogil=True, inline="always")
def sack_on(s: SimState, f: int) -> bool:
    """Whether flow ``f``'s connection negotiated SACK."""
    return s.flow[f, SACK_OK] > 0.0


@njit(cache=True, nogil=True, inline="always")
def pipe(s: SimState, f: int) -> int:
    """RFC 6675's pipe; without SACK, Linux's ``tcp_packets_in_flight``: the segments in flight (not marked lost,
    retransmissions counted) less the duplicate ACKs counted as segments gone."""
    return s.fi[f, PIPE] - s.fi[f, DUPS]


@njit(cache=True, nogil=True, inline="always")
def count_dupack(s: SimState, f: int) -> int:
    """A duplicate ACK without SACK: one more segment left the network (1), unless every segment outstanding but
    one hole is counted already (Linux ``tcp_limit_reno_sacked``; 0)."""
    fi = s.fi
    if fi[f, UNA] >= fi[f, NXT] or fi[f, DUPS] + 1 > min(fi[f, NXT] - fi[f, UNA] - 1, fi[f, PIPE]):
        return 0
    fi[f, DUPS] += 1
    return 1


@njit(cache=True, nogil=True, inline="always")
def cumulative_without_sack(s: SimState, f: int, acked: int) -> int:
    """The cumulative ACK moved by ``acked`` segments: the duplicates it accounts for taken back (all but one of
    them eat counted duplicate ACKs); returns the segments newly delivered, ``max(acked − DUPS, 1)``."""
    fi = s.fi
    delivered = max(acked - fi[f, DUPS], 1)
    fi[f, DUPS] -= min(acked - 1, fi[f, DUPS])
    return delivered


@njit(cache=True, nogil=True, inline="always")
def mark_head_lost(s: SimState, f: int, una_advanced: bool) -> int:
    """NewReno's loss marking: the first unacknowledged segment is lost at the third duplicate ACK outside
    recovery, or at a partial ACK in recovery (1 if it was marked now)."""
    fi = s.fi
    due = fi[f, DUPS] >= DUP_THRESH if fi[f, IN_REC] == 0 else una_advanced
    x = fi[f, UNA]
    if not due or x >= fi[f, NXT] or s.seg[f, x] != IN_FLIGHT:
        return 0
    s.seg[f, x] = LOST
    fi[f, PIPE] -= 1
    fi[f, HI_LOST] = max(fi[f, HI_LOST], x)
    fi[f, RTX_PTR] = min(fi[f, RTX_PTR], x)
    if fi[f, DUPS] > fi[f, PIPE]:  # (the pipe never below 0)
        fi[f, DUPS] = fi[f, PIPE]
    return 1
