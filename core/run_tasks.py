"""The work behind a run: ingest each capture, replay its flows in batches, aggregate, finish the run.

Every step is a task row in the database and is idempotent: a task already done is skipped, results and
decisions of a flow are replaced as a whole, and the step that completes a capture (or a run) takes a row
lock and re-counts, so retried, duplicated or concurrent tasks change nothing. Domain failures (a broken
capture) end as the run's status and error text; infrastructure errors propagate for the queue to retry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple, cast

import numpy as np
import polars as pl
from sqlalchemy import Table, delete, func, insert, select, update
from sqlalchemy.orm import Session

from ackreplay.core import quotas
from ackreplay.core.capture_scoring import build_estimators, jsonable, limit_record, path_models
from ackreplay.core.config import get_settings
from ackreplay.core.db import after_commit, session_scope
from ackreplay.core.derived_rows import EncodedRows, encode_rows, insert_encoded, result_rows
from ackreplay.core.errors import ServiceError, is_infrastructure
from ackreplay.core.fair_queue import release_soon
from ackreplay.core.heartbeat import Heartbeat, beat, worker_id
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
    new_id,
    now,
)
from ackreplay.core.queue import consumed, dispatch, retrying
from ackreplay.core.rate_limits import admit_run
from ackreplay.core.series_writer import SeriesWriter, series_bytes_per_event
from ackreplay.core.skipped_flows import summarise
from ackreplay.core.storage import Store, get_store
from ackreplay.core.stored_capture import (
    StoredCapture,
    capture_bulk,
    capture_summaries,
    read_deliveries,
    read_tables,
    stored_truth,
    tables_key,
    task_summaries,
    write_tables,
)
from ackreplay.core.task_scores import SCORES_SUFFIX, capture_score_columns, scores_key, task_scores_frame
from ackreplay.estimators import Estimator, EstimatorError
from ackreplay.estimators import __version__ as VERSION
from ackreplay.estimators.sweep import from_spec, variant_spec
from ackreplay.graphs.frame_numbers import flow_frames
from ackreplay.ingest import CaptureIngest, IngestError, ingest_capture
from ackreplay.path.drops import random_drops
from ackreplay.replay.capture import (
    BATCH_BYTES_PER_EVENT,
    capture_aggregate,
    consecutive_ranges,
    flow_score_columns,
    replay_capture,
)
from ackreplay.replay.engine import PLAN_FIELDS, plan_reasons
from ackreplay.replay.gcpause import gc_paused
from ackreplay.replay.results import CaptureReplay, FlowReplay, ScoreColumns
from ackreplay.whatif.figures import buffer_seen
from ackreplay.whatif.flows import flight_by_flow, random_loss_high, room_of, wire_loss_rate

log = logging.getLogger("ackreplay.pipeline")


#: Results and decisions are keyed by the estimator's name in a String(40) column (core.orm).
MAX_ESTIMATOR_NAME = 40
#: A run's ``error`` names this many failed captures and counts the rest, and notes deleted captures up to
#: about this many characters: a batch of thousands of broken captures must not make every status poll MB.
ERRORS_NAMED = 20
MAX_ERROR_TEXT = 10_000


def estimator_spec(items: list[Any] | None) -> list[dict[str, Any]]:
    """Normalise a run's estimators (names or {name, parameters}) and validate them (EstimatorError → 422)."""
    named = [item if isinstance(item, str) else item["name"] for item in items or []]
    twice = sorted({n for n in named if named.count(n) > 1})
    if twice:  # parameters are keyed by name: a second entry would silently replace the first one's
        raise ServiceError(f"estimator {twice[0]!r} is given more than once: give each estimator once, with every "
                           'value to sweep in its one entry (e.g. "parameters": {"tau": [0.25, 0.5]})',
                           code="duplicate_estimator", status=422)
    names: list[str] = []
    params: dict[str, dict[str, Any]] = {}
    for item in items or []:
        if isinstance(item, str):
            names.append(item)
        else:
            names.append(item["name"])
            if item.get("parameters"):
                params[item["name"]] = dict(item["parameters"])
    try:
        ests = build_estimators(names or None, params)
    except EstimatorError as exc:
        raise ServiceError(exc.message, code=exc.code, status=422) from exc
    long = [e.name for e in ests if len(e.name) > MAX_ESTIMATOR_NAME]
    if long:  # a sweep's variant names its values: results are keyed by that name (String(40))
        raise ServiceError(f"estimator names longer than {MAX_ESTIMATOR_NAME} characters: {', '.join(long[:3])} "
                           "(sweep fewer parameters of one estimator at once, or use shorter values)",
                           code="invalid_parameter", status=422)
    return variant_spec(ests)


