"""The live view of node states on stderr while a run executes (Rich), or plain lines when not a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from plait.engine.event_wire import STREAMED, WireEvent, to_wire, wire_name
from plait.engine.events import (
    Event,
    NodeCompleted,
    NodeFailed,
    NodeSkipped,
    NodeStarted,
    NodeWaiting,
)

STARTED = wire_name(NodeStarted)
NODE_STATUS = {
    STARTED: "running",
    wire_name(NodeCompleted): "completed",
    wire_name(NodeFailed): "failed",
    wire_name(NodeSkipped): "skipped",
    wire_name(NodeWaiting): "waiting",
}
"""The status a node's row shows after an event of that name."""

STYLES = {
    "pending": "dim",
    "running": "yellow",
    "completed": "green",
    "failed": "bold red",
    "skipped": "dim",
    "waiting": "magenta",
}


class LiveView:
    """The node states of one run on stderr while it executes: a live table on a terminal, else
    one line per node event, named as SSE names it. Use it as a context manager and subscribe
    `on_event` to the engine's `EventBus` (or give it the workers' events, `on_wire`); `store` is
    not read."""

    def __init__(self, store: Any, run_id: str):
        self.run_id = run_id
        self.console = Console(stderr=True)
        self.rows: dict[str, dict[str, Any]] = {}
        self.live: Live | None = None
        self.interactive = self.console.is_terminal

    def __enter__(self) -> LiveView:
        if self.interactive:
            self.live = Live(self._table(), console=self.console, refresh_per_second=8, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.update(self._table())
            self.live.__exit__(None, None, None)

    def on_event(self, event: Event) -> None:
        self.on_wire(to_wire(event))

    def on_wire(self, event: WireEvent) -> None:
        if event.kind in STREAMED:  # an answer's text: `plait run --stream` shows it, not this table
            return
        if event.node_id is not None:
            row = self.rows.setdefault(event.node_id, {"status": "pending", "started": None, "took": None, "tokens": 0})
            status = NODE_STATUS.get(event.kind)
            if status:
                row["status"] = status
            if event.kind == STARTED:
                row["started"] = event.at
            elif row["started"] is not None and status in ("completed", "failed", "waiting"):
                row["took"] = event.at - row["started"]
            row["tokens"] += int(event.data.get("tokens_input", 0)) + int(event.data.get("tokens_output", 0))
        if self.live is not None:
            self.live.update(self._table())
        elif event.node_id is not None and event.kind != STARTED:
            took = self.rows[event.node_id]["took"]
            suffix = f" ({took * 1000:.0f} ms)" if took is not None else ""
            sys.stderr.write(f"{event.kind:<14} {event.node_id}{suffix}\n")

    def _table(self) -> Table:
        table = Table(title=f"run {self.run_id}", title_justify="left", expand=False)
        for column in ("node", "status", "time", "tokens"):
            table.add_column(column)
        now = time.time()
        for node_id, row in self.rows.items():
            took = row["took"] if row["took"] is not None else (now - row["started"] if row["started"] else None)
            table.add_row(
                node_id,
                f"[{STYLES.get(row['status'], '')}]{row['status']}",
                f"{took:.2f}s" if took is not None else "",
                str(row["tokens"] or ""),
            )
        return table
