"""Database engine and sessions (SQLAlchemy 2). Services flush; the caller's ``session_scope`` commits."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from ackreplay.core.config import get_settings

#: Connections in one process's pool (either database). The API admits at most ``API_SESSIONS`` request
#: sessions at a time (``api.deps``) so that a request never waits for a connection while it holds a
#: worker thread; the rest serve the embedded worker and background sweeps.
POOL_SIZE, POOL_OVERFLOW = 10, 20
API_SESSIONS = POOL_SIZE + POOL_OVERFLOW - 4


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)

        @event.listens_for(engine, "connect")
        def _pragmas(conn: Any, _record: Any) -> None:
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)


@lru_cache
def get_engine() -> Engine:
    return make_engine(get_settings().sqlalchemy_url)


@lru_cache
def _factory() -> sessionmaker[Session]:
    return sessionmaker(get_engine(), expire_on_commit=False)


def new_session() -> Session:
    return _factory()()


@contextmanager
def session_scope() -> Iterator[Session]:
    """A session that commits at the end (or rolls back), then runs the jobs queued during it."""
    session = new_session()
    try:
        yield session
        session.commit()
    except BaseException:
        try:
            session.rollback()
        finally:
            _run_rollback_jobs(session)
        raise
    finally:
        session.close()


def after_commit(session: Session, job: Callable[[], None]) -> None:
    """Run ``job`` once the session's transaction has committed (never for a rolled-back one)."""
    jobs: list[Callable[[], None]] = session.info.setdefault("after_commit", [])
    jobs.append(job)


def on_rollback(session: Session, job: Callable[[], None]) -> None:
    """Run ``job`` if the session's transaction rolls back (undo what it did outside the database, e.g.
    remove an object stored for a row that will not exist); dropped once the transaction commits."""
    jobs: list[Callable[[], None]] = session.info.setdefault("on_rollback", [])
    jobs.append(job)


@event.listens_for(Session, "after_commit")
def _run_jobs(session: Session) -> None:
    session.info.pop("on_rollback", None)
    jobs = session.info.pop("after_commit", [])
    for job in jobs:
        job()


@event.listens_for(Session, "after_rollback")
def _drop_jobs(session: Session) -> None:
    session.info.pop("after_commit", None)
    _run_rollback_jobs(session)


def _run_rollback_jobs(session: Session) -> None:
    for job in session.info.pop("on_rollback", []):
        try:
            job()
        except Exception:  # the janitor removes what could not be removed now
            logging.getLogger("ackreplay.db").warning("rollback clean-up failed", exc_info=True)
