"""Service errors: each carries its HTTP status and a stable machine-readable code; the API renders
them as ``{"error": code, "detail": message}`` in one handler."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, detail: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        if status:
            self.status = status


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Unavailable(ServiceError):
    status = 503
    code = "unavailable"
