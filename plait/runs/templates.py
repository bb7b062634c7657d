"""Previewing a prompt script: run it against a run's node, or against a run input alone.

What its host APIs read in a preview: with a run and a node, exactly what that node would see
in that run (the run's state rebuilt from the store, as on resume); with only an input, that
input (`getVar("input.topic")`, `current` is the input too) and no node outputs. Schema hints
come from the run's graph; without a run, a placeholder says where the hint would go.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from plait.compile.templates import split_path
from plait.engine.compiled import load_compiled
from plait.engine.contracts import OutputContract
from plait.engine.ports import RouteReader
from plait.engine.render import build_view, value_at
from plait.engine.restore import restore
from plait.engine.script_host import RunScriptHost
from plait.engine.state import RunState
from plait.errors import PlaitError, Refusal
from plait.sandbox.scripts import PREVIEW, HostError, ScriptEvent, ScriptLimits, ScriptOutcome, run_script
from plait.store import Store


class PreviewError(PlaitError):
    """The preview cannot run as asked (an unknown run or node)."""


@dataclass(frozen=True, slots=True)
class Script:
    """A script to run, and the schema its stored template says its answer follows."""

    code: str
    schema_target: str | None = None

    def target(self, asked: str | None) -> str | None:
        """The schema a generation parses the answer with: the one asked for, else the template's."""
        return asked or self.schema_target


def stored_script(store: Store, template_id: str) -> Script:
    """A stored template's script, remembered as the last used of its category (the editor
    opens with it)."""
    found = store.templates.get(template_id)
    store.templates.used(found.id)
    return Script(found.script_code, found.schema_target)


class InputHost:
    """A preview's host with only a run input: `input` (and `current`) are that input."""

    def __init__(self, run_input: dict[str, Any], routes: RouteReader | None = None):
        self.names: dict[str, Any] = {"input": run_input, "current": run_input, "nodes": {}, "context": {}}
        self.routes = routes

    def get_var(self, path: str) -> Any:
        dotted = path.strip().replace("/", ".")
        value = value_at(self.names, split_path(dotted)) if dotted else None
        if value is None:
            raise HostError(f"no value at '{path}' in this preview's input (give one with --input-file)")
        return value

    def schema_hint(self, target: str) -> str:
        """No graph, so no schema: a placeholder saying where the real hint comes from (a preview
        against a run's node shows it)."""
        return f"[the hint of schema '{target}' goes here when the script runs in a node of a graph]"

    def contract(self, target: str) -> OutputContract | None:
        """No graph, so no schema to parse an answer with (JSON is still required)."""
        return None

    def read_route(self, route: str, params: dict[str, Any]) -> Any:
        if self.routes is None:
            raise HostError("readRoute is answered by `plait serve`: preview in the workbench to use it")
        return self.routes(route, params)


def node_host(store: Store, run_id: str, node_id: str, routes: RouteReader | None = None) -> RunScriptHost:
    """The host the script would have as node `node_id` of run `run_id` now."""
    record = store.runs.get(run_id)
    compiled = load_compiled(store, record.graph_id, record.graph_version, record.body)
    if node_id not in compiled.nodes:
        raise PreviewError(
            f"run {run_id} has no node '{node_id}'", f"its nodes: {', '.join(compiled.nodes)}", kind=Refusal.NOT_FOUND
        )
    state = RunState(compiled, record.input or {}, run_id=run_id, graph_id=record.graph_id)
    restore(state, store.runs.node_runs(run_id))
    node = compiled.nodes[node_id]
    return RunScriptHost(node, state, build_view(state, node), routes)


def script_host(
    store: Store, run_id: str | None, node_id: str | None, run_input: Any, routes: RouteReader | None = None
) -> InputHost | RunScriptHost:
    """The host a script gets: node `node_id` of run `run_id` as it sees it now, else `run_input`
    alone (a value that is not an object is given as `input.value`)."""
    if run_id is not None and node_id is not None:
        return node_host(store, run_id, node_id, routes)
    return InputHost(run_input if isinstance(run_input, dict) else {"value": run_input}, routes)


def preview(
    code: str,
    host: Any,
    *,
    limits: ScriptLimits = PREVIEW,
    on_event: Callable[[ScriptEvent], None] | None = None,
    cancel: threading.Event | None = None,
) -> ScriptOutcome:
    """Run `code` once with the preview's limits (3 s soft, 5 s hard)."""
    return run_script(code, host, limits, on_event=on_event, cancel=cancel)
