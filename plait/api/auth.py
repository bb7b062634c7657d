"""Bearer-token authentication (SPEC §10): tokens come from `plait token create` and are checked
against their digests in the store (`plait.store.tokens`).

Bound to loopback, the server asks for no token unless started with `--require-auth`; bound
to any other address it always asks, and `create_app` refuses to start while no token exists.
`/api/health`, `/docs` and `/openapi.json` stay open: they expose no data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from plait.api.errors import ApiError
from plait.api.state import server_state

_bearer = HTTPBearer(auto_error=False, description="A token from `plait token create --name NAME`.")
HOW = "send `Authorization: Bearer TOKEN` with a token from `plait token create --name NAME`"


@dataclass(frozen=True, slots=True)
class Caller:
    token_name: str | None
    """The token's name; None when the server asks for no token."""

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
    if credentials is None:
        raise ApiError(401, "unauthorized", "this server needs a bearer token", hint=HOW)
    info = await run_in_threadpool(state.store.tokens.verify, credentials.credentials)
    if info is None:
        raise ApiError(401, "unauthorized", "the bearer token is not valid (revoked, or mistyped)", hint=HOW)
    return Caller(info.name)


CallerDep = Annotated[Caller, Depends(caller)]
