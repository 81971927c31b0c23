"""Compiled per-flow analysis: one direction of a connection → ACK stream, data segments, episodes.

Implements ``docs/estimators.md`` §1.1 (per-ACK inputs) and §1.2 (loss events) over the packets of one
connection in capture-time order. All sequence arithmetic is on 64-bit values unwrapped from the
32-bit fields (so sequence wrap is invisible), relative to the data sender's first data byte
(ISN + 1 when the SYN was captured, else the first sequence or acknowledgement number seen).

Decisions this module makes where the reference leaves room (documented here and in docs/ingest.md):

* RST segments are not ACK rows (a reset is not an acknowledgement a sender's congestion control
  processes); SYN-ACKs are not rows. When the data sender is the server, the handshake's final ACK is
  the first row and carries the SYN-ACK→ACK RTT sample (Linux ``tcp_synack_rtt_meas``).
* The TSecr RTT fallback is taken only on ACKs that advance the cumulative ACK (RFC 7323 §4: a
  duplicate ACK echoes an older TSval and would inflate the sample).
* The FIN's sequence byte is not data: ``acked`` stops at the FIN. An RST is never data either: its payload (a
  diagnostic text, RFC 9293 §3.5.3) is not a segment, and its sequence number — which may come from another
  connection's sequence space, e.g. the answer to a challenge ACK — neither moves the highest sequence sent nor the
  reference that 32-bit sequence numbers are unwrapped against.
* What the highest sequence sent rests on is kept for the flow's invariants (``ingest.invariants``): the payload
  of the data segments seen, and each hole — a rise of the highest sequence that no segment seen covers (a data
  segment starting above it, an ACK above it): bytes the capture missed. A hole is proven up to what the receiver's
  window let the sender have sent meanwhile (its largest window so far, once per RTTmin since the highest sequence
  last rose; one window before the first RTT sample); a larger one is a sequence jump, whose bytes no
  retransmission may be counted in.
* A segment of at most one byte that lies below the cumulative ACK (keepalive) or is sent while the
  receiver advertises a zero window (zero-window probe) is not a retransmission.
* A segment that overlaps the highest sequence sent is a retransmission of its old part; its new
  part is new data.
* SACK scoreboard: every disjoint SACKed block above the cumulative ACK is kept (the arrays grow).
* Karn (§1.1): no seq/ack RTT sample spans bytes that were, or may have been, sent more than
  once — bytes seen retransmitted, bytes whose transmission the capture does not show (it began
  mid-connection, or missed them: they may have been sent again unseen), and a hole the receiver had
  reported (duplicate ACKs or SACK blocks above the cumulative ACK: those bytes were sent again, seen or not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from ackreplay.ingest.decode import ACK, FIN, RST, SYN
from ackreplay.ingest.demux import CS_PAYLOAD0, CS_SEGMENTS
from ackreplay.ingest.fastpath import O_MSS, O_NSACK, O_SACK0, O_SACKOK, O_WSCALE, P_HAS_TS, P_OPT_TRUNC, kernel
from ackreplay.ingest.memory import lazy
from ackreplay.ingest.prefetch import AHEAD, prefetch
from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import search_sorted

# ACK-row integer columns
(AI_FLOW, AI_T, AI_ACKED, AI_DUP, AI_D, AI_FLIGHT, AI_TSVAL, AI_ACK, AI_WIN, AI_SACKED, AI_TSECR, AI_SACK_LO,
 AI_SACK_HI, AI_RWND, AI_FRAME, AI_RTT_SRC) = range(16)
# AI_TSECR: the ACK's raw TSecr (-1 = none), for the receiver-side rebuild; AI_SACK_LO/HI: the ACK's first SACK
# block above the cumulative ACK (RFC 2018: the most recently received data; -1 = none), for the time-sequence
# graph; AI_RWND: the receive window in bytes (the field scaled by the handshake's shift; -1 when unknown);
# AI_FRAME: the ACK's frame number in its file (``fastpath.PACKET_COLUMNS``' ``frame``)
AI_NCOL = 16
#: Where an ACK row's RTT sample came from (``AI_RTT_SRC``; the ``acks`` table's ``rtt_source``): none, the handshake
#: (its ACK, or a rebuilt flow held at the handshake's round trip), a Karn-clean seq/ack match, the TSval/TSecr echo
#: (a rebuilt flow's send times from the ACK TSvals the data echo, too), a rebuilt flow's window release (§7)
RTT_NONE, RTT_HANDSHAKE, RTT_SEQ, RTT_TS, RTT_WINDOW = range(5)
# ACK-row float columns
AF_RTT, AF_SRTT, AF_RTTMIN, AF_T, AF_TREL = range(5)
AF_NCOL = 5
# data-segment columns
SI_FLOW, SI_T, SI_SEQ, SI_LEN, SI_KIND, SI_TSECR, SI_TSVAL, SI_FRAME = range(8)  # raw TSecr/TSval, -1 = none
SI_NCOL = 8
# data-segment float columns
SF_T, SF_TREL = range(2)
SF_NCOL = 2
SEG_NEW, SEG_RETX, SEG_KEEPALIVE, SEG_ZWP = 0, 1, 2, 3
#: An original that arrived after later segments (``ingest.reordering``; only away from the sender)
SEG_REORDERED = 4
# episode columns
(EI_FLOW, EI_START, EI_END, EI_KIND, EI_DUPACKS, EI_RECOVER, EI_SEQ, EI_SPURIOUS, EI_ACKROW, EI_RETX,
 EI_SILENCE_NS, EI_FIRST_FRAME, EI_LAST_FRAME) = range(13)
EI_NCOL = 13  # EI_FIRST_FRAME: the frame of the retransmission that opened it; EI_LAST_FRAME: of the packet that
# ended it (the ACK reaching its recovery point, or the retransmission that timed out in it; -1: open at the end)
EP_FAST_RETRANSMIT, EP_TIMEOUT = 0, 1
# per-flow integer results
(FI_CONN, FI_DIR, FI_NACKS, FI_NDUP, FI_NRETX, FI_NEPS, FI_NFR, FI_NTO, FI_NKEEP, FI_NZWP, FI_NSEGS,
 FI_FIRST_DATA, FI_LAST_ACK, FI_BYTES_ACKED, FI_BYTES_SENT, FI_SYN, FI_SYNACK, FI_HSACK, FI_SYN_COUNT,
 FI_SENDER_CLIENT, FI_MSS, FI_MSS_SRC, FI_SACK, FI_TS, FI_WS, FI_FIRST_PKT, FI_LAST_PKT, FI_NPKTS,
 FI_ACK_LO, FI_SEG_LO, FI_NDSACK, FI_OPT_TRUNC, FI_SYN_MSS_S, FI_SYN_MSS_R, FI_RCV_WSHIFT, FI_SEEN, FI_PROVEN,
 FI_JUMP, FI_JUMP_RETX, FI_EARLY, FI_WMAX, FI_NSPUR) = range(42)
FI_NCOL = 42  # FI_RCV_WSHIFT: the receiver's window scale shift (0 without scaling, -1 unknown: no SYNs)
# FI_SEEN: payload bytes of the data segments seen (each sequence byte once); FI_PROVEN: bytes of the holes proven
# (module docstring); FI_JUMP: the largest sequence jump (a hole beyond proof; 0 none); FI_JUMP_RETX: retransmissions
# starting in a sequence jump; FI_EARLY: bytes acknowledged below the first data segment seen (no SYN: sent before
# the capture began); FI_WMAX: the receiver's largest window, in bytes (0: no ACK)
FF_SRTT, FF_RTTMIN, FF_RTT_HS = range(3)
FF_NCOL = 3
MSS_SYN, MSS_SYN_TS, MSS_PAYLOAD, MSS_PAYLOAD_TSO, MSS_DEFAULT = 1, 2, 3, 4, 5

SB_CAP = 64  # initial scoreboard capacity (it grows)
#: The shift a receiver's window field is scaled by when the handshake was not captured: the largest RFC 7323
#: allows, so that no real window is under-estimated.
MAX_WSHIFT = 14
#: A time (or value) the capture did not show: far below any real one.
NOT_SEEN = -(1 << 62)
_BIG = 1 << 62


@njit(cache=True, inline="always")
def unwrap(raw: int, ref_raw: int, ref_val: int) -> int:
    """The 64-bit value of the 32-bit field ``raw`` nearest to ``ref_val`` (whose field was ``ref_raw``)."""
    return ref_val + (((raw - ref_raw + 0x80000000) & 0xFFFFFFFF) - 0x80000000)


#: Payload-size histogram of the MSS inference: bins 0..65535, and one for every larger size (never the MSS).
SIZE_BINS = 65537


@njit(cache=True)
def mss_from_counts(uniq: np.ndarray, cnt: np.ndarray, k: int, n: int) -> tuple[int, int]:
    """(MSS, ``MSS_*`` source) from the payload sizes when no SYN was seen: the ``k`` distinct sizes (ascending;
    any one size above 65535 may stand for all of them) and their counts, of ``n`` payloads. The most common
    large size, or — when the common sizes are whole multiples of a smaller frequent size (TSO/GSO
    super-segments) — that smaller size.

    "Frequent" means at least 5 % of the data segments (and at least 2); "large" means ≥ 512 bytes.
    A most-common size with no frequent divisor is the MSS whatever its size up to 65535: loopback
    (65483) and jumbo-frame links carry segments far above 9000 bytes (docs/estimators.md §1.1).
    A payload above 65535 (the MSS option is 16 bits; IPv4 cannot carry it) is a super-segment (GSO,
    BIG TCP) and never the MSS: a flow of only such payloads falls back to 1460 (Ethernet).
    """
    thresh = max(2, n // 20)
    best = -1
    for i in range(k):
        if 512 <= uniq[i] <= 65535 and (best < 0 or cnt[i] > cnt[best]):
            best = i
    if best < 0:  # no large sizes: the most common size
        for i in range(k):
            if uniq[i] <= 65535 and (best < 0 or cnt[i] > cnt[best]):
                best = i
        if best < 0:
            return 1460, MSS_DEFAULT  # only super-segments
        return uniq[best], MSS_PAYLOAD
    mode = uniq[best]
    for i in range(k):  # ascending: the smallest frequent divisor wins
        s = uniq[i]
        if s >= 512 and s < mode and cnt[i] >= thresh and mode % s == 0:
            return s, MSS_PAYLOAD_TSO
    return mode, MSS_PAYLOAD


@njit(cache=True, nogil=True, inline="always")
def _sb_add(sb_l: np.ndarray, sb_r: np.ndarray, n: int, left: int, r: int) -> int:
    """Insert [left, r) into the sorted disjoint block list, merging; return the new count. The arrays
    must have room for one more block (:func:`_main_pass` stops for :func:`grow` to make it)."""
    if r <= left:
        return n
    i = n
    while i > 0 and sb_l[i - 1] > left:
        sb_l[i] = sb_l[i - 1]
        sb_r[i] = sb_r[i - 1]
        i -= 1
    sb_l[i] = left
    sb_r[i] = r
    n += 1
    w = 0
    for j in range(1, n):
        if sb_l[j] <= sb_r[w]:
            if sb_r[j] > sb_r[w]:
                sb_r[w] = sb_r[j]
        else:
            w += 1
            sb_l[w] = sb_l[j]
            sb_r[w] = sb_r[j]
    return w + 1


@njit(cache=True, nogil=True, inline="always")
def _sb_prune(sb_l: np.ndarray, sb_r: np.ndarray, n: int, a: int) -> int:
    """Drop the ``n`` blocks' bytes below the cumulative ACK ``a``; return the count left."""
    w = 0
    for j in range(n):
        if sb_r[j] > a:
            sb_l[w] = max(sb_l[j], a)
            sb_r[w] = sb_r[j]
            w += 1
    return w


