"""Packets → TCP connections, keyed by the ordered endpoint pair and split on port reuse.

A connection is identified by its two endpoints put in a canonical order (so both directions meet in
one key — a full comparison, not an XOR of the fields, which collides). A SYN (without ACK) whose
initial sequence number differs from the SYN that opened the current connection on that key — or any
SYN on a key that has carried packets without one — starts a new connection: port reuse.

Direction 0 of a connection is the side that sent its SYN, or, for a connection already open when the
capture started, the side that sent its first packet.

The compiled loop keeps its state (a hash table and the slot/connection tables) across chunks.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

from ingest.decode import (
    ACK,
    C_DPORT,
    C_DST_HI,
    C_DST_LO,
    C_FLAGS,
    C_SEQ,
    C_SPORT,
    C_SRC_HI,
    C_SRC_LO,
    SYN,
)

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)


@njit(cache=True, inline="always")
def _mix(h: np.uint64, v: np.int64) -> np.uint64:
    h = (h ^ np.uint64(v)) * _M1
    return h ^ (h >> np.uint64(31))


@njit(cache=True)
def _demux(
    M: np.ndarray,
    start: int,
    m: int,
    table: Dict,
    slot_key: np.ndarray,
    slot_conn: np.ndarray,
    slot_isn: np.ndarray,
    slot_syn: np.ndarray,
    counts: np.ndarray,
    conn_slot: np.ndarray,
    conn_src_side: np.ndarray,
    out_conn: np.ndarray,
    out_dir: np.ndarray,
) -> int:
    """Assign rows start..m-1; return the first row not assigned (tables full) or m."""
    n_slots = counts[0]
    n_conns = counts[1]
    for i in range(start, m):
        a_hi = M[i, C_SRC_HI]
        a_lo = M[i, C_SRC_LO]
        a_p = M[i, C_SPORT]
        b_hi = M[i, C_DST_HI]
        b_lo = M[i, C_DST_LO]
        b_p = M[i, C_DPORT]
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
        slot = -1
        while key in table:
            s = table[key]
            if (
                slot_key[s, 0] == a_hi and slot_key[s, 1] == a_lo and slot_key[s, 2] == a_p
                and slot_key[s, 3] == b_hi and slot_key[s, 4] == b_lo and slot_key[s, 5] == b_p
            ):
                slot = s
                break
            key += 1  # linear probing on a (very unlikely) 63-bit hash collision
        flags = M[i, C_FLAGS]
        is_syn = (flags & SYN) != 0 and (flags & ACK) == 0
        new_conn = False
        if slot < 0:
            if n_slots >= len(slot_conn) or n_conns >= len(conn_slot):
                counts[0] = n_slots
                counts[1] = n_conns
                return i
            slot = n_slots
            n_slots += 1
            table[key] = slot
            slot_key[slot, 0] = a_hi
            slot_key[slot, 1] = a_lo
            slot_key[slot, 2] = a_p
            slot_key[slot, 3] = b_hi
            slot_key[slot, 4] = b_lo
            slot_key[slot, 5] = b_p
            slot_syn[slot] = 0
            new_conn = True
        elif is_syn and (slot_syn[slot] == 0 or slot_isn[slot] != M[i, C_SEQ]):
            if n_conns >= len(conn_slot):
                counts[0] = n_slots
                counts[1] = n_conns
                return i
            new_conn = True
        if new_conn:
            c = n_conns
            n_conns += 1
            slot_conn[slot] = c
            conn_slot[c] = slot
            conn_src_side[c] = side
            slot_syn[slot] = 0
        c = slot_conn[slot]
        if is_syn and slot_syn[slot] == 0:
            slot_syn[slot] = 1
            slot_isn[slot] = M[i, C_SEQ]
            conn_src_side[c] = side
        out_conn[i] = c
        out_dir[i] = 0 if side == conn_src_side[c] else 1
    counts[0] = n_slots
    counts[1] = n_conns
    return m


class Demux:
    """Stateful connection demultiplexer fed decoded chunks in capture order."""

    def __init__(self, capacity: int = 1024) -> None:
        self.table = Dict.empty(key_type=types.int64, value_type=types.int64)
        self.slot_key = np.zeros((capacity, 6), np.int64)
        self.slot_conn = np.zeros(capacity, np.int64)
        self.slot_isn = np.zeros(capacity, np.int64)
        self.slot_syn = np.zeros(capacity, np.int8)
        self.conn_slot = np.zeros(capacity, np.int64)
        self.conn_src_side = np.zeros(capacity, np.int8)
        self.counts = np.zeros(2, np.int64)

    @property
    def n_conns(self) -> int:
        return int(self.counts[1])

    def _grow(self) -> None:
        def bigger(a: np.ndarray) -> np.ndarray:
            out = np.zeros((2 * a.shape[0], *a.shape[1:]), a.dtype)
            out[: a.shape[0]] = a
            return out

        self.slot_key = bigger(self.slot_key)
        self.slot_conn = bigger(self.slot_conn)
        self.slot_isn = bigger(self.slot_isn)
        self.slot_syn = bigger(self.slot_syn)
        self.conn_slot = bigger(self.conn_slot)
        self.conn_src_side = bigger(self.conn_src_side)

    def assign(self, M: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Connection id and direction of each of the first ``m`` rows of a decoded matrix."""
        out_conn = np.empty(m, np.int32)
        out_dir = np.empty(m, np.int8)
        i = 0
        while True:
            i = _demux(M, i, m, self.table, self.slot_key, self.slot_conn, self.slot_isn, self.slot_syn,
                       self.counts, self.conn_slot, self.conn_src_side, out_conn, out_dir)
            if i >= m:
                return out_conn, out_dir
            self._grow()

    def endpoints(self, conn: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(source, destination) endpoints of direction 0, as (addr_hi, addr_lo, port)."""
        k = self.slot_key[self.conn_slot[conn]]
        a = (int(k[0]), int(k[1]), int(k[2]))
        b = (int(k[3]), int(k[4]), int(k[5]))
        return (a, b) if self.conn_src_side[conn] == 0 else (b, a)
