"""Reading runs back: status and progress (a page of captures at a time), skipped flows, scores, series with
downsampling, decisions, congestion graphs (and a capture's own, with no run), and the leaderboard. The
comparison document is ``core.run_document``'s."""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import polars as pl
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ackreplay.core.config import get_settings
from ackreplay.core.errors import NotFound, ServiceError
from ackreplay.core.orm import (
    Capture,
    DecisionRow,
    FlowDiagnostics,
    Owner,
    Result,
    Run,
    RunCapture,
    Task,
    epoch,
)
from ackreplay.core.owners import owned
from ackreplay.core.skipped_flows import skipped_page, stored_summary
from ackreplay.core.storage import Store, get_store
from ackreplay.core.stored_capture import capture_bulk, read_tables, stored_truth
from ackreplay.core.stored_flows import StoredFlow, flow_fields, flow_summaries, stored_flow
from ackreplay.core.stored_names import current_names
from ackreplay.graphs.congestion import CongestionSource
from ackreplay.replay.results import DECISION_SCHEMA
from ackreplay.scoring import ranking


def get_run(session: Session, owner: Owner, run_id: str) -> Run:
    return owned(session, owner, Run, run_id, "run")


#: A run's status lists its captures a page at a time (a batch may hold thousands), and of each capture the
#: first skipped flows with counts by reason (``core.skipped_flows``: a capture may skip 1 000 000 flows): one
#: status stays within a few MB however large the run.
STATUS_PAGE = 100
MAX_PAGE = 1000


#: What :func:`waiting` reads of a run's unfinished tasks.
TASK_STATE = (Task.status, Task.released_at, Task.note, Task.heartbeat_at, Task.updated_at)


def status(session: Session, run: Run, *, offset: int = 0, limit: int = STATUS_PAGE) -> dict[str, Any]:
    """The run's status, progress and timings, and one page of its captures (``offset``, ``limit``)."""
    finished = Task.status.in_(("done", "failed"))
    ingest, replay = (func.coalesce(func.sum(Task.seconds).filter(Task.kind == kind), 0.0)
                      for kind in ("ingest", "replay"))
    done, total, ingest_s, replay_s = session.execute(
        select(func.count().filter(finished), func.count(), ingest, replay).where(Task.run_id == run.id)).one()
    # (the columns waiting() reads, not the tasks' flow-id lists: a run is polled often while it runs)
    unfinished = list(session.execute(select(*TASK_STATE).where(Task.run_id == run.id,
                                                                Task.status.in_(("queued", "started")))))
    rcs = session.scalars(select(RunCapture).where(RunCapture.run_id == run.id)
                          .order_by(RunCapture.queued_at, RunCapture.capture_id).offset(offset).limit(limit))
    return {
        "id": run.id, "status": run.status, "is_default": run.is_default, "estimators": run.estimators,
        "version": run.version, "created_at": run.created_at, "started_at": run.started_at,
        "finished_at": run.finished_at, "error": run.error,
        "progress": {"tasks_done": int(done), "tasks_total": int(total)},
        "timings_s": {"ingest": float(ingest_s or 0.0), "replay": float(replay_s or 0.0)},
        "captures": [capture_status(rc) for rc in rcs], "captures_total": capture_count(session, run),
        "offset": offset, "limit": limit,
        "waiting": waiting(run, unfinished),
    }


def capture_count(session: Session, run: Run) -> int:
    return int(session.scalar(select(func.count()).select_from(RunCapture).where(RunCapture.run_id == run.id)) or 0)


def capture_status(rc: RunCapture) -> dict[str, Any]:
    """One capture in a run: its status and error, and its skipped flows summarised (the first
    ``SKIPPED_SHOWN`` by flow id, how many in all, how many per kind of reason: ``core.skipped_flows``)."""
    skipped = stored_summary(rc)
    return {"capture_id": rc.capture_id, "status": rc.status, "error_code": rc.error_code, "error": rc.error,
            "skipped_flows": skipped.shown, "skipped_total": skipped.total, "skipped_counts": skipped.counts}