# Resumable per-flow state (one direction of a connection): the analysis runs over the connection's
# packets in one call, or — for a connection beyond the memory budget — over consecutive chunks of them
# (``ingest.chunked``), each call taking up where the last left off. Every variable the analysis carries
# from one packet to the next lives in these arrays. Pre-pass state (handshake options, reference sequence
# number, payload sizes), int64:
(PS_SYN_MSS_S, PS_SYN_MSS_R, PS_SYN_TS_S, PS_SYN_TS_R, PS_SYN_WS_S, PS_SYN_WS_R, PS_WS_SHIFT_R, PS_SYN_SACK_S,
    PS_SYN_SACK_R, PS_SYN_SEEN, PS_ISN, PS_REF_FOUND, PS_REF_RAW, PS_NL, PS_SACK_SEEN, PS_TS_SEEN, PS_OPT_TRUNC,
    PS_FIRST_PKT, PS_LAST_PKT, PS_NPKTS, PS_N_USED) = range(21)
PS_NCOL = 21
# main-pass state, int64 (flags as 0/1):
(M_MSS, M_MSS_SRC, M_T_FIRST, M_RWND_SHIFT, M_S_REF_RAW, M_S_REF_VAL, M_UNA_KNOWN, M_SND_UNA, M_MAX_KNOWN, M_SND_MAX,
    M_FIN_REL, M_NSEG, M_UNA_PTR, M_NTSV, M_TSV_REF_RAW, M_TSV_REF_VAL, M_TSV_FOUND, M_NSB, M_ACCOUNTED, M_LAST_WIN,
    M_RCV_WIN_ZERO, M_DUP_SINCE_ADV, M_LAST_ACK_T, M_LAST_ADV_T, M_N_ROWS, M_N_DUP, M_N_RETX, M_N_KEEP, M_N_ZWP, M_N_FR,
    M_N_TO, M_N_DSACK, M_SYN_T, M_SYNACK_T, M_HSACK_T, M_SYN_COUNT, M_SYNACK_COUNT, M_SENDER_CLIENT, M_FIRST_DATA_T,
    M_LAST_ACK_ROW_T, M_EP_OPEN, M_EP_ROW, M_LAST_EP_ROW, M_ACK_LO, M_SEG_LO, M_EP_LO, M_N_SEGS, M_FIRST_ACK,
    M_FIRST_SEQ, M_MAX_T, M_WMAX, M_SEEN, M_PROVEN, M_JUMP, M_JUMP_LO, M_JUMP_HI, M_JUMP_RETX, M_UNPROVEN, M_HOLE_LO,
    M_NHOLE, M_N_SPUR, M_ACK_RISE_LO, M_ACK_RISE_T) = range(63)
M_NCOL = 63
#: An ACK may be recorded just before the data it acknowledges (a receiving host's GRO hands the stack the
#: coalesced segment, whose ACK the capture records 2 µs before the segment): data that fill bytes only an ACK
#: raised the highest sequence over, within this long (ns) of that ACK, are the originals recorded late
#: (``M_ACK_RISE_LO``/``M_ACK_RISE_T``: where and when an ACK last raised it; -1 none)
LATE_RECORD_NS = 200_000
# (M_MAX_T: when the highest sequence last rose; M_WMAX: the receiver's largest window in bytes; M_SEEN, M_PROVEN,
# M_JUMP, M_JUMP_RETX: FI_SEEN, …; M_JUMP_LO/HI: the latest sequence jump's range; M_UNPROVEN: bytes of the
# unproven holes, ``WorkArrays.hole_l/hole_r[M_HOLE_LO:M_NHOLE]``)
# main-pass state, float64:
(MF_SRTT, MF_RTTMIN, MF_RTT_HS) = range(3)
MF_NCOL = 3
#: ``rows`` of the main pass: the next ACK row, segment row and episode row to write (advanced in place).
NEXT_ACK, NEXT_SEG, NEXT_EP = range(3)


class FlowState(NamedTuple):
    """One direction's resumable state: pre-pass (``PS_*``), main pass (``M_*``) and main-pass floats (``MF_*``)."""

    P: np.ndarray
    M: np.ndarray
    MF: np.ndarray


class FlowColumns(NamedTuple):
    """The packet columns the analysis reads (``fastpath.PACKET_COLUMNS`` but ``conn``), by packet index, and the
    options side table that ``opt_idx`` points into."""

    ts: np.ndarray
    dir: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    flags: np.ndarray
    win: np.ndarray
    plen: np.ndarray
    tsval: np.ndarray
    tsecr: np.ndarray
    opt_idx: np.ndarray
    frame: np.ndarray
    opt_tab: np.ndarray


def flow_columns(pk: Mapping[str, np.ndarray], opt_tab: np.ndarray) -> FlowColumns:
    """The columns of ``pk`` (named as ``fastpath.PACKET_COLUMNS``) the analysis reads, with their options table."""
    return FlowColumns._make([*(pk[name] for name in FlowColumns._fields[:-1]), opt_tab])


class WorkArrays(NamedTuple):
    """The per-flow working arrays: per data segment sent (start, end, first and last transmission time, whether
    it was retransmitted, the episode that retransmitted it), per TSval sent (value, time); the unproven holes
    (``hole_l``/``hole_r``: sequence ranges a data segment skipped that no segment has filled and no ACK covered yet,
    ascending; each data segment opens or splits at most one, so one entry a data segment suffices); and
    ``scratch``, the pre-pass's payload-size histogram and the list of its bins in use (:data:`SCRATCH_SIZE`, zero
    between flows)."""

    seg_s: np.ndarray
    seg_e: np.ndarray
    seg_t0: np.ndarray
    seg_t1: np.ndarray
    seg_rx: np.ndarray
    seg_ep: np.ndarray
    tsv_v: np.ndarray
    tsv_t: np.ndarray
    hole_l: np.ndarray
    hole_r: np.ndarray
    scratch: np.ndarray


class FlowTables(NamedTuple):
    """The analysis's output rows, column-major (``A_i[AI_T, row]``: every column one contiguous array): ACK rows
    (``AI_*``, ``AF_*``), data-segment rows (``SI_*``, ``SF_*``) and loss episodes (``EI_*``)."""

    A_i: np.ndarray
    A_f: np.ndarray
    S_i: np.ndarray
    S_f: np.ndarray
    E_i: np.ndarray


class Scoreboard(NamedTuple):
    """The SACK scoreboard: the left and right edges of its disjoint blocks, ascending (:func:`grow` makes room)."""

    left: np.ndarray
    right: np.ndarray


