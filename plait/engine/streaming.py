"""A node's answer as it arrives: the model's text pieces, coalesced into a few events a second.

A model sends one piece per token; a browser or a terminal needs a few updates a second, not
hundreds. `NodeStream` emits the first piece of one node's answer at once (the time to the first
text is the model's), then gathers the pieces and emits them as `NodeDelta` events at most every
`interval_s`; for an object answer, also what the text parses to so far
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


class AnswerRejected(Exception):
    """A field of a streaming answer broke the node's contract (`check_while_streaming`): raised
    from the provider's `on_delta`, so the call stops where the answer is."""

    def __init__(self, problems: list[str], text: str) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        self.text = text


class NodeStream:
    """The answer of one node's model calls, passed on as coalesced events (see the module)."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        run_id: str,
        node_id: str,
        *,
        parse: bool,
        check: Callable[[dict[str, Any]], list[str]] | None = None,
        interval_s: float = INTERVAL_S,
    ) -> None:
        """`parse`: the answer is a JSON object; each delta also carries what it parses to.
        `check`: the problems of the fields complete so far (an object of them), checked as
        fields complete; any stops the call (`AnswerRejected`)."""
        self._emit = emit
        self._run_id = run_id
        self._node_id = node_id
        self._parse = parse
        self._interval_s = interval_s
        self._pending: list[str] = []
        self._text = ""
        self._parsed: Any = None
        self._timer: asyncio.TimerHandle | None = None
        self._flushed_at = float("-inf")
        """When the last delta went out (the loop's clock)."""
        self._check = check
        self._checked = 0
        """Complete fields already checked (a new one completing is checked)."""
        self._length = 0
        """Characters of the current attempt so far."""
        self._parsed_at = (0, float("-inf"))
        """The length and the loop time of the last check's parse (see `_check_due`)."""
        self.attempt = 1

    def piece(self, text: str) -> None:
        """A piece of the answer (the provider's `on_delta`, on the loop's thread)."""
        if not text:
            return
        self._pending.append(text)
        if self._timer is None:  # the first piece after a quiet spell goes out at once; later ones wait their turn
            loop = asyncio.get_running_loop()
            wait = self._flushed_at + self._interval_s - loop.time()
            if wait <= 0:
                self.flush()
            else:
                self._timer = loop.call_later(wait, self.flush)
        self._length += len(text)
        if self._check is not None and self._check_due():
            self._check_fields()

    def flush(self) -> None:
        """Emit what arrived since the last delta (nothing when nothing did)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        self._flushed_at = asyncio.get_running_loop().time()
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
        self._text, self._parsed, self._checked = "", None, 0
        self._length, self._parsed_at = 0, (0, float("-inf"))
        self.attempt += 1
        if shown:
            self._emit(NodeStreamReset(self._run_id, self._node_id, reason=reason, attempt=self.attempt))

    def _check_due(self) -> bool:
        """Whether to parse the answer again: once it has doubled since the last parse, or an
        interval has passed. Each parse reads the whole answer, so parsing at every piece or
        field end would cost the square of its length (a model told to write a million short fields would
        hold the event loop); this way the parses add up to about twice the answer, plus a few
        a second."""
        length, at = self._parsed_at
        now = asyncio.get_running_loop().time()
        if self._length < 2 * length and now - at < self._interval_s:
            return False
        self._parsed_at = (self._length, now)
        return True

    def _check_fields(self) -> None:
        """Check the fields complete so far; raise AnswerRejected when one breaks the contract.
        A field is complete once the value of the next one has begun (or the object is closed):
        the parse that keeps only complete values ("on") then has fewer fields than the one that
        keeps the string being written ("trailing-strings"), or the same with the last one whole."""
        assert self._check is not None
        text = self._text + "".join(self._pending)
        raw = text.encode()
        try:
            whole = jiter.from_json(raw, partial_mode="on")
            started = jiter.from_json(raw, partial_mode="trailing-strings")
        except ValueError:  # not JSON, or not yet: the check at the end says so
            return
        if not isinstance(whole, dict) or not isinstance(started, dict):
            return
        fields = list(whole.items())
        complete = fields if len(started) > len(whole) or _closed(raw) else fields[:-1]
        if len(complete) <= self._checked:
            return
        self._checked = len(complete)
        problems = self._check(dict(complete))
        if problems:
            raise AnswerRejected(problems, text)

    def _emit_partial(self) -> None:
        try:
            value = jiter.from_json(self._text.encode(), partial_mode="trailing-strings")
        except ValueError:  # not JSON (yet, or at all: the contract check says so at the end)
            return
        if isinstance(value, dict) and value and value != self._parsed:  # {} tells nothing yet
            self._parsed = value
            self._emit(NodePartial(self._run_id, self._node_id, value=value, attempt=self.attempt))


def _closed(raw: bytes) -> bool:
    """Whether the object is complete (then its last field is too)."""
    try:
        jiter.from_json(raw)
    except ValueError:
        return False
    return True