class RowsPage(NamedTuple):
    """One page of rows (the flows a capture of a run skipped: flow id, reason; what limited each flow's sender;
    a flow's decisions), and how many there are."""

    items: list[dict[str, Any]]
    total: int


def run_capture(session: Session, run: Run, capture_id: str) -> RunCapture:
    """One capture of the run (whichever page of the run's status lists it); ``capture_not_found`` when the run
    has no such capture."""
    rc = session.get(RunCapture, (run.id, capture_id))
    if rc is None:
        raise NotFound(f"run {run.id} has no capture {capture_id}", code="capture_not_found")
    return rc


def skipped_flows(session: Session, store: Store, run: Run, capture_id: str, *, offset: int,
                  limit: int) -> RowsPage:
    rc = run_capture(session, run, capture_id)
    return RowsPage(skipped_page(session, store, rc, offset=offset, limit=limit), stored_summary(rc).total)


#: What a task not yet released to the workers waits on (``core.fair_queue``).
FAIR_TURN = "waiting for its turn (the workers are shared fairly between owners)"


def waiting(run: Run, tasks: Sequence[Any]) -> str | None:
    """What an unfinished run waits on: its turn in the fair queue, or its work was lost and is (or is about
    to be) dispatched again (a worker that stopped beating its heartbeat, a broker message that was lost);
    None when nothing is."""
    if run.status in ("succeeded", "failed"):
        return None
    settings = get_settings()
    cutoff = time.time() - settings.stale_task_seconds
    reasons: Counter[str] = Counter()
    for t in tasks:
        if t.status not in ("queued", "started"):
            continue
        if t.status == "queued" and t.released_at is None:
            reasons[FAIR_TURN] += 1
        elif t.note:
            reasons[t.note] += 1
        elif not settings.embedded_worker and t.status == "started" and epoch(t.heartbeat_at or t.updated_at) < cutoff:
            reasons["its worker stopped (no heartbeat); awaiting re-dispatch"] += 1
        elif not settings.embedded_worker and t.status == "queued" and epoch(t.updated_at) < cutoff:
            reasons["queued for a while: awaiting a worker, or re-dispatch if its broker message was lost"] += 1
    if not reasons:
        return None
    return "; ".join(f"{n} task{'s' if n > 1 else ''}: {why}" for why, n in reasons.items())


class ScorePage(NamedTuple):
    """One page of a run's score rows (one per flow and estimator), and how many there are in all."""

    rows: list[dict[str, Any]]
    total: int


#: Keys of a score row that are the result's own columns (the rest are its scores). Only ``flow_id`` of them is
#: a number to sort by; sorting by the others (text) keeps the rows in their order, as sorting by a score keeps
#: rows without a number last.
ROW_COLUMNS = ("capture_id", "flow_id", "estimator", "version", "vantage", "reconstruction")


