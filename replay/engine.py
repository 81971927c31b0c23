"""Replay: one flow's ACK stream through every estimator — series, decisions at every loss event,
references and scores (docs/estimators.md §1, §4, §5) — and many flows at once as one batch. A whole capture's
flows, batched, with their shared paths and the capture's aggregate: ``replay.capture``.

Pure: it takes ingest results and returns Polars tables and dicts. Every result records the
estimator name, its parameters and the package version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from ackreplay.estimators import __version__
from ackreplay.estimators.base import Decision, Estimator, LossContext
from ackreplay.estimators.flow_batch import FlowBatch
from ackreplay.estimators.inputs import ACK_FILL, FlowInputs, numpy_columns
from ackreplay.estimators.plugins import PluginFailure, checked_series, is_plugin
from ackreplay.path.analytic import measured_shares, sender_behaviour
from ackreplay.path.evidence import PathBatch, PathParts
from ackreplay.path.flow_evidence import flow_parts, flow_parts_batch
from ackreplay.path.groups import bottleneck_group_rows
from ackreplay.path.inference import infer, infer_batch
from ackreplay.path.links import LinkInfo
from ackreplay.replay.batch_kernels import (
    achieved_rates,
    diagnostics_scan,
    relative_scores_batch,
    score_windows,
    series_scores_batch,
    time_weights_batch,
)
from ackreplay.replay.decisions import (
    DecisionColumns,
    LossEvents,
    decide_batch,
    decision_frame,
    decision_scores_batch,
    loss_events,
)
from ackreplay.replay.parallel import Beside, run_jobs
from ackreplay.replay.plan import summary_frame
from ackreplay.replay.results import (
    DECISION_SCHEMA,
    BatchDecisions,
    BatchDiagnostics,
    BatchResults,
    BatchScores,
    EstimatorColumns,
    FlowReplay,
    sample_columns,
    scores_frame,
)
from ackreplay.scoring.comparable import incomparable_reason, time_constant
from ackreplay.scoring.limits import CWND, FlowLimits, batch_limits
from ackreplay.scoring.ranking import NOT_REPRODUCIBLE
from ackreplay.scoring.scores import CONVERGENCE_HOLD, SCRATCH_ROWS, TOLERANCE

__all__ = ["DECISION_SCHEMA", "FlowReplay", "FlowSource", "replay_batch", "replay_flow", "scores_frame"]

REFERENCE_WINDOW = 1.0  # W, s (docs/scores.md §4)
#: Bytes per event that a flow's replay holds from its first round of jobs to its end (the achieved rate,
#: the time weights, the event times), and the footprints of the first round's jobs (achieved rate, time
#: weights, diagnostics) — measured like ``Estimator.footprint``; see ``replay.parallel.fitting_workers``.
HELD_BYTES_PER_EVENT = 24.0
FIRST_ROUND_FOOTPRINTS = (24.0, 16.0, 24.0)
#: Bytes per event what limited a sender (``scoring.limits``) holds at its peak: 203 B on a 1 M-event flow of 2 M
#: data segments (tracemalloc), rounded up.
LIMITS_BYTES_PER_EVENT = 220.0


def describe(estimators: Sequence[Estimator]) -> list[dict[str, Any]]:
    """Name, parameters and the code's version of each estimator, recorded with every result: ackreplay's
    version for its own; a plugin's distribution version (None for a file) and the SHA-256 of its source."""
    out = []
    for e in estimators:
        row: dict[str, Any] = {"name": e.name, "parameters": dict(e.params), "version": __version__}
        if e.name != e.kind:  # a sweep's variant: re[tau=0.5] of re
            row["estimator"] = e.kind
        if is_plugin(e):
            row.update(version=e.origin.get("version"), origin=dict(e.origin), code_sha256=e.code_sha256)
        out.append(row)
    return out


@dataclass
class FlowSource:
    """One flow of a batch: what replay reads besides its ACK events (``FlowBatch``)."""

    flow_id: int
    vantage: str
    #: Its loss episodes (ingest's table; None or empty: none). ``flow_sources`` reads them only for the truth's
    #: loss labels: ``replay_flows`` hands each batch its rows of the capture's table instead.
    episodes: pl.DataFrame | None = None
    #: The truth (bytes/s at each event, or a function of absolute event times); None without
    truth: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None
    loss_truth: Mapping[int, str] | None = None  # episode → ``random``/``congestion`` (capture metadata)
    link: LinkInfo | None = None  # adds the flow's path (§9)
    #: Where the capture was taken on the round trip (0 sender, 1 receiver; None = 0): ``scoring.limits``
    #: moves the data it saw back to when it was sent
    vantage_position: float | None = None