def start_run(session: Session, owner: Owner, captures: list[Capture], estimators: list[dict[str, Any]], *,
              is_default: bool = False, batch_id: str | None = None) -> Run:
    admit_run(session, owner, len(captures))
    run = Run(owner_id=owner.id, estimators=estimators, version=VERSION, is_default=is_default, batch_id=batch_id)
    session.add(run)
    session.flush()
    for cap in captures:
        session.add(RunCapture(run_id=run.id, capture_id=cap.id))
        session.add(Task(run_id=run.id, capture_id=cap.id, kind="ingest", chunk=0))
    session.flush()
    after_commit(session, release_soon)  # its turn comes in the fair queue
    return run


def run_task(kind: str, task_id: str) -> None:
    """Entry point for both queues (Celery and in-process): claim the task, run it under a heartbeat.

    An infrastructure fault (``core.errors.is_infrastructure``) propagates for the queue to retry, the task
    released again; anything else is the data's fault and fails the task, its capture in the run and, when
    nothing is left to wait for, the run, at once."""
    work = {"ingest": ingest_task, "replay": replay_task}.get(kind)
    if work is None:
        raise ValueError(kind)
    try:
        claimed = claim(task_id)
    except Exception:  # (infrastructure: the queue sends it again)
        retrying(kind, task_id)
        raise
    consumed(task_id)  # (after the claim: the sweep sees a started task's heartbeat, not its marker)
    if claimed is None:
        return
    try:
        with Heartbeat(task_id):
            work(task_id)
    except Exception as exc:
        if is_infrastructure(exc):
            _release(task_id)
            retrying(kind, task_id)
            raise
        log.warning("task %s %s failed on its data: %s", kind, task_id, exc)
        fail_task(task_id, claimed, exc)
    finally:
        release_soon()  # its slot in the dispatch window is free: the next owner's turn


class Claimed(NamedTuple):
    """The run and the capture of a task a worker claimed."""

    run_id: str
    capture_id: str


def claim(task_id: str) -> Claimed | None:
    """Mark the task started in its own transaction; its run and capture, or None when it is unknown,
    already finished, or running in another worker whose heartbeat is fresh (a duplicate delivery)."""
    with session_scope() as session:
        task = _claim(session, task_id)
        return Claimed(task.run_id, task.capture_id) if task is not None else None


def _fresh(stamp: datetime | None) -> bool:
    return stamp is not None and time.time() - epoch(stamp) < get_settings().stale_task_seconds


def _claim(session: Session, task_id: str) -> Task | None:
    task = session.get(Task, task_id, with_for_update=True)
    if task is None or task.status in ("done", "failed"):
        return None
    me = worker_id()
    if (task.status == "started" and task.worker not in (None, me) and _fresh(task.heartbeat_at)
            and not get_settings().embedded_worker):
        return None
    task.status = "started"
    task.attempts += 1
    task.updated_at = task.heartbeat_at = now()
    task.worker = me
    task.note = None
    run = session.get(Run, task.run_id)
    if run is not None and run.status == "queued":
        run.status = "running"
        run.started_at = now()
    return task


def _release(task_id: str) -> None:
    """After an infrastructure fault: the task is queued again (for the queue's retry), if the database can
    be reached; else the retry's claim recognises its own worker."""
    try:
        with session_scope() as session:
            session.execute(update(Task).where(Task.id == task_id, Task.status == "started")
                            .values(status="queued", heartbeat_at=None, updated_at=now()))
    except Exception:
        log.debug("task %s not released", task_id, exc_info=True)


