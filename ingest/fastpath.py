"""The compiled per-packet path: decode, demultiplex, then order packets by connection.

``decode_span`` decodes a span of records (``decode.decode_one``, the function the dpkt equivalence
tests check) into the compact columns the flow analysis reads — 45 bytes a TCP packet; nothing of the
payload survives the chunk — and each packet's endpoint pair into a per-batch scratch table;
``demux_rows`` then assigns connections and directions in capture order (see ``ingest.demux``).
Spans are independent, so ``ingest.columnize`` decodes two at once; ``close_gap`` joins their rows.

* 32-bit fields stay 32-bit (``seq``, ``ack``, ``tsval``, ``tsecr``); whether the packet carried the
  timestamps option, and whether its options were cut by the snaplen, are bits of ``flags`` above the
  nine TCP flag bits (``P_HAS_TS``, ``P_OPT_TRUNC``);
* ``frame`` is the packet's frame number in its file (Wireshark's ``frame.number``: 1-based, every packet
  record counted, TCP or not), to go back from a row of the tables to the packet;
* the rare options — MSS, window scale, SACK-permitted (SYNs) and SACK blocks — go to a side table of
  ``OPT_NCOL`` int64 columns, referenced by ``opt_idx`` (-1: none).

``order_by_connection`` is a stable counting sort: packets of one connection stay in capture order,
and no column is copied.
"""

from __future__ import annotations

import numpy as np

from ackreplay.ingest.decode import (
    ACK,
    C_ACK,
    C_DPORT,
    C_DST_HI,
    C_DST_LO,
    C_FLAGS,
    C_MSS,
    C_NSACK,
    C_PLEN,
    C_SACK0,
    C_SACKOK,
    C_SEQ,
    C_SPORT,
    C_SRC_HI,
    C_SRC_LO,
    C_TRUNC,
    C_TSECR,
    C_TSVAL,
    C_WIN,
    C_WSCALE,
    FIN,
    RST,
    SYN,
    decode_one,
)
from ackreplay.ingest.demux import (
    CLOSED_FIN0,
    CLOSED_RST,
    CS_ACKS0,
    CS_PACKETS,
    CS_PAYLOAD0,
    CS_SEGMENTS,
    IDLE_NEW_CONNECTION_NS,
    SYN_ANSWERED,
    SYN_NONE,
    SYN_SEEN,
    mix_key,
)
from ackreplay.jitcache.kernel_mode import njit

#: (name, dtype) of the compact per-packet columns (``PacketStore.cols`` holds them in this order).
PACKET_COLUMNS = (
    ("ts", np.int64), ("conn", np.int32), ("dir", np.int8), ("seq", np.uint32), ("ack", np.uint32),
    ("flags", np.int16), ("win", np.uint16), ("plen", np.int32), ("tsval", np.uint32), ("tsecr", np.uint32),
    ("opt_idx", np.int32), ("frame", np.uint32),
)
#: ``flags`` bits above the TCP flags: the timestamps option was present; the options were cut short.
P_HAS_TS = 0x200
P_OPT_TRUNC = 0x400
#: Columns of the options side table: MSS (-1 absent), window scale (-1 absent), SACK-permitted,
#: number of SACK blocks, then the blocks' left and right edges.
O_MSS, O_WSCALE, O_SACKOK, O_NSACK, O_SACK0 = range(5)
OPT_NCOL = O_SACK0 + 8


#: The per-packet kernels' decorator: cached, releasing the GIL, and compiled without numba's reference-
#: counting runtime (``_nrt=False``, numba's own switch, used by its test suite). These kernels allocate
#: nothing (the caller passes every array, the decoder's ``row`` included); with the runtime, every
#: inlined helper taking an array (``decode.decode_one``, ``_be32``, …) costs an incref/decref pair — a
#: function call and an atomic operation — per packet, which the reference-count pruner does not remove
#: across the decoder's many exits: 39 against 12 ns a packet for the decode alone. An allocation
#: added to such a kernel fails to compile ("Only accept returning of array passed into the function").
kernel = njit(cache=True, nogil=True, _nrt=False)

#: Columns of the per-batch scratch table the decode leaves for the demultiplexer (``SCRATCH_NCOL``
#: int64 a row): the endpoint pair in canonical order (address halves and ports), its hash key, and
#: which side of the pair sent the packet.
T_A_HI, T_A_LO, T_A_P, T_B_HI, T_B_LO, T_B_P, T_KEY, T_SIDE = range(8)
SCRATCH_NCOL = 8