def replay_flow(flow_id: int, vantage: str, acks: pl.DataFrame | Mapping[str, np.ndarray],
                segments: pl.DataFrame | Mapping[str, np.ndarray], episodes: pl.DataFrame,
                mss: int, estimators: Sequence[Estimator], *, truth: np.ndarray | Callable[[np.ndarray], np.ndarray]
                | None = None, loss_truth: Mapping[int, str] | None = None, keep_series: bool = True,
                release: Callable[[], None] | None = None, memory_budget: int | None = None,
                link: LinkInfo | None = None, vantage_position: float | None = None) -> FlowReplay:
    """Replay one flow (its ``acks`` and ``segments``: frames, or numpy columns as ``FlowInputs.from_frames``
    takes them) — a batch of one through :func:`replay_batch`, the same code as a capture's many flows.
    ``truth`` (bytes/s at each event, or a function of absolute event times) is optional; ``loss_truth`` labels
    loss episodes ``random``/``congestion`` (capture metadata) for the diagnostics; without ``keep_series`` the
    result holds the scores, decisions and diagnostics but not the series. ``release`` (the flow's rows in a
    spilled capture's file mappings) is called after each estimator's job, so that the input pages a job read
    stop counting in the process's memory (the next job reads them again from the page cache): on a flow of
    millions of events they are most of replay's resident memory. ``memory_budget`` (bytes, None = unlimited):
    no more jobs run side by side than their footprints fit in (``replay.parallel``); the results are the
    same either way. ``link`` (from the flow's summary: ``LinkInfo.of``) adds the flow's path (§9) — ``acks``
    then need ``ack``, ``rtt`` and ``srtt``, ``segments`` ``seq`` and ``kind`` — and makes it the diagnostics'
    capacity. What limited the sender (``scoring.limits``) reads ``acks``' ``rwnd`` and ``sacked`` where it has
    them, and ``vantage_position`` (``FlowSummary.vantage_position``)."""
    batch = FlowBatch.of_flow(acks, segments, mss, flow_id)
    rows = (acks, segments)  # (the path reads them only with a ``link``; the limits read ``rwnd``, ``sacked``)
    source = FlowSource(flow_id, vantage, episodes, truth, loss_truth, link, vantage_position)
    flows, _ = replay_batch(batch, [source], estimators, keep_series=keep_series, release=release,
                            memory_budget=memory_budget, path_rows=rows)
    return flows[0]


