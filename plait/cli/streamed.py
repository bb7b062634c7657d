"""`plait run --stream`: the answers of the streaming nodes on stderr as they arrive.

stdout keeps only the result, so a script still pipes it; the text a person reads while it is
written goes to stderr, each node's under a header, with a line when a node asks again (what
was shown of that answer is void) and when it ends.
"""

from __future__ import annotations

import sys
from typing import TextIO

from plait.engine.event_wire import WireEvent, to_wire, wire_name
from plait.engine.events import Event, NodeCompleted, NodeDelta, NodeFailed, NodeStreamReset, NodeWaiting

_DELTA = wire_name(NodeDelta)
_RESET = wire_name(NodeStreamReset)
_ENDS = {wire_name(NodeCompleted): "done", wire_name(NodeFailed): "failed", wire_name(NodeWaiting): "waiting"}


class StreamView:
    """Writes the streamed text of a run's nodes to `out` (stderr); subscribe `on_event` to the
    engine's bus, or give it the workers' events (`on_wire`)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self._current: str | None = None
        """The node whose text was written last (its line may be open)."""
        self._streamed: set[str] = set()

    def on_event(self, event: Event) -> None:
        if isinstance(event, (NodeDelta, NodeStreamReset, NodeCompleted, NodeFailed, NodeWaiting)):
            self.on_wire(to_wire(event))

    def on_wire(self, event: WireEvent) -> None:
        if event.node_id is None:
            return
        node = " › ".join([*(above for _, above in event.path), event.node_id])  # a child run's node: where
        if event.kind == _DELTA:
            if node != self._current:
                self._close_line()
                self.out.write(f"── {node} ──\n")
                self._current = node
            self._streamed.add(node)
            self.out.write(str(event.data.get("text", "")))
        elif event.kind == _RESET and node in self._streamed:
            self._close_line()
            self.out.write(f"── {node}: asked again ({event.data.get('reason', '')}) ──\n")
            self._current = None
        elif event.kind in _ENDS and node in self._streamed:
            self._close_line()
            self.out.write(f"── {node}: {_ENDS[event.kind]} ──\n")
            self._streamed.discard(node)
            self._current = None
        self.out.flush()

    def _close_line(self) -> None:
        if self._current is not None:
            self.out.write("\n")
            self._current = None
