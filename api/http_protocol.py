"""The HTTP/1.1 connection ``ackreplay serve`` runs: uvicorn's h11 protocol with the two things it lacks.

- **A header timeout.** uvicorn times out only an idle keep-alive connection, and restarts that timer on
  every byte, so a client that trickles a request's headers a byte at a time (slowloris) holds its
  connection, and a connection that never sends anything is never closed. Here a connection must complete
  a request's headers within ``header_timeout_seconds`` of connecting, of its previous response, or of the
  request's first byte; else it gets ``408 request_timeout`` (JSON) and is closed. (Body timeouts are the
  ASGI layer's: ``api.guard``.)
- **JSON for requests uvicorn cannot parse** (a malformed request line, headers past h11's 16 KiB): the
  API's error shape, ``400 malformed_request``, instead of plain text.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ackreplay.api.security import HEADERS
from ackreplay.core.config import get_settings


def raw_error(code: str, detail: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and body of an error answered below the ASGI app (the API's shape, closing the connection)."""
    body = json.dumps({"error": code, "detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
               (b"content-length", str(len(body)).encode())]
    return headers + [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()], body


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header timeout and JSON answers to unparsable requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = get_settings().header_timeout_seconds
        self.header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # the first bytes of a request: its headers are due
            self._await_headers()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the headers are in (the body has its own timeout)
            self._cancel_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        if self.header_timer is None:
            self.header_timer = self.loop.call_later(self.header_timeout, self._headers_timed_out)

    def _cancel_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_timed_out(self) -> None:
        self.header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:  # a response is still going out
            return
        # (h11 sends no response without a request: written as bytes, the connection closed after them)
        headers, body = raw_error("request_timeout",
                                  f"the request's headers did not arrive within {self.header_timeout:g} s")
        head = b"HTTP/1.1 408 Request Timeout\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in headers)
        self.transport.write(head + b"\r\n" + body)
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        headers, body = raw_error("malformed_request", msg)
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()
