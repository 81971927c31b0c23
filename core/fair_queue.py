"""Fair sharing of the workers between owners: tasks wait in the database and are released to the queue a
few at a time, the owner with the fewest tasks in flight first.

A task is made *waiting* (``queued``, ``released_at`` None). :func:`release` sends waiting tasks to the
workers (Celery, or the in-process worker) while fewer than ``dispatch_window`` tasks are *released* and
unfinished (in the broker or running), each slot going to the owner with the fewest released tasks, at most
``owner_dispatch_cap`` each. So the broker's queue stays short, and an owner's 10 000-task backlog queued
first holds at most the window: another owner's task is released as soon as one of those finishes and runs
after at most the window's tasks already in the broker, a few task lengths, never after the backlog.

Within an owner, replay tasks go before ingest tasks (captures started are finished first), then the oldest
run's first. :func:`release` runs after a run is started, after an ingest made replay tasks, after every
task, and in the workers' periodic sweep; any process may run it at any time, concurrently: on PostgreSQL
a transaction-scoped advisory lock serialises the releases, and a task released twice (SQLite's embedded
mode) only runs once (``core.run_tasks.claim``). A released task whose broker message was lost, or whose
worker died, is dispatched again by the sweep (``core.run_tasks.requeue_unfinished``) and keeps its slot.
"""

from __future__ import annotations

import logging
from functools import partial

from sqlalchemy import ColumnElement, func, select, text, update
from sqlalchemy.orm import Session

from ackreplay.core.config import get_settings
from ackreplay.core.db import after_commit, session_scope
from ackreplay.core.orm import Run, Task, now
from ackreplay.core.queue import dispatch

log = logging.getLogger("ackreplay.fair_queue")

#: The advisory lock (PostgreSQL) that serialises releases across processes and hosts.
RELEASE_LOCK = 0x61636B72  # "ackr"
UNFINISHED = ("queued", "started")


def released_filter() -> tuple[ColumnElement[bool], ...]:
    return (Task.status.in_(UNFINISHED), Task.released_at.is_not(None))


def waiting_filter() -> tuple[ColumnElement[bool], ...]:
    return (Task.status == "queued", Task.released_at.is_(None))


def per_owner(session: Session, *where: ColumnElement[bool]) -> dict[str, int]:
    """How many tasks matching ``where`` each owner has."""
    q = (select(Run.owner_id, func.count()).select_from(Task).join(Run, Run.id == Task.run_id).where(*where)
         .group_by(Run.owner_id))
    return {owner: int(n) for owner, n in session.execute(q).all()}


def shares(released: dict[str, int], waiting: dict[str, int], window: int, cap: int) -> dict[str, int]:
    """How many waiting tasks to release per owner: the free slots of the window one at a time, each to the
    owner with the fewest released tasks (ties by owner id) that has tasks waiting and is below ``cap``."""
    held = {o: released.get(o, 0) for o in waiting}
    grants: dict[str, int] = {}
    free = window - sum(released.values())
    while free > 0:
        open_ = [o for o in waiting if held[o] < cap and grants.get(o, 0) < waiting[o]]
        if not open_:
            break
        chosen = min(open_, key=lambda o: (held[o], o))
        held[chosen] += 1
        grants[chosen] = grants.get(chosen, 0) + 1
        free -= 1
    return grants


def release_in(session: Session) -> list[tuple[str, str]]:
    """Mark the tasks to release now released, in the session's transaction; their (kind, id)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("select pg_advisory_xact_lock(:key)"), {"key": RELEASE_LOCK})
    waiting = per_owner(session, *waiting_filter())
    if not waiting:
        return []
    settings = get_settings()
    window = settings.dispatch_window
    grants = shares(per_owner(session, *released_filter()), waiting, window, settings.owner_dispatch_cap or window)
    chosen: list[tuple[str, str]] = []
    for owner, n in grants.items():
        q = (select(Task.kind, Task.id).join(Run, Run.id == Task.run_id)
             .where(Run.owner_id == owner, *waiting_filter())
             .order_by(Task.kind == "ingest", Run.created_at, Task.chunk, Task.id).limit(n)
             .with_for_update(of=Task, skip_locked=True))
        chosen += [(kind, tid) for kind, tid in session.execute(q).all()]
    if chosen:
        session.execute(update(Task).where(Task.id.in_([tid for _, tid in chosen]), Task.released_at.is_(None))
                        .values(released_at=now(), updated_at=now()))  # (the sweep's age of its message)
    return chosen


def release() -> int:
    """Release what the window has room for (:func:`release_in`) and send it once committed; how many."""
    with session_scope() as session:
        chosen = release_in(session)
        for kind, tid in chosen:
            after_commit(session, partial(dispatch, kind, tid))
    return len(chosen)


def release_soon() -> None:
    """:func:`release`, never raising: with the database unreachable, the workers' sweep releases later."""
    try:
        release()
    except Exception:
        log.warning("waiting tasks not released now (the sweep will)", exc_info=True)
