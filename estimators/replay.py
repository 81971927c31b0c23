"""Replay: one flow's ACK stream through every estimator — series, decisions at every loss event,
references and scores (ESTIMATORS.md §1, §4, §5) — and a whole capture's flows with its aggregates.

Pure: it takes ingest results and returns Polars tables and dicts. Every result records the
estimator name, its parameters and the package version.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ackreplay.estimators import __version__
from ackreplay.estimators.base import TIMEOUT, Decision, Estimator, LossContext
from ackreplay.estimators.diagnostics import loss_classes, series_diagnostics
from ackreplay.estimators.inputs import ACK_COLUMNS, ACK_FILL, SEGMENT_COLUMNS, FlowInputs, numpy_columns
from ackreplay.estimators.newreno import newreno_ssthresh_segments
from ackreplay.estimators.parallel import run_jobs
from ackreplay.estimators.references import achieved_rate, truth_rate
from ackreplay.estimators.scores import aggregate, decision_scores, jain, series_scores, time_weights
from ackreplay.estimators.truth import Truth, min_flow_bytes

REFERENCE_WINDOW = 1.0  # W, s (ESTIMATORS.md §4)
#: A spilled capture's flows of at least this many ACK rows hand their input pages back after every
#: estimator's job, not only once replayed (a system call per column range: not worth it on short flows).
RELEASE_PER_JOB_ROWS = 1_000_000
#: Bytes per event that a flow's replay holds from its first round of jobs to its end (the achieved rate,
#: the time weights, the event times), and the footprints of the first round's jobs (achieved rate, time
#: weights, diagnostics) — measured like ``Estimator.footprint``; see ``estimators.parallel.fitting_workers``.
HELD_BYTES_PER_EVENT = 24.0
FIRST_ROUND_FOOTPRINTS = (24.0, 16.0, 24.0)


@dataclass
class FlowReplay:
    """Everything replay produced for one flow."""

    flow_id: int
    vantage: str
    #: The series as columns: t, t_rel (s), achieved, [truth], <estimator> (bytes/s, NaN = none); None when
    #: replay was asked not to keep them (``keep_series=False``: scores only, memory freed flow by flow).
    columns: dict[str, np.ndarray] | None
    #: One row per (loss event, estimator) with :data:`DECISION_SCHEMA`'s columns (as a table: ``decisions``).
    decision_rows: list[dict[str, Any]]
    scores: dict[str, dict[str, Any]]  # estimator → score name → value
    window: tuple[float, float]  # score window, s since the flow's first packet
    diagnostics: dict[str, Any] = field(default_factory=dict)  # why the estimates are what they are (§7)
    events: int = 0  # ACK events replayed (rows with equal timestamps merged, §1.1)
    _series: pl.DataFrame | None = field(default=None, repr=False, compare=False)
    _decisions: pl.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def decisions(self) -> pl.DataFrame:
        """The decision rows as a table, built on first use: a Polars frame costs ~0.4 ms to build, which on a
        capture of thousands of short flows was a quarter of replay's time, and scoring does not need it."""
        if self._decisions is None:
            self._decisions = pl.DataFrame(self.decision_rows, schema=DECISION_SCHEMA)
        return self._decisions

    @property
    def series(self) -> pl.DataFrame:
        """t, t_rel, achieved_bps, [truth_bps], <estimator>_bps (bits/s, null = none), built on first use:
        scoring does not need it, and on a long flow it is the largest thing replay makes."""
        if self.columns is None:
            raise ValueError(f"the series of flow {self.flow_id} were not kept (replay with keep_series=True)")
        if self._series is None:
            # bytes/s → bits/s and NaN → null in one parallel Polars pass (the arrays are wrapped without a copy)
            frame = {(k if k in ("t", "t_rel") else f"{k}_bps"): v for k, v in self.columns.items()}
            self._series = pl.DataFrame(frame).with_columns((pl.exclude("t", "t_rel") * 8).fill_nan(None))
        return self._series

    def scores_frame(self) -> pl.DataFrame:
        """One row per estimator: its scores (ESTIMATORS.md §5; parameters left out)."""
        return scores_frame({self.flow_id: self.scores})

    def _repr_html_(self) -> str:  # notebooks
        return (f"<p>flow {self.flow_id} ({self.vantage}): {self.events} ACK events, "
                f"{self.decisions['episode'].n_unique() if self.decisions.height else 0} loss events</p>"
                + self.scores_frame()._repr_html_())


