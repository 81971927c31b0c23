"""The FastAPI application: ``create_app()``; every route under ``/api/v1``."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

from ackreplay.api import errors
from ackreplay.api.metrics import REQUESTS
from ackreplay.api.routes import apidocs, batches, captures, dashboard, estimators, health, quota, runs
from ackreplay.api.security import HEADERS
from ackreplay.estimators import __version__

DESCRIPTION = """Replay the ACK streams of real TCP captures through Westwood-family bandwidth estimators
(BE, RE, CRB, ABSE, TIBET, NewBR, NewReno, Linux Westwood+) and compare them.

Upload a capture → a default run ingests it and replays every sender-side flow through every estimator →
read scores, series, decisions and leaderboards.

**Authentication:** `Authorization: Bearer <token>` (tokens: `ackreplay token create NAME`). A service bound to
loopback with no token yet runs open (single user); see docs/deployment.md.

**Errors** are `{"error": code, "detail": …}` with a stable `code`; each operation lists the codes it may
answer with under its error responses."""


def create_app() -> FastAPI:
    app = FastAPI(title="ackreplay", version=__version__, description=DESCRIPTION,
                  openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None)
    errors.install(app)
    for router in (captures.router, runs.router, batches.router, quota.router, estimators.router, health.router):
        app.include_router(router, prefix="/api/v1")
    app.include_router(apidocs.router)
    app.include_router(dashboard.router)

    @app.middleware("http")
    async def _timing(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        t0 = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        REQUESTS.labels(getattr(route, "path", "other"), request.method, response.status_code).observe(
            time.perf_counter() - t0)
        response.headers.update(HEADERS)
        return response

    return app
