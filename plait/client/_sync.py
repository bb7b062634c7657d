"""`Client`: the synchronous twin of `AsyncClient`, over the same client and the same engine.

Each method runs its `AsyncClient` counterpart on the client's own loop thread (`Portal`), so it
works the same in a script and inside a running loop (Jupyter). A run started with `start`
keeps executing on that thread while the caller goes on; `wait` blocks until it stops.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from plait.client._async import AsyncClient
from plait.client._portal import Portal

if TYPE_CHECKING:
    from plait.engine.events import Event
    from plait.llm.provider import Provider
    from plait.store import Store

P = ParamSpec("P")
T = TypeVar("T")
A = TypeVar("A")
A_co = TypeVar("A_co", covariant=True)


class Twin(Protocol[A_co]):
    """A blocking twin (`Client`, or one of its namespaces): `_client` is the async object (the
    `AsyncClient`, its namespace) whose methods it runs, each on `_portal`'s loop."""

    @property
    def _portal(self) -> Portal: ...
    @property
    def _client(self) -> A_co: ...


def _blocking(method: Callable[Concatenate[A, P], Coroutine[Any, Any, T]]) -> Callable[Concatenate[Twin[A], P], T]:
    """`method` of an async class (`AsyncClient.run`) as a blocking method of its twin
    (`Client.run`), with its signature and docs."""

    def call(self: Twin[A], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._portal.call(method(self._client, *args, **kwargs))

    functools.update_wrapper(call, method)  # its signature and docs, for help() and editors
    call.__qualname__ = method.__qualname__.removeprefix("Async")
    return call


class Client:
    """Runs graphs, corrects them and reads them back, from code that is not async. The same
    arguments and methods as `AsyncClient`, each returning its result instead of a coroutine."""

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        llm: str | Provider | None = None,
        config: str | os.PathLike[str] | None = None,
        cache: bool = True,
    ) -> None:
        from plait.client._chat import Chat
        from plait.client._evals import Evals
        from plait.client._knowledge import Knowledge, Memory
        from plait.client._namespaces import Schedules, Templates, Tokens  # they import `_blocking` from here
        from plait.client._settings import Settings
        from plait.client._skills import Skills

        self._portal = Portal()
        self._client = AsyncClient(db, llm=llm, config=config, cache=cache)
        self.templates = Templates(self._portal, self._client.templates)
        self.schedules = Schedules(self._portal, self._client.schedules)
        self.tokens = Tokens(self._portal, self._client.tokens)
        self.chat = Chat(self._portal, self._client.chat)
        self.kb = Knowledge(self._portal, self._client.kb)
        self.memory = Memory(self._portal, self._client.memory)
        self.evals = Evals(self._portal, self._client.evals)
        self.skills = Skills(self._portal, self._client.skills)
        self.settings = Settings(self._portal, self._client.settings)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the runs still executing here (each stays resumable) and close everything."""
        try:
            self._portal.call(self._client.aclose())
        finally:
            self._portal.close()

    @property
    def store(self) -> Store:
        """The store this client reads and writes (opened on first use)."""
        return self._portal.call(_store(self._client))

    def events(self, run_id: str) -> Iterator[Event]:
        """The events of a run this client executes, then each new one until it stops."""
        return self._portal.iterate(self._client.events(run_id))

    save_graph = _blocking(AsyncClient.save_graph)
    get_graph = _blocking(AsyncClient.get_graph)
    list_graphs = _blocking(AsyncClient.list_graphs)
    graph_versions = _blocking(AsyncClient.graph_versions)
    export_graph = _blocking(AsyncClient.export_graph)
    delete_graph = _blocking(AsyncClient.delete_graph)
    promote_graph = _blocking(AsyncClient.promote_graph)
    graph_promotions = _blocking(AsyncClient.graph_promotions)
    fork = _blocking(AsyncClient.fork)
    fork_diff = _blocking(AsyncClient.fork_diff)
    merge = _blocking(AsyncClient.merge)
    drafts = _blocking(AsyncClient.drafts)
    draft = _blocking(AsyncClient.draft)
    discard_draft = _blocking(AsyncClient.discard_draft)
    start = _blocking(AsyncClient.start)
    run = _blocking(AsyncClient.run)
    wait = _blocking(AsyncClient.wait)
    resume = _blocking(AsyncClient.resume)
    cancel = _blocking(AsyncClient.cancel)
    delete_run = _blocking(AsyncClient.delete_run)
    dry_run = _blocking(AsyncClient.dry_run)
    batch = _blocking(AsyncClient.batch)
    override = _blocking(AsyncClient.override)
    rerun = _blocking(AsyncClient.rerun)
    review = _blocking(AsyncClient.review)
    rollback = _blocking(AsyncClient.rollback)
    get_run = _blocking(AsyncClient.get_run)
    list_runs = _blocking(AsyncClient.list_runs)
    ledger = _blocking(AsyncClient.ledger)
    diff = _blocking(AsyncClient.diff)
    check = _blocking(AsyncClient.check)
    replay = _blocking(AsyncClient.replay)


async def _store(client: AsyncClient) -> Store:
    return client.store
