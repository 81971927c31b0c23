"""Reordering told apart from retransmission where the capture was not taken at the sender.

At the sender, a data segment starting below the highest sequence sent is a retransmission: a sender does not
reorder its own segments (§1.2). Away from it (a receiver-side or mid-path capture), the same segment may be an
original that the path delivered late. The two differ in what the capture point saw and when:

* **Bytes seen before**: a segment that repeats bytes the capture point already saw is a retransmission
  (spurious when a D-SACK reports it: ``tcpflow``). Only a segment made wholly of bytes never seen — filling a
  hole — can be a reordered original.
* **TSval** (the sender's clock, RFC 7323; it serves as the IP ID would — an original sent earlier carries a
  lower value — and the TTL cannot tell the sender's copies apart): an original overtaken on the path was sent
  before the segment that opened the hole (the first to arrive above it), so its TSval is at most that
  segment's; a retransmission is sent after the original and, but for a sender that timed out and then sent new
  data, after that segment too. Below it: reordered; above it: a retransmission (also one sent on a timer
  before any feedback on the hole could reach the sender: the testbed pair ``two``, where the hole opened
  29.7 ms, less than the 30.3 ms RTT, before the retransmission arrived); equal (one clock tick): the timing
  decides.
* **Timing against the RTT**: a retransmission that fills a hole comes at least a round trip after the hole
  appeared at the capture point, wherever that is (the segment above the hole goes on to the receiver, its
  duplicate ACK back to the sender, the retransmission forward to the capture point: a whole round trip). A hole
  filled sooner was filled by the original — reordering. The round trip is the handshake's (SYN to the
  handshake's ACK, a whole round trip at any capture point); without one only the TSval can tell, and a
  segment it cannot place stays a retransmission.

A loss episode that ingest opened for retransmissions that all turn out to be reordered is dropped.
"""

from __future__ import annotations

import numpy as np

from ackreplay.ingest import tcpflow as tf
from ackreplay.jitcache.kernel_mode import njit

_WRAP = np.int64(1) << 32
_HALF = np.int64(1) << 31


def handshake_round_trip_ns(fi: np.ndarray) -> int:
    """A flow's whole round trip from its connection's handshake (``fi``: its ``F_i`` row): the client's SYN to the
    handshake's ACK, the same at any capture point; -1 without a handshake (or with a SYN sent again)."""
    syn, hsack = int(fi[tf.FI_SYN]), int(fi[tf.FI_HSACK])
    if fi[tf.FI_SYN_COUNT] > 1 or tf.NOT_SEEN in (syn, hsack) or hsack <= syn:
        return -1
    return hsack - syn


@njit(cache=True, nogil=True)
def reordered_segments(t: np.ndarray, seq: np.ndarray, length: np.ndarray, kind: np.ndarray, tsval: np.ndarray,
                       rtt_ns: int) -> np.ndarray:  # pragma: no cover - compiled
    """Which of one flow's data segments (in arrival order: times ``t``, relative sequence ``seq``, ``length``,
    ``tcpflow.SEG_*`` ``kind``, raw ``tsval`` with -1 = none) are reordered originals rather than
    retransmissions (module docstring); ``rtt_ns`` the round trip (-1: unknown)."""
    n = len(t)
    out = np.zeros(n, np.bool_)
    if n == 0:
        return out
    rise_t = np.empty(n, np.int64)  # when the highest sequence seen rose, to what, and the segment's TSval
    rise_top = np.empty(n, np.int64)
    rise_tsv = np.empty(n, np.int64)
    hole_l = np.empty(2 * n + 1, np.int64)  # the holes below it: bytes never seen (a segment inside one splits it)
    hole_r = np.empty(2 * n + 1, np.int64)
    nr = 0
    nh = 0
    top = seq[0]
    for i in range(n):
        s = seq[i]
        e = s + length[i]
        if kind[i] == tf.SEG_RETX and e > s:
            inside = False
            for h in range(nh):
                if hole_l[h] <= s and e <= hole_r[h]:
                    inside = True
                    break
            k = np.searchsorted(rise_top[:nr], s, side="right")  # the rise that opened the hole
            if inside and k < nr:
                order = 0  # the TSval against the opener's: -1 below (sent before it), 1 above, 0 cannot tell
                if tsval[i] >= 0 and rise_tsv[k] >= 0:
                    d = (tsval[i] - rise_tsv[k]) % _WRAP
                    order = 0 if d == 0 else (1 if d < _HALF else -1)
                quick = rtt_ns > 0 and t[i] - rise_t[k] < rtt_ns
                out[i] = order < 0 or (order == 0 and quick)
        # the bytes are seen now: out of the holes
        w = 0
        for h in range(nh):
            lo, hi = hole_l[h], hole_r[h]
            if e <= lo or s >= hi:
                hole_l[w], hole_r[w] = lo, hi
                w += 1
                continue
            if lo < s:
                hole_l[w], hole_r[w] = lo, s
                w += 1
            if e < hi:
                hole_l[w], hole_r[w] = e, hi
                w += 1
        nh = w
        if e > top:
            if s > top:
                hole_l[nh], hole_r[nh] = top, s
                nh += 1
            top = e
            rise_t[nr], rise_top[nr], rise_tsv[nr] = t[i], top, tsval[i]
            nr += 1
    return out


def mark_reordered(S_i: np.ndarray, E_i: np.ndarray, fi: np.ndarray, ep_lo: int) -> int:
    """Mark one rebuilt flow's reordered segments (kind ``tcpflow.SEG_REORDERED`` in ``S_i``) and take them out of
    its loss episodes (``E_i`` rows from ``ep_lo``): an episode left without a retransmission is dropped (flow
    -1), one whose first retransmission was reordered starts at its first real one. ``fi``: the flow's ``F_i`` row.
    Returns how many segments were reordered."""
    s_lo = int(fi[tf.FI_SEG_LO])
    s_hi = s_lo + int(fi[tf.FI_NSEGS])
    rows = S_i[:, s_lo:s_hi]
    if not (rows[tf.SI_KIND] == tf.SEG_RETX).any():
        return 0
    found = reordered_segments(rows[tf.SI_T], rows[tf.SI_SEQ], rows[tf.SI_LEN], rows[tf.SI_KIND],
                               rows[tf.SI_TSVAL], handshake_round_trip_ns(fi))
    n = int(found.sum())
    if not n:
        return 0
    retx = rows[tf.SI_KIND] == tf.SEG_RETX
    real = retx & ~found
    rows[tf.SI_KIND, found] = tf.SEG_REORDERED
    e_hi = ep_lo + int(fi[tf.FI_NEPS])
    starts = E_i[tf.EI_START, ep_lo:e_hi]
    t_real, s_real = rows[tf.SI_T, real], rows[tf.SI_SEQ, real]
    # each retransmission counted in the episode open when it arrived: the last that started at or before it
    ends = np.append(starts[1:], np.iinfo(np.int64).max)
    for i, r in enumerate(range(ep_lo, e_hi)):
        mine = (t_real >= starts[i]) & (t_real < ends[i])
        gone = int(((rows[tf.SI_T, found] >= starts[i]) & (rows[tf.SI_T, found] < ends[i])).sum())
        if not gone:
            continue
        if not mine.any():
            E_i[tf.EI_FLOW, r] = -1
            continue
        E_i[tf.EI_RETX, r] = max(1, int(E_i[tf.EI_RETX, r]) - gone)
        E_i[tf.EI_START, r] = int(t_real[mine][0])
        E_i[tf.EI_SEQ, r] = int(s_real[mine].min())
    return n