@njit(cache=True, nogil=True, inline="always")
def _endpoint_pair(row: np.ndarray, scratch: np.ndarray, t: int) -> None:
    """The decoded packet's endpoint pair in canonical order, compared as unsigned (hi, lo, port), its hash key,
    and which side sent it, into ``scratch[t]``."""
    a_hi = row[C_SRC_HI]
    a_lo = row[C_SRC_LO]
    a_p = row[C_SPORT]
    b_hi = row[C_DST_HI]
    b_lo = row[C_DST_LO]
    b_p = row[C_DPORT]
    side = 0
    ua_hi = np.uint64(a_hi)
    ub_hi = np.uint64(b_hi)
    ua_lo = np.uint64(a_lo)
    ub_lo = np.uint64(b_lo)
    if ua_hi > ub_hi or (ua_hi == ub_hi and (ua_lo > ub_lo or (ua_lo == ub_lo and a_p > b_p))):
        a_hi, b_hi = b_hi, a_hi
        a_lo, b_lo = b_lo, a_lo
        a_p, b_p = b_p, a_p
        side = 1
    h = np.uint64(0x12345)
    h = mix_key(h, a_hi)
    h = mix_key(h, a_lo)
    h = mix_key(h, b_hi)
    h = mix_key(h, b_lo)
    h = mix_key(h, (a_p << 16) | b_p)
    scratch[t, T_A_HI] = a_hi
    scratch[t, T_A_LO] = a_lo
    scratch[t, T_A_P] = a_p
    scratch[t, T_B_HI] = b_hi
    scratch[t, T_B_LO] = b_lo
    scratch[t, T_B_P] = b_p
    scratch[t, T_KEY] = np.int64(h >> np.uint64(1))
    scratch[t, T_SIDE] = side


@kernel
def decode_span(
    buf: np.ndarray, offset: np.ndarray, caplen: np.ndarray, origlen: np.ndarray, ts_ns: np.ndarray,
    linktype: np.ndarray, lo: int, hi: int, m: int, t0: int, nopt: int, reasons: np.ndarray, frame0: int,
    o_ts: np.ndarray, o_seq: np.ndarray, o_ack: np.ndarray, o_flags: np.ndarray, o_win: np.ndarray,
    o_plen: np.ndarray, o_tsval: np.ndarray, o_tsecr: np.ndarray, o_opt_idx: np.ndarray, o_frame: np.ndarray,
    o_opt: np.ndarray, scratch: np.ndarray, row: np.ndarray,
) -> tuple[int, int]:
    """Decode records ``lo..hi-1`` into rows ``m..`` of the columns, and each row's endpoint pair into
    ``scratch[row - t0]``; return (rows end, option rows end). ``row`` is the decoder's work array
    (``decode.NCOL`` int64), one per thread; ``frame0`` the packet records of the file before record 0
    (record ``i`` is frame ``frame0 + i + 1``).

    Everything but the connection and direction: those need the capture-order state of
    :func:`demux_rows`. Disjoint record spans with disjoint output rows may run in parallel.
    """
    for i in range(lo, hi):
        r = decode_one(buf, offset[i], caplen[i], origlen[i], linktype[i], row)
        if r >= 0:
            reasons[r] += 1
            continue
        _endpoint_pair(row, scratch, m - t0)
        # ---- the compact columns
        o_ts[m] = ts_ns[i]
        o_frame[m] = frame0 + i + 1
        o_seq[m] = row[C_SEQ]
        o_ack[m] = row[C_ACK]
        o_win[m] = row[C_WIN]
        o_plen[m] = row[C_PLEN]
        pflags = row[C_FLAGS]
        if row[C_TSVAL] >= 0:
            pflags |= P_HAS_TS
            o_tsval[m] = row[C_TSVAL]
            o_tsecr[m] = row[C_TSECR]
        else:
            o_tsval[m] = 0
            o_tsecr[m] = 0
        if row[C_TRUNC] != 0:
            pflags |= P_OPT_TRUNC
        o_flags[m] = pflags
        if row[C_MSS] >= 0 or row[C_WSCALE] >= 0 or row[C_SACKOK] != 0 or row[C_NSACK] > 0:
            o_opt[nopt, O_MSS] = row[C_MSS]
            o_opt[nopt, O_WSCALE] = row[C_WSCALE]
            o_opt[nopt, O_SACKOK] = row[C_SACKOK]
            o_opt[nopt, O_NSACK] = row[C_NSACK]
            for k in range(8):
                o_opt[nopt, O_SACK0 + k] = row[C_SACK0 + k]
            o_opt_idx[m] = nopt
            nopt += 1
        else:
            o_opt_idx[m] = -1
        m += 1
    return m, nopt