@njit(cache=True)
def scoreboard() -> Scoreboard:
    """An empty scoreboard, at the initial capacity."""
    return Scoreboard(np.empty(SB_CAP + 1, np.int64), np.empty(SB_CAP + 1, np.int64))


@njit(cache=True)
def grow(sb: Scoreboard) -> Scoreboard:
    """``sb`` at twice its capacity: the scoreboard keeps every SACKed block, however many are outstanding (a cap
    of 64 blocks over-estimates flight by up to 40 % when more are)."""
    n = len(sb.left)
    left = np.empty(2 * n, np.int64)
    right = np.empty(2 * n, np.int64)
    left[:n] = sb.left
    right[:n] = sb.right
    return Scoreboard(left, right)


@njit(cache=True)
def flow_state() -> FlowState:
    """Fresh (pre-pass, main, float) state arrays of one direction."""
    P = np.zeros(PS_NCOL, np.int64)
    P[PS_SYN_MSS_S] = -1
    P[PS_SYN_MSS_R] = -1
    P[PS_WS_SHIFT_R] = -1
    P[PS_FIRST_PKT] = NOT_SEEN
    P[PS_LAST_PKT] = NOT_SEEN
    return FlowState(P, np.zeros(M_NCOL, np.int64), np.full(MF_NCOL, -1.0))


@njit(cache=True, nogil=True, inline="always")
def _prepass_syn(f: int, k: int, own: bool, seq: int, opt_tab: np.ndarray, P: np.ndarray) -> None:
    """A SYN's options (``k``: its row of ``opt_tab``, -1 none): the data sender's (``own``; its first SYN's
    sequence number is the ISN) or the receiver's."""
    mss_o = opt_tab[k, O_MSS] if k >= 0 else -1
    ws_o = opt_tab[k, O_WSCALE] if k >= 0 else -1
    sack_ok = k >= 0 and opt_tab[k, O_SACKOK] != 0
    has_ts = (f & P_HAS_TS) != 0
    if own:
        if P[PS_SYN_SEEN] == 0:
            P[PS_SYN_SEEN] = 1
            P[PS_ISN] = seq
        P[PS_SYN_MSS_S] = mss_o
        P[PS_SYN_TS_S] = 1 if has_ts else 0
        P[PS_SYN_WS_S] = 1 if ws_o >= 0 else 0
        P[PS_SYN_SACK_S] = 1 if sack_ok else 0
    else:
        P[PS_SYN_MSS_R] = mss_o
        P[PS_SYN_TS_R] = 1 if has_ts else 0
        P[PS_SYN_WS_R] = 1 if ws_o >= 0 else 0
        P[PS_WS_SHIFT_R] = ws_o
        P[PS_SYN_SACK_R] = 1 if sack_ok else 0


@njit(cache=True, nogil=True, inline="always")
def _prepass_payload(size: int, seq: int, scratch: np.ndarray, P: np.ndarray) -> None:
    """A payload of ``size`` bytes into the size histogram (the bins in use are listed after it, to clear them);
    the first one's sequence number is the reference."""
    b = size
    if b >= SIZE_BINS:
        b = SIZE_BINS - 1
    if scratch[b] == 0:
        scratch[SIZE_BINS + P[PS_N_USED]] = b
        P[PS_N_USED] += 1
    scratch[b] += 1
    P[PS_NL] += 1
    if P[PS_REF_FOUND] == 0:
        P[PS_REF_FOUND] = 1
        P[PS_REF_RAW] = seq


@kernel
def flow_prepass(lo: int, hi: int, d: int, order: np.ndarray, cols: FlowColumns, work: WorkArrays,
                 st: FlowState) -> None:
    """Pre-pass over packets ``order[lo:hi]`` of direction ``d``: handshake options, the first reference value,
    payload sizes for MSS inference (a histogram in ``work.scratch``, zero where unused); state carried in
    ``st.P``."""
    P = st.P
    if hi > lo:
        if P[PS_NPKTS] == 0:
            P[PS_FIRST_PKT] = cols.ts[order[lo]]
        P[PS_LAST_PKT] = cols.ts[order[hi - 1]]
        P[PS_NPKTS] += hi - lo
    for i in range(lo, hi):
        if i + AHEAD < hi:
            q = order[i + AHEAD]
            prefetch(cols.flags, q)
            prefetch(cols.opt_idx, q)
            prefetch(cols.dir, q)
            prefetch(cols.seq, q)
            prefetch(cols.plen, q)
            prefetch(cols.ack, q)
        p = order[i]
        f = cols.flags[p]
        if (f & P_OPT_TRUNC) != 0:
            P[PS_OPT_TRUNC] += 1
        k = cols.opt_idx[p]
        if (f & SYN) != 0:
            _prepass_syn(f, k, cols.dir[p] == d, np.int64(cols.seq[p]), cols.opt_tab, P)
            if cols.dir[p] == d and cols.plen[p] > 0 and (f & RST) == 0:  # TCP Fast Open: data on the SYN
                _prepass_payload(np.int64(cols.plen[p]), (np.int64(cols.seq[p]) + 1) & 0xFFFFFFFF, work.scratch, P)
        elif cols.dir[p] == d:
            if (f & P_HAS_TS) != 0:
                P[PS_TS_SEEN] = 1
            if cols.plen[p] > 0 and (f & RST) == 0:  # an RST's payload is not data
                _prepass_payload(np.int64(cols.plen[p]), np.int64(cols.seq[p]), work.scratch, P)
        else:
            if k >= 0 and cols.opt_tab[k, O_NSACK] > 0:
                P[PS_SACK_SEEN] = 1
            if P[PS_REF_FOUND] == 0 and (f & (ACK | RST)) == ACK:
                P[PS_REF_FOUND] = 1
                P[PS_REF_RAW] = np.int64(cols.ack[p])


@njit(cache=True)
def flow_start(st: FlowState, work: WorkArrays, rows: np.ndarray) -> bool:
    """After the pre-pass: the MSS and the main pass's initial state (``st.M``; its rows start at ``rows``).
    False when the direction carried no payload (it is not a flow)."""
    P, M, scratch = st.P, st.M, work.scratch
    if P[PS_NL] == 0:  # (no payload: no histogram bin in use)
        return False
    bins = scratch[SIZE_BINS: SIZE_BINS + P[PS_N_USED]]  # the histogram's bins in use
    syn_mss_s, syn_mss_r = P[PS_SYN_MSS_S], P[PS_SYN_MSS_R]
    syn_seen = P[PS_SYN_SEEN] != 0
    ref_raw = P[PS_REF_RAW]
    if syn_seen:
        ref_raw = (P[PS_ISN] + 1) & 0xFFFFFFFF
    if syn_mss_s >= 0 or syn_mss_r >= 0:
        if syn_mss_s >= 0 and syn_mss_r >= 0:
            mss = min(syn_mss_s, syn_mss_r)
        else:
            mss = max(syn_mss_s, syn_mss_r)
        mss_src = MSS_SYN
        if P[PS_SYN_TS_S] != 0 and P[PS_SYN_TS_R] != 0:
            mss -= 12
            mss_src = MSS_SYN_TS
    else:
        sizes = np.sort(bins)
        mss, mss_src = mss_from_counts(sizes, scratch[sizes], len(sizes), P[PS_NL])
    for b in bins:  # the histogram is empty again for the next flow
        scratch[b] = 0
    M[:] = 0
    M[M_MSS] = mss
    M[M_MSS_SRC] = mss_src
    M[M_T_FIRST] = P[PS_FIRST_PKT]
    syn_ws = P[PS_SYN_WS_S] != 0 and P[PS_SYN_WS_R] != 0
    M[M_RWND_SHIFT] = (min(P[PS_WS_SHIFT_R], 14) if syn_ws else 0) if syn_seen else -1
    M[M_S_REF_RAW] = ref_raw  # unwrap reference for the data sequence space
    M[M_UNA_KNOWN] = 1 if syn_seen else 0
    M[M_MAX_KNOWN] = 1 if syn_seen else 0
    M[M_FIN_REL] = _BIG
    M[M_LAST_WIN] = -1
    for j in (M_LAST_ACK_T, M_LAST_ADV_T, M_SYN_T, M_SYNACK_T, M_HSACK_T, M_FIRST_DATA_T, M_LAST_ACK_ROW_T):
        M[j] = NOT_SEEN
    M[M_EP_ROW] = -1
    M[M_LAST_EP_ROW] = -1
    M[M_ACK_RISE_T] = -1
    M[M_MAX_T] = P[PS_FIRST_PKT]
    M[M_ACK_LO] = rows[NEXT_ACK]
    M[M_SEG_LO] = rows[NEXT_SEG]
    M[M_EP_LO] = rows[NEXT_EP]
    return True


@njit(cache=True, nogil=True, inline="always")
def _sacked_between(sb_l: np.ndarray, sb_r: np.ndarray, nsb: int, lo: int, hi: int) -> int:
    """The bytes of ``[lo, hi)`` the scoreboard's ``nsb`` blocks cover."""
    sacked = 0
    for b in range(nsb):
        lo_b = max(sb_l[b], lo)
        hi_b = min(sb_r[b], hi)
        if hi_b > lo_b:
            sacked += hi_b - lo_b
    return sacked


