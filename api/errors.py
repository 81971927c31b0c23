"""One error handler: every error renders as ``{"error": code, "detail": message}`` with its status."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException

from core.errors import ServiceError


def body(code: str, detail: object) -> dict[str, object]:
    return {"error": code, "detail": detail}


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        return JSONResponse(body(exc.code, exc.detail), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg")} for e in exc.errors()]
        return JSONResponse(body("invalid_request", errors), status_code=422)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(body(code, exc.detail), status_code=exc.status_code)

    @app.exception_handler(OperationalError)
    @app.exception_handler(DBAPIError)
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(body("database_unavailable", "the database cannot be reached; try again shortly"),
                            status_code=503, headers={"Retry-After": "5"})