@kernel
def close_gap(
    src: int, dst: int, rows: int, t0: int, opt_src: int, opt_dst: int, opt_rows: int,
    o_ts: np.ndarray, o_seq: np.ndarray, o_ack: np.ndarray, o_flags: np.ndarray, o_win: np.ndarray,
    o_plen: np.ndarray, o_tsval: np.ndarray, o_tsecr: np.ndarray, o_opt_idx: np.ndarray, o_frame: np.ndarray,
    o_opt: np.ndarray, scratch: np.ndarray,
) -> None:
    """Move the rows ``src..src+rows-1`` a later span decoded down to ``dst`` (and its option rows from
    ``opt_src`` to ``opt_dst``, re-pointing ``opt_idx``): the spans become one contiguous run."""
    shift = opt_src - opt_dst
    if src == dst:  # no gap between the rows: only the option rows move
        for k in range(src, src + rows):
            if o_opt_idx[k] >= 0:
                o_opt_idx[k] -= shift
        rows = 0
    for k in range(rows):
        a = src + k
        b = dst + k
        o_ts[b] = o_ts[a]
        o_seq[b] = o_seq[a]
        o_ack[b] = o_ack[a]
        o_flags[b] = o_flags[a]
        o_win[b] = o_win[a]
        o_plen[b] = o_plen[a]
        o_tsval[b] = o_tsval[a]
        o_tsecr[b] = o_tsecr[a]
        o_opt_idx[b] = o_opt_idx[a] - shift if o_opt_idx[a] >= 0 else -1
        o_frame[b] = o_frame[a]
        for j in range(SCRATCH_NCOL):
            scratch[b - t0, j] = scratch[a - t0, j]
    for k in range(opt_rows):
        for j in range(OPT_NCOL):
            o_opt[opt_dst + k, j] = o_opt[opt_src + k, j]


@njit(cache=True, nogil=True, inline="always")
def _find_slot(scratch: np.ndarray, t: int, ht_keys: np.ndarray, ht_vals: np.ndarray,
               slot_key: np.ndarray) -> tuple[int, int]:
    """The endpoint pair of ``scratch[t]`` looked up in the open-addressing table: (its table index — where to
    insert it when it is new —, its slot or -1)."""
    mask = len(ht_keys) - 1
    key = scratch[t, T_KEY]
    idx = key & mask
    while ht_keys[idx] != -1:
        if ht_keys[idx] == key:
            s = ht_vals[idx]
            if (
                slot_key[s, 0] == scratch[t, T_A_HI] and slot_key[s, 1] == scratch[t, T_A_LO]
                and slot_key[s, 2] == scratch[t, T_A_P] and slot_key[s, 3] == scratch[t, T_B_HI]
                and slot_key[s, 4] == scratch[t, T_B_LO] and slot_key[s, 5] == scratch[t, T_B_P]
            ):
                return idx, s
        idx = (idx + 1) & mask
    return idx, -1


@njit(cache=True, nogil=True, inline="always")
def _count(conn_stats: np.ndarray, c: int, d: int, flags: int, plen: int) -> None:
    """A packet of connection ``c``, direction ``d``, into its ``demux.CS_*`` counts. An RST's payload is not data
    (``tcpflow`` does not analyse it as a data segment: it is a diagnostic text, RFC 9293 §3.5.3); a SYN's is (TCP
    Fast Open, RFC 7413)."""
    conn_stats[c, CS_PACKETS] += 1
    if plen > 0 and (flags & RST) == 0:
        conn_stats[c, CS_SEGMENTS] += 1
        conn_stats[c, CS_PAYLOAD0 + d] = 1
    if (flags & ACK) != 0 and (flags & (SYN | RST)) == 0:
        conn_stats[c, CS_ACKS0 + d] += 1


@njit(cache=True, nogil=True, inline="always")
def _over(ts: int, slot: int, slot_closed: np.ndarray, slot_last: np.ndarray) -> bool:
    """Whether ``slot``'s current connection is over at ``ts``: reset, closed by both sides, or idle for
    ``IDLE_NEW_CONNECTION_NS``."""
    closed = slot_closed[slot]
    return ((closed & CLOSED_RST) != 0 or (closed & 3 * CLOSED_FIN0) == 3 * CLOSED_FIN0
            or ts - slot_last[slot] >= IDLE_NEW_CONNECTION_NS)


@njit(cache=True, nogil=True, inline="always")
def _reopens(seq: int | np.int64, ts: int, slot: int, slot_isn: np.ndarray, slot_syn: np.ndarray,
             slot_closed: np.ndarray, slot_last: np.ndarray) -> bool:
    """Whether a SYN (without ACK) of sequence number ``seq`` at ``ts`` starts a new connection on ``slot``'s
    endpoint pair (``ingest.demux``): no SYN opened the current one — nor a SYN-ACK answering this one —, its ISN
    differs, or — the same ISN — the current one is over."""
    if slot_syn[slot] == SYN_NONE or slot_isn[slot] != seq:
        return True
    return _over(ts, slot, slot_closed, slot_last)


