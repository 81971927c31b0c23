"""The sender's view of a flow captured at the receiver (docs/estimators.md §7).

At the receiver, ACKs are seen as they leave and data as it arrives: the data→ACK time is the receiver's
own turnaround (µs), so the seq/ack RTT samples, the flight and the loss times that ingest derives for a
sender-side capture are meaningless there. This module rewrites them, in place, as the sender would
have seen them, on a time axis where each ACK reaches the sender when it leaves the receiver (one
constant reverse delay δ dropped: every score is unchanged by a constant shift, and inter-ACK gaps —
so every rate sample — survive as captured when the return path is uncongested):

* **RTT samples** (timestamps needed). A data segment echoes, in TSecr, the TSval of the last ACK the
  sender had when it sent it: that ACK's departure is the segment's send time on this axis (the latest
  ACK carrying that TSval that left at least 0.9 handshake RTT before the segment arrived: TSval ticks
  are ~1 ms). The sender's sample at ACK m is then ``t_m − send(D)`` for D the highest newly
  acknowledged segment — one full round trip as the sender would time it, its own turnaround included —
  under Karn's rule (no sample when a retransmission arrived for the newly acknowledged bytes); an ACK
  with no such sample takes the sender's TSecr rule (its TSecr names the data transmission it answers,
  retransmissions included: that segment's send time; without it, samples stop during recoveries). The
  handshake seen from the receiver (its SYN or SYN-ACK to the answer) seeds srtt and RTTmin; RFC 6298
  smoothing (gain 1/8) and the running minimum follow.
* **Flight** after ACK k: the data that had left the sender when ACK k reached it is the data that
  reaches the receiver within one srtt: highest sequence arrived by ``t_k + srtt_k``, less ACK k and the
  bytes it SACKs.
* **Loss episodes** (found from the retransmissions arriving and the duplicate ACKs leaving): each
  starts where the sender retransmitted, one srtt before the retransmission arrived; its decision row is
  the last ACK at or before that time; a timeout's silence is measured to it. A retransmission sent while
  the sender's previous recovery was still going on joins it; later ones open their own episode (the
  receiver's view would merge back-to-back recoveries: ``_place_episodes``). Holes that outlive the sender's RTO are
  counted as retransmissions lost again (inferred); what else was lost again cannot be seen.
* Data segment times are kept as they arrived (used for the score window's start and ``tibet_tx``).

What cannot be seen from here is said in the flow's confidence: ACKs lost on the return path never
reach the sender but are counted; return-path queueing moves ACK times (rates) a little.
Without timestamps (or when the data never echoes the ACKs' TSvals), a segment's send time is the
departure of the ACK that released it: the one that moved the receive window's right edge to where the
segment starts (§7); such samples are upper bounds when the sender was not held by the window, so the
confidence is low. A sender never held by the window (Linux autotuning) gives no such segment: then each
advancing ACK's sample is the handshake's round trip as the receiver saw it — base RTT without the
queueing delay, which the receiver cannot see without timestamps (confidence low, said in the evidence).
A flow with fewer than ``MIN_SAMPLES`` samples either way is not sound and is not
replayed unless asked for (``--allow-vantage``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ackreplay.ingest import tcpflow as tf
from ackreplay.jitcache.kernel_mode import njit

#: Fewer RTT samples than this and the reconstruction is not sound (the flow is not replayed by default).
MIN_SAMPLES = 8
#: A window release after an idle gap longer than an RTO (at least Linux's 200 ms floor, else 1.5 handshake round
#: trips) is the application's, not the path's: no RTT sample from it (``_window_releases``)
IDLE_RTO_NS = 200_000_000
CONFIDENCE_NOTE = ("ACKs lost on the return path are invisible at the receiver (counted as if they arrived); "
                   "the sender's send times come from TSval echoes (~1 ms clock ticks); the ACKs' spacing at the "
                   "sender (bunched on the return path after the capture point) is not seen, so estimators that "
                   "depend on it (BE, CRB) are labelled not reproducible from this vantage")


@dataclass
class Reconstruction:
    """How a flow's sender view was rebuilt, the evidence, and how far to trust it."""

    method: str  # "receiver_side"
    sound: bool
    rtt_samples: int
    evidence: str
    confidence: str  # "medium" | "low"