def score_rows(session: Session, run: Run, *, capture_id: str | None, estimator: str | None, flow_id: int | None,
               sort: str | None, descending: bool, limit: int, offset: int) -> ScorePage:
    """A page of the run's score rows (capture, flow, estimator order; or by a score, rows without a number for
    it last), counted, filtered, sorted and cut in the database: a run of a million flows × 77 variants answers a
    page without loading its results (they were all read into the API's memory, several GB at that size)."""
    where = [Result.run_id == run.id]
    if capture_id:
        where.append(Result.capture_id == capture_id)
    if estimator:
        where.append(Result.estimator == estimator)
    if flow_id is not None:
        where.append(Result.flow_id == flow_id)
    total = session.scalar(select(func.count()).select_from(Result).where(*where)) or 0
    order: list[Any] = [Result.capture_id, Result.flow_id, Result.id]
    if sort and sort not in ROW_COLUMNS:
        sample = session.scalar(select(Result.scores).where(*where).limit(1))
        if sample is not None and (sort not in sample or isinstance(sample[sort], dict | list | str | bool)):
            raise ServiceError(f"cannot sort by {sort!r}", code="invalid_sort", status=422)
        value = Result.scores[sort].as_float()
        order = [value.is_(None), value.desc() if descending else value.asc(), *order]
    elif sort == "flow_id":
        order = [Result.flow_id.desc() if descending else Result.flow_id.asc(), *order]
    results = list(session.scalars(select(Result).where(*where).order_by(*order).offset(offset).limit(limit)))
    vantage: dict[tuple[str, int], tuple[str, str | None]] = {}  # every result says where its flow was seen
    for cid in {r.capture_id for r in results}:
        fields = flow_fields(session, get_store(), cid, ("vantage", "reconstruction"),
                             sorted({r.flow_id for r in results if r.capture_id == cid}))
        for fid, where, how in fields.select("flow_id", "vantage", "reconstruction").iter_rows():
            vantage[(cid, fid)] = (where, how)
    rows = [{"capture_id": r.capture_id, "flow_id": r.flow_id, "estimator": r.estimator, "version": r.version,
             "vantage": vantage.get((r.capture_id, r.flow_id), ("unknown", None))[0],
             "reconstruction": vantage.get((r.capture_id, r.flow_id), ("unknown", None))[1],
             **r.scores} for r in results]
    return ScorePage(rows, total)


def _result(session: Session, run: Run, capture_id: str, flow_id: int) -> Result:
    r = session.scalar(select(Result).where(Result.run_id == run.id, Result.capture_id == capture_id,
                                            Result.flow_id == flow_id).limit(1))
    if r is None:
        raise NotFound(f"run {run.id} has no results for capture {capture_id} flow {flow_id}",
                       code="results_not_found")
    return r


def series(session: Session, store: Store, run: Run, capture_id: str, flow_id: int, *,
           estimators: list[str] | None, points: int | None) -> pl.DataFrame:
    """Estimates over time; with ``points``, downsampled to about that many rows (every k-th, plus the last)."""
    frame = store.read_parquet(_result(session, run, capture_id, flow_id).series_key,
                               pl.col("flow_id") == flow_id).drop("flow_id")
    if estimators:
        unknown = [e for e in estimators if f"{e}_bps" not in frame.columns]
        if unknown:
            raise ServiceError(f"run {run.id} has no estimator {unknown[0]!r}", code="unknown_estimator",
                               status=422)
        keep = ["t", "t_rel", "achieved_bps"] + (["truth_bps"] if "truth_bps" in frame.columns else [])
        frame = frame.select(keep + [f"{e}_bps" for e in estimators])
    if points and frame.height > points:
        step = math.ceil(frame.height / points)
        idx = list(range(0, frame.height, step))
        if idx[-1] != frame.height - 1:
            idx.append(frame.height - 1)
        frame = frame[idx]
    return frame


class _GraphCache:
    """The last flows' graph sources, so that zooming re-reads nothing (a run's results never change once
    written: a replay run twice writes the same rows). Bounded by the columns' bytes (a 1 M-ACK flow holds
    ~150 MB); the newest source is always kept."""

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        self.max_bytes = max_bytes
        self.items: OrderedDict[tuple[str, str, int], CongestionSource] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[str, str, int], build: Callable[[], CongestionSource]) -> CongestionSource:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        source = build()
        with self.lock:
            self.items[key] = source
            while len(self.items) > 1 and sum(s.nbytes for s in self.items.values()) > self.max_bytes:
                self.items.popitem(last=False)
        return source


_graphs = _GraphCache()


