"""The API's outer layer, before any route reads a byte of the body (a pure ASGI middleware):

- every response carries the security headers (``api.security``), errors included;
- an exception no handler took becomes ``500 {"error": "internal_error"}`` (JSON, never plain text);
- a NUL byte anywhere in the URL is refused (``422 invalid_request``);
- open mode (requests without a token): a write from another site (``Origin``/``Sec-Fetch-Site``) is refused
  (``403 cross_origin``), and on a loopback server an unknown ``Host`` (DNS rebinding) too (``400 invalid_host``);
- uploads (``POST /api/v1/captures`` and ``/api/v1/batches``): the token, the announced ``Content-Length``
  and the owner's quota are checked before the body is read, and a body without a length is counted while
  it streams and cut at the limit (``413``); any other body may hold at most 1 MiB (``413 request_too_large``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import anyio.to_thread
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException

from ackreplay.api.errors import database_error
from ackreplay.api.security import HEADERS
from ackreplay.core import quotas
from ackreplay.core.config import Settings, get_settings
from ackreplay.core.db import session_scope
from ackreplay.core.errors import ServiceError
from ackreplay.core.owners import authenticate, is_loopback, token_from_header

log = logging.getLogger("ackreplay.api")
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
#: Multipart framing and form fields around the file(s): allowed beyond the upload limit.
FRAMING = 1 << 20
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")
#: The largest body of any other request (JSON documents such as POST /runs).
MAX_JSON = 1 << 20


class BodyTooLarge(HTTPException):
    """Raised from the body stream past the limit; FastAPI re-raises it to its handler (``api.errors``)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(413, detail)
        self.code = code


