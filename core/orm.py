"""The database (SQLAlchemy 2 ORM). PostgreSQL is the source of truth; SQLite serves the embedded mode.

Uniqueness carries idempotence: results and decisions are keyed by (run, capture, flow, estimator[,
episode]) and replaced as a whole per flow, so a task that runs twice changes nothing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def new_id() -> str:
    return uuid.uuid4().hex


def now() -> datetime:
    return datetime.now(UTC)


def epoch(stamp: datetime | None) -> float:
    """Seconds since the epoch of a stored time (SQLite hands them back without their zone: UTC); 0 for None."""
    if stamp is None:
        return 0.0
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class Owner(Base):
    __tablename__ = "owners"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    #: Storage quota (bytes of stored captures and the results derived from them); None: the service's default
    #: (``ACKREPLAY_QUOTA_BYTES``).
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 of the token
    prefix: Mapped[str] = mapped_column(String(12))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)
    #: None: never expires; past it the token is refused (401 ``invalid_token``) like a revoked one.
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Capture(Base):
    __tablename__ = "captures"
    __table_args__ = (UniqueConstraint("owner_id", "sha256", name="uq_capture_owner_sha256"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    sha256: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(500))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    format: Mapped[str] = mapped_column(String(20))
    storage_key: Mapped[str] = mapped_column(String(500))
    tags: Mapped[list[Any]] = mapped_column(default=list)
    truth: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    status: Mapped[str] = mapped_column(String(20), default="uploaded", index=True)  # uploaded|ingested|failed
    error_code: Mapped[str | None] = mapped_column(String(60), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    stats: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    batch_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Flow(Base):
    __tablename__ = "flows"
    __table_args__ = (UniqueConstraint("capture_id", "flow_id", name="uq_flow_capture_flow"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    #: (no index of its own: uq_flow_capture_flow, which starts with it, finds a capture's flows; one index less
    #: to maintain for each of a million flows written)
    capture_id: Mapped[str] = mapped_column(ForeignKey("captures.id", ondelete="CASCADE"))
    flow_id: Mapped[int] = mapped_column(Integer)
    sender: Mapped[str] = mapped_column(String(100))
    receiver: Mapped[str] = mapped_column(String(100))
    vantage: Mapped[str] = mapped_column(String(20))
    bytes: Mapped[int] = mapped_column(BigInteger)
    goodput_bps: Mapped[float] = mapped_column(Float)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON)
    tables_key: Mapped[str] = mapped_column(String(500))  # prefix of acks/segments/episodes Parquet


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)  # queued|running|succeeded|failed
    estimators: Mapped[list[Any]] = mapped_column()  # [{"name", "parameters"}]
    version: Mapped[str] = mapped_column(String(40))
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    batch_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class RunCapture(Base):
    """One capture inside a run: its ingest stage, its status and error, its aggregated scores."""

    __tablename__ = "run_captures"
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    capture_id: Mapped[str] = mapped_column(ForeignKey("captures.id", ondelete="CASCADE"), primary_key=True)
    status: Mapped[str] = mapped_column(String(20), default="queued")  # queued|replaying|succeeded|failed
    error_code: Mapped[str | None] = mapped_column(String(60), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    scores: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    #: The flows not replayed (``core.skipped_flows``): the first 100 by flow id (flow id → reason), how many in
    #: all, how many per kind of reason; a run planned before migration 0009 holds every one here (total null).
    skipped: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    skipped_total: Mapped[int | None] = mapped_column(Integer, nullable=True)
    skipped_counts: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    ingest_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Task(Base):
    """A unit of queued work (ingest, or replay of some flows), so that progress and stale work are visible
    in the database and a retried or duplicated task is recognised."""

    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("run_id", "capture_id", "kind", "chunk", name="uq_task"),
                      Index("ix_tasks_status_released", "status", "released_at"))
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    capture_id: Mapped[str] = mapped_column(ForeignKey("captures.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(10))  # ingest | replay
    chunk: Mapped[int] = mapped_column(Integer, default=0)
    flow_ids: Mapped[list[Any]] = mapped_column(default=list)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)  # queued|started|done|failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    #: Refreshed every few seconds by the worker running the task (Celery deployment); a started task whose
    #: heartbeat stops was lost with its worker and is dispatched again.
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: When the fair dispatcher sent the task to the workers (``core.fair_queue``); None: it waits in the
    #: database for its owner's turn.
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)  # host:pid of the claimer
    redispatches: Mapped[int] = mapped_column(Integer, default=0)
    #: Why the task was dispatched again (its worker stopped, its broker message was lost), for the run status.
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: What a replay task stored, charged to its run's owner's quota (``core.quotas``): the bytes of its
    #: series object, and of its result, decision and diagnostics rows. Gone with the task's run or capture.
    series_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    row_bytes: Mapped[int] = mapped_column(BigInteger, default=0)


class Result(Base):
    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("run_id", "capture_id", "flow_id", "estimator", name="uq_result"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    capture_id: Mapped[str] = mapped_column(ForeignKey("captures.id", ondelete="CASCADE"), index=True)
    flow_id: Mapped[int] = mapped_column(Integer)
    estimator: Mapped[str] = mapped_column(String(40))
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON)
    version: Mapped[str] = mapped_column(String(40))
    scores: Mapped[dict[str, Any]] = mapped_column(JSON)
    series_key: Mapped[str] = mapped_column(String(500))
    window: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)  # score window, s since first packet


class DecisionRow(Base):
    __tablename__ = "decisions"
    __table_args__ = (UniqueConstraint("run_id", "capture_id", "flow_id", "estimator", "episode", name="uq_decision"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    capture_id: Mapped[str] = mapped_column(ForeignKey("captures.id", ondelete="CASCADE"))
    flow_id: Mapped[int] = mapped_column(Integer)
    estimator: Mapped[str] = mapped_column(String(40))
    episode: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class FlowDiagnostics(Base):
    """Why one flow's estimates are what they are, for one run (``scoring.diagnostics``, §7)."""

    __tablename__ = "flow_diagnostics"
    __table_args__ = (UniqueConstraint("run_id", "capture_id", "flow_id", name="uq_flow_diagnostics"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    capture_id: Mapped[str] = mapped_column(ForeignKey("captures.id", ondelete="CASCADE"))
    flow_id: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class Batch(Base):
    """Many captures scored together (one run); its scoreboard ranks the estimators over all its traces."""

    __tablename__ = "batches"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(500))
    run_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    capture_ids: Mapped[list[Any]] = mapped_column(default=list)
    rejected: Mapped[list[Any]] = mapped_column(default=list)  # [{"name", "error", "detail"}]
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
