"""The Celery application of the workers (``ackreplay worker``): settings for CPU-bound work."""

from __future__ import annotations

import logging
import threading
import time

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from ackreplay.core.config import get_settings

log = logging.getLogger("ackreplay.worker")


def visibility_timeout() -> float:
    """Seconds after which Redis gives an unacknowledged message to another worker: twice
    ``stale_task_seconds`` (at least 10 s; 60 s by default). It brings back what the heartbeat sweep cannot
    see: a message a killed worker had taken but not yet claimed (its task still ``queued``, its broker
    marker present). A message of a task still running elsewhere comes back too, and is skipped: the claim
    finds the task started by a worker whose heartbeat is fresh (``core.run_tasks.claim``)."""
    return max(10.0, 2 * get_settings().stale_task_seconds)


def make_app() -> Celery:
    app = Celery("ackreplay", broker=get_settings().redis_url, include=["ackreplay.workers.tasks"])
    app.conf.update(
        task_acks_late=True,  # a task is acknowledged when done: a killed worker's task is delivered again
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # CPU-bound: take one task at a time
        task_default_queue="ackreplay",
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": visibility_timeout()},
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()


def sweep_once() -> int:
    """Dispatch again the work that was lost: a started task whose worker stopped beating its heartbeat for
    ``stale_task_seconds``, a queued task whose broker message is gone (Redis restarted, or unreachable when
    the task was created)."""
    from ackreplay.core.db import session_scope
    from ackreplay.core.queue import in_broker
    from ackreplay.core.run_tasks import requeue_unfinished

    with session_scope() as session:
        return requeue_unfinished(session, older_than_s=get_settings().stale_task_seconds, in_broker=in_broker)


def sweep_period() -> float:
    """Three sweeps per ``stale_task_seconds`` (at most 10 s apart): lost work is dispatched again within
    ``stale_task_seconds`` + 10 s (40 s by default)."""
    return min(10.0, max(0.5, get_settings().stale_task_seconds / 3))


def _sweeper() -> None:
    from ackreplay.core.janitor import maybe_sweep_orphans

    while True:
        time.sleep(sweep_period())
        try:
            n = sweep_once()
            if n:
                log.warning("dispatched %d lost tasks again", n)
            maybe_sweep_orphans()
        except Exception:  # the database or broker is down: try again next period
            log.exception("lost-work sweep failed")


@worker_ready.connect
def _requeue_stale(**_: object) -> None:
    """PostgreSQL is the source of truth: at start, and then periodically, each worker re-dispatches
    work that was lost. Duplicates are harmless: a task already done, or running in a live worker, is
    skipped."""
    sweep_once()
    threading.Thread(target=_sweeper, name="ackreplay-sweeper", daemon=True).start()


@worker_process_init.connect
def _preload_kernels(**_: object) -> None:
    """Each pool process loads the compiled kernels as it starts (``core.kernel_preload``), in a thread: the
    process answers the pool at once (Celery gives it a few seconds), and a task that arrives meanwhile waits
    only for what is still loading."""
    from ackreplay.core.kernel_preload import preload_kernels

    threading.Thread(target=preload_kernels, name="ackreplay-preload", daemon=True).start()
