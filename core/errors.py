"""Service errors: each carries its HTTP status and a stable machine-readable code; the API renders
them as ``{"error": code, "detail": message}`` in one handler.

And the one place that tells an infrastructure fault (the database, the broker or the store unreachable:
worth retrying) from bad data (a request or a capture the service refuses: never worth retrying)."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

#: PostgreSQL SQLSTATE classes and codes of a transient conflict between transactions (a retry succeeds).
CONFLICT_STATES = ("40001", "40P01", "55P03")


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

    @property
    def headers(self) -> dict[str, str]:
        """Headers the answer carries besides its body (``Retry-After`` of a rate limit); none by default."""
        return {}


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a database error (PostgreSQL), else None."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


def is_conflict(exc: BaseException) -> bool:
    """A deadlock, serialization failure or lock timeout: transactions collided; the same work succeeds
    when tried again."""
    return isinstance(exc, DBAPIError) and sqlstate(exc) in CONFLICT_STATES


def is_outage(exc: BaseException) -> bool:
    """The database cannot be reached (connection refused or lost, pool exhausted, server shutting down)."""
    if isinstance(exc, DisconnectionError | PoolTimeout | InterfaceError):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        state = sqlstate(exc)
        if state is None:  # no SQLSTATE: the error came from the driver, not the server (no connection)
            return isinstance(exc, OperationalError)
        return state.startswith(("08", "57P", "53"))  # connection exceptions, shutdown, insufficient resources
    return False


def is_infrastructure(exc: BaseException) -> bool:
    """Worth retrying: the database, the broker or the store is unreachable or a transaction collided.
    Anything else a task raises is the data's fault and fails its task at once."""
    if is_outage(exc) or is_conflict(exc):
        return True
    return isinstance(exc, ConnectionError | TimeoutError | OSError) and not isinstance(
        exc, FileNotFoundError | IsADirectoryError | NotADirectoryError | PermissionError)
