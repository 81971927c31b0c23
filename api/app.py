"""The FastAPI application: ``create_app()``; every route under ``/api/v1``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response

from ackreplay.api import errors
from ackreplay.api.guard import Guard
from ackreplay.api.metrics import observe
from ackreplay.api.routes import apidocs, batches, captures, dashboard, estimators, health, quota, runs
from ackreplay.core.config import get_settings
from ackreplay.core.fair_queue import release_soon
from ackreplay.core.janitor import maybe_sweep_orphans
from ackreplay.estimators import __version__

DESCRIPTION = """Replay the ACK streams of real TCP captures through Westwood-family bandwidth estimators
(BE, RE, CRB, ABSE, TIBET, NewBR, NewReno, Linux Westwood+) and compare them.

Upload a capture → a default run ingests it and replays every sender-side flow through every estimator →
read scores, series, decisions and leaderboards.

**Authentication:** `Authorization: Bearer <token>` (tokens: `ackreplay token create NAME [--expires 90d]`,
`token list`, `token revoke`). A service bound to loopback on which no token was ever created runs open (single
user): there, writes from another site (`Origin`, `Sec-Fetch-Site`) get 403 `cross_origin` and unknown `Host`
names 400 `invalid_host`; see docs/deployment.md. Uploads are checked (token, `Content-Length`, quota) before
their body is read.

**Errors** are `{"error": code, "detail": …}` with a stable `code`, always JSON with the security headers; each
operation lists the codes it may answer with under its error responses. Inputs are validated against what the
database stores (ids, ranges, lengths, NUL, finite numbers, duplicates): `422 invalid_request`. `503
database_unavailable` means the database is unreachable (retry after `Retry-After`); `409 conflict` that the
request collided with a concurrent one.

**Runs always end**: `succeeded`, or `failed` with the reason per capture; a capture without TCP is a run of 0
flows; `waiting` says when lost work is being dispatched again.

**Answers stay bounded however large a run**: `GET /runs/{id}` and `GET /batches/{id}` list a page of captures
(`offset`, `limit`, `next`), skipped flows are summarised with counts (all of them: `…/captures/{c}/skipped`), and
`GET /runs/{id}/document` is streamed. **Quotas** count an owner's captures and the results its runs derive from
them (`GET /quota`). Headers or a body that arrive too slowly get `408 request_timeout` and lose their
connection."""


def create_app() -> FastAPI:
    app = FastAPI(title="ackreplay", version=__version__, description=DESCRIPTION,
                  openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None, lifespan=lifespan)
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
        observe(getattr(route, "path", "other"), request.method, response.status_code, time.perf_counter() - t0)
        return response

    app.add_middleware(Guard)  # outermost: security headers, last-resort errors, checks before the body
    return app


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    stop = start_janitor() if get_settings().embedded_worker else None
    try:
        yield
    finally:
        if stop is not None:  # the janitor ends with the app (a test's database and store go with it)
            stop.set()


#: How often the embedded janitor releases waiting tasks (s); it sweeps orphans every sixth pass.
JANITOR_RELEASE_SECONDS = 10


def start_janitor() -> threading.Event:
    """Embedded mode: this process sweeps the store's orphans (``core.janitor``) every minute, and every
    ``JANITOR_RELEASE_SECONDS`` releases the tasks waiting their turn (``core.fair_queue``) — the workers' sweep
    does it with Celery; here nothing else would retry a release that failed (database restarting, locked).
    Setting the event it returns ends it (the app's shutdown)."""
    stop = threading.Event()

    def loop() -> None:
        passes = 0
        while not stop.is_set():
            if passes % 6 == 0:
                try:
                    maybe_sweep_orphans()
                except Exception:
                    logging.getLogger("ackreplay.janitor").exception("orphan sweep failed")
            release_soon()
            passes += 1
            stop.wait(JANITOR_RELEASE_SECONDS)

    threading.Thread(target=loop, name="ackreplay-janitor", daemon=True).start()
    return stop