def replay_batch(batch: FlowBatch, sources: Sequence[FlowSource], estimators: Sequence[Estimator], *,
                 keep_series: bool = True, release: Callable[[], None] | None = None,
                 memory_budget: int | None = None,
                 path_rows: tuple[Any, Any] | None = None, episodes: pl.DataFrame | None = None,
                 network_only: bool = True) -> tuple[list[FlowReplay], BatchScores]:
    """Replay every flow of ``batch`` (``sources`` in batch order): each step one compiled call over all the
    flows — the score windows, the achieved rate, the time weights, the diagnostics, then per estimator its
    series (``Estimator.series_batch``), its decision at every loss event (flows with loss events only) and
    its scores as columns. Returns each flow's :class:`FlowReplay` (scores and diagnostics read from the
    batch's columns on first use) and the batch's :class:`BatchScores`. ``path_rows``: the batch's ACK rows
    (``ack``, ``rtt``, ``srtt``, ``t_rel``) and segments (``t_rel``, ``len``, ``seq``, ``kind``), concatenated
    as the batch was built, for the flows with a ``link`` (their path, §9). ``episodes``: the batch's rows of
    ingest's episode table (column ``flow_id``, in flow order), when not each source's own. ``network_only``
    (the default): the scores and decisions over the time the network limited each sender only
    (``scoring.comparable``); else over the whole score window."""
    n = batch.events
    start, end = score_windows(batch.offsets, batch.t, batch.srtt, batch.seg_offsets, batch.seg_t)
    truth_arr = _truth_column(batch, sources)
    # Two rounds of independent jobs on every core (``replay.parallel``). First the achieved rate, the
    # time weights and the diagnostics over every event; then one job per estimator, the costliest first: its
    # series, its decisions and its scores, after which the series is dropped unless kept.
    budget = None if memory_budget is None else memory_budget - HELD_BYTES_PER_EVENT * n
    by_cost = sorted(estimators, key=lambda e: -e.cost)
    # What limited each sender (``scoring.limits``) reads the batch alone and only the scores need it: it runs on
    # a thread beside the first round and the estimators' series (``replay.parallel.Beside``).
    # The path (§9) too, after it on the same thread (its footprint is below the limits').
    room = partial(Beside, n=n, footprint=LIMITS_BYTES_PER_EVENT * n, budget=budget,
                   beside=max((e.footprint for e in by_cost), default=0.0) * n + SCRATCH_ROWS * 8 * n)
    limits: Beside[list[FlowLimits]] = room(partial(_limits, batch, sources, path_rows))
    if episodes is None:
        episodes = _own_episodes(sources)
    paths: Beside[dict[int, tuple[PathParts, dict[str, Any]]]] = room(
        partial(_paths, batch, sources, path_rows, episodes))
    # work on the side thread holds its footprint while the rounds below run: they get what is left of the budget
    if budget is not None and (limits.beside or paths.beside):
        budget -= LIMITS_BYTES_PER_EVENT * n
    try:
        first = _first_round(batch, start, end, budget)
        ev = loss_events(batch, episodes, first.achieved, truth_arr)
        if release is not None:  # what the first round read: the jobs below read their own columns again
            release()
        # scores over the time the network limited the sender only (``scoring.comparable``): each event's weight
        # kept where the limits say ``cwnd``, and each decision where its loss event does
        scope = Beside(lambda: _weighed(network_scope(batch, limits.get(), ev, network_only), first.weights), 0)
        run = BatchRun(batch, sources, ev, ev.flows(), start, first.achieved, scope, truth_arr, keep_series,
                       release)
        done = dict(zip((e.name for e in by_cost),
                        run_jobs([partial(run.estimator_job, e) for e in by_cost], n,
                                 footprints=[e.footprint * n for e in by_cost], budget=budget), strict=True))
    except BaseException:
        limits.settle()
        paths.settle()
        raise
    vantages = [s.vantage for s in sources]
    labels = {e.name: {v: e.not_reproducible(v) for v in set(vantages)} for e in estimators}
    scores = BatchScores(batch.flow_ids, vantages, [
        EstimatorColumns(e.name, dict(e.params), series=done[e.name].scores, truth=done[e.name].truth_scores,
                         decisions=done[e.name].decision_scores, failures=done[e.name].failures,
                         labels=labels[e.name]) for e in estimators])
    shared = BatchResults(
        scores, BatchDiagnostics(vantages, batch.counts(), first.compressed,
                                 sample_columns(batch.t, batch.d, batch.offsets, first.top), batch.mss),
        BatchDecisions(decision_frame(ev, [e.name for e in estimators], [done[e.name].decisions for e in estimators])
                       ) if len(ev) else None)
    out = _flow_replays(run, end, estimators, done, labels, shared, paths.get())
    tau = time_constant(e.params for e in estimators)
    loss_counts = scope.get().scope.loss_counts
    for i, (fr, lim) in enumerate(zip(out, limits.get(), strict=True)):
        fr.limits = lim
        span = float(lim.end[-1] - lim.start[0]) if len(lim.code) else 0.0
        fr.comparable_reason = incomparable_reason(lim.shares, span, int(loss_counts[i]), tau)
    batch.forget_members()
    return out, scores


#: BE's largest raw samples the diagnostics list per flow (§7)
LARGEST_SAMPLES = 3
_NO_EPISODES = {"start_t_rel": np.empty(0), "retransmissions": np.empty(0, np.int64)}


class FirstRound(NamedTuple):
    """What the first round of a batch's jobs computes over every event, before any estimator runs."""

    achieved: np.ndarray  # bytes/s at every event (``references.achieved_rate``)
    weights: np.ndarray  # how long each event's value holds inside its flow's score window (s)
    compressed: np.ndarray  # per flow: ACK intervals under ``diagnostics.COMPRESSED_S``
    top: np.ndarray  # (flows, LARGEST_SAMPLES): BE's largest raw samples, as interval indices (-1 = none)


def _first_round(batch: FlowBatch, start: np.ndarray, end: np.ndarray, budget: float | None) -> FirstRound:
    """The achieved rate, the time weights and the diagnostics scan of every flow, as three jobs side by side."""
    off, n = batch.offsets, batch.events
    got: list[Any] = run_jobs(
        [lambda _: achieved_rates(off, batch.t, batch.acked, REFERENCE_WINDOW),
         lambda _: time_weights_batch(off, batch.t, start, end),
         lambda _: diagnostics_scan(off, batch.t, batch.d, LARGEST_SAMPLES)],
        n, rows=0, footprints=[f * n for f in FIRST_ROUND_FOOTPRINTS], budget=budget)
    compressed, top = got[2]
    return FirstRound(got[0], got[1], compressed, top)


def _own_episodes(sources: Sequence[FlowSource]) -> pl.DataFrame | None:
    """The sources' own episode tables as one (a batch of one: the flow's; None when no flow has one)."""
    own = [src.episodes for src in sources if src.episodes is not None and src.episodes.height]
    return own[0] if len(own) == 1 and len(sources) == 1 else (pl.concat(own) if own else None)


