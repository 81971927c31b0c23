"""Faults: a worker killed mid-run, a worker killed while Redis hands it a message, Redis restarted mid-run,
PostgreSQL briefly unreachable, an upload while Redis is down.

Each test has its own PostgreSQL and Redis (from tests.services) so that restarting them disturbs no
other test. Work is split one flow per task so that "mid-run" has room to happen. The first tests sweep
lost work after 2 s; the ``*_within_a_minute`` ones run with the default (30 s) and show that lost work is
dispatched again within a minute of the fault, that the run says it waits meanwhile, and that every result
ends up stored exactly once with the store holding exactly the captures' bytes.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from tests.conftest import ROOT, SHARED
from tests.service.accounting import check_store
from tests.service.harness import client, configured, wait_run
from tests.service.test_e2e_celery import fresh_database, kill, start_worker, stop, wait_ready
from tests.services import start_postgres, start_redis, stop_postgres, stop_server

pytestmark = [pytest.mark.services, pytest.mark.slow]
CAPTURES = ["s07_bbr_3f_20M_rtt20_buf2bdp.pcap", "s03_cubic_2f_10M_rtt60_buf1bdp.pcapng",
            "s09_reno_vs_cubic_10M_rtt40_buf2bdp.pcap"]


@pytest.fixture
def servers(tmp_path):
    pg_base = Path(tempfile.mkdtemp(prefix="ackreplay-pg-"))  # reachable by the postgres user
    pg, pg_proc = start_postgres(pg_base)
    rd, rd_proc = start_redis(tmp_path / "redis")
    procs = {"pg": pg_proc, "redis": rd_proc}
    yield {"pg": pg, "redis": rd, "procs": procs, "base": tmp_path, "pg_base": pg_base}
    stop_postgres(pg, procs["pg"])
    stop_server(procs["redis"])
    shutil.rmtree(pg_base, ignore_errors=True)


def env_for(servers, db_url, stale: str | None = "2"):
    base = servers["base"]
    env = {"DATABASE_URL": db_url, "REDIS_URL": servers["redis"].url, "ACKREPLAY_STORAGE_URL": str(base / "store"),
           "ACKREPLAY_DATA_DIR": str(base / "data"), "ACKREPLAY_REPLAY_BATCH_FLOWS": "1"}
    if stale is not None:
        env["ACKREPLAY_STALE_TASK_SECONDS"] = stale
    return env


def start_batch(api):
    files = [("files", (n, (SHARED / "generated" / n).read_bytes())) for n in CAPTURES]
    r = api.post("/api/v1/batches", files=files)
    assert r.status_code == 202, r.text
    return r.json()["run_id"]


def task_counts(db_url, run_id):
    """The run's tasks finished (done or failed, as its progress counts them) and all of them, from the database."""
    with psycopg.connect(db_url) as conn:
        return conn.execute("select count(*) filter (where status in ('done', 'failed')), count(*) from tasks "
                            "where run_id = %s", (run_id,)).fetchone()


def pause_mid_run(worker, db_url, run_id, at_least, timeout=120):
    """Wait until ``at_least`` of the run's tasks are finished, then freeze the worker (SIGSTOP to its process
    group: whatever task it holds stays held) so that a fault lands mid-run however fast this machine replays — the
    API's progress, polled, could see a quick run only once it had ended. The database is polled every 10 ms, and
    the run must have tasks left once the worker is frozen. :func:`resume` lets it go on."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if task_counts(db_url, run_id)[0] >= at_least:
            os.killpg(worker.pid, signal.SIGSTOP)
            done, total = task_counts(db_url, run_id)
            assert done < total, "the run finished before the fault"
            return
        time.sleep(0.01)
    raise AssertionError("the run made no progress")


def resume(worker):
    os.killpg(worker.pid, signal.SIGCONT)


def assert_complete_once(db_url, run_id):
    with psycopg.connect(db_url) as conn:
        rows, distinct = conn.execute(
            "select count(*), count(distinct (capture_id, flow_id, estimator)) from results where run_id = %s",
            (run_id,)).fetchone()
        tasks = conn.execute("select count(*) from tasks where run_id = %s and kind = 'replay'", (run_id,)).fetchone()
        dec, dec_distinct = conn.execute(
            "select count(*), count(distinct (capture_id, flow_id, estimator, episode)) from decisions "
            "where run_id = %s", (run_id,)).fetchone()
    assert rows == distinct == tasks[0] * 10  # every replayed flow × 10 estimators, each exactly once
    assert dec == dec_distinct > 0


def worker_env():
    """A worker's environment: the configured one, with this checkout on its path."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@contextmanager
