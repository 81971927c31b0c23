"""Start the service against a given configuration: settings caches reset, migrations applied."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from ackreplay.core import config, db, queue, storage

ROOT = Path(__file__).resolve().parents[2]
ENV_KEYS = ("ACKREPLAY_DATA_DIR", "DATABASE_URL", "REDIS_URL", "ACKREPLAY_STORAGE_URL", "ACKREPLAY_AUTH",
            "ACKREPLAY_MAX_UPLOAD_BYTES", "ACKREPLAY_DATABASE_URL", "ACKREPLAY_REDIS_URL",
            "ACKREPLAY_MAX_DECOMPRESSED_BYTES", "ACKREPLAY_STALE_TASK_SECONDS", "ACKREPLAY_REPLAY_BATCH_FLOWS",
            "ACKREPLAY_REPLAY_TASK_ACKS",
            "ACKREPLAY_INGEST_MEMORY_BUDGET_MB", "ACKREPLAY_QUOTA_BYTES", "ACKREPLAY_MAX_ARCHIVE_BYTES",
            "ACKREPLAY_STORAGE_OPTIONS", "ACKREPLAY_MAX_BATCH_BYTES", "ACKREPLAY_ALLOWED_HOSTS", "ACKREPLAY_BIND_HOST",
            "ACKREPLAY_PUBLIC_METRICS", "ACKREPLAY_ORPHAN_SECONDS", "ACKREPLAY_HEADER_TIMEOUT_SECONDS",
            "ACKREPLAY_BODY_TIMEOUT_SECONDS", "ACKREPLAY_KEEP_ALIVE_SECONDS", "ACKREPLAY_DISPATCH_WINDOW",
            "ACKREPLAY_OWNER_DISPATCH_CAP", "ACKREPLAY_MAX_QUEUED_TASKS", "ACKREPLAY_MAX_ACTIVE_RUNS",
            "ACKREPLAY_RUN_RATE_PER_MINUTE", "ACKREPLAY_RUN_BURST",
            "ACKREPLAY_STEP_PAUSE_SECONDS")


def reset_caches() -> None:
    config.get_settings.cache_clear()
    db.get_engine.cache_clear()
    db._factory.cache_clear()
    storage.get_store.cache_clear()
    queue.celery_client.cache_clear()
    queue.redis_client.cache_clear()


@contextmanager
def configured(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    for k in ENV_KEYS:
        os.environ.pop(k, None)
    os.environ.update(env)
    reset_caches()
    try:
        yield
    finally:
        queue.InProcessWorker.get().idle.wait(120)  # (the queue drained)
        db.get_engine().dispose()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        reset_caches()


def client() -> TestClient:
    from ackreplay.api.app import create_app
    from ackreplay.core.migrate import upgrade

    upgrade()
    return TestClient(create_app())


def upload(c: TestClient, path: Path, headers: dict[str, str] | None = None, **form: str) -> Any:
    with open(path, "rb") as fh:
        return c.post("/api/v1/captures", files={"file": (path.name, fh, "application/octet-stream")}, data=form,
                      headers=headers or {})


def wait_run(c: TestClient, run_id: str, headers: dict[str, str] | None = None, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    body: dict = {}
    while time.monotonic() < deadline:
        r = c.get(f"/api/v1/runs/{run_id}", headers=headers or {})
        if r.status_code == 503:  # the database is starting again (a fault test restarted it): not ready yet
            time.sleep(0.2)
            continue
        assert r.status_code == 200, r.text
        body = r.json()
        if body["status"] in ("succeeded", "failed"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish: {json.dumps(body)[:2000]}")


def cli_document(path: Path, *extra: str) -> dict:
    """What `ackreplay score --format json` prints for the same file."""
    from typer.testing import CliRunner

    from ackreplay.cli.main import app

    res = CliRunner().invoke(app, ["score", str(path), "--format", "json", "--no-sidecar", *extra])
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def same_scores(service_doc: dict, cli_doc: dict) -> None:
    """Per flow and per capture, the service's document equals the CLI's exactly."""
    (a,) = service_doc["captures"]
    (b,) = cli_doc["captures"]
    assert {f["flow_id"]: f["scores"] for f in a["flows"]} == {f["flow_id"]: f["scores"] for f in b["flows"]}
    assert a["scores"] == b["scores"]
    assert [f["replayed"] for f in a["flows"]] == [f["replayed"] for f in b["flows"]]
    # the rest of each flow's document too: summary, skip reason, score window
    assert [{k: f[k] for k in g} for f, g in zip(a["flows"], b["flows"], strict=True)] == b["flows"]


def fresh_database(server_url: str) -> str:
    """A new, empty database on the test PostgreSQL server; its URL."""
    name = f"ackreplay_{uuid.uuid4().hex[:10]}"
    deadline = time.monotonic() + 30
    while True:  # the port opens before the server accepts connections ("the database system is starting up")
        try:
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f"create database {name}")
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return server_url.rsplit("/", 1)[0] + f"/{name}"