def graph(session: Session, store: Store, run: Run, capture_id: str, flow_id: int, *, t0: float | None,
          t1: float | None, px: int) -> dict[str, Any]:
    """The flow's congestion graph over [t0, t1] drawn ``px`` wide (``graphs.congestion``)."""
    result = _result(session, run, capture_id, flow_id)
    flow = stored_flow(session, store, capture_id, flow_id)
    if flow is None:
        raise NotFound(f"capture {capture_id} has no flow {flow_id}", code="flow_not_found")

    def build() -> CongestionSource:
        tables = read_tables(store, flow.tables_key, [flow_id])
        series = store.read_parquet(result.series_key, pl.col("flow_id") == flow_id).drop("flow_id")
        rows = flow_decisions(session, run, capture_id, flow_id)
        dec = pl.DataFrame(rows, schema=DECISION_SCHEMA) if rows else pl.DataFrame(schema=DECISION_SCHEMA)
        stored = _stored_diagnostics(session, run, capture_id, flow_id)
        return CongestionSource.build(flow_id, int(flow.summary["mss"]), tables.acks, tables.segments,
                                      tables.episodes, series, dec, stored.get("dispersion_capacity_bps"),
                                      (stored.get("path") or {}).get("buffer_bytes"),
                                      (stored.get("limits") or {}).get("intervals"))

    return _graphs.get((run.id, capture_id, flow_id), build).window(t0, t1, px)


def capture_graph(store: Store, flow: StoredFlow, *, t0: float | None, t1: float | None, px: int) -> dict[str, Any]:
    """What the capture shows of one flow, with no run: its time–sequence, flight and RTT panels over [t0, t1] drawn
    ``px`` wide (``graphs.congestion`` without a replay: ``replayed`` false), for any flow with data — one that no
    run replayed (refused as invalid, off the sender, …) included."""

    def build() -> CongestionSource:
        tables = read_tables(store, flow.tables_key, [flow.flow_id])
        return CongestionSource.build(flow.flow_id, int(flow.summary["mss"]), tables.acks, tables.segments,
                                      tables.episodes, None, None)

    return _graphs.get(("capture", flow.capture_id, flow.flow_id), build).window(t0, t1, px)


def decisions(session: Session, run: Run, capture_id: str, flow_id: int, *, offset: int, limit: int
              ) -> RowsPage:
    """One page of the flow's decisions (by loss event, then estimator as stored), and how many it has."""
    _result(session, run, capture_id, flow_id)
    where = (DecisionRow.run_id == run.id, DecisionRow.capture_id == capture_id, DecisionRow.flow_id == flow_id)
    total = session.scalar(select(func.count()).select_from(DecisionRow).where(*where)) or 0
    return RowsPage(flow_decisions(session, run, capture_id, flow_id, offset=offset, limit=limit), int(total))


def flow_decisions(session: Session, run: Run, capture_id: str, flow_id: int, *, offset: int = 0,
                   limit: int | None = None) -> list[dict[str, Any]]:
    """The flow's decisions by loss event (``limit`` of them from ``offset``; default all)."""
    rows = session.scalars(select(DecisionRow.data).where(
        DecisionRow.run_id == run.id, DecisionRow.capture_id == capture_id, DecisionRow.flow_id == flow_id)
        .order_by(DecisionRow.episode, DecisionRow.id).offset(offset).limit(limit))
    return list(rows)


#: What the diagnostics rows store besides the §7 explanations: the flow's path (§9), the group of flows sharing
#: its bottleneck (held by the group's first flow, which the others name in ``path_group_of``), what limited its sender,
#: why the estimators cannot be compared on it (``scoring.comparable``) and the packets behind its figures
#: (``graphs.frame_numbers.flow_frames``), the most its random-loss rate can be and the least its buffer can be where
#: the path left it null (the what-if's, ``whatif.flows.random_loss_high``, ``whatif.figures.buffer_seen``), the most
#: its largest flight — or its group's flights, added, over ``buffer_room_flows`` flows — could queue beyond the BDP
#: (``whatif.flows.room_of``), and the random drops its capture
#: realised (the what-if replays them: ``path.drops.random_drops``), and its loss rate counted in segments on the wire
#: (``whatif.flows.wire_loss_rate``, the captured flow's beside the what-if's).
PATH_KEYS = ("path", "path_models", "path_group", "path_group_of", "limits", "comparable_reason", "frames",
             "random_loss_off_level", "buffer_seen_bytes", "buffer_room_bytes", "buffer_room_flows", "random_drops",
             "wire_loss_rate")


