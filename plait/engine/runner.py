"""The engine: durable, concurrent execution of one run at a time per call.

Durability rules:
- a run is executed by one engine at a time (a lease in the run row, renewed while running);
- every node is claimed in the database before it executes (UNIQUE per activation), so two
  engines never execute the same node, and a node completed before a crash is never re-executed;
- a node's result is committed in one transaction when it finishes; nothing is written during.
`plait resume` simply runs the engine again: it rebuilds the state from the committed node runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from plait.caches import ByteBoundCache
from plait.config import (
    CodeConfig,
    JailConfig,
    McpServerConfig,
    ResourcesConfig,
    RunsConfig,
    ToolsConfig,
    resources_settings,
    runs_settings,
)
from plait.engine.child_runs import ChildRuns, driven_by_parent, driving_path, driving_root, path_of, root_of
from plait.engine.collector import tune_collector
from plait.engine.commits import GroupCommit
from plait.engine.compiled import load_compiled
from plait.engine.events import EventBus, RunPaused, RunStarted
from plait.engine.executable import refuse_unexecutable
from plait.engine.fewshot import FewshotSource
from plait.engine.node_gate import ResourcesShort
from plait.engine.outcome import EngineError, RunOutcome
from plait.engine.ports import ChildGraph, RouteReader
from plait.engine.resources import ResourceGate
from plait.engine.restore import restore, restore_ledger
from plait.engine.run_budget import budget_for
from plait.engine.run_input import GraphResolver, check_input, stored_graph
from plait.engine.runtime import KnowledgeStore, Runtime
from plait.engine.scheduler import Kernel, Scheduler
from plait.engine.script_host import no_routes
from plait.engine.spread import Spread
from plait.engine.state import CompiledRun, RunState
from plait.engine.streaming import StreamChoice
from plait.llm.provider import Provider
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.model.graph import GraphDef
from plait.store import ChildOf, RunRecord, Store, StoredGraph, StoreError
from plait.store.faults import transient
from plait.store.new_runs import CreateRun, NewRun

__all__ = ["Engine", "EngineError", "RunOutcome", "new_owner"]
log = logging.getLogger("plait.engine")


EXECUTABLE_KEPT = 10_000
"""Graph versions an engine remembers it can execute (forgotten all at once past this)."""
COMPILED_BYTES = 64 << 20
"""What the graph versions an engine keeps compiled may weigh (a server runs many graphs)."""
COMPILED_WEIGHT = 16
"""Bytes a compiled graph version holds per byte of its graph's JSON (models, plan, parsed
templates; an estimate)."""


def new_owner() -> str:
    """A fresh name for an engine's claims and leases, `host:pid:random`: from it, a lease left
    by a dead process on this machine is recognised and taken over at once."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Engine:
    """Executes stored runs durably, many at once on one event loop (docs/engine.md).

    What a caller can rely on:
    - `run(run_id)` drives a run until it completes, fails or pauses for a person, and returns
      its `RunOutcome` only once that outcome is committed. A run that already ended is not
      executed again: its stored outcome is returned. It raises `EngineError` when another live
      process holds the run, or when this engine cannot execute its graph (a pending run refused
      so is failed, or paused if a correction reopened it, with the reason: never left
      `pending`), or when it loses the lease mid-way (it then stops driving the run); it raises
      `NotFoundError` for an unknown run id.
    - `start(graph, input)` creates a run and drives it the same way. The run row is written
      only once the run is admitted, already begun; a graph this engine cannot execute raises
      `EngineError` before anything is written. The caller checks the input first.
    - One engine at a time executes a run: it holds a lease on the run row, renewed while it
      runs. Every node is claimed in the database before it executes, so two engines never
      execute the same activation, and an activation whose result was committed never runs again.
    - When the call driving a run is cancelled or raises, the run is given up in one
      transaction: its running nodes go back to `pending` and the lease is released, so the next
      `run`, here or elsewhere, continues at once and executes them again.
    - `aclose()` closes the MCP sessions, the sandbox and the provider the engine
      holds. Call it once, when no run is being driven, and do not use the engine afterwards.
    Use an engine from one event loop only; it is not thread-safe.
    """

    def __init__(
        self,
        store: Store,
        provider: Provider | None = None,
        *,
        llm_concurrency: int | None = None,
        lease_ttl_s: float = 30.0,
        events: EventBus | None = None,
        start_concurrency: int = 16,
        cache: bool = True,
        mcp_servers: Sequence[McpServerConfig] = (),
        graphs: GraphResolver | None = None,
        llm: dict[str, Any] | None = None,
        tools: ToolsConfig | None = None,
        code: CodeConfig | None = None,
        jail: JailConfig | None = None,
        child_settled: Callable[[RunRecord], str | None] | None = None,
        routes: RouteReader | None = None,
        resources: ResourcesConfig | Callable[[], ResourcesConfig] | None = None,
        spread: Spread | None = None,
        retry_lost: bool = False,
        runs: RunsConfig | None = None,
    ):
        """`graphs`: how a WORKFLOW_TASK tool's graph reference is found; by default only stored
        graphs (the CLI lets it name graph files on this machine too; a server must not, so that
        a graph sent to it cannot make it read its own files).
        `llm`: the model selection `provider` stands for, stored on the runs this engine creates
        (see `plait.runs.model_choice`).
        `tools`, `code`, `jail`: what TOOL and CODE nodes may run and how they are confined
        (default: plait.toml's `[tools]`, `[code]` and `[jail]` in force).
        `child_settled`: called when a child run continued on its own (after a correction in
        it) ended while its parent's node had already completed: passes the child's output on
        to the parent (`plait.runs.children.settle`); returns a parent run to drive next, if any.
        Without it such a child's new output stays in the child.
        `routes`: answers prompt scripts' `readRoute` (the server's own GET routes); without
        it, `readRoute` refuses, saying where it works.
        `resources`: the resource-aware decisions made before each new run starts and before
        each node executes, and the nodes of a run executing at once (default: `[resources]` of
        plait.toml; `plait.engine.resources`, `plait.engine.node_gate`); a callable gives the
        settings in force at each decision (a process whose settings change while it runs).
        `spread`: MAP items are announced to the workers as runs of their own (a worker's
        engine; see `plait.engine.spread`); without it this engine executes them itself.
        `retry_lost`: a person asked to continue (`plait resume`): a node whose process went down
        while executing it is executed again however often that happened; without it, such a
        node fails after `LOST_LIMIT` losses instead of taking down every process that resumes
        the run (a server's start-up, a worker's reaper).
        `runs`: the budget of each run and its child runs (default: `[runs]` of plait.toml)."""
        self.child_settled = child_settled
        self.spread = spread
        self.retry_lost = retry_lost
        self.run_limits = runs if runs is not None else runs_settings()
        self.llm = llm
        tune_collector()
        self.graphs = graphs or (lambda ref: stored_graph(store, ref))
        self.store = store
        self.events = events or EventBus()
        self.runtime = Runtime(
            provider,
            llm_concurrency=llm_concurrency,
            cache=store.cache if cache else None,
            fewshot=FewshotSource(store),
            mcp_servers=mcp_servers,
            tools=tools,
            code=code,
            jail=jail,
            children=ChildRuns(self, self.graphs, spread=spread, llm=llm),
            sub_run=self._sub_run,
            emit=self.events.emit,
            templates=self._template_code,
            routes=routes or no_routes,
            knowledge=KnowledgeStore(store.knowledge, store.knowledge_index),
        )
        self.owner = new_owner()
        self.lease_ttl_s = lease_ttl_s
        self._compiled: ByteBoundCache[CompiledRun] = ByteBoundCache(
            "compiled graph versions", COMPILED_BYTES, weigh=lambda compiled, _: COMPILED_WEIGHT * _json_size(compiled)
        )
        """Graph versions compiled for execution, the most recently used within `COMPILED_BYTES`."""
        self.commits = GroupCommit(store.runs.nodes)
        settings = resources if isinstance(resources, ResourcesConfig) else resources_settings()
        self._driving = 0
        self._driven: set[str] = set()
        """The runs this engine executes now: a second call for one of them is refused."""
        self.stopping: set[str] = set()
        """Runs a person stopped elsewhere (a pause or a cancel on a server) that this engine is
        stopping: given up `paused`, not as if its process had died."""
        self._executable: set[tuple[str, int, str | None]] = set()
        """Graph versions (and inline bodies) found executable here (`_refuse_unexecutable`)."""
        self._retrying: set[str] = set()
        """Runs a person asked to continue here (`run(retry_lost=True)`), while they execute."""
        self.resources: Callable[[], ResourcesConfig] = resources if callable(resources) else (lambda: settings)
        """The `[resources]` settings in force: the gate and the run's slots read them here."""
        self.gate: ResourceGate | None = ResourceGate(self.resources, store, provider, lambda: self._driving)
        self._admission = asyncio.Semaphore(start_concurrency)
        """Runs being set up at once (begin, restore, first claims). Many runs started together
        would otherwise all be set up before any of them executes a node: the loop would run
        every set-up back to back while the first model calls could already be in flight."""

    async def aclose(self) -> None:
        await self.runtime.aclose()

    def compiled_for(self, graph_id: str, version: int, body: str | None = None) -> CompiledRun:
        """A graph version (or, with `body`, an inline body in it) compiled for execution, once."""
        compiled = self._compiled.get((graph_id, version), lambda: load_compiled(self.store, graph_id, version))
        return compiled.at(body)

    def stream(self, run_id: str, choice: StreamChoice | None) -> None:
        """Pass on the answers of `choice`'s nodes in the run and its child runs as they arrive
        (`NodeDelta` events), besides the nodes the graph marks `stream: true`, until it ends."""
        if choice is None:
            self.runtime.streams.pop(run_id, None)
        else:
            self.runtime.follow(run_id, choice)

    async def run(self, run_id: str, *, bounded: bool = False, retry_lost: bool = False) -> RunOutcome:
        """Execute (or continue) a run until it completes, fails or pauses for a person. A child
        run continued on its own (after a review or a correction in it) then continues its
        parent, when the parent's node is waiting for it. `bounded`: the caller bounds its runs
        in flight itself (a batch, a worker), so the resource decisions leave out provider capacity.
        `retry_lost`: a person asked to continue this run, as the engine's own `retry_lost`."""
        refused = await self._gated(run_id, bounded=bounded)
        if refused is not None:
            return refused
        if retry_lost:
            self._retrying.add(run_id)
        try:
            with self._counted() as ended:
                ended(outcome := await self._run(run_id, bounded=bounded))
                if outcome.status in TERMINAL_RUN_STATUSES:
                    self.runtime.streams.pop(run_id, None)
                return outcome
        finally:
            self._retrying.discard(run_id)

    @contextlib.contextmanager
    def _counted(self) -> Iterator[Callable[[RunOutcome], None]]:
        """Count the run among those driven here (the resource gate's measure of load) while
        it is; yields the callback that reports how it ended. A paused run stays degraded
        when it is resumed here; an ended one is forgotten."""
        self._driving += 1
        ended: list[RunOutcome] = []
        try:
            yield ended.append
        finally:
            self._driving -= 1
            for outcome in ended:
                if outcome.status in TERMINAL_RUN_STATUSES:
                    self.runtime.degraded.discard(outcome.run_id)

    async def _gated(self, run_id: str, *, bounded: bool) -> RunOutcome | None:
        """The resource decision before a new run starts: None to go on (degraded or not), else
        the outcome of a run paused or rejected for lack of resources."""
        if self.gate is None or self.gate.verdict(await self.gate.probed(), bounded=bounded) is None:
            return None  # the common case costs a clock reading (a probe every `probe_s`)
        record = await asyncio.to_thread(self.store.runs.get, run_id)
        if record.started_at is not None or record.status != RunStatus.PENDING or record.parent_run_id is not None:
            return None  # only new top-level runs: one continuing is not stopped half-way
        verdict = await self.gate.admit(run_id, bounded=bounded)
        if verdict.action == "degrade":
            self.runtime.degraded.add(run_id)
        if verdict.action not in ("pause", "reject"):
            return None
        error = {"kind": "resources", "message": f"{verdict.action}ed for lack of resources: {verdict.reason}"}
        status = RunStatus.PAUSED if verdict.action == "pause" else RunStatus.FAILED
        await asyncio.to_thread(self.store.runs.set_status, run_id, status, error=error)
        return RunOutcome(run_id, status, None, error)

    async def _run(self, run_id: str, *, bounded: bool = False) -> RunOutcome:
        record, outcome = await self._execute(run_id, bounded=bounded)
        if record is not None and record.parent_run_id is not None and not driven_by_parent():
            await self._continue_parent(record)
        return outcome

    async def _execute(self, run_id: str, *, bounded: bool = False) -> tuple[RunRecord | None, RunOutcome]:
        """Drive the run until it ends or pauses: its record as begun (None: it had ended, and
        this engine did nothing), and its outcome. A child run's items are bounded by the node
        that started them (`bounded`)."""
        if run_id in self._driven:  # two drivers under one owner would pass each other's lease checks
            raise EngineError(f"run {run_id} is being executed by this engine already; wait for it to end")
        self._driven.add(run_id)
        try:
            async with self._admitted() as set_up:
                record, acquired = self._begin(run_id)
                if not acquired:
                    return None, RunOutcome(run_id, RunStatus(record.status), record.output, record.error)
                compiled = self.compiled_for(record.graph_id, record.graph_version, record.body)
                state = RunState(
                    compiled,
                    record.input or {},
                    run_id=run_id,
                    graph_id=record.graph_id,
                    graph_version=record.graph_version,
                    body=record.body,
                    root_run_id=root_of(self.store, record),
                )
                state.path = path_of(self.store, record)
                if record.started_at is not None:  # a fresh run has no node runs to restore
                    restore(state, self.store.runs.node_runs(run_id))
                    restore_ledger(state, self.store, run_id)
                state.budget = budget_for(self.store, record, self.run_limits)
                graph = (record.graph_slug, record.graph_version)
                bounded = bounded or record.parent_run_id is not None
                drive = self._drive(run_id, state, graph, set_up, seen=record.corrections, bounded=bounded)
                return record, await drive
        finally:
            self._driven.discard(run_id)

    async def _continue_parent(self, child: RunRecord) -> None:
        """After a child was continued on its own: drive its parent when the parent is paused with
        the child's node waiting (the node executes again and finds its children), or pass the
        child's output on when that node had completed (`child_settled`)."""
        assert child.parent_run_id is not None
        assert child.parent_node_run_id is not None
        parent = self.store.runs.get(child.parent_run_id)
        node_run = self.store.runs.node_run(child.parent_node_run_id)
        if parent.status == RunStatus.PAUSED and not node_run.status.ended:
            await self.run(parent.id)
        elif node_run.status.has_output and self.child_settled is not None:
            ended = self.store.runs.get(child.id)
            follow = await asyncio.to_thread(self.child_settled, ended) if ended.status == RunStatus.COMPLETED else None
            if follow is not None:
                await self.run(follow)

    async def start_child(self, target: ChildGraph, run_input: dict[str, Any], child: ChildOf) -> RunOutcome:
        """Create child run `child` of `target` and drive it (like `start`); ChildExists when that
        key of that node run was started already."""
        return await self._create(target, run_input, child)

    async def start(
        self,
        graph: StoredGraph,
        run_input: dict[str, Any],
        *,
        run_id: str | None = None,
        gated: bool = False,
        bounded: bool = False,
    ) -> RunOutcome:
        """Create a run of a stored graph and execute it (the input is checked by the caller,
        see `plait.engine.run_input.check_input`).

        Unlike `start_run` followed by `run`, the run row is written once this engine admits
        the run, already begun (one transaction): of many runs started together, the first
        ones execute while the later ones wait to be created, instead of every run being
        created before any model call goes out. `run_id`: the id to give it (a batch derives
        its records' ids). `gated`: a new top-level run, which the resource decisions apply
        to as in `run`; when resources are short it is created pending and decided on, so
        that the decision is recorded on it. `bounded`: as in `run`.
        """
        compiled = self.compiled_for(graph.graph_id, graph.version)
        short = (
            gated and self.gate is not None and self.gate.verdict(await self.gate.probed(), bounded=bounded) is not None
        )
        if short:
            created = self.store.runs.add(graph_id=graph.graph_id, graph_version=graph.version,
                                          schema_version=graph.schema_version, input=run_input, llm=self.llm,
                                          run_id=run_id)  # fmt: skip
            return await self.run(created, bounded=bounded)
        target = ChildGraph(graph.graph_id, graph.version, graph.schema_version, graph.slug, None, compiled)
        with self._counted() as ended:
            ended(outcome := await self._create(target, run_input, None, run_id=run_id, bounded=bounded))
            return outcome

    async def _create(
        self,
        target: ChildGraph,
        run_input: dict[str, Any],
        child: ChildOf | None,
        *,
        run_id: str | None = None,
        bounded: bool = False,
    ) -> RunOutcome:
        """Write the run of `target` once admitted, already begun, and drive it (a child run is
        bounded by the node that starts it)."""
        async with self._admitted() as set_up:
            self._refuse_unexecutable(target.graph_id, target.version, target.body, target.compiled)
            lease = (self.owner, self.lease_ttl_s)
            new = NewRun(target.graph_id, target.version, target.schema_version, run_input, lease, self.llm, child,
                         target.body, run_id)  # fmt: skip
            create = CreateRun.of(new)
            state = RunState(
                target.compiled,
                run_input,
                run_id=create.run_id,
                graph_id=target.graph_id,
                graph_version=target.version,
                body=target.body,
                root_run_id=None if child is None else driving_root() or child.run_id,
            )
            state.budget = budget_for(self.store, None, self.run_limits)
            state.path = () if child is None else driving_path()
            graph = (target.slug, target.version)
            bounded = bounded or child is not None
            return await self._drive(create.run_id, state, graph, set_up, create=create, bounded=bounded)

    @contextlib.asynccontextmanager
    async def _admitted(self) -> AsyncIterator[Callable[[], None]]:
        """Hold one of the `start_concurrency` set-up places until the run's first nodes start;
        yields the callback that gives the place back (called at the latest on exit)."""
        await self._admission.acquire()
        admitted = True

        def set_up() -> None:
            nonlocal admitted
            if admitted:
                admitted = False
                self._admission.release()

        try:
            yield set_up
        finally:
            set_up()

    async def _drive(
        self,
        run_id: str,
        state: RunState,
        graph: tuple[str, int],
        set_up: Callable[[], None],
        seen: int = 0,
        *,
        create: CreateRun | None = None,
        bounded: bool = False,
    ) -> RunOutcome:
        """Execute a run this engine has begun (it holds the lease), or with `create` one it
        creates in its first commit, until it ends or pauses (a node's resource decision may
        pause it); `graph` is (slug, version) for the events."""
        began = time.monotonic()
        renew = asyncio.create_task(self._renew(run_id))
        scheduler: Scheduler | None = None
        if state.path:
            self.events.paths[run_id] = state.path
        try:
            retry_lost = self.retry_lost or run_id in self._retrying
            kernel = Kernel(self.owner, self.runtime, self.commits, self.events, self.store, retry_lost,
                            self.gate, self.resources().max_concurrent_nodes)  # fmt: skip
            scheduler = Scheduler(kernel, run_id, state, seen, create=create, bounded=bounded)
            return await scheduler.execute(
                on_started=set_up,
                on_begun=lambda: self.events.emit(RunStarted(run_id, graph=graph[0], version=graph[1])),
            )
        except ResourcesShort as short:
            self.stopping.add(run_id)  # given up `paused` below, in the step that gives its nodes back
            paused = short
        finally:
            renew.cancel()
            # stopped mid-way (cancelled, lease lost, error); for a run whose creation failed it changes nothing
            if scheduler is None or not scheduler.ended:
                self._give_up(run_id, time.monotonic() - began)
            self.events.paths.pop(run_id, None)
            await self.runtime.end_run(run_id)
        return await self._paused_short(run_id, paused)

    async def _paused_short(self, run_id: str, short: ResourcesShort) -> RunOutcome:
        """A run a node's resource decision paused (given up `paused` already): its reason on it."""
        error = short.error()
        await asyncio.to_thread(self.store.runs.set_status, run_id, RunStatus.PAUSED, expected=[RunStatus.PAUSED],
                                error=error)  # fmt: skip
        self.events.emit(RunPaused(run_id, reason="resources"))
        return RunOutcome(run_id, RunStatus.PAUSED, None, error)

    def _give_up(self, run_id: str, active_s: float) -> None:
        """`RunRepository.give_up`; when the database fails it too, the run is left to its lease
        (it runs out, and the run is taken over as one whose process died)."""
        paused = run_id in self.stopping
        self.stopping.discard(run_id)
        try:
            self.store.runs.give_up(run_id, self.owner, active_s=active_s, paused=paused)
        except Exception as exc:
            if not transient(exc):
                raise
            log.warning("run %s: giving it up failed (%s); its lease runs out in %.0f s", run_id, exc,
                        self.lease_ttl_s)  # fmt: skip

    def _template_code(self, template_id: str) -> str | None:
        """The code of the stored prompt-script template `template_id` (None: there is none)."""
        try:
            return self.store.templates.get(template_id).script_code
        except StoreError:
            return None

    async def _sub_run(self, ref: str, run_input: dict[str, Any]) -> Any:
        """A WORKFLOW_TASK tool's sub-run: a new run of a stored graph, driven to its end here."""
        stored = self.graphs(ref)
        check_input(stored, run_input)
        outcome = await self.start(stored, run_input)
        if outcome.status != RunStatus.COMPLETED:
            message = (outcome.error or {}).get("message", "")
            raise EngineError(f"sub-run {outcome.run_id} of '{ref}' ended {outcome.status} {message}".strip())
        return outcome.output

    def _begin(self, run_id: str) -> tuple[RunRecord, bool]:
        """Take the run over (lease + `running`); False for a finished run. Raises when it is busy."""
        runs = self.store.runs
        record, acquired = self._try_begin(run_id)
        if acquired and record.lease_owner == self.owner:  # left by this engine, whose give-up the database failed
            runs.give_up(run_id, self.owner)  # its nodes back to pending: executed again, not taken for busy
            record, acquired = self._try_begin(run_id)
        if acquired or record.status in TERMINAL_RUN_STATUSES:
            return record, acquired
        holder = record.lease_owner
        if holder and _owner_dead(holder) and runs.steal_lease(run_id, holder, self.owner, self.lease_ttl_s):
            # killed on this machine: no need to wait for its lease to expire
            record, acquired = self._try_begin(run_id)
            if acquired or record.status in TERMINAL_RUN_STATUSES:
                return record, acquired
        raise EngineError(
            f"run {run_id} is being executed by another process ({record.lease_owner}); wait for it or try again later"
        )

    def _try_begin(self, run_id: str) -> tuple[RunRecord, bool]:
        """`RunRepository.begin` with this engine's checks: a pending run it refuses is not left pending."""
        return self.store.runs.begin(
            run_id, self.owner, self.lease_ttl_s, check=self._check_record, refused=(EngineError,)
        )

    def _check_record(self, record: RunRecord) -> None:
        self._refuse_unexecutable(record.graph_id, record.graph_version, record.body)

    def check_executable(self, graph: StoredGraph) -> None:
        """Raise EngineError when this engine could not execute a run of `graph` (a node type not
        executed yet, no provider serving a role, a model lacking a capability, an MCP server not
        configured): what `run` and `start` check, for callers that refuse before a run exists."""
        self._refuse_unexecutable(graph.graph_id, graph.version)

    def check_graph(self, graph: GraphDef) -> None:
        """Raise EngineError when this engine could not execute `graph`, a validated graph not
        stored yet (a proposal a person has not accepted): the same checks as `check_executable`."""
        refuse_unexecutable(CompiledRun.from_graph(graph), self.runtime)

    def _refuse_unexecutable(
        self, graph_id: str, version: int, body: str | None = None, compiled: CompiledRun | None = None
    ) -> None:
        """`refuse_unexecutable` once per graph version (and inline body) this engine executes:
        what it checks (the graph, this engine's providers, tools and servers) never changes."""
        key = (graph_id, version, body)
        if key in self._executable:
            return
        refuse_unexecutable(compiled or self.compiled_for(graph_id, version, body), self.runtime)
        if len(self._executable) >= EXECUTABLE_KEPT:
            self._executable.clear()
        self._executable.add(key)

    async def _renew(self, run_id: str) -> None:
        """Renew the lease every third of its length; a renewal the database fails is tried at the
        next (two more before the lease runs out), never the end of renewing."""
        while True:
            await asyncio.sleep(self.lease_ttl_s / 3)
            try:
                await asyncio.to_thread(self.store.runs.renew_lease, run_id, self.owner, self.lease_ttl_s)
            except Exception as exc:
                log.warning("run %s: renewing its lease failed (%s); trying again in %.1f s", run_id, exc,
                            self.lease_ttl_s / 3)  # fmt: skip


def _json_size(compiled: CompiledRun) -> int:
    return len(compiled.graph.model_dump_json())


def _owner_dead(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