def fail_task(task_id: str, claimed: Claimed, exc: BaseException) -> None:
    """A task that failed on its data: the task, its capture in the run (and, for an ingest, the capture)
    fail with the reason; the run finishes when nothing else is pending. When the capture or the run was
    deleted meanwhile, what the task wrote to the store for it is removed."""
    run_id, capture_id = claimed
    code = exc.code if isinstance(exc, IngestError | EstimatorError | ServiceError) else type(exc).__name__
    message = f"{exc}"[:2000] or type(exc).__name__
    with session_scope() as session:
        task = session.get(Task, task_id, with_for_update=True)
        cap = session.get(Capture, capture_id)
        if cap is None or session.get(Run, run_id) is None:
            store = get_store()
            after_commit(session, partial(store.delete, f"series/{run_id}/{capture_id}"))
            if cap is None:
                after_commit(session, partial(store.delete, f"captures/{capture_id}"))
        if task is None or task.status == "done":  # a duplicate of a task that succeeded: its result stands
            return
        task.status, task.error, task.updated_at = "failed", message, now()
        code = str(code)[:60]
        if task.kind == "ingest" and cap is not None and cap.status != "ingested":
            cap.status, cap.error_code, cap.error = "failed", code, message
        rc = session.get(RunCapture, (run_id, capture_id), with_for_update=True)
        if rc is not None and rc.status not in ("succeeded", "failed"):
            rc.status, rc.error_code, rc.error = "failed", code, message
        session.flush()
        _maybe_finish_run(session, run_id)


class IngestTarget(NamedTuple):
    """What an ingest task works on: its run and capture, the capture's status and stored object."""

    run_id: str
    capture_id: str
    status: str
    storage_key: str


def ingest_task(task_id: str) -> None:
    """Ingest a capture of a run, a step at a time, each in its own short transaction so that no step holds the
    task's row (its heartbeat) or the capture's for long: read the capture (``ingest_capture``, within the
    memory budget), store its tables and flow summaries (:func:`store_capture`), then plan its replay
    (:func:`plan_replay`). A capture deleted meanwhile fails the task (``capture_deleted``); its run was failed
    by the deletion (``capture_removed``). Idempotent: an ingested capture is not read again."""
    t0 = time.perf_counter()
    with session_scope() as session:
        target = _ingest_target(session, task_id)
    if target is None:
        return
    if target.status not in ("ingested", "failed"):
        try:
            result = _read_capture(target.storage_key)
        except IngestError as exc:
            _ingest_failed(task_id, target, exc, t0)
            return
        store_capture(get_store(), target.capture_id, result)
        del result
    plan_replay(task_id, t0)


def _ingest_target(session: Session, task_id: str) -> IngestTarget | None:
    task = session.get(Task, task_id)
    assert task is not None
    cap = session.get(Capture, task.capture_id)
    rc = session.get(RunCapture, (task.run_id, task.capture_id))
    if cap is None or rc is None:  # deleted meanwhile
        task.status = "done"
        return None
    return IngestTarget(task.run_id, cap.id, cap.status, cap.storage_key)


def _read_capture(storage_key: str) -> CaptureIngest:
    with get_store().local_file(storage_key) as path:
        settings = get_settings()
        return ingest_capture(path, max_decompressed_bytes=settings.max_decompressed_bytes,
                              memory_budget=settings.ingest_memory_budget_mb << 20, progress=lambda *_: beat())


def _ingest_failed(task_id: str, target: IngestTarget, exc: IngestError, t0: float) -> None:
    """A capture that is no capture: it, its place in the run and the task fail with ingest's reason."""
    with session_scope() as session:
        task = session.get(Task, task_id)
        cap = session.get(Capture, target.capture_id, with_for_update=True)
        rc = session.get(RunCapture, (target.run_id, target.capture_id))
        if task is None or cap is None or rc is None:
            return
        cap.status, cap.error_code, cap.error = "failed", exc.code, str(exc)
        rc.status, rc.error_code, rc.error = "failed", exc.code, str(exc)
        task.status, task.error = "failed", str(exc)
        task.seconds = time.perf_counter() - t0
        session.flush()
        _maybe_finish_run(session, target.run_id)


def store_capture(store: Store, capture_id: str, result: CaptureIngest) -> None:
    """An ingested capture's tables and flow summaries to the store (``core.stored_capture.write_tables``; the
    service reads its flows from there, ``core.stored_flows``: no database row per flow), then the capture marked
    ingested under a lock of its row: a deletion that came first fails the task (``capture_deleted``)."""
    with session_scope() as session:
        cap = session.get(Capture, capture_id)
        if cap is None:
            raise _deleted(capture_id)
        if cap.status == "ingested":  # a duplicate of this task (another run's ingest) stored it first
            return
        truth = stored_truth(cap)
    write_tables(store, capture_id, result, truth)
    with session_scope() as session:
        # FOR NO KEY UPDATE: a deletion waits for it, while runs and results naming the capture can still be made
        cap = session.get(Capture, capture_id, with_for_update={"key_share": True})
        if cap is None:
            raise _deleted(capture_id)
        if cap.status == "ingested":  # (a duplicate of this task got there first)
            return
        cap.stats = {**result.stats.to_dict(), "file": cap.name}
        cap.status = "ingested"


