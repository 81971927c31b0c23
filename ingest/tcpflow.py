"""Compiled per-flow analysis: one direction of a connection → ACK stream, data segments, episodes.

Implements ``ESTIMATORS.md`` §1.1 (per-ACK inputs) and §1.2 (loss events) over the packets of one
connection in capture-time order. All sequence arithmetic is on 64-bit values unwrapped from the
32-bit fields (so sequence wrap is invisible), relative to the data sender's first data byte
(ISN + 1 when the SYN was captured, else the first sequence or acknowledgement number seen).

Decisions this module makes where the reference leaves room (documented here and in docs/ingest.md):

* RST segments are not ACK rows (a reset is not an acknowledgement a sender's congestion control
  processes); SYN-ACKs are not rows. When the data sender is the server, the handshake's final ACK is
  the first row and carries the SYN-ACK→ACK RTT sample (Linux ``tcp_synack_rtt_meas``).
* The TSecr RTT fallback is taken only on ACKs that advance the cumulative ACK (RFC 7323 §4: a
  duplicate ACK echoes an older TSval and would inflate the sample).
* The FIN's sequence byte is not data: ``acked`` stops at the FIN.
* A segment of at most one byte that lies below the cumulative ACK (keepalive) or is sent while the
  receiver advertises a zero window (zero-window probe) is not a retransmission.
* A segment that overlaps the highest sequence sent is a retransmission of its old part; its new
  part is new data.
* SACK scoreboard: every disjoint SACKed block above the cumulative ACK is kept (the arrays grow).
* Karn (§1.1, issue #10): no seq/ack RTT sample spans bytes that were, or may have been, sent more than
  once — bytes seen retransmitted, bytes whose transmission the capture does not show (it began
  mid-connection, or missed them: they may have been sent again unseen), and a hole the receiver had
  reported (duplicate ACKs or SACK blocks above the cumulative ACK: those bytes were sent again, seen or not).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ackreplay.ingest.decode import ACK, FIN, RST, SYN
from ackreplay.ingest.demux import CS_PAYLOAD0, CS_SEGMENTS
from ackreplay.ingest.fastpath import O_MSS, O_NSACK, O_SACK0, O_SACKOK, O_WSCALE, P_HAS_TS, P_OPT_TRUNC
from ackreplay.ingest.memory import lazy
from ackreplay.ingest.prefetch import AHEAD, prefetch

# ACK-row integer columns
(AI_FLOW, AI_T, AI_ACKED, AI_DUP, AI_D, AI_FLIGHT, AI_TSVAL, AI_ACK, AI_WIN, AI_SACKED, AI_TSECR, AI_SACK_LO,
 AI_SACK_HI, AI_RWND) = range(14)
# AI_TSECR: the ACK's raw TSecr (-1 = none), for the receiver-side rebuild; AI_SACK_LO/HI: the ACK's first SACK
# block above the cumulative ACK (RFC 2018: the most recently received data; -1 = none), for the time-sequence
# graph; AI_RWND: the receive window in bytes (the field scaled by the handshake's shift; -1 when unknown)
AI_NCOL = 14
# ACK-row float columns
AF_RTT, AF_SRTT, AF_RTTMIN, AF_T, AF_TREL = range(5)
AF_NCOL = 5
# data-segment columns
SI_FLOW, SI_T, SI_SEQ, SI_LEN, SI_KIND, SI_TSECR, SI_TSVAL = range(7)  # raw TSecr/TSval, -1 = none
SI_NCOL = 7
# data-segment float columns
SF_T, SF_TREL = range(2)
SF_NCOL = 2
SEG_NEW, SEG_RETX, SEG_KEEPALIVE, SEG_ZWP = 0, 1, 2, 3
# episode columns
(EI_FLOW, EI_START, EI_END, EI_KIND, EI_DUPACKS, EI_RECOVER, EI_SEQ, EI_SPURIOUS, EI_ACKROW, EI_RETX,
 EI_SILENCE_NS) = range(11)
EI_NCOL = 11
EP_FAST_RETRANSMIT, EP_TIMEOUT = 0, 1
# per-flow integer results
(FI_CONN, FI_DIR, FI_NACKS, FI_NDUP, FI_NRETX, FI_NEPS, FI_NFR, FI_NTO, FI_NKEEP, FI_NZWP, FI_NSEGS,
 FI_FIRST_DATA, FI_LAST_ACK, FI_BYTES_ACKED, FI_BYTES_SENT, FI_SYN, FI_SYNACK, FI_HSACK, FI_SYN_COUNT,
 FI_SENDER_CLIENT, FI_MSS, FI_MSS_SRC, FI_SACK, FI_TS, FI_WS, FI_FIRST_PKT, FI_LAST_PKT, FI_NPKTS,
 FI_ACK_LO, FI_SEG_LO, FI_NDSACK, FI_OPT_TRUNC, FI_SYN_MSS_S, FI_SYN_MSS_R, FI_RCV_WSHIFT) = range(35)
FI_NCOL = 35  # FI_RCV_WSHIFT: the receiver's window scale shift (0 without scaling, -1 unknown: no SYNs)
FF_SRTT, FF_RTTMIN, FF_RTT_HS = range(3)
FF_NCOL = 3
MSS_SYN, MSS_SYN_TS, MSS_PAYLOAD, MSS_PAYLOAD_TSO, MSS_DEFAULT = 1, 2, 3, 4, 5

SB_CAP = 64  # initial scoreboard capacity (it grows)
_NONE = -(1 << 62)
_BIG = 1 << 62


@njit(cache=True, inline="always")
def _unwrap(raw: int, ref_raw: int, ref_val: int) -> int:
    return ref_val + (((raw - ref_raw + 0x80000000) & 0xFFFFFFFF) - 0x80000000)


@njit(cache=True)
def infer_mss(lens: np.ndarray) -> tuple[int, int]:
    """MSS from payload sizes (no SYN seen): the most common large size, or — when the common sizes
    are whole multiples of a smaller frequent size (TSO/GSO super-segments) — that smaller size.

    "Frequent" means at least 5 % of the data segments (and at least 2); "large" means ≥ 512 bytes.
    A most-common size with no frequent divisor is the MSS whatever its size up to 65535: loopback
    (65483) and jumbo-frame links carry segments far above 9000 bytes (ESTIMATORS.md §1.1, issue #10).
    A payload above 65535 (the MSS option is 16 bits; IPv4 cannot carry it) is a super-segment (GSO,
    BIG TCP) and never the MSS: a flow of only such payloads falls back to 1460 (Ethernet).
    No payload at all gives the RFC 1122 default of 536.
    """
    n = len(lens)
    if n == 0:
        return 536, MSS_DEFAULT
    v = np.sort(lens)
    uniq = np.empty(n, np.int64)
    cnt = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        if k > 0 and uniq[k - 1] == v[i]:
            cnt[k - 1] += 1
        else:
            uniq[k] = v[i]
            cnt[k] = 1
            k += 1
    return _mss_from_counts(uniq, cnt, k, n)


#: Payload-size histogram of the MSS inference: bins 0..65535, and one for every larger size (never the MSS).
SIZE_BINS = 65537


@njit(cache=True)
def _mss_from_counts(uniq: np.ndarray, cnt: np.ndarray, k: int, n: int) -> tuple[int, int]:
    """:func:`infer_mss` from the ``k`` distinct sizes (ascending; any one size above 65535 may stand for all
    of them) and their counts, of ``n`` payloads."""
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


@njit(cache=True)
def _sb_add(sb_l: np.ndarray, sb_r: np.ndarray, n: int, left: int, r: int) -> int:
    """Insert [left, r) into the sorted disjoint block list, merging; return the new count. The arrays
    must have room for one more block (:func:`_sb_room`)."""
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


@njit(cache=True)
def _sb_room(sb: np.ndarray, n: int) -> np.ndarray:
    """``sb`` with room for more than ``n`` blocks: the scoreboard keeps every SACKed block, however
    many are outstanding (it was capped at 64, which over-estimated flight by up to 40 %: issue #10)."""
    if n + 1 < len(sb):
        return sb
    grown = np.empty(2 * len(sb), sb.dtype)
    grown[:n] = sb[:n]
    return grown


@njit(cache=True)
def _sb_prune(sb_l: np.ndarray, sb_r: np.ndarray, n: int, a: int) -> int:
    w = 0
    for j in range(n):
        if sb_r[j] > a:
            sb_l[w] = max(sb_l[j], a)
            sb_r[w] = sb_r[j]
            w += 1
    return w


# Resumable per-flow state (one direction of a connection): the analysis runs over the connection's
# packets in one call, or — for a connection beyond the memory budget — over consecutive chunks of them
# (``ingest.chunked``), each call taking up where the last left off. Pre-pass state (handshake options,
# reference sequence number, payload sizes), int64:
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
    M_FIRST_SEQ) = range(49)
M_NCOL = 49
# main-pass state, float64:
(MF_SRTT, MF_RTTMIN, MF_RTT_HS) = range(3)
MF_NCOL = 3


@njit(cache=True)
def flow_state() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fresh (pre-pass, main, float) state arrays of one direction."""
    P = np.zeros(PS_NCOL, np.int64)
    P[PS_SYN_MSS_S] = -1
    P[PS_SYN_MSS_R] = -1
    P[PS_WS_SHIFT_R] = -1
    P[PS_FIRST_PKT] = _NONE
    P[PS_LAST_PKT] = _NONE
    return P, np.zeros(M_NCOL, np.int64), np.full(MF_NCOL, -1.0)


@njit(cache=True, nogil=True)
def flow_prepass(lo: int, hi: int, d: int, order: np.ndarray, ts: np.ndarray, dirs: np.ndarray, seq: np.ndarray,
                 ack: np.ndarray, flags: np.ndarray, plen: np.ndarray, opt_idx: np.ndarray, opt_tab: np.ndarray,
                 scratch: np.ndarray, P: np.ndarray) -> None:
    """Pre-pass over packets ``order[lo:hi]`` of direction ``d``: handshake options, the first reference value,
    payload sizes for MSS inference (a histogram in ``scratch``, :data:`SCRATCH_SIZE`, zero where unused);
    state carried in ``P``."""
    syn_mss_s = P[PS_SYN_MSS_S]
    syn_mss_r = P[PS_SYN_MSS_R]
    syn_ts_s = P[PS_SYN_TS_S] != 0
    syn_ts_r = P[PS_SYN_TS_R] != 0
    syn_ws_s = P[PS_SYN_WS_S] != 0
    syn_ws_r = P[PS_SYN_WS_R] != 0
    ws_shift_r = P[PS_WS_SHIFT_R]
    syn_sack_s = P[PS_SYN_SACK_S] != 0
    syn_sack_r = P[PS_SYN_SACK_R] != 0
    syn_seen = P[PS_SYN_SEEN] != 0
    isn = P[PS_ISN]
    ref_found = P[PS_REF_FOUND] != 0
    ref_raw = P[PS_REF_RAW]
    nl = P[PS_NL]
    sack_seen = P[PS_SACK_SEEN] != 0
    ts_seen = P[PS_TS_SEEN] != 0
    opt_trunc = P[PS_OPT_TRUNC]
    first_pkt = P[PS_FIRST_PKT]
    last_pkt = P[PS_LAST_PKT]
    npkts = P[PS_NPKTS]
    n_used = P[PS_N_USED]
    if hi > lo:
        if npkts == 0:
            first_pkt = ts[order[lo]]
        last_pkt = ts[order[hi - 1]]
        npkts += hi - lo
    for i in range(lo, hi):
        if i + AHEAD < hi:
            q = order[i + AHEAD]
            prefetch(flags, q)
            prefetch(opt_idx, q)
            prefetch(dirs, q)
            prefetch(seq, q)
            prefetch(plen, q)
            prefetch(ack, q)
        p = order[i]
        f = flags[p]
        if (f & P_OPT_TRUNC) != 0:
            opt_trunc += 1
        k = opt_idx[p]
        if (f & SYN) != 0:
            mss_o = opt_tab[k, O_MSS] if k >= 0 else -1
            ws_o = opt_tab[k, O_WSCALE] if k >= 0 else -1
            sack_ok = k >= 0 and opt_tab[k, O_SACKOK] != 0
            if dirs[p] == d:
                if not syn_seen:
                    syn_seen = True
                    isn = np.int64(seq[p])
                syn_mss_s = mss_o
                syn_ts_s = (f & P_HAS_TS) != 0
                syn_ws_s = ws_o >= 0
                syn_sack_s = sack_ok
            else:
                syn_mss_r = mss_o
                syn_ts_r = (f & P_HAS_TS) != 0
                syn_ws_r = ws_o >= 0
                ws_shift_r = ws_o
                syn_sack_r = sack_ok
            continue
        if dirs[p] == d:
            if (f & P_HAS_TS) != 0:
                ts_seen = True
            if plen[p] > 0:  # payload-size histogram; the bins in use are listed after it, to clear them
                b = np.int64(plen[p])
                if b >= SIZE_BINS:
                    b = SIZE_BINS - 1
                if scratch[b] == 0:
                    scratch[SIZE_BINS + n_used] = b
                    n_used += 1
                scratch[b] += 1
                nl += 1
                if not ref_found:
                    ref_found = True
                    ref_raw = np.int64(seq[p])
        else:
            if k >= 0 and opt_tab[k, O_NSACK] > 0:
                sack_seen = True
            if not ref_found and (f & ACK) != 0:
                ref_found = True
                ref_raw = np.int64(ack[p])
    P[PS_SYN_MSS_S] = syn_mss_s
    P[PS_SYN_MSS_R] = syn_mss_r
    P[PS_SYN_TS_S] = 1 if syn_ts_s else 0
    P[PS_SYN_TS_R] = 1 if syn_ts_r else 0
    P[PS_SYN_WS_S] = 1 if syn_ws_s else 0
    P[PS_SYN_WS_R] = 1 if syn_ws_r else 0
    P[PS_WS_SHIFT_R] = ws_shift_r
    P[PS_SYN_SACK_S] = 1 if syn_sack_s else 0
    P[PS_SYN_SACK_R] = 1 if syn_sack_r else 0
    P[PS_SYN_SEEN] = 1 if syn_seen else 0
    P[PS_ISN] = isn
    P[PS_REF_FOUND] = 1 if ref_found else 0
    P[PS_REF_RAW] = ref_raw
    P[PS_NL] = nl
    P[PS_SACK_SEEN] = 1 if sack_seen else 0
    P[PS_TS_SEEN] = 1 if ts_seen else 0
    P[PS_OPT_TRUNC] = opt_trunc
    P[PS_FIRST_PKT] = first_pkt
    P[PS_LAST_PKT] = last_pkt
    P[PS_NPKTS] = npkts
    P[PS_N_USED] = n_used


@njit(cache=True)
def flow_start(P: np.ndarray, scratch: np.ndarray, M: np.ndarray, na: int, ns: int, ne: int) -> bool:
    """After the pre-pass: the MSS and the main pass's initial state (``M``; rows start at ``na``, ``ns``,
    ``ne``). False when the direction carried no payload (it is not a flow)."""
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
        mss, mss_src = _mss_from_counts(sizes, scratch[sizes], len(sizes), P[PS_NL])
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
    M[M_LAST_ACK_T] = _NONE
    M[M_LAST_ADV_T] = _NONE
    M[M_SYN_T] = _NONE
    M[M_SYNACK_T] = _NONE
    M[M_HSACK_T] = _NONE
    M[M_FIRST_DATA_T] = _NONE
    M[M_LAST_ACK_ROW_T] = _NONE
    M[M_EP_ROW] = -1
    M[M_LAST_EP_ROW] = -1
    M[M_ACK_LO] = na
    M[M_SEG_LO] = ns
    M[M_EP_LO] = ne
    return True


@njit(cache=True, nogil=True)
def flow_main(
    lo: int, hi: int, d: int, flow: int, order: np.ndarray,
    ts: np.ndarray, dirs: np.ndarray, seq: np.ndarray, ack: np.ndarray, flags: np.ndarray,
    win: np.ndarray, plen: np.ndarray, tsval: np.ndarray, tsecr: np.ndarray, opt_idx: np.ndarray,
    opt_tab: np.ndarray,
    seg_s: np.ndarray, seg_e: np.ndarray, seg_t0: np.ndarray, seg_t1: np.ndarray, seg_rx: np.ndarray,
    seg_ep: np.ndarray, tsv_v: np.ndarray, tsv_t: np.ndarray, sb_l: np.ndarray, sb_r: np.ndarray,
    A_i: np.ndarray, A_f: np.ndarray, na: int, S_i: np.ndarray, S_f: np.ndarray, ns: int, E_i: np.ndarray,
    ne: int, M: np.ndarray, MF: np.ndarray,
) -> tuple[int, int, int, np.ndarray, np.ndarray]:
    """Main pass over packets ``order[lo:hi]`` of direction ``d``: append ACK rows at ``A_*[:, na]``, segment
    rows at ``S_*[:, ns]``, episodes at ``E_i[:, ne]`` (an episode row is global to the connection: later
    ACKs update it). State carried in ``M``/``MF`` and the working arrays (the SACK scoreboard may grow).
    Returns the next rows and the scoreboard arrays."""
    mss = M[M_MSS]
    mss_src = M[M_MSS_SRC]
    t_first = M[M_T_FIRST]
    rwnd_shift = M[M_RWND_SHIFT]
    s_ref_raw = M[M_S_REF_RAW]
    s_ref_val = M[M_S_REF_VAL]
    una_known = M[M_UNA_KNOWN] != 0
    snd_una = M[M_SND_UNA]
    max_known = M[M_MAX_KNOWN] != 0
    snd_max = M[M_SND_MAX]
    fin_rel = M[M_FIN_REL]
    nseg = M[M_NSEG]
    una_ptr = M[M_UNA_PTR]
    ntsv = M[M_NTSV]
    tsv_ref_raw = M[M_TSV_REF_RAW]
    tsv_ref_val = M[M_TSV_REF_VAL]
    tsv_found = M[M_TSV_FOUND] != 0
    nsb = M[M_NSB]
    accounted = M[M_ACCOUNTED]
    last_win = M[M_LAST_WIN]
    rcv_win_zero = M[M_RCV_WIN_ZERO] != 0
    dup_since_adv = M[M_DUP_SINCE_ADV]
    last_ack_t = M[M_LAST_ACK_T]
    last_adv_t = M[M_LAST_ADV_T]
    n_rows = M[M_N_ROWS]
    n_dup = M[M_N_DUP]
    n_retx = M[M_N_RETX]
    n_keep = M[M_N_KEEP]
    n_zwp = M[M_N_ZWP]
    n_fr = M[M_N_FR]
    n_to = M[M_N_TO]
    n_dsack = M[M_N_DSACK]
    syn_t = M[M_SYN_T]
    synack_t = M[M_SYNACK_T]
    hsack_t = M[M_HSACK_T]
    syn_count = M[M_SYN_COUNT]
    synack_count = M[M_SYNACK_COUNT]
    sender_client = M[M_SENDER_CLIENT] != 0
    first_data_t = M[M_FIRST_DATA_T]
    last_ack_row_t = M[M_LAST_ACK_ROW_T]
    ep_open = M[M_EP_OPEN] != 0
    ep_row = M[M_EP_ROW]
    last_ep_row = M[M_LAST_EP_ROW]
    ack_lo = M[M_ACK_LO]
    seg_lo = M[M_SEG_LO]
    ep_lo = M[M_EP_LO]
    n_segs = M[M_N_SEGS]
    first_ack = M[M_FIRST_ACK]
    first_seq = M[M_FIRST_SEQ]
    srtt = MF[MF_SRTT]
    rttmin = MF[MF_RTTMIN]
    rtt_hs = MF[MF_RTT_HS]
    for i in range(lo, hi):
        if i + AHEAD < hi:
            q = order[i + AHEAD]
            prefetch(ts, q)
            prefetch(flags, q)
            prefetch(dirs, q)
            prefetch(seq, q)
            prefetch(ack, q)
            prefetch(win, q)
            prefetch(plen, q)
            prefetch(tsval, q)
            prefetch(tsecr, q)
            prefetch(opt_idx, q)
        p = order[i]
        t = ts[p]
        f = flags[p]
        if dirs[p] == d:
            # ---------------- a segment from the data sender
            if (f & SYN) != 0:
                if (f & ACK) == 0:
                    sender_client = True
                    syn_count += 1
                    if syn_t == _NONE:
                        syn_t = t
                else:
                    synack_count += 1
                    if synack_t == _NONE:
                        synack_t = t
                continue
            if sender_client and hsack_t == _NONE and synack_t != _NONE:
                hsack_t = t  # the client's ACK that completes the handshake
            s = _unwrap(np.int64(seq[p]), s_ref_raw, s_ref_val)
            s_ref_raw = np.int64(seq[p])
            s_ref_val = s
            L = np.int64(plen[p])
            if L > 0:
                if not max_known:
                    snd_max = s
                    max_known = True
                if first_data_t == _NONE:
                    first_data_t = t
                kind = SEG_NEW
                if L <= 1 and una_known and s + L <= snd_una:
                    kind = SEG_KEEPALIVE
                    n_keep += 1
                elif L <= 1 and rcv_win_zero:
                    kind = SEG_ZWP
                    n_zwp += 1
                elif s < snd_max:
                    kind = SEG_RETX
                    n_retx += 1
                if kind == SEG_RETX:
                    e = min(s + L, snd_max)
                    j = np.searchsorted(seg_e[:nseg], s, side="right")
                    # RTO inside an open fast-retransmit episode (§1.2)
                    rto = False
                    if ep_open and E_i[EI_KIND, ep_row] == EP_FAST_RETRANSMIT:
                        gap = max(0.2, 1.5 * srtt) if srtt > 0 else 0.2
                        jj = j
                        while jj < nseg and seg_s[jj] < e:
                            # silence since the later of their previous transmission and the last ACK
                            # that advanced (a partial ACK restarts the timer; corrected §1.2)
                            since = max(seg_t1[jj], last_adv_t)
                            if seg_ep[jj] == ep_row and (t - since) >= gap * 1e9:
                                rto = True
                            jj += 1
                    if rto:
                        E_i[EI_END, ep_row] = t
                        ep_open = False
                    if not ep_open:
                        r = ne
                        ne += 1
                        E_i[EI_FLOW, r] = flow
                        E_i[EI_START, r] = t
                        E_i[EI_END, r] = -1
                        sacked_now = 0
                        for b in range(nsb):
                            lo_b = max(sb_l[b], snd_una)
                            hi_b = min(sb_r[b], snd_max)
                            if hi_b > lo_b:
                                sacked_now += hi_b - lo_b
                        recent = max(0.2, srtt) if srtt > 0 else 0.2
                        fr = dup_since_adv >= 3 or (
                            sacked_now > 0 and last_ack_t != _NONE and (t - last_ack_t) <= recent * 1e9
                        )
                        if rto:
                            fr = False
                        E_i[EI_KIND, r] = EP_FAST_RETRANSMIT if fr else EP_TIMEOUT
                        if fr:
                            n_fr += 1
                        else:
                            n_to += 1
                        E_i[EI_DUPACKS, r] = dup_since_adv
                        E_i[EI_RECOVER, r] = snd_max
                        E_i[EI_SEQ, r] = s
                        E_i[EI_SPURIOUS, r] = 0
                        E_i[EI_ACKROW, r] = n_rows - 1
                        E_i[EI_RETX, r] = 0
                        base_t = last_adv_t if last_adv_t != _NONE else (
                            first_data_t if first_data_t != _NONE else t)
                        E_i[EI_SILENCE_NS, r] = t - base_t
                        ep_open = True
                        ep_row = r
                        last_ep_row = r
                    E_i[EI_RETX, ep_row] += 1
                    if s < E_i[EI_SEQ, ep_row]:
                        E_i[EI_SEQ, ep_row] = s
                    while j < nseg and seg_s[j] < e:
                        seg_rx[j] = 1
                        seg_t1[j] = t
                        seg_ep[j] = ep_row
                        j += 1
                if kind <= SEG_RETX and s + L > snd_max:  # new data (or the part above a retransmission);
                    # a probe's byte is sent again as data when the window opens: not new data yet
                    seg_s[nseg] = max(s, snd_max)
                    seg_e[nseg] = s + L
                    seg_t0[nseg] = t
                    seg_t1[nseg] = t
                    seg_rx[nseg] = 0
                    seg_ep[nseg] = -1
                    nseg += 1
                    snd_max = s + L
                if (f & P_HAS_TS) != 0:
                    tv_raw = np.int64(tsval[p])
                    if not tsv_found:
                        tsv_found = True
                        tsv_ref_raw = tv_raw
                        tsv_ref_val = 0
                    tv = _unwrap(tv_raw, tsv_ref_raw, tsv_ref_val)
                    tsv_ref_raw = tv_raw
                    tsv_ref_val = tv
                    if ntsv == 0 or tv > tsv_v[ntsv - 1]:
                        tsv_v[ntsv] = tv
                        tsv_t[ntsv] = t
                        ntsv += 1
                S_i[SI_FLOW, ns] = flow
                S_i[SI_T, ns] = t
                S_i[SI_SEQ, ns] = s
                S_i[SI_LEN, ns] = L
                S_i[SI_KIND, ns] = kind
                S_i[SI_TSECR, ns] = np.int64(tsecr[p]) if (f & P_HAS_TS) != 0 else -1
                S_i[SI_TSVAL, ns] = np.int64(tsval[p]) if (f & P_HAS_TS) != 0 else -1
                S_f[SF_T, ns] = t / 1e9
                S_f[SF_TREL, ns] = (t - t_first) / 1e9
                if n_segs == 0:
                    first_seq = s
                n_segs += 1
                ns += 1
            if (f & FIN) != 0 and fin_rel == _BIG:
                fin_rel = s + L
            continue
        # ---------------- a segment from the receiver
        if (f & SYN) != 0:
            if (f & ACK) != 0 and sender_client:
                synack_count += 1
                if synack_t == _NONE:
                    synack_t = t
                    if syn_count == 1 and syn_t != _NONE:
                        rtt_hs = (t - syn_t) / 1e9
                        srtt = rtt_hs  # the first RTT sample (ESTIMATORS.md 1.1)
                        rttmin = rtt_hs
            elif (f & ACK) == 0:
                syn_count += 1
                if syn_t == _NONE:
                    syn_t = t
            continue
        if (f & ACK) == 0 or (f & RST) != 0:
            continue
        a_raw = np.int64(ack[p])
        a_full = _unwrap(a_raw, s_ref_raw, s_ref_val)
        s_ref_raw = a_raw
        s_ref_val = a_full
        a = min(a_full, fin_rel)
        if not una_known:
            snd_una = a
            una_known = True
        if not max_known or snd_max < a:
            snd_max = a
            max_known = True
        rtt = -1.0
        if not sender_client and hsack_t == _NONE and synack_t != _NONE:
            hsack_t = t
            if synack_count == 1 and plen[p] == 0:
                rtt = (t - synack_t) / 1e9
        acked = a - snd_una if a > snd_una else 0
        adv = acked > 0
        dup = (not adv and a == snd_una and plen[p] == 0 and win[p] == last_win and snd_max > a
               and (f & (SYN | FIN | RST)) == 0)
        # bytes delivered, Linux westwood_acked_count
        if dup:
            dlv = mss
            accounted += mss
        elif adv:
            dlv = acked
            if acked > mss:
                if accounted >= acked:
                    accounted -= acked
                    dlv = mss
                else:
                    dlv = acked - accounted
                    accounted = 0
        else:
            dlv = 0
        # a hole the receiver reported before this ACK: its bytes were (or will be) sent again
        hole_reported = dup_since_adv > 0 or nsb > 0
        # SACK blocks: D-SACK detection, scoreboard
        k = opt_idx[p]
        nb = opt_tab[k, O_NSACK] if k >= 0 else 0
        blk_lo = np.int64(-1)
        blk_hi = np.int64(-1)
        for b in range(nb):
            l_b = _unwrap(opt_tab[k, O_SACK0 + 2 * b], a_raw, a_full)
            r_b = _unwrap(opt_tab[k, O_SACK0 + 2 * b + 1], a_raw, a_full)
            is_dsack = False
            if b == 0:
                if r_b <= a_full:
                    is_dsack = True
                elif nb > 1:
                    l_1 = _unwrap(opt_tab[k, O_SACK0 + 2], a_raw, a_full)
                    r_1 = _unwrap(opt_tab[k, O_SACK0 + 3], a_raw, a_full)
                    if l_1 <= l_b and r_b <= r_1:
                        is_dsack = True
            if is_dsack:
                n_dsack += 1
                if last_ep_row >= 0 and l_b < E_i[EI_RECOVER, last_ep_row] and r_b > E_i[EI_SEQ, last_ep_row]:
                    E_i[EI_SPURIOUS, last_ep_row] = 1
            else:
                if blk_lo < 0 and l_b >= a_full:
                    blk_lo = l_b
                    blk_hi = r_b
                sb_l = _sb_room(sb_l, nsb)
                sb_r = _sb_room(sb_r, nsb)
                nsb = _sb_add(sb_l, sb_r, nsb, l_b, r_b)
        if adv:
            # RTT from the newly acknowledged segments (Karn: none of their bytes was, or may have been,
            # sent more than once — seen retransmitted, never seen sent, or reported missing)
            cand = -1
            karn_bad = hole_reported
            covered = snd_una  # the acknowledged bytes below this were seen sent
            j = una_ptr
            while j < nseg and seg_e[j] <= snd_una:
                j += 1
            while j < nseg and seg_s[j] < a:
                if seg_rx[j] or seg_s[j] > covered:
                    karn_bad = True
                covered = max(covered, seg_e[j])
                if seg_e[j] <= a:
                    cand = j
                    j += 1
                else:
                    break
            if covered < a:
                karn_bad = True
            una_ptr = j
            if cand >= 0 and not karn_bad and rtt < 0:
                rtt = (t - seg_t0[cand]) / 1e9
            if rtt < 0 and (f & P_HAS_TS) != 0 and ntsv > 0:
                te = _unwrap(np.int64(tsecr[p]), tsv_ref_raw, tsv_ref_val)
                jt = np.searchsorted(tsv_v[:ntsv], te)
                if jt < ntsv and tsv_v[jt] == te:
                    rtt = (t - tsv_t[jt]) / 1e9
            if rtt <= 0:
                rtt = -1.0
            snd_una = a
            if nsb > 0:  # a call with array arguments costs reference counting: skip it when empty
                nsb = _sb_prune(sb_l, sb_r, nsb, a)
            dup_since_adv = 0
            last_adv_t = t
            if ep_open and a >= E_i[EI_RECOVER, ep_row]:
                E_i[EI_END, ep_row] = t
                ep_open = False
        elif dup:
            dup_since_adv += 1
            n_dup += 1
        if rtt > 0:
            if srtt < 0:
                srtt = rtt
            else:
                srtt = 0.875 * srtt + 0.125 * rtt
            if rttmin < 0 or rtt < rttmin:
                rttmin = rtt
        sacked = 0
        for b in range(nsb):
            lo_b = max(sb_l[b], a)
            hi_b = min(sb_r[b], snd_max)
            if hi_b > lo_b:
                sacked += hi_b - lo_b
        flight = snd_max - a - sacked
        if flight < 0:
            flight = 0
        last_win = np.int64(win[p])
        rcv_win_zero = win[p] == 0
        last_ack_t = t
        last_ack_row_t = t
        A_i[AI_FLOW, na] = flow
        A_i[AI_T, na] = t
        A_i[AI_ACKED, na] = acked
        A_i[AI_DUP, na] = 1 if dup else 0
        A_i[AI_D, na] = dlv
        A_i[AI_FLIGHT, na] = flight
        A_i[AI_TSVAL, na] = np.int64(tsval[p]) if (f & P_HAS_TS) != 0 else -1
        A_i[AI_ACK, na] = a
        A_i[AI_WIN, na] = win[p]
        A_i[AI_SACKED, na] = sacked
        A_i[AI_TSECR, na] = np.int64(tsecr[p]) if (f & P_HAS_TS) != 0 else -1
        A_i[AI_SACK_LO, na] = blk_lo
        A_i[AI_SACK_HI, na] = blk_hi
        A_i[AI_RWND, na] = np.int64(win[p]) << rwnd_shift if rwnd_shift >= 0 else -1
        A_f[AF_RTT, na] = rtt if rtt > 0 else np.nan
        A_f[AF_SRTT, na] = srtt if srtt > 0 else np.nan
        A_f[AF_RTTMIN, na] = rttmin if rttmin > 0 else np.nan
        A_f[AF_T, na] = t / 1e9
        A_f[AF_TREL, na] = (t - t_first) / 1e9
        if n_rows == 0:
            first_ack = a
        na += 1
        n_rows += 1
    M[M_MSS] = mss
    M[M_MSS_SRC] = mss_src
    M[M_T_FIRST] = t_first
    M[M_RWND_SHIFT] = rwnd_shift
    M[M_S_REF_RAW] = s_ref_raw
    M[M_S_REF_VAL] = s_ref_val
    M[M_UNA_KNOWN] = 1 if una_known else 0
    M[M_SND_UNA] = snd_una
    M[M_MAX_KNOWN] = 1 if max_known else 0
    M[M_SND_MAX] = snd_max
    M[M_FIN_REL] = fin_rel
    M[M_NSEG] = nseg
    M[M_UNA_PTR] = una_ptr
    M[M_NTSV] = ntsv
    M[M_TSV_REF_RAW] = tsv_ref_raw
    M[M_TSV_REF_VAL] = tsv_ref_val
    M[M_TSV_FOUND] = 1 if tsv_found else 0
    M[M_NSB] = nsb
    M[M_ACCOUNTED] = accounted
    M[M_LAST_WIN] = last_win
    M[M_RCV_WIN_ZERO] = 1 if rcv_win_zero else 0
    M[M_DUP_SINCE_ADV] = dup_since_adv
    M[M_LAST_ACK_T] = last_ack_t
    M[M_LAST_ADV_T] = last_adv_t
    M[M_N_ROWS] = n_rows
    M[M_N_DUP] = n_dup
    M[M_N_RETX] = n_retx
    M[M_N_KEEP] = n_keep
    M[M_N_ZWP] = n_zwp
    M[M_N_FR] = n_fr
    M[M_N_TO] = n_to
    M[M_N_DSACK] = n_dsack
    M[M_SYN_T] = syn_t
    M[M_SYNACK_T] = synack_t
    M[M_HSACK_T] = hsack_t
    M[M_SYN_COUNT] = syn_count
    M[M_SYNACK_COUNT] = synack_count
    M[M_SENDER_CLIENT] = 1 if sender_client else 0
    M[M_FIRST_DATA_T] = first_data_t
    M[M_LAST_ACK_ROW_T] = last_ack_row_t
    M[M_EP_OPEN] = 1 if ep_open else 0
    M[M_EP_ROW] = ep_row
    M[M_LAST_EP_ROW] = last_ep_row
    M[M_ACK_LO] = ack_lo
    M[M_SEG_LO] = seg_lo
    M[M_EP_LO] = ep_lo
    M[M_N_SEGS] = n_segs
    M[M_FIRST_ACK] = first_ack
    M[M_FIRST_SEQ] = first_seq
    MF[MF_SRTT] = srtt
    MF[MF_RTTMIN] = rttmin
    MF[MF_RTT_HS] = rtt_hs
    return na, ns, ne, sb_l, sb_r


@njit(cache=True)
def flow_finish(flow: int, d: int, ne: int, P: np.ndarray, M: np.ndarray, MF: np.ndarray, F_i: np.ndarray,
                F_f: np.ndarray) -> None:
    """Fill ``F_i``/``F_f[flow]`` once every packet of the direction went through the main pass."""
    syn_seen = P[PS_SYN_SEEN] != 0
    syn_ws = P[PS_SYN_WS_S] != 0 and P[PS_SYN_WS_R] != 0
    F_i[flow, FI_CONN] = -1
    F_i[flow, FI_DIR] = d
    F_i[flow, FI_NACKS] = M[M_N_ROWS]
    F_i[flow, FI_NDUP] = M[M_N_DUP]
    F_i[flow, FI_NRETX] = M[M_N_RETX]
    F_i[flow, FI_NEPS] = ne - M[M_EP_LO]
    F_i[flow, FI_NFR] = M[M_N_FR]
    F_i[flow, FI_NTO] = M[M_N_TO]
    F_i[flow, FI_NKEEP] = M[M_N_KEEP]
    F_i[flow, FI_NZWP] = M[M_N_ZWP]
    F_i[flow, FI_NSEGS] = M[M_N_SEGS]
    F_i[flow, FI_FIRST_DATA] = M[M_FIRST_DATA_T]
    F_i[flow, FI_LAST_ACK] = M[M_LAST_ACK_ROW_T]
    F_i[flow, FI_BYTES_ACKED] = M[M_SND_UNA] - (0 if syn_seen else M[M_FIRST_ACK] if M[M_N_ROWS] > 0 else 0)
    F_i[flow, FI_BYTES_SENT] = M[M_SND_MAX] - (0 if syn_seen else (M[M_FIRST_SEQ] if M[M_N_SEGS] > 0 else 0))
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
    F_i[flow, FI_OPT_TRUNC] = P[PS_OPT_TRUNC]
    F_i[flow, FI_SYN_MSS_S] = P[PS_SYN_MSS_S]
    F_i[flow, FI_SYN_MSS_R] = P[PS_SYN_MSS_R]
    F_i[flow, FI_RCV_WSHIFT] = (min(P[PS_WS_SHIFT_R], 14) if syn_ws else 0) if syn_seen else -1
    F_f[flow, FF_SRTT] = MF[MF_SRTT] if MF[MF_SRTT] > 0 else np.nan
    F_f[flow, FF_RTTMIN] = MF[MF_RTTMIN] if MF[MF_RTTMIN] > 0 else np.nan
    F_f[flow, FF_RTT_HS] = MF[MF_RTT_HS] if MF[MF_RTT_HS] > 0 else np.nan


@njit(cache=True)
def analyze_flow(
    lo: int, hi: int, d: int, flow: int, order: np.ndarray,
    ts: np.ndarray, dirs: np.ndarray, seq: np.ndarray, ack: np.ndarray, flags: np.ndarray,
    win: np.ndarray, plen: np.ndarray, tsval: np.ndarray, tsecr: np.ndarray, opt_idx: np.ndarray,
    opt_tab: np.ndarray,
    seg_s: np.ndarray, seg_e: np.ndarray, seg_t0: np.ndarray, seg_t1: np.ndarray, seg_rx: np.ndarray,
    seg_ep: np.ndarray, tsv_v: np.ndarray, tsv_t: np.ndarray, scratch: np.ndarray,
    sb_l: np.ndarray, sb_r: np.ndarray,
    A_i: np.ndarray, A_f: np.ndarray, na: int, S_i: np.ndarray, S_f: np.ndarray, ns: int, E_i: np.ndarray,
    ne: int, F_i: np.ndarray, F_f: np.ndarray,
) -> tuple[int, int, int]:
    """Analyse direction ``d`` of the connection in rows lo..hi-1 in one go; append rows; fill F_i/F_f[flow]."""
    P, M, MF = flow_state()
    flow_prepass(lo, hi, d, order, ts, dirs, seq, ack, flags, plen, opt_idx, opt_tab, scratch, P)
    if not flow_start(P, scratch, M, na, ns, ne):
        return na, ns, ne
    na, ns, ne, sb_l, sb_r = flow_main(lo, hi, d, flow, order, ts, dirs, seq, ack, flags, win, plen, tsval, tsecr,
                                       opt_idx, opt_tab, seg_s, seg_e, seg_t0, seg_t1, seg_rx, seg_ep, tsv_v,
                                       tsv_t, sb_l, sb_r, A_i, A_f, na, S_i, S_f, ns, E_i, ne, M, MF)
    flow_finish(flow, d, ne, P, M, MF, F_i, F_f)
    return na, ns, ne


@njit(cache=True, nogil=True)
def analyze_all(
    bounds: np.ndarray, order: np.ndarray,
    ts: np.ndarray, dirs: np.ndarray, seq: np.ndarray, ack: np.ndarray, flags: np.ndarray,
    win: np.ndarray, plen: np.ndarray, tsval: np.ndarray, tsecr: np.ndarray, opt_idx: np.ndarray,
    opt_tab: np.ndarray,
    A_i: np.ndarray, A_f: np.ndarray, S_i: np.ndarray, S_f: np.ndarray, E_i: np.ndarray, F_i: np.ndarray,
    F_f: np.ndarray, state: np.ndarray, c_end: int, conn_base: int, stats: np.ndarray,
    seg_s: np.ndarray, seg_e: np.ndarray, seg_t0: np.ndarray, seg_t1: np.ndarray, seg_rx: np.ndarray,
    seg_ep: np.ndarray, tsv_v: np.ndarray, tsv_t: np.ndarray, scratch: np.ndarray,
) -> int:
    """Analyse both directions of connections ``state[0]`` to ``c_end - 1``.

    ``order[bounds[c]:bounds[c + 1]]`` are the packets of connection ``c`` in capture order; ``F_i``
    records it as connection ``conn_base + c``. Outputs are column-major (``A_i[AI_T, row]``) so that
    every column is one contiguous array.

    ``stats`` holds the connections' ``demux.conn_stats`` rows: a direction that carried no payload is
    not a flow and is not analysed. The per-flow working arrays ``seg_*`` (segments sent) and ``tsv_*``
    (TSvals) need one entry per data segment of the largest connection and one more; ``scratch`` holds the
    payload-size histogram (:func:`work_arrays` makes them all).

    ``state`` holds (next connection, ack rows, segment rows, episode rows, flows): the rows and flow
    numbers to write next. Returns the next connection to analyse: ``c_end`` when done, earlier when
    the episode table ``E_i`` might overflow (the caller grows it and calls again). Releases the GIL,
    so that disjoint connection ranges (their row offsets from ``analyze.output_rows``) run in threads.
    """
    sb_l = np.empty(SB_CAP + 1, np.int64)
    sb_r = np.empty(SB_CAP + 1, np.int64)
    c0, na, ns, ne, nf = state[0], state[1], state[2], state[3], state[4]
    for c in range(c0, c_end):
        lo = bounds[c]
        hi = bounds[c + 1]
        if ne + (hi - lo) > E_i.shape[1]:  # at most one episode per packet of the connection
            state[0], state[1], state[2], state[3], state[4] = c, na, ns, ne, nf
            return c
        for d in range(2):
            if stats[c, CS_PAYLOAD0 + d] == 0:  # no payload: analyze_flow would find none and write nothing
                continue
            na2, ns2, ne2 = analyze_flow(
                lo, hi, d, nf, order, ts, dirs, seq, ack, flags, win, plen, tsval, tsecr, opt_idx, opt_tab,
                seg_s, seg_e, seg_t0, seg_t1, seg_rx, seg_ep, tsv_v,
                tsv_t, scratch, sb_l, sb_r, A_i, A_f, na, S_i, S_f, ns, E_i, ne, F_i, F_f,
            )
            if ns2 > ns:  # the direction carried payload: it is a flow
                F_i[nf, FI_CONN] = conn_base + c
                nf += 1
            na, ns, ne = na2, ns2, ne2
    state[0], state[1], state[2], state[3], state[4] = c_end, na, ns, ne, nf
    return c_end


#: The per-flow working arrays of :func:`analyze_all`: name and dtype (one entry per data segment).
WORK_ARRAYS = (("seg_s", np.int64), ("seg_e", np.int64), ("seg_t0", np.int64), ("seg_t1", np.int64),
               ("seg_rx", np.int8), ("seg_ep", np.int64), ("tsv_v", np.int64), ("tsv_t", np.int64))
#: Length of the pre-pass's ``scratch`` (int64, zeros): the payload-size histogram and the list of its bins in use.
SCRATCH_SIZE = 2 * SIZE_BINS


def work_arrays(stats: np.ndarray) -> list[np.ndarray]:
    """The working arrays (:data:`WORK_ARRAYS`, one entry per data segment of the largest connection and one
    more; in their own mappings, so that pages are mapped in as used) and the scratch, for connections with
    ``stats`` rows."""
    rows = int(stats[:, CS_SEGMENTS].max(initial=0)) + 1
    return [*(lazy(rows, dt) for _, dt in WORK_ARRAYS), np.zeros(SCRATCH_SIZE, np.int64)]