class EstimatorJob(NamedTuple):
    """What one estimator's job over a batch returns (:meth:`BatchRun.estimator_job`)."""

    series: np.ndarray | None  # its estimate at every event, bytes/s (None unless the series are kept)
    decisions: DecisionColumns  # its decision at every loss event of the batch
    scores: np.ndarray  # per flow, against the achieved rate: ``results.SERIES_KEYS`` (rates in bits/s)
    truth_scores: np.ndarray | None  # per flow, against the truth: ``results.TRUTH_KEYS`` (None without one)
    failures: dict[int, str]  # batch position → why a plugin has no estimate on that flow
    decision_scores: np.ndarray  # per flow: the §5 decision scores (``results.DECISION_KEYS``)


@dataclass(frozen=True)
class BatchRun:
    """What every estimator's job over one batch reads: the batch, its flows, their loss events and the first
    round's columns (:func:`replay_batch`)."""

    batch: FlowBatch
    sources: Sequence[FlowSource]
    events: LossEvents
    lossy: list[int]  # the positions of the flows with at least one loss event (``LossEvents.flows``)
    start: np.ndarray  # per flow: its score window's start (s since its first packet)
    achieved: np.ndarray
    scope: Beside[WeighedScope]  # the network-limited time and the time weights kept in it (:func:`_weighed`)
    truth: np.ndarray | None  # the truth at every event (NaN on flows without one); None when no flow has one
    keep_series: bool
    release: Callable[[], None] | None  # hands the batch's input pages back after each job (a long flow's)

    def estimator_job(self, e: Estimator, scratch: np.ndarray) -> EstimatorJob:
        """``e``'s series over the batch, its decisions at every loss event and its scores (``scratch``: the
        worker's buffer, ``replay.parallel``)."""
        batch = self.batch
        failures: dict[int, str] = {}
        if is_plugin(e):
            est, dec = self._plugin(e, failures)
        else:
            est = e.series_batch(batch)
            dec = decide_batch(e, batch, est, self.events)
        for i in self.lossy:
            e.forget(batch.flow(i))
        scope = self.scope.get()
        dscores = decision_scores_batch(self.events, np.where(scope.scope.losses, dec.ssthresh, np.nan), len(batch),
                                        self.truth is not None, e.name == "newreno")
        vals = series_scores_batch(batch.offsets, batch.t, est, self.achieved, scope.weights, self.start, TOLERANCE,
                                   CONVERGENCE_HOLD, scratch)
        vals[:, :2] *= 8  # mean and median in bits/s
        tru = None if self.truth is None else relative_scores_batch(
            batch.offsets, batch.t, est, self.truth, scope.weights, self.start, TOLERANCE, CONVERGENCE_HOLD)
        if self.release is not None:
            self.release()
        return EstimatorJob(est if self.keep_series else None, dec, vals, tru, failures, dscores)

    def _plugin(self, e: Estimator, failures: dict[int, str]) -> tuple[np.ndarray, DecisionColumns]:
        """A plugin's series and decisions, flow by flow (``_plugin_job``): its failures noted in ``failures``."""
        lossy = set(self.lossy)
        parts, decided = [], {}
        for i, src in enumerate(self.sources):
            ctxs = self.events.contexts(i) if i in lossy else []
            est_i, dec_i, failure = _plugin_job(e, self.batch.flow(i), src.flow_id, ctxs)
            parts.append(est_i)
            if ctxs:
                decided[i] = dec_i
            if failure is not None:
                failures[i] = failure
        est = np.concatenate(parts) if parts else np.empty(0)
        return est, decide_batch(e, self.batch, est, self.events, decided)


def _flow_replays(run: BatchRun, end: np.ndarray, estimators: Sequence[Estimator],
                  done: Mapping[str, EstimatorJob], labels: Mapping[str, Mapping[str, str | None]],
                  shared: BatchResults, path_of: Mapping[int, tuple[PathParts, dict[str, Any]]]
                  ) -> list[FlowReplay]:
    """Each flow's :class:`FlowReplay` over the batch's columns: its series (when kept), the vantage evidence
    (``_vantage_evidence``) and its path with the capacity it makes the diagnostics'."""
    batch, off, ev = run.batch, run.batch.offsets, run.events
    k = len(estimators)
    out = []
    for i, src in enumerate(run.sources):
        lo, hi = int(off[i]), int(off[i + 1])
        extra: dict[str, Any] = {}
        _vantage_evidence(extra, src.vantage, labels)
        cols: dict[str, np.ndarray] | None = None
        if run.keep_series:
            cols = {"t": batch.t_abs[lo:hi], "t_rel": batch.t[lo:hi], "achieved": run.achieved[lo:hi]}
            if run.truth is not None:
                cols["truth"] = run.truth[lo:hi]
            for e in estimators:
                cols[e.name] = done[e.name].series[lo:hi]  # type: ignore[index]  # kept: keep_series
        fr = FlowReplay.in_batch(src.flow_id, src.vantage, cols, (float(run.start[i]), float(end[i])), hi - lo,
                                 shared, i, (int(ev.offsets[i]) * k, int(ev.offsets[i + 1]) * k), src.loss_truth,
                                 extra)
        if i in path_of:
            fr.path_parts, fr.path = path_of[i]
            extra["dispersion_capacity_bps"] = fr.path["capacity_bps"]
            extra["dispersion_from"] = fr.path_parts.source
        out.append(fr)
    return out


