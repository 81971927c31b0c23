"""Where was the capture taken, relative to a flow's data sender? With the evidence, in words, and — from the
handshake — the tap's position: the fraction of the round trip that lies between the sender and the capture
point (0 at the sender, 1 at the receiver; docs/estimators.md §7).

1. Handshake timing (strongest), a connection at a time. With the client's SYN at t0, the SYN-ACK at t1 and the
   client's ACK at t2, SYN→SYN-ACK (t1−t0) is the capture point→server→capture point part of the round trip and
   SYN-ACK→ACK (t2−t1) the capture point→client→capture point part; next to a host, its own part is only its
   turnaround (µs). The client's part over their sum is the connection's ``capture_position`` (0 at the client,
   1 at the server), the same for both directions; a flow's position is that share counted from its sender.
   The capture is at an end when that end's part is at most ``END_MS`` or ``END_SHARE`` of the round trip (and
   the other part more than ``FACTOR`` times it): within that, leaving the tap's share out of the rebuilt RTT
   costs at most ``END_SHARE`` of RTTmin. Then the direction that end sends is ``sender`` and the other
   ``receiver``. Otherwise, both parts at least ``MID_PATH_MIN_MS``: a tap on the path (``mid_path``, both
   directions) at that position, rebuilt with the handshake split there (``ingest.reconstruct``) — wherever it
   lies, also a few ms from either end (a 3× factor between the parts alone would put a tap 1 ms from the sender
   of a 42 ms path at the sender, and one 2 ms before the receiver at the receiver). The data/ACK pairs (a
   direction's data→ACK times at the capture point: the capture point→receiver→capture point part, plus the
   receiver's ACK delay) are given beside a tap's position and check it: when a direction's shortest is under
   ``CONTRADICTED`` of the handshake's part towards its receiver, the handshake's timing is not the path's (a
   host that answered slowly) for the whole connection: no position between the ends is taken from it, and a
   factor of ``FACTOR`` between its parts tells the nearer end (position 0 or 1). Once a tap is rebuilt, its
   data/ACK pairs refine the flow's position (``ingest.capture``: their shortest over the rebuilt RTTmin).
2. Without a usable handshake (or parts too short to tell, a LAN), ACK clocking: next to the sender, the time
   from a data segment to the ACK that covers it is a round trip, many times the gap between consecutive
   data segments (a window's worth of segments is in flight); next to the receiver, the ACK follows the data
   within one or two segment gaps. Ratio of medians ≥ 3 → sender, ≤ 2 → receiver, else unknown. No position.
   The connection keeps one capture point: a direction that cannot tell takes the opposite of the other's
   verdict, and two that disagree (both "sender", or both "receiver": a LAN, whose round trip is within an ACK
   delay) take the verdict of the one with more data/ACK pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ackreplay.ingest.tcpflow import NOT_SEEN
from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import median_in_place

FACTOR = 3.0
MIN_SAMPLES = 8
#: A handshake part at most this long (ms), or at most this share of the round trip, is a host's own turnaround:
#: the capture is at that end.
END_MS = 0.2
END_SHARE = 0.01
#: Both handshake parts at least this long (ms) and neither end's: a capture on the path (§7). Below it (a LAN,
#: both ends within half a millisecond) the ACK-clocking test decides instead.
MID_PATH_MIN_MS = 0.5
#: A direction's shortest data→ACK time under this share of the handshake's capture point→receiver→capture point
#: part contradicts the handshake's split (it cannot be shorter than that part on the same path).
CONTRADICTED = 0.5


VERDICTS = ("sender", "receiver", "mid_path", "unknown")
_SENDER, _RECEIVER, _MID_PATH, _UNKNOWN = range(4)
_TIMING = "handshake SYN→SYN-ACK {0:.3f} ms, SYN-ACK→ACK {1:.3f} ms"
_CONTRADICTED = (" (the data/ACK pairs of the connection contradict the handshake's split, a slow answer: no "
                 "position between the ends is taken from it, the nearer end by a factor of 3 between its parts)")
_MID = (": neither end answers at once — a tap on the path, {1:.3f} ms from the client and back, "
        "{0:.3f} ms from the server and back; {2:.1f} % of the round trip lies between the sender and the tap")
_PAIRS = ("; data→ACK at the tap at least {:.3f} ms (the tap→receiver→tap part and the receiver's ACK delay; "
          "handshake: {:.3f} ms)")
_CLOCKING = "data→ACK median {:.3f} ms vs data segment gap median {:.3f} ms (ratio {:.1f})"
_CLOCKED = {_SENDER: ": ACKs come a round trip after the data", _RECEIVER: ": ACKs follow the data at once",
            _UNKNOWN: ": ambiguous"}
_DERIVED = ("; the connection's other direction places the capture next to this flow's {} (one capture point "
            "per connection)")
_NO_EVIDENCE = "no handshake timing and too few RTT samples to tell"


class Vantages(NamedTuple):
    """:func:`classify_vantages`' answer, an entry a flow: the verdict (one of :data:`VERDICTS`), its evidence in
    words, the position — the share of the round trip between the sender and the capture point (None without a
    usable handshake) — and the connection's position, the same for both its directions: the share between the
    client and the capture point (0 at the client, 1 at the server; None without a usable handshake)."""

    verdicts: list[str]
    evidence: list[str]
    positions: list[float | None]
    capture_positions: list[float | None]


@dataclass
class _Placed:
    """The flows' answers as they are decided: verdict (index into :data:`VERDICTS`, -1 = not yet), position from
    the sender and the connection's from the client (NaN = none), evidence, and whether ACK clocking decided."""

    verdict: np.ndarray
    position: np.ndarray
    capture: np.ndarray
    evidence: np.ndarray
    clocked: np.ndarray