@njit(cache=True, nogil=True, inline="always")
def _segment_kind(s: int, L: int, t: int, M: np.ndarray) -> int:
    """A data segment's kind (``SEG_*``), counted: a byte at most below the cumulative ACK (keepalive; before any
    ACK, a byte at most repeating the last byte sent, tshark's rule) or sent into a zero window (probe), else a
    retransmission when it starts below the highest sequence sent — but for bytes only an ACK recorded just before
    (``LATE_RECORD_NS``) claimed sent — else new data."""
    before_ack = M[M_UNA_KNOWN] == 0 and M[M_N_SEGS] > 0 and s + L == M[M_SND_MAX]
    if L <= 1 and (before_ack or (M[M_UNA_KNOWN] != 0 and s + L <= M[M_SND_UNA])):
        M[M_N_KEEP] += 1
        return SEG_KEEPALIVE
    if L <= 1 and M[M_RCV_WIN_ZERO] != 0:
        M[M_N_ZWP] += 1
        return SEG_ZWP
    late = M[M_ACK_RISE_T] >= 0 and s >= M[M_ACK_RISE_LO] and t - M[M_ACK_RISE_T] <= LATE_RECORD_NS
    if s < M[M_SND_MAX] and not late:
        M[M_N_RETX] += 1
        return SEG_RETX
    return SEG_NEW


@njit(cache=True, nogil=True, inline="always")
def _rto_in_recovery(j: int, e: int, t: int, work: WorkArrays, E_i: np.ndarray, st: FlowState) -> bool:
    """Whether a retransmission at ``t`` of the segments from ``j`` on below ``e`` is an RTO inside the open
    fast-retransmit episode (§1.2): a segment that episode retransmitted, silent for the RTO since the later of
    its previous transmission and the last ACK that advanced (a partial ACK restarts the timer; corrected §1.2)."""
    M = st.M
    ep_row = M[M_EP_ROW]
    if M[M_EP_OPEN] == 0 or E_i[EI_KIND, ep_row] != EP_FAST_RETRANSMIT:
        return False
    srtt = st.MF[MF_SRTT]
    gap = max(0.2, 1.5 * srtt) if srtt > 0 else 0.2
    last_adv_t = M[M_LAST_ADV_T]
    rto = False
    while j < M[M_NSEG] and work.seg_s[j] < e:
        since = max(work.seg_t1[j], last_adv_t)
        if work.seg_ep[j] == ep_row and (t - since) >= gap * 1e9:
            rto = True
        j += 1
    return rto


@njit(cache=True, nogil=True, inline="always")
def _open_episode(s: int, t: int, frame: int, rto: bool, flow: int, sb: Scoreboard, E_i: np.ndarray,
                  rows: np.ndarray, st: FlowState) -> None:
    """Open a loss episode at the retransmission of ``s`` at ``t``: a fast retransmit after three duplicate ACKs,
    or SACKed data reported within the last max(0.2 s, srtt); else (or after an RTO) a timeout."""
    M = st.M
    r = rows[NEXT_EP]
    rows[NEXT_EP] = r + 1
    E_i[EI_FLOW, r] = flow
    E_i[EI_START, r] = t
    E_i[EI_END, r] = -1
    E_i[EI_FIRST_FRAME, r] = frame
    E_i[EI_LAST_FRAME, r] = -1
    sacked_now = _sacked_between(sb.left, sb.right, M[M_NSB], M[M_SND_UNA], M[M_SND_MAX])
    srtt = st.MF[MF_SRTT]
    recent = max(0.2, srtt) if srtt > 0 else 0.2
    last_ack_t = M[M_LAST_ACK_T]
    fr = M[M_DUP_SINCE_ADV] >= 3 or (
        sacked_now > 0 and last_ack_t != NOT_SEEN and (t - last_ack_t) <= recent * 1e9
    )
    if rto:
        fr = False
    E_i[EI_KIND, r] = EP_FAST_RETRANSMIT if fr else EP_TIMEOUT
    if fr:
        M[M_N_FR] += 1
    else:
        M[M_N_TO] += 1
    E_i[EI_DUPACKS, r] = M[M_DUP_SINCE_ADV]
    E_i[EI_RECOVER, r] = M[M_SND_MAX]
    E_i[EI_SEQ, r] = s
    E_i[EI_SPURIOUS, r] = 0
    E_i[EI_ACKROW, r] = M[M_N_ROWS] - 1
    E_i[EI_RETX, r] = 0
    last_adv_t, first_data_t = M[M_LAST_ADV_T], M[M_FIRST_DATA_T]
    base_t = last_adv_t if last_adv_t != NOT_SEEN else (first_data_t if first_data_t != NOT_SEEN else t)
    E_i[EI_SILENCE_NS, r] = t - base_t
    M[M_EP_OPEN] = 1
    M[M_EP_ROW] = r
    M[M_LAST_EP_ROW] = r


@njit(cache=True, nogil=True, inline="always")
def _retransmission(s: int, L: int, t: int, frame: int, flow: int, work: WorkArrays, sb: Scoreboard,
                    E_i: np.ndarray, rows: np.ndarray, st: FlowState) -> None:
    """A retransmission of ``[s, s + L)`` at ``t`` (packet ``frame``): counted in the open episode (an RTO closes
    it) or in a new one; the segments it resends are marked retransmitted, by that episode."""
    M = st.M
    e = min(s + L, M[M_SND_MAX])
    nseg = M[M_NSEG]
    j = search_sorted(work.seg_e[:nseg], s, True)  # (np.searchsorted of a scalar allocates before numba 0.60)
    rto = _rto_in_recovery(j, e, t, work, E_i, st)
    if rto:
        E_i[EI_END, M[M_EP_ROW]] = t
        E_i[EI_LAST_FRAME, M[M_EP_ROW]] = frame
        M[M_EP_OPEN] = 0
    if M[M_EP_OPEN] == 0:
        _open_episode(s, t, frame, rto, flow, sb, E_i, rows, st)
    ep_row = M[M_EP_ROW]
    E_i[EI_RETX, ep_row] += 1
    if s < E_i[EI_SEQ, ep_row]:
        E_i[EI_SEQ, ep_row] = s
    while j < nseg and work.seg_s[j] < e:
        work.seg_rx[j] = 1
        work.seg_t1[j] = t
        work.seg_ep[j] = ep_row
        j += 1


@njit(cache=True, nogil=True, inline="always")
def _rise(top: int, t: int, covered: int, st: FlowState) -> None:
    """The highest sequence sent rises to ``top`` at ``t``, its last ``covered`` bytes carried by a data segment
    seen; the rest of the rise is a hole (bytes the capture missed): proven up to what the receiver's window let
    the sender send since the highest sequence last rose (its largest window so far, once per RTTmin; one window
    before the first RTT sample), a sequence jump beyond (module docstring)."""
    M = st.M
    old = M[M_SND_MAX]
    hole = top - old - covered
    M[M_SEEN] += covered
    if hole > 0:
        wmax = M[M_WMAX]
        if wmax <= 0:  # no ACK yet: the largest window the receiver could advertise
            wmax = np.int64(65535) << (M[M_RWND_SHIFT] if M[M_RWND_SHIFT] >= 0 else MAX_WSHIFT)
        rtt = st.MF[MF_RTTMIN]
        allowed = wmax * (1.0 + (t - M[M_MAX_T]) / 1e9 / rtt if rtt > 0 else 1.0)
        if hole <= allowed:
            M[M_PROVEN] += hole
        else:
            M[M_PROVEN] += np.int64(allowed)
            M[M_JUMP] = max(M[M_JUMP], hole)
            M[M_JUMP_LO] = old
            M[M_JUMP_HI] = old + hole
    M[M_SND_MAX] = top
    M[M_MAX_T] = t


@njit(cache=True, nogil=True, inline="always")
def _open_hole(lo: int, hi: int, work: WorkArrays, M: np.ndarray) -> None:
    """``[lo, hi)``, skipped by a data segment above it: bytes the capture missed — or a sequence jump — which
    count as sent only once an ACK covers them (``bytes_sent``: what the capture shows sent, never a number alone)
    or a segment fills them."""
    n = M[M_NHOLE]
    work.hole_l[n] = lo
    work.hole_r[n] = hi
    M[M_NHOLE] = n + 1
    M[M_UNPROVEN] += hi - lo


@njit(cache=True, nogil=True, inline="always")
def _prove_holes(a: int, work: WorkArrays, M: np.ndarray) -> None:
    """The cumulative ACK ``a``: the receiver has every byte below it, so the holes' bytes below it were sent."""
    lo, n = M[M_HOLE_LO], M[M_NHOLE]
    while lo < n and work.hole_l[lo] < a:
        r = work.hole_r[lo]
        if r <= a:
            M[M_UNPROVEN] -= r - work.hole_l[lo]
            lo += 1
        else:
            M[M_UNPROVEN] -= a - work.hole_l[lo]
            work.hole_l[lo] = a
            break
    if lo == n:  # every hole proven: the arrays are written from the start again
        lo = n = 0
    M[M_HOLE_LO] = lo
    M[M_NHOLE] = n


