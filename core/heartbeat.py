"""A running task's heartbeat: its ``heartbeat_at`` refreshed every few seconds while a Celery worker runs it,
so that a task whose worker died is recognised within ``stale_task_seconds`` and dispatched again — and a
task whose worker is alive never is, however long one of its steps takes.

Two sources of beats: a thread (:class:`Heartbeat`), and the task's own chunk loops calling :func:`beat`
between chunks (ingest's storage of a million flows, the rows it writes): a loop of the task itself cannot be
starved by what holds the interpreter or the database, where a thread could. Embedded mode needs none: the
in-process worker dies with the server, which re-queues at start.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from sqlalchemy import update

from ackreplay.core.config import get_settings
from ackreplay.core.db import get_engine
from ackreplay.core.orm import Task, now

log = logging.getLogger("ackreplay.pipeline")

#: The heartbeat of the task this thread runs, for :func:`beat` (none outside a task, or embedded).
_current = threading.local()


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def heartbeat_seconds() -> float:
    """How often a running task's heartbeat is refreshed: five beats fit in ``stale_task_seconds``."""
    return min(10.0, max(0.2, get_settings().stale_task_seconds / 5))


class Heartbeat:
    """While a task runs in a Celery worker, refresh its ``heartbeat_at`` every few seconds (own connection,
    own transaction: the task's transactions never hold its row across a long step)."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def __enter__(self) -> Heartbeat:
        if not get_settings().embedded_worker:
            self.thread = threading.Thread(target=self._beat, name=f"heartbeat-{self.task_id}", daemon=True)
            self.thread.start()
            _current.heartbeat = self
        return self

    def __exit__(self, *_: object) -> None:
        _current.heartbeat = None
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def _beat(self) -> None:
        while not self.stop.wait(heartbeat_seconds()):
            self.record()

    def due(self) -> bool:
        return time.monotonic() - self.last >= heartbeat_seconds()

    def record(self) -> None:
        """Refresh the heartbeat now (if the task is still this worker's and started)."""
        with self.lock:
            self.last = time.monotonic()
            try:
                with get_engine().begin() as conn:
                    conn.execute(update(Task).where(Task.id == self.task_id, Task.worker == worker_id(),
                                                    Task.status == "started").values(heartbeat_at=now()))
            except Exception:  # the database is down: the task itself will notice
                log.debug("heartbeat of task %s not recorded", self.task_id, exc_info=True)


def beat() -> None:
    """Between two chunks of a long step: the running task's heartbeat, when one is due (a no-op outside a task,
    and embedded); then the test knob ``step_pause_seconds``, which makes every such step long."""
    heartbeat: Heartbeat | None = getattr(_current, "heartbeat", None)
    if heartbeat is not None and heartbeat.due():
        heartbeat.record()
    pause = get_settings().step_pause_seconds
    if pause > 0:
        time.sleep(pause)