def classify_vantages(
    sender_is_client: np.ndarray, syn_ns: np.ndarray, synack_ns: np.ndarray, hsack_ns: np.ndarray,
    rtt: np.ndarray, rtt_counts: np.ndarray, data_send_ns: np.ndarray, data_counts: np.ndarray,
    connections: np.ndarray | None = None,
) -> Vantages:
    """The vantage of many flows at once: per flow its client flag and handshake times, its data→ACK times
    (``rtt``, each flow's ``rtt_counts`` in turn, NaN = no sample), its new data segments' send times
    (``data_send_ns``, ``data_counts`` a flow) and its connection (``connections``; None: each flow its own) —
    the two directions of a connection get one capture point."""
    n = len(syn_ns)
    conn = np.unique(np.arange(n) if connections is None else np.asarray(connections), return_inverse=True)[1]
    sampled = ~np.isnan(rtt)
    n_rtt = run_sums(sampled, rtt_counts)
    if not sampled.all():
        rtt = rtt[sampled]
    out = _Placed(np.full(n, -1, np.int64), np.full(n, np.nan), np.full(n, np.nan), np.empty(n, object),
                  np.zeros(n, bool))
    syn, synack, hsack = (np.asarray(x, np.int64) for x in (syn_ns, synack_ns, hsack_ns))
    _by_handshake(np.asarray(sender_is_client, bool), syn, synack, hsack, _Pairs(rtt, n_rtt, conn), out)
    _by_ack_clocking(rtt, n_rtt, data_send_ns, data_counts, out)
    _one_point_per_connection(conn, n_rtt, out)
    rest = out.verdict < 0
    out.verdict[rest] = _UNKNOWN
    out.evidence[rest] = _NO_EVIDENCE
    return Vantages(np.array(VERDICTS, object)[out.verdict].tolist(), out.evidence.tolist(), _or_none(out.position),
                    _or_none(out.capture))


def _or_none(values: np.ndarray) -> list[float | None]:
    """A float column as a list, NaN as None."""
    listed: list[float | None] = values.tolist()
    for i in np.flatnonzero(np.isnan(values)).tolist():
        listed[i] = None
    return listed


class _Pairs(NamedTuple):
    """The flows' data/ACK pairs (``rtt``, ``n_rtt`` of them a flow) and their connections (dense indices)."""

    rtt: np.ndarray
    n_rtt: np.ndarray
    conn: np.ndarray