@dataclass
class CaptureReplay:
    flows: list[FlowReplay]
    skipped: dict[int, str]  # flow id → why it was not replayed
    scores: dict[str, Any]  # estimator → aggregated scores; "fairness" → Jain's indices
    estimators: list[dict[str, Any]] = field(default_factory=list)  # name, parameters, version

    def scores_frame(self) -> pl.DataFrame:
        """One row per (replayed flow, estimator) with its scores."""
        return scores_frame({f.flow_id: f.scores for f in self.flows})

    def _repr_html_(self) -> str:  # notebooks
        skipped = f"; not replayed: {', '.join(map(str, self.skipped))}" if self.skipped else ""
        return f"<p>{len(self.flows)} flows replayed{skipped}</p>" + self.scores_frame()._repr_html_()


def scores_frame(per_flow: Mapping[int, Mapping[str, Mapping[str, Any]]]) -> pl.DataFrame:
    """{flow id: {estimator: scores}} as one row per (flow, estimator); parameters left out."""
    rows = [{"flow_id": fid, "estimator": name, **{k: v for k, v in sc.items() if k != "parameters"}}
            for fid, ests in per_flow.items() for name, sc in ests.items() if name != "fairness"]
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame(
        schema={"flow_id": pl.Int64, "estimator": pl.String})


def describe(estimators: Sequence[Estimator]) -> list[dict[str, Any]]:
    return [{"name": e.name, "parameters": dict(e.params), "version": __version__} for e in estimators]