@njit(cache=True, nogil=True, inline="always")
def _synack_reopens(ack: int | np.int64, ts: int, slot: int, slot_isn: np.ndarray, slot_syn: np.ndarray,
                    slot_closed: np.ndarray, slot_last: np.ndarray) -> bool:
    """Whether a SYN-ACK acknowledging ``ack`` at ``ts`` starts a new connection on ``slot``'s endpoint pair: the
    current one is over and the SYN-ACK does not answer its SYN (``ack`` is not its ISN + 1) — a SYN the capture
    missed opened the next connection (``ingest.demux``)."""
    if slot_syn[slot] != SYN_NONE and ((slot_isn[slot] + 1) & 0xFFFFFFFF) == ack:
        return False
    return _over(ts, slot, slot_closed, slot_last)


@kernel
def demux_rows(
    lo: int, hi: int, t0: int, scratch: np.ndarray, o_ts: np.ndarray, o_flags: np.ndarray, o_seq: np.ndarray,
    o_ack: np.ndarray, ht_keys: np.ndarray, ht_vals: np.ndarray, slot_key: np.ndarray, slot_conn: np.ndarray,
    slot_isn: np.ndarray, slot_syn: np.ndarray, slot_closed: np.ndarray, slot_last: np.ndarray,
    counts: np.ndarray, conn_slot: np.ndarray, conn_src_side: np.ndarray, conn_stats: np.ndarray,
    o_plen: np.ndarray, o_conn: np.ndarray, o_dir: np.ndarray,
) -> int:
    """Assign rows ``lo..hi-1``, in capture order, their connection and direction (see ``ingest.demux``)
    from the endpoint pairs :func:`decode_span` left in ``scratch``, and count them in ``conn_stats``
    (``demux.CS_*``); return the row reached.

    Returns early (before ``hi``) when the connection tables are full: the caller grows them and calls
    again from there.
    """
    for m in range(lo, hi):
        t = m - t0
        side = scratch[t, T_SIDE]
        idx, slot = _find_slot(scratch, t, ht_keys, ht_vals, slot_key)
        flags = o_flags[m]
        seq = np.int64(o_seq[m])
        ts = o_ts[m]
        is_syn = (flags & SYN) != 0 and (flags & ACK) == 0
        is_synack = (flags & (SYN | ACK)) == (SYN | ACK)
        ack = np.int64(o_ack[m])
        new_conn = False
        n_slots = counts[0]
        n_conns = counts[1]
        if slot < 0:
            if n_slots >= len(slot_conn) or n_conns >= len(conn_slot) or 2 * (n_slots + 1) > len(ht_keys):
                return m  # tables full: the caller grows them and calls again
            slot = n_slots
            counts[0] = n_slots + 1
            ht_keys[idx] = scratch[t, T_KEY]
            ht_vals[idx] = slot
            for j in range(6):  # (T_A_HI .. T_B_P)
                slot_key[slot, j] = scratch[t, T_A_HI + j]
            new_conn = True
        elif ((is_syn and _reopens(seq, ts, slot, slot_isn, slot_syn, slot_closed, slot_last))
              or (is_synack and _synack_reopens(ack, ts, slot, slot_isn, slot_syn, slot_closed, slot_last))):
            if n_conns >= len(conn_slot):
                return m
            new_conn = True
        if new_conn:
            c = n_conns
            counts[1] = n_conns + 1
            slot_conn[slot] = c
            conn_slot[c] = slot
            conn_src_side[c] = side
            slot_syn[slot] = SYN_NONE
            slot_closed[slot] = 0
        c = slot_conn[slot]
        if is_syn and slot_syn[slot] != SYN_SEEN:
            if slot_syn[slot] == SYN_NONE:  # (a SYN its SYN-ACK came before keeps the directions already given)
                conn_src_side[c] = side
            slot_syn[slot] = SYN_SEEN
            slot_isn[slot] = seq
        elif is_synack and slot_syn[slot] == SYN_NONE:  # the SYN it answers: ISN = its ACK − 1
            slot_syn[slot] = SYN_ANSWERED
            slot_isn[slot] = (ack - 1) & 0xFFFFFFFF
        if (flags & RST) != 0:
            slot_closed[slot] |= CLOSED_RST
        elif (flags & FIN) != 0:
            slot_closed[slot] |= CLOSED_FIN0 << side
        if ts > slot_last[slot] or new_conn:
            slot_last[slot] = ts
        d = 0 if side == conn_src_side[c] else 1
        o_conn[m] = c
        o_dir[m] = d
        _count(conn_stats, c, d, flags, o_plen[m])
    return hi


@njit(cache=True)
def order_by_connection(conn: np.ndarray, bounds: np.ndarray, order: np.ndarray) -> None:
    """Stable counting sort into ``order`` (packet indices grouped by connection), given the bounds."""
    fill = bounds[:-1].copy()
    for i in range(len(conn)):
        c = conn[i]
        order[fill[c]] = i
        fill[c] += 1