def _by_handshake(client: np.ndarray, syn: np.ndarray, synack: np.ndarray, hsack: np.ndarray, pairs: _Pairs,
                  out: _Placed) -> None:
    """The flows with a usable handshake (1. above), a connection at a time: its parts place the capture point
    between the client and the server, unless a direction's data/ACK pairs contradict them (then the nearer end,
    by a factor between the parts); each direction's verdict follows from that one position."""
    hs = ((syn != NOT_SEEN) & (synack != NOT_SEEN) & (hsack != NOT_SEEN) & (syn <= synack) & (synack <= hsack)
          & (hsack > syn))
    if not hs.any():
        return
    f = np.flatnonzero(hs)
    a = (synack[f] - syn[f]) / 1e6  # capture point → server → capture point
    b = (hsack[f] - synack[f]) / 1e6  # capture point → client → capture point
    cl = client[f]
    low = np.full(len(f), np.nan)
    paired = pairs.n_rtt[f] >= MIN_SAMPLES
    if paired.any():
        low[paired] = _run_minima(pairs.rtt, pairs.n_rtt)[f[paired]] * 1e3
    # the data come back acknowledged in far less than the handshake's capture point→receiver→capture point
    # part: its timing is not the path's (a slow answer), for the connection's both directions
    contradicting = low < CONTRADICTED * np.where(cl, a, b)
    untrusted = np.zeros(pairs.conn.max() + 1, bool)
    untrusted[pairs.conn[f][contradicting]] = True
    trusted = ~untrusted[pairs.conn[f]]
    end = np.maximum(END_MS, END_SHARE * (a + b))
    by_client, by_server = a > FACTOR * b, b > FACTOR * a
    turnaround = (by_client & (b <= end)) | (by_server & (a <= end))  # an end's own turnaround: its position
    near_client = by_client & ((b <= end) | ~trusted)
    near_server = by_server & ((a <= end) | ~trusted)
    mid = trusted & ~near_client & ~near_server & (np.minimum(a, b) >= MID_PATH_MIN_MS)
    kept = trusted | turnaround
    from_client = np.where(kept, b / (a + b), np.where(near_client, 0.0, np.where(near_server, 1.0, np.nan)))
    out.capture[f] = from_client
    placed = near_client | near_server | mid
    sel = np.flatnonzero(placed)
    out.verdict[f[sel]] = np.where(mid, _MID_PATH, np.where(cl == near_client, _SENDER, _RECEIVER))[sel]
    # (the share towards the sender over the sum, not 1 − the client's share: the same float whichever end sends)
    position = np.where(kept, np.where(cl, b, a) / (a + b), np.where(cl == near_client, 0.0, 1.0))
    out.position[f[sel]] = position[sel]
    _put(out.evidence, f[sel], [_handshake_text(a[k], b[k], low[k], bool(cl[k]), bool(kept[k]),
                                                "client" if near_client[k] else "server" if near_server[k] else "")
                                for k in sel.tolist()])


def _handshake_text(a: float, b: float, low: float, client: bool, trusted: bool, near: str) -> str:
    """A flow's evidence from its connection's handshake (parts ``a`` server-side, ``b`` client-side, ms), its own
    data/ACK pairs' shortest data→ACK time (``low``, NaN: too few), and the verdict: next to the ``near`` end
    ("client", "server"), else a tap."""
    text = _TIMING.format(a, b)
    if not near:
        position = b / (a + b) if client else a / (a + b)
        pairs = _PAIRS.format(low, a if client else b) if low == low else ""
        return text + _MID.format(a, b, 100 * position) + pairs
    text += f": capture next to the {near}; the data sender is the {'client' if client else 'server'}"
    return text if trusted else text + _CONTRADICTED


def _by_ack_clocking(rtt: np.ndarray, n_rtt: np.ndarray, data_send_ns: np.ndarray, data_counts: np.ndarray,
                     out: _Placed) -> None:
    """The flows the handshake did not place (2. above): ACK clocking, from the medians of their data→ACK times
    and data gaps."""
    data_counts = np.asarray(data_counts, np.int64)
    gaps = np.diff(np.asarray(data_send_ns, np.int64), append=0)  # gaps[i]: from data segment i to the next
    kept = gaps > 0
    ends = np.cumsum(data_counts)
    kept[ends[ends > 0] - 1] = False  # a flow's last segment: the next is another flow's (or none)
    n_gaps = run_sums(kept, data_counts)
    gaps = gaps[kept]
    clocked = (out.verdict < 0) & (n_rtt >= MIN_SAMPLES) & (data_counts > MIN_SAMPLES) & (n_gaps > 0)
    if clocked.any():
        f = np.flatnonzero(clocked)
        rtt_med = run_medians(rtt, n_rtt, clocked)[f]
        gap_med = run_medians(gaps, n_gaps, clocked)[f] / 1e9
        ratio = rtt_med / gap_med
        code = np.where(ratio >= FACTOR, _SENDER, np.where(ratio <= 2.0, _RECEIVER, _UNKNOWN))
        out.verdict[f] = code
        out.clocked[f] = True
        timing = map(_CLOCKING.format, (rtt_med * 1e3).tolist(), (gap_med * 1e3).tolist(), ratio.tolist())
        _put(out.evidence, f, [t + _CLOCKED[c] for t, c in zip(timing, code.tolist(), strict=True)])