@njit(cache=True, nogil=True, inline="always")
def _fill_holes(s: int, e: int, work: WorkArrays, M: np.ndarray) -> None:
    """A retransmission of ``[s, e)`` (below the highest sequence sent): the holes' bytes it carries were seen sent.
    A hole it falls inside is split in two (the entry the segment has room for)."""
    lo, n = M[M_HOLE_LO], M[M_NHOLE]
    hl, hr = work.hole_l, work.hole_r
    j = lo + search_sorted(hr[lo:n], s, True)  # the first hole ending above s
    while j < n and hl[j] < e:
        left, right = hl[j], hr[j]
        if s > left and e < right:  # inside: [left, s) and [e, right) stay
            for k in range(n, j + 1, -1):
                hl[k] = hl[k - 1]
                hr[k] = hr[k - 1]
            hr[j] = s
            hl[j + 1] = e
            hr[j + 1] = right
            n += 1
            M[M_UNPROVEN] -= e - s
            break
        if s > left:  # its end filled
            hr[j] = s
            M[M_UNPROVEN] -= right - s
            j += 1
        elif e < right:  # its start filled
            hl[j] = e
            M[M_UNPROVEN] -= e - left
            break
        else:  # all filled
            M[M_UNPROVEN] -= right - left
            for k in range(j, n - 1):
                hl[k] = hl[k + 1]
                hr[k] = hr[k + 1]
            n -= 1
    M[M_NHOLE] = n


@njit(cache=True, nogil=True, inline="always")
def _new_data(s: int, L: int, t: int, work: WorkArrays, st: FlowState) -> None:
    """The part of ``[s, s + L)`` above the highest sequence sent, sent at ``t``: a segment of ``work``; the bytes it
    skips, a hole — but for the first data segment of a flow captured without its SYN, which is where the flow's
    bytes start."""
    M = st.M
    nseg = M[M_NSEG]
    start = max(s, M[M_SND_MAX])
    if s > M[M_SND_MAX] and (M[M_N_SEGS] > 0 or st.P[PS_SYN_SEEN] != 0):
        _open_hole(M[M_SND_MAX], s, work, M)
    work.seg_s[nseg] = start
    work.seg_e[nseg] = s + L
    work.seg_t0[nseg] = t
    work.seg_t1[nseg] = t
    work.seg_rx[nseg] = 0
    work.seg_ep[nseg] = -1
    M[M_NSEG] = nseg + 1
    _rise(s + L, t, s + L - start, st)


@njit(cache=True, nogil=True, inline="always")
def _sent_tsval(tv_raw: int, t: int, work: WorkArrays, M: np.ndarray) -> None:
    """A TSval sent at ``t``, unwrapped: kept when above the last kept (for the TSecr RTT fallback)."""
    if M[M_TSV_FOUND] == 0:
        M[M_TSV_FOUND] = 1
        M[M_TSV_REF_RAW] = tv_raw
        M[M_TSV_REF_VAL] = 0
    tv = unwrap(tv_raw, M[M_TSV_REF_RAW], M[M_TSV_REF_VAL])
    M[M_TSV_REF_RAW] = tv_raw
    M[M_TSV_REF_VAL] = tv
    ntsv = M[M_NTSV]
    if ntsv == 0 or tv > work.tsv_v[ntsv - 1]:
        work.tsv_v[ntsv] = tv
        work.tsv_t[ntsv] = t
        M[M_NTSV] = ntsv + 1


@njit(cache=True, nogil=True, inline="always")
def _data_segment(p: int, s: int, L: int, flow: int, cols: FlowColumns, work: WorkArrays, sb: Scoreboard,
                  out: FlowTables, rows: np.ndarray, st: FlowState) -> None:
    """Packet ``p``, a data segment of ``L`` bytes at sequence ``s``: new data, a retransmission (its part above
    the highest sequence sent is new data), a keepalive or a window probe; a segment row appended."""
    M = st.M
    t = cols.ts[p]
    f = cols.flags[p]
    if M[M_MAX_KNOWN] == 0:
        M[M_SND_MAX] = s
        M[M_MAX_KNOWN] = 1
        M[M_MAX_T] = t
    if M[M_FIRST_DATA_T] == NOT_SEEN:
        M[M_FIRST_DATA_T] = t
    kind = _segment_kind(s, L, t, M)
    if kind == SEG_RETX:
        if M[M_JUMP_LO] <= s < M[M_JUMP_HI]:  # it resends bytes only a sequence jump claims were sent
            M[M_JUMP_RETX] += 1
        if M[M_NHOLE] > M[M_HOLE_LO]:
            _fill_holes(s, min(s + L, M[M_SND_MAX]), work, M)
        _retransmission(s, L, t, np.int64(cols.frame[p]), flow, work, sb, out.E_i, rows, st)
    if kind <= SEG_RETX and s + L > M[M_SND_MAX]:  # new data (or the part above a retransmission);
        # a probe's byte is sent again as data when the window opens: not new data yet
        _new_data(s, L, t, work, st)
    has_ts = (f & P_HAS_TS) != 0
    if has_ts:
        _sent_tsval(np.int64(cols.tsval[p]), t, work, M)
    ns = rows[NEXT_SEG]
    S_i, S_f = out.S_i, out.S_f
    S_i[SI_FLOW, ns] = flow
    S_i[SI_T, ns] = t
    S_i[SI_SEQ, ns] = s
    S_i[SI_LEN, ns] = L
    S_i[SI_KIND, ns] = kind
    S_i[SI_TSECR, ns] = np.int64(cols.tsecr[p]) if has_ts else -1
    S_i[SI_TSVAL, ns] = np.int64(cols.tsval[p]) if has_ts else -1
    S_i[SI_FRAME, ns] = cols.frame[p]
    S_f[SF_T, ns] = t / 1e9
    S_f[SF_TREL, ns] = (t - M[M_T_FIRST]) / 1e9
    if M[M_N_SEGS] == 0:
        M[M_FIRST_SEQ] = s
    M[M_N_SEGS] += 1
    rows[NEXT_SEG] = ns + 1


@njit(cache=True, nogil=True, inline="always")
def _from_sender(p: int, flow: int, cols: FlowColumns, work: WorkArrays, sb: Scoreboard, out: FlowTables,
                 rows: np.ndarray, st: FlowState) -> None:
    """Packet ``p``, from the data sender: a SYN or SYN-ACK (the handshake's times), else a segment — data
    (:func:`_data_segment`) or not; a FIN's sequence number ends the data. An RST is none of these."""
    M = st.M
    t = cols.ts[p]
    f = cols.flags[p]
    if (f & RST) != 0:  # never data, and its sequence number may be another connection's
        return
    if (f & SYN) != 0:
        if (f & ACK) == 0:
            M[M_SENDER_CLIENT] = 1
            M[M_SYN_COUNT] += 1
            if M[M_SYN_T] == NOT_SEEN:
                M[M_SYN_T] = t
        else:
            M[M_SYNACK_COUNT] += 1
            if M[M_SYNACK_T] == NOT_SEEN:
                M[M_SYNACK_T] = t
        if cols.plen[p] > 0:  # TCP Fast Open (RFC 7413): data on the SYN, from the byte after its ISN
            raw_data = (np.int64(cols.seq[p]) + 1) & 0xFFFFFFFF
            s_data = unwrap(raw_data, M[M_S_REF_RAW], M[M_S_REF_VAL])
            _data_segment(p, s_data, np.int64(cols.plen[p]), flow, cols, work, sb, out, rows, st)
        return
    if M[M_SENDER_CLIENT] != 0 and M[M_HSACK_T] == NOT_SEEN and M[M_SYNACK_T] != NOT_SEEN:
        M[M_HSACK_T] = t  # the client's ACK that completes the handshake
    raw = np.int64(cols.seq[p])
    s = unwrap(raw, M[M_S_REF_RAW], M[M_S_REF_VAL])
    M[M_S_REF_RAW] = raw
    M[M_S_REF_VAL] = s
    L = np.int64(cols.plen[p])
    if L > 0:
        _data_segment(p, s, L, flow, cols, work, sb, out, rows, st)
    if (f & FIN) != 0 and M[M_FIN_REL] == _BIG:
        M[M_FIN_REL] = s + L


@njit(cache=True, nogil=True, inline="always")
def _receiver_syn(f: int, t: int, st: FlowState) -> None:
    """The receiver's SYN or SYN-ACK at ``t``: the handshake's times; the SYN→SYN-ACK time of a client that sent
    one SYN is an RTT sample (docs/estimators.md 1.1) — normally the first, which seeds srtt. A SYN-ACK recorded after
    data was already timed only lowers RTTmin: the base RTT is never above a sample the flow reports."""
    M, MF = st.M, st.MF
    if (f & ACK) != 0 and M[M_SENDER_CLIENT] != 0:
        M[M_SYNACK_COUNT] += 1
        if M[M_SYNACK_T] == NOT_SEEN:
            M[M_SYNACK_T] = t
            if M[M_SYN_COUNT] == 1 and M[M_SYN_T] != NOT_SEEN:
                rtt_hs = (t - M[M_SYN_T]) / 1e9
                MF[MF_RTT_HS] = rtt_hs
                if MF[MF_SRTT] < 0:
                    MF[MF_SRTT] = rtt_hs
                if MF[MF_RTTMIN] < 0 or rtt_hs < MF[MF_RTTMIN]:
                    MF[MF_RTTMIN] = rtt_hs
    elif (f & ACK) == 0:
        M[M_SYN_COUNT] += 1
        if M[M_SYN_T] == NOT_SEEN:
            M[M_SYN_T] = t


