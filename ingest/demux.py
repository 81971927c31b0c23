"""Packets → TCP connections, keyed by the ordered endpoint pair and split on port reuse.

A connection is identified by its two endpoints put in a canonical order (so both directions meet in
one key — a full comparison, not an XOR of the fields, which collides). A SYN (without ACK) starts a new
connection on that key (port reuse) when

* its initial sequence number differs from that of the SYN that opened the current connection, or the
  current connection carried packets without a SYN (tshark's rule: ``tcp.analysis.reused_ports``);
* or, with the same ISN, the current connection is over: an RST was seen, or a FIN from each side (Zeek's
  rule: a SYN on a closed connection is a reuse whatever its ISN), or it has been idle for
  ``IDLE_NEW_CONNECTION_NS``.

A SYN-ACK starts one too when the current connection is over and it does not answer that connection's SYN (its
ACK is not the ISN + 1): the next connection's SYN was not captured (an HTTP connection closed with FINs, the same
ports again 56 min later from a SYN-ACK with a new ISN — unwrapped against the first connection's numbers, its
data lay 556 MB above the first's). A SYN-ACK on a connection without a SYN names the SYN it answers (its ACK −
1): that SYN, recorded after it (a capture that reordered the handshake by 0.26 ms), joins its connection instead
of starting another. A client whose SYN met a challenge ACK (RFC 5961 §4: the server still held an
  older connection on the same ports) answers it with an RST and sends its SYN again, with the same ISN:
  that SYN opens the connection the server then accepts, and the challenge ACK — an acknowledgement from the
  older connection's sequence space — stays with the attempt it answered instead of being read as an
  acknowledgement of gigabytes of this one's data.

The per-packet assignment is one compiled loop over a decoded batch (``fastpath.demux_rows``): a call
per packet would cost more than the work (numba counts references of every array argument).

Direction 0 of a connection is the side that sent its SYN, or, for a connection already open when the
capture started (or whose SYN was recorded after its SYN-ACK), the side that sent its first packet.

The compiled loop keeps its state across chunks: an open-addressing hash table (two flat numpy arrays,
linear probing, at most half full), the endpoint pairs seen ("slots") and the connections.
"""

from __future__ import annotations

import numpy as np

from ackreplay.jitcache.kernel_mode import njit

#: Columns of ``Demux.conn_stats``, counted per connection as packets are assigned (order-independent,
#: so they hold for the time-sorted and the grouped analysis alike): packets; data segments (payload,
#: not RST; a SYN's counts: TCP Fast Open); whether direction 0 / 1 carried payload; pure ACKs (ACK
#: without SYN or RST) of direction 0 / 1. They size the analysis outputs (``ingest.analyze``) without a
#: pass over the packets.
CS_PACKETS, CS_SEGMENTS, CS_PAYLOAD0, CS_PAYLOAD1, CS_ACKS0, CS_ACKS1 = range(6)
CS_NCOL = 6

#: ``Demux.slot_syn`` of an endpoint pair's current connection: no SYN seen; its SYN seen (``slot_isn``: its ISN); only
#: a SYN-ACK seen (``slot_isn``: the ISN of the SYN it answers, its ACK − 1).
SYN_NONE, SYN_SEEN, SYN_ANSWERED = 0, 1, 2
#: ``Demux.slot_closed`` bits: the current connection of an endpoint pair saw an RST; a FIN from side 0 of the
#: pair (``CLOSED_FIN0 << side`` for either side).
CLOSED_RST, CLOSED_FIN0 = 1, 2
#: A SYN with the connection's own ISN after this long without a packet opens a new connection: Zeek's
#: ``tcp_inactivity_timeout`` (5 min), after which it expires a connection. A retransmitted SYN never comes that
#: late: Linux retries a SYN 6 times, the last 63 s after the first, and gives up at 127 s (Windows after 21 s).
IDLE_NEW_CONNECTION_NS = 300 * 1_000_000_000

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)


