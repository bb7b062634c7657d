"""`client.chat`: what `plait chat` does, from Python, over the client's store and model.

Each turn's designer rounds and each run the chat starts execute on the client's loop like
any run it drives; a draft changes no stored graph until `accept`.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from plait.client._namespaces import _Blocking
from plait.client._sync import _blocking

if TYPE_CHECKING:
    from plait.client._async import AsyncClient
    from plait.runs.chat import Chat as Conversations
    from plait.store.chat import ChatMessage, ChatSession


class AsyncChat:
    """Conversations that design, change and run graphs (docs/chat.md)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._chat: Conversations | None = None

    def _open(self) -> Conversations:
        if self._chat is None:
            from plait.runs.chat import Chat as Conversations
            from plait.runs.chat import ChatPorts

            store, engines = self._client._open()
            engine = engines.default

            async def drive(run_id: str) -> Any:
                return await self._client._drive(run_id, engine)

            ports = ChatPorts(
                drive=drive, check_graph=engine.check_graph, check_run=engine.check_executable, llm=engine.llm
            )
            self._chat = Conversations(store, ports)
        return self._chat

    async def open(self, title: str | None = None, graph: str | None = None) -> ChatSession:
        """A new conversation, working on stored graph `graph` when given."""
        return self._client._refused(self._open().open, title, graph)

    async def sessions(self, limit: int = 100) -> builtins.list[ChatSession]:
        """The conversations, the most recently active first."""
        return self._client._refused(self._client.store.chat.list_sessions, limit)

    async def history(self, session_id: str, after: int = 0) -> builtins.list[ChatMessage]:
        """The messages of a conversation numbered after `after`."""
        self._client._refused(self._open().session, session_id)
        return self._client.store.chat.messages(session_id, after_seq=after)

    async def send(self, session_id: str, text: str) -> builtins.list[ChatMessage]:
        """Send a message; the messages its turn stored (a draft, a question card, an error)."""
        chat = self._open()
        turn = self._client._refused(chat.take_message, session_id, text)
        return await chat.design(turn)

    async def answer(self, session_id: str, answers: dict[str, Any]) -> builtins.list[ChatMessage]:
        """Answer the open question card (question id -> answer); the messages the turn stored."""
        chat = self._open()
        turn = self._client._refused(chat.take_answers, session_id, answers)
        return await chat.design(turn)

    async def accept(self, session_id: str, draft_id: str, *, fork: bool = False) -> ChatMessage:
        """Store a valid draft: a new version of its graph, a fork of it, or a new graph."""
        return self._client._refused(self._open().accept, session_id, draft_id, fork=fork)

    async def reject(self, session_id: str, draft_id: str) -> ChatMessage:
        """Drop a draft; its graph is left exactly as it was."""
        return self._client._refused(self._open().reject, session_id, draft_id)

    async def run(
        self, session_id: str, input: dict[str, Any] | None = None, graph: str | None = None
    ) -> builtins.list[ChatMessage]:
        """Run the chat's graph (or `graph`) and wait for it: the message that started it, and
        the one saying how it ended."""
        chat = self._open()
        started = self._client._refused(chat.start, session_id, dict(input or {}), graph)
        assert started.run_id is not None
        return [started, await chat.follow(session_id, started.run_id)]


class Chat(_Blocking[AsyncChat]):
    """`Client.chat`: the methods of `AsyncChat`, each returning its result."""

    open = _blocking(AsyncChat.open)
    sessions = _blocking(AsyncChat.sessions)
    history = _blocking(AsyncChat.history)
    send = _blocking(AsyncChat.send)
    answer = _blocking(AsyncChat.answer)
    accept = _blocking(AsyncChat.accept)
    reject = _blocking(AsyncChat.reject)
    run = _blocking(AsyncChat.run)