@njit(cache=True, nogil=True, inline="always")
def _handshake_ack_rtt(t: int, pure: bool, M: np.ndarray) -> float:
    """An ACK at ``t`` that completes the handshake of a server sending data: its SYN-ACK→ACK time is an RTT sample
    (Linux ``tcp_synack_rtt_meas``) when one SYN-ACK was sent and the ACK is ``pure`` (no data); -1.0 otherwise."""
    rtt = -1.0
    if M[M_SENDER_CLIENT] == 0 and M[M_HSACK_T] == NOT_SEEN and M[M_SYNACK_T] != NOT_SEEN:
        M[M_HSACK_T] = t
        if M[M_SYNACK_COUNT] == 1 and pure:
            rtt = (t - M[M_SYNACK_T]) / 1e9
    return rtt


@njit(cache=True, nogil=True, inline="always")
def _delivered(p: int, a: int, cols: FlowColumns, M: np.ndarray) -> tuple[int, bool, int]:
    """Packet ``p``, an ACK of ``a``: (bytes newly acknowledged, whether it is a duplicate ACK, bytes delivered as
    Linux ``westwood_acked_count`` counts them — an MSS a duplicate ACK, less those on a cumulative ACK)."""
    snd_una = M[M_SND_UNA]
    acked = a - snd_una if a > snd_una else 0
    adv = acked > 0
    f = cols.flags[p]
    dup = (not adv and a == snd_una and cols.plen[p] == 0 and cols.win[p] == M[M_LAST_WIN] and M[M_SND_MAX] > a
           and (f & (SYN | FIN | RST)) == 0)
    mss = M[M_MSS]
    if dup:
        dlv = mss
        M[M_ACCOUNTED] += mss
    elif adv:
        dlv = acked
        if acked > mss:
            accounted = M[M_ACCOUNTED]
            if accounted >= acked:
                M[M_ACCOUNTED] = accounted - acked
                dlv = mss
            else:
                dlv = acked - accounted
                M[M_ACCOUNTED] = 0
    else:
        dlv = 0
    return acked, dup, dlv


@njit(cache=True, nogil=True, inline="always")
def _sack_blocks(k: int, a_raw: int, a_full: int, opt_tab: np.ndarray, sb: Scoreboard, work: WorkArrays,
                 E_i: np.ndarray, M: np.ndarray) -> tuple[int, int]:
    """The SACK blocks of an ACK of ``a_full`` (raw ``a_raw``; ``k``: its row of ``opt_tab``, -1 none): D-SACKs
    counted (one inside the last episode's retransmissions marks it spurious, and each retransmitted segment it
    reports a spurious retransmission), the others added to the scoreboard. Returns the first block above the
    cumulative ACK (-1, -1 when none)."""
    nb = opt_tab[k, O_NSACK] if k >= 0 else 0
    blk_lo = np.int64(-1)
    blk_hi = np.int64(-1)
    nsb = M[M_NSB]
    for b in range(nb):
        l_b = unwrap(opt_tab[k, O_SACK0 + 2 * b], a_raw, a_full)
        r_b = unwrap(opt_tab[k, O_SACK0 + 2 * b + 1], a_raw, a_full)
        is_dsack = False
        if b == 0:  # RFC 2883: a first block below the cumulative ACK, or inside the second block
            if r_b <= a_full:
                is_dsack = True
            elif nb > 1:
                l_1 = unwrap(opt_tab[k, O_SACK0 + 2], a_raw, a_full)
                r_1 = unwrap(opt_tab[k, O_SACK0 + 3], a_raw, a_full)
                if l_1 <= l_b and r_b <= r_1:
                    is_dsack = True
        if is_dsack:
            M[M_N_DSACK] += 1
            M[M_N_SPUR] += _spurious_segments(l_b, r_b, work, M)
            last = M[M_LAST_EP_ROW]
            if last >= 0 and l_b < E_i[EI_RECOVER, last] and r_b > E_i[EI_SEQ, last]:
                E_i[EI_SPURIOUS, last] = 1
        else:
            if blk_lo < 0 and l_b >= a_full:
                blk_lo = l_b
                blk_hi = r_b
            nsb = _sb_add(sb.left, sb.right, nsb, l_b, r_b)
    M[M_NSB] = nsb
    return blk_lo, blk_hi


@njit(cache=True, nogil=True, inline="always")
def _spurious_segments(lo: int, hi: int, work: WorkArrays, M: np.ndarray) -> int:
    """The retransmitted segments a D-SACK of ``[lo, hi)`` reports received twice (RFC 2883 §4: the retransmission
    was spurious), each counted once (``seg_rx`` 2 from then on)."""
    nseg = M[M_NSEG]
    j = search_sorted(work.seg_e[:nseg], lo, True)
    n = 0
    while j < nseg and work.seg_s[j] < hi:
        if work.seg_rx[j] == 1:
            work.seg_rx[j] = 2
            n += 1
        j += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _karn_rtt(t: int, a: int, rtt: float, hole_reported: bool, work: WorkArrays, M: np.ndarray) -> float:
    """The RTT sample of an ACK at ``t`` advancing to ``a``, from the newly acknowledged segments (``rtt`` when it
    has one already): from the highest one's first transmission, unless — Karn — any of their bytes was, or may
    have been, sent more than once (seen retransmitted, never seen sent, or a ``hole_reported`` missing)."""
    snd_una, nseg = M[M_SND_UNA], M[M_NSEG]
    cand = -1
    karn_bad = hole_reported
    covered = snd_una  # the acknowledged bytes below this were seen sent
    j = M[M_UNA_PTR]
    while j < nseg and work.seg_e[j] <= snd_una:
        j += 1
    while j < nseg and work.seg_s[j] < a:
        if work.seg_rx[j] or work.seg_s[j] > covered:
            karn_bad = True
        covered = max(covered, work.seg_e[j])
        if work.seg_e[j] <= a:
            cand = j
            j += 1
        else:
            break
    if covered < a:
        karn_bad = True
    M[M_UNA_PTR] = j
    if cand >= 0 and not karn_bad and rtt < 0:
        rtt = (t - work.seg_t0[cand]) / 1e9
    return rtt


@njit(cache=True, nogil=True, inline="always")
def _advance(p: int, a: int, rtt: float, hole_reported: bool, cols: FlowColumns, work: WorkArrays, sb: Scoreboard,
             E_i: np.ndarray, M: np.ndarray) -> tuple[float, int]:
    """Packet ``p``, an ACK advancing the cumulative ACK to ``a``: its RTT sample (the handshake's ``rtt`` when it
    has one, else seq/ack under Karn's rule, else the TSecr of a TSval sent once; -1.0 none) and its source
    (``RTT_*``); the scoreboard pruned below ``a``; the open episode ends when ``a`` reaches its recovery point."""
    t = cols.ts[p]
    src = RTT_HANDSHAKE if rtt > 0 else RTT_SEQ
    rtt = _karn_rtt(t, a, rtt, hole_reported, work, M)
    if rtt < 0:
        src = RTT_TS
    ntsv = M[M_NTSV]
    if rtt < 0 and (cols.flags[p] & P_HAS_TS) != 0 and ntsv > 0:
        te = unwrap(np.int64(cols.tsecr[p]), M[M_TSV_REF_RAW], M[M_TSV_REF_VAL])
        jt = search_sorted(work.tsv_v[:ntsv], te, False)
        if jt < ntsv and work.tsv_v[jt] == te:
            rtt = (t - work.tsv_t[jt]) / 1e9
    if rtt <= 0:
        rtt = -1.0
    M[M_SND_UNA] = a
    M[M_NSB] = _sb_prune(sb.left, sb.right, M[M_NSB], a)
    M[M_DUP_SINCE_ADV] = 0
    M[M_LAST_ADV_T] = t
    ep_row = M[M_EP_ROW]
    if M[M_EP_OPEN] != 0 and a >= E_i[EI_RECOVER, ep_row]:
        E_i[EI_END, ep_row] = t
        E_i[EI_LAST_FRAME, ep_row] = cols.frame[p]
        M[M_EP_OPEN] = 0
    return rtt, src if rtt > 0 else RTT_NONE


@njit(cache=True, nogil=True, inline="always")
def _rtt_sample(rtt: float, MF: np.ndarray) -> None:
    """An RTT sample (> 0) into srtt (RFC 6298, gain 1/8; the first sample is srtt) and RTTmin."""
    if rtt > 0:
        srtt = MF[MF_SRTT]
        if srtt < 0:
            MF[MF_SRTT] = rtt
        else:
            MF[MF_SRTT] = 0.875 * srtt + 0.125 * rtt
        if MF[MF_RTTMIN] < 0 or rtt < MF[MF_RTTMIN]:
            MF[MF_RTTMIN] = rtt


