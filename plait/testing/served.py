"""The HTTP service for tests: `plait serve`'s app in uvicorn, on a free loopback port.

The server runs on a thread with its own event loop, so a test may call it from blocking code
(`with`) or from a coroutine (`async with`) alike, and a blocking call in the test never stalls
the server. It is the app `plait serve` runs (`create_app`), with the same slow-client deadlines.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from plait.api import ServerSettings, create_app
from plait.store import Store
from plait.testing.services import wait_for
from plait.testing.stores import temporary_store

if TYPE_CHECKING:
    import uvicorn

HOST = "127.0.0.1"
STOP_S = 30.0
"""How long a stopping server may take to finish its requests and its runs."""


@dataclass(frozen=True)
class ServedApp:
    """A running app: its base URL, its store, the settings it runs with, and, when it asks for
    one, a bearer token made for the test."""

    url: str
    store: Store
    settings: ServerSettings
    token: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        """The `Authorization` header carrying `token` (none when auth is off)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def client(self, **options: Any) -> httpx.Client:
        """A client on `url` sending `headers`; `options` as for `httpx.Client` (timeout: 30 s)."""
        return httpx.Client(**{"base_url": self.url, "headers": self.headers, "timeout": 30.0, **options})

    def async_client(self, **options: Any) -> httpx.AsyncClient:
        """`client`, for a coroutine."""
        return httpx.AsyncClient(**{"base_url": self.url, "headers": self.headers, "timeout": 30.0, **options})


def served_app(
    settings: ServerSettings | None = None, *, store: Store | None = None, start_timeout_s: float = 60.0, **fields: Any
) -> Serving:
    """`plait serve`'s app on a free port of 127.0.0.1 for the block (`with` or `async with`),
    yielding a `ServedApp` once `/api/health` answers; stopped after, its runs stopped too.

    `settings` (or `ServerSettings` fields as keywords, e.g. `llm="scripted:answers.yaml"`) say
    how it runs; their host and port are replaced. Without a `store` it serves a
    `temporary_store()` of its own. With auth on (`require_auth=True`) a token is made in the
    store for the test. `start_timeout_s` bounds the start on a loaded machine: keep it generous."""
    chosen = replace(settings or ServerSettings(), **fields)
    return Serving(chosen, store, start_timeout_s)


class Serving:
    """What `served_app` returns: a context manager for blocking code and for coroutines."""

    def __init__(self, settings: ServerSettings, store: Store | None, start_timeout_s: float) -> None:
        self._settings = settings
        self._store = store
        self._start_timeout_s = start_timeout_s
        self._stack: ExitStack | None = None

    def __enter__(self) -> ServedApp:
        return self._start()

    def __exit__(self, *exc: object) -> None:
        self._stop()

    async def __aenter__(self) -> ServedApp:
        return await asyncio.to_thread(self._start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self._stop)

    def _start(self) -> ServedApp:
        if self._stack is not None:
            raise RuntimeError("this served app is running already: call served_app() again for another")
        import uvicorn

        from plait.api.connections import timed_protocol

        with ExitStack() as stack:
            store = self._store if self._store is not None else stack.enter_context(temporary_store())
            auth = self._settings.require_auth  # the only way on loopback, where it always listens
            token = store.tokens.create(f"plait-testing-{secrets.token_hex(4)}")[1] if auth else None
            listener = socket.create_server((HOST, 0))  # bound here: the port is free and stays ours
            stack.callback(listener.close)
            port = int(listener.getsockname()[1])
            settings = replace(self._settings, host=HOST, port=port)
            app = create_app(settings, store=store)
            config = uvicorn.Config(
                app,
                host=HOST,
                port=port,
                log_level="warning",
                lifespan="on",
                timeout_graceful_shutdown=3,
                http=timed_protocol(settings.header_timeout_s, settings.body_timeout_s),
            )
            server = uvicorn.Server(config)
            thread = threading.Thread(
                target=server.run, kwargs={"sockets": [listener]}, name="plait-served-app", daemon=True
            )
            thread.start()
            stack.callback(_stop_server, server, thread)
            url = f"http://{HOST}:{port}"
            wait_until_healthy(url, alive=thread.is_alive, timeout=self._start_timeout_s)
            self._stack = stack.pop_all()
        return ServedApp(url, store, settings, token)

    def _stop(self) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()


def _stop_server(server: uvicorn.Server, thread: threading.Thread) -> None:
    server.should_exit = True
    thread.join(timeout=STOP_S)
    if thread.is_alive():
        raise AssertionError(f"the served app did not stop within {STOP_S:g}s")


def wait_until_healthy(
    url: str,
    *,
    alive: Callable[[], bool] | None = None,
    log: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
) -> None:
    """Return once `GET {url}/api/health` answers 200: a server that is up, its start-up done.
    `alive` (e.g. `lambda: process.poll() is None`) says whether the server is still starting:
    when it is not, this fails at once instead of waiting out `timeout`. For a server started
    any way (`plait serve` in a process, a container); the AssertionError says what it saw, and
    ends with the end of `log`, the file the server writes its output to, when given."""
    deadline = time.monotonic() + timeout
    while True:
        if alive is not None and not alive():
            raise AssertionError(f"the server at {url} stopped while starting{_end_of(log)}")
        try:
            status = httpx.get(f"{url}/api/health", timeout=2.0).status_code
            if status == 200:
                return
            seen = f"HTTP {status}"
        except httpx.TransportError as exc:
            seen = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}/api/health did not answer within {timeout:g}s (last: {seen}){_end_of(log)}")
        time.sleep(0.05)


def _end_of(log: str | os.PathLike[str] | None) -> str:
    if log is None:
        return ""
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"; its log {log} cannot be read: {exc.strerror or exc}"
    return f"; the end of its log:\n{text[-4000:]}"


@dataclass
class HttpRuns:
    """Runs over the HTTP API with a blocking client (e.g. `ServedApp.client()`): start one,
    read it, wait until it reaches a status."""

    client: httpx.Client

    def start(self, graph: str, run_input: dict[str, Any] | None = None) -> str:
        """Start a run of the stored graph `graph` (id or slug); its id."""
        response = self.client.post("/api/runs", json={"graph": graph, "input": {} if run_input is None else run_input})
        _expect(response, 202)
        return str(response.json()["run_id"])

    def run(self, run_id: str) -> dict[str, Any]:
        """The run as `GET /api/runs/{id}` shows it."""
        response = self.client.get(f"/api/runs/{run_id}")
        _expect(response, 200)
        return dict(response.json())

    def wait_status(self, run_id: str, *statuses: str, timeout: float = 20.0) -> dict[str, Any]:
        """The run once its status is one of `statuses` and the server is done driving it."""

        def reached() -> dict[str, Any] | None:
            run = self.run(run_id)
            return run if run["status"] in statuses and not run["executing_here"] else None

        return wait_for(reached, timeout=timeout, what=f"run {run_id} to be {' or '.join(statuses)}")


def _expect(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise AssertionError(
            f"{response.request.method} {response.request.url.path}: expected {status}, got "
            f"{response.status_code}: {response.text[:2000]}"
        )
