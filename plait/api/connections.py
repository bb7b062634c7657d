"""Slow clients cannot hold a connection: a request's headers, then its body, must arrive
within a deadline, or the connection is closed.

uvicorn bounds the idle time between requests (`timeout_keep_alive`) but not the time a
request takes to arrive: a client sending one header byte a second, or a body that never
ends, held its connection (and a file descriptor, and a task waiting for the body) for ever.
`timed_protocol` gives uvicorn's own h11 protocol two deadlines, followed from h11's view of
the client's side of the connection (`their_state`): IDLE is a request whose headers are not
complete (armed when the connection opens and again after each response), SEND_BODY one whose
body is not. A client that misses either deadline is answered 408 (unless a response has
started) and disconnected; a route still reading the body sees the client leave. Responses,
event streams included, are not bounded here: they are the server's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_TIMED_OUT = b"the request took too long to arrive; send it again, whole\n"
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: " + str(len(_TIMED_OUT)).encode() + b"\r\n\r\n" + _TIMED_OUT
)
"""Written on the wire by hand: h11 cannot answer a request whose headers it has not read."""


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers and one for its body."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: type[h11.IDLE] | type[h11.SEND_BODY] | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Arm the deadline of the part of a request the client is sending now, if it changed."""
        state = self.conn.their_state
        phase = state if state in (h11.IDLE, h11.SEND_BODY) else None
        if phase is self._phase:
            return
        self._cancel()
        self._phase = phase
        if phase is None or self.transport.is_closing():
            return
        if phase is h11.IDLE:
            self._deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)
        else:
            self._deadline = self.loop.call_later(self.body_timeout_s, self._body_too_slow)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.our_state is h11.IDLE:  # nothing of a response on the wire: say why
            self.transport.write(TIMEOUT_RESPONSE)
        self.transport.close()

    def _body_too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        if self.cycle is not None and not self.cycle.response_started:  # the route still waits for the body
            self.transport.write(TIMEOUT_RESPONSE)
        self.transport.close()


def timed_protocol(header_timeout_s: float, body_timeout_s: float) -> type[TimedH11Protocol]:
    """The protocol class to give uvicorn (`Config(http=...)`) for these deadlines."""
    return type(
        "TimedH11Protocol",
        (TimedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s},
    )