def _paths(batch: FlowBatch, sources: Sequence[FlowSource], path_rows: tuple[Any, Any] | None,
           episodes: pl.DataFrame | None) -> dict[int, tuple[PathParts, dict[str, Any]]]:
    """The path (§9) of every flow of the batch with a ``link``: its evidence and its ``path`` object, all the
    flows' at once (``path.flow_parts_batch``, ``infer_batch``); a batch of one through ``flow_parts`` (its
    tables as given: frames or numpy columns)."""
    linked = [i for i, src in enumerate(sources) if src.link is not None]
    if not linked or path_rows is None:
        return {}
    if len(sources) == 1:
        src = sources[0]
        assert src.link is not None  # (linked)
        own = episodes if episodes is not None else src.episodes  # (the batch's rows are the flow's)
        parts = flow_parts(src.flow_id, src.link, path_rows[0], _rows(path_rows[1], batch.seg_offsets, 0),
                           own if own is not None else _NO_EPISODES)
        return {0: (parts, infer(parts))}
    at = np.asarray(linked, np.int64)
    segs = path_rows[1] if path_rows[1] is not None else _rows(None, batch.seg_offsets, 0)
    eps = episodes if episodes is not None else _NO_EPISODES_TABLE
    found = flow_parts_batch(batch.flow_ids[at], [sources[i].link for i in linked], path_rows[0],  # type: ignore[misc]  # (linked: not None)
                             np.stack([batch.row_offsets[at], batch.row_offsets[at + 1]]), segs,
                             np.stack([batch.seg_offsets[at], batch.seg_offsets[at + 1]]), eps)
    return {i: (found[j], path) for j, (i, path) in enumerate(zip(linked, infer_batch(found), strict=True))}


def _limits(batch: FlowBatch, sources: Sequence[FlowSource], path_rows: tuple[Any, Any] | None) -> list[FlowLimits]:
    """What limited each flow's sender (``scoring.limits``), from the batch and its ACK rows' advertised window
    and SACKed bytes (``rwnd``, ``sacked``: absent from a table that lacks them, and then not used)."""
    acks = path_rows[0] if path_rows is not None else None
    pos = np.array([np.nan if s.vantage_position is None else s.vantage_position for s in sources], np.float64)
    return batch_limits(batch, _ack_column(acks, "rwnd"), _ack_column(acks, "sacked"), pos)


class WeighedScope(NamedTuple):
    """A batch's :class:`NetworkScope` and its time weights kept in it (the first round's, 0 outside it)."""

    scope: NetworkScope
    weights: np.ndarray


def _weighed(scope: NetworkScope, weights: np.ndarray) -> WeighedScope:
    return WeighedScope(scope, weights * scope.events)


class NetworkScope(NamedTuple):
    """Where the network limited the sender in a batch (``scoring.limits``' ``cwnd`` intervals)."""

    events: np.ndarray  # float64 per event: 1 in a ``cwnd`` interval, else 0 (the time weights' factor)
    losses: np.ndarray  # bool per loss event: it started in a ``cwnd`` interval
    loss_counts: np.ndarray  # int64 per flow: its loss events in ``cwnd`` intervals


def network_scope(batch: FlowBatch, limits: Sequence[FlowLimits], ev: LossEvents, network_only: bool = True
                  ) -> NetworkScope:
    """Which events and loss events of a batch lie in the time the network limited the sender; without
    ``network_only`` every event is scored (``loss_counts`` still counts those in it)."""
    events = np.zeros(batch.events)
    losses = np.zeros(len(ev), np.bool_)
    off, eoff = batch.offsets, ev.offsets
    for i, lim in enumerate(limits):
        lo, hi = int(off[i]), int(off[i + 1])
        events[lo:hi] = lim.label_at(batch.t[lo:hi]) == CWND
        a, b = int(eoff[i]), int(eoff[i + 1])
        if b > a:
            losses[a:b] = lim.label_at(ev.start[a:b]) == CWND
    upto = np.concatenate(([0], np.cumsum(losses, dtype=np.int64)))
    counts = upto[eoff[1:]] - upto[eoff[:-1]]
    if not network_only:
        return NetworkScope(np.ones(batch.events), np.ones(len(ev), np.bool_), counts)
    return NetworkScope(events, losses, counts)


