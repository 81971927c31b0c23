"""Celery tasks: explicit names, ids in, one core call each. ``core.run_tasks.run_task`` fails a task on
bad data at once (recorded on its run) and raises only infrastructure faults (database, broker or store
unreachable, transactions colliding), which are retried with backoff until the infrastructure is back."""

from __future__ import annotations

from ackreplay.core.run_tasks import run_task
from ackreplay.workers.celery_app import app

RETRY = {"autoretry_for": (Exception,), "retry_backoff": True, "retry_backoff_max": 60, "max_retries": None}


@app.task(name="ackreplay.ingest", **RETRY)
def ingest(task_id: str) -> None:
    run_task("ingest", task_id)


@app.task(name="ackreplay.replay", **RETRY)
def replay(task_id: str) -> None:
    run_task("replay", task_id)
