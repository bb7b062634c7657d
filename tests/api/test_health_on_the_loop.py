"""`/api/health` answers while every worker thread of the server is taken.

A busy server serves its data requests on the thread pool (40 threads); a health check that
waited for a thread there answered in 1-2 s with 200 clients, long enough for a load balancer to
take a busy server for a dead one. It reads only memory, so it is served on the event loop.
The check: every token of the loop's thread limiter held, `/api/health` still answers, and a
route that needs a thread (`/api/providers`) does not: the same harness would catch a health
route made sync again."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import httpx
import pytest
from anyio.to_thread import current_default_thread_limiter
from fastapi import FastAPI
from fastapi.testclient import TestClient

from plait.api import create_app
from plait.store import Store


def _with_every_thread_taken(app: FastAPI, path: str, within_s: float) -> Callable[[], Coroutine[Any, Any, int | None]]:
    async def ask() -> int | None:
        """The status of `path` asked with the thread pool full; None if it did not answer `within_s`."""
        limiter = current_default_thread_limiter()
        holders = [object() for _ in range(int(limiter.total_tokens))]
        for holder in holders:
            await limiter.acquire_on_behalf_of(holder)
        try:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                with anyio.move_on_after(within_s):
                    return (await client.get(path)).status_code
                return None
        finally:
            for holder in holders:
                limiter.release_on_behalf_of(holder)

    return ask


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # no route here reads the store
def test_health_answers_while_every_worker_thread_is_taken(store: Store) -> None:
    app = create_app(store=store)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.portal is not None
        assert client.portal.call(_with_every_thread_taken(app, "/api/health", within_s=60)) == 200
        # a sync route waits for a thread: it cannot answer, however long it is given
        assert client.portal.call(_with_every_thread_taken(app, "/api/providers", within_s=1)) is None
        assert client.get("/api/providers").status_code == 200  # and answers once one is free
