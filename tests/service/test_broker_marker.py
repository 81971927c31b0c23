"""The broker marker of a task (``core.queue.MARKER``) lives only as long as its message: a worker taking the
message removes it, so a task queued again without a message (its retry lost) is the sweep's within
``stale_task_seconds``, not hidden for the marker's seven days while it holds a slot of the dispatch window."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest
import redis

from ackreplay.core import queue
from tests.service.harness import client, configured, fresh_database
from tests.service.test_hostile import tcp_capture

pytestmark = pytest.mark.services


@pytest.fixture
def svc(tmp_path: Path, postgres_server, redis_server) -> Iterator[SimpleNamespace]:
    db = fresh_database(postgres_server.url)
    with configured({"DATABASE_URL": db, "REDIS_URL": redis_server.url, "ACKREPLAY_DATA_DIR": str(tmp_path / "d")}):
        yield SimpleNamespace(api=client(), db=db, redis=redis.Redis.from_url(redis_server.url))


def _ingest_task(svc: SimpleNamespace, seed: int) -> str:
    r = svc.api.post("/api/v1/captures", files={"file": ("c.pcap", tcp_capture(seed), "application/octet-stream")})
    assert r.status_code == 201, r.text
    row = psycopg.connect(svc.db).execute("select id from tasks where run_id = %s and kind = 'ingest'",
                                          (r.json()["run_id"],)).fetchone()
    assert row is not None
    return str(row[0])


def _age(svc: SimpleNamespace, tid: str, status: str) -> None:
    """The task ``status`` and last touched two minutes ago (as a lost task looks to the sweep)."""
    with psycopg.connect(svc.db) as conn:
        conn.execute("update tasks set status = %s, updated_at = %s, heartbeat_at = null where id = %s",
                     (status, datetime.now(UTC) - timedelta(seconds=120), tid))


def _sweep() -> int:
    from ackreplay.core.db import session_scope
    from ackreplay.core.run_tasks import requeue_unfinished

    with session_scope() as session:
        return requeue_unfinished(session, older_than_s=30, in_broker=queue.in_broker)


def test_a_consumed_message_takes_its_marker_and_the_sweep_sees_the_task_lost(svc, monkeypatch):
    from ackreplay.core.run_tasks import run_task

    tid = _ingest_task(svc, 1)
    assert svc.redis.exists(queue.MARKER + tid)  # released to the broker, marked
    monkeypatch.setattr("ackreplay.core.run_tasks.ingest_task", lambda task_id: None)  # (the work is not the point)
    run_task("ingest", tid)  # a worker took the message
    assert not svc.redis.exists(queue.MARKER + tid)
    _age(svc, tid, "queued")  # queued again with no message in the broker (its retry lost)
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr("ackreplay.core.run_tasks.dispatch", lambda kind, t: sent.append((kind, t)))
    assert _sweep() == 1  # (with the marker left behind: 0, for seven days)
    assert sent == [("ingest", tid)]


def test_an_infrastructure_fault_marks_the_retry_for_its_backoff_only(svc, monkeypatch):
    from ackreplay.core.run_tasks import run_task

    tid = _ingest_task(svc, 2)

    def outage(task_id: str) -> None:
        raise ConnectionError("store unreachable")

    monkeypatch.setattr("ackreplay.core.run_tasks.ingest_task", outage)
    with pytest.raises(ConnectionError):
        run_task("ingest", tid)
    ttl = svc.redis.ttl(queue.MARKER + tid)
    assert 0 < ttl <= queue.RETRY_MAX_S + 30 + 1, ttl  # the queue's retry is on its way: not the sweep's yet
    (status,) = psycopg.connect(svc.db).execute("select status from tasks where id = %s", (tid,)).fetchone()
    assert status == "queued"
    _age(svc, tid, "queued")
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr("ackreplay.core.run_tasks.dispatch", lambda kind, t: sent.append((kind, t)))
    assert _sweep() == 0  # the retry's marker stands for it
    svc.redis.delete(queue.MARKER + tid)  # (its time passed, the retry never came)
    assert _sweep() == 1
    assert sent == [("ingest", tid)]


def test_a_message_lost_on_its_way_to_a_worker_is_the_sweeps_despite_its_marker(svc, monkeypatch):
    """A worker stopped while Redis handed it a message (its ``BRPOP`` answered: the message out of the list, not yet
    stored as unacknowledged) lost it with the marker left: the sweep looks for the message itself. While the
    message waits in line the task is not sent again; once it is gone from the lists and from ``unacked``, it is."""
    tid = _ingest_task(svc, 3)
    assert any(tid.encode() in m for m in svc.redis.lrange(queue.QUEUE_LISTS[0], 0, -1))  # the id is in the message
    _age(svc, tid, "queued")
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr("ackreplay.core.run_tasks.dispatch", lambda kind, t: sent.append((kind, t)))
    assert _sweep() == 0 and sent == []  # waiting in line
    svc.redis.delete(*queue.QUEUE_LISTS)  # taken by a worker that died before storing it as unacknowledged
    assert svc.redis.exists(queue.MARKER + tid)  # (the marker stays behind)
    assert _sweep() == 1
    assert sent == [("ingest", tid)]
