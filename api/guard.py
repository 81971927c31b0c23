"""The API's outer layer, before any route reads a byte of the body (a pure ASGI middleware):

- every response carries the security headers (``api.security``), errors included;
- an exception no handler took becomes ``500 {"error": "internal_error"}`` (JSON, never plain text);
- a NUL byte anywhere in the URL is refused (``422 invalid_request``);
- open mode (requests without a token): a write from another site (``Origin``/``Sec-Fetch-Site``) is refused
  (``403 cross_origin``), and on a loopback server an unknown ``Host`` (DNS rebinding) too (``400 invalid_host``);
- uploads (``POST /api/v1/captures`` and ``/api/v1/batches``): the token, the announced ``Content-Length``
  and the owner's quota are checked before the body is read, and a body without a length is counted while
  it streams and cut at the upload limit or at what is left of the quota, whichever is smaller (``413``);
  any other body may hold at most 1 MiB (``413 request_too_large``);
- a body that is late is answered ``408 request_timeout``: an upload that sends no byte for
  ``body_timeout_seconds``, any other body (a JSON document) not all there within that time.
  A request refused while its body streams is answered with ``Connection: close``: the server reads no more
  of it, and a client that keeps a connection open by trickling bytes loses it.
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


class BodyRefused(HTTPException):
    """Raised from the body stream past its limit or its timeout; FastAPI re-raises it to its handler
    (``api.errors``), and the guard answers with it whatever the app made of the cut body."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(status, detail, headers={"Connection": "close"})
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
    headers: dict[str, str] | None = None


class BodyLimit(NamedTuple):
    """The largest body a route takes, the error code past it and what the limit is (for the message)."""

    limit: int
    code: str
    what: str = "the limit"
    #: An upload may take as long as it keeps sending (a byte per ``body_timeout_seconds``); any other body
    #: (at most 1 MiB) must arrive whole within that time, so that trickling it holds no connection either.
    upload: bool = False


class Guard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        meter = _Meter(receive, self.body_limit(scope), get_settings().body_timeout_seconds)

        async def send_secured(message: Message) -> None:
            nonlocal started
            if meter.tripped is not None:  # whatever the app made of the cut body
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await refuse(meter.tripped)
                return
            if message["type"] == "http.response.start":
                started = True
                present = {k.lower() for k, _ in message.get("headers", [])}
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (k.lower().encode(), v.encode()) for k, v in HEADERS.items() if k.lower().encode() not in present]
            await send(message)

        async def refuse(refusal: Refusal | BodyRefused) -> None:
            answer = refusal if isinstance(refusal, Refusal) else Refusal(
                refusal.status_code, refusal.code, refusal.detail, dict(refusal.headers or {}))
            for message in error_message(*answer):
                await send(message)

        try:
            refusal = await self.check(scope, meter)
            if refusal is not None:
                if _has_body(scope):  # (left unread: the connection goes with the answer)
                    refusal = refusal._replace(headers={**(refusal.headers or {}), "Connection": "close"})
                await refuse(refusal)
                return
            await self.app(scope, meter.receive, send_secured)
        except BodyRefused as exc:
            if not started:
                await refuse(exc)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await refuse(Refusal(500, "internal_error", "an unexpected error occurred; it has been logged"))

    async def check(self, scope: Scope, meter: _Meter) -> Refusal | None:
        """A refusal of the request before the app sees it, or None (an upload's body limit may be lowered to
        what is left of its owner's quota)."""
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
            admitted = await anyio.to_thread.run_sync(_admit_upload, token, headers, path, settings)
            if isinstance(admitted, BodyLimit):
                meter.body = admitted
                return None
            return admitted
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_JSON:
            return Refusal(413, "request_too_large", f"the request body exceeds the limit of {MAX_JSON} bytes")
        return None

    @staticmethod
    def body_limit(scope: Scope) -> BodyLimit:
        """The largest body the route takes: an upload's or a batch's, else a JSON document's."""
        settings = get_settings()
        if scope.get("method") == "POST" and scope.get("path") == "/api/v1/captures":
            return BodyLimit(settings.max_upload_bytes + FRAMING, "upload_too_large", upload=True)
        if scope.get("method") == "POST" and scope.get("path") == "/api/v1/batches":
            return BodyLimit(settings.max_batch_bytes + FRAMING, "upload_too_large", upload=True)
        return BodyLimit(MAX_JSON, "request_too_large")


