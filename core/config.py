"""Settings, from the environment (prefix ``ACKREPLAY_``; ``DATABASE_URL`` and ``REDIS_URL`` also accepted).

With nothing set, the service runs embedded: SQLite and a storage directory under ``data_dir`` and an
in-process worker. ``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL`` switch to the shared deployment with
Celery workers; ``ACKREPLAY_STORAGE_URL`` may point the object store at any fsspec URL (``s3://…``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ACKREPLAY_", extra="ignore")

    data_dir: Path = Field(Path("ackreplay-data"), description="where the embedded database and store live")
    database_url: str | None = Field(None, validation_alias=AliasChoices("ACKREPLAY_DATABASE_URL", "DATABASE_URL"))
    redis_url: str | None = Field(None, validation_alias=AliasChoices("ACKREPLAY_REDIS_URL", "REDIS_URL"))
    storage_url: str | None = Field(None, description="fsspec URL of the object store (default: data_dir/store)")
    storage_options: dict[str, Any] = Field(
        default_factory=dict, description="fsspec options (JSON), e.g. {\"endpoint_url\": \"http://minio:9000\"} "
                                          "for an S3-compatible server")
    max_upload_bytes: int = Field(2 << 30, description="largest capture accepted (413 beyond)")
    max_decompressed_bytes: int | None = Field(
        None, description="gzip captures: stop decompressing past this (default: ingest's, ≥ 1 GiB)")
    ingest_memory_budget_mb: int = Field(
        1024, ge=1, description="working-set budget of one capture's ingest and replay; larger captures spill to "
                                "temporary files and are analysed in connection groups, and replay runs no more "
                                "estimators side by side than fit")
    quota_bytes: int | None = Field(
        None, ge=0, description="default storage quota of an owner: total bytes of its stored captures and of the "
                                "results its runs derived from them (413 quota_exceeded beyond; none: unlimited); "
                                "`ackreplay quota set` overrides it per owner")
    max_archive_bytes: int = Field(
        8 << 30, ge=1, description="total decompressed bytes of the members of one uploaded archive (checked while "
                                   "streaming; 413 archive_too_large beyond)")
    auth: Literal["auto", "required", "open"] = Field(
        "auto", description="auto: open until the first API token exists; required; open (single user)")
    replay_batch_flows: int = Field(1024, ge=1, description="most flows replayed per task")
    replay_task_acks: int = Field(
        65_536, ge=1, description="ACKs replayed per task: a task takes consecutive flows until their ACKs reach "
                                  "this (a longer flow alone), at most replay_batch_flows of them")
    stale_task_seconds: float = Field(
        30.0, gt=0, description="lost work is dispatched again: a started task whose worker has not beaten its "
                                "heartbeat for this long, a queued task older than this whose broker message is "
                                "gone (workers sweep three times per period, at most every 10 s)")
    dispatch_window: int = Field(
        16, ge=1, description="tasks released to the workers at once, over all owners (queued in the broker or "
                              "running); the rest wait in the database and are released as these finish, the "
                              "owner with the fewest in flight first (fair sharing, `core.fair_queue`). Keep it "
                              "at one to two times the workers' total concurrency")
    owner_dispatch_cap: int | None = Field(
        None, ge=1, description="tasks one owner may have released at once (none: the whole dispatch_window); "
                                "below the window, part of it is always free for other owners' work")
    max_queued_tasks: int | None = Field(
        50_000, ge=1, description="unfinished tasks an owner may have (one per capture of each run it starts, "
                                  "and the replay tasks they make); a run that would pass it is refused with "
                                  "429 too_many_tasks (none: unlimited)")
    max_active_runs: int | None = Field(
        100, ge=1, description="unfinished (queued or running) runs an owner may have; another is refused with "
                               "429 too_many_runs (none: unlimited)")
    run_rate_per_minute: float | None = Field(
        60.0, gt=0, description="runs an owner may start per minute, sustained (a token bucket per owner, in "
                                "Redis when REDIS_URL is set); past it 429 rate_limited with Retry-After "
                                "(none: unlimited). Uploads start a run each, batches one")
    run_burst: int = Field(
        20, ge=1, description="runs an owner may start at once before run_rate_per_minute applies (the "
                              "bucket's size; many captures at once go in one batch, which starts one run)")
    step_pause_seconds: float = Field(
        0.0, ge=0, description="for tests only: pause this long between two chunks of a task's long steps (ingest's "
                               "flow storage), to make a step outlast several heartbeats")
    orphan_seconds: float = Field(
        3600.0, gt=0, description="objects in the store that no capture or run owns (an upload cut off, a "
                                  "crash between store and database) are removed once this old")
    max_batch_bytes: int = Field(8 << 30, ge=1, description="largest POST /batches request body (413 beyond)")
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Host names a tokenless (open-mode) request may carry besides the "
                                          "loopback names (JSON list); checked when the server is bound to loopback")
    header_timeout_seconds: float = Field(
        20.0, gt=0, description="a connection must send a request's headers within this long of its first byte "
                                "(or of connecting): else it is closed (`serve`)")
    body_timeout_seconds: float = Field(
        60.0, gt=0, description="an upload that sends no byte for this long, or any other request body (a JSON "
                                "document) not all there within it, is answered 408 request_timeout and its "
                                "connection closed")
    keep_alive_seconds: int = Field(
        75, ge=1, description="an idle keep-alive connection is closed after this long (`serve`)")
    bind_host: str | None = Field(None, description="the address `serve` listens on (set by `serve`)")
    public_metrics: bool = Field(False, description="serve /api/v1/metrics without a token")

    @field_validator("owner_dispatch_cap", "max_queued_tasks", "max_active_runs", "run_rate_per_minute",
                     mode="before")
    @classmethod
    def _unlimited(cls, value: Any) -> Any:
        """``none`` (or ``unlimited``, or empty) lifts a limit that has a default."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "none", "null", "unlimited") else value

    @property
    def sqlalchemy_url(self) -> str:
        if self.database_url:
            url = self.database_url
            if url.startswith("postgresql://"):
                url = "postgresql+psycopg://" + url[len("postgresql://"):]
            return url
        return f"sqlite:///{(self.data_dir / 'ackreplay.db').resolve()}"

    @property
    def store_url(self) -> str:
        return self.storage_url or str((self.data_dir / "store").resolve())

    @property
    def embedded_worker(self) -> bool:
        return not self.redis_url


@lru_cache
def get_settings() -> Settings:
    return Settings()