def replay_flow(flow_id: int, vantage: str, acks: pl.DataFrame | Mapping[str, np.ndarray],
                segments: pl.DataFrame | Mapping[str, np.ndarray], episodes: pl.DataFrame,
                mss: int, estimators: Sequence[Estimator], *, truth: np.ndarray | Callable[[np.ndarray], np.ndarray]
                | None = None, loss_truth: Mapping[int, str] | None = None, keep_series: bool = True,
                release: Callable[[], None] | None = None, memory_budget: int | None = None) -> FlowReplay:
    """Replay one flow (its ``acks`` and ``segments``: frames, or numpy columns as ``FlowInputs.from_frames``
    takes them). ``truth`` (bytes/s at each event, or a function of absolute event times) is optional;
    ``loss_truth`` labels loss episodes ``random``/``congestion`` (capture metadata) for the diagnostics;
    without ``keep_series`` the result holds the scores, decisions and diagnostics but not the series.
    ``release`` (the flow's rows in a spilled capture's file mappings) is called after each estimator's job,
    so that the input pages a job read stop counting in the process's memory (the next job reads them again
    from the page cache): on a flow of millions of events they are most of replay's resident memory.
    ``memory_budget`` (bytes, None = unlimited): no more jobs run side by side than their footprints fit in
    (``estimators.parallel``); the results are the same either way."""
    inp = FlowInputs.from_frames(acks, segments, mss)
    t = inp.t
    truth_arr = truth(inp.t_abs) if callable(truth) else truth
    # score window: one smoothed RTT after the first data segment, to the last ACK
    first_data = float(inp.seg_t[0]) if len(inp.seg_t) else (float(t[0]) if len(t) else 0.0)
    known = ~np.isnan(inp.srtt)
    first_srtt = int(known.argmax()) if len(known) else 0
    start = first_data + (float(inp.srtt[first_srtt]) if len(known) and known[first_srtt] else 0.0)
    del known
    end = float(t[-1]) if len(t) else start
    # Two rounds of independent jobs on every core (``estimators.parallel``). First the achieved rate, the
    # time weights and the flow's diagnostics over its events; then one job per estimator, the costliest
    # first: its series, its decision at every loss event and its scores over time, after which the series
    # is dropped unless kept — so at most one series per core is alive at a time, not one per estimator.
    def diagnosed(_: np.ndarray) -> dict[str, Any]:
        return series_diagnostics(inp, vantage)

    n = len(t)
    budget = None if memory_budget is None else memory_budget - HELD_BYTES_PER_EVENT * n
    first: list[Any] = run_jobs(
        [lambda _: achieved_rate(t, inp.acked, REFERENCE_WINDOW), lambda _: time_weights(t, start, end), diagnosed],
        n, rows=0, footprints=[f * n for f in FIRST_ROUND_FOOTPRINTS], budget=budget)
    achieved: np.ndarray = first[0]
    weights: np.ndarray = first[1]
    diagnostics: dict[str, Any] = first[2]
    events = _loss_events(inp, episodes, achieved, truth_arr)
    if release is not None:  # what the first round read: the jobs below read their own columns again
        release()

    def replayed(e: Estimator) -> Callable[[np.ndarray], tuple[np.ndarray | None, list[Decision], dict[str, Any]]]:
        def job(scratch: np.ndarray) -> tuple[np.ndarray | None, list[Decision], dict[str, Any]]:
            est = e.series(inp)
            decided = [e.decide(inp, est, ev.ctx) for ev in events]
            e.forget(inp)
            scored = series_scores(t, est, achieved, start, end, truth_arr, weights, scratch)
            if release is not None:
                release()
            return (est if keep_series else None), decided, scored
        return job

    by_cost = sorted(estimators, key=lambda e: -e.cost)
    done = dict(zip((e.name for e in by_cost),
                    run_jobs([replayed(e) for e in by_cost], n, footprints=[e.footprint * n for e in by_cost],
                             budget=budget), strict=True))
    rows = _decision_rows(events, [(e.name, done[e.name][1]) for e in estimators], inp.mss)
    diagnostics["loss_classes"] = loss_classes(rows, loss_truth)
    scores: dict[str, dict[str, Any]] = {}
    for e in estimators:
        s = done[e.name][2]
        s.update(_decision_scores([r for r in rows if r["estimator"] == e.name], truth_arr is not None))
        if e.name == "newreno":  # "closer than NewReno" means nothing for NewReno itself
            for k in [k for k in s if k.startswith("closer_than_newreno_share")]:
                s[k] = None
        s["parameters"] = dict(e.params)
        scores[e.name] = s
    columns: dict[str, np.ndarray] | None = None
    if keep_series:
        columns = {"t": inp.t_abs, "t_rel": t, "achieved": achieved}
        if truth_arr is not None:
            columns["truth"] = truth_arr
        for e in estimators:
            columns[e.name] = done[e.name][0]  # type: ignore[assignment]  # kept: keep_series
    return FlowReplay(flow_id, vantage, columns, rows, scores, (start, end), diagnostics, len(t))


def _decision_scores(rows: Sequence[dict[str, Any]], with_truth: bool) -> dict[str, Any]:
    """The §5 decision scores of one estimator's rows. ``decisions`` counts every loss event at which it
    set an ssthresh (it had an estimate), whether or not an ideal exists there (corrected §5, issue #10);
    the ratios use the events that have one."""
    decided = sum(1 for r in rows if r["ssthresh_segments"] is not None)

    def ratios(ideal_col: str) -> tuple[list[float | None], list[float | None], list[bool | None]]:
        r, n, c = [], [], []
        for row in rows:
            s_, i_, nr_ = row["ssthresh_segments"], row[ideal_col], row["newreno_ssthresh_segments"]
            ok = s_ is not None and i_ is not None and i_ > 0
            r.append(s_ / i_ if ok else None)
            n.append(nr_ / i_ if i_ is not None and i_ > 0 and nr_ is not None else None)
            c.append(abs(s_ - i_) < abs(nr_ - i_) if ok and nr_ is not None else None)
        return r, n, c

    out = decision_scores(*ratios("ideal_segments"))
    out["decisions"] = decided
    if with_truth:
        out.update(decision_scores(*ratios("ideal_truth_segments"), "_truth"))
    return out


