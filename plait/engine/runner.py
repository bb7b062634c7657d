"""The engine: durable, concurrent execution of one run at a time per call (SPEC §3).

Durability rules:
- a run is executed by one engine at a time (a lease in the run row, renewed while running);
- every node is claimed in the database before it executes (UNIQUE per activation), so two
  engines never execute the same node, and a node completed before a crash is never re-executed;
- a node's result is committed in one transaction when it finishes; nothing is written during.
`plait resume` simply runs the engine again: it rebuilds the state from the committed node runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from plait.engine.commits import GroupCommit
from plait.engine.compiled import load_compiled
from plait.engine.events import EventBus
from plait.engine.executors import EXECUTORS, SUPPORTED
from plait.engine.failpoints import failpoint
from plait.engine.fewshot import FewshotSource
from plait.engine.ledger import commit_versions, consumed, input_version
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import CompiledRun, Phase, RunState
from plait.llm.provider import Provider
from plait.model.nodes import NodeBase, NodeType, node_field
from plait.store import NodeRunRecord, NodeStatus, RunRecord, RunStatus, Store, StoredGraph
from plait.store.ledger import INPUT
from plait.store.node_writes import CachePut, Claim, EndRun, Finish, Skip, Write
from plait.store.records import TERMINAL_RUN_STATUSES


class EngineError(Exception):
    """The run cannot be executed as asked (unknown run, busy elsewhere, unsupported node type...)."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run_id: str
    status: RunStatus
    output: Any = None
    error: dict[str, Any] | None = None


_startup_frozen = False


def _freeze_startup_objects() -> None:
    """Move everything alive when the first engine is built (modules, models, compiled graphs)
    out of the garbage collector's reach, once per process (`gc.freeze`).

    With hundreds of runs in flight, objects survive the young generations and full
    collections follow; each walks every object in the process, most of them the libraries'
    own, and stops the event loop for 25-95 ms (measured with 500 runs in flight). Frozen
    objects are still freed by reference counting; cycles among them wait for the exit.
    """
    global _startup_frozen
    if not _startup_frozen:
        _startup_frozen = True
        gc.freeze()
        atexit.register(_thaw)