def _ack_column(acks: Any, name: str) -> np.ndarray | None:
    """Column ``name`` of ACK rows given as a frame or as numpy columns (None: absent; nulls as NaN)."""
    if acks is None:
        return None
    if isinstance(acks, pl.DataFrame):
        return acks[name].cast(pl.Float64).to_numpy() if name in acks.columns else None
    col = acks.get(name)
    return None if col is None else np.asarray(col)


_NO_EPISODES_TABLE = {"flow_id": np.empty(0, np.int64), "start_t_rel": np.empty(0),
                      "retransmissions": np.empty(0, np.int64)}


def _rows(table: Any, offsets: np.ndarray, i: int) -> Any:
    """Member ``i``'s rows of a table of the batch's flows (a mapping of columns, or a frame)."""
    if table is None:
        return {n: np.empty(0) for n in ("t_rel", "len", "seq", "kind")}
    if len(offsets) == 2:  # a batch of one: the table is the flow's
        return table
    lo, hi = int(offsets[i]), int(offsets[i + 1])
    return {name: table[name][lo:hi] for name in ("t_rel", "ack", "rtt", "srtt", "len", "seq", "kind")
            if name in table}


def _truth_column(batch: FlowBatch, sources: Sequence[FlowSource]) -> np.ndarray | None:
    """The truth at every event of the batch (concatenated), None when no flow has one."""
    if all(s.truth is None for s in sources):
        return None
    parts = []
    for i, s in enumerate(sources):
        lo, hi = int(batch.offsets[i]), int(batch.offsets[i + 1])
        if s.truth is None:
            parts.append(np.full(hi - lo, np.nan))
        else:
            parts.append(np.asarray(s.truth(batch.t_abs[lo:hi]) if callable(s.truth) else s.truth, np.float64))
    return np.concatenate(parts)

def set_capacity(diagnostics: dict[str, Any], path: Mapping[str, Any], source: str) -> None:
    """The §7 explanations' capacity is the path's (§9): the packet-pair mode, not a median of rates."""
    diagnostics["dispersion_capacity_bps"] = path["capacity_bps"]
    diagnostics["dispersion_from"] = source


def share_paths(flows: Sequence[FlowReplay], summaries: Mapping[int, Any], bulk: Sequence[int]
                ) -> list[dict[str, Any]]:
    """Pool the path evidence of the replayed bulk flows (§4: control connections are no competitors) that
    share a bottleneck (``path.groups.bottleneck_group_rows``): each member's ``path`` takes the group's
    capacity and base RTT; returns one entry per group of two flows or more, with the group's own ``path``, its
    ``members`` (each sender's backoff as the capture shows it, ``path.analytic.sender_behaviour``, and its
    wire rate) and, where a NewReno-like and a Westwood+-like sender share it, Möller et al.'s (2007) shares beside the
    measured ones (``share_model``, else None). The groups are found, pooled and judged for all members at once
    (``PathBatch.merge``, ``infer_batch``): a gather when the flows' evidence is rows of one batch
    (``flow_parts_batch``)."""
    wanted = set(bulk)
    have = list({f.flow_id: f for f in flows if f.path_parts is not None and f.flow_id in wanted}.values())
    ends = [summaries[f.flow_id] for f in have]
    rows, offsets = bottleneck_group_rows([f.flow_id for f in have], [s.sender for s in ends],
                                          [s.receiver for s in ends], [s.start_t for s in ends],
                                          [s.end_t for s in ends], min_size=2)
    members = [have[i] for i in rows.tolist()]
    if not members:
        return []
    parts = PathBatch.stack([f.path_parts for f in members])  # (filtered above: none is None)
    pooled = parts.merge(offsets)
    group = np.repeat(np.arange(len(pooled)), np.diff(offsets))
    sources = [p.source for p in pooled]
    for fr, path, g in zip(members, infer_batch(parts, pooled, group), group.tolist(), strict=True):
        fr.path = path
        set_capacity(fr.diagnostics_updates(), path, sources[g])
    wire = (parts.wire_mss / np.maximum(parts.mss, 1)).tolist()
    out = []
    bounds = offsets.tolist()
    for g, path in enumerate(infer_batch(pooled)):
        group_members = []
        for k in range(bounds[g], bounds[g + 1]):
            fr = members[k]
            rate = float(getattr(summaries[fr.flow_id], "delivery_rate_bps", 0.0) or 0.0)
            group_members.append({"flow_id": fr.flow_id, **sender_behaviour(fr.decision_rows),
                                  "rate_bps": rate * wire[k]})
        out.append({"flows": [m["flow_id"] for m in group_members], "path": path, "members": group_members,
                    "share_model": measured_shares(group_members, path["capacity_bps"], path["buffer_over_bdp"])})
    return out


