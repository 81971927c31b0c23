"""Liveness, readiness (database, broker, storage) and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from ackreplay.api.deps import SettingsDep, StoreDep
from ackreplay.api.schemas import HealthOut, ReadyOut
from ackreplay.core.db import get_engine, session_scope
from ackreplay.core.owners import authenticate, token_from_header
from ackreplay.core.queue import celery_client

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthOut, summary="Liveness")
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/ready", response_model=ReadyOut, responses={503: {"model": ReadyOut, "description": "not ready"}},
            summary="Readiness: database, broker and storage")
def ready(settings: SettingsDep, store: StoreDep) -> JSONResponse:
    checks: dict[str, Any] = {}
    try:
        with get_engine().connect() as conn:
            conn.execute(text("select 1"))
        checks["database"] = "ok"
    except Exception as exc:  # report, don't raise: readiness answers with what is down
        checks["database"] = f"down: {type(exc).__name__}"
    if settings.embedded_worker:
        checks["broker"] = "embedded"
    else:
        try:
            with celery_client().connection_for_write() as conn:
                conn.ensure_connection(max_retries=1)
            checks["broker"] = "ok"
        except Exception as exc:
            checks["broker"] = f"down: {type(exc).__name__}"
    try:
        store.check()
        checks["storage"] = "ok"
    except Exception as exc:
        checks["storage"] = f"down: {type(exc).__name__}"
    ok = all(v in ("ok", "embedded") for v in checks.values())
    return JSONResponse({"status": "ready" if ok else "not_ready", "checks": checks}, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", include_in_schema=False)
def metrics(request: Request, settings: SettingsDep) -> Response:
    """The process's metrics: with a valid token (any owner's; open mode: none needed), or for anyone when
    ``ACKREPLAY_PUBLIC_METRICS`` is set (e.g. a Prometheus scraper on a private network)."""
    if not settings.public_metrics:
        with session_scope() as session:
            authenticate(session, token_from_header(request.headers.get("authorization")), settings.auth)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