def _stored_room(d: Mapping[str, Any], grouped: bool) -> float | None:
    """The stored room a bounded-below buffer is searched in (``buffer_room_bytes``). A flow sharing its
    bottleneck stored by a replay before the group's flights were added (no ``buffer_room_flows``) has its own
    flight's only, which does not bound a queue the other flows fill too: none then."""
    if grouped and "buffer_room_flows" not in d:
        return None
    room = d.get("buffer_room_bytes")
    return float(room) if room is not None else None


def diagnostics(session: Session, run: Run, capture_id: str, flow_id: int) -> dict[str, Any]:
    """Why the flow's estimates are what they are (§7), as the run's replay found it."""
    return {k: v for k, v in _stored_diagnostics(session, run, capture_id, flow_id).items() if k not in PATH_KEYS}


def _stored_diagnostics(session: Session, run: Run, capture_id: str, flow_id: int) -> dict[str, Any]:
    _result(session, run, capture_id, flow_id)
    row = session.scalar(select(FlowDiagnostics).where(FlowDiagnostics.run_id == run.id,
                                                       FlowDiagnostics.capture_id == capture_id,
                                                       FlowDiagnostics.flow_id == flow_id))
    return current_names(row.data) if row is not None else {}


def path(session: Session, run: Run, capture_id: str, flow_id: int) -> dict[str, Any]:
    """The path the flow crossed (§9, ``ackreplay.path``), what the papers' models predict on it, and the group
    of flows it shares the bottleneck with (None when alone), as the run's replay found them."""
    d = _stored_diagnostics(session, run, capture_id, flow_id)
    return {"path": d.get("path"), "path_models": d.get("path_models"),
            "path_group": _path_group(session, run, capture_id, d)}


def _path_group(session: Session, run: Run, capture_id: str, d: dict[str, Any]) -> dict[str, Any] | None:
    """The group of flows sharing the bottleneck of the flow whose diagnostics are ``d`` (None: alone); the group
    is kept once, by its first flow, which the others name in ``path_group_of``."""
    group = d.get("path_group")
    if group is None and d.get("path_group_of") is not None:
        group = _stored_diagnostics(session, run, capture_id, int(d["path_group_of"])).get("path_group")
    return group


def limits(session: Session, run: Run, capture_id: str, flow_id: int) -> dict[str, Any]:
    """What limited the flow's sender (``scoring.limits``): each label's share of its time and the intervals
    (``core.capture_scoring.limit_record``); both empty for a run replayed before the service stored them."""
    got = _stored_diagnostics(session, run, capture_id, flow_id).get("limits") or {}
    return {"shares": got.get("shares") or {}, "intervals": got.get("intervals") or []}


def capture_limits(session: Session, run: Run, capture_id: str, *, offset: int, limit: int) -> RowsPage:
    """What limited the sender of each flow of one capture the run replayed (the capture page's table): a page of
    ``{flow_id, shares}`` by flow id (``shares`` None for a run replayed before the service stored them), and how
    many flows there are."""
    run_capture(session, run, capture_id)
    mine = (FlowDiagnostics.run_id == run.id, FlowDiagnostics.capture_id == capture_id)
    total = session.scalar(select(func.count()).select_from(FlowDiagnostics).where(*mine)) or 0
    rows = session.execute(select(FlowDiagnostics.flow_id, FlowDiagnostics.data[("limits", "shares")]).where(*mine)
                           .order_by(FlowDiagnostics.flow_id).offset(offset).limit(limit))
    return RowsPage([{"flow_id": fid, "shares": shares or None} for fid, shares in rows], total)


#: Bulk flows asked for in one query of their results.
BULK_CHUNK = 5000


