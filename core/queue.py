"""Dispatching tasks: to Celery workers through Redis, or — embedded, with no REDIS_URL — to one
in-process worker thread running the same task code.

Only task ids travel; the database holds the work. ``core`` never imports ``workers``: Celery tasks are
sent by name (``ackreplay.ingest``, ``ackreplay.replay``).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from functools import lru_cache
from typing import Any

from ackreplay.core.config import get_settings

log = logging.getLogger("ackreplay.queue")
TASK_NAMES = {"ingest": "ackreplay.ingest", "replay": "ackreplay.replay"}
RETRY_MAX_S = 60.0


@lru_cache
def celery_client() -> Any:
    from celery import Celery

    app = Celery("ackreplay", broker=get_settings().redis_url)
    app.conf.broker_connection_retry_on_startup = True
    app.conf.broker_transport_options = {"visibility_timeout": 3600}
    return app


#: Beside each message sent, a key in the broker's Redis names its task: it lives and dies with the
#: message (a Redis restarted without persistence loses both; a worker taking the message removes it,
#: :func:`consumed`), so the workers' sweep can tell a queued task whose message is gone from one still
#: waiting in line.
MARKER = "ackreplay:queued:"
MARKER_TTL_S = 7 * 86400
#: The value of a retry's marker starts with this: its message is Celery's to send, in up to :data:`RETRY_MAX_S`.
RETRY_MARK = "retry:"
#: Where a sent message can be, in the broker's Redis (kombu's Redis transport): the queue's list and its priority
#: lists (``priority_steps`` 0, 3, 6, 9; kombu's separator ``\x06\x16``), and the hash of messages delivered to a
#: worker and not yet acknowledged.
QUEUE_LISTS = ("ackreplay", *(f"ackreplay\x06\x16{step}" for step in (3, 6, 9)))
UNACKED = "unacked"


@lru_cache
def redis_client() -> Any:
    import redis

    return redis.Redis.from_url(get_settings().redis_url or "", socket_timeout=5, socket_connect_timeout=5)


def dispatch(kind: str, task_id: str) -> None:
    """Queue a task. The task row is already committed, so a broker that cannot be reached loses
    nothing: the workers' sweep dispatches a queued task without a broker message within
    ``stale_task_seconds``."""
    if get_settings().embedded_worker:
        InProcessWorker.get().submit(kind, task_id)
        return
    try:
        redis_client().set(MARKER + task_id, kind, ex=MARKER_TTL_S)
        celery_client().send_task(TASK_NAMES[kind], args=[task_id], queue="ackreplay")
    except Exception:
        log.warning("broker unreachable: task %s %s left for the lost-work sweep", kind, task_id, exc_info=True)
        with contextlib.suppress(Exception):
            redis_client().delete(MARKER + task_id)


def consumed(task_id: str) -> None:
    """A worker took the task's message: its marker goes with it. A marker left behind would hide the task from
    the sweep (its message seemingly still in line) for :data:`MARKER_TTL_S` once it is queued again without a
    message, holding its slot of the dispatch window. Redis unreachable: the marker expires in time."""
    if get_settings().embedded_worker:
        return
    try:
        redis_client().delete(MARKER + task_id)
    except Exception:
        log.warning("broker unreachable: marker of task %s left to expire", task_id, exc_info=True)


def retrying(kind: str, task_id: str) -> None:
    """The queue sends the task again itself (Celery's retry, at most :data:`RETRY_MAX_S` later): marked for that
    long and a sweep period more, after which a message that did not come is the sweep's to send again."""
    if get_settings().embedded_worker:
        return
    ttl = int(RETRY_MAX_S + get_settings().stale_task_seconds) + 1
    try:
        redis_client().set(MARKER + task_id, RETRY_MARK + kind, ex=ttl)
    except Exception:
        log.warning("broker unreachable: task %s %s left for the lost-work sweep", kind, task_id, exc_info=True)


def in_broker(task_ids: list[str]) -> set[str]:
    """Which of these tasks have a message in the broker (sent, not lost): a marked task whose message is in the
    queue's lists or delivered to a worker and not acknowledged (kombu's ``unacked``), or whose retry is on its
    way (:func:`retrying`). The marker alone does not say so: a worker stopped or killed while Redis handed it a
    message (its ``BRPOP`` answered, the message not yet stored as unacknowledged) took the message out of the list
    and lost it, leaving the marker for its seven days — measured: a worker frozen while it waited, then killed,
    left its run a task short for as long as the test waited. The task id is in every message's headers
    (``argsrepr``), so the messages' raw text is searched for it."""
    client = redis_client()
    marks = dict(zip(task_ids, client.mget([MARKER + tid for tid in task_ids]), strict=True)) if task_ids else {}
    retries = {tid for tid, mark in marks.items() if mark is not None and mark.startswith(RETRY_MARK.encode())}
    sent = [tid for tid, mark in marks.items() if mark is not None and tid not in retries]
    if not sent:
        return retries
    pipe = client.pipeline()
    for name in QUEUE_LISTS:
        pipe.lrange(name, 0, -1)
    pipe.hvals(UNACKED)
    messages = [m for found in pipe.execute() for m in found]
    return retries | {tid for tid in sent if any(tid.encode() in m for m in messages)}


class InProcessWorker:
    """A daemon thread draining a queue of (kind, task id); one at a time (the work is CPU-bound)."""

    _instance: InProcessWorker | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self.idle = threading.Event()
        self.idle.set()
        self.retries: dict[str, int] = {}
        self.pending = 0  # retries waiting on their timer
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

    def _loop(self) -> None:
        from ackreplay.core.run_tasks import run_task

        while True:
            kind, task_id = self.queue.get()
            try:
                run_task(kind, task_id)
                self.retries.pop(task_id, None)
            except Exception:  # an infrastructure fault (data faults fail their task): try again later
                n = self.retries[task_id] = self.retries.get(task_id, 0) + 1
                delay = min(RETRY_MAX_S, 2.0 ** n)
                log.exception("task %s %s: infrastructure fault, retry %d in %.0f s", kind, task_id, n, delay)
                self.idle.clear()
                self.pending += 1
                timer = threading.Timer(delay, self._retry, (kind, task_id))
                timer.daemon = True
                timer.start()
            finally:
                self.queue.task_done()
                if self.queue.unfinished_tasks == 0 and self.pending == 0:
                    self.idle.set()

    def _retry(self, kind: str, task_id: str) -> None:
        self.pending -= 1
        self.submit(kind, task_id)