def _plugin_job(e: Estimator, inp: FlowInputs, flow_id: int, contexts: Sequence[LossContext]
                ) -> tuple[np.ndarray, list[Decision], str | None]:
    """A plugin's series and decisions, checked (``estimators.plugins``): when it raises or returns what an
    estimate cannot be, it has no estimate and no decision on this flow, and the reason is returned."""
    try:
        est = checked_series(e, inp, flow_id)
        return est, e.decide_all(inp, est, list(contexts)), None
    except PluginFailure as failure:
        message = str(failure)
    except Exception as exc:  # the plugin's own decide: any error is its failure
        message = f"estimator {e.name!r} on flow {flow_id}: its decision raised {type(exc).__name__}: {exc}"
    return np.full(len(inp.t), np.nan), [Decision(None, None, None) for _ in contexts], message


def _vantage_evidence(diagnostics: dict[str, Any], vantage: str,
                      labels: Mapping[str, Mapping[str, str | None]]) -> None:
    """Off the sender, the diagnostics say where the ACK timing they report was seen (the share of ACK
    intervals under 100 µs is the capture point's, not the sender's: the return path after it bunches ACKs
    that the capture never sees) and which estimators that makes not reproducible, with the reason.
    ``labels``: estimator → vantage → its not-reproducible label (None where reproducible)."""
    if vantage == "sender":
        return
    diagnostics["ack_timing_seen_at"] = vantage
    why = {name: lab[vantage] for name, lab in labels.items() if lab[vantage] is not None}
    if why:
        diagnostics[NOT_REPRODUCIBLE] = why


NOT_SELECTED = "not selected (--flow/--host/--port)"
#: The start of the reason a flow that breaks ingest's invariants is not replayed, before the invariants it breaks.
INVALID = "invalid: "


#: The summary fields :func:`plan` decides on.
PLAN_FIELDS = ("flow_id", "vantage", "acks", "reconstruction", "reconstruction_sound", "reconstruction_evidence",
               "invalid")


def plan(summaries: Sequence[Any], *, allow_vantage: bool = False,
         only: set[int] | None = None) -> tuple[list[int], dict[int, str]]:
    """Which flows are replayed (§1.0, §7), and why the others are not: captured at the sender, or soundly
    reconstructed from another vantage (a receiver-side flow with RTT samples rebuilt); ``allow_vantage``
    adds the rest. Never a flow that breaks ingest's invariants (``ingest.invariants``: its figures rest on
    sequence numbers from another connection). ``summaries``: ingest FlowSummary-likes, or ingest's columnar
    ``FlowSummaries`` (decided a column at a time)."""
    decided = plan_reasons(summaries, allow_vantage=allow_vantage, only=only)
    todo = decided.filter(pl.col("reason").is_null())["flow_id"].to_list()
    out = decided.filter(pl.col("reason").is_not_null())
    texts: dict[str, str] = {}  # one string object per distinct reason, however many flows give it
    skipped = dict(zip(out["flow_id"].to_list(), [texts.setdefault(t, t) for t in out["reason"].to_list()],
                       strict=True))
    return todo, skipped


def plan_reasons(summaries: Sequence[Any], *, allow_vantage: bool = False,
                 only: set[int] | None = None) -> pl.DataFrame:
    """:func:`plan`'s decision as columns: every flow's ``flow_id`` (Int64) and the ``reason`` it is not
    replayed (null for a flow that is), in order."""
    f = summary_frame(summaries, PLAN_FIELDS,
                      {"reconstruction_sound": False, "reconstruction_evidence": "", "invalid": ""})
    rebuilt = pl.col("reconstruction").is_not_null()
    sound = rebuilt & pl.col("reconstruction_sound").cast(pl.Boolean).fill_null(False)
    evidence = pl.col("reconstruction_evidence").cast(pl.String)
    why = (pl.when(rebuilt).then(pl.when(evidence.fill_null("") != "").then(evidence).otherwise(
        pl.lit("no reconstruction"))).otherwise(pl.lit("no reconstruction of the sender's view for this vantage")))
    if only is not None:  # (a mask: is_in's semantics vary between Polars versions)
        f = f.with_columns(pl.Series("_selected", np.isin(f["flow_id"].cast(pl.Int64).to_numpy(),
                                                          np.fromiter(only, np.int64, len(only)))))
    selected = pl.lit(True) if only is None else pl.col("_selected")
    invalid = pl.col("invalid").cast(pl.String).fill_null("")
    reason = (pl.when(~selected).then(pl.lit(NOT_SELECTED))
              .when(invalid != "").then(pl.concat_str(pl.lit(INVALID), invalid))
              .when((pl.col("vantage").cast(pl.String) != "sender") & ~sound & (not allow_vantage))
              .then(pl.concat_str(pl.lit("vantage "), pl.col("vantage").cast(pl.String), pl.lit(": "), why,
                                  pl.lit(" (--allow-vantage replays it anyway)")))
              .when(pl.col("acks") < 2).then(pl.lit("fewer than two ACKs"))
              .otherwise(pl.lit(None, pl.String)))
    return f.select(pl.col("flow_id").cast(pl.Int64), reason.alias("reason"))


