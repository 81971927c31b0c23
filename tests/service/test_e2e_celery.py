"""The shared deployment for real: PostgreSQL, Redis and a live Celery worker (``ackreplay worker``).

Upload a shared capture over HTTP, poll the run, and get exactly the scores ``ackreplay score`` prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED
from tests.service.harness import (
    cli_document,
    client,
    configured,
    fresh_database,
    same_scores,
    upload,
    wait_run,
)
from tests.services import stop_server

pytestmark = pytest.mark.services
S03 = SHARED / "generated" / "s03_cubic_2f_10M_rtt60_buf1bdp.pcapng"


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    exe = str(Path(sys.executable).with_name("ackreplay"))
    return subprocess.Popen([exe, "worker", "--concurrency", "1"], env=env, cwd=ROOT, start_new_session=True,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)


def wait_ready(log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and "ready." in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"worker did not start:\n{log.read_text(errors='replace')[-3000:]}")


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole process group (a crashed host: no warm shutdown, nothing acknowledged)."""
    import signal

    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop(proc: subprocess.Popen[bytes]) -> None:
    stop_server(proc)


@pytest.fixture
def deployment(postgres_server, redis_server, tmp_path) -> Iterator[dict[str, str]]:
    env = {"DATABASE_URL": fresh_database(postgres_server.url), "REDIS_URL": redis_server.url,
           "ACKREPLAY_STORAGE_URL": f"file://{tmp_path / 'store'}", "ACKREPLAY_DATA_DIR": str(tmp_path / "data")}
    with configured(env):
        yield {**os.environ, **env, "PYTHONPATH": str(ROOT)}


def test_upload_over_http_gives_exactly_the_cli_scores(deployment, tmp_path):
    api = client()  # migrates the fresh PostgreSQL database
    log = tmp_path / "worker.log"
    worker = start_worker(deployment, log)
    try:
        wait_ready(log)
        ready = api.get("/api/v1/ready").json()
        assert ready["checks"] == {"database": "ok", "broker": "ok", "storage": "ok"}
        body = upload(api, S03, truth="bottleneck=10Mbit,shared_by=all").json()
        run = wait_run(api, body["run_id"], timeout=600)
        assert run["status"] == "succeeded", run
        doc = api.get(f"/api/v1/runs/{body['run_id']}/document").json()
        same_scores(doc, cli_document(S03, "--truth", "bottleneck=10Mbit,shared_by=all"))
        assert "ackreplay.replay" in log.read_text()
    finally:
        stop(worker)