def _bulk_scores(session: Session, run_id: str, capture_id: str) -> Iterator[Any]:
    """``(flow_id, estimator, scores)`` of the run's results on the capture's bulk flows (``replay.capture.is_bulk``,
    with the capture's truth, from the stored summaries), chosen in the database: the results of a run's other
    flows — most of a capture of many short connections — are never read (they were, every one as an object)."""
    cap = session.get(Capture, capture_id)
    truth = stored_truth(cap) if cap is not None else None
    bulk = capture_bulk(session, get_store(), capture_id, truth)["flow_id"].to_list()
    for start in range(0, len(bulk), BULK_CHUNK):  # bounded IN lists (a capture may hold 10^5 bulk flows)
        yield from session.execute(
            select(Result.flow_id, Result.estimator, Result.scores)
            .where(Result.run_id == run_id, Result.capture_id == capture_id,
                   Result.flow_id.in_(bulk[start:start + BULK_CHUNK])))


def leaderboard(session: Session, runs: list[Run], include_not_reproducible: bool = False,
                include_incomparable: bool = False) -> dict[str, Any]:
    """Across the runs' captures, over bulk flows (≥ min_flow_bytes; control connections beside a transfer
    would swamp the statistics): per score its direction and, per estimator, mean, median and quartiles,
    and for ranked scores the rank and the wins (``scoring.ranking``: composite_error first, one-sided
    shares not ranked alone; scores labelled not reproducible from their flow's vantage left out unless
    ``include_not_reproducible``, flows the estimators cannot be compared on unless ``include_incomparable``)."""
    per_flow: dict[tuple[str, str, int], dict[str, dict[str, Any]]] = {}
    for run in runs:
        for capture_id in session.scalars(select(RunCapture.capture_id).where(RunCapture.run_id == run.id)):
            for flow_id, estimator, scores in _bulk_scores(session, run.id, capture_id):
                per_flow.setdefault((run.id, capture_id, flow_id), {})[estimator] = scores
    result = ranking.board(per_flow, include_not_reproducible=include_not_reproducible,
                           incomparable=_incomparable(session, runs), include_incomparable=include_incomparable,
                           groups={k: k[1] for k in per_flow})  # (the intervals resample captures)
    for entry in result["scores"].values():
        for e in entry["estimators"].values():
            e["won_flows"] = [{"run_id": k[0], "capture_id": k[1], "flow_id": k[2]} for k in e["won_flows"]]
    return result


def _incomparable(session: Session, runs: list[Run]) -> set[tuple[str, str, int]]:
    """The (run, capture, flow) keys of the runs' flows the estimators cannot be compared on."""
    rows = session.scalars(select(FlowDiagnostics).where(FlowDiagnostics.run_id.in_([r.id for r in runs])))
    return {(d.run_id, d.capture_id, d.flow_id) for d in rows if d.data.get("comparable_reason") is not None}


def list_runs(session: Session, owner: Owner, *, capture_id: str | None = None,
              limit: int = 100) -> list[dict[str, Any]]:
    """The owner's runs, newest first (optionally only those that include a capture), each with its first
    ``STATUS_PAGE`` captures by name and how many it has (a batch's run may have 10 000: listed in full, 500
    runs made an answer of tens of MB; ``GET /runs/{id}`` pages through them)."""
    q = select(Run).where(Run.owner_id == owner.id)
    if capture_id:
        q = q.where(Run.id.in_(select(RunCapture.run_id).where(RunCapture.capture_id == capture_id)))
    out = []
    for run in session.scalars(q.order_by(Run.created_at.desc()).limit(limit)):
        mine = RunCapture.run_id == run.id
        rows = session.execute(select(RunCapture.capture_id, Capture.name).join(
            Capture, Capture.id == RunCapture.capture_id).where(mine)
            .order_by(Capture.name, Capture.id).limit(STATUS_PAGE)).all()
        total = session.scalar(select(func.count()).select_from(RunCapture).where(mine)) or 0
        out.append({"id": run.id, "status": run.status, "is_default": run.is_default, "batch_id": run.batch_id,
                    "created_at": run.created_at, "captures": [c for c, _ in rows],
                    "capture_names": [n for _, n in rows], "captures_total": total,
                    "estimators": [e["name"] for e in run.estimators]})
    return out


