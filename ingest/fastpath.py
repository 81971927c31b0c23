"""The compiled per-packet path: decode and demultiplex in one pass, then order packets by connection.

``decode_demux`` decodes each record (``decode._decode_one``, the function the dpkt equivalence tests
check), assigns its connection and direction (see ``ingest.demux``) and keeps only the compact
columns the flow analysis reads — 41 bytes a TCP packet; nothing of the payload survives the chunk:

* 32-bit fields stay 32-bit (``seq``, ``ack``, ``tsval``, ``tsecr``); whether the packet carried the
  timestamps option, and whether its options were cut by the snaplen, are bits of ``flags`` above the
  nine TCP flag bits (``P_HAS_TS``, ``P_OPT_TRUNC``);
* the rare options — MSS, window scale, SACK-permitted (SYNs) and SACK blocks — go to a side table of
  ``OPT_NCOL`` int64 columns, referenced by ``opt_idx`` (-1: none).

``order_by_connection`` is a stable counting sort: packets of one connection stay in capture order,
and no column is copied.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ingest.decode import (
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
    NCOL,
    SYN,
    _decode_one,
)
from ingest.demux import _mix

#: (name, dtype) of the compact per-packet columns, in ``decode_demux``'s argument order.
PACKET_COLUMNS = (
    ("ts", np.int64), ("conn", np.int32), ("dir", np.int8), ("seq", np.uint32), ("ack", np.uint32),
    ("flags", np.int16), ("win", np.uint16), ("plen", np.int32), ("tsval", np.uint32), ("tsecr", np.uint32),
    ("opt_idx", np.int32),
)
#: ``flags`` bits above the TCP flags: the timestamps option was present; the options were cut short.
P_HAS_TS = 0x200
P_OPT_TRUNC = 0x400
#: Columns of the options side table: MSS (-1 absent), window scale (-1 absent), SACK-permitted,
#: number of SACK blocks, then the blocks' left and right edges.
O_MSS, O_WSCALE, O_SACKOK, O_NSACK, O_SACK0 = range(5)
OPT_NCOL = O_SACK0 + 8


@njit(cache=True, nogil=True)
def decode_demux(
    buf: np.ndarray, offset: np.ndarray, caplen: np.ndarray, origlen: np.ndarray, ts_ns: np.ndarray,
    linktype: np.ndarray, start: int, m: int, nopt: int, reasons: np.ndarray,
    ht_keys: np.ndarray, ht_vals: np.ndarray, slot_key: np.ndarray, slot_conn: np.ndarray,
    slot_isn: np.ndarray, slot_syn: np.ndarray,
    counts: np.ndarray, conn_slot: np.ndarray, conn_src_side: np.ndarray,
    o_ts: np.ndarray, o_conn: np.ndarray, o_dir: np.ndarray, o_seq: np.ndarray, o_ack: np.ndarray,
    o_flags: np.ndarray, o_win: np.ndarray, o_plen: np.ndarray, o_tsval: np.ndarray, o_tsecr: np.ndarray,
    o_opt_idx: np.ndarray, o_opt: np.ndarray,
) -> tuple[int, int, int]:
    """Decode records ``start..`` into row ``m..`` of the columns; return (next record, rows, option rows).

    Returns early (next record < number of records) when the connection tables are full.
    """
    row = np.empty(NCOL, np.int64)
    for i in range(start, len(offset)):
        r = _decode_one(buf, offset[i], caplen[i], origlen[i], linktype[i], row)
        if r >= 0:
            reasons[r] += 1
            continue
        # ---- connection and direction (see ingest.demux)
        a_hi = row[C_SRC_HI]
        a_lo = row[C_SRC_LO]
        a_p = row[C_SPORT]
        b_hi = row[C_DST_HI]
        b_lo = row[C_DST_LO]
        b_p = row[C_DPORT]
        side = 0
        # canonical order: compare (hi, lo, port) as unsigned
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
        h = _mix(h, a_hi)
        h = _mix(h, a_lo)
        h = _mix(h, b_hi)
        h = _mix(h, b_lo)
        h = _mix(h, (a_p << 16) | b_p)
        key = np.int64(h >> np.uint64(1))
        mask = len(ht_keys) - 1
        idx = key & mask
        slot = -1
        while ht_keys[idx] != -1:
            if ht_keys[idx] == key:
                s = ht_vals[idx]
                if (
                    slot_key[s, 0] == a_hi and slot_key[s, 1] == a_lo and slot_key[s, 2] == a_p
                    and slot_key[s, 3] == b_hi and slot_key[s, 4] == b_lo and slot_key[s, 5] == b_p
                ):
                    slot = s
                    break
            idx = (idx + 1) & mask
        flags = row[C_FLAGS]
        is_syn = (flags & SYN) != 0 and (flags & ACK) == 0
        new_conn = False
        n_slots = counts[0]
        n_conns = counts[1]
        if slot < 0:
            if n_slots >= len(slot_conn) or n_conns >= len(conn_slot) or 2 * (n_slots + 1) > len(ht_keys):
                return i, m, nopt  # tables full: the caller grows them and calls again
            slot = n_slots
            counts[0] = n_slots + 1
            ht_keys[idx] = key
            ht_vals[idx] = slot
            slot_key[slot, 0] = a_hi
            slot_key[slot, 1] = a_lo
            slot_key[slot, 2] = a_p
            slot_key[slot, 3] = b_hi
            slot_key[slot, 4] = b_lo
            slot_key[slot, 5] = b_p
            slot_syn[slot] = 0
            new_conn = True
        elif is_syn and (slot_syn[slot] == 0 or slot_isn[slot] != row[C_SEQ]):
            if n_conns >= len(conn_slot):
                return i, m, nopt
            new_conn = True
        if new_conn:
            c = n_conns
            counts[1] = n_conns + 1
            slot_conn[slot] = c
            conn_slot[c] = slot
            conn_src_side[c] = side
            slot_syn[slot] = 0
        c = slot_conn[slot]
        if is_syn and slot_syn[slot] == 0:
            slot_syn[slot] = 1
            slot_isn[slot] = row[C_SEQ]
            conn_src_side[c] = side
        d = 0 if side == conn_src_side[c] else 1
        o_ts[m] = ts_ns[i]
        o_conn[m] = c
        o_dir[m] = d
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
    return len(offset), m, nopt


@njit(cache=True)
def order_by_connection(conn: np.ndarray, n_conns: int, order: np.ndarray) -> np.ndarray:
    """Stable counting sort into ``order`` (packet indices grouped by connection); return the bounds."""
    bounds = np.zeros(n_conns + 1, np.int64)
    for i in range(len(conn)):
        bounds[conn[i] + 1] += 1
    for c in range(n_conns):
        bounds[c + 1] += bounds[c]
    fill = bounds[:-1].copy()
    for i in range(len(conn)):
        c = conn[i]
        order[fill[c]] = i
        fill[c] += 1
    return bounds