def _deleted(capture_id: str) -> ServiceError:
    return ServiceError(f"capture {capture_id} was deleted while it was being ingested", code="capture_deleted",
                        status=409)


def plan_replay(task_id: str, t0: float) -> None:
    """Which flows of the ingested capture are replayed (``replay.engine.plan_reasons``, on the stored summaries'
    columns), the skipped ones summarised (``core.skipped_flows``), and the replay tasks, a flow-id list of
    ``replay_batch_flows`` each (those already made kept); the capture finished at once when none is needed."""
    store = get_store()
    with session_scope() as session:
        task = session.get(Task, task_id)
        if task is None:
            return
        # the capture's row first, as a deletion locks it: then its rows' (never the other way round)
        cap = session.get(Capture, task.capture_id, with_for_update={"key_share": True})
        rc = session.get(RunCapture, (task.run_id, task.capture_id), with_for_update=True)
        if cap is None or rc is None:
            task.status = "done"
            return
        if cap.status == "failed":
            rc.status, rc.error_code, rc.error = "failed", cap.error_code, cap.error
            task.status = "failed"
            session.flush()
            _maybe_finish_run(session, task.run_id)
            return
        summaries = capture_summaries(session, store, cap.id, PLAN_FIELDS)
        decided = plan_reasons(summaries).with_columns(acks=summaries.frame["acks"])  # (in the summaries' order)
        skipped = summarise(decided)
        todo = decided.filter(pl.col("reason").is_null())
        del decided, summaries
        rc.skipped, rc.skipped_total, rc.skipped_counts = skipped.shown, skipped.total, skipped.counts
        rc.ingest_seconds = time.perf_counter() - t0
        rc.status = "replaying"
        replay_tasks = _replay_tasks(session, task.run_id, cap.id,
                                     task_flows(todo["flow_id"].to_numpy(), todo["acks"].to_numpy()))
        task.status = "done"
        task.seconds = time.perf_counter() - t0
        session.flush()
        if not todo.height:
            _finish_capture(session, task.run_id, cap.id)
        if replay_tasks:
            after_commit(session, release_soon)


def task_flows(flow_ids: np.ndarray, acks: np.ndarray) -> list[list[int]]:
    """The flows of each replay task, in order: consecutive flows until their ACKs (``acks``, each flow's) reach
    ``replay_task_acks`` (a longer flow alone), at most ``replay_batch_flows`` of them. A task's fixed costs (its
    transactions, reading its rows of the capture's tables, finishing) are paid per ACKs' worth of work, not per
    few flows: 10 000 bulk flows make a few dozen tasks, not hundreds."""
    settings = get_settings()
    ranges = consecutive_ranges(np.asarray(acks, np.int64), max(1, settings.replay_task_acks),
                                max(1, settings.replay_batch_flows))
    return [flow_ids[lo:hi].tolist() for lo, hi in ranges]


def _replay_tasks(session: Session, run_id: str, capture_id: str, flows: list[list[int]]) -> list[str]:
    """The replay tasks of a capture in a run (``flows``: each one's flow ids), made where missing (one
    insert); the ids of those not done."""
    have = {chunk: (tid, status) for tid, chunk, status in session.execute(
        select(Task.id, Task.chunk, Task.status).where(Task.run_id == run_id, Task.capture_id == capture_id,
                                                        Task.kind == "replay"))}
    chunks = [chunk for chunk in range(1, len(flows) + 1) if chunk not in have]
    ids = [new_id() for _ in chunks]
    if chunks:
        session.execute(insert(Task), [
            {"id": tid, "run_id": run_id, "capture_id": capture_id, "kind": "replay", "chunk": chunk,
             "flow_ids": flows[chunk - 1]} for tid, chunk in zip(ids, chunks, strict=True)])
    return [tid for tid, status in have.values() if status != "done"] + ids