#: The service's bounds on a what-if (``whatif``): simulated seconds per run, and packets sent over all its runs
#: (the self-check and each algorithm's runs at its path's figures and their ends) — about a second of work each
#: million, so that a request cannot hold the API for long.
WHATIF_MAX_DURATION_S = 30.0
WHATIF_MAX_PACKETS = 4_000_000


def whatif(session: Session, run: Run, capture_id: str, flow_id: int, algorithms: list[str] | None,
           sender_cc: str | None, duration_s: float | None, seed: int) -> dict[str, Any]:
    """What each algorithm would have done in control on the flow's path as the run inferred it
    (``ackreplay.whatif``; docs/whatif.md): the self-check, then each algorithm's figures with their ranges.
    A path that cannot carry one, an algorithm that cannot be in control, or more simulation than
    :data:`WHATIF_MAX_PACKETS` is a 422 with the what-if's code."""
    from ackreplay.path.drops import RandomDrops
    from ackreplay.path.links import LinkInfo
    from ackreplay.scoring.pacing import paced
    from ackreplay.whatif.algorithms import ALGORITHMS, check_algorithms
    from ackreplay.whatif.captured import CapturedFlow, sender_control
    from ackreplay.whatif.cross import cross_flows
    from ackreplay.whatif.errors import WhatIfError
    from ackreplay.whatif.figures import connection_options, path_range
    from ackreplay.whatif.runs import check_runs, what_if

    d = _stored_diagnostics(session, run, capture_id, flow_id)
    group = [int(f) for f in (_path_group(session, run, capture_id, d) or {}).get("flows") or [] if int(f) != flow_id]
    summaries = flow_summaries(session, get_store(), capture_id, [flow_id, *group])  # (one read for the group)
    if flow_id not in summaries:
        raise NotFound(f"capture {capture_id} has no flow {flow_id}", code="flow_not_found")
    summary = summaries[flow_id]
    others = [summaries[fid] for fid in group if fid in summaries]
    try:
        chosen = check_algorithms(algorithms or list(ALGORITHMS))
        link = LinkInfo.of(summary)
        limits = d.get("limits") or {}
        rng = path_range(d.get("path"), mss=link.mss, overhead_bytes=link.overhead,
                         random_loss_high=d.get("random_loss_off_level"), buffer_low=d.get("buffer_seen_bytes"),
                         **connection_options(summary), rwnd_bytes=limits.get("loss_rwnd_bytes"),
                         paced=paced(limits.get("paced_share")), drops=RandomDrops.from_dict(d.get("random_drops")),
                         buffer_room=_stored_room(d, bool(group)), room_flows=int(d.get("buffer_room_flows") or 1))
        cross = cross_flows(summary, others, lambda sender: sender_control(None, sender), rng.central.paced)
        captured = CapturedFlow.of(summary, others, limits.get("shares"), limits.get("idle_share"))
        captured = captured.on_the_wire(d.get("wire_loss_rate"))
        duration = duration_s or min(max(captured.span_s, 1.0), WHATIF_MAX_DURATION_S)
        runs = (check_runs(rng) + len(chosen) * (1 + len(rng.variants()))) * (1 + len(cross))
        packets = runs * duration * rng.central.capacity_bps / 8.0 / (link.mss + link.overhead) * 1.25
        if packets > WHATIF_MAX_PACKETS:
            raise WhatIfError("whatif_too_large", f"{runs} runs of {duration:g} s at "
                              f"{rng.central.capacity_bps / 1e6:.3g} Mbit/s send about {packets / 1e6:.1f} M packets, "
                              f"more than the service simulates for one request ({WHATIF_MAX_PACKETS / 1e6:g} M): "
                              "ask for fewer algorithms or a shorter duration_s (or run `ackreplay whatif`)")
        result = what_if(rng, captured, sender_control(None, str(summary.get("sender", "")), sender_cc), chosen,
                         duration_s=duration, seed=seed, cross=cross)
    except WhatIfError as exc:
        raise ServiceError(exc.message, code=exc.code, status=422) from None
    return {"flow_id": flow_id, "sender": summary.get("sender"), "receiver": summary.get("receiver"),
            **result.as_dict()}
