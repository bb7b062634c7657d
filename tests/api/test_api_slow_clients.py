"""Slow clients cannot hold a real `plait serve`: a connection whose request headers or body
do not arrive within `--header-timeout` / `--body-timeout` is answered 408 and closed
(slowloris: one byte at a time, or a body that never ends). Raw sockets, so that nothing
between the test and the server completes a request on the client's behalf."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

from tests.web.conftest import Served, serve

GIVE_UP_S = 45.0
"""How long a case trickles before it calls the connection held for ever (the deadlines are 1 s
and 2 s: far below it, however loaded the machine)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("slow"), "--header-timeout", "1", "--body-timeout", "2")


def _trickle(url: str, head: bytes, drip: bytes) -> tuple[bytes, float]:
    """Send `head` at once, then `drip` one byte every 0.1 s, until the server closes the
    connection: (what it answered, seconds until it closed); fails when it never does."""
    port = int(url.rsplit(":", 1)[1])
    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        if head:
            sock.sendall(head)
        for byte in drip * 1000:
            if time.monotonic() - started > GIVE_UP_S:
                break
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                try:
                    chunk = sock.recv(4096)
                except ConnectionResetError:
                    return answer, time.monotonic() - started
                if not chunk:
                    return answer, time.monotonic() - started
                answer += chunk
                continue
            try:
                sock.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                return answer, time.monotonic() - started
    pytest.fail(f"the server still held the connection after {GIVE_UP_S:g} s (it answered {answer[:80]!r})")


CASES = {
    "headers one byte at a time": (b"", b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100),
    "a connection that says nothing": (b"", b""),
    "a body that never ends": (
        b"POST /api/graphs/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000000\r\n\r\n",
        b"[1, ",
    ),
    "chunks that never end": (
        b"POST /api/graphs/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        b"1\r\n \r\n",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_slow_request_is_answered_408_and_closed(server: Served, case: str) -> None:
    head, drip = CASES[case]
    if not drip:  # say nothing: only wait to be let go
        port = int(server.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP_S) as sock:
            answer = sock.recv(4096)
            assert sock.recv(4096) == b""  # closed after the answer
    else:
        answer, _ = _trickle(server.url, head, drip)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    _prompt_client(server)  # and a client that sends its requests at once is served as before


def _prompt_client(server: Served) -> None:
    """Three requests on one kept-alive connection, each body sent in a second piece."""
    port = int(server.url.rsplit(":", 1)[1])
    body = b'{"graph": {"plait": 1, "id": "g", "nodes": [{"id": "a", "type": "MERGE"}], "edges": []}}'
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for _ in range(3):
            sock.sendall(
                b"POST /api/graphs/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
            )
            sock.sendall(body)
            answer = b""
            while not answer.endswith(b"}"):
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
