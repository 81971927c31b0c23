"""Whether the sender paced its segments, read from a sender-side capture's first slow start (issue #37;
docs/whatif.md "Pacing").

A sender that does not pace sends when an ACK lets it: in slow start each ACK releases its segments at once, so
at the sender's end of the path a new segment leaves within a fraction of a millisecond of the ACK before it (ns-3's
senders: the median segment 0.12 ms after its ACK, none more than 0.5 ms). A sender whose socket is marked for
pacing (Linux's internal pacing, ``tcp_pacing_check``: an fq qdisc, or a control such as BBR set on the socket
first) sends on its pacing timer instead — at twice cwnd/SRTT in slow start, so while the window is under half the
BDP segments leave between the ACKs, pairs every few milliseconds with no ACK before them. The share of slow
start's new segments sent more than :data:`LATE_S` after the last ACK the sender had received tells them apart:
0.00 on every ns-3 capture and on a Python sender without pacing, 0.10–0.56 on every bulk capture of the Linux
testbed (whose senders pace).

Measured from the new segment after Linux's unpaced ones (it paces from ``data_segs_out >= 10``: the initial window
leaves at once) to the first retransmission (the end of the first slow start at the latest, before a recovery's
own timing), or to the end of the flow without one. ``None`` — the capture cannot tell — where it was not taken
at the sender (elsewhere the segments' times and the ACKs' are apart by the path between them and the sender) or
the stretch holds fewer than :data:`MIN_SEGMENTS` segments after an ACK.
"""

from __future__ import annotations

import numpy as np

from ackreplay.ingest.vantage import END_SHARE

#: A new segment sent this long after the last ACK (s) was not released by it: the pacing timer sent it.
LATE_S = 0.5e-3
#: Linux's unpaced segments at the start (``tcp_pacing_check`` paces from ``data_segs_out >= 10``).
UNPACED = 10
#: The fewest segments after an ACK the share is taken over.
MIN_SEGMENTS = 20
#: The share from which the sender is taken to pace (halfway between the unpaced senders' 0.00 and the least a
#: pacing Linux testbed sender showed, 0.10).
PACED_SHARE = 0.05


def paced_share(ack_t: np.ndarray, seg_t: np.ndarray, seg_seq: np.ndarray, seg_len: np.ndarray,
                vantage_position: float | None = 0.0) -> float | None:
    """The share of the first slow start's new segments (module docstring) sent more than :data:`LATE_S` after
    the last ACK before them. ``ack_t``: the flow's ACK times (ascending); ``seg_t``, ``seg_seq``, ``seg_len``:
    its data segments' times, first sequence numbers and lengths, in capture order, on the same clock;
    ``vantage_position``: where the capture was taken (0 at the sender, 1 at the receiver; None = 0). None where
    the capture cannot tell, or the segments' sequence numbers are not given (arrays of unequal length)."""
    if float(vantage_position or 0.0) > END_SHARE:
        return None
    if not len(seg_t) == len(seg_seq) == len(seg_len):  # (inputs built without the segments' sequence numbers)
        return None
    first = first_round_times(seg_t, seg_seq, seg_len)
    if first is None:
        return None
    t = first[UNPACED:]
    ack_t = np.asarray(ack_t, np.float64)
    last = np.searchsorted(ack_t, t, side="right") - 1
    after_ack = last >= 0
    if int(after_ack.sum()) < MIN_SEGMENTS:
        return None
    gap = t[after_ack] - ack_t[last[after_ack]]
    return float(np.mean(gap > LATE_S))


def first_round_times(seg_t: np.ndarray, seg_seq: np.ndarray, seg_len: np.ndarray, chunk: int = 4096
                      ) -> np.ndarray | None:
    """The times of the data segments (``seg_len`` > 0) before the first retransmission (a segment ending at or
    below the highest end sent before it), or of all of them without one; None when there is no data segment.
    Read a chunk at a time, each twice the last, up to the first retransmission: on a long flow the first slow
    start is a small part of its segments."""
    parts = []
    high = np.iinfo(np.int64).min  # the highest end sent so far
    lo, n = 0, len(seg_t)
    while lo < n:
        hi = min(n, lo + chunk)
        size = np.asarray(seg_len[lo:hi])
        data = size > 0
        end = (np.asarray(seg_seq[lo:hi], np.int64) + np.asarray(size, np.int64))[data]
        t = np.asarray(seg_t[lo:hi], np.float64)[data]
        highest = np.maximum.accumulate(np.concatenate(([high], end)))  # before each segment, then after all
        again = np.flatnonzero(end <= highest[:-1])
        if len(again):
            parts.append(t[:int(again[0])])
            return np.concatenate(parts)
        parts.append(t)
        high = int(highest[-1])
        lo, chunk = hi, 2 * chunk
    times = np.concatenate(parts) if parts else np.empty(0)
    return times if len(times) else None


def paced(share: float | None) -> bool:
    """Whether a sender with this :func:`paced_share` is taken to pace: at least :data:`PACED_SHARE`; a share the
    capture cannot give (None) is taken as not paced — the engine's sender as before, and Linux's own default (a
    host with the default qdisc and CUBIC does not pace)."""
    return share is not None and share >= PACED_SHARE