@njit(cache=True, nogil=True, inline="always")
def _ack_number(raw: int, t: int, st: FlowState) -> tuple[int, int]:
    """An ACK's acknowledgement number ``raw`` at ``t`` unwrapped (the reference moves to it), and as an ACK of
    data: below the FIN's sequence byte. The first ACK seen starts the cumulative ACK; none is above the highest
    sent (an ACK above it proves a hole: :func:`_rise`)."""
    M = st.M
    a_full = unwrap(raw, M[M_S_REF_RAW], M[M_S_REF_VAL])
    M[M_S_REF_RAW] = raw
    M[M_S_REF_VAL] = a_full
    a = min(a_full, M[M_FIN_REL])
    if M[M_UNA_KNOWN] == 0:
        M[M_SND_UNA] = a
        M[M_UNA_KNOWN] = 1
    if M[M_MAX_KNOWN] == 0:
        M[M_SND_MAX] = a
        M[M_MAX_KNOWN] = 1
        M[M_MAX_T] = t
    elif M[M_SND_MAX] < a:
        if M[M_ACK_RISE_T] < 0 or t - M[M_ACK_RISE_T] > LATE_RECORD_NS:
            M[M_ACK_RISE_LO] = M[M_SND_MAX]
        M[M_ACK_RISE_T] = t
        _rise(a, t, 0, st)
    return a_full, a


@njit(cache=True, nogil=True, inline="always")
def _ack(p: int, flow: int, cols: FlowColumns, work: WorkArrays, sb: Scoreboard, out: FlowTables,
         rows: np.ndarray, st: FlowState) -> None:
    """Packet ``p``, an ACK from the receiver: an ACK row (§1.1: acknowledged and delivered bytes, duplicate,
    RTT sample, srtt and RTTmin, flight, SACKed bytes, window)."""
    M, MF = st.M, st.MF
    t = cols.ts[p]
    f = cols.flags[p]
    a_raw = np.int64(cols.ack[p])
    rwnd_shift = M[M_RWND_SHIFT]
    # the window this ACK advertises, in bytes (the largest shift when the handshake's is unknown): the bound on
    # a hole it proves
    M[M_WMAX] = max(M[M_WMAX], np.int64(cols.win[p]) << (rwnd_shift if rwnd_shift >= 0 else MAX_WSHIFT))
    a_full, a = _ack_number(a_raw, t, st)
    rtt = _handshake_ack_rtt(t, cols.plen[p] == 0, M)
    src = RTT_HANDSHAKE if rtt > 0 else RTT_NONE
    acked, dup, dlv = _delivered(p, a, cols, M)
    # a hole the receiver reported before this ACK: its bytes were (or will be) sent again
    hole_reported = M[M_DUP_SINCE_ADV] > 0 or M[M_NSB] > 0
    blk_lo, blk_hi = _sack_blocks(cols.opt_idx[p], a_raw, a_full, cols.opt_tab, sb, work, out.E_i, M)
    if acked > 0:
        rtt, src = _advance(p, a, rtt, hole_reported, cols, work, sb, out.E_i, M)
    elif dup:
        M[M_DUP_SINCE_ADV] += 1
        M[M_N_DUP] += 1
    if M[M_NHOLE] > M[M_HOLE_LO]:
        _prove_holes(M[M_SND_UNA], work, M)
    _rtt_sample(rtt, MF)
    sacked = _sacked_between(sb.left, sb.right, M[M_NSB], a, M[M_SND_MAX])
    flight = M[M_SND_MAX] - a - sacked
    if flight < 0:
        flight = 0
    M[M_LAST_WIN] = np.int64(cols.win[p])
    M[M_RCV_WIN_ZERO] = 1 if cols.win[p] == 0 else 0
    M[M_LAST_ACK_T] = t
    M[M_LAST_ACK_ROW_T] = t
    has_ts = (f & P_HAS_TS) != 0
    na = rows[NEXT_ACK]
    A_i, A_f = out.A_i, out.A_f
    A_i[AI_FLOW, na] = flow
    A_i[AI_T, na] = t
    A_i[AI_ACKED, na] = acked
    A_i[AI_DUP, na] = 1 if dup else 0
    A_i[AI_D, na] = dlv
    A_i[AI_FLIGHT, na] = flight
    A_i[AI_TSVAL, na] = np.int64(cols.tsval[p]) if has_ts else -1
    A_i[AI_ACK, na] = a
    A_i[AI_WIN, na] = cols.win[p]
    A_i[AI_SACKED, na] = sacked
    A_i[AI_TSECR, na] = np.int64(cols.tsecr[p]) if has_ts else -1
    A_i[AI_SACK_LO, na] = blk_lo
    A_i[AI_SACK_HI, na] = blk_hi
    A_i[AI_RWND, na] = np.int64(cols.win[p]) << rwnd_shift if rwnd_shift >= 0 else -1
    A_i[AI_FRAME, na] = cols.frame[p]
    A_i[AI_RTT_SRC, na] = src if rtt > 0 else RTT_NONE
    A_f[AF_RTT, na] = rtt if rtt > 0 else np.nan
    A_f[AF_SRTT, na] = MF[MF_SRTT] if MF[MF_SRTT] > 0 else np.nan
    A_f[AF_RTTMIN, na] = MF[MF_RTTMIN] if MF[MF_RTTMIN] > 0 else np.nan
    A_f[AF_T, na] = t / 1e9
    A_f[AF_TREL, na] = (t - M[M_T_FIRST]) / 1e9
    if M[M_N_ROWS] == 0:
        M[M_FIRST_ACK] = a
    rows[NEXT_ACK] = na + 1
    M[M_N_ROWS] += 1


#: The most SACK blocks an ACK carries (the options side table keeps four, ``fastpath.OPT_NCOL``).
MAX_SACK_BLOCKS = 4


@kernel
def _main_pass(lo: int, hi: int, d: int, flow: int, order: np.ndarray, cols: FlowColumns, work: WorkArrays,
               sb: Scoreboard, out: FlowTables, rows: np.ndarray, st: FlowState) -> int:
    """:func:`flow_main` until the SACK scoreboard might run out of room: returns the packet reached (``hi`` when
    done). Compiled without reference counting (``fastpath.kernel``): with it, every column read through ``cols``
    and the other tuples costs an atomic increment and decrement (the analysis of a 44 k-packet capture took 42
    instead of 3 ms)."""
    for i in range(lo, hi):
        if st.M[M_NSB] + MAX_SACK_BLOCKS >= len(sb.left):  # an ACK adds at most one block per SACK block
            return i
        if i + AHEAD < hi:
            q = order[i + AHEAD]
            prefetch(cols.ts, q)
            prefetch(cols.flags, q)
            prefetch(cols.dir, q)
            prefetch(cols.seq, q)
            prefetch(cols.ack, q)
            prefetch(cols.win, q)
            prefetch(cols.plen, q)
            prefetch(cols.tsval, q)
            prefetch(cols.tsecr, q)
            prefetch(cols.opt_idx, q)
            prefetch(cols.frame, q)
        p = order[i]
        f = cols.flags[p]
        if cols.dir[p] == d:
            _from_sender(p, flow, cols, work, sb, out, rows, st)
        elif (f & SYN) != 0:
            _receiver_syn(f, cols.ts[p], st)
        elif (f & ACK) != 0 and (f & RST) == 0:  # an RST is not an ACK the sender's congestion control processes
            _ack(p, flow, cols, work, sb, out, rows, st)
    return hi


@njit(cache=True, nogil=True)
def flow_main(lo: int, hi: int, d: int, flow: int, order: np.ndarray, cols: FlowColumns, work: WorkArrays,
              sb: Scoreboard, out: FlowTables, rows: np.ndarray, st: FlowState) -> Scoreboard:
    """Main pass over packets ``order[lo:hi]`` of direction ``d`` (flow number ``flow``): append ACK rows, segment
    rows and episodes to ``out`` at ``rows`` (advanced; an episode row is global to the connection: later ACKs
    update it). State carried in ``st.M``/``st.MF``, ``work`` and the SACK scoreboard ``sb``, which is returned
    (grown as needed)."""
    i = _main_pass(lo, hi, d, flow, order, cols, work, sb, out, rows, st)
    while i < hi:
        sb = grow(sb)
        i = _main_pass(i, hi, d, flow, order, cols, work, sb, out, rows, st)
    return sb