def flow_rows(frame: pl.DataFrame) -> Callable[[int], pl.DataFrame]:
    """A lookup of one flow's rows in a table of many flows (column ``flow_id``).

    Ingest writes each table in flow order, so a flow's rows are one zero-copy slice found by binary
    search; a table in any other order is partitioned once instead.
    """
    ids = frame["flow_id"].to_numpy()
    if not _in_flow_order(ids):
        parts = frame.partition_by("flow_id", as_dict=True)
        return lambda fid: parts.get((fid,), frame.clear())

    def rows(fid: int) -> pl.DataFrame:
        lo, hi = _flow_bounds(ids, fid)
        return frame.slice(lo, hi - lo)

    return rows


def _in_flow_order(ids: np.ndarray) -> bool:
    return not (len(ids) > 1 and bool(np.any(ids[1:] < ids[:-1])))


def _flow_bounds(ids: np.ndarray, fid: int) -> tuple[int, int]:
    """Where flow ``fid``'s rows lie in a table sorted by flow (binary search)."""
    key = ids.dtype.type(fid)  # the column's own type: a Python int would make numpy cast all of ``ids``
    return int(np.searchsorted(ids, key, side="left")), int(np.searchsorted(ids, key, side="right"))


class FlowColumns:
    """One flow's rows of a table of many flows as numpy columns (zero-copy slices when the table is in flow
    order, as ingest writes it); :meth:`bounds` gives where many flows' rows lie, :meth:`gather` those rows.

    ``raw``: the table's columns as a spilled ingest mapped them from its files (``CaptureIngest.mapped``),
    whose nullable columns hold at their nulls exactly what :data:`ACK_FILL` fills in (NaN for the RTTs, −1
    for an absent TSval, SACK block or receive window): those are used as they are instead of a filled copy of
    each (on the 16 M-segment single flow of ``bench.scale``: four copies of 64 MB, for 11 nulls each)."""

    def __init__(self, frame: pl.DataFrame, names: tuple[str, ...],
                 raw: Mapping[str, np.ndarray] | None = None) -> None:
        ids = frame["flow_id"].to_numpy()
        self.in_order = _in_flow_order(ids)
        if not self.in_order:
            order = np.argsort(ids, kind="stable")
            frame, ids = frame[order], ids[order]
        self.ids = ids
        as_is = {n for n in names if n in ACK_FILL and raw is not None and n in raw} if self.in_order else set()
        self.cols = numpy_columns(frame, tuple(n for n in names if n not in as_is))
        for n in as_is:
            col = np.asarray(raw[n])  # type: ignore[index]  # (a plain view of the file mapping: not np.memmap)
            col.flags.writeable = False
            self.cols[n] = col

    def __call__(self, fid: int) -> dict[str, np.ndarray]:
        lo, hi = _flow_bounds(self.ids, fid)
        return {name: col[lo:hi] for name, col in self.cols.items()}

    def bounds(self, fids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each of ``fids``' rows lie (two binary searches for all of them)."""
        key = np.asarray(fids).astype(self.ids.dtype, copy=False)
        return (np.searchsorted(self.ids, key, side="left").astype(np.int64),
                np.searchsorted(self.ids, key, side="right").astype(np.int64))

    def gather(self, lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
        """The rows ``[lo[i], hi[i])`` of every i, concatenated: zero-copy slices when the ranges follow each other
        (every flow of a range replayed), else one gather; read-only either way (as the kernels were compiled)."""
        if not len(lo):
            return {name: col[:0] for name, col in self.cols.items()}
        if len(lo) == 1 or bool(np.all(lo[1:] == hi[:-1])):
            return {name: col[int(lo[0]): int(hi[-1])] for name, col in self.cols.items()}
        sizes = hi - lo
        idx = np.repeat(lo - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes) + np.arange(int(sizes.sum()))
        out = {}
        for name, col in self.cols.items():
            got = col[idx]
            got.flags.writeable = False
            out[name] = got
        return out


def flow_columns(frame: pl.DataFrame, names: tuple[str, ...], raw: Mapping[str, np.ndarray] | None = None
                 ) -> FlowColumns:
    """A lookup of one flow's rows of a table of many flows as numpy columns (:class:`FlowColumns`)."""
    return FlowColumns(frame, names, raw)
