"""Bearer-token authentication: tokens come from `plait token create` and are checked
against their digests in the store (`plait.store.tokens`).

Bound to loopback, the server asks for no token unless started with `--require-auth`; bound
to any other address it always asks, and `create_app` refuses to start while no token exists.
`/api/health`, `/docs` and `/openapi.json` stay open: they expose no data.

A token is checked when a request arrives; an event stream outlives that check, so open streams
are watched (`TokenWatch`): the store is polled for the tokens streaming now, and the streams of
one revoked (by `plait token revoke`, maybe in another process) end within `REVOKE_POLL_S`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from plait.api.errors import ApiError
from plait.api.route_reader import ApiRouteReader
from plait.api.state import server_state
from plait.store.tokens import TokenRepository

_bearer = HTTPBearer(auto_error=False, description="A token from `plait token create --name NAME`.")
INTERNAL = "plait.readRoute"
"""The caller name of a prompt script's `readRoute` request."""
HOW = "send `Authorization: Bearer TOKEN` with a token issued by this server's operator"


REVOKE_POLL_S = 0.25
"""How often the store is asked whether the tokens of open streams still exist."""
log = logging.getLogger("plait.api")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who made a request, as far as the server knows: the token it came with, if one is needed."""

    token_name: str | None
    """The token's name; None when the server asks for no token."""
    token_id: str | None = None
    """The token's id (what `TokenWatch` follows); None when the server asks for no token."""

    @property
    def by(self) -> str:
        """Who corrections are recorded as (`override_by`, the ledger's `by`)."""
        return f"api:{self.token_name}" if self.token_name else "api"


async def caller(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Caller:
    """The authenticated caller; 401 when a token is needed and missing or not valid. Async, so
    that a server that asks for no token spends no thread hop on it (see `get_state`)."""
    state = server_state(request)
    if not state.settings.auth_required:
        return Caller(None)
    if credentials is not None and state.routes is not None and internal(credentials.credentials, state.routes):
        return Caller(INTERNAL)
    if credentials is None:
        raise ApiError(401, "unauthorized", "this server needs a bearer token", hint=HOW)
    info = await run_in_threadpool(state.store.tokens.verify, credentials.credentials)
    if info is None:
        raise ApiError(401, "unauthorized", "the bearer token is not valid (revoked, or mistyped)", hint=HOW)
    return Caller(info.name, info.id)


def internal(token: str, routes: ApiRouteReader) -> bool:
    """Whether a request comes from this process's own prompt scripts (`readRoute`), which
    carry a key that never leaves the process."""
    return secrets.compare_digest(token.encode(), routes.internal_key.encode())


CallerDep = Annotated[Caller, Depends(caller)]


class TokenWatch:
    """Tells long-lived responses (event streams) when the token they were opened with is revoked.

    One poll for the whole server, running only while something is watched: a query of the
    small token table every `REVOKE_POLL_S`, however many streams are open. A poll that fails
    counts as a revocation (fail closed): the client reconnects and is checked again."""

    def __init__(self, tokens: TokenRepository) -> None:
        self._tokens = tokens
        self._watched: dict[str, set[Callable[[], None]]] = {}
        self._task: asyncio.Task[None] | None = None

    def watch(self, token_id: str, on_revoked: Callable[[], None]) -> Callable[[], None]:
        """Call `on_revoked` (on this event loop) once the token is revoked; returns the undo."""
        self._watched.setdefault(token_id, set()).add(on_revoked)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll(), name="plait-token-watch")

        def unwatch() -> None:
            callbacks = self._watched.get(token_id)
            if callbacks is not None:
                callbacks.discard(on_revoked)
                if not callbacks:
                    del self._watched[token_id]

        return unwatch

    async def _poll(self) -> None:
        while self._watched:
            await asyncio.sleep(REVOKE_POLL_S)
            try:
                live = {t.id for t in await asyncio.to_thread(self._tokens.list)}
            except (SQLAlchemyError, OSError) as exc:
                log.warning("cannot check the tokens of open event streams (%s): closing them", exc)
                live = set()
            for token_id in [t for t in self._watched if t not in live]:
                for on_revoked in self._watched.pop(token_id):
                    on_revoked()


def token_watch(request: Request) -> TokenWatch:
    """This server's `TokenWatch` (made on first use)."""
    watch: TokenWatch | None = getattr(request.app.state, "token_watch", None)
    if watch is None:
        watch = TokenWatch(server_state(request).store.tokens)
        request.app.state.token_watch = watch
    return watch
