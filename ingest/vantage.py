"""Where was the capture taken, relative to a flow's data sender? With the evidence, in words, and — from the
handshake — the tap's position: the fraction of the round trip that lies between the sender and the capture
point (0 at the sender, 1 at the receiver; docs/estimators.md §7).

1. Handshake timing (strongest). With the client's SYN at t0, the SYN-ACK at t1 and the client's ACK at t2,
   SYN→SYN-ACK (t1−t0) is the capture point→server→capture point part of the round trip and SYN-ACK→ACK
   (t2−t1) the capture point→client→capture point part; next to a host, its own part is only its turnaround
   (µs). Of the two, the one towards the data sender over their sum is the position. The capture is at an end
   when that end's part is at most ``END_MS`` or ``END_SHARE`` of the round trip (and the other part more
   than ``FACTOR`` times it): within that, leaving the tap's share out of the rebuilt RTT costs at most
   ``END_SHARE`` of RTTmin. Otherwise, both parts at least ``MID_PATH_MIN_MS``: a tap on the path
   (``mid_path``) at that position, rebuilt with the handshake split there (``ingest.reconstruct``) —
   wherever it lies, also a few ms from either end (a 3× factor between the parts alone would put a tap 1 ms
   from the sender of a 42 ms path at the sender, and one 2 ms before the receiver at the receiver). The
   data/ACK pairs' delays at the capture point (its data→ACK time: the capture point→receiver→capture point
   part, plus the receiver's ACK delay) are given beside it in the evidence — once the tap is rebuilt they
   refine its position (``ingest.capture``: their shortest over the rebuilt RTTmin) — and check it: when their
   shortest is under ``CONTRADICTED`` of the handshake's part towards the receiver, the handshake's timing is
   not the path's (a host that answered slowly), no position is taken from it, and a factor of ``FACTOR``
   between its parts tells the nearer end.
2. Without a usable handshake (or parts too short to tell, a LAN), ACK clocking: next to the sender, the time
   from a data segment to the ACK that covers it is a round trip, many times the gap between consecutive
   data segments (a window's worth of segments is in flight); next to the receiver, the ACK follows the data
   within one or two segment gaps. Ratio of medians ≥ 3 → sender, ≤ 2 → receiver, else unknown. No position.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from ackreplay.ingest.tcpflow import NOT_SEEN
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
#: The data/ACK pairs' shortest data→ACK time under this share of the handshake's capture point→receiver→capture
#: point part contradicts the handshake's split (it cannot be shorter than that part on the same path).
CONTRADICTED = 0.5


VERDICTS = ("sender", "receiver", "mid_path", "unknown")
_SENDER, _RECEIVER, _MID_PATH, _UNKNOWN = range(4)
_TIMING = "handshake SYN→SYN-ACK {0:.3f} ms, SYN-ACK→ACK {1:.3f} ms"
_CONTRADICTED = (" (the data/ACK pairs, at least {2:.3f} ms, contradict the handshake's split: no position between "
                 "the ends is taken from it)")
_MID = (_TIMING + ": neither end answers at once — a tap on the path, {1:.3f} ms from the client and back, "
        "{0:.3f} ms from the server and back; {2:.1f} % of the round trip lies between the sender and the tap")
_PAIRS = ("; data→ACK at the tap at least {:.3f} ms (the tap→receiver→tap part and the receiver's ACK delay; "
          "handshake: {:.3f} ms)")
_CLOCKING = "data→ACK median {:.3f} ms vs data segment gap median {:.3f} ms (ratio {:.1f})"
_CLOCKED = {_SENDER: ": ACKs come a round trip after the data", _RECEIVER: ": ACKs follow the data at once",
            _UNKNOWN: ": ambiguous"}
_NO_EVIDENCE = "no handshake timing and too few RTT samples to tell"


class Vantages(NamedTuple):
    """:func:`classify_vantages`' answer, an entry a flow: the verdict (one of :data:`VERDICTS`), its evidence in
    words, and the position — the share of the handshake's round trip between the sender and the capture point
    (None without a usable handshake)."""

    verdicts: list[str]
    evidence: list[str]
    positions: list[float | None]


@dataclass
class _Placed:
    """The flows' answers as they are decided: verdict (index into :data:`VERDICTS`, -1 = not yet), position
    (NaN = none) and evidence."""

    verdict: np.ndarray
    position: np.ndarray
    evidence: np.ndarray


def classify_vantages(
    sender_is_client: np.ndarray, syn_ns: np.ndarray, synack_ns: np.ndarray, hsack_ns: np.ndarray,
    rtt: np.ndarray, rtt_counts: np.ndarray, data_send_ns: np.ndarray, data_counts: np.ndarray,
) -> Vantages:
    """The vantage of many flows at once: per flow its client flag and handshake times, its data→ACK times
    (``rtt``, each flow's ``rtt_counts`` in turn, NaN = no sample) and its new data segments' send times
    (``data_send_ns``, ``data_counts`` a flow)."""
    n = len(syn_ns)
    sampled = ~np.isnan(rtt)
    n_rtt = run_sums(sampled, rtt_counts)
    if not sampled.all():
        rtt = rtt[sampled]
    out = _Placed(np.full(n, -1, np.int64), np.full(n, np.nan), np.empty(n, object))
    syn, synack, hsack = (np.asarray(x, np.int64) for x in (syn_ns, synack_ns, hsack_ns))
    _by_handshake(np.asarray(sender_is_client, bool), syn, synack, hsack, rtt, n_rtt, out)
    _by_ack_clocking(rtt, n_rtt, data_send_ns, data_counts, out)
    rest = out.verdict < 0
    out.verdict[rest] = _UNKNOWN
    out.evidence[rest] = _NO_EVIDENCE
    positions: list[float | None] = out.position.tolist()
    for i in np.flatnonzero(np.isnan(out.position)).tolist():
        positions[i] = None
    return Vantages(np.array(VERDICTS, object)[out.verdict].tolist(), out.evidence.tolist(), positions)


def _by_handshake(client: np.ndarray, syn: np.ndarray, synack: np.ndarray, hsack: np.ndarray, rtt: np.ndarray,
                  n_rtt: np.ndarray, out: _Placed) -> None:
    """The flows with a usable handshake (1. above): next to an end, or a tap on the path; ``n_rtt`` of the
    samples ``rtt`` a flow (the data/ACK pairs, which can contradict the handshake's split)."""
    hs = ((syn != NOT_SEEN) & (synack != NOT_SEEN) & (hsack != NOT_SEEN) & (syn <= synack) & (synack <= hsack)
          & (hsack > syn))
    if not hs.any():
        return
    f = np.flatnonzero(hs)
    a = (synack[f] - syn[f]) / 1e6
    b = (hsack[f] - synack[f]) / 1e6
    cl = client[f]
    to_sender, to_receiver = np.where(cl, b, a), np.where(cl, a, b)
    pos = to_sender / (a + b)
    paired = n_rtt[f] >= MIN_SAMPLES
    pairs = np.full(len(f), np.nan)
    if paired.any():
        pairs[paired] = _run_minima(rtt, n_rtt)[f[paired]] * 1e3
    # the data/ACK pairs contradict the split when the data come back acknowledged in far less than the
    # handshake's capture point→receiver→capture point part: its timing is not the path's (a slow answer)
    # and only a factor between the parts can tell an end
    trusted = ~paired | (pairs >= CONTRADICTED * to_receiver)
    end = np.maximum(END_MS, END_SHARE * (a + b))
    by_sender, by_receiver = to_receiver > FACTOR * to_sender, to_sender > FACTOR * to_receiver
    # a host's own turnaround first (the sender's, then the receiver's); else, contradicted, the nearer end
    # by 3×; else a tap on the path
    case = np.select(
        [by_sender & (to_sender <= end), by_receiver & (to_receiver <= end), by_sender & ~trusted,
         by_receiver & ~trusted, (np.minimum(a, b) >= MID_PATH_MIN_MS) & trusted],
        [0, 1, 2, 3, 4], -1)
    _at_ends(case, f, a, b, cl, pos, pairs, out)
    sel = np.flatnonzero(case == 4)
    if len(sel):
        out.verdict[f[sel]] = _MID_PATH
        out.position[f[sel]] = pos[sel]
        texts = list(map(_MID.format, a[sel].tolist(), b[sel].tolist(), (100 * pos[sel]).tolist()))
        for k, (low, receiver) in enumerate(zip(pairs[sel].tolist(), to_receiver[sel].tolist(), strict=True)):
            if low == low:  # not NaN: the pairs' side
                texts[k] += _PAIRS.format(low, receiver)
        _put(out.evidence, f[sel], texts)


def _at_ends(case: np.ndarray, f: np.ndarray, a: np.ndarray, b: np.ndarray, cl: np.ndarray, pos: np.ndarray,
             pairs: np.ndarray, out: _Placed) -> None:
    """The handshake flows ``f`` placed at an end (``case`` 0–3: by the turnaround at the sender's or the
    receiver's end, or — contradicted — by the 3× factor; ``a``, ``b``: the handshake's parts in ms, ``cl``: the
    sender is the client)."""
    for c in range(4):
        sel = np.flatnonzero(case == c)
        if not len(sel):
            continue
        at_end, sender = c < 2, c % 2 == 0
        out.verdict[f[sel]] = _SENDER if sender else _RECEIVER
        out.position[f[sel]] = pos[sel] if at_end else (0.0 if sender else 1.0)
        for is_client in (True, False):
            part = sel[cl[sel] == is_client]
            near = "client" if sender == is_client else "server"
            role = "client" if is_client else "server"
            template = _TIMING + f": capture next to the {near}; the data sender is the {role}"
            args = [a[part].tolist(), b[part].tolist()]
            if not at_end:
                template += _CONTRADICTED
                args.append(pairs[part].tolist())
            _put(out.evidence, f[part], map(template.format, *args))


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
        timing = map(_CLOCKING.format, (rtt_med * 1e3).tolist(), (gap_med * 1e3).tolist(), ratio.tolist())
        _put(out.evidence, f, [t + _CLOCKED[c] for t, c in zip(timing, code.tolist(), strict=True)])


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
    compiles it, and no capture compiles it again."""
    out = np.full(len(counts), np.nan)
    if len(counts):
        _medians_into(np.array(values, np.float64), _run_starts(counts), np.array(counts, np.int64),
                      np.array(wanted, np.bool_), out)
    return out


@njit(cache=True, nogil=True)
def _medians_into(values: np.ndarray, starts: np.ndarray, counts: np.ndarray, wanted: np.ndarray,
                  out: np.ndarray) -> None:  # pragma: no cover - compiled
    for r in range(len(counts)):
        c = counts[r]
        if wanted[r] and c > 0:
            out[r] = median_in_place(values[starts[r]: starts[r] + c].copy())
