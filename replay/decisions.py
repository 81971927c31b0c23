"""Decisions at loss events, batched across flows (docs/estimators.md §1.3, §5).

Every loss episode of a batch's flows becomes one row of :class:`LossEvents` — its decision context (the event,
the flight, RTTmin, the start and end of the recovery), NewReno's ssthresh, the ideal (achieved rate × RTTmin,
and the truth's) and what the real sender did — computed for all the batch's episodes at once. Each estimator's
decisions come back as columns (:class:`DecisionColumns`): the shared Westwood reaction
(``Estimator.decide``, Wang et al. 2002 §2) vectorised over every event; an estimator with its own ``decide`` or
``decide_all`` (CRB, NewBR, TIBET, Westwood+, NewReno, the loss-based controls of §8, plugins) is asked flow by
flow for the flows that had losses, with the same contexts as a flow replayed alone. The §5 decision scores of
every flow are one compiled pass over those columns (:func:`decision_scores_batch`), with numpy's own mean and
median.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ackreplay.estimators.base import FAST_RETRANSMIT, TIMEOUT, Decision, Estimator, LossContext
from ackreplay.estimators.flow_batch import FlowBatch
from ackreplay.jitcache.kernel_mode import njit
from ackreplay.scoring.scores import stream_sums


@dataclass
class LossEvents:
    """Every loss episode of a batch, in flow order then episode order (NaN / -1 = none)."""

    flow: np.ndarray  # int64: position of its flow in the batch
    offsets: np.ndarray  # int64, n_flows + 1: flow f's episodes are offsets[f]:offsets[f+1]
    episode: np.ndarray  # int64: index among its flow's episodes
    kind: list[str]  # fast_retransmit | timeout
    event: np.ndarray  # int64: its flow's last ACK event at or before the decision (-1: none)
    start: np.ndarray  # float64: s since the flow's first packet
    end: np.ndarray  # float64 (NaN: the capture ends first)
    t_abs: np.ndarray  # float64: epoch s of the start
    flight: np.ndarray  # int64 bytes
    rttmin: np.ndarray  # float64 s
    mss: np.ndarray  # int64: its flow's
    newreno: np.ndarray  # float64 segments
    ideal: np.ndarray  # float64 bytes
    ideal_truth: np.ndarray  # float64 bytes
    flight_after: np.ndarray  # int64 (-1: none)
    lowest: np.ndarray  # int64 (-1: none)
    last_timeout: np.ndarray  # float64: start of the flow's latest earlier timeout episode (NaN: none)

    def __len__(self) -> int:
        return len(self.flow)

    def flows(self) -> list[int]:
        """The positions of the flows with at least one loss event."""
        return np.flatnonzero(np.diff(self.offsets) > 0).tolist()

    def contexts(self, f: int) -> list[LossContext]:
        """Flow ``f``'s decision contexts, in episode order (what ``Estimator.decide_all`` reads)."""
        lo, hi = int(self.offsets[f]), int(self.offsets[f + 1])
        out = []
        for j in range(lo, hi):
            end = float(self.end[j])
            last = float(self.last_timeout[j])
            out.append(LossContext(self.kind[j], int(self.event[j]), float(self.start[j]),
                                   None if math.isnan(end) else end, int(self.flight[j]), float(self.rttmin[j]),
                                   int(self.mss[j]), int(self.episode[j]), None if math.isnan(last) else last))
        return out