def _one_point_per_connection(conn: np.ndarray, n_rtt: np.ndarray, out: _Placed) -> None:
    """The two directions of a connection placed by ACK clocking (the handshake places both at once): a direction
    next to its sender puts the other next to its receiver. One that could not tell takes the other's answer; two
    that disagree (both "next to the sender", or both "next to the receiver": a LAN, where the round trip is
    within an ACK delay) take the answer of the one with more data/ACK pairs."""
    order = np.argsort(conn, kind="stable")
    twin = np.flatnonzero(conn[order][1:] == conn[order][:-1])
    if not len(twin):
        return
    first, second = order[twin], order[twin + 1]
    v1, v2 = out.verdict[first], out.verdict[second]
    end1, end2 = (v1 == _SENDER) | (v1 == _RECEIVER), (v2 == _SENDER) | (v2 == _RECEIVER)
    clocked = out.clocked[first] | out.clocked[second]
    # which direction decides, and which takes the opposite answer from it
    first_decides = clocked & end1 & (~end2 | ((v1 == v2) & (n_rtt[first] >= n_rtt[second])))
    second_decides = clocked & end2 & ~first_decides & (~end1 | (v1 == v2))
    for decides, takes in ((first_decides, False), (second_decides, True)):
        src, dst = (second, first) if takes else (first, second)
        pick = np.flatnonzero(decides)
        if not len(pick):
            continue
        flipped = np.where(out.verdict[src[pick]] == _SENDER, _RECEIVER, _SENDER)
        known = out.verdict[dst[pick]] >= 0
        base = np.where(known, out.evidence[dst[pick]], "ACK clocking cannot tell")
        out.verdict[dst[pick]] = flipped
        _put(out.evidence, dst[pick], [e + _DERIVED.format(VERDICTS[v]) for e, v in
                                        zip(base.tolist(), flipped.tolist(), strict=True)])


def _put(out: np.ndarray, at: np.ndarray, texts: Iterable[str]) -> None:
    """Strings into an object array at the indices ``at`` (numpy would make a list of strings a string array)."""
    col = np.empty(len(at), object)
    col[:] = list(texts)
    out[at] = col


def _run_starts(counts: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return starts


def run_sums(mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """How many of each run of ``mask`` (runs of ``counts`` values in turn: a flow's rows) are set."""
    before = np.zeros(len(mask) + 1, np.int64)
    np.cumsum(mask, out=before[1:])
    ends = np.cumsum(counts)
    return before[ends] - before[ends - counts]


def _run_minima(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The least of each run of ``values`` (runs of ``counts`` values in turn; NaN for an empty run)."""
    out = np.full(len(counts), np.nan)
    full = counts > 0
    if full.any():
        out[full] = np.minimum.reduceat(values, _run_starts(counts)[full])
    return out


def run_medians(values: np.ndarray, counts: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The median of each ``wanted`` run of ``values`` (runs of ``counts`` values in turn) as ``np.median`` gives
    it — the middle value, or the mean of the middle two, as float64 — others NaN: each run sorted alone in one
    compiled pass (``np.median``'s selection can take ten times a sort: 0.3 s on the 4 M alternating data gaps
    of a bulk flow; one sort of all runs by (run, value) took 0.07 s of a 10 000-flow capture's 0.5 s ingest).

    The values are taken as a float64 copy (integers, nanosecond gaps, are exact in it below 2⁵³ — 104 days),
    so that the kernel has one signature whatever the column's type, layout or write flag: ``ackreplay warmup``
    compiles it, and no capture compiles it again. The kernel sorts each run of that copy where it lies (no second
    copy)."""
    out = np.full(len(counts), np.nan)
    if len(counts):
        _medians_into(np.array(values, np.float64), _run_starts(counts), np.array(counts, np.int64),
                      np.array(wanted, np.bool_), out)
    return out


@njit(cache=True, nogil=True)
def _medians_into(values: np.ndarray, starts: np.ndarray, counts: np.ndarray, wanted: np.ndarray,
                  out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Each wanted run's median into ``out``; ``values`` is scratch: each such run is left sorted."""
    for r in range(len(counts)):
        c = counts[r]
        if wanted[r] and c > 0:
            out[r] = median_in_place(values[starts[r]: starts[r] + c])
