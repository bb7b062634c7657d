"""The chat inside the server: one `Chat` over the server's store and executor, the turns it
carries out in the background, and each session's live listeners.

A turn (a message, or answers to a question card) is taken at once, so the request that sends
it is refused or accepted with what was stored; its designer rounds then run as a task here,
one turn per session at a time. What happens reaches the session's event streams: each stored
message (numbered by its place in the session, so a stream resumes from `Last-Event-ID`), and,
unnumbered, the progress of the designer's rounds and the events of every run the chat starts,
streamed answers included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from plait.api.events import ENDING_KINDS, EventLog, RunEvent
from plait.api.executor import RunExecutor
from plait.api.history import history
from plait.errors import PlaitError, Refusal
from plait.model.graph import GraphDef
from plait.runs.chat import Chat, ChatPorts, Turn
from plait.store import Store

log = logging.getLogger("plait.api")

STOPS = ENDING_KINDS | {"run:paused"}
"""After one of these a run the chat follows has nothing more to say for now."""
BUSY_WAIT_S = 2.0
"""How long a new message waits for the session's turn in flight before the answer is 409."""
LISTENER_QUEUE = 1_000
"""Events kept for a slow listener; past that it misses progress (never messages: those are
read from the store by number)."""


class TurnBusy(PlaitError):
    """The session is carrying out a turn already."""


class ChatHub:
    """The server's chat: its `Chat`, its turns in flight and its listeners, per session."""

    def __init__(self, store: Store, executor: RunExecutor, events: EventLog) -> None:
        self.executor = executor
        self.events = events
        self.chat = Chat(
            store,
            ChatPorts(
                drive=self._drive,
                check_graph=self._check_graph,
                check_run=executor.preflight,
                llm=executor.llm,
                notify=self.notify,
            ),
        )
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._listeners: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}
        self._turns: dict[str, asyncio.Task[Any]] = {}
        self._follows: set[asyncio.Task[Any]] = set()

    # -- what the chat needs ----------------------------------------------------------------------

    async def _drive(self, run_id: str) -> None:
        self.executor.launch(run_id, fresh=True, stream=True)
        await self.executor.settled(run_id)

    def _check_graph(self, graph: GraphDef) -> None:
        self.executor.engine.check_graph(graph)

    # -- turns ------------------------------------------------------------------------------------

    async def idle(self, session_id: str) -> None:
        """Wait up to `BUSY_WAIT_S` for the session's turn in flight to end; then refuse (409).
        A client that answers the moment it reads a turn's last message finds the turn ending,
        not busy."""
        task = self._turns.get(session_id)
        if task is not None:
            await asyncio.wait({task}, timeout=BUSY_WAIT_S)
        if session_id in self._turns and not self._turns[session_id].done():
            raise TurnBusy(
                "this chat is still working on the last message",
                "wait for its answer on the chat's event stream, then send again",
                kind=Refusal.CONFLICT,
            )

    async def begin(self, session_id: str, take: Callable[[], Turn]) -> Turn:
        """Start a turn: once the session is idle, `take` stores the person's message or answers
        (on a worker thread), and the turn's rounds go on in the background."""
        await self.idle(session_id)
        turn = await asyncio.to_thread(take)
        self.carry_out(session_id, self.chat.design(turn))
        return turn

    def carry_out(self, session_id: str, work: Coroutine[Any, Any, Any]) -> None:
        """Run a turn in the background of this server: the session's one turn in flight."""
        task = asyncio.create_task(self._guarded(session_id, work), name=f"plait-chat-{session_id}")
        self._turns[session_id] = task
        task.add_done_callback(
            lambda done: self._turns.pop(session_id, None) if self._turns.get(session_id) is done else None
        )

    def follow(self, session_id: str, work: Coroutine[Any, Any, Any]) -> None:
        """Follow a run the chat started, in the background: the conversation goes on meanwhile
        (a person asks about a run while it runs)."""
        task = asyncio.create_task(self._guarded(session_id, work), name=f"plait-chat-run-{session_id}")
        self._follows.add(task)
        task.add_done_callback(self._follows.discard)

    async def _guarded(self, session_id: str, work: Coroutine[Any, Any, Any]) -> None:
        """A turn that fails unexpectedly leaves an error message in the chat, never a stuck session."""
        try:
            await work
        except Exception as exc:  # the server goes on; the chat says what happened
            log.exception("chat %s: the turn failed", session_id)
            text = f"Something went wrong while working on this: {exc}"
            await asyncio.to_thread(
                self.chat.store.chat.add_message, session_id, "assistant", "error", {"text": text, "code": "internal"}
            )
            self.notify(session_id, {"event": "message"})

    async def aclose(self) -> None:
        tasks = [*self._turns.values(), *self._follows]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- listeners --------------------------------------------------------------------------------

    def listen(self, session_id: str) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(LISTENER_QUEUE)
        self._listeners.setdefault(session_id, set()).add(queue)
        return queue

    def forget(self, session_id: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        listeners = self._listeners.get(session_id)
        if listeners is not None:
            listeners.discard(queue)
            if not listeners:
                del self._listeners[session_id]

    def notify(self, session_id: str, event: dict[str, Any]) -> None:
        """Tell the session's listeners; a run the chat starts has its events passed on too.
        Called from the chat's worker threads as well: the telling happens on the event loop."""
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self.notify, session_id, event)
            return
        for queue in self._listeners.get(session_id, ()):
            _offer(queue, event)
        run_id = event.get("run_id") if event.get("event") in ("designer_run", "run") else None
        if run_id and self._listeners.get(session_id):
            self._loop.create_task(self._pass_on(session_id, run_id), name=f"plait-chat-run-{run_id}")

    async def _pass_on(self, session_id: str, run_id: str) -> None:
        """Pass the run's events to the session's listeners until the run ends or waits."""
        if not self.events.has(run_id):
            self.events.open(run_id, await asyncio.to_thread(history, self.chat.store, run_id))
        backlog, queue = self.events.listen(run_id, 0)
        try:
            for event in backlog:
                if self._tell(session_id, event):
                    return
            while self._listeners.get(session_id):
                if self._tell(session_id, await queue.get()):
                    return
        finally:
            self.events.forget(run_id, queue)

    def _tell(self, session_id: str, event: RunEvent) -> bool:
        """Pass one run event on; True when it was the run's last for now."""
        data = event.to_json()
        for queue in self._listeners.get(session_id, ()):
            _offer(queue, {"event": "run_event", "kind": event.kind, "data": data})
        return event.kind in STOPS


def _offer(queue: asyncio.Queue[dict[str, Any]], event: dict[str, Any]) -> None:
    with contextlib.suppress(asyncio.QueueFull):  # a listener that stopped reading loses progress, not messages
        queue.put_nowait(event)
