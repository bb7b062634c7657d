"""What the executors need of the engine around them, as protocols the runtime is built with.

The engine (`runner.py`) makes these collaborators and hands them to `Runtime` when it builds
it; a runtime without an engine (a dry run, a test) gets the refusing defaults here, which say
what is missing when an executor asks. No module this one names imports it back (the engine's
run state, outcomes, events): so the runtime does not depend on the engine that owns it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from plait.engine.events import Event

if TYPE_CHECKING:
    from plait.engine.outcome import RunOutcome
    from plait.engine.state import CompiledRun, RunState
    from plait.model.enums import RunStatus
    from plait.model.nodes import NodeBase
    from plait.store import ChildOf, RunRecord, Store


@dataclass(frozen=True, slots=True)
class ChildGraph:
    """What a node's children run (and what `Engine.start` runs): a graph version, or a body in
    one, compiled for execution."""

    graph_id: str
    version: int
    schema_version: str
    slug: str
    body: str | None
    compiled: CompiledRun

    def describe(self) -> dict[str, Any]:
        """For the node's input snapshot."""
        return {"graph_id": self.graph_id, "graph": self.slug, "version": self.version, "body": self.body}


class ChildRunner(Protocol):
    """Finds, starts and continues the child runs of SUBGRAPH, MAP and LOOP nodes
    (`plait.engine.child_runs.ChildRuns`)."""

    def target(self, state: RunState, node: NodeBase) -> ChildGraph:
        """The graph the node's children run in this activation; ChildGraphError if none may."""
        ...

    def outcomes(self, state: RunState, node: NodeBase) -> dict[int, tuple[str, RunStatus, Any]]:
        """Key -> (run id, status, output) of the children this activation has already."""
        ...

    async def run(
        self,
        state: RunState,
        node: NodeBase,
        target: ChildGraph,
        key: int,
        run_input: Any,
        existing: str | None = None,
    ) -> tuple[RunOutcome, RunRecord | None]:
        """Drive child `key` to its end or its pause: its outcome, and a paused child's record."""
        ...

    def spent(self, state: RunState, node: NodeBase) -> tuple[int, int, float]:
        """Input tokens, output tokens and cost this activation's children spent."""
        ...

    def failure(self, outcome: RunOutcome) -> str:
        """Why a child failed, in the words of the node that failed in it."""
        ...


class RunDriver(Protocol):
    """What child runs need of the engine that drives them (`plait.engine.runner.Engine`)."""

    @property
    def store(self) -> Store: ...

    def compiled_for(self, graph_id: str, version: int, body: str | None = None) -> CompiledRun: ...

    async def start_child(self, target: ChildGraph, run_input: dict[str, Any], child: ChildOf) -> RunOutcome: ...

    async def run(self, run_id: str) -> RunOutcome: ...


SubRun = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""(stored graph id or slug, input) -> the sub-run's output; raises when it did not complete."""


EventSink = Callable[[Event], None]
"""Where executors report progress (a MAP's items, a repair): the engine's `EventBus.emit`."""

TemplateLookup = Callable[[str], str | None]
"""A stored prompt-script template's code by its id (None: not stored); raises
TemplatesUnavailable where no templates are stored at all."""

RouteReader = Callable[[str, dict[str, Any]], Any]
"""(a GET route of Plait's own HTTP API, query parameters) -> its JSON answer; raises HostError
for a route it does not allow."""


class TemplatesUnavailable(LookupError):
    """This runtime reads no stored templates (the message says so)."""


class NoChildRuns:
    """The child runs of a runtime that belongs to no engine: each use refuses."""

    def target(self, state: RunState, node: NodeBase) -> ChildGraph:
        raise _no_children()

    def outcomes(self, state: RunState, node: NodeBase) -> dict[int, tuple[str, RunStatus, Any]]:
        raise _no_children()

    async def run(
        self,
        state: RunState,
        node: NodeBase,
        target: ChildGraph,
        key: int,
        run_input: Any,
        existing: str | None = None,
    ) -> tuple[RunOutcome, RunRecord | None]:
        raise _no_children()

    def spent(self, state: RunState, node: NodeBase) -> tuple[int, int, float]:
        raise _no_children()

    def failure(self, outcome: RunOutcome) -> str:
        raise _no_children()


def _no_children() -> RuntimeError:
    return RuntimeError("this runtime starts no child runs (it belongs to no engine)")


NO_CHILD_RUNS: ChildRunner = NoChildRuns()


def no_templates(template_id: str) -> str | None:
    raise TemplatesUnavailable("this engine reads no stored templates")


def dropped(event: Event) -> None:
    """The event sink of a runtime nobody listens to."""
