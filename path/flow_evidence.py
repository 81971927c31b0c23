"""Each flow's path evidence read from its capture's tables (docs/path.md §9): the pair rates of the
dispersion histogram (:mod:`ackreplay.path.dispersion`), its RTT samples' minimum and deep quantiles, and the
queueing delay before each loss episode (:mod:`ackreplay.path.figures`) — for many flows in one compiled pass
over their concatenated columns (:func:`flow_parts_batch`), or for one (:func:`flow_parts`, the same code on
a batch of one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ackreplay.jitcache.kernel_mode import njit
from ackreplay.kernels import search_sorted, sort_in_place
from ackreplay.path.dispersion import TRAIN, ack_pairs, bin_index, data_pairs, sparse_histograms
from ackreplay.path.evidence import GRADE_RANK, PathBatch, PathParts
from ackreplay.path.figures import DEEP_QUANTILE, TOP_QUANTILE, top_ranks
from ackreplay.path.links import LinkInfo, Links

#: Times within this of each other are one packet's (s): below a capture's finest step (pcap's microsecond), above
#: the rounding of two float clocks.
SAME_PACKET_S = 5e-7


def _column(table: Any, name: str, dtype: type) -> np.ndarray:
    """A column of a Polars frame (nulls as NaN) or of a mapping of numpy arrays, as numpy."""
    col = table[name]
    if isinstance(col, pl.Series):
        if isinstance(col.dtype, pl.Enum | pl.Categorical):
            col = col.to_physical()
        elif col.dtype == pl.String:
            col = col.replace_strict({"new": 0, "retransmission": 1}, default=2, return_dtype=pl.Int8)
        if dtype is np.float64 and col.null_count():  # (a Polars call costs ~0.1 ms: only when needed)
            col = col.cast(pl.Float64).fill_null(math.nan)
        col = col.to_numpy()
    return np.asarray(col, dtype)


@njit(cache=True, nogil=True)
def _evidence(a_lo: np.ndarray, a_hi: np.ndarray, s_lo: np.ndarray, s_hi: np.ndarray, e_lo: np.ndarray,
              e_hi: np.ndarray, receiver: np.ndarray, mss: np.ndarray, overhead: np.ndarray, at: np.ndarray,
              ack: np.ndarray, rtt: np.ndarray, srtt: np.ndarray, st: np.ndarray, seq: np.ndarray, ln: np.ndarray,
              kind: np.ndarray, ep_start: np.ndarray, ep_retx: np.ndarray, ep_end: np.ndarray, ep_first: np.ndarray,
              room: int) -> tuple[Any, ...]:
    """Every flow's pair rates, RTT figures and loss evidence in one pass over the concatenated columns (flow
    ``i``: ACK rows ``a_lo[i]:a_hi[i]``, segments ``s_lo[i]:s_hi[i]``, episodes ``e_lo[i]:e_hi[i]``, each
    with its start, retransmissions, end — NaN while open — and first retransmitted byte). Returns the rates
    (concatenated, ``room`` at most) and their offsets; per flow its RTT samples, minimum, deep and top queue;
    the episodes' queueing delays, retransmissions and exposures (:func:`_loss_exposure`), with their offsets.
    Retransmissions, exposures and each flow's data segments beyond its rows (``more_data``) count the segments
    on the wire (:func:`_segments_carried`): a host capture's TSO/GSO super-segment is several, as the rate the
    simulation draws per segment needs; on a capture without them they are ingest's counts of rows.
    The scratch is sized once for the longest flow and reused flow after flow."""
    n = len(a_lo)
    rate_off = np.zeros(n + 1, np.int64)
    rates = np.empty(room)
    samples = np.zeros(n, np.int64)
    rtt_min = np.full(n, np.nan)
    deep = np.full(n, np.nan)
    top = np.full(n, np.nan)
    loss_off = np.zeros(n + 1, np.int64)
    flight = np.full(n, np.nan)
    for i in range(n):
        loss_off[i + 1] = loss_off[i] + e_hi[i] - e_lo[i]
    loss_q = np.empty(loss_off[n])
    loss_retx = np.empty(loss_off[n], np.int64)
    loss_exposed = np.empty(loss_off[n], np.int64)
    loss_segs = np.empty((loss_off[n], 2), np.int64)
    drop_off = np.zeros(n + 1, np.int64)
    bases = np.zeros(n, np.int64)
    most_acks = 0
    most_segs = 0
    for i in range(n):
        most_acks = max(most_acks, a_hi[i] - a_lo[i])
        most_segs = max(most_segs, s_hi[i] - s_lo[i])
        retransmitted, bases[i] = _first_byte(seq[s_lo[i]:s_hi[i]], ln[s_lo[i]:s_hi[i]], kind[s_lo[i]:s_hi[i]],
                                              max(mss[i], 1))
        drop_off[i + 1] = drop_off[i] + retransmitted
    drop_seg = np.empty(drop_off[n], np.int64)
    drop_ep = np.empty(drop_off[n], np.int64)
    sent_segs, more_data = np.zeros(n, np.int64), np.zeros(n, np.int64)
    more = np.empty(most_segs + 1, np.int64)  # (a flow's extra segments before each row: _more_segments)
    scratch = (np.empty(most_acks), np.empty(most_acks, np.int64), np.empty(most_acks),
               np.empty(most_segs, np.int64), np.empty(most_segs, np.int64), np.zeros(TRAIN), np.zeros(TRAIN))
    rtt_t = np.empty(most_acks)
    rtt_v = np.empty(most_acks)
    heap = np.empty(most_acks)
    w = 0
    for i in range(n):
        a0, a1, s0, s1 = a_lo[i], a_hi[i], s_lo[i], s_hi[i]
        if receiver[i]:
            m = data_pairs(rates[w:], st[s0:s1], seq[s0:s1], ln[s0:s1], kind[s0:s1], mss[i], overhead[i])
        else:
            m = _sender_pairs(rates[w:], at[a0:a1], ack[a0:a1], rtt[a0:a1], seq[s0:s1], ln[s0:s1], kind[s0:s1],
                              mss[i], overhead[i], scratch)
        w += m
        rate_off[i + 1] = w
        if not receiver[i]:
            flight[i] = _max_flight(at[a0:a1], ack[a0:a1], st[s0:s1], seq[s0:s1], ln[s0:s1])
        nv, least, d, t = _rtt_figures(at[a0:a1], rtt[a0:a1], rtt_t, rtt_v, heap)
        samples[i] = nv
        if nv:
            rtt_min[i] = least
            deep[i] = d
            top[i] = t
        _loss_queues(at[a0:a1], srtt[a0:a1], rtt_t[:nv], rtt_v[:nv], least, ep_start[e_lo[i]:e_hi[i]],
                     ep_retx[e_lo[i]:e_hi[i]], loss_q[loss_off[i]:loss_off[i + 1]],
                     loss_retx[loss_off[i]:loss_off[i + 1]])
        base = bases[i]
        more_data[i] = _more_segments(ln[s0:s1], max(mss[i], 1), more)
        sent_segs[i] = _loss_exposure(st[s0:s1], seq[s0:s1], ln[s0:s1], at[a0:a1], srtt[a0:a1], least,
                                      ep_start[e_lo[i]:e_hi[i]], ep_end[e_lo[i]:e_hi[i]], ep_first[e_lo[i]:e_hi[i]],
                                      scratch[3], loss_exposed[loss_off[i]:loss_off[i + 1]], base, max(mss[i], 1),
                                      loss_segs[loss_off[i]:loss_off[i + 1]], more)
        _drops(st[s0:s1], seq[s0:s1], ln[s0:s1], kind[s0:s1], ep_start[e_lo[i]:e_hi[i]], base, max(mss[i], 1),
               drop_seg[drop_off[i]:drop_off[i + 1]], drop_ep[drop_off[i]:drop_off[i + 1]],
               loss_retx[loss_off[i]:loss_off[i + 1]])
    return (rates[:w], rate_off, samples, rtt_min, deep, top, loss_off, loss_q, loss_retx, loss_exposed, flight,
            loss_segs, drop_off, drop_seg, drop_ep, sent_segs, more_data)


@njit(cache=True, nogil=True, inline="always")
def _segments_carried(ln: int, mss: int) -> int:
    """How many of the flow's segments one transmission of ``ln`` payload bytes carries: one MSS each, rounded up
    (a super-segment a host capture saw before the NIC cut it — TSO/GSO, docs/ingest.md — carries several, each
    of which went on the wire and met the path alone)."""
    return (ln + mss - 1) // mss


@njit(cache=True, nogil=True)
def _more_segments(ln: np.ndarray, mss: int, more: np.ndarray) -> int:
    """The segments one flow's data rows carry beyond one each (:func:`_segments_carried`), before each row, to
    ``more`` (``more[k]``: rows ``0:k``; ``len(ln) + 1`` long at least); returns the flow's total. 0 throughout
    where no row carries more than an MSS."""
    total = 0
    for k in range(len(ln)):
        more[k] = total
        if ln[k] > mss:
            total += _segments_carried(ln[k], mss) - 1
    more[len(ln)] = total
    return total


@njit(cache=True, nogil=True)
def _first_byte(seq: np.ndarray, ln: np.ndarray, kind: np.ndarray, mss: int) -> tuple[int, int]:
    """How many segments one flow's retransmissions carrying data resent (:func:`_segments_carried`: a GSO
    super-segment's each; ingest counts the transmission once in its episode), and its first data byte as the
    capture saw it: the lowest sequence a data segment carried — below 0 where the capture's first packets
    acknowledged data that is later retransmitted (ingest numbers bytes from the first sequence or acknowledgement
    seen, docs/ingest.md), not moved to 0, which would leave such a retransmission before the first segment. A
    flow without data has no byte to number its segments from: 0 then, and nothing is numbered from it. Segment
    k of the flow holds the bytes from it + k·MSS, as the simulation numbers its segments."""
    first = 0
    seen = False
    retransmitted = 0
    for k in range(len(seq)):
        if ln[k] > 0:
            if not seen or seq[k] < first:
                first = seq[k]
                seen = True
            if kind[k] == 1:
                retransmitted += _segments_carried(ln[k], mss)
    return retransmitted, first


@njit(cache=True, nogil=True)
def _drops(st: np.ndarray, seq: np.ndarray, ln: np.ndarray, kind: np.ndarray, ep_start: np.ndarray, base: int,
           mss: int, out_seg: np.ndarray, out_ep: np.ndarray, retx: np.ndarray) -> None:
    """Each segment one flow's retransmissions resent (rows of kind 1 with data, in the order sent; a GSO
    super-segment's :func:`_segments_carried` segments in turn, each a drop the path dealt it): the segment —
    counted in MSS from the flow's first byte ``base`` — to ``out_seg``, and the loss episode it was counted in —
    the last that started by then: every retransmission opens an episode or joins the open one (ingest) — to
    ``out_ep`` (−1: before any episode, which ingest does not produce). The episode's start and the segment's time
    are the same packet's on two clocks (each less the flow's first packet, in floats): they are compared within
    :data:`SAME_PACKET_S`. A super-segment's segments beyond its first are added to its episode's ``retx``
    (ingest counts the transmission once)."""
    w = 0
    for k in range(len(kind)):
        if kind[k] == 1 and ln[k] > 0:
            first = (seq[k] - base) // mss
            ep = search_sorted(ep_start, st[k] + SAME_PACKET_S, True) - 1
            carried = _segments_carried(ln[k], mss)
            for j in range(carried):
                out_seg[w] = first + j
                out_ep[w] = ep
                w += 1
            if carried > 1 and 0 <= ep < len(retx):
                retx[ep] += carried - 1


@njit(cache=True, nogil=True)
def _max_flight(at: np.ndarray, ack: np.ndarray, st: np.ndarray, seq: np.ndarray, ln: np.ndarray) -> float:
    """The most payload bytes one flow had in flight as the capture point saw it: at each ACK, the highest
    sequence sent by then less the highest acknowledged (NaN without data or ACKs). A segment reordered in the
    capture only delays when its end counts."""
    if not len(at) or not len(st):
        return np.nan
    most = 0.0
    sent = -1.0
    acked = -1.0
    j = 0
    for k in range(len(at)):
        while j < len(st) and st[j] <= at[k]:
            sent = max(sent, float(seq[j] + ln[j]))
            j += 1
        acked = max(acked, float(ack[k]))
        if sent >= 0.0:
            most = max(most, sent - acked)
    return most


@njit(cache=True, nogil=True)
def _sender_pairs(out: np.ndarray, at: np.ndarray, ack: np.ndarray, rtt: np.ndarray, seq: np.ndarray,
                  ln: np.ndarray, kind: np.ndarray, mss: int, overhead: int, scratch: tuple[Any, ...]) -> int:
    """One flow's pair rates from its ACKs (sender side or a mid-path tap: :func:`ack_pairs`), written to
    ``out``; returns how many. ACK rows with equal timestamps are one event (§1.1): its last row. The new
    segments' ends and the retransmitted segments' starts are sorted for the pairs' lookups (new data is
    sent in sequence order, so the ends are sorted only when a capture reordered them). ``scratch``: the
    events' times, ACK numbers and RTTs, the segment ends, the retransmission starts, and :data:`TRAIN`
    bits and gaps."""
    ev_t, ev_ack, ev_rtt, ends, retx, bits, gaps = scratch
    ne = 0
    ev_min = np.inf
    found = False
    for k in range(len(at)):
        if k == len(at) - 1 or at[k + 1] != at[k]:
            ev_t[ne] = at[k]
            ev_ack[ne] = ack[k]
            ev_rtt[ne] = rtt[k]
            ne += 1
            if not np.isnan(rtt[k]) and (not found or rtt[k] < ev_min):
                ev_min = rtt[k]
                found = True
    ns = 0
    ordered = True
    for k in range(len(kind)):
        if kind[k] == 0:
            ends[ns] = seq[k] + ln[k]
            if ns and ends[ns] < ends[ns - 1]:
                ordered = False
            ns += 1
    if not ordered:
        sort_in_place(ends[:ns])
    nr = 0
    for k in range(len(kind)):
        if kind[k] == 1 and ln[k] > 0:
            retx[nr] = seq[k]
            nr += 1
    sort_in_place(retx[:nr])
    if not found:
        return 0
    return ack_pairs(out, ev_t[:ne], ev_ack[:ne], ev_rtt[:ne], ev_min, ends[:ns], retx[:nr], mss, overhead, bits,
                     gaps)


@njit(cache=True, nogil=True)
def _rtt_figures(at: np.ndarray, rtt: np.ndarray, rtt_t: np.ndarray, rtt_v: np.ndarray, heap: np.ndarray
                 ) -> tuple[int, float, float, float]:
    """One flow's RTT samples (its ACK rows with one), copied to ``rtt_t``/``rtt_v``: how many, the smallest,
    and the :data:`DEEP_QUANTILE` and :data:`TOP_QUANTILE` queueing delays (sample less the smallest) — NaN
    without a sample. ``heap``: scratch for :func:`top_ranks`."""
    nv = 0
    for k in range(len(at)):
        if not np.isnan(rtt[k]):
            rtt_t[nv] = at[k]
            rtt_v[nv] = rtt[k]
            nv += 1
    if not nv:
        return 0, np.nan, np.nan, np.nan
    least = rtt_v[0]
    for k in range(1, nv):
        least = min(least, rtt_v[k])
    d, t = top_ranks(rtt_v[:nv], int(DEEP_QUANTILE * (nv - 1)), int(TOP_QUANTILE * (nv - 1)), heap)
    return nv, least, d - least, t - least


@njit(cache=True, nogil=True)
def _loss_queues(at: np.ndarray, srtt: np.ndarray, rtt_t: np.ndarray, rtt_v: np.ndarray, least: float,
                 ep_start: np.ndarray, ep_retx: np.ndarray, loss_q: np.ndarray, loss_retx: np.ndarray) -> None:
    """The queueing delay before each of one flow's loss episodes, written to ``loss_q`` (its retransmissions
    to ``loss_retx``): the deepest RTT sample (``rtt_t``/``rtt_v``) of the last smoothed RTT before the
    episode's first retransmission, less the flow's smallest (``least``) — those ACKs timed the segments sent
    just before the dropped one. Without a smoothed RTT there, the span is the smallest sample (0 without
    one)."""
    for e in range(len(ep_start)):
        start = ep_start[e]
        k = search_sorted(at, start, True) - 1
        sk = srtt[max(k, 0)] if len(at) > 0 else np.nan
        span = sk if k >= 0 and np.isfinite(sk) else (least if np.isfinite(least) else 0.0)
        deepest = np.nan
        for j in range(search_sorted(rtt_t, start - span, False), search_sorted(rtt_t, start, True)):
            deepest = rtt_v[j] if deepest != deepest else max(deepest, rtt_v[j])
        loss_q[e] = deepest - least
        loss_retx[e] = ep_retx[e]


@njit(cache=True, nogil=True)
def _loss_exposure(st: np.ndarray, seq: np.ndarray, ln: np.ndarray, at: np.ndarray, srtt: np.ndarray, least: float,
                   ep_start: np.ndarray, ep_end: np.ndarray, ep_first: np.ndarray, sent: np.ndarray,
                   exposed: np.ndarray, base: int, mss: int, segs: np.ndarray, more: np.ndarray) -> int:
    """How many of one flow's data transmissions each loss episode decides the fate of, written to ``exposed``: a
    drop among them is repaired by a retransmission the episode counts, so it cannot be told from the episode's
    other losses. They are the transmissions from the first one of the episode's first retransmitted byte
    (``ep_first``: the earliest row whose sequence reached past it — a dropped original seen at the sender, or
    the first segment above the hole where the capture point lies past the drop) to one smoothed RTT before the
    episode ended (the last whose loss could be found before its recovery point was acknowledged; the capture's
    end for an episode still open), each counted in one episode at most (an episode's window starts where the
    previous one's ended). ``sent``: scratch for the highest sequence sent by each row. The same windows in
    segments to ``segs`` (from, past: the segments first sent in the window, counted in ``mss`` from the flow's
    first byte ``base``); returns the segments the flow sent (its highest sequence, in segments). ``more``: the
    segments the rows carry beyond one each, before each row (:func:`_more_segments`), so that a super-segment
    counts each of its segments among the transmissions."""
    top = base
    for k in range(len(seq)):
        top = max(top, seq[k] + ln[k])
        sent[k] = top
    sent = sent[:len(seq)]
    done = -np.inf  # where the previous episode's window ended
    for e in range(len(ep_start)):
        segs[e, 0] = segs[e, 1] = 0
        j = search_sorted(sent, ep_first[e], True)  # the first row that sent the episode's first byte
        w0 = max(st[j] if j < len(st) else np.inf, done)
        k = search_sorted(at, ep_start[e], True) - 1
        sk = srtt[k] if k >= 0 else np.nan
        span = sk if np.isfinite(sk) else (least if np.isfinite(least) else 0.0)
        w1 = ep_end[e] - span if np.isfinite(ep_end[e]) else np.inf
        if w1 < w0:
            exposed[e] = 0
            continue
        r0, r1 = search_sorted(st, w0, False), search_sorted(st, w1, True)
        exposed[e] = r1 - r0 + more[r1] - more[r0]
        done = w1
        if r1 > r0:
            segs[e, 0] = ((sent[r0 - 1] if r0 > 0 else base) - base) // mss
            segs[e, 1] = (sent[r1 - 1] - base + mss - 1) // mss
    return (top - base + mss - 1) // mss


def _frozen(a: Any, dtype: type) -> np.ndarray:
    """``a`` as a contiguous read-only array of ``dtype`` (a view when it is one already): the kernel then
    compiles once, whatever the caller's arrays (ingest's tables are read-only, Polars' and scratch ones not)."""
    a = np.ascontiguousarray(a, dtype)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _bounds(offsets: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (flows + 1), or a (2, flows) array of each flow's first and past-last row, as (first, past)."""
    o = np.asarray(offsets, np.int64)
    return (o[0], o[1]) if o.ndim == 2 else (o[:-1], o[1:])


def flow_parts_batch(flow_ids: Sequence[int] | np.ndarray, links: Links | Sequence[LinkInfo],
                     acks: Mapping[str, np.ndarray], row_offsets: Sequence[int] | np.ndarray,
                     segments: Mapping[str, np.ndarray], seg_offsets: Sequence[int] | np.ndarray,
                     episodes: Any) -> PathBatch:
    """The path evidence of many flows at once: what :func:`flow_parts` gives each, as a :class:`PathBatch`
    (row ``i`` is flow ``flow_ids[i]``'s). ``links``: their :class:`LinkInfo` (:meth:`Links.of` their
    summaries). ``acks``: numpy columns ``t_rel``, ``ack``, ``rtt``, ``srtt`` (nulls as NaN, as
    ``replay.engine.FlowColumns`` holds them), flow ``i``'s rows ``row_offsets[i]:row_offsets[i + 1]``;
    ``segments``: ``t_rel``, ``seq``, ``len``, ``kind`` (0 = new, 1 = retransmission), cut by
    ``seg_offsets``. Either offsets may instead be a (2, flows) array of each flow's first and past-last row
    (the whole table's columns for some of its flows). ``episodes``: the capture's episode table (columns
    ``flow_id`` and :data:`EVIDENCE_EPISODE_COLUMNS`; a Polars frame or a mapping), or its rows for these flows."""
    ep_ids = _column(episodes, "flow_id", np.int64)
    eps: tuple[np.ndarray, ...] = evidence_episode_arrays(episodes)
    if len(ep_ids) > 1 and bool(np.any(ep_ids[1:] < ep_ids[:-1])):
        order = np.argsort(ep_ids, kind="stable")
        ep_ids, eps = ep_ids[order], tuple(c[order] for c in eps)
    ids = np.asarray(flow_ids, np.int64)
    a_lo, a_hi = _bounds(row_offsets)
    s_lo, s_hi = _bounds(seg_offsets)
    return _parts_batch(ids, links, acks, a_lo, a_hi, segments, s_lo, s_hi, eps,
                        np.searchsorted(ep_ids, ids, side="left"), np.searchsorted(ep_ids, ids, side="right"))


#: The episode table's columns the evidence reads (ingest's ``episodes``).
EVIDENCE_EPISODE_COLUMNS = ("start_t_rel", "retransmissions", "start_t", "end_t", "first_retx_seq")


def evidence_episode_arrays(episodes: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The loss episodes' starts (s from the flow's first packet), retransmissions, ends on the same clock (NaN
    while open at the capture's end) and first retransmitted bytes, from the columns :data:`EVIDENCE_EPISODE_COLUMNS` of
    ingest's table (a Polars frame or a mapping of arrays)."""
    if not len(episodes["start_t_rel"]):
        return np.empty(0), np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64)
    starts, retx, start_t, end_t, first = (_column(episodes, name, dt) for name, dt in zip(
        EVIDENCE_EPISODE_COLUMNS, (np.float64, np.int64, np.float64, np.float64, np.int64), strict=True))
    return starts, retx, starts + (end_t - start_t), first


def flow_parts(flow_id: int, link: LinkInfo, acks: Any, segments: Any, episodes: Any) -> PathParts:
    """One flow's path evidence (:func:`flow_parts_batch` of one). ``acks``: columns ``t_rel``, ``ack``, ``rtt``,
    ``srtt`` (ACK rows); ``segments``: ``t_rel``, ``seq``, ``len``, ``kind`` (0 = new, 1 = retransmission, as
    ingest codes them); ``episodes``: its columns :data:`EVIDENCE_EPISODE_COLUMNS` (Polars frames or mappings of numpy
    arrays)."""
    at = _column(acks, "t_rel", np.float64)
    a = {"t_rel": at, "rtt": _column(acks, "rtt", np.float64), "srtt": _column(acks, "srtt", np.float64),
         # (the receiver side reads no ACK numbers: its pairs are data segments)
         "ack": _column(acks, "ack", np.int64) if link.vantage != "receiver" else np.zeros(len(at), np.int64)}
    s = {n: _column(segments, n, dt) for n, dt in (("t_rel", np.float64), ("seq", np.int64), ("len", np.int64),
                                                   ("kind", np.int64))}
    eps = evidence_episode_arrays(episodes)
    one = np.zeros(1, np.int64)
    return _parts_batch(np.array([flow_id], np.int64), [link], a, one, np.array([len(at)]), s, one,
                        np.array([len(s["t_rel"])]), eps, one, np.array([len(eps[0])]))[0]


def _parts_batch(ids: np.ndarray, links: Links | Sequence[LinkInfo], acks: Mapping[str, np.ndarray],
                 a_lo: np.ndarray, a_hi: np.ndarray, segments: Mapping[str, np.ndarray], s_lo: np.ndarray,
                 s_hi: np.ndarray, eps: tuple[np.ndarray, ...], e_lo: np.ndarray, e_hi: np.ndarray) -> PathBatch:
    if not isinstance(links, Links):
        links = Links.from_infos(links)
    if not len(links) == len(ids) == len(a_lo) == len(s_lo):
        raise ValueError(f"{len(ids)} flows but {len(links)} links, {len(a_lo)} ACK and {len(s_lo)} segment runs")
    receiver = np.array([v == "receiver" for v in links.vantage], bool)
    mss = np.maximum(links.mss, 1)
    wire = mss + links.overhead
    # a flow's pairs: at most one per ACK event but the first (sender side), per segment but the first (receiver)
    room = int(np.maximum(np.where(receiver, s_hi - s_lo, a_hi - a_lo) - 1, 0).sum())
    ep_start, ep_retx, ep_end, ep_first = eps
    (rates, rate_off, samples, rtt_min, deep, top, loss_off, loss_q, loss_retx, loss_exposed, flight, loss_segs,
     drop_off, drop_seg, drop_ep, sent_segs, more_data) = _evidence(
        _frozen(a_lo, np.int64), _frozen(a_hi, np.int64), _frozen(s_lo, np.int64), _frozen(s_hi, np.int64),
        _frozen(e_lo, np.int64), _frozen(e_hi, np.int64), _frozen(receiver, np.bool_), _frozen(mss, np.int64),
        _frozen(links.overhead, np.int64), _frozen(acks["t_rel"], np.float64), _frozen(acks["ack"], np.int64),
        _frozen(acks["rtt"], np.float64),
        _frozen(acks["srtt"], np.float64), _frozen(segments["t_rel"], np.float64), _frozen(segments["seq"], np.int64),
        _frozen(segments["len"], np.int64), _frozen(segments["kind"], np.uint8), _frozen(ep_start, np.float64),
        _frozen(ep_retx, np.int64), _frozen(ep_end, np.float64), _frozen(ep_first, np.int64), room)
    hist_off, bins, counts = sparse_histograms(bin_index(rates), rate_off)
    n = len(ids)
    return PathBatch(ids, np.arange(n + 1, dtype=np.int64), np.where(receiver, 0, 1).astype(np.int8), hist_off,
                     bins, counts, np.diff(rate_off), links.delivery_rate_bps * wire / mss, wire, mss, samples,
                     rtt_min, deep, top, loss_off, loss_q, loss_retx, loss_exposed,
                     np.asarray(links.data_segments, np.int64) + more_data,
                     np.array([GRADE_RANK[c] if c else -1 for c in links.confidence], np.int8),
                     np.asarray(links.span_start, np.float64), np.asarray(links.span_end, np.float64),
                     np.asarray(links.rttmin_s, np.float64), np.asarray(links.handshake_rtt_s, np.float64), flight,
                     loss_segs[:, 0].copy(), loss_segs[:, 1].copy(), drop_off, drop_seg, drop_ep, sent_segs)