def _thaw() -> None:
    """At exit, while modules are intact: collect what freezing kept (finalizers such as
    mini-racer's must not run during interpreter teardown)."""
    gc.unfreeze()
    gc.collect()


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Engine:
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
    ):
        _freeze_startup_objects()
        self.store = store
        self.runtime = Runtime(
            provider,
            llm_concurrency=llm_concurrency,
            cache=store.cache if cache else None,
            fewshot=FewshotSource(store),
        )
        self.owner = new_owner()
        self.lease_ttl_s = lease_ttl_s
        self.events = events or EventBus()
        self._compiled: dict[tuple[str, int], CompiledRun] = {}
        self.commits = GroupCommit(store.runs.nodes)
        self._admission = asyncio.Semaphore(start_concurrency)
        """Runs being set up at once (begin, restore, first claims). Many runs started together
        would otherwise all be set up before any of them executes a node: the loop would run
        every set-up back to back while the first model calls could already be in flight."""

    async def aclose(self) -> None:
        await self.runtime.aclose()

    def compiled_for(self, def_id: str, version: int) -> CompiledRun:
        key = (def_id, version)
        if key not in self._compiled:
            self._compiled[key] = load_compiled(self.store, def_id, version)
        return self._compiled[key]

    async def run(self, run_id: str) -> RunOutcome:
        """Execute (or continue) a run until it completes, fails or pauses for a person."""
        async with self._admitted() as set_up:
            record, acquired = self._begin(run_id)
            if not acquired:
                return RunOutcome(run_id, RunStatus(record.status), record.output, record.error)
            compiled = self.compiled_for(record.def_id, record.graph_def_ver)
            state = RunState(compiled, record.input or {}, run_id=run_id, def_id=record.def_id)
            if record.started_at is not None:  # a fresh run has no node runs to restore
                self._restore(state, self.store.runs.node_runs(run_id))
                self._restore_ledger(run_id, state)
            return await self._drive(run_id, state, (record.graph_slug, record.graph_def_ver), set_up)

    async def start(self, graph: StoredGraph, run_input: dict[str, Any]) -> RunOutcome:
        """Create a run of a stored graph and execute it (the input is checked by the caller,
        see `plait.engine.start.check_input`).

        Unlike `start_run` followed by `run`, the run row is written once this engine admits
        the run, already begun (one transaction): of many runs started together, the first
        ones execute while the later ones wait to be created, instead of every run being
        created before any model call goes out.
        """
        async with self._admitted() as set_up:
            compiled = self.compiled_for(graph.def_id, graph.version)
            self._check_supported(compiled)
            run_id = self.store.runs.add(
                def_id=graph.def_id,
                graph_def_ver=graph.version,
                schema_version=graph.schema_version,
                input=run_input,
                lease=(self.owner, self.lease_ttl_s),
            )
            state = RunState(compiled, run_input, run_id=run_id, def_id=graph.def_id)
            return await self._drive(run_id, state, (graph.slug, graph.version), set_up)

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
        self, run_id: str, state: RunState, graph: tuple[str, int], set_up: Callable[[], None]
    ) -> RunOutcome:
        """Execute a run this engine has begun (it holds the lease) until it ends or pauses;
        `graph` is (slug, version) for the events."""
        renew = asyncio.create_task(self._renew(run_id))
        scheduler: _Scheduler | None = None
        try:
            self.events.emit("execution.started", run_id, graph=graph[0], version=graph[1])
            scheduler = _Scheduler(self, run_id, state)
            return await scheduler.execute(on_started=set_up)
        finally:
            renew.cancel()
            if scheduler is None or not scheduler.ended:
                self.store.runs.release_lease(run_id, self.owner)

    def _begin(self, run_id: str) -> tuple[RunRecord, bool]:
        """Take the run over (lease + `running`); False for a finished run. Raises when it is busy."""
        runs = self.store.runs
        record, acquired = runs.begin(run_id, self.owner, self.lease_ttl_s, check=self._check_record)
        if acquired or record.status in TERMINAL_RUN_STATUSES:
            return record, acquired
        holder = record.lease_owner
        if holder and _owner_dead(holder) and runs.steal_lease(run_id, holder, self.owner, self.lease_ttl_s):
            # killed on this machine: no need to wait for its lease to expire
            record, acquired = runs.begin(run_id, self.owner, self.lease_ttl_s, check=self._check_record)
            if acquired or record.status in TERMINAL_RUN_STATUSES:
                return record, acquired
        raise EngineError(
            f"run {run_id} is being executed by another process ({record.lease_owner}); wait for it or try again later"
        )

    def _check_record(self, record: RunRecord) -> None:
        self._check_supported(self.compiled_for(record.def_id, record.graph_def_ver))

    def _check_supported(self, compiled: CompiledRun) -> None:
        for node in compiled.nodes.values():
            if node.type not in SUPPORTED:
                raise EngineError(
                    f"node '{node.id}' is a {node.type} node, which this release validates but does "
                    f"not execute yet (supported: {', '.join(sorted(SUPPORTED))})"
                )
            if node.type == NodeType.LLM_CALL:
                self._check_provider(node)

    def _check_provider(self, node: NodeBase) -> None:
        """Refuse up front what would fail at the node's first call (no provider, a role nobody serves)."""
        reason = self.runtime.unserved(node_field(node, "model_role", None) or "chat")
        if reason:
            raise EngineError(f"node '{node.id}': {reason}")

    async def _renew(self, run_id: str) -> None:
        while True:
            await asyncio.sleep(self.lease_ttl_s / 3)
            await asyncio.to_thread(self.store.runs.renew_lease, run_id, self.owner, self.lease_ttl_s)

    def _restore(self, state: RunState, records: list[NodeRunRecord]) -> None:
        """Rebuild node phases from each node's newest activation (older ones are history)."""
        newest: dict[str, NodeRunRecord] = {}
        for rec in records:
            state.spent_usd += rec.cost_usd  # every activation's calls count against max_cost_usd
            if rec.node_id in state.nodes and (
                rec.node_id not in newest or rec.activation > newest[rec.node_id].activation
            ):
                newest[rec.node_id] = rec
        for node_id, rec in newest.items():
            node_state = state.nodes[node_id]
            node_state.activation = rec.activation
            if rec.status in (NodeStatus.COMPLETED, NodeStatus.OVERRIDDEN, NodeStatus.STALE):
                state.complete(node_id, rec.effective_output)  # stale data is still the data; rerun on demand
            elif rec.status == NodeStatus.SKIPPED:
                state.set_phase(node_id, Phase.SKIPPED)
            elif rec.status == NodeStatus.FAILED:
                state.set_phase(node_id, Phase.FAILED)
            elif rec.status == NodeStatus.PENDING and rec.input_snapshot is not None:
                state.set_phase(node_id, Phase.WAITING)  # a HUMAN_REVIEW parked for a person
            # `running` rows belong to a dead process, `pending` ones without a snapshot were
            # queued by a rerun: the node is claimed (again) and executed

    def _restore_ledger(self, run_id: str, state: RunState) -> None:
        for owner, head in self.store.ledger.heads(run_id).items():
            state.versions[owner], state.frozen[owner] = head.version, head.frozen


