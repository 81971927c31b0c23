"""Celery tasks: explicit names, ids in, one core call each. Retries only for infrastructure errors
(database or storage unreachable); domain failures are recorded on the run by ``core.pipeline``."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, OperationalError

from ackreplay.core.pipeline import run_task
from ackreplay.workers.celery_app import app

INFRA = (OperationalError, DBAPIError, ConnectionError, TimeoutError)


@app.task(name="ackreplay.ingest", autoretry_for=INFRA, retry_backoff=True, retry_backoff_max=60, max_retries=20)
def ingest(task_id: str) -> None:
    run_task("ingest", task_id)


@app.task(name="ackreplay.replay", autoretry_for=INFRA, retry_backoff=True, retry_backoff_max=60, max_retries=20)
def replay(task_id: str) -> None:
    run_task("replay", task_id)
