"""Fair sharing and admission, on real PostgreSQL, Redis and a live Celery worker (``core.fair_queue``,
``core.rate_limits``).

One owner's batch queued first cannot hold another owner's single capture back by more than a few task
lengths: measured in the first owner's tasks that started before the second's run finished, against the
bound the dispatch window gives, never in seconds. And each per-owner limit answers 429 with its code; the
run rate limit says when to come back in ``Retry-After``.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterator
from datetime import datetime

import psycopg
import pytest

from ackreplay.core.db import session_scope
from ackreplay.core.owners import create_token
from tests.conftest import ROOT
from tests.service.harness import client, configured, fresh_database, wait_run
from tests.service.test_e2e_celery import start_worker, stop, wait_ready
from tests.service.test_hostile import is_error, post_capture, tcp_capture

pytestmark = pytest.mark.services
WINDOW = 2  # tasks released to the one worker (concurrency 1) at once


def deployment_env(pg_url: str, redis_url: str, tmp_path, **extra: str) -> dict[str, str]:
    return {"DATABASE_URL": fresh_database(pg_url), "REDIS_URL": redis_url,
            "ACKREPLAY_STORAGE_URL": f"file://{tmp_path / 'store'}", "ACKREPLAY_DATA_DIR": str(tmp_path / "data"),
            **extra}


@pytest.fixture
def fair(postgres_server, redis_server, tmp_path) -> Iterator[dict[str, str]]:
    redis_server_flush(redis_server.url)
    env = deployment_env(postgres_server.url, redis_server.url, tmp_path, ACKREPLAY_DISPATCH_WINDOW=str(WINDOW))
    with configured(env):
        yield {**os.environ, **env, "PYTHONPATH": str(ROOT)}


def redis_server_flush(url: str) -> None:
    """Another test's Celery messages or buckets left in the shared Redis would run here: start empty."""
    import redis

    redis.Redis.from_url(url).flushall()


def tokens(*names: str) -> list[dict[str, str]]:
    with session_scope() as s:
        return [{"Authorization": f"Bearer {create_token(s, n).plain}"} for n in names]


def zipped(captures: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in captures.items():
            zf.writestr(name, data)
    return buf.getvalue()


def task_times(db: str, run_id: str) -> list[tuple[str, datetime | None]]:
    """(status, updated_at) of each task of the run: a task's claim sets ``updated_at``, so a task started
    before ``t`` has ``updated_at`` < ``t`` unless it finished after ``t`` (a replay task updates it then)."""
    with psycopg.connect(db) as conn:
        return conn.execute("select status, updated_at from tasks where run_id = %s", (run_id,)).fetchall()


def test_an_owner_s_backlog_holds_another_s_capture_back_a_few_tasks_only(fair, tmp_path):
    api = client()
    alice, bob = tokens("alice", "bob")
    backlog = 40  # captures: 80 tasks (an ingest and a replay each)
    archive = zipped({f"{i}.pcap": tcp_capture(300 + i) for i in range(backlog)})
    r = api.post("/api/v1/batches", headers=alice, files=[("files", ("backlog.zip", archive))])
    assert r.status_code == 202, r.text
    alice_run = r.json()["run_id"]
    first = api.get(f"/api/v1/runs/{alice_run}", headers=alice).json()
    assert "waiting for its turn" in (first["waiting"] or ""), first  # the backlog waits in the database
    r = post_capture(api, tcp_capture(999), headers=bob)  # queued after Alice's, before any worker starts
    assert r.status_code == 201, r.text
    log = tmp_path / "worker.log"
    worker = start_worker(fair, log)
    try:
        wait_ready(log)
        bob_run = wait_run(api, r.json()["run_id"], headers=bob, timeout=600)
        assert bob_run["status"] == "succeeded", bob_run
    finally:
        stop(worker)
    finished = datetime.fromisoformat(bob_run["finished_at"])
    bob_tasks = task_times(fair["DATABASE_URL"], bob_run["id"])
    alice_tasks = task_times(fair["DATABASE_URL"], alice_run)
    started_before = sum(1 for status, at in alice_tasks if status != "queued" and at is not None and at < finished)
    # each of Bob's tasks waits for at most the window's tasks already released, and the one running
    bound = len(bob_tasks) * (WINDOW + 1)
    assert len(bob_tasks) == 2  # first come, first served, they would have waited for Alice's 40 ingests
    assert started_before <= bound, (started_before, bound)
    print(f"Alice's tasks started before Bob's run finished: {started_before} (bound {bound}, backlog "
          f"{2 * backlog} tasks)")


@pytest.fixture
def limited(postgres_server, redis_server, tmp_path) -> Iterator[dict[str, str]]:
    """No worker: runs stay unfinished, so the limits on unfinished work are reached for certain."""
    redis_server_flush(redis_server.url)
    env = deployment_env(postgres_server.url, redis_server.url, tmp_path, ACKREPLAY_DISPATCH_WINDOW=str(WINDOW),
                         ACKREPLAY_MAX_ACTIVE_RUNS="3", ACKREPLAY_MAX_QUEUED_TASKS="5",
                         ACKREPLAY_RUN_RATE_PER_MINUTE="1", ACKREPLAY_RUN_BURST="3")
    with configured(env):
        yield env


def test_unfinished_runs_and_tasks_of_an_owner_are_limited(limited):
    api = client()
    alice, bob = tokens("alice", "bob")
    r = api.post("/api/v1/batches", headers=alice,
                 files=[("files", (f"{i}.pcap", tcp_capture(500 + i))) for i in range(6)])
    is_error(r, 429, "too_many_tasks")  # 6 ingest tasks > 5
    assert api.get("/api/v1/captures", headers=alice).json()["total"] == 0  # nothing of it kept
    for i in range(3):
        assert post_capture(api, tcp_capture(600 + i), headers=alice).status_code == 201
    is_error(post_capture(api, tcp_capture(700), headers=alice), 429, "too_many_runs")  # a 4th unfinished run
    assert api.get("/api/v1/captures", headers=alice).json()["total"] == 3
    assert post_capture(api, tcp_capture(700), headers=bob).status_code == 201  # per owner
    with psycopg.connect(limited["DATABASE_URL"]) as conn:  # and only the window's tasks went to the broker
        assert conn.execute("select count(*) from tasks where released_at is not null").fetchone() == (WINDOW,)


def test_starting_runs_too_fast_is_answered_429_with_retry_after(limited):
    import redis

    api = client()
    (alice,) = tokens("alice")
    for i in range(3):  # the burst
        assert post_capture(api, tcp_capture(800 + i), headers=alice).status_code == 201
    with psycopg.connect(limited["DATABASE_URL"]) as conn:  # (finish them: only the rate limit applies now)
        conn.execute("update runs set status = 'succeeded'")
        conn.execute("update tasks set status = 'done'")
    r = post_capture(api, tcp_capture(900), headers=alice)
    is_error(r, 429, "rate_limited")
    assert 1 <= int(r.headers["Retry-After"]) <= 60, r.headers  # one run a minute: the next token within 60 s
    assert api.get("/api/v1/captures", headers=alice).json()["total"] == 3
    bucket = redis.Redis.from_url(limited["REDIS_URL"])
    (key,) = bucket.keys("ackreplay:run-bucket:*")
    stamp = float(bucket.hget(key, "stamp"))
    bucket.hset(key, "stamp", repr(stamp - 61))  # a minute later, as the bucket sees it: one token back
    assert post_capture(api, tcp_capture(900), headers=alice).status_code == 201
    is_error(post_capture(api, tcp_capture(901), headers=alice), 429, "rate_limited")