@njit(cache=True)
def flow_finish(flow: int, d: int, rows: np.ndarray, st: FlowState, F_i: np.ndarray, F_f: np.ndarray) -> None:
    """Fill ``F_i``/``F_f[flow]`` once every packet of the direction went through the main pass (``rows``: the
    rows it reached)."""
    P, M, MF = st.P, st.M, st.MF
    syn_seen = P[PS_SYN_SEEN] != 0
    syn_ws = P[PS_SYN_WS_S] != 0 and P[PS_SYN_WS_R] != 0
    F_i[flow, FI_CONN] = -1
    F_i[flow, FI_DIR] = d
    F_i[flow, FI_NACKS] = M[M_N_ROWS]
    F_i[flow, FI_NDUP] = M[M_N_DUP]
    F_i[flow, FI_NRETX] = M[M_N_RETX]
    F_i[flow, FI_NEPS] = rows[NEXT_EP] - M[M_EP_LO]
    F_i[flow, FI_NFR] = M[M_N_FR]
    F_i[flow, FI_NTO] = M[M_N_TO]
    F_i[flow, FI_NKEEP] = M[M_N_KEEP]
    F_i[flow, FI_NZWP] = M[M_N_ZWP]
    F_i[flow, FI_NSEGS] = M[M_N_SEGS]
    F_i[flow, FI_FIRST_DATA] = M[M_FIRST_DATA_T]
    F_i[flow, FI_LAST_ACK] = M[M_LAST_ACK_ROW_T]
    F_i[flow, FI_BYTES_ACKED] = M[M_SND_UNA] - (0 if syn_seen else M[M_FIRST_ACK] if M[M_N_ROWS] > 0 else 0)
    # the bytes the capture shows sent: every byte up to the highest sequence sent but the holes neither a segment
    # seen nor an ACK covers
    F_i[flow, FI_BYTES_SENT] = (M[M_SND_MAX] - (0 if syn_seen else (M[M_FIRST_SEQ] if M[M_N_SEGS] > 0 else 0))
                                - M[M_UNPROVEN])
    F_i[flow, FI_SYN] = M[M_SYN_T]
    F_i[flow, FI_SYNACK] = M[M_SYNACK_T]
    F_i[flow, FI_HSACK] = M[M_HSACK_T]
    F_i[flow, FI_SYN_COUNT] = M[M_SYN_COUNT]
    F_i[flow, FI_SENDER_CLIENT] = 1 if M[M_SENDER_CLIENT] != 0 else 0
    F_i[flow, FI_MSS] = M[M_MSS]
    F_i[flow, FI_MSS_SRC] = M[M_MSS_SRC]
    F_i[flow, FI_SACK] = 1 if P[PS_SACK_SEEN] != 0 or (P[PS_SYN_SACK_S] != 0 and P[PS_SYN_SACK_R] != 0) else 0
    F_i[flow, FI_TS] = 1 if P[PS_TS_SEEN] != 0 or (P[PS_SYN_TS_S] != 0 and P[PS_SYN_TS_R] != 0) else 0
    F_i[flow, FI_WS] = 1 if syn_ws else 0
    F_i[flow, FI_FIRST_PKT] = P[PS_FIRST_PKT]
    F_i[flow, FI_LAST_PKT] = P[PS_LAST_PKT]
    F_i[flow, FI_NPKTS] = P[PS_NPKTS]
    F_i[flow, FI_ACK_LO] = M[M_ACK_LO]
    F_i[flow, FI_SEG_LO] = M[M_SEG_LO]
    F_i[flow, FI_NDSACK] = M[M_N_DSACK]
    F_i[flow, FI_NSPUR] = M[M_N_SPUR]
    F_i[flow, FI_OPT_TRUNC] = P[PS_OPT_TRUNC]
    F_i[flow, FI_SYN_MSS_S] = P[PS_SYN_MSS_S]
    F_i[flow, FI_SYN_MSS_R] = P[PS_SYN_MSS_R]
    F_i[flow, FI_RCV_WSHIFT] = (min(P[PS_WS_SHIFT_R], 14) if syn_ws else 0) if syn_seen else -1
    F_i[flow, FI_SEEN] = M[M_SEEN]
    F_i[flow, FI_PROVEN] = M[M_PROVEN]
    F_i[flow, FI_JUMP] = M[M_JUMP]
    F_i[flow, FI_JUMP_RETX] = M[M_JUMP_RETX]
    early = M[M_FIRST_SEQ] - M[M_FIRST_ACK] if not syn_seen and M[M_N_ROWS] > 0 and M[M_N_SEGS] > 0 else 0
    F_i[flow, FI_EARLY] = max(early, 0)
    F_i[flow, FI_WMAX] = M[M_WMAX]
    F_f[flow, FF_SRTT] = MF[MF_SRTT] if MF[MF_SRTT] > 0 else np.nan
    F_f[flow, FF_RTTMIN] = MF[MF_RTTMIN] if MF[MF_RTTMIN] > 0 else np.nan
    F_f[flow, FF_RTT_HS] = MF[MF_RTT_HS] if MF[MF_RTT_HS] > 0 else np.nan



@njit(cache=True)
def analyze_flow(lo: int, hi: int, d: int, flow: int, order: np.ndarray, cols: FlowColumns, work: WorkArrays,
                 sb: Scoreboard, out: FlowTables, rows: np.ndarray, F_i: np.ndarray, F_f: np.ndarray) -> Scoreboard:
    """Analyse direction ``d`` of the connection in packets ``order[lo:hi]`` in one go: append its rows to ``out``
    at ``rows`` (advanced); fill ``F_i``/``F_f[flow]``. Returns the scoreboard (grown as needed)."""
    st = flow_state()
    flow_prepass(lo, hi, d, order, cols, work, st)
    if not flow_start(st, work, rows):
        return sb
    sb = flow_main(lo, hi, d, flow, order, cols, work, sb, out, rows, st)
    flow_finish(flow, d, rows, st, F_i, F_f)
    return sb


@njit(cache=True, nogil=True)
def analyze_all(bounds: np.ndarray, order: np.ndarray, cols: FlowColumns, out: FlowTables, F_i: np.ndarray,
                F_f: np.ndarray, state: np.ndarray, c_end: int, conn_base: int, stats: np.ndarray,
                work: WorkArrays) -> int:
    """Analyse both directions of connections ``state[0]`` to ``c_end - 1``.

    ``order[bounds[c]:bounds[c + 1]]`` are the packets of connection ``c`` in capture order; ``F_i``
    records it as connection ``conn_base + c``.

    ``stats`` holds the connections' ``demux.conn_stats`` rows: a direction that carried no payload is
    not a flow and is not analysed. The per-flow working arrays ``work`` need one entry per data segment of the
    largest connection and one more (:func:`work_arrays` makes them).

    ``state`` holds (next connection, ack rows, segment rows, episode rows, flows): the rows and flow
    numbers to write next. Returns the next connection to analyse: ``c_end`` when done, earlier when
    the episode table ``out.E_i`` might overflow (the caller grows it and calls again). Releases the GIL,
    so that disjoint connection ranges (their row offsets from ``analyze.output_rows``) run in threads.
    """
    sb = scoreboard()
    rows = state[1:4].copy()  # (NEXT_ACK, NEXT_SEG, NEXT_EP)
    c0, nf = state[0], state[4]
    for c in range(c0, c_end):
        lo = bounds[c]
        hi = bounds[c + 1]
        if rows[NEXT_EP] + (hi - lo) > out.E_i.shape[1]:  # at most one episode per packet of the connection
            state[0], state[4] = c, nf
            state[1:4] = rows
            return c
        for d in range(2):
            if stats[c, CS_PAYLOAD0 + d] == 0:  # no payload: analyze_flow would find none and write nothing
                continue
            ns = rows[NEXT_SEG]
            sb = analyze_flow(lo, hi, d, nf, order, cols, work, sb, out, rows, F_i, F_f)
            if rows[NEXT_SEG] > ns:  # the direction carried payload: it is a flow
                F_i[nf, FI_CONN] = conn_base + c
                nf += 1
    state[0], state[4] = c_end, nf
    state[1:4] = rows
    return c_end


#: The per-segment working arrays of :class:`WorkArrays` (all but the holes' and ``scratch``) and their element types.
SEGMENT_ARRAYS = (("seg_s", np.int64), ("seg_e", np.int64), ("seg_t0", np.int64), ("seg_t1", np.int64),
                  ("seg_rx", np.int8), ("seg_ep", np.int64), ("tsv_v", np.int64), ("tsv_t", np.int64))
#: The unproven holes' arrays of :class:`WorkArrays` (int64): not among :data:`SEGMENT_ARRAYS`, whose pages are
#: mapped in ahead of the analysis — these are touched only by a capture that misses segments, and emptied
#: (written again from the start) whenever the ACKs have covered every hole.
HOLE_ARRAYS = ("hole_l", "hole_r")
#: Length of the pre-pass's ``scratch`` (int64, zeros): the payload-size histogram and the list of its bins in use.
SCRATCH_SIZE = 2 * SIZE_BINS


def work_arrays(stats: np.ndarray) -> WorkArrays:
    """The working arrays for connections with ``stats`` rows: the per-segment ones (:data:`SEGMENT_ARRAYS`, one
    entry per data segment of the largest connection and one more; in their own mappings, so that pages are
    mapped in as used), the unproven holes' (:data:`HOLE_ARRAYS`, as many) and the scratch."""
    rows = int(stats[:, CS_SEGMENTS].max(initial=0)) + 1
    per_segment = [lazy(rows, dt) for _, dt in SEGMENT_ARRAYS]
    holes = [lazy(rows, np.int64) for _ in HOLE_ARRAYS]
    return WorkArrays._make([*per_segment, *holes, np.zeros(SCRATCH_SIZE, np.int64)])