@dataclass(frozen=True)
class _LossEvent:
    """What every estimator's decision row at one loss event shares: its context, NewReno's ssthresh, the
    ideal and what the real sender did (computed once per event, not once per estimator)."""

    ctx: LossContext
    t_abs: float
    rttmin: float
    newreno: float | None
    ideal: float | None
    ideal_truth: float | None
    flight_after: int | None
    lowest_flight: int | None


def _loss_events(inp: FlowInputs, episodes: pl.DataFrame, achieved: np.ndarray, truth: np.ndarray | None
                 ) -> list[_LossEvent]:
    """Each loss episode's decision context and shared columns, in episode order."""
    out: list[_LossEvent] = []
    if not episodes.height:  # (most flows of a busy capture: Polars' row iterator costs ~70 µs even then)
        return out
    mss = inp.mss
    t_first_abs = float(inp.t_abs[0] - inp.t[0]) if len(inp.t) else 0.0
    last_timeout: float | None = None
    for i, ep in enumerate(episodes.iter_rows(named=True)):
        row = int(ep["decision_ack_row"])
        event = int(inp.row_event[row]) if 0 <= row < len(inp.row_event) else -1
        start = float(ep["start_t"]) - t_first_abs
        end = None if ep["end_t"] is None else float(ep["end_t"]) - t_first_abs
        flight = int(inp.flight[event]) if event >= 0 else 0
        rttmin = float(inp.rttmin[event]) if event >= 0 else math.nan
        srtt = float(inp.srtt[event]) if event >= 0 else math.nan
        ctx = LossContext(str(ep["kind"]), event, start, end, flight, rttmin, mss, i, last_timeout)
        ref = float(achieved[event]) if event >= 0 else math.nan
        ideal = ref * rttmin if math.isfinite(ref * rttmin) else None
        tru = float(truth[event]) if truth is not None and event >= 0 else None
        ideal_truth = tru * rttmin if tru is not None and math.isfinite(tru * rttmin) else None
        after, lowest = _real_sender(inp, start, end, srtt)
        nr = newreno_ssthresh_segments(flight, mss) if event >= 0 else None
        out.append(_LossEvent(ctx, start + t_first_abs, rttmin, nr, ideal, ideal_truth, after, lowest))
        if ctx.kind == TIMEOUT:
            last_timeout = start
    return out


def _decision_rows(events: Sequence[_LossEvent], decided: Sequence[tuple[str, Sequence[Decision]]], mss: int
                   ) -> list[dict[str, Any]]:
    """One row per (loss event, estimator), event by event in the estimators' order: what it would have set,
    NewReno's, the ideal, the real sender."""
    rows: list[dict[str, Any]] = []
    for i, ev in enumerate(events):
        ctx, ideal, ideal_truth = ev.ctx, ev.ideal, ev.ideal_truth
        for name, decisions in decided:
            dec = decisions[i]
            rows.append({
                "episode": i, "kind": ctx.kind, "t": ev.t_abs, "t_rel": ctx.start_t, "estimator": name,
                "estimate_bps": None if dec.estimate is None else dec.estimate * 8,
                "rttmin_s": None if math.isnan(ev.rttmin) else ev.rttmin,
                "ssthresh_segments": dec.ssthresh_segments,
                "ssthresh_bytes": None if dec.ssthresh_segments is None else dec.ssthresh_segments * mss,
                "cwnd_segments": dec.cwnd_segments, "cwnd_applied_t_rel": dec.cwnd_applied_t, "note": dec.note,
                "newreno_ssthresh_segments": ev.newreno,
                "ideal_bytes": ideal, "ideal_segments": None if ideal is None else ideal / mss,
                "ideal_truth_bytes": ideal_truth,
                "ideal_truth_segments": None if ideal_truth is None else ideal_truth / mss,
                "flight_before_bytes": ctx.flight, "flight_after_srtt_bytes": ev.flight_after,
                "lowest_flight_in_recovery_bytes": ev.lowest_flight,
            })
    return rows


