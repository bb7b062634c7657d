"""`readRoute` for prompt scripts run by this server: GET routes of its own API, from an
allow-list, called in-process through the app itself (ASGI, never a socket).

A script may read what a person using the workbench could read, no more: the routes below are
read-only and return no secrets (no tokens, no provider keys, no database location). A route
off the list, a parameter that is not a plain value, or a path segment with `..`, `%` or `/` in
it is refused with a message the script can catch. The request carries a key made for this
process (`internal_key`), which the app's authentication accepts, so a server that asks for
tokens answers its own scripts too; the key never leaves the process.

Scripts run on threads of their own, so a call is handed to the server's event loop and waited
for there, at most `TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from typing import Any

import httpx

from plait.sandbox.scripts import HostError

ALLOWED = (
    "/health",
    "/providers",
    "/graphs",
    "/graphs/{ref}",
    "/graphs/{ref}/versions",
    "/runs",
    "/runs/{run_id}",
    "/runs/{run_id}/ledger",
    "/node-runs/{node_run_id}",
    "/templates",
    "/templates/last-used",
    "/templates/{template_id}",
)
"""The GET routes (under /api) a script may read."""
TIMEOUT_S = 2.0
MAX_PARAMS = 20
_SEGMENT = re.compile(r"[A-Za-z0-9_.:@-]{1,200}")
_PATTERNS = [re.compile("^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(route)) + "$") for route in ALLOWED]


class ApiRouteReader:
    """Reads the allowed routes of `app` for scripts; `bind` it to the server's loop first."""

    def __init__(self, app: Any):
        self.app = app
        self.internal_key = secrets.token_urlsafe(32)
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def __call__(self, route: str, params: dict[str, Any]) -> Any:
        """The route's JSON answer; HostError for a route off the list or an answer not 2xx."""
        path = allowed_path(route)
        query = _query(params)
        if self._loop is None:
            raise HostError("readRoute is not available before the server has started")
        future = asyncio.run_coroutine_threadsafe(self._get(path, query), self._loop)
        try:
            return future.result(timeout=TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise HostError(f"readRoute('{route}') took longer than {TIMEOUT_S:g} s") from None
        except HostError:
            raise
        except Exception as exc:  # anything else: the script gets a refusal, the server goes on
            raise HostError(f"readRoute('{route}') failed: {type(exc).__name__}") from None

    async def _get(self, path: str, query: dict[str, str]) -> Any:
        transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=False)  # a crash answers 500
        headers = {"Authorization": f"Bearer {self.internal_key}"}
        # a loopback name: every server answers it, whatever address it is bound to (browser.py)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            response = await client.get(f"/api{path}", params=query, headers=headers)
        if response.status_code >= 300:
            raise HostError(f"readRoute('{path}') answered HTTP {response.status_code}: {_detail(response)}")
        return response.json()


def allowed_path(route: str) -> str:
    """`route` as a path under /api (`/api/runs/r1`, `runs/r1` and `/runs/r1` are the same),
    or HostError when it is not one a script may read."""
    path = "/" + route.strip().removeprefix("/").removeprefix("api/").strip("/")
    if path == "/api":
        path = "/"
    segments = [s for s in path.split("/") if s]
    if any(not _SEGMENT.fullmatch(s) or s in (".", "..") for s in segments):
        raise HostError(f"readRoute('{route}'): a path segment holds a character routes never use")
    path = "/" + "/".join(segments)
    if not any(p.match(path) for p in _PATTERNS):
        raise HostError(f"readRoute('{route}') is not allowed; scripts may read: {', '.join(ALLOWED)}")
    return path


def _query(params: dict[str, Any]) -> dict[str, str]:
    if not isinstance(params, dict):
        raise HostError("readRoute's params must be an object of plain values, such as {limit: 5}")
    if len(params) > MAX_PARAMS:
        raise HostError(f"readRoute takes at most {MAX_PARAMS} params")
    query: dict[str, str] = {}
    for key, value in params.items():
        if isinstance(value, bool):
            query[str(key)] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            query[str(key)] = str(value)
        else:
            raise HostError(f"readRoute's param '{key}' must be a string, a number or a boolean")
    return query


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("message") if isinstance(error, dict) else body)[:200]