def _cache_put(run_id: str, node_run_id: str, result: NodeResult) -> list[Write]:
    entry = result.cache_entry
    if entry is None or result.phase != Phase.COMPLETED:
        return []
    return [CachePut(run_id, entry.key, entry.provider, entry.model, entry.response, node_run_id)]


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


_NODE_STATUS = {
    Phase.COMPLETED: NodeStatus.COMPLETED,
    Phase.FAILED: NodeStatus.FAILED,
    Phase.WAITING: NodeStatus.PENDING,
}


class _Scheduler:
    """Event-driven readiness: finishing a node decides its successors (run or skip) at once,
    and its result, their claims and the skips commit together in one unit of the group commit."""

    def __init__(self, engine: Engine, run_id: str, state: RunState):
        self.engine = engine
        self.store = engine.store
        self.run_id = run_id
        self.state = state
        self.tasks: set[asyncio.Task[None]] = set()
        self.failed: str | None = None
        self.budget_stop: str | None = None
        """Set when a node was stopped by the run's max_cost_usd: the run fails for that reason."""
        self.ended = False
        """The run's outcome is committed and its lease given up."""
        self._busy = 1  # the node tasks in flight, plus `execute` until its first claims are made
        self._idle: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def execute(self, on_started: Callable[[], None]) -> RunOutcome:
        """Run to the end; `on_started()` once the first nodes are claimed (or nothing is left to claim)."""
        try:
            try:
                first = self._plan(self.state.compiled.topology.order)
                if INPUT not in self.state.versions:  # a fresh run: the input is version 1 of the ledger
                    first.insert(0, input_version(self.run_id, self.state))
                await self._commit(first)
            finally:
                self._release()
                on_started()
            await self._idle
        except BaseException:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            raise
        return await self._conclude()

    # -- planning: what becomes ready or skipped ----------------------------------------------------------------

    def _plan(self, candidates: Iterable[str]) -> list[Write]:
        """Decide pending nodes whose inputs are all resolved: a claim to run, or a skip that propagates."""
        writes: list[Write] = []
        for first in candidates:
            stack = [first]
            while stack:
                current = stack.pop()
                node_state = self.state.nodes[current]
                if node_state.phase != Phase.PENDING:
                    continue
                decision = self.state.decide(current)
                if decision == Phase.SKIPPED:
                    self.state.set_phase(current, Phase.SKIPPED)
                    writes.append(Skip(self.run_id, current, node_state.activation))
                    stack.extend(self.state.successors(current))
                elif decision == Phase.RUNNING and self.failed is None:
                    node_state.phase = Phase.RUNNING
                    writes.append(Claim(self.run_id, current, node_state.activation, self.engine.owner))
        return writes

    async def _commit(self, writes: list[Write]) -> None:
        """Commit claims and skips, then start the nodes won; adopt the ones finished elsewhere."""
        if writes:
            await self._started(writes, await self.engine.commits.submit(writes))

    async def _started(
        self, writes: Sequence[Write], results: Sequence[Any], *, keep_one: bool = False
    ) -> NodeRunRecord | None:
        """Start the claimed nodes (with `keep_one`, all but one, returned for the caller's own
        task to continue with: a chain then runs in one task), adopt the rest, announce skips."""
        adopted: list[str] = []
        kept: NodeRunRecord | None = None
        for write, result in zip(writes, results, strict=True):
            if isinstance(write, Skip):
                self.engine.events.emit("node:skipped", self.run_id, write.node_id)
            elif isinstance(write, Claim):
                if result is None:
                    adopted.append(write.node_id)
                elif keep_one and kept is None:
                    kept = result
                else:
                    self._spawn(result)
        for node_id in adopted:
            await self._commit(self._adopt(node_id))
        return kept

    # -- node tasks --------------------------------------------------------------------------------------------

    def _spawn(self, claimed: NodeRunRecord) -> None:
        self._busy += 1
        task = asyncio.create_task(self._run_node(claimed))
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and not self._idle.done():
            self._idle.set_exception(task.exception())  # type: ignore[arg-type]
        self._release()

    def _release(self) -> None:
        self._busy -= 1
        if self._busy == 0 and not self._idle.done():
            self._idle.set_result(None)

    async def _run_node(self, claimed: NodeRunRecord) -> None:
        following: NodeRunRecord | None = claimed
        while following is not None:
            following = await self._execute_node(following)

    async def _execute_node(self, claimed: NodeRunRecord) -> NodeRunRecord | None:
        """Execute one claimed node and commit its unit; a successor it claimed, to continue with."""
        node_id = claimed.node_id
        node = self.state.nodes[node_id].node
        self.engine.events.emit("node:start", self.run_id, node_id, type=str(node.type))
        read = consumed(self.state, node)
        try:
            result = await EXECUTORS[node.type](node, self.state, self.engine.runtime)
        except Exception as exc:  # a bug in an executor must fail the node, not hang the run
            result = NodeResult.failed({}, [], kind="internal", message=f"{type(exc).__name__}: {exc}")
        failpoint("before_commit", node_id)
        finish = Finish(
            self.run_id,
            claimed.id,
            self.engine.owner,
            _NODE_STATUS[result.phase],
            result.output,
            result.snapshot,
            result.attempts,
            result.error,
            result.tokens_input,
            result.tokens_output,
            result.cost_usd,
            read,
        )
        completed = result.phase == Phase.COMPLETED
        versions = commit_versions(self.run_id, self.state, node_id, claimed.id, read, completed=completed)
        follow = self._record(node_id, result)
        remember = _cache_put(self.run_id, claimed.id, result)
        results = await self.engine.commits.submit([finish, *versions, *remember, *follow])
        failpoint("after_commit", node_id)
        if not results[0]:
            raise EngineError(
                f"node '{node_id}' of run {self.run_id} was taken over by another engine (this one lost the "
                "run's lease); this engine stops driving the run"
            )
        self._announce(node_id, result)
        return await self._started(follow, results[1 + len(versions) + len(remember) :], keep_one=True)

    def _record(self, node_id: str, result: NodeResult) -> list[Write]:
        """Apply a node's result to the run state; the writes for the successors it decides."""
        self.state.spent_usd += result.cost_usd
        if result.phase == Phase.COMPLETED:
            self.state.complete(node_id, result.output)
            return self._plan(self.state.successors(node_id))
        if result.phase == Phase.WAITING:
            self.state.set_phase(node_id, Phase.WAITING)
        else:
            self.state.set_phase(node_id, Phase.FAILED)
            self.failed = self.failed or node_id
            if result.error and result.error.get("kind") == "budget":
                self.budget_stop = self.budget_stop or str(result.error.get("message"))
        return []

    def _announce(self, node_id: str, result: NodeResult) -> None:
        events = self.engine.events
        if result.phase == Phase.COMPLETED:
            events.emit(
                "node:complete",
                self.run_id,
                node_id,
                tokens_input=result.tokens_input,
                tokens_output=result.tokens_output,
                cost_usd=result.cost_usd,
            )
        elif result.phase == Phase.WAITING:
            events.emit("run:paused", self.run_id, node_id, review_prompt=result.snapshot.get("review_prompt"))
        else:
            events.emit("node:error", self.run_id, node_id, error=result.error)

    def _adopt(self, node_id: str) -> list[Write]:
        """The node was finished elsewhere: take its committed state; the writes for its successors."""
        for rec in self.store.runs.node_runs(self.run_id):
            if rec.node_id == node_id and rec.activation == self.state.nodes[node_id].activation:
                self.engine._restore(self.state, [rec])
        if self.state.nodes[node_id].phase == Phase.RUNNING:  # still running elsewhere: treat as not ours
            self.state.set_phase(node_id, Phase.PENDING)
            raise EngineError(f"node '{node_id}' of run {self.run_id} is being executed by another process")
        if self.state.nodes[node_id].phase == Phase.COMPLETED:
            return self._plan(self.state.successors(node_id))
        return []

    # -- the run's outcome -------------------------------------------------------------------------------------

    async def _conclude(self) -> RunOutcome:
        phases = self.state.phases()
        if self.failed is not None or Phase.FAILED in phases.values():
            failed = self.failed or next(n for n, p in phases.items() if p == Phase.FAILED)
            error = {"kind": "node_failed", "node_id": failed, "message": f"node '{failed}' failed"}
            if self.budget_stop is not None:
                error = {"kind": "budget", "node_id": failed, "message": self.budget_stop}
            await self._end(EndRun(self.run_id, self.engine.owner, RunStatus.FAILED, error=error))
            self.engine.events.emit("workflow:error", self.run_id, failed, error=error)
            return RunOutcome(self.run_id, RunStatus.FAILED, None, error)
        if Phase.WAITING in phases.values():
            await self._end(EndRun(self.run_id, self.engine.owner, RunStatus.PAUSED))
            return RunOutcome(self.run_id, RunStatus.PAUSED)
        output = self.state.run_output()
        await self._end(EndRun(self.run_id, self.engine.owner, RunStatus.COMPLETED, output=output))
        self.engine.events.emit("workflow:complete", self.run_id, output=output)
        return RunOutcome(self.run_id, RunStatus.COMPLETED, output)

    async def _end(self, end: EndRun) -> None:
        if not (await self.engine.commits.submit([end]))[0]:
            raise EngineError(
                f"run {self.run_id} was taken over by another engine (this one lost its lease) before it "
                f"could record the outcome '{end.status}'"
            )
        self.ended = True