@njit(cache=True)
def _unwrapped(raw: np.ndarray) -> np.ndarray:
    """32-bit timestamps (−1 = none) unwrapped to 64 bits against the previous one present."""
    out = np.full(len(raw), -1, np.int64)
    ref_raw = -1
    ref_val = 0
    for k in range(len(raw)):
        if raw[k] >= 0:
            if ref_raw < 0:
                ref_raw, ref_val = raw[k], 0
            v = tf.unwrap(raw[k], ref_raw, ref_val)
            ref_raw, ref_val = raw[k], v
            out[k] = v
    return out


@njit(cache=True)
def _receiver_side(A_i: np.ndarray, A_f: np.ndarray, a_lo: int, a_hi: int, S_i: np.ndarray, s_lo: int,
                   s_hi: int, E_i: np.ndarray, e_lo: int, e_hi: int, hs_rtt_ns: int, rs_ns: int, wshift: int,
                   info: np.ndarray) -> int:
    """Rewrite ACK rows ``a_lo:a_hi`` (rtt, srtt, rttmin, flight) and episode rows ``e_lo:e_hi`` (start,
    decision row, silence) of one receiver-side flow; return the number of RTT samples found. ``info``
    receives how many data segments got a send time from TSval echoes and from window releases, and
    whether the samples are held at the handshake's round trip instead."""
    n = a_hi - a_lo
    if n == 0:
        return 0
    # the seq/ack samples ingest took at the capture point: the tap→receiver→tap part (receiver side: ~0)
    tap_rtt = A_f[tf.AF_RTT, a_lo:a_hi].copy()
    send = _send_times(A_i, a_lo, a_hi, S_i, s_lo, s_hi, rs_ns, info)
    by_echo = send >= 0  # send times from TSval echoes; the others from window releases
    if info[0] < MIN_SAMPLES and wshift >= 0:
        idle_ns = max(IDLE_RTO_NS, int(1.5 * hs_rtt_ns))  # the sender's RTO floor, or 1.5 handshake RTTs
        _window_releases(A_i, a_lo, a_hi, S_i, s_lo, s_hi, wshift, idle_ns, send, info)
    # neither: every advancing ACK's sample is the handshake's round trip (queueing delay unseen)
    held = info[0] < MIN_SAMPLES and info[1] < MIN_SAMPLES and rs_ns > 0
    info[2] = 1 if held else 0
    sender_part = np.empty(n, np.float64)
    samples, srtt = _rtt_samples(A_i, A_f, a_lo, a_hi, S_i, s_lo, s_hi, send, by_echo, tap_rtt, held, hs_rtt_ns,
                                 rs_ns, sender_part)
    _flight(A_i, a_lo, a_hi, S_i, s_lo, s_hi, sender_part)
    # ---- loss episodes at the sender's time: the sender-side part before the retransmission passed (the
    # receiver side: one srtt before it arrived)
    _place_episodes(A_i, a_lo, a_hi, S_i, s_lo, s_hi, E_i, e_lo, e_hi, sender_part, rs_ns, srtt, info)
    return samples


@njit(cache=True)
def _send_times(A_i: np.ndarray, a_lo: int, a_hi: int, S_i: np.ndarray, s_lo: int, s_hi: int, rs_ns: int,
                info: np.ndarray) -> np.ndarray:
    """Each data segment's send time (-1 unknown): the departure of the ACK whose TSval it echoes — the latest
    with that TSval that left at least 0.9 of the handshake's round trip ``rs_ns`` before the segment arrived.
    ``info[0]`` counts them."""
    n = a_hi - a_lo
    m = s_hi - s_lo
    # the ACKs' TSvals unwrapped to 64 bits (non-decreasing: the receiver's clock)
    tsv = _unwrapped(A_i[tf.AI_TSVAL, a_lo:a_hi])
    send = np.full(m, -1, np.int64)
    k = 0  # ACK rows left before the segment arrived
    ref_raw = -1
    ref_val = 0
    min_gap = (rs_ns * 9) // 10 if rs_ns > 0 else 0
    for j in range(m):
        r = s_lo + j
        t_d = S_i[tf.SI_T, r]
        while k < n and A_i[tf.AI_T, a_lo + k] <= t_d:
            if tsv[k] >= 0:
                ref_raw, ref_val = A_i[tf.AI_TSVAL, a_lo + k], tsv[k]
            k += 1
        e_raw = S_i[tf.SI_TSECR, r]
        kind_j = S_i[tf.SI_KIND, r]
        if (kind_j != tf.SEG_NEW and kind_j != tf.SEG_RETX) or e_raw < 0 or ref_raw < 0:
            continue
        e = tf.unwrap(e_raw, ref_raw, ref_val)
        best = -1
        for q in range(k - 1, -1, -1):  # latest departure with that TSval, a handshake RTT back
            if tsv[q] < 0:
                continue
            if tsv[q] < e:
                break
            if tsv[q] == e:
                best = q  # none that far back: the earliest with that TSval (the latest could have left just
                if A_i[tf.AI_T, a_lo + q] <= t_d - min_gap:  # before the data arrived: too short a round trip)
                    break
        if best >= 0:
            send[j] = A_i[tf.AI_T, a_lo + best]
            info[0] += 1
    return send