def error_message(status: int, code: str, detail: object,
                  headers: dict[str, str] | None = None) -> tuple[Message, Message]:
    """The ASGI messages of an error response in the API's shape, with the security headers."""
    body = json.dumps({"error": code, "detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in {**HEADERS, **(headers or {})}.items()]
    return ({"type": "http.response.start", "status": status, "headers": raw},
            {"type": "http.response.body", "body": body})


class Refusal(NamedTuple):
    """A request refused before the app sees it: the error response's status, code and detail."""

    status: int
    code: str
    detail: object


class BodyLimit(NamedTuple):
    """The largest body a route takes, and the error code past it."""

    limit: int
    code: str


class Guard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        meter = _Meter(receive, *self.body_limit(scope))

        async def send_secured(message: Message) -> None:
            nonlocal started
            if meter.tripped is not None:  # whatever the app made of the cut body
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await refuse(413, meter.tripped.code, meter.tripped.detail)
                return
            if message["type"] == "http.response.start":
                started = True
                present = {k.lower() for k, _ in message.get("headers", [])}
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (k.lower().encode(), v.encode()) for k, v in HEADERS.items() if k.lower().encode() not in present]
            await send(message)

        async def refuse(status: int, code: str, detail: object, headers: dict[str, str] | None = None) -> None:
            for message in error_message(status, code, detail, headers):
                await send(message)

        try:
            refusal = await self.check(scope)
            if refusal is not None:
                await refuse(*refusal)
                return
            await self.app(scope, meter.receive, send_secured)
        except BodyTooLarge as exc:
            if not started:
                await refuse(413, exc.code, exc.detail)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await refuse(500, "internal_error", "an unexpected error occurred; it has been logged")

    async def check(self, scope: Scope) -> Refusal | None:
        """A refusal of the request before the app sees it, or None."""
        path: str = scope.get("path", "")
        query: bytes = scope.get("query_string", b"")
        if "\x00" in path or b"\x00" in query or b"%00" in query.lower():
            return Refusal(422, "invalid_request", "a NUL byte in the URL")
        settings = get_settings()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        token = token_from_header(headers.get("authorization"))
        if token is None:
            host = headers.get("host", "")
            if not _host_allowed(host, settings):
                return Refusal(400, "invalid_host", f"this server does not answer for host {host!r} without a token")
            if scope.get("method") in UNSAFE and _cross_site(headers):
                return Refusal(403, "cross_origin", "a write from another site without a token is refused")
        if scope.get("method") == "POST" and path in ("/api/v1/captures", "/api/v1/batches"):
            return await anyio.to_thread.run_sync(_admit_upload, token, headers, path, settings)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_JSON:
            return Refusal(413, "request_too_large", f"the request body exceeds the limit of {MAX_JSON} bytes")
        return None

    @staticmethod
    def body_limit(scope: Scope) -> BodyLimit:
        """The largest body the route takes: an upload's or a batch's, else a JSON document's."""
        settings = get_settings()
        if scope.get("method") == "POST" and scope.get("path") == "/api/v1/captures":
            return BodyLimit(settings.max_upload_bytes + FRAMING, "upload_too_large")
        if scope.get("method") == "POST" and scope.get("path") == "/api/v1/batches":
            return BodyLimit(settings.max_batch_bytes + FRAMING, "upload_too_large")
        return BodyLimit(MAX_JSON, "request_too_large")


class _Meter:
    """The request body counted while it streams; past ``limit`` bytes reading it raises (the app fails
    however it fails, and its answer is replaced by ``413 code``)."""

    def __init__(self, receive: Receive, limit: int, code: str) -> None:
        self.inner, self.limit, self.code = receive, limit, code
        self.seen = 0
        self.tripped: BodyTooLarge | None = None

    async def receive(self) -> Message:
        if self.tripped is not None:
            raise self.tripped
        message = await self.inner()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.limit:
                self.tripped = BodyTooLarge(self.code, f"the request body exceeds the limit of {self.limit} bytes")
                raise self.tripped
        return message


def _host_allowed(host: str, settings: Settings) -> bool:
    """Tokenless requests to a loopback server must name it by a loopback name or an allowed host (a page
    on another site resolving its own name to 127.0.0.1 must not reach an open server)."""
    allowed = [h.lower() for h in settings.allowed_hosts]
    if not allowed and not (settings.bind_host and is_loopback(settings.bind_host)):
        return True
    name = host.lower().rsplit(":", 1)[0] if not host.startswith("[") else host.lower().split("]")[0] + "]"
    return name in LOOPBACK_NAMES or name.endswith(".localhost") or name in allowed


def _cross_site(headers: dict[str, str]) -> bool:
    """A browser's request from another origin: ``Sec-Fetch-Site`` says so, or ``Origin`` names another
    host than the request's."""
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    if origin == "null":
        return True
    return urlsplit(origin).netloc.lower() != headers.get("host", "").lower()


def _admit_upload(token: str | None, headers: dict[str, str], path: str,
                  settings: Settings) -> Refusal | None:
    """The token, the announced length and the owner's quota of an upload, before its body is read."""
    length = headers.get("content-length")
    announced = int(length) if length and length.isdigit() else None
    limit = settings.max_upload_bytes if path.endswith("captures") else settings.max_batch_bytes
    try:
        with session_scope() as session:
            owner = authenticate(session, token, settings.auth)
            if announced is not None and announced > limit + FRAMING:
                return Refusal(413, "upload_too_large",
                               f"the request announces {announced} bytes; the limit is {limit}")
            single = path.endswith("captures")  # (a batch's archives hold more or less than they store)
            usage = quotas.usage(session, owner) if single and quotas.limit_of(owner) is not None else None
            if usage is not None and announced is not None and usage.remaining_bytes is not None \
                    and announced > usage.remaining_bytes + FRAMING:
                exc = quotas.exceeded(owner, usage, str(announced))
                return Refusal(exc.status, exc.code, exc.detail)
    except ServiceError as exc:
        return Refusal(exc.status, exc.code, exc.detail)
    except DBAPIError as exc:
        answer = database_error(exc)
        return Refusal(answer.status, answer.code, answer.detail)
    return None