def replay_task(task_id: str) -> None:
    """Replay a task's flows of a capture through the pipeline ``ackreplay score`` runs
    (``replay.capture.replay_capture`` on the stored tables) and store each flow's scores, decisions,
    diagnostics and path, and the task's series; the capture is finished once its last task is done."""
    store = get_store()
    t0 = time.perf_counter()
    with session_scope() as session:
        task = session.get(Task, task_id)
        assert task is not None
        run = session.get(Run, task.run_id)
        cap = session.get(Capture, task.capture_id)
        if run is None or cap is None:
            task.status = "done"
            return
        ests = from_spec(run.estimators)
        for table in (Result, DecisionRow, FlowDiagnostics):  # a retried task replaces its flows' rows
            session.execute(delete(table).where(table.run_id == run.id, table.capture_id == cap.id,
                                                table.flow_id.in_(task.flow_ids)))
        with SeriesWriter() as series:  # (written batch by batch as replay goes)
            rep, frames = _replay(session, store, cap, task.flow_ids, ests, series) if task.flow_ids else (None, {})
            series_key = f"series/{run.id}/{cap.id}/{task.chunk}.parquet"  # one table per task, column flow_id
            task.series_bytes, task.row_bytes = _store_replay(session, store, run, cap.id, rep, frames, ests,
                                                              series_key, series)
        task.status = "done"
        task.seconds = time.perf_counter() - t0
        task.updated_at = now()
    with session_scope() as session:
        _maybe_finish_capture(session, task.run_id, task.capture_id)


def _replay(session: Session, store: Store, cap: Capture, flow_ids: list[int], ests: list[Estimator],
            series: SeriesWriter) -> tuple[CaptureReplay, dict[int, dict[str, int | None]]]:
    """Some flows of a stored capture replayed: their summaries from the database (their rows only), their tables
    from the store (the row groups holding them), and with a truth the bulk flows' delivery times (the fair
    share divides among them all). The flows sharing a bottleneck pool their path evidence among this task's
    flows (a group split over two tasks is judged in each). With the packets behind the flows' figures
    (``graphs.frame_numbers.flow_frames``). Within the workers' memory budget as ``ackreplay score`` keeps to it,
    each batch's kept series counted too (a sweep's many variants make smaller batches), and written to
    ``series`` (then dropped) as each batch is done."""
    flows = task_summaries(session, store, cap.id, flow_ids)
    truth = stored_truth(cap)
    bulk = capture_bulk(session, store, cap.id, truth)["flow_id"].to_list() if truth is not None else []
    deliveries = read_deliveries(store, cap.id, bulk) if truth is not None else []
    tables = read_tables(store, tables_key(cap.id), flow_ids)
    budget = get_settings().ingest_memory_budget_mb << 20
    budget = budget * BATCH_BYTES_PER_EVENT // (BATCH_BYTES_PER_EVENT + series_bytes_per_event(len(ests)))
    source = StoredCapture(flows, tables.acks, tables.segments, tables.episodes, memory_budget=budget)
    return (replay_capture(source, ests, truth=truth, only=set(flow_ids), deliveries=deliveries,
                           on_batch=series.add),
            flow_frames(tables.acks, tables.segments))


def _store_replay(session: Session, store: Store, run: Run, capture_id: str, rep: CaptureReplay | None,
                  frames: dict[int, dict[str, int | None]], ests: list[Estimator], series_key: str,
                  series: SeriesWriter) -> tuple[int, int]:
    """Each replayed flow's scores (a row per estimator), decisions and diagnostics — with its path (§9), what
    limited its sender (``scoring.limits``), as they explain the estimates too, and the packets behind its figures
    (``frames``) — to the database, their series (written by replay to ``series``) to the store as one table,
    ``series_key``, with their score columns beside it (``core.task_scores``, for the capture's aggregate), once
    they fit in the owner's quota
    (``core.quotas``: ``QuotaExceeded`` otherwise, before anything is written). The bytes stored: the two
    objects' and the rows'."""
    with gc_paused():  # (a task's rows are many small acyclic objects: replay.gcpause)
        encoded = derived_rows(run.id, capture_id, rep, frames, ests, series_key)
    series_size = series.close()
    scores = Store.parquet_bytes(task_scores_frame(rep.batches if rep is not None else [], [e.name for e in ests]))
    rows = sum(e.charged for e in encoded)
    owner = session.get(Owner, run.owner_id)
    if owner is not None:
        quotas.check_locked(session, owner, series_size + len(scores) + rows, " of results")
    if series_size:
        store.put_file(series_key, series.path)
    store.write_bytes(series_key.removesuffix(".parquet") + SCORES_SUFFIX, scores)
    for e in encoded:
        insert_encoded(session, e)
    return series_size + len(scores), rows


