"""The Celery application of the workers (``ackreplay worker``): settings for CPU-bound work."""

from __future__ import annotations

from celery import Celery
from celery.signals import worker_ready

from core.config import get_settings


def make_app() -> Celery:
    app = Celery("ackreplay", broker=get_settings().redis_url, include=["workers.tasks"])
    app.conf.update(
        task_acks_late=True,  # a task is acknowledged when done: a killed worker's task is delivered again
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # CPU-bound: take one task at a time
        task_default_queue="ackreplay",
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": 3600},
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()


@worker_ready.connect
def _requeue_stale(**_: object) -> None:
    """PostgreSQL is the source of truth: work left unfinished (a lost broker message, a killed worker)
    is dispatched again when a worker starts."""
    from core.db import session_scope
    from core.pipeline import requeue_unfinished

    with session_scope() as session:
        requeue_unfinished(session, older_than_s=get_settings().stale_task_seconds)