@njit(cache=True, inline="always")
def mix_key(h: np.uint64, v: np.int64) -> np.uint64:
    h = (h ^ np.uint64(v)) * _M1
    return h ^ (h >> np.uint64(31))


@njit(cache=True)
def rehash(old_keys: np.ndarray, old_vals: np.ndarray, keys: np.ndarray, vals: np.ndarray) -> None:
    """The entries of the open-addressing table ``old_keys``/``old_vals`` (-1: empty) into the larger, empty
    ``keys``/``vals`` (its length a power of two)."""
    mask = len(keys) - 1
    for i in range(len(old_keys)):
        k = old_keys[i]
        if k != -1:
            j = k & mask
            while keys[j] != -1:
                j = (j + 1) & mask
            keys[j] = k
            vals[j] = old_vals[i]


class Demux:
    """Stateful connection demultiplexer fed decoded chunks in capture order."""

    def __init__(self, capacity: int = 1024) -> None:
        self.ht_keys = np.full(4 * capacity, -1, np.int64)
        self.ht_vals = np.zeros(4 * capacity, np.int64)
        self.slot_key = np.zeros((capacity, 6), np.int64)
        self.slot_conn = np.zeros(capacity, np.int64)
        self.slot_isn = np.zeros(capacity, np.int64)
        self.slot_syn = np.zeros(capacity, np.int8)
        self.slot_closed = np.zeros(capacity, np.int8)  # CLOSED_* bits of the slot's current connection
        self.slot_last = np.zeros(capacity, np.int64)  # its latest packet's time (ns)
        self.conn_slot = np.zeros(capacity, np.int64)
        self.conn_src_side = np.zeros(capacity, np.int8)
        self.conn_stats = np.zeros((capacity, CS_NCOL), np.int64)
        self.counts = np.zeros(2, np.int64)

    @property
    def n_conns(self) -> int:
        return int(self.counts[1])

    def grow(self) -> None:
        def bigger(a: np.ndarray) -> np.ndarray:
            out = np.zeros((2 * a.shape[0], *a.shape[1:]), a.dtype)
            out[: a.shape[0]] = a
            return out

        self.slot_key = bigger(self.slot_key)
        self.slot_conn = bigger(self.slot_conn)
        self.slot_isn = bigger(self.slot_isn)
        self.slot_syn = bigger(self.slot_syn)
        self.slot_closed = bigger(self.slot_closed)
        self.slot_last = bigger(self.slot_last)
        self.conn_slot = bigger(self.conn_slot)
        self.conn_src_side = bigger(self.conn_src_side)
        self.conn_stats = bigger(self.conn_stats)
        keys = np.full(2 * len(self.ht_keys), -1, np.int64)
        vals = np.zeros(2 * len(self.ht_keys), np.int64)
        rehash(self.ht_keys, self.ht_vals, keys, vals)
        self.ht_keys, self.ht_vals = keys, vals

    def tables(self) -> tuple:
        """The state the compiled code updates, in ``fastpath.demux_rows``'s argument order."""
        return (self.ht_keys, self.ht_vals, self.slot_key, self.slot_conn, self.slot_isn, self.slot_syn,
                self.slot_closed, self.slot_last, self.counts, self.conn_slot, self.conn_src_side, self.conn_stats)

    def stats(self, c_lo: int = 0, c_hi: int | None = None) -> np.ndarray:
        """``conn_stats`` of connections ``c_lo..c_hi-1`` (default: all)."""
        return self.conn_stats[c_lo: self.n_conns if c_hi is None else c_hi]

    def endpoints(self, conn: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(source, destination) endpoints of direction 0, as (addr_hi, addr_lo, port)."""
        k = self.slot_key[self.conn_slot[conn]]
        a = (int(k[0]), int(k[1]), int(k[2]))
        b = (int(k[3]), int(k[4]), int(k[5]))
        return (a, b) if self.conn_src_side[conn] == 0 else (b, a)