#: Columns of the decisions table (one row per loss event and estimator).
DECISION_SCHEMA = {
    "episode": pl.Int64, "kind": pl.String, "t": pl.Float64, "t_rel": pl.Float64, "estimator": pl.String,
    "estimate_bps": pl.Float64, "rttmin_s": pl.Float64, "ssthresh_segments": pl.Float64,
    "ssthresh_bytes": pl.Float64, "cwnd_segments": pl.Float64, "cwnd_applied_t_rel": pl.Float64,
    "note": pl.String, "newreno_ssthresh_segments": pl.Float64, "ideal_bytes": pl.Float64,
    "ideal_segments": pl.Float64, "ideal_truth_bytes": pl.Float64, "ideal_truth_segments": pl.Float64,
    "flight_before_bytes": pl.Int64, "flight_after_srtt_bytes": pl.Int64,
    "lowest_flight_in_recovery_bytes": pl.Int64,
}


def _real_sender(inp: FlowInputs, start: float, end: float | None, srtt: float) -> tuple[int | None, int | None]:
    """The real sender's flight one smoothed RTT after the event, and its lowest flight in recovery."""
    after = None
    if math.isfinite(srtt):
        k = int(np.searchsorted(inp.t, start + srtt, side="right")) - 1
        after = int(inp.flight[k]) if k >= 0 else None
    stop = end if end is not None else (float(inp.t[-1]) if len(inp.t) else start)
    lo = int(np.searchsorted(inp.t, start, side="left"))  # events in [start, stop]: t is sorted
    hi = int(np.searchsorted(inp.t, stop, side="right"))
    lowest = int(inp.flight[lo:hi].min()) if hi > lo else None
    return after, lowest


NOT_SELECTED = "not selected (--flow/--host/--port)"


def plan(summaries: Sequence[Any], *, allow_vantage: bool = False,
         only: set[int] | None = None) -> tuple[list[int], dict[int, str]]:
    """Which flows are replayed (§1.0, §7), and why the others are not: captured at the sender, or soundly
    reconstructed from another vantage (a receiver-side flow with RTT samples rebuilt); ``allow_vantage``
    adds the rest. ``summaries``: ingest FlowSummary-likes."""
    todo: list[int] = []
    skipped: dict[int, str] = {}
    for s in summaries:
        if only is not None and s.flow_id not in only:
            skipped[s.flow_id] = NOT_SELECTED
            continue
        rebuilt = getattr(s, "reconstruction", None) is not None
        sound = rebuilt and bool(getattr(s, "reconstruction_sound", False))
        if s.vantage != "sender" and not sound and not allow_vantage:
            why = (getattr(s, "reconstruction_evidence", "") or "no reconstruction") if rebuilt else (
                "no reconstruction of the sender's view for this vantage")
            skipped[s.flow_id] = f"vantage {s.vantage}: {why} (--allow-vantage replays it anyway)"
        elif s.acks < 2:
            skipped[s.flow_id] = "fewer than two ACKs"
        else:
            todo.append(s.flow_id)
    return todo, skipped


def bulk_flow_ids(summaries: Sequence[Any], truth: Truth | None) -> list[int]:
    """Flows that carry at least ``min_flow_bytes`` (§4: the competitors for a fair share)."""
    min_bytes = min_flow_bytes(truth)
    return [s.flow_id for s in summaries if s.bytes >= min_bytes]


def truth_function(truth: Truth | None, flow_id: int, deliveries: list[np.ndarray]
                   ) -> Callable[[np.ndarray], np.ndarray] | None:
    """The true share of one flow as a function of absolute time; ``deliveries``: for each bulk flow, the
    times of its ACKs that delivered data (sorted)."""
    if truth is None:
        return None

    def fn(at: np.ndarray) -> np.ndarray:
        return truth_rate(truth, flow_id, at, deliveries, REFERENCE_WINDOW)

    return fn


