"""Dispatching tasks: to Celery workers through Redis, or — embedded, with no REDIS_URL — to one
in-process worker thread running the same task code.

Only task ids travel; the database holds the work. ``core`` never imports ``workers``: Celery tasks are
sent by name (``ackreplay.ingest``, ``ackreplay.replay``).
"""

from __future__ import annotations

import logging
import queue
import threading
from functools import lru_cache
from typing import Any

from ackreplay.core.config import get_settings

log = logging.getLogger("ackreplay.queue")
TASK_NAMES = {"ingest": "ackreplay.ingest", "replay": "ackreplay.replay"}


@lru_cache
def celery_client() -> Any:
    from celery import Celery

    app = Celery("ackreplay", broker=get_settings().redis_url)
    app.conf.broker_connection_retry_on_startup = True
    app.conf.broker_transport_options = {"visibility_timeout": 3600}
    return app


def dispatch(kind: str, task_id: str) -> None:
    """Queue a task. The task row is already committed, so a broker that cannot be reached loses
    nothing: the workers' sweep dispatches work that stays idle."""
    if get_settings().embedded_worker:
        InProcessWorker.get().submit(kind, task_id)
        return
    try:
        celery_client().send_task(TASK_NAMES[kind], args=[task_id], queue="ackreplay")
    except Exception:
        log.warning("broker unreachable: task %s %s left for the stale-work sweep", kind, task_id, exc_info=True)


class InProcessWorker:
    """A daemon thread draining a queue of (kind, task id); one at a time (the work is CPU-bound)."""

    _instance: InProcessWorker | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self.idle = threading.Event()
        self.idle.set()
        self.thread = threading.Thread(target=self._loop, name="ackreplay-worker", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> InProcessWorker:
        with cls._lock:
            if cls._instance is None:
                cls._instance = InProcessWorker()
            return cls._instance

    def submit(self, kind: str, task_id: str) -> None:
        self.idle.clear()
        self.queue.put((kind, task_id))

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the queue is drained (tests, CLI)."""
        return self.idle.wait(timeout)

    def _loop(self) -> None:
        from ackreplay.core.pipeline import run_task

        while True:
            kind, task_id = self.queue.get()
            try:
                run_task(kind, task_id)
            except Exception:  # an infrastructure error: the task stays unfinished and is re-queued later
                log.exception("task %s %s failed", kind, task_id)
            finally:
                self.queue.task_done()
                if self.queue.unfinished_tasks == 0:
                    self.idle.set()