def loss_events(batch: FlowBatch, episodes: pl.DataFrame | None, achieved: np.ndarray,
                truth: np.ndarray | None) -> LossEvents:
    """The loss events of ``batch``'s flows from their rows of ingest's episode table (``flow_id``, ``kind``,
    ``start_t``, ``end_t``, ``decision_ack_row``; in flow order, each flow's in episode order)."""
    nf = len(batch)
    if episodes is None or not episodes.height:
        e0, f0 = np.empty(0, np.int64), np.empty(0)
        return LossEvents(e0, np.zeros(nf + 1, np.int64), e0, [], e0, f0, f0, f0, e0, f0, e0, f0, f0, f0, e0, e0, f0)
    if "flow_id" in episodes.columns and nf > 1:
        ids = episodes["flow_id"].to_numpy().astype(np.int64)
        order = np.argsort(batch.flow_ids, kind="stable")
        pos = order[np.searchsorted(batch.flow_ids[order], ids)]
    else:  # one flow's own table
        pos = np.zeros(episodes.height, np.int64)
    counts = np.bincount(pos, minlength=nf)
    offsets = np.zeros(nf + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    episode = np.arange(len(pos)) - offsets[pos]
    kind = episodes["kind"].cast(pl.String).to_list()
    row = episodes["decision_ack_row"].to_numpy().astype(np.int64)
    rows = (batch.row_offsets[1:] - batch.row_offsets[:-1])[pos]
    inside = (row >= 0) & (row < rows)
    event = np.full(len(pos), -1, np.int64)
    event[inside] = batch.row_event[(batch.row_offsets[pos] + row)[inside]]
    off = batch.offsets
    has = off[1:] > off[:-1]
    first = np.where(has, batch.t_abs[np.minimum(off[:-1], max(len(batch.t) - 1, 0))]
                     - batch.t[np.minimum(off[:-1], max(len(batch.t) - 1, 0))], 0.0) if len(batch.t) else np.zeros(nf)
    t_first = first[pos]
    start_t = episodes["start_t"].to_numpy().astype(np.float64)
    end_col = episodes["end_t"]
    end_t = end_col.cast(pl.Float64).fill_null(np.nan).to_numpy() if end_col.null_count() else end_col.to_numpy()
    start = start_t - t_first
    end = np.asarray(end_t, np.float64) - t_first
    g = off[pos] + np.maximum(event, 0)
    known = event >= 0
    flight = np.where(known, batch.flight[g] if len(batch.flight) else 0, 0).astype(np.int64)
    rttmin = np.where(known, batch.rttmin[g] if len(batch.rttmin) else np.nan, np.nan)
    srtt = np.where(known, batch.srtt[g] if len(batch.srtt) else np.nan, np.nan)
    mss = batch.mss[pos]
    ref = np.where(known, achieved[g] if len(achieved) else np.nan, np.nan)
    with np.errstate(all="ignore"):
        ideal = ref * rttmin
        ideal = np.where(np.isfinite(ideal), ideal, np.nan)
        if truth is not None:
            tru = np.where(known, truth[g] if len(truth) else np.nan, np.nan)
            ideal_truth = np.where(np.isfinite(tru * rttmin), tru * rttmin, np.nan)
        else:
            ideal_truth = np.full(len(pos), np.nan)
        newreno = np.where(known, np.maximum(flight / 2, 2 * mss) / mss, np.nan)  # newreno_ssthresh_segments
    after, lowest, last_timeout = _real_sender(off, batch.t, batch.flight, pos, offsets, start, end, srtt,
                                               np.array([k == TIMEOUT for k in kind], np.bool_))
    return LossEvents(pos.astype(np.int64), offsets, episode, kind, event, start, end, start + t_first, flight, rttmin,
                      mss, newreno, ideal, ideal_truth, after, lowest, last_timeout)


@njit(cache=True, nogil=True)
def _real_sender(off: np.ndarray, t: np.ndarray, flight: np.ndarray, pos: np.ndarray, ep_off: np.ndarray,
                 start: np.ndarray, end: np.ndarray, srtt: np.ndarray, timeout: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per loss event: the real sender's flight one smoothed RTT after it (-1: none), its lowest flight in the
    recovery (the events in [start, end], or to the flow's last event; -1: none), and the start of the flow's
    latest earlier timeout episode (NaN: none)."""
    m = len(pos)
    after = np.full(m, -1, np.int64)
    lowest = np.full(m, -1, np.int64)
    last_timeout = np.full(m, np.nan)
    for f in range(len(ep_off) - 1):
        lo, hi = off[f], off[f + 1]
        tf = t[lo:hi]
        last = np.nan
        for j in range(ep_off[f], ep_off[f + 1]):
            last_timeout[j] = last
            s = start[j]
            if np.isfinite(srtt[j]):
                k = np.searchsorted(tf, s + srtt[j], side="right") - 1
                if k >= 0:
                    after[j] = flight[lo + k]
            stop = end[j] if not np.isnan(end[j]) else (tf[-1] if hi > lo else s)
            a = np.searchsorted(tf, s, side="left")
            b = np.searchsorted(tf, stop, side="right")
            if b > a:
                low = flight[lo + a]
                for k in range(a + 1, b):
                    low = min(low, flight[lo + k])
                lowest[j] = low
            if timeout[j]:
                last = s
    return after, lowest, last_timeout


@dataclass
class DecisionColumns:
    """One estimator's decision at every loss event of a batch (NaN / "" = none)."""

    estimate: np.ndarray  # bytes/s used
    ssthresh: np.ndarray  # segments
    cwnd: np.ndarray  # segments
    applied: np.ndarray  # Westwood+: when cwnd = ssthresh takes effect (s since the flow's first packet)
    note: list[str]


def decide_batch(e: Estimator, batch: FlowBatch, est: np.ndarray, ev: LossEvents,
                 decided: dict[int, list[Decision]] | None = None) -> DecisionColumns:
    """``e``'s decisions at every loss event of the batch: the shared Westwood reaction vectorised; an estimator
    with its own ``decide``/``decide_all`` flow by flow on the flows with losses (``decided``: decisions already
    taken, by flow position — a plugin's, checked)."""
    m = len(ev)
    off = batch.offsets
    if decided is None and type(e).decide is Estimator.decide and type(e).decide_all is Estimator.decide_all:
        known = ev.event >= 0
        g = off[ev.flow] + np.maximum(ev.event, 0)
        estimate = np.where(known, est[g] if len(est) else np.nan, np.nan)
        ok = ~np.isnan(estimate) & ~np.isnan(ev.rttmin)
        with np.errstate(all="ignore"):
            ss = np.where(ok, np.maximum(estimate * ev.rttmin / ev.mss, 2.0), np.nan)
            fr = np.array([k == FAST_RETRANSMIT for k in ev.kind], np.bool_)
            cwnd = np.where(ok, np.where(fr, np.minimum(ev.flight / ev.mss, ss), 1.0), np.nan)
        return DecisionColumns(estimate, ss, cwnd, np.full(m, np.nan), [""] * m)
    cols = DecisionColumns(np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan), [""] * m)
    for f in ev.flows():
        if decided is not None:
            got = decided[f]
        else:
            lo, hi = int(off[f]), int(off[f + 1])
            got = e.decide_all(batch.flow(f), est[lo:hi], ev.contexts(f))
        for j, d in zip(range(int(ev.offsets[f]), int(ev.offsets[f + 1])), got, strict=True):
            cols.estimate[j] = math.nan if d.estimate is None else d.estimate
            cols.ssthresh[j] = math.nan if d.ssthresh_segments is None else d.ssthresh_segments
            cols.cwnd[j] = math.nan if d.cwnd_segments is None else d.cwnd_segments
            cols.applied[j] = math.nan if d.cwnd_applied_t is None else d.cwnd_applied_t
            cols.note[j] = d.note
    return cols


def decision_scores_batch(ev: LossEvents, ss: np.ndarray, n_flows: int, with_truth: bool, newreno: bool
                          ) -> np.ndarray:
    """The §5 decision scores of every flow (one row each, ``results.DECISION_KEYS`` then, with the truth,
    ``results.DECISION_TRUTH_KEYS``; NaN = none): ``decisions`` counts the events at which the estimator set an
    ssthresh; the ratios use the events with an ideal > 0. ``newreno``: "closer than NewReno" means nothing for
    NewReno itself (None)."""
    with np.errstate(all="ignore"):
        ideal = ev.ideal / ev.mss
        ideal_truth = ev.ideal_truth / ev.mss
    out = decision_scores_kernel(ev.offsets, ss, ideal, ideal_truth, ev.newreno, with_truth)
    if newreno:
        out[:, 3] = np.nan
        if with_truth:
            out[:, 8] = np.nan
    return out[:, : 9 if with_truth else 5]


@njit(cache=True, nogil=True)
def _np_mean(v: np.ndarray) -> float:
    """``np.mean`` of a float64 array: numpy's pairwise sum (``scores.stream_sums``) over its length."""
    ones = np.ones(len(v))
    return stream_sums(0, len(v), ones, v, v, 0.0)[1] / len(v)


@njit(cache=True, nogil=True)
def _np_median(v: np.ndarray) -> float:
    """``np.median``: the middle value of the sorted values, or the mean of the two middle ones."""
    s = np.sort(v)
    n = len(s)
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2.0


@njit(cache=True, nogil=True)
def _ratios(ss: np.ndarray, ideal: np.ndarray, nr: np.ndarray, lo: int, hi: int, out: np.ndarray, at: int) -> None:
    r = np.empty(hi - lo)
    n = np.empty(hi - lo)
    m = k = closer = count = 0
    for j in range(lo, hi):
        s, i, x = ss[j], ideal[j], nr[j]
        has_i = not np.isnan(i) and i > 0
        ok = not np.isnan(s) and has_i
        if ok:
            r[m] = s / i
            m += 1
        if has_i and not np.isnan(x):
            n[k] = x / i
            k += 1
        if ok and not np.isnan(x):
            count += 1
            closer += abs(s - i) < abs(x - i)
    out[at] = _np_mean(r[:m]) if m else np.nan
    out[at + 1] = _np_median(r[:m]) if m else np.nan
    out[at + 2] = _np_median(n[:k]) if k else np.nan
    out[at + 3] = closer / count if count else np.nan


@njit(cache=True, nogil=True)
def decision_scores_kernel(offsets: np.ndarray, ss: np.ndarray, ideal: np.ndarray, ideal_truth: np.ndarray,
                           nr: np.ndarray, with_truth: bool) -> np.ndarray:
    """The §5 decision scores of every flow (``offsets``: flow f's loss events are ``offsets[f]:offsets[f+1]``)
    from its events' ssthresh, ideal (with the truth's) and NewReno's ssthresh, in segments (NaN = none): nine
    columns, ``results.DECISION_KEYS`` then ``results.DECISION_TRUTH_KEYS`` (NaN without ``with_truth``)."""
    nf = len(offsets) - 1
    out = np.full((nf, 9), np.nan)
    for f in range(nf):
        lo, hi = offsets[f], offsets[f + 1]
        decided = 0
        for j in range(lo, hi):
            decided += not np.isnan(ss[j])
        _ratios(ss, ideal, nr, lo, hi, out[f], 0)
        out[f, 4] = decided
        if with_truth:
            _ratios(ss, ideal_truth, nr, lo, hi, out[f], 5)
    return out


def decision_frame(ev: LossEvents, names: Sequence[str], decided: Sequence[DecisionColumns]) -> pl.DataFrame:
    """One row per (loss event, estimator), event by event in the estimators' order, with the columns of
    ``results.DECISION_SCHEMA`` (flow ``f``'s rows are ``offsets[f]·k:offsets[f+1]·k``, k estimators)."""
    from ackreplay.replay.results import DECISION_SCHEMA

    k = len(names)
    m = len(ev)
    e_idx = np.repeat(np.arange(m), k)

    def per_estimator(arrays: Sequence[np.ndarray]) -> np.ndarray:
        return np.stack(arrays, axis=1).reshape(-1) if m else np.empty(0)

    def none_if(a: np.ndarray, missing: np.ndarray) -> pl.Series:
        return pl.Series(a).set(pl.Series(missing), None) if missing.any() else pl.Series(a)

    ss = per_estimator([d.ssthresh for d in decided])
    mss = ev.mss[e_idx]
    est = per_estimator([d.estimate for d in decided])
    with np.errstate(all="ignore"):
        cols = {
            "episode": ev.episode[e_idx], "kind": [ev.kind[j] for j in e_idx.tolist()], "t": ev.t_abs[e_idx],
            "t_rel": ev.start[e_idx], "estimator": list(names) * m, "estimate_bps": est * 8,
            "rttmin_s": ev.rttmin[e_idx], "ssthresh_segments": ss, "ssthresh_bytes": ss * mss,
            "cwnd_segments": per_estimator([d.cwnd for d in decided]),
            "cwnd_applied_t_rel": per_estimator([d.applied for d in decided]),
            "note": [d.note[j] for j in range(m) for d in decided],
            "newreno_ssthresh_segments": ev.newreno[e_idx], "ideal_bytes": ev.ideal[e_idx],
            "ideal_segments": ev.ideal[e_idx] / mss, "ideal_truth_bytes": ev.ideal_truth[e_idx],
            "ideal_truth_segments": ev.ideal_truth[e_idx] / mss, "flight_before_bytes": ev.flight[e_idx],
        }
    frame = pl.DataFrame(cols, schema_overrides={n: t for n, t in DECISION_SCHEMA.items() if n in cols})
    after, lowest = ev.flight_after[e_idx], ev.lowest[e_idx]
    return frame.with_columns(
        pl.col(pl.Float64).fill_nan(None),
        none_if(after, after < 0).alias("flight_after_srtt_bytes").cast(pl.Int64),
        none_if(lowest, lowest < 0).alias("lowest_flight_in_recovery_bytes").cast(pl.Int64),
    )