def one_worker(servers, stale: str | None):
    """A fresh database, the service configured on it (lost work swept after ``stale`` s, None: the default) and
    one worker, ready (``servers["worker"]``): (database URL, API client). The worker is stopped after, if alive."""
    db_url = fresh_database(servers["pg"].url)
    with configured(env_for(servers, db_url, stale=stale)):
        api = client()
        log = servers["base"] / "w.log"
        servers["worker"] = start_worker(worker_env(), log)
        try:
            wait_ready(log)
            yield db_url, api
        finally:
            stop(servers["worker"])


@pytest.fixture
def quick_sweep(servers):
    """Lost work swept after 2 s, and one worker, ready: (database URL, API client)."""
    with one_worker(servers, "2") as ready:
        yield ready


@pytest.fixture
def default_sweep(servers):
    """The default sweep (30 s) and one worker, ready: (database URL, API client)."""
    with one_worker(servers, None) as ready:
        yield ready


def finish_with_a_new_worker(servers, api, db_url, run_id, timeout):
    """A second worker takes the run over: it ends succeeded within ``timeout`` s, every result stored once."""
    w2 = start_worker(worker_env(), servers["base"] / "w2.log")
    try:
        run = wait_run(api, run_id, timeout=timeout)
        assert run["status"] == "succeeded"
        assert_complete_once(db_url, run_id)
    finally:
        stop(w2)


def test_killed_worker_mid_run(servers, quick_sweep):
    db_url, api = quick_sweep
    run_id = start_batch(api)
    pause_mid_run(servers["worker"], db_url, run_id, 4)
    kill(servers["worker"])  # in the middle of the run: its current task is started, never finished
    finish_with_a_new_worker(servers, api, db_url, run_id, timeout=300)


def test_a_worker_killed_while_redis_hands_it_a_message_loses_no_work(servers, quick_sweep):
    """A worker frozen while it waits for work (in ``BRPOP``), then killed: Redis hands it the run's first message,
    which leaves the queue's list but never reaches kombu's unacknowledged messages, so no visibility timeout brings
    it back and its marker stays. The sweep looks for the message itself (``core.queue.in_broker``) and sends the
    task again: the run ends, every result once (measured before: 10 of 11 tasks done for as long as one waited)."""
    db_url, api = quick_sweep
    time.sleep(1.0)  # (waiting for work)
    os.killpg(servers["worker"].pid, signal.SIGSTOP)
    run_id = start_batch(api)
    time.sleep(2.0)  # Redis handed the frozen worker the first message
    kill(servers["worker"])
    finish_with_a_new_worker(servers, api, db_url, run_id, timeout=120)


def test_redis_restart_mid_run(servers, quick_sweep):
    db_url, api = quick_sweep
    run_id = start_batch(api)
    pause_mid_run(servers["worker"], db_url, run_id, 3)
    stop_server(servers["procs"]["redis"])  # every queued message is lost
    resume(servers["worker"])
    time.sleep(1.0)
    _, servers["procs"]["redis"] = start_redis(servers["base"] / "redis", port=servers["redis"].port)
    run = wait_run(api, run_id, timeout=300)
    assert run["status"] == "succeeded"
    assert_complete_once(db_url, run_id)


def test_postgres_unreachable_then_recovers_without_restart(servers):
    db_url = fresh_database(servers["pg"].url)
    with configured({"DATABASE_URL": db_url, "ACKREPLAY_DATA_DIR": str(servers["base"] / "data")}):
        api = client()
        assert api.get("/api/v1/captures").status_code == 200
        stop_postgres(servers["pg"], servers["procs"]["pg"])
        r = api.get("/api/v1/captures")
        assert r.status_code == 503 and r.json()["error"] == "database_unavailable"
        assert r.headers["retry-after"] == "5"
        assert api.get("/api/v1/ready").json()["checks"]["database"].startswith("down")
        _, servers["procs"]["pg"] = start_postgres(servers["pg_base"], port=servers["pg"].port)
        deadline = time.monotonic() + 30
        while api.get("/api/v1/captures").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert api.get("/api/v1/ready").json()["status"] == "ready"


