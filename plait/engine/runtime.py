"""What executors share: the provider, the sandbox, limits; and the result an executor hands back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plait.engine.inline_tools import no_sub_runs
from plait.engine.ports import NO_CHILD_RUNS, dropped, no_templates
from plait.engine.script_host import no_routes
from plait.engine.state import Phase
from plait.engine.streaming import FOLLOWED, StreamChoice
from plait.llm.tokens import ESTIMATE, TokenCounter

if TYPE_CHECKING:
    from plait.config import CodeConfig, JailConfig, McpServerConfig, ToolsConfig
    from plait.engine.fewshot import FewshotLookup, FewshotSource
    from plait.engine.ports import ChildRunner, EventSink, RouteReader, SubRun, TemplateLookup
    from plait.engine.state import RunState
    from plait.llm.provider import Provider
    from plait.llm.types import ChatRequest
    from plait.sandbox import JsSandbox
    from plait.sandbox.scripts import ScriptPool
    from plait.store.cache import CacheRepository
    from plait.store.knowledge import KnowledgeRepository
    from plait.store.knowledge_index import KnowledgeIndex
    from plait.tools.mcp import McpSessions


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """A validated answer to remember, committed with the node run that got it."""

    key: str
    provider: str
    model: str
    response: dict[str, Any]


@dataclass
class NodeResult:
    """What an executor hands back for one node activation; the engine commits it as one unit.

    `phase` is COMPLETED (`output` is the value to store), FAILED (`output` is None; `error`
    holds `kind` and `message`, and `details` and `last_output` where there are some) or WAITING
    (a HUMAN_REVIEW parked for a person). `snapshot` becomes the node run's input snapshot and
    `attempts` its attempts; the token and cost totals cover every attempt. `cache_entry` is
    written to the response cache only with a COMPLETED result. Executors build it with
    `completed` or `failed` and never write to the store; before committing, the engine makes
    it storable (`plait.engine.guard.committable`: an output the store cannot hold becomes a
    failure naming the field). Mutable, owned by the one node task that made it.
    """

    phase: Phase
    output: Any = None
    snapshot: dict[str, Any] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    tokens_input: int = 0
    tokens_output: int = 0
    cost_usd: float = 0.0
    cache_entry: CacheEntry | None = None

    @classmethod
    def completed(
        cls, output: Any, snapshot: dict[str, Any], attempts: list[dict[str, Any]], **usage: Any
    ) -> NodeResult:
        return cls(Phase.COMPLETED, output, snapshot, attempts, **usage)

    @classmethod
    def failed(
        cls,
        snapshot: dict[str, Any],
        attempts: list[dict[str, Any]],
        *,
        kind: str,
        message: str,
        details: list[str] | None = None,
        last_output: Any = None,
        hint: str | None = None,
        **usage: Any,
    ) -> NodeResult:
        error: dict[str, Any] = {"kind": kind, "message": message}
        if details:
            error["details"] = details
        if hint:
            error["hint"] = hint
        if last_output is not None:
            error["last_output"] = last_output
        return cls(Phase.FAILED, None, snapshot, attempts, error, **usage)


@dataclass(frozen=True, slots=True)
class KnowledgeStore:
    """The knowledge bases PARSE, CHUNK, INDEX and RETRIEVE read and write."""

    bases: KnowledgeRepository
    index: KnowledgeIndex


class Runtime:
    """Shared by every node of every run an engine executes.

    The engine gives it what executors need of the engine (`plait.engine.ports`): the child
    runs, sub-runs, its event sink, stored templates and Plait's routes. A runtime built
    without them (a dry run, a test) drops its events and refuses the rest when an executor
    asks, saying what is missing."""

    def __init__(
        self,
        provider: Provider | None,
        *,
        llm_concurrency: int | None = None,
        cache: CacheRepository | None = None,
        fewshot: FewshotSource | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        tools: ToolsConfig | None = None,
        code: CodeConfig | None = None,
        jail: JailConfig | None = None,
        children: ChildRunner = NO_CHILD_RUNS,
        sub_run: SubRun = no_sub_runs,
        emit: EventSink = dropped,
        templates: TemplateLookup = no_templates,
        routes: RouteReader = no_routes,
        knowledge: KnowledgeStore | None = None,
    ):
        self.provider = provider
        self.tools = tools
        """What TOOL nodes may run (None: plait.toml's `[tools]` in force)."""
        self.code = code
        """How CODE nodes run Python (None: plait.toml's `[code]` in force)."""
        self.jail = jail
        """How TOOL programs and Python CODE are confined (None: plait.toml's `[jail]` in force)."""
        self.mcp_servers = {server.id: server for server in mcp_servers}
        """The `[[mcp_servers]]` of plait.toml, by id."""
        self._mcp: dict[str | None, McpSessions] = {}
        self.emit = emit
        """The engine's `EventBus.emit`, for executors that report progress (a MAP's items)."""
        self.children = children
        """Starts and continues the child runs of SUBGRAPH, MAP and LOOP nodes."""
        self.sub_run = sub_run
        """Starts a sub-run of a stored graph and returns its output (WORKFLOW_TASK tools)."""
        self.fewshot = fewshot
        """Corrections of earlier runs, for nodes with `use_overrides_as_fewshot` (None: no store)."""
        self.cache = cache
        """The response cache to read (None: `--no-cache`); entries are written by the engine's commits."""
        self.llm_slots = asyncio.Semaphore(llm_concurrency) if llm_concurrency else None
        self._sandbox: JsSandbox | None = None
        self._scripts: ScriptPool | None = None
        self.templates = templates
        """A stored prompt-script template's code by its id (None: not stored)."""
        self.routes = routes
        self.knowledge = knowledge
        """The store's knowledge bases (None: a runtime without a store refuses knowledge nodes)."""
        """Reads Plait's own GET routes for prompt scripts' `readRoute` (given by `plait serve`)."""
        self.degraded: set[str] = set()
        """Runs whose model calls go to `[pool] degrade_to` (a resource decision)."""
        self.streams: dict[str, StreamChoice] = {}
        """Top-level runs whose callers follow chosen nodes' answers as they arrive (`follow`)."""

    def follow(self, run_id: str, choice: StreamChoice) -> None:
        """Stream `choice`'s nodes of top-level run `run_id` (and of its child runs) from their
        next model call on. At most `FOLLOWED` runs are kept: a choice for a run that never comes
        here (a broadcast to every worker) is dropped once newer ones push it out."""
        self.streams.pop(run_id, None)
        self.streams[run_id] = choice
        while len(self.streams) > FOLLOWED:
            del self.streams[next(iter(self.streams))]

    def unserved(self, role: str) -> str | None:
        """Why a model call for `role` would fail here before it is sent (no provider; a role no
        configured provider can serve), or None. Checked before a run starts and by dry runs."""
        if self.provider is None:
            from plait.llm.select import NO_PROVIDER_HINT

            return f"it calls a model but no provider is configured: {NO_PROVIDER_HINT}"
        return self.provider.refusal(role)

    def lacks(self, role: str, needs: frozenset[str]) -> str | None:
        """Why the model serving `role` cannot do what a node needs (tools, mcp), or None."""
        return self.provider.lacks(role, needs) if self.provider is not None else None

    def fewshot_lookup(self, state: RunState) -> FewshotLookup | None:
        """Where a node of this run finds its corrected examples (other runs of the same graph),
        among those written under the major versions of the node's out-edge schemas in this run."""
        source = self.fewshot
        if source is None or state.graph_id is None:
            return None
        graph_id, run_id, contracts = state.graph_id, state.run_id, state.compiled.contracts
        return lambda node, prompt: source.examples(
            node, graph_id, run_id, prompt, {s.id: s.version for s in contracts[node.id].schemas}
        )

    def counter(self, role: str, model: str | None = None) -> TokenCounter:
        """The tokenizer of the model a call for `role` (or `model`) would go to first, as the
        provider knows it; the estimate when it does not."""
        return self.provider.counter_for_role(role, model) if self.provider is not None else ESTIMATE

    def estimate_cost(self, request: ChatRequest) -> float:
        """The provider's estimate of a request's cost (0 when it has no prices)."""
        return self.provider.estimate_cost(request) if self.provider is not None else 0.0

    async def count_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        """The prompt's tokens as the provider's model counts them (the embedded model counts its
        own chat template), or None: count them with `counter`."""
        return await self.provider.count_tokens(messages) if self.provider is not None else None

    def mcp(self, run_id: str | None) -> McpSessions:
        """The MCP sessions of a run: opened as its nodes need them, closed by `end_run`."""
        sessions = self._mcp.get(run_id)
        if sessions is None:
            from plait.tools.mcp import McpSessions

            sessions = self._mcp[run_id] = McpSessions(self.mcp_servers)
        return sessions

    async def end_run(self, run_id: str | None) -> None:
        """Close what the run held open (its MCP sessions) when it ends or pauses."""
        sessions = self._mcp.pop(run_id, None)
        if sessions is not None:
            await sessions.aclose()

    def sandbox(self) -> JsSandbox:
        """User JavaScript runs in the sandbox (`plait.sandbox`), shared fairly by this engine's runs."""
        if self._sandbox is None:
            from plait.sandbox import JsSandbox

            self._sandbox = JsSandbox()
        return self._sandbox

    def scripts(self) -> ScriptPool:
        """Prompt scripts run on a pool of threads of their own (`plait.sandbox.scripts`)."""
        if self._scripts is None:
            from plait.sandbox.scripts import ScriptPool

            self._scripts = ScriptPool()
        return self._scripts

    def close_sandbox(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self._scripts is not None:
            self._scripts.close()
            self._scripts = None

    async def aclose(self) -> None:
        for run_id in list(self._mcp):
            await self.end_run(run_id)
        self.close_sandbox()
        if self.provider is not None:
            await self.provider.aclose()