def derived_rows(run_id: str, capture_id: str, rep: CaptureReplay | None, frames: dict[int, dict[str, int | None]],
                 ests: list[Estimator], series_key: str) -> list[EncodedRows]:
    """A replay task's result, decision and diagnostics rows, encoded (``_store_replay``)."""
    reps = rep.flows if rep is not None else []
    ids = {"run_id": run_id, "capture_id": capture_id}
    decision_rows: list[dict[str, Any]] = []
    for r in reps:
        if r.decision_rows:
            decision_rows += [{**ids, "flow_id": r.flow_id, "estimator": row["estimator"], "episode": row["episode"],
                               "data": jsonable(row)} for row in r.decisions.iter_rows(named=True)]
    # a group of flows sharing a bottleneck is kept once, by its first flow; its other flows name that one (each
    # member holding the whole group made a task's rows grow with the square of its flows)
    groups = {g["flows"][0]: g for g in (rep.path_groups if rep is not None else [])}
    holder_of = {fid: first for first, g in groups.items() for fid in g["flows"] if fid != first}
    flights = flight_by_flow(reps)

    def room(r: FlowReplay) -> tuple[float | None, int]:  # (over the group of flows sharing its bottleneck)
        g = groups.get(holder_of.get(r.flow_id, r.flow_id))
        return room_of(r, list(g["flows"]) if g else [r.flow_id], flights)

    diagnostic_rows = [{**ids, "flow_id": r.flow_id, "data": jsonable({
        **r.diagnostics, "path": r.path, "path_models": path_models(r.path, r.decision_rows) if r.path else None,
        "path_group": groups.get(r.flow_id), "path_group_of": holder_of.get(r.flow_id),
        "limits": limit_record(r.limits),
        "comparable_reason": r.comparable_reason, "frames": frames.get(r.flow_id),
        "random_loss_off_level": random_loss_high(r), "buffer_seen_bytes": buffer_seen(r.path_parts, r.path),
        "buffer_room_bytes": (rooms := room(r))[0], "buffer_room_flows": rooms[1],
        "wire_loss_rate": wire_loss_rate(r.path_parts),
        "random_drops": drops.as_dict() if (drops := random_drops(r.path_parts)) is not None else None})}
        for r in reps]
    return [result_rows(cast(Table, Result.__table__), run_id, capture_id, reps, ests, VERSION, series_key),
            encode_rows(cast(Table, DecisionRow.__table__), decision_rows),
            encode_rows(cast(Table, FlowDiagnostics.__table__), diagnostic_rows)]


def _maybe_finish_capture(session: Session, run_id: str, capture_id: str) -> None:
    rc = session.get(RunCapture, (run_id, capture_id), with_for_update=True)
    if rc is None or rc.status in ("succeeded", "failed"):
        return
    pending = session.scalar(select(func.count()).select_from(Task).where(
        Task.run_id == run_id, Task.capture_id == capture_id, Task.kind == "replay", Task.status != "done"))
    if pending:
        return
    _finish_capture(session, run_id, capture_id)


def _finish_capture(session: Session, run_id: str, capture_id: str) -> None:
    rc = session.get(RunCapture, (run_id, capture_id))
    run = session.get(Run, run_id)
    cap = session.get(Capture, capture_id)
    assert rc is not None and run is not None and cap is not None
    names = [e["name"] for e in run.estimators]
    store = get_store()
    ids, scores = _capture_scores(session, store, run_id, capture_id, names)
    bulk = capture_bulk(session, store, capture_id, stored_truth(cap))
    rc.scores = capture_aggregate(ids, scores, bulk)
    rc.status = "succeeded"
    session.flush()
    _maybe_finish_run(session, run_id)


def _capture_scores(session: Session, store: Store, run_id: str, capture_id: str, names: list[str]
                    ) -> tuple[np.ndarray, dict[str, ScoreColumns]]:
    """The replayed flows' ids and each estimator's score columns over them, for the capture's aggregate: from the
    score columns each replay task stored (``core.task_scores``), or — when a task finished before those were
    stored — from every result row read back."""
    chunks = session.scalars(select(Task.chunk).where(Task.run_id == run_id, Task.capture_id == capture_id,
                                                      Task.kind == "replay").order_by(Task.chunk)).all()
    keys = [scores_key(run_id, capture_id, chunk) for chunk in chunks]
    if all(store.exists(key) for key in keys):
        return capture_score_columns([store.read_parquet(key) for key in keys], names)
    rows = session.execute(select(Result.flow_id, Result.estimator, Result.scores).where(
        Result.run_id == run_id, Result.capture_id == capture_id).order_by(Result.flow_id))
    per_flow: dict[int, dict[str, dict[str, Any]]] = {}
    for fid, name, flow_scores in rows:
        per_flow.setdefault(fid, {})[name] = flow_scores
    ids = sorted(per_flow)
    return np.asarray(ids, np.int64), {n: flow_score_columns([per_flow[fid][n] for fid in ids]) for n in names}