def redispatched_within(db_url, run_id, since, seconds=60.0):
    """Wait until the sweep has dispatched a lost task of the run again; it must be within ``seconds`` of the
    fault (``since``)."""
    while True:
        with psycopg.connect(db_url) as conn:
            n = conn.execute("select count(*) from tasks where run_id = %s and redispatches > 0",
                             (run_id,)).fetchone()[0]
        if n:
            return
        assert time.monotonic() - since < seconds, f"no lost task of run {run_id} dispatched again in {seconds} s"
        time.sleep(0.2)


def ended_once(api, servers, db_url, run_id, timeout=300):
    """The run ends `succeeded`, every result exactly once, the store exact."""
    run = wait_run(api, run_id, timeout=timeout)
    assert run["status"] == "succeeded", run
    assert_complete_once(db_url, run_id)
    check_store(servers["base"] / "store", api)


def restart_redis(servers):
    stop_server(servers["procs"]["redis"])  # every queued message is lost
    _, servers["procs"]["redis"] = start_redis(servers["base"] / "redis", port=servers["redis"].port)


def started_tasks(db_url, run_id):
    with psycopg.connect(db_url) as conn:
        return conn.execute("select count(*) from tasks where run_id = %s and status = 'started'",
                            (run_id,)).fetchone()[0]


def test_a_killed_worker_s_task_is_dispatched_again_within_a_minute(servers, default_sweep):
    db_url, api = default_sweep
    run_id = start_batch(api)
    pause_mid_run(servers["worker"], db_url, run_id, 4)
    resume(servers["worker"])
    deadline = time.monotonic() + 60
    while not started_tasks(db_url, run_id):  # kill it while it runs a task (not between two)
        assert time.monotonic() < deadline, "the worker started no further task"
        time.sleep(0.01)
    kill(servers["worker"])  # main process and child: the task it ran stays `started`, its message unacknowledged
    killed = time.monotonic()
    lost = started_tasks(db_url, run_id)  # the dead worker's state, frozen (0 only if it finished just before)
    servers["worker"] = start_worker(worker_env(), servers["base"] / "w2.log")
    if lost:
        redispatched_within(db_url, run_id, killed)  # by the heartbeat sweep, before Redis's visibility timeout
    # a message the dead worker had taken but not claimed comes back by the visibility timeout (60 s)
    ended_once(api, servers, db_url, run_id)


def test_a_redis_restart_loses_no_work_for_more_than_a_minute(servers, default_sweep):
    db_url, api = default_sweep
    run_id = start_batch(api)
    pause_mid_run(servers["worker"], db_url, run_id, 3)
    restart_redis(servers)
    resume(servers["worker"])  # (its connections to the stopped Redis are gone: it meets the restart as it runs)
    redispatched_within(db_url, run_id, time.monotonic())
    ended_once(api, servers, db_url, run_id)


def test_an_upload_while_redis_is_down_runs_within_a_minute_of_its_return(servers, default_sweep):
    db_url, api = default_sweep
    stop_server(servers["procs"]["redis"])
    data = (SHARED / "generated" / CAPTURES[2]).read_bytes()
    r = api.post("/api/v1/captures", files={"file": (CAPTURES[2], data)})
    assert r.status_code == 201, r.text  # the run is in the database; its message could not be sent
    _, servers["procs"]["redis"] = start_redis(servers["base"] / "redis", port=servers["redis"].port)
    redispatched_within(db_url, r.json()["run_id"], time.monotonic())
    ended_once(api, servers, db_url, r.json()["run_id"])


def test_postgres_stopped_mid_run_the_workers_retry_and_finish(servers, default_sweep):
    db_url, api = default_sweep
    run_id = start_batch(api)
    pause_mid_run(servers["worker"], db_url, run_id, 3)
    stop_postgres(servers["pg"], servers["procs"]["pg"])
    resume(servers["worker"])  # (it runs on through the outage, as it would have)
    time.sleep(5)
    _, servers["procs"]["pg"] = start_postgres(servers["pg_base"], port=servers["pg"].port)
    ended_once(api, servers, db_url, run_id)