class _Meter:
    """The request body counted while it streams; past its limit, or late (no byte for ``timeout`` seconds
    of an upload, not all of any other body within them), reading it raises (the app fails however it
    fails, and its answer is replaced by the error)."""

    def __init__(self, receive: Receive, body: BodyLimit, timeout: float) -> None:
        self.inner, self.body, self.timeout = receive, body, timeout
        self.seen = 0
        self.complete = False
        self.deadline: float | None = None
        self.tripped: BodyRefused | None = None

    async def receive(self) -> Message:
        if self.tripped is not None:
            raise self.tripped
        if self.complete:  # (afterwards the app only waits for the client to disconnect: no timeout)
            return await self.inner()
        if self.deadline is None and not self.body.upload:
            self.deadline = anyio.current_time() + self.timeout
        wait = self.timeout if self.deadline is None else self.deadline - anyio.current_time()
        try:
            with anyio.fail_after(max(wait, 0.0)):
                message = await self.inner()
        except TimeoutError:
            late = "no byte of the upload arrived for" if self.body.upload else "the request body did not arrive within"
            self.tripped = BodyRefused(408, "request_timeout", f"{late} {self.timeout:g} s; the connection is closed")
            raise self.tripped from None
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
            if self.seen > self.body.limit:
                self.tripped = BodyRefused(413, self.body.code, f"the request body exceeds {self.body.what} "
                                                                f"({self.body.limit} bytes)")
                raise self.tripped
        else:
            self.complete = True
        return message


def _has_body(scope: Scope) -> bool:
    """Whether the request announces a body (a length above 0, or chunks)."""
    headers = dict(scope.get("headers", []))
    return headers.get(b"content-length", b"0") not in (b"", b"0") or b"transfer-encoding" in headers


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
                  settings: Settings) -> Refusal | BodyLimit:
    """The token, the announced length and the owner's quota of an upload, before its body is read; admitted,
    the most its body may hold: the upload limit, or what is left of the quota when that is less (a batch's
    too: its captures are stored decompressed, so a body past what is left fits only when members are
    refused or stored already)."""
    length = headers.get("content-length")
    announced = int(length) if length and length.isdigit() else None
    limit = settings.max_upload_bytes if path.endswith("captures") else settings.max_batch_bytes
    try:
        with session_scope() as session:
            owner = authenticate(session, token, settings.auth)
            if announced is not None and announced > limit + FRAMING:
                return Refusal(413, "upload_too_large",
                               f"the request announces {announced} bytes; the limit is {limit}")
            usage = quotas.usage(session, owner) if quotas.limit_of(owner) is not None else None
            left = usage.remaining_bytes if usage is not None else None
            if usage is not None and left is not None and announced is not None and announced > left + FRAMING:
                exc = quotas.exceeded(owner, usage, str(announced))
                return Refusal(exc.status, exc.code, exc.detail)
    except ServiceError as exc:
        return Refusal(exc.status, exc.code, exc.detail)
    except DBAPIError as exc:
        answer = database_error(exc)
        return Refusal(answer.status, answer.code, answer.detail)
    if left is not None and left < limit:
        return BodyLimit(left + FRAMING, "quota_exceeded", f"what is left of the storage quota of owner {owner.name!r}",
                         upload=True)
    return BodyLimit(limit + FRAMING, "upload_too_large", upload=True)