def _maybe_finish_run(session: Session, run_id: str) -> None:
    """Finish the run once every capture in it has: failed when all failed or none is left (deleted),
    else succeeded; ``error`` gives the reason per failed capture (and notes deleted captures)."""
    run = session.get(Run, run_id, with_for_update=True)
    if run is None or run.status in ("succeeded", "failed"):
        return
    states = [s for (s,) in session.execute(select(RunCapture.status).where(RunCapture.run_id == run_id))]
    if any(s not in ("succeeded", "failed") for s in states):
        return
    failed = [s for s in states if s == "failed"]
    run.status = "failed" if not states or len(failed) == len(states) else "succeeded"
    notes = [run.error] if run.error else []
    if failed:  # the first few by name (each capture's own error is in its status), and how many more
        errors = session.execute(select(RunCapture.capture_id, RunCapture.error).where(
            RunCapture.run_id == run_id, RunCapture.status == "failed").order_by(RunCapture.capture_id)
            .limit(ERRORS_NAMED))
        notes += [f"capture {cid}: {err}" for cid, err in errors]
        if len(failed) > ERRORS_NAMED:
            notes.append(f"and {len(failed) - ERRORS_NAMED} more failed captures")
    if not states and not notes:
        notes.append("every capture of the run was deleted")
    run.error = "; ".join(notes) or None
    run.finished_at = now()
    session.flush()


def capture_removed(session: Session, run_id: str, capture_id: str) -> None:
    """A capture of an unfinished run was deleted (its rows in the run are gone): note it on the run and
    finish the run if nothing else is pending."""
    run = session.get(Run, run_id, with_for_update=True)
    if run is None or run.status in ("succeeded", "failed"):
        return
    note = f"capture {capture_id}: deleted before the run finished"
    if len(run.error or "") < MAX_ERROR_TEXT:  # (past it the run's status still lists what is left)
        run.error = f"{run.error}; {note}" if run.error else note
    session.flush()
    _maybe_finish_run(session, run_id)


def requeue_unfinished(session: Session, *, older_than_s: float | None = None,
                       in_broker: Callable[[list[str]], set[str]] | None = None) -> int:
    """Dispatch again the work that was lost; the number of tasks dispatched.

    Without ``older_than_s`` (an embedded server starting): every task not finished. With it (the workers'
    sweep): a started task whose heartbeat is older than that (its worker died), and a queued task older
    than that whose broker message is gone (``in_broker`` answers which task ids still have one: a Redis
    restart lost them, or the broker was unreachable when the task was created). Each is noted on the task,
    so that its run's status says it waits on re-dispatch. Only tasks already released count (they keep
    their slot, ``core.fair_queue``); then whatever waits is released as the window allows."""
    q = (select(Task).where(Task.status.in_(("queued", "started")), Task.released_at.is_not(None))
         .with_for_update(skip_locked=True))  # those waiting for their turn are the fair queue's
    tasks = list(session.scalars(q))
    if older_than_s is None:
        chosen = [(t, "re-queued when the server started") for t in tasks]
    else:
        cutoff = now().timestamp() - older_than_s
        queued = [t for t in tasks if t.status == "queued" and epoch(t.updated_at) < cutoff]
        present = in_broker([t.id for t in queued]) if in_broker is not None and queued else set()
        chosen = [(t, "its broker message was lost; dispatched again") for t in queued if t.id not in present]
        chosen += [(t, "its worker stopped (no heartbeat); dispatched again") for t in tasks
                   if t.status == "started" and epoch(t.heartbeat_at or t.updated_at) < cutoff]
    for task, why in chosen:
        task.status, task.heartbeat_at, task.updated_at, task.note = "queued", None, now(), why
        task.redispatches += 1
        after_commit(session, partial(dispatch, task.kind, task.id))
    after_commit(session, release_soon)
    return len(chosen)