@njit(cache=True)
def _retransmissions_by_start(S_i: np.ndarray, s_lo: int, s_hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The retransmissions of segment rows ``s_lo:s_hi`` by start: (starts ascending, running maximum of their
    ends)."""
    rx_j = _rows_of_kind(S_i, s_lo, s_hi, tf.SEG_RETX)
    rx_s = S_i[tf.SI_SEQ, s_lo + rx_j]
    rx_e = rx_s + S_i[tf.SI_LEN, s_lo + rx_j]
    order = np.argsort(rx_s)
    rx_s = rx_s[order]
    rx_e_max = rx_e[order].copy()
    for i in range(1, len(rx_j)):
        rx_e_max[i] = max(rx_e_max[i], rx_e_max[i - 1])
    return rx_s, rx_e_max


@njit(cache=True)
def _rtt_samples(A_i: np.ndarray, A_f: np.ndarray, a_lo: int, a_hi: int, S_i: np.ndarray, s_lo: int, s_hi: int,
                 send: np.ndarray, by_echo: np.ndarray, tap_rtt: np.ndarray, held: bool, hs_rtt_ns: int, rs_ns: int,
                 sender_part: np.ndarray) -> tuple[int, float]:
    """RTT samples, srtt and RTTmin as the sender would have them into ACK rows ``a_lo:a_hi``, with their source
    (from the segments' ``send`` times — ``by_echo``: from a TSval echo, else a window release; ``held``: each the
    handshake's round trip, ``rs_ns``, plus the tap's own sample ``tap_rtt``), and
    how long data the sender sends when each ACK reaches it takes to pass the capture point into ``sender_part``.
    Returns (samples, the last srtt)."""
    n = a_hi - a_lo
    m = s_hi - s_lo
    # new segments by sequence end (they arrive in sequence order) and retransmissions by start
    new_j = _rows_of_kind(S_i, s_lo, s_hi, tf.SEG_NEW)
    new_end = S_i[tf.SI_SEQ, s_lo + new_j] + S_i[tf.SI_LEN, s_lo + new_j]
    new_send = send[new_j]
    rx_s, rx_e_max = _retransmissions_by_start(S_i, s_lo, s_hi)
    # the data segments' own TSvals unwrapped (the sender's clock, non-decreasing in arrival order): an ACK's
    # TSecr names the transmission it answers (the sender's TSecr fallback, §1.1)
    seg_tsv = _unwrapped(S_i[tf.SI_TSVAL, s_lo:s_hi])
    srtt = hs_rtt_ns / 1e9 if hs_rtt_ns > 0 else -1.0
    rttmin = srtt
    samples = 0
    rr = 0.0  # smoothed tap→receiver→tap part (gain 1/8), for the sender-side part: latest RTT − rr
    latest = srtt  # the latest RTT sample (the handshake's until the first)
    rr_seen = False
    prev_ack = A_i[tf.AI_ACK, a_lo] - A_i[tf.AI_ACKED, a_lo]
    jj = 0  # data segments arrived before this ACK left
    d_raw = -1
    d_val = 0
    for k in range(n):
        row = a_lo + k
        a = A_i[tf.AI_ACK, row]
        t_m = A_i[tf.AI_T, row]
        while jj < m and S_i[tf.SI_T, s_lo + jj] <= t_m:
            if seg_tsv[jj] >= 0:
                d_raw, d_val = S_i[tf.SI_TSVAL, s_lo + jj], seg_tsv[jj]
            jj += 1
        rtt = -1.0
        src = tf.RTT_NONE
        if a > prev_ack:
            d = np.searchsorted(new_end, a, side="right") - 1  # the highest new segment ending by a
            c = np.searchsorted(rx_s, a, side="left")  # retransmissions starting below a …
            karn_bad = c > 0 and rx_e_max[c - 1] > prev_ack  # … that reach above prev_ack
            if held:  # the tap's own sample plus the handshake's tap→sender→tap part
                if not karn_bad:
                    rtt, src = rs_ns / 1e9 + (tap_rtt[k] if not np.isnan(tap_rtt[k]) else rr), tf.RTT_HANDSHAKE
            elif d >= 0 and new_end[d] > prev_ack and new_send[d] >= 0 and not karn_bad and t_m > new_send[d]:
                rtt, src = (t_m - new_send[d]) / 1e9, tf.RTT_TS if by_echo[new_j[d]] else tf.RTT_WINDOW
            e_raw = A_i[tf.AI_TSECR, row]
            if rtt < 0 and not held and e_raw >= 0 and d_raw >= 0:  # TSecr: the transmission it echoes
                e = tf.unwrap(e_raw, d_raw, d_val)
                qi = np.searchsorted(seg_tsv[:jj], e, side="left")
                if qi < jj and seg_tsv[qi] == e and send[qi] >= 0 and t_m > send[qi]:
                    rtt, src = (t_m - send[qi]) / 1e9, tf.RTT_TS
            prev_ack = a
        if rtt > 0:
            samples += 1
            latest = rtt
            srtt = rtt if srtt < 0 else 0.875 * srtt + 0.125 * rtt
            rttmin = rtt if rttmin < 0 or rtt < rttmin else rttmin
        if not np.isnan(tap_rtt[k]):
            rr = tap_rtt[k] if not rr_seen else 0.875 * rr + 0.125 * tap_rtt[k]
            rr_seen = True
        A_f[tf.AF_RTT, row] = rtt if rtt > 0 else np.nan
        A_i[tf.AI_RTT_SRC, row] = src if rtt > 0 else tf.RTT_NONE
        A_f[tf.AF_SRTT, row] = srtt if srtt > 0 else np.nan
        A_f[tf.AF_RTTMIN, row] = rttmin if rttmin > 0 else np.nan
        # (the latest round trip, not srtt: in slow start the queue, so the RTT, grows faster than srtt follows)
        sender_part[k] = max(latest - rr, 0.0) if latest > 0 else rs_ns / 1e9 if rs_ns > 0 else 0.0
    return samples, srtt


@njit(cache=True)
def _flight(A_i: np.ndarray, a_lo: int, a_hi: int, S_i: np.ndarray, s_lo: int, s_hi: int,
            sender_part: np.ndarray) -> None:
    """Flight after each ACK of rows ``a_lo:a_hi``: the data passing the capture point within the sender-side part
    of the RTT after it (receiver side: one srtt; mid-path: srtt less the tap→receiver→tap part), less the ACK and
    its SACKs."""
    m = s_hi - s_lo
    high = np.empty(m, np.int64)
    h = -(1 << 62)
    for j in range(m):
        r = s_lo + j
        h = max(h, S_i[tf.SI_SEQ, r] + S_i[tf.SI_LEN, r])
        high[j] = h
    seg_t = S_i[tf.SI_T, s_lo:s_hi]
    for k in range(a_hi - a_lo):
        row = a_lo + k
        horizon = A_i[tf.AI_T, row] + np.int64(sender_part[k] * 1e9)
        j = np.searchsorted(seg_t, horizon, side="right") - 1
        fl = (high[j] if j >= 0 else A_i[tf.AI_ACK, row]) - A_i[tf.AI_ACK, row] - A_i[tf.AI_SACKED, row]
        A_i[tf.AI_FLIGHT, row] = fl if fl > 0 else 0


@njit(cache=True)
def _rows_of_kind(S_i: np.ndarray, s_lo: int, s_hi: int, kind: int) -> np.ndarray:
    """The segment rows of ``s_lo:s_hi`` of one kind (``tf.SEG_*``), relative to ``s_lo``, in arrival order."""
    out = np.empty(s_hi - s_lo, np.int64)
    c = 0
    for j in range(s_hi - s_lo):
        if S_i[tf.SI_KIND, s_lo + j] == kind:
            out[c] = j
            c += 1
    return out[:c]


@njit(cache=True)
def _sender_time(ack_t: np.ndarray, sender_part: np.ndarray, arrived: int, rs_ns: int) -> int:
    """When the sender sent what passed the capture point at ``arrived``: the sender-side part of the RTT
    (at the latest ACK before) earlier."""
    k = np.searchsorted(ack_t, arrived, side="right") - 1
    return int(arrived - (np.int64(sender_part[k] * 1e9) if k >= 0 else max(rs_ns, 0)))


@njit(cache=True)
def _place_episodes(A_i: np.ndarray, a_lo: int, a_hi: int, S_i: np.ndarray, s_lo: int, s_hi: int, E_i: np.ndarray,
                    e_lo: int, e_hi: int, sender_part: np.ndarray, rs_ns: int, srtt: float, info: np.ndarray) -> None:
    """Move episode rows ``e_lo:e_hi`` to the sender's time (start, decision row, a timeout's silence) and undo
    what the receiver's view splits or joins wrongly; ``info[3]`` receives the holes that outlived the sender's
    RTO (retransmissions lost again, inferred).

    Ingest opened an episode at each retransmission that arrived outside one, with the highest sequence
    *received* as its recovery point — below the sender's when the window's last segments were dropped. So a
    retransmission of the sender's recovery that arrives after the receiver's ACK passed that point opens a
    provisional episode, whose recovery point (the highest received by then) swallows the retransmissions of
    the sender's next recovery. Each kept episode's recovery ends, at the sender, with the ACK that
    covers the sender's recovery point — the start of the first new data that arrived after the episode's
    first retransmission: data sent after a retransmission starts at or beyond the sender's highest sequence
    then (no earlier than the receiver's own end). An episode that, placed at the sender's time, starts before
    that end gives the kept episode its retransmissions sent before it — the kept episode keeps its own
    recovery point and lasts until the ACK that covers the last of them — and the later ones open their own
    episode (the row, restarted at the first of them); with none, the row is dropped (marked with flow -1 for
    the caller). A timeout is never merged (the sender reacted again)."""
    ack_t = A_i[tf.AI_T, a_lo:a_hi]
    n = a_hi - a_lo
    # the retransmissions and the new data in arrival order
    rx_j = _rows_of_kind(S_i, s_lo, s_hi, tf.SEG_RETX)
    new_j = _rows_of_kind(S_i, s_lo, s_hi, tf.SEG_NEW)
    n_rx = len(rx_j)
    n_new = len(new_j)
    rx_t = S_i[tf.SI_T, s_lo + rx_j]
    rx_s = S_i[tf.SI_SEQ, s_lo + rx_j]
    rx_e = rx_s + S_i[tf.SI_LEN, s_lo + rx_j]
    new_t = S_i[tf.SI_T, s_lo + new_j]
    new_s = S_i[tf.SI_SEQ, s_lo + new_j]
    arrived = E_i[tf.EI_START, e_lo:e_hi].copy()  # each episode's first retransmission, as it arrived
    info[3] += _relost(A_i, a_lo, a_hi, rx_t, rx_s, E_i, e_lo, arrived, srtt, rs_ns)
    # ---- each episode at the sender's time; splits and merges
    kept = -1
    horizon = -1  # when the kept episode's recovery ended at the sender (-1: not within the capture)
    for r in range(e_lo, e_hi):
        if E_i[tf.EI_FLOW, r] < 0:  # dropped already: its retransmissions were reordered originals
            continue
        i = r - e_lo
        start = _sender_time(ack_t, sender_part, arrived[i], rs_ns)
        if E_i[tf.EI_KIND, r] != tf.EP_TIMEOUT and kept >= 0 and (horizon < 0 or start < horizon):
            lo = np.searchsorted(rx_t, arrived[i], side="left")
            hi = np.searchsorted(rx_t, arrived[i + 1], side="left") if r + 1 < e_hi else n_rx
            rest = 0
            rest_seq = np.int64(1) << 62
            rest_first = -1
            for q in range(lo, hi):
                if rest == 0 and (horizon < 0 or _sender_time(ack_t, sender_part, rx_t[q], rs_ns) < horizon):
                    E_i[tf.EI_RETX, kept] += 1  # sent while the kept recovery was still going on
                    E_i[tf.EI_SEQ, kept] = min(E_i[tf.EI_SEQ, kept], rx_s[q])
                    if E_i[tf.EI_END, kept] >= 0:  # it lasts until this one is acknowledged
                        c = _acked_at(A_i, a_lo, a_hi, rx_t[q], rx_e[q])
                        if c >= n:
                            E_i[tf.EI_END, kept] = E_i[tf.EI_LAST_FRAME, kept] = -1
                        elif ack_t[c] > E_i[tf.EI_END, kept]:
                            E_i[tf.EI_END, kept] = ack_t[c]
                            E_i[tf.EI_LAST_FRAME, kept] = A_i[tf.AI_FRAME, a_lo + c]
                else:
                    rest += 1
                    rest_seq = min(rest_seq, rx_s[q])
                    if rest_first < 0:
                        rest_first = q
            if rest == 0:
                E_i[tf.EI_SPURIOUS, kept] = max(E_i[tf.EI_SPURIOUS, kept], E_i[tf.EI_SPURIOUS, r])
                E_i[tf.EI_FLOW, r] = -1
                continue
            # the later retransmissions: their own episode, from the first of them
            arrived[i] = rx_t[rest_first]
            start = _sender_time(ack_t, sender_part, arrived[i], rs_ns)
            E_i[tf.EI_RETX, r] = rest
            E_i[tf.EI_SEQ, r] = rest_seq
            E_i[tf.EI_FIRST_FRAME, r] = S_i[tf.SI_FRAME, s_lo + rx_j[rest_first]]
        _start_at(A_i, a_lo, a_hi, E_i, r, start)
        kept = r
        # the sender's recovery point: data sent after a retransmission starts at or beyond the sender's highest
        # sequence then, so the first new data that arrived after this episode's first retransmission
        f = np.searchsorted(new_t, arrived[i], side="right")
        recover = max(new_s[f], E_i[tf.EI_RECOVER, r]) if f < n_new else E_i[tf.EI_RECOVER, r]
        c = _acked_at(A_i, a_lo, a_hi, arrived[i], recover)
        horizon = -1 if c >= n or E_i[tf.EI_END, r] < 0 else max(ack_t[c], E_i[tf.EI_END, r])


@njit(cache=True)
def _relost(A_i: np.ndarray, a_lo: int, a_hi: int, rx_t: np.ndarray, rx_s: np.ndarray, E_i: np.ndarray, e_lo: int,
            arrived: np.ndarray, srtt: float, rs_ns: int) -> int:
    """Holes that outlived the sender's RTO: retransmissions (arrived at ``rx_t``, starting at ``rx_s``) that fill
    the hole at the cumulative ACK more than an RTT plus an RTO (Linux's floor 200 ms, or 1.5 srtt as ingest's
    rule) after the ACK first stopped there: the sender's earlier retransmission of it was lost again (or it
    waited for a timeout). Retransmissions inside a timeout episode (``arrived``: the episodes' first
    retransmissions) are that timeout, which ingest saw."""
    ack_t = A_i[tf.AI_T, a_lo:a_hi]
    rto = max(0.2, 1.5 * srtt) if srtt > 0 else 0.2
    rtt_ns = np.int64(srtt * 1e9) if srtt > 0 else max(rs_ns, 0)
    holes = 0
    for i in range(len(rx_t)):
        q = np.searchsorted(ack_t, rx_t[i], side="right") - 1
        if q < 0 or A_i[tf.AI_ACK, a_lo + q] != rx_s[i]:
            continue
        first = q
        while first > 0 and A_i[tf.AI_ACK, a_lo + first - 1] == rx_s[i]:
            first -= 1
        ep = np.searchsorted(arrived, rx_t[i], side="right") - 1  # the episode it arrived in
        in_timeout = ep >= 0 and E_i[tf.EI_KIND, e_lo + ep] == tf.EP_TIMEOUT
        if not in_timeout and rx_t[i] - A_i[tf.AI_T, a_lo + first] > rtt_ns + np.int64(rto * 1e9):
            holes += 1
    return holes


@njit(cache=True)
def _start_at(A_i: np.ndarray, a_lo: int, a_hi: int, E_i: np.ndarray, r: int, start: int) -> None:
    """Episode row ``r`` starts at ``start`` (the sender's time): its decision row is the last ACK at or before
    it, its end no earlier, a timeout's silence measured to it from the last ACK that advanced."""
    row = np.searchsorted(A_i[tf.AI_T, a_lo:a_hi], start, side="right") - 1
    E_i[tf.EI_START, r] = start
    E_i[tf.EI_ACKROW, r] = row
    if E_i[tf.EI_END, r] >= 0 and E_i[tf.EI_END, r] < start:
        E_i[tf.EI_END, r] = start
    if E_i[tf.EI_KIND, r] == tf.EP_TIMEOUT:
        last_adv = -1
        for q in range(row, -1, -1):
            if A_i[tf.AI_ACKED, a_lo + q] > 0:
                last_adv = A_i[tf.AI_T, a_lo + q]
                break
        if last_adv >= 0:
            E_i[tf.EI_SILENCE_NS, r] = max(start - last_adv, 0)


@njit(cache=True)
def _acked_at(A_i: np.ndarray, a_lo: int, a_hi: int, t: int, seq: int) -> int:
    """The first ACK row (relative to ``a_lo``) leaving at or after ``t`` that acknowledges ``seq``
    (``a_hi − a_lo`` when none)."""
    n = a_hi - a_lo
    c = np.searchsorted(A_i[tf.AI_T, a_lo:a_hi], t, side="left")
    while c < n and A_i[tf.AI_ACK, a_lo + c] < seq:
        c += 1
    return int(c)


@njit(cache=True)
def _window_releases(A_i: np.ndarray, a_lo: int, a_hi: int, S_i: np.ndarray, s_lo: int, s_hi: int, wshift: int,
                     idle_ns: int, send: np.ndarray, info: np.ndarray) -> None:
    """Send times without timestamps (§7): the data an ACK released. When ACK k moves the receive window's
    right edge beyond the previous edge R, the data beyond R could only be sent once ACK k reached the
    sender; the segment that starts exactly at R, arriving after ACK k left, was sent when ACK k arrived
    (a sender stopped by the window resumes at its edge). Segments of a sender not held by the window
    rarely start exactly at an old edge; when one does, its sample is an upper bound — and none is taken when
    the data stopped for longer than ``idle_ns`` (an RTO) between the release and the segment: an
    application-limited sender had nothing to send when the window opened, and the time until it sent measures
    the application, not the path."""
    m = s_hi - s_lo
    # new segments in arrival order have increasing starts: index them by start
    starts = np.empty(m, np.int64)
    idx = np.empty(m, np.int64)
    c = 0
    for j in range(m):
        if S_i[tf.SI_KIND, s_lo + j] == tf.SEG_NEW:
            starts[c] = S_i[tf.SI_SEQ, s_lo + j]
            idx[c] = j
            c += 1
    starts = starts[:c]
    resumed = np.full(m, -(1 << 62), np.int64)  # when the data last resumed after an idle gap, by segment
    for j in range(1, m):
        t_j = S_i[tf.SI_T, s_lo + j]
        resumed[j] = t_j if t_j - S_i[tf.SI_T, s_lo + j - 1] > idle_ns else resumed[j - 1]
    edge = -(1 << 62)
    for k in range(a_hi - a_lo):
        row = a_lo + k
        right = A_i[tf.AI_ACK, row] + (A_i[tf.AI_WIN, row] << wshift)
        if right > edge and edge > -(1 << 62):
            q = np.searchsorted(starts, edge, side="left")
            if q < c and starts[q] == edge:
                j = idx[q]
                t_k = A_i[tf.AI_T, row]
                if send[j] < 0 and S_i[tf.SI_T, s_lo + j] > t_k and resumed[j] <= t_k:
                    send[j] = A_i[tf.AI_T, row]
                    info[1] += 1
        if right > edge:
            edge = right


def relost_text(holes: int) -> str:
    """What the capture point can and cannot tell of retransmissions lost again (they never pass it)."""
    seen = (f"{holes} hole(s) outlived the sender's RTO: a retransmission lost again each (inferred; the sender's "
            "timeout there is not a loss event here)" if holes else "no hole outlived the sender's RTO")
    return (seen + "; a retransmission lost again and resent within the RTO, and how often a hole was lost, "
            "cannot be seen from here")


def receiver_handshake_rtt_ns(fi: np.ndarray) -> int:
    """The handshake round trip seen from the receiver: its SYN to the SYN-ACK (it is the client), or its
    SYN-ACK to the handshake's ACK (it is the server); -1 when the handshake was not captured or a SYN was
    sent more than once."""
    syn, synack, hsack = int(fi[tf.FI_SYN]), int(fi[tf.FI_SYNACK]), int(fi[tf.FI_HSACK])
    if fi[tf.FI_SYN_COUNT] > 1:  # a SYN sent again: which one was answered is ambiguous (Karn)
        return -1
    if fi[tf.FI_SENDER_CLIENT]:  # the receiver is the server
        ok = synack != tf.NOT_SEEN and hsack != tf.NOT_SEEN and hsack > synack
        return hsack - synack if ok else -1
    ok = syn != tf.NOT_SEEN and synack != tf.NOT_SEEN and synack > syn
    return synack - syn if ok else -1


def mid_path_parts_ns(fi: np.ndarray) -> tuple[int, int]:
    """A tap's handshake split (§7): (tap→sender→tap, tap→receiver→tap) in ns, or (-1, -1). SYN→SYN-ACK
    is the tap→server→tap part, SYN-ACK→ACK the tap→client→tap part."""
    syn, synack, hsack = int(fi[tf.FI_SYN]), int(fi[tf.FI_SYNACK]), int(fi[tf.FI_HSACK])
    if fi[tf.FI_SYN_COUNT] > 1 or tf.NOT_SEEN in (syn, synack, hsack) or not syn <= synack <= hsack:
        return -1, -1
    server_part, client_part = synack - syn, hsack - synack
    return (client_part, server_part) if fi[tf.FI_SENDER_CLIENT] else (server_part, client_part)


def reconstruct_receiver_side(A_i: np.ndarray, A_f: np.ndarray, S_i: np.ndarray, E_i: np.ndarray,
                              fi: np.ndarray, ep_lo: int, mid_path: bool = False) -> Reconstruction:
    """Rebuild one receiver-side (or, with ``mid_path``, tapped mid-path) flow's sender view in the group's
    analysis tables (``fi``: its row of ``F_i``; ``ep_lo``: its first episode row).

    Mid-path (§7): the same method — a data segment's send time is still the capture-point time of the
    ACK whose TSval it echoes, so ``t_m − send(D)`` is the whole round trip — with the handshake split at
    the tap: the RTT seeds at the sum of both parts, the TSval match looks back the tap→sender→tap part,
    and flight and loss times use the sender-side part (srtt less the tap's own data→ACK time)."""
    a_lo, s_lo = int(fi[tf.FI_ACK_LO]), int(fi[tf.FI_SEG_LO])
    a_hi, s_hi = a_lo + int(fi[tf.FI_NACKS]), s_lo + int(fi[tf.FI_NSEGS])
    e_hi = ep_lo + int(fi[tf.FI_NEPS])
    if mid_path:
        rs, rr = mid_path_parts_ns(fi)
        hs = rs + rr if rs >= 0 else -1
    else:
        hs = rs = receiver_handshake_rtt_ns(fi)
    info = np.zeros(4, np.int64)
    samples = int(_receiver_side(A_i, A_f, a_lo, a_hi, S_i, s_lo, s_hi, E_i, ep_lo, e_hi, hs, rs,
                                 int(fi[tf.FI_RCV_WSHIFT]), info))
    sound = samples >= MIN_SAMPLES
    where = "mid-path" if mid_path else "receiver-side"
    if mid_path and hs > 0:
        hs_text = (f"handshake split at the tap: {rs / 1e6:.3f} ms to the sender and back, "
                   f"{(hs - rs) / 1e6:.3f} ms to the receiver and back")
    else:
        hs_text = f"handshake RTT {hs / 1e6:.3f} ms seen from the receiver" if hs > 0 else "no handshake"
    by_ts = info[0] >= MIN_SAMPLES
    source = ("data echoing ACK TSvals" if by_ts else "the data each window update released" if not info[2]
              else "the handshake (no timestamps to time the data by: each sample is the handshake's round trip, "
                   "so queueing delay on the path is not seen)")
    if sound:
        episodes = int((E_i[tf.EI_FLOW, ep_lo:e_hi] >= 0).sum())
        evidence = (f"{where} capture rebuilt as the sender saw it: {samples} RTT samples from {source}, "
                    f"{hs_text}; flight from data arriving within one srtt; "
                    f"{episodes} loss episodes moved to when the sender retransmitted; {relost_text(int(info[3]))}")
    elif int(fi[tf.FI_RCV_WSHIFT]) < 0 and not by_ts:
        evidence = (f"{where} capture without usable timestamps and without the handshake (window "
                    "scale unknown): no RTT samples can be rebuilt")
    else:
        evidence = (f"{where} capture: only {samples} RTT samples rebuilt (fewer than {MIN_SAMPLES}) from "
                    f"{'TSval echoes' if fi[tf.FI_TS] else 'window releases (no timestamps)'}")
    confidence = "medium" if sound and by_ts else "low"
    return Reconstruction("mid_path" if mid_path else "receiver_side", sound, samples, evidence, confidence)
