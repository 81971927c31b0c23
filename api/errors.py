"""One error handler: every error renders as ``{"error": code, "detail": message}`` with its status; and
the registry of every code the API answers with, from which each route documents its error responses."""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, SQLAlchemyError
from starlette.exceptions import HTTPException

from ackreplay.api.schemas import ErrorOut
from ackreplay.core.errors import ServiceError, is_conflict, is_outage

log = logging.getLogger("ackreplay.api")

#: Every error code with its HTTP status (docs/service.md lists them with their meaning).
CODES: dict[str, int] = {
    "empty_upload": 400, "invalid_host": 400, "malformed_request": 400,
    "token_required": 401, "invalid_token": 401,
    "cross_origin": 403,
    "not_found": 404, "capture_not_found": 404, "flow_not_found": 404, "run_not_found": 404,
    "results_not_found": 404, "batch_not_found": 404,
    "method_not_allowed": 405, "request_timeout": 408, "conflict": 409,
    "upload_too_large": 413, "request_too_large": 413, "quota_exceeded": 413, "archive_too_large": 413,
    "unsupported_media_type": 415,
    "too_many_runs": 429, "too_many_tasks": 429, "rate_limited": 429,
    "invalid_request": 422, "invalid_truth": 422, "invalid_archive": 422, "no_captures": 422, "invalid_sort": 422,
    "unknown_estimator": 422, "unknown_parameter": 422, "parameter_out_of_range": 422, "invalid_parameter": 422,
    "too_many_variants": 422, "duplicate_estimator": 422,
    "unknown_algorithm": 422, "path_incomplete": 422, "path_low_confidence": 422,
    "shared_bottleneck": 422, "whatif_too_large": 422,
    "internal_error": 500, "database_unavailable": 503,
}
#: Codes any authenticated route may answer with.
COMMON = ("token_required", "invalid_token", "invalid_request", "conflict", "internal_error",
          "database_unavailable")
STATUS_TEXT = {400: "Bad request", 401: "No or unknown API token", 403: "Refused (a cross-site write)",
               404: "Not found (or another owner's)", 405: "Method not allowed",
               408: "The request body stopped arriving (the connection is closed)",
               409: "Conflict with a concurrent request (try again)", 413: "Too large", 415: "Not a capture",
               422: "Invalid input",
               429: "Too many unfinished runs or tasks of the owner, or runs started too fast (`rate_limited`: "
                    "Retry-After says when to try again)",
               500: "Unexpected error (logged)", 503: "Database unreachable (Retry-After)"}


#: The header a rate-limited answer carries (OpenAPI).
RETRY_AFTER = {"Retry-After": {"description": "`rate_limited`: seconds until the next run is accepted",
                               "schema": {"type": "integer", "minimum": 1}}}
#: What refuses a run: the owner's limits on unfinished work and its run rate (``core.rate_limits``).
RUN_LIMITS = ("too_many_runs", "too_many_tasks", "rate_limited")


def responses(*codes: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI error responses of a route: per status, the ``ErrorOut`` model and the codes it may carry."""
    by_status: dict[int, list[str]] = {}
    for code in (*COMMON, *codes):
        by_status.setdefault(CODES[code], []).append(code)
    return {status: {"model": ErrorOut,
                     "description": f"{STATUS_TEXT[status]}. `error` is one of: "
                                    + ", ".join(f"`{c}`" for c in sorted(set(names))),
                     "content": {"application/json": {"example": {"error": names[0], "detail": "…"}}},
                     **({"headers": RETRY_AFTER} if "rate_limited" in names else {})}
            for status, names in sorted(by_status.items())}


def body(code: str, detail: object) -> dict[str, object]:
    return {"error": code, "detail": detail}


class ErrorAnswer(NamedTuple):
    """An error response: its status, code, detail and headers."""

    status: int
    code: str
    detail: str
    headers: dict[str, str]


def database_error(exc: DBAPIError) -> ErrorAnswer:
    """Status, code, detail and headers for a database error: 503 only when the database is unreachable;
    transactions that collided 409 (try again); a value the database refuses 422 (the boundary should have
    refused it: logged); anything else 500 (logged)."""
    if is_outage(exc):
        return ErrorAnswer(503, "database_unavailable", "the database cannot be reached; try again shortly",
                           {"Retry-After": "5"})
    if is_conflict(exc):
        return ErrorAnswer(409, "conflict", "the request collided with a concurrent one; try again",
                           {"Retry-After": "1"})
    log.error("database refused a request: %s", exc)
    if isinstance(exc, IntegrityError | DataError):
        return ErrorAnswer(422, "invalid_request", "the database refused a value of the request", {})
    return ErrorAnswer(500, "internal_error", "an unexpected database error occurred; it has been logged", {})


def unparsed_body(exc: HTTPException) -> str:
    """Why FastAPI could not parse a request body (it answers a bare 400 and keeps the cause)."""
    if isinstance(exc.__cause__, RecursionError):
        return "the JSON body is nested too deeply"
    cause = f": {exc.__cause__}" if exc.__cause__ is not None and str(exc.__cause__) else ""
    return f"the request body could not be parsed{cause}"[:500]


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        return JSONResponse(body(exc.code, exc.detail), status_code=exc.status, headers=exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg")} for e in exc.errors()]
        return JSONResponse(body("invalid_request", errors), status_code=422)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400 and getattr(exc, "code", None) is None:  # a body FastAPI could not parse
            return JSONResponse(body("invalid_request", unparsed_body(exc)), status_code=422)
        code = getattr(exc, "code", None) or {404: "not_found", 405: "method_not_allowed",
                                              413: "upload_too_large"}.get(exc.status_code, "http_error")
        return JSONResponse(body(code, exc.detail), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(DBAPIError)
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DBAPIError)
        answer = database_error(exc)
        return JSONResponse(body(answer.code, answer.detail), status_code=answer.status, headers=answer.headers)

    @app.exception_handler(SQLAlchemyError)
    async def _orm(_: Request, exc: Exception) -> JSONResponse:  # pool timeout, stale rows of a race, …
        if is_outage(exc):
            return JSONResponse(body("database_unavailable", "the database cannot be reached; try again shortly"),
                                status_code=503, headers={"Retry-After": "5"})
        log.error("database layer error: %s", exc)
        return JSONResponse(body("conflict", "the request collided with a concurrent change; try again"),
                            status_code=409, headers={"Retry-After": "1"})
