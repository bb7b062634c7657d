"""A node's answer as it arrives: the model's text pieces, coalesced into a few events a second.

A model sends one piece per token; a browser or a terminal needs a few updates a second, not
hundreds. `NodeStream` gathers the pieces of one node's answer and emits them as `NodeDelta`
events at most every `interval_s`; for an object answer, also what the text parses to so far
(`NodePartial`). When the node asks again (the answer was invalid, the stream broke off), it
emits `NodeStreamReset` so that whoever shows the text clears it. Streams only ever emit events:
the committed output stays the record, and cost is counted from the model's reported usage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import jiter

from plait.engine.events import Event, NodeDelta, NodePartial, NodeStreamReset

INTERVAL_S = 0.25
"""The most often one node's stream emits: pieces arriving in between go out together."""
FOLLOWED = 10_000
"""Top-level runs a process keeps a stream choice for (a choice told to every worker is kept
by those that never execute the run, until newer ones push it out)."""


@dataclass(frozen=True, slots=True)
class StreamChoice:
    """Which nodes' answers a caller follows as they arrive, besides the nodes the graph marks
    `stream: true`: the nodes named (in the run and in its child runs), or every node (None)."""

    nodes: frozenset[str] | None = None

    def covers(self, node_id: str) -> bool:
        return self.nodes is None or node_id in self.nodes

    @classmethod
    def of(cls, choice: bool | str | Iterable[str] | None) -> StreamChoice | None:
        """From what a caller passes: True (every node), node ids, or None/False (the graph's own)."""
        if choice is None or choice is False:
            return None
        if choice is True:
            return cls()
        return cls(frozenset([choice] if isinstance(choice, str) else choice))


class NodeStream:
    """The answer of one node's model calls, passed on as coalesced events (see the module)."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        run_id: str,
        node_id: str,
        *,
        parse: bool,
        interval_s: float = INTERVAL_S,
    ) -> None:
        """`parse`: the answer is a JSON object; each delta also carries what it parses to."""
        self._emit = emit
        self._run_id = run_id
        self._node_id = node_id
        self._parse = parse
        self._interval_s = interval_s
        self._pending: list[str] = []
        self._text = ""
        self._parsed: Any = None
        self._timer: asyncio.TimerHandle | None = None
        self.attempt = 1

    def piece(self, text: str) -> None:
        """A piece of the answer (the provider's `on_delta`, on the loop's thread)."""
        if not text:
            return
        self._pending.append(text)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval_s, self.flush)

    def flush(self) -> None:
        """Emit what arrived since the last delta (nothing when nothing did)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        chunk = "".join(self._pending)
        self._pending.clear()
        self._text += chunk
        self._emit(NodeDelta(self._run_id, self._node_id, text=chunk, attempt=self.attempt))
        if self._parse:
            self._emit_partial()

    def again(self, reason: str) -> None:
        """The node asks the model again: what was streamed of the last answer is void."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        shown = bool(self._text)
        self._pending.clear()
        self._text, self._parsed = "", None
        self.attempt += 1
        if shown:
            self._emit(NodeStreamReset(self._run_id, self._node_id, reason=reason, attempt=self.attempt))

    def _emit_partial(self) -> None:
        try:
            value = jiter.from_json(self._text.encode(), partial_mode="trailing-strings")
        except ValueError:  # not JSON (yet, or at all: the contract check says so at the end)
            return
        if isinstance(value, dict) and value != self._parsed:
            self._parsed = value
            self._emit(NodePartial(self._run_id, self._node_id, value=value, attempt=self.attempt))