def capture_scores(flow_scores: Sequence[tuple[int, dict[str, dict[str, Any]]]], summaries: Sequence[Any],
                   estimator_names: Sequence[str], truth: Truth | None) -> dict[str, Any]:
    """Per capture: every score averaged over the replayed flows (in flow order) and Jain's fairness."""
    scores: dict[str, Any] = {n: aggregate([fs[n] for _, fs in flow_scores]) for n in estimator_names}
    bulk = set(bulk_flow_ids(summaries, truth))
    fairness: dict[str, float | None] = {"goodput": jain(s.goodput_bps for s in summaries if s.flow_id in bulk)}
    for n in estimator_names:
        fairness[n] = jain(fs[n]["mean_bps"] for fid, fs in flow_scores if fid in bulk)
    scores["fairness"] = fairness
    return scores


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
    order, as ingest writes it); :meth:`span` gives where they lie in the table (None when it was reordered).

    ``raw``: the table's columns as a spilled ingest mapped them from its files (``CaptureIngest.mapped``),
    whose nullable columns hold at their nulls exactly what :data:`ACK_FILL` fills in (NaN for the RTTs, −1
    for an absent TSval): those are used as they are instead of a filled copy of each (on the 16 M-segment
    single flow of ``bench.scale``: four copies of 64 MB, for 11 nulls each)."""

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

    def span(self, fid: int) -> tuple[int, int] | None:
        return _flow_bounds(self.ids, fid) if self.in_order else None


def flow_columns(frame: pl.DataFrame, names: tuple[str, ...], raw: Mapping[str, np.ndarray] | None = None
                 ) -> FlowColumns:
    """A lookup of one flow's rows of a table of many flows as numpy columns (:class:`FlowColumns`)."""
    return FlowColumns(frame, names, raw)


def replay_capture(cap: Any, estimators: Sequence[Estimator], *, truth: Truth | None = None,
                   allow_vantage: bool = False, progress: Callable[[int, int], None] | None = None,
                   only: set[int] | None = None, keep_series: bool = True) -> CaptureReplay:
    """Replay every sender-side flow of an ingested capture (``ingest.CaptureIngest``). Without ``keep_series``
    each flow's series are dropped once scored (``FlowReplay.columns`` None): memory then grows with the
    largest flow, not with the capture. Each flow keeps to the memory budget the capture was ingested
    within (``CaptureIngest.memory_budget``), if any."""
    episodes = flow_rows(cap.episodes)
    # the ACK and segment columns as numpy arrays, converted once; each flow gets zero-copy slices
    acks = flow_columns(cap.acks, ACK_COLUMNS, getattr(cap, "mapped", {}).get("acks"))
    segments = flow_columns(cap.segments, SEGMENT_COLUMNS)
    deliveries = []  # for the truth's fair share: when each bulk flow delivered data
    for fid in bulk_flow_ids(cap.flows, truth) if truth is not None else []:
        a = acks(fid)
        deliveries.append(a["t"][a["acked"] > 0])
    todo, skipped = plan(cap.flows, allow_vantage=allow_vantage, only=only)
    release = getattr(cap, "release", None)  # a spilled capture: each flow's file pages back to the kernel
    budget = getattr(cap, "memory_budget", None)  # the capture's, which each flow's replay keeps to
    by_id = {s.flow_id: s for s in cap.flows}
    flows: list[FlowReplay] = []
    for n, fid in enumerate(todo):
        if progress is not None:
            progress(n, len(todo))
        s = by_id[fid]
        eps = episodes(fid)
        labels = truth.loss_labels(s.sender, s.receiver, eps["start_t"].to_list()) if truth is not None else None
        spans = [(table, span) for table, cols in (("acks", acks), ("segments", segments))
                 if release is not None and (span := cols.span(fid)) is not None]

        def release_flow(spans: list[tuple[str, tuple[int, int]]] = spans) -> None:
            for table, (lo, hi) in spans:
                release(table, lo, hi)  # type: ignore[misc]  # (spans is empty without it)

        flows.append(replay_flow(fid, s.vantage, acks(fid), segments(fid), eps,
                                 s.mss, estimators, truth=truth_function(truth, fid, deliveries), loss_truth=labels,
                                 keep_series=keep_series, memory_budget=budget,
                                 release=release_flow if spans and s.acks >= RELEASE_PER_JOB_ROWS else None))
        if spans:
            release_flow()
    if progress is not None:
        progress(len(todo), len(todo))
    scores = capture_scores([(f.flow_id, f.scores) for f in flows], cap.flows, [e.name for e in estimators], truth)
    return CaptureReplay(flows, skipped, scores, describe(estimators))
