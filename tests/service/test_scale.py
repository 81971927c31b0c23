"""The service at scale, by what it reads and keeps rather than by time: a replay task reads its own flows' rows
only, a capture that skips every one of its many flows keeps a summary and a run status of a few kB, a capture
deleted while its flows are being stored fails its run with the reason, and a task whose step outlasts several
heartbeats keeps beating (its worker is not taken for dead)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from sqlalchemy import event

from ackreplay.core import queue
from bench.make_capture import generate, generate_mix
from tests.service.accounting import check_store
from tests.service.harness import client, configured, fresh_database, upload, wait_run
from tests.service.test_e2e_celery import start_worker, stop, wait_ready

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """96 bulk flows, all replayed; 30 000 flows of 2-4 packets, none replayed (no vantage replay accepts)."""
    base = tmp_path_factory.mktemp("scale")
    generate(base / "units.pcap", 12_000, flows=96)
    generate_mix(base / "mix.pcap", 30_000, 2, 4)
    return SimpleNamespace(units=base / "units.pcap", mix=base / "mix.pcap")


@pytest.fixture
def svc(tmp_path: Path, postgres_server: Any) -> Iterator[SimpleNamespace]:
    data = tmp_path / "data"
    db = fresh_database(postgres_server.url)
    with configured({"DATABASE_URL": db, "ACKREPLAY_DATA_DIR": str(data), "ACKREPLAY_REPLAY_BATCH_FLOWS": "16"}):
        yield SimpleNamespace(api=client(), store=data / "store", db=db)


class RowCounter:
    """Rows each SELECT handed back, by the table it reads first (SQLAlchemy's cursor events)."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.queries = 0

    def __call__(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if not statement.lstrip().upper().startswith("SELECT"):
            return
        table = re.search(r"\bFROM\s+\"?(\w+)", statement, re.IGNORECASE).group(1).lower()  # type: ignore[union-attr]
        self.rows[table] = self.rows.get(table, 0) + max(cursor.rowcount, 0)
        self.queries += 1


class ParquetRows:
    """Rows read from the store's tables whose key ends with ``suffix`` (``Store.read_parquet`` wrapped)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
        from ackreplay.core.storage import Store

        self.rows, real = 0, Store.read_parquet

        def counted(store: Store, key: str, *a: Any, **k: Any) -> Any:
            frame = real(store, key, *a, **k)
            self.rows += frame.height if key.endswith(suffix) else 0
            return frame

        monkeypatch.setattr(Store, "read_parquet", counted)


def test_a_replay_task_reads_only_its_own_flows(svc, captures, monkeypatch):
    from ackreplay.core.db import get_engine
    from ackreplay.core.run_tasks import run_task

    body = upload(svc.api, captures.units).json()
    run = wait_run(svc.api, body["run_id"], timeout=300)
    assert run["status"] == "succeeded", run
    with psycopg.connect(svc.db) as conn:
        tasks = conn.execute("select id, flow_ids from tasks where run_id = %s and kind = 'replay' order by chunk",
                             (run["id"],)).fetchall()
        rows = conn.execute("select count(*) from flows").fetchone()[0]
        before = conn.execute("select flow_id, estimator, scores::text from results order by 1, 2").fetchall()
    assert rows == 0 and len(tasks) == 6  # no database row per flow; 16 flows a task
    assert svc.api.get(f"/api/v1/captures/{body['capture']['id']}/flows").json()["total"] == 96
    task_id, flow_ids = tasks[3]
    with psycopg.connect(svc.db) as conn:  # run it again: as a retried task would be
        conn.execute("update tasks set status = 'queued', worker = null where id = %s", (task_id,))
    counter = RowCounter()
    summaries = ParquetRows(monkeypatch, "flows.parquet")
    event.listen(get_engine(), "after_cursor_execute", counter)
    try:
        run_task("replay", task_id)
    finally:
        event.remove(get_engine(), "after_cursor_execute", counter)
    assert summaries.rows == len(flow_ids) == 16, summaries.rows  # its own flows' summaries (no truth: no bulk)
    assert counter.rows.get("results", 0) <= 16 * len(run["estimators"]), counter.rows
    assert sum(counter.rows.values()) <= 16 * (len(run["estimators"]) + 2) + 20, counter.rows
    assert counter.queries <= 30, counter.queries
    with psycopg.connect(svc.db) as conn:  # idempotent: the same rows
        assert conn.execute("select flow_id, estimator, scores::text from results order by 1, 2").fetchall() == before
        assert conn.execute("select status from tasks where id = %s", (task_id,)).fetchone() == ("done",)
    _groups_are_whole(svc, run["id"], body["capture"]["id"], flow_ids)
    check_store(svc.store, svc.api)


def test_a_page_of_scores_reads_a_page_of_results(svc, captures):
    """GET /runs/{id}/scores reads the page it answers (and its flows' rows), sorted and cut in the database; it
    read every result of the run into the API's memory, however large the run, to answer 500 of them."""
    from ackreplay.core.db import get_engine

    body = upload(svc.api, captures.units).json()
    run = wait_run(svc.api, body["run_id"], timeout=300)
    assert run["status"] == "succeeded", run
    url = f"/api/v1/runs/{run['id']}/scores"
    everything = svc.api.get(url, params={"limit": 5000}).json()
    assert everything["total"] == len(everything["items"]) == 96 * len(run["estimators"])
    score = "mean_abs_rel_error"
    numbers = sorted((r for r in everything["items"] if r[score] is not None), key=lambda r: -r[score])
    expected = numbers + [r for r in everything["items"] if r[score] is None]  # (a stable sort: ties keep order)
    pages = {("flow_id", "desc"): sorted(everything["items"], key=lambda r: -r["flow_id"]), (score, "desc"): expected,
             (None, "asc"): everything["items"]}
    counter = RowCounter()
    event.listen(get_engine(), "after_cursor_execute", counter)
    try:
        for (sort, order), rows in pages.items():
            params = {"limit": 7, "offset": 40, "order": order, **({"sort": sort} if sort else {})}
            page = svc.api.get(url, params=params)
            assert page.json()["items"] == rows[40:47] and page.json()["total"] == len(rows), (sort, order)
    finally:
        event.remove(get_engine(), "after_cursor_execute", counter)
    assert counter.rows.get("results", 0) <= 3 * (7 + 1 + 1), counter.rows  # the page, a count, a sample row
    assert counter.rows.get("flows", 0) <= 3 * 7, counter.rows
    answer = svc.api.get(url, params={"sort": "parameters"})  # not a number: nothing to sort by
    assert (answer.status_code, answer.json()["error"]) == (422, "invalid_sort")


def test_the_leaderboard_reads_the_results_of_bulk_flows_only(svc, captures):
    """The leaderboard ranks bulk flows: it reads their results only, chosen in the database (it read every result
    of the runs as an object: 3 s for 998 captures × 77 variants of short flows, none of them bulk)."""
    from ackreplay.core.db import get_engine
    from tests.service.test_hostile import tcp_capture

    bulk = wait_run(svc.api, upload(svc.api, captures.units).json()["run_id"], timeout=300)
    files = [("files", (f"{i}.pcap", tcp_capture(900 + i, segments=30))) for i in range(6)]  # 30 kB each: not bulk
    short = wait_run(svc.api, svc.api.post("/api/v1/batches", files=files).json()["run_id"], timeout=300)
    assert bulk["status"] == short["status"] == "succeeded"
    runs = ",".join(r["id"] for r in (bulk, short))
    assert svc.api.get(f"/api/v1/runs/{short['id']}/scores").json()["total"] == 6 * len(short["estimators"])
    counter = RowCounter()
    event.listen(get_engine(), "after_cursor_execute", counter)
    try:
        board = svc.api.get("/api/v1/leaderboard", params={"runs": runs}).json()
    finally:
        event.remove(get_engine(), "after_cursor_execute", counter)
    assert counter.rows.get("results", 0) == 96 * len(bulk["estimators"]), counter.rows
    alone = svc.api.get("/api/v1/leaderboard", params={"runs": bulk["id"]}).json()
    assert board["scores"] == alone["scores"]  # the short flows count for nothing


def _groups_are_whole(svc: SimpleNamespace, run_id: str, capture_id: str, flow_ids: list[int]) -> None:
    """Every flow of a group sharing a bottleneck answers the whole group, which the run's document lists once,
    though the database keeps it once (by its first flow)."""
    base = f"/api/v1/runs/{run_id}/captures/{capture_id}/flows"
    groups = {f: svc.api.get(f"{base}/{f}/path").json()["path_group"] for f in flow_ids}
    assert any(g is not None and len(g["flows"]) > 2 for g in groups.values()), groups
    for f, g in groups.items():
        assert g is None or (f in g["flows"] and all(groups[m] == g for m in g["flows"])), (f, g)
    with psycopg.connect(svc.db) as conn:
        row = conn.execute("select count(*) from flow_diagnostics where capture_id = %s and "
                           "(data->'path_group')::text <> 'null'", (capture_id,)).fetchone()
    assert row is not None
    held = row[0]
    document = svc.api.get(f"/api/v1/runs/{run_id}/document").json()["captures"][0]
    assert held == len(document["path_groups"]) and all(g in document["path_groups"] for g in groups.values() if g)
    assert all("path_group_of" not in (f["diagnostics"] or {}) for f in document["flows"])


@pytest.mark.parametrize(("acks", "limit", "most", "tasks"), [
    ([100] * 10, 250, 100, [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]),  # by ACKs
    ([100] * 10, 10_000, 3, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]),   # by flows
    ([10, 5000, 10, 10, 10], 100, 100, [[0], [1], [2, 3, 4]]),        # a flow past the limit alone
    ([], 100, 100, [])])
def test_replay_tasks_are_sized_by_their_acks(acks, limit, most, tasks):
    import numpy as np

    from ackreplay.core.run_tasks import task_flows

    with configured({"ACKREPLAY_REPLAY_TASK_ACKS": str(limit), "ACKREPLAY_REPLAY_BATCH_FLOWS": str(most)}):
        assert task_flows(np.arange(len(acks)), np.asarray(acks, np.int64)) == tasks


def test_a_capture_skipping_all_its_flows_keeps_a_summary(svc, captures):
    from ackreplay.ingest import ingest_capture
    from ackreplay.replay.engine import plan

    body = upload(svc.api, captures.mix).json()
    run = wait_run(svc.api, body["run_id"], timeout=300)
    assert run["status"] == "succeeded", run
    answer = svc.api.get(f"/api/v1/runs/{body['run_id']}")
    assert len(answer.content) < 20_000, len(answer.content)
    (mine,) = answer.json()["captures"]
    _, skipped = plan(ingest_capture(captures.mix).flows)
    assert mine["skipped_total"] == len(skipped) == 30_000
    assert mine["skipped_counts"] == {"vantage unknown": 30_000}
    assert mine["skipped_flows"] == {str(f): skipped[f] for f in range(100)}
    with psycopg.connect(svc.db) as conn:  # what the database keeps: the summary, not an entry per flow
        kept, total = conn.execute("select skipped::text, skipped_total from run_captures").fetchone()
        assert len(kept) < 20_000 and total == 30_000
        assert conn.execute("select count(*) from flows").fetchone() == (0,)
        assert conn.execute("select count(*) from tasks where kind = 'replay'").fetchone() == (0,)
    base = f"/api/v1/runs/{body['run_id']}/captures/{body['capture']['id']}/skipped"
    tail = svc.api.get(base, params={"offset": 29_990}).json()
    assert tail["total"] == 30_000 and tail["next"] is None
    assert [(x["flow_id"], x["reason"]) for x in tail["items"]] == [(f, skipped[f]) for f in range(29_990, 30_000)]
    flows = svc.api.get(f"/api/v1/runs/{body['run_id']}/document").json()["captures"][0]["flows"]
    assert [f["skipped_reason"] for f in flows] == [skipped[f] for f in range(30_000)]
    page = svc.api.get(f"/api/v1/captures/{body['capture']['id']}/flows", params={"offset": 29_990}).json()
    assert page["total"] == 30_000 and page["next"] is None  # the flows from their stored summaries
    assert [f["flow_id"] for f in page["items"]] == list(range(29_990, 30_000))
    assert {k: v for k, v in page["items"][0].items() if k != "invalid"} == {  # (the document names a valid
        k: v for k, v in flows[29_990].items() if k in page["items"][0]}       # flow's empty `invalid` not)
    one = svc.api.get(f"/api/v1/captures/{body['capture']['id']}/flows/29995").json()
    assert one == page["items"][5]
    assert svc.api.get(f"/api/v1/captures/{body['capture']['id']}/flows/30000").json()["error"] == "flow_not_found"
    check_store(svc.store, svc.api)


def test_a_capture_deleted_while_its_flows_are_stored_fails_the_run(svc, captures, monkeypatch):
    import ackreplay.core.run_tasks

    real, entered, release = ackreplay.core.run_tasks.write_tables, threading.Event(), threading.Event()

    def held(*a: Any, **k: Any) -> Any:
        entered.set()
        assert release.wait(60)
        return real(*a, **k)

    monkeypatch.setattr("ackreplay.core.run_tasks.write_tables", held)
    body = upload(svc.api, captures.mix).json()
    assert entered.wait(120)
    assert svc.api.delete(f"/api/v1/captures/{body['capture']['id']}").status_code == 204
    release.set()  # its tables and summaries written after the deletion: removed with the failed task
    run = wait_run(svc.api, body["run_id"], timeout=120)
    assert run["status"] == "failed" and run["captures"] == [], run
    assert run["error"] == f"capture {body['capture']['id']}: deleted before the run finished", run
    assert queue.InProcessWorker.get().idle.wait(60)  # (the run ended with the deletion; its ingest task then)
    check_store(svc.store, svc.api)


def test_a_long_step_keeps_its_heartbeat(postgres_server, redis_server, tmp_path, captures):
    """Every chunk of ingest's steps pauses 1.5 s (the test knob): the ingest lasts far longer than the
    1 s after which a silent task's worker is taken for dead, and the sweep never dispatches it again."""
    env = {"DATABASE_URL": fresh_database(postgres_server.url), "REDIS_URL": redis_server.url,
           "ACKREPLAY_STORAGE_URL": f"file://{tmp_path / 'store'}", "ACKREPLAY_DATA_DIR": str(tmp_path / "data"),
           "ACKREPLAY_STALE_TASK_SECONDS": "1", "ACKREPLAY_STEP_PAUSE_SECONDS": "1.5"}
    with configured(env):
        import os

        from tests.conftest import ROOT

        api = client()
        log = tmp_path / "worker.log"
        worker = start_worker({**os.environ, **env, "PYTHONPATH": str(ROOT)}, log)
        try:
            wait_ready(log)
            body = upload(api, captures.units).json()
            beats: set[Any] = set()
            started = time.monotonic()
            while (run := api.get(f"/api/v1/runs/{body['run_id']}").json())["status"] not in ("succeeded", "failed"):
                with psycopg.connect(env["DATABASE_URL"]) as conn:
                    beats |= {b for (b,) in conn.execute(
                        "select heartbeat_at from tasks where kind = 'ingest' and status = 'started'")}
                assert "worker stopped" not in (run["waiting"] or ""), run
                assert time.monotonic() - started < 300
                time.sleep(0.1)
        finally:
            stop(worker)
    assert run["status"] == "succeeded", run
    assert len(beats) >= 10, beats  # beats throughout the ≥ 6 s ingest, about every 0.2 s
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        assert conn.execute("select attempts, redispatches, note from tasks where kind = 'ingest'").fetchall() == [
            (1, 0, None)]


def test_a_capture_stored_before_its_summaries_reads_the_same_from_its_rows(svc, captures):
    """A capture ingested when the service kept a ``flows`` row per flow and no stored summaries answers as one
    ingested now: its flow pages, one flow, the document and the score rows read its rows instead."""
    from ackreplay.core.db import session_scope
    from ackreplay.core.orm import Flow
    from ackreplay.core.storage import get_store
    from ackreplay.core.stored_capture import flows_key, tables_key
    from ackreplay.core.stored_flows import documents, flow_summaries

    body = upload(svc.api, captures.units).json()
    run = wait_run(svc.api, body["run_id"], timeout=300)
    cap, base = body["capture"]["id"], "/api/v1/captures/" + body["capture"]["id"]
    urls = [f"{base}/flows?offset=90&limit=20", f"{base}/flows/7", f"/api/v1/runs/{run['id']}/document",
            f"/api/v1/runs/{run['id']}/scores?flow=7", f"/api/v1/runs/{run['id']}/captures/{cap}/flows/7/path"]
    now = [svc.api.get(u).json() for u in urls]
    store = get_store()
    with session_scope() as session:
        group = flow_summaries(session, store, cap, [90, 7, 999])  # (the what-if's one read for a group)
    assert sorted(group) == [7, 90] and group[7]["flow_id"] == 7
    with session_scope() as session:  # the capture as the service kept it before
        session.add_all(Flow(capture_id=cap, flow_id=d["flow_id"], sender=d["sender"], receiver=d["receiver"],
                             vantage=d["vantage"], bytes=d["bytes"], goodput_bps=d["goodput_bps"], summary=d,
                             tables_key=tables_key(cap)) for d in documents(store.read_parquet(flows_key(cap))))
    store.delete(flows_key(cap))
    assert not store.exists(flows_key(cap))
    assert [svc.api.get(u).json() for u in urls] == now
    with session_scope() as session:
        assert flow_summaries(session, store, cap, [90, 7, 999]) == group
    assert now[0]["total"] == 96 and [f["flow_id"] for f in now[0]["items"]] == list(range(90, 96))
