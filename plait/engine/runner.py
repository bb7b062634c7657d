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
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from plait.engine.compiled import load_compiled
from plait.engine.events import EventBus
from plait.engine.executors import EXECUTORS, SUPPORTED
from plait.engine.failpoints import failpoint
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import CompiledRun, Phase, RunState
from plait.llm.provider import Provider
from plait.model.nodes import NodeType
from plait.store import NodeRunRecord, NodeStatus, RunStatus, Store

ACTIVATION = 1  # reruns (corrections issue) add activations


class EngineError(Exception):
    """The run cannot be executed as asked (unknown run, busy elsewhere, unsupported node type...)."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run_id: str
    status: RunStatus
    output: Any = None
    error: dict[str, Any] | None = None


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
    ):
        self.store = store
        self.runtime = Runtime(provider, llm_concurrency=llm_concurrency)
        self.owner = new_owner()
        self.lease_ttl_s = lease_ttl_s
        self.events = events or EventBus()
        self._compiled: dict[tuple[str, int], CompiledRun] = {}

    async def aclose(self) -> None:
        await self.runtime.aclose()

    def compiled_for(self, def_id: str, version: int) -> CompiledRun:
        key = (def_id, version)
        if key not in self._compiled:
            self._compiled[key] = load_compiled(self.store, def_id, version)
        return self._compiled[key]

    async def run(self, run_id: str) -> RunOutcome:
        """Execute (or continue) a run until it completes, fails or pauses for a person."""
        record = self.store.runs.get(run_id)
        if record.status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED):
            return RunOutcome(run_id, RunStatus(record.status), record.output, record.error)
        compiled = self.compiled_for(record.def_id, record.graph_def_ver)
        self._check_supported(compiled)
        if not self._acquire(run_id):
            raise EngineError(
                f"run {run_id} is being executed by another process "
                f"({self.store.runs.get(run_id).lease_owner}); wait for it or try again later"
            )
        renew = asyncio.create_task(self._renew(run_id))
        try:
            state = RunState(compiled, record.input or {})
            if record.started_at is not None:  # a fresh run has no node runs to restore
                self._restore(state, self.store.runs.node_runs(run_id))
            self.store.runs.set_status(run_id, RunStatus.RUNNING)
            self.events.emit("execution.started", run_id, graph=record.graph_slug, version=record.graph_def_ver)
            return await _Scheduler(self, run_id, state).execute()
        finally:
            renew.cancel()
            self.store.runs.release_lease(run_id, self.owner)

    def _check_supported(self, compiled: CompiledRun) -> None:
        for node in compiled.nodes.values():
            if node.type not in SUPPORTED:
                raise EngineError(
                    f"node '{node.id}' is a {node.type} node, which this release validates but does "
                    f"not execute yet (supported: {', '.join(sorted(SUPPORTED))})"
                )
            if node.type == NodeType.LLM_CALL and self.runtime.provider is None:
                raise EngineError(
                    f"node '{node.id}' calls a model but no provider is configured: pass --llm scripted:FILE"
                )

    def _acquire(self, run_id: str) -> bool:
        if self.store.runs.acquire_lease(run_id, self.owner, self.lease_ttl_s):
            return True
        holder = self.store.runs.get(run_id).lease_owner
        if holder and _owner_dead(holder):  # killed on this machine: no need to wait for the lease to expire
            return self.store.runs.steal_lease(run_id, holder, self.owner, self.lease_ttl_s)
        return False

    async def _renew(self, run_id: str) -> None:
        while True:
            await asyncio.sleep(self.lease_ttl_s / 3)
            await asyncio.to_thread(self.store.runs.renew_lease, run_id, self.owner, self.lease_ttl_s)

    def _restore(self, state: RunState, records: list[NodeRunRecord]) -> None:
        for rec in records:
            if rec.node_id not in state.nodes or rec.activation != ACTIVATION:
                continue
            if rec.status in (NodeStatus.COMPLETED, NodeStatus.OVERRIDDEN):
                state.complete(rec.node_id, rec.effective_output)
            elif rec.status == NodeStatus.SKIPPED:
                state.set_phase(rec.node_id, Phase.SKIPPED)
            elif rec.status == NodeStatus.FAILED:
                state.set_phase(rec.node_id, Phase.FAILED)
            elif rec.status == NodeStatus.PENDING and state.nodes[rec.node_id].node.type == NodeType.HUMAN_REVIEW:
                state.set_phase(rec.node_id, Phase.WAITING)
            # `running` rows belong to a dead process: the node is claimed again and re-executed


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


class _Scheduler:
    """Event-driven readiness: finishing a node decides its successors (run or skip) at once."""

    def __init__(self, engine: Engine, run_id: str, state: RunState):
        self.engine = engine
        self.store = engine.store
        self.run_id = run_id
        self.state = state
        self.tasks: dict[asyncio.Task[NodeResult | None], str] = {}
        self.failed: str | None = None

    async def execute(self) -> RunOutcome:
        for node_id in self.state.compiled.topology.order:
            if self.state.nodes[node_id].phase == Phase.PENDING:
                self._consider(node_id)
        while self.tasks:
            done, _ = await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                node_id = self.tasks.pop(task)
                self._finished(node_id, task.result())
        return self._conclude()

    def _consider(self, node_id: str) -> None:
        """Start or skip a pending node whose inputs are all resolved; skipping propagates."""
        stack = [node_id]
        while stack:
            current = stack.pop()
            node_state = self.state.nodes[current]
            if node_state.phase != Phase.PENDING:
                continue
            decision = self.state.decide(current)
            if decision is None:
                continue
            if decision == Phase.SKIPPED:
                self.store.runs.record_skipped(self.run_id, current, ACTIVATION)
                self.state.set_phase(current, Phase.SKIPPED)
                self.engine.events.emit("node:skipped", self.run_id, current)
                stack.extend(self.state.successors(current))
            elif self.failed is None:
                node_state.phase = Phase.RUNNING
                task = asyncio.create_task(self._run_node(current))
                self.tasks[task] = current

    async def _run_node(self, node_id: str) -> NodeResult | None:
        claimed = self.store.runs.claim_node(self.run_id, node_id, ACTIVATION, self.engine.owner)
        if claimed is None:
            return None  # finished by someone else (or by us before a crash): adopt what is stored
        node = self.state.nodes[node_id].node
        self.engine.events.emit("node:start", self.run_id, node_id, type=str(node.type))
        try:
            result = await EXECUTORS[node.type](node, self.state, self.engine.runtime)
        except Exception as exc:  # a bug in an executor must fail the node, not hang the run
            result = NodeResult.failed({}, [], kind="internal", message=f"{type(exc).__name__}: {exc}")
        status = {
            Phase.COMPLETED: NodeStatus.COMPLETED,
            Phase.FAILED: NodeStatus.FAILED,
            Phase.WAITING: NodeStatus.PENDING,
        }[result.phase]
        failpoint("before_commit", node_id)
        committed = self.store.runs.finish_node(
            claimed.id,
            self.engine.owner,
            status=status,
            output=result.output,
            input_snapshot=result.snapshot,
            attempts=result.attempts,
            error=result.error,
            tokens_input=result.tokens_input,
            tokens_output=result.tokens_output,
            cost_usd=result.cost_usd,
        )
        failpoint("after_commit", node_id)
        if not committed:
            return None
        return result

    def _finished(self, node_id: str, result: NodeResult | None) -> None:
        if result is None:
            self._adopt(node_id)
        elif result.phase == Phase.COMPLETED:
            self.state.complete(node_id, result.output)
            self.engine.events.emit(
                "node:complete",
                self.run_id,
                node_id,
                tokens_input=result.tokens_input,
                tokens_output=result.tokens_output,
                cost_usd=result.cost_usd,
            )
        elif result.phase == Phase.WAITING:
            self.state.set_phase(node_id, Phase.WAITING)
            self.engine.events.emit(
                "run:paused", self.run_id, node_id, review_prompt=result.snapshot.get("review_prompt")
            )
            return
        else:
            self.state.set_phase(node_id, Phase.FAILED)
            self.failed = self.failed or node_id
            self.engine.events.emit("node:error", self.run_id, node_id, error=result.error)
            return
        for successor in self.state.successors(node_id):
            self._consider(successor)

    def _adopt(self, node_id: str) -> None:
        """The node was finished elsewhere: take its committed state."""
        for rec in self.store.runs.node_runs(self.run_id):
            if rec.node_id == node_id and rec.activation == ACTIVATION:
                self.engine._restore(self.state, [rec])
        if self.state.nodes[node_id].phase == Phase.RUNNING:  # still running elsewhere: treat as not ours
            self.state.set_phase(node_id, Phase.PENDING)
            raise EngineError(f"node '{node_id}' of run {self.run_id} is being executed by another process")
        if self.state.nodes[node_id].phase == Phase.COMPLETED:
            for successor in self.state.successors(node_id):
                self._consider(successor)

    def _conclude(self) -> RunOutcome:
        phases = self.state.phases()
        if self.failed is not None or Phase.FAILED in phases.values():
            failed = self.failed or next(n for n, p in phases.items() if p == Phase.FAILED)
            error = {"kind": "node_failed", "node_id": failed, "message": f"node '{failed}' failed"}
            self.store.runs.set_status(self.run_id, RunStatus.FAILED, error=error)
            self.engine.events.emit("workflow:error", self.run_id, failed, error=error)
            return RunOutcome(self.run_id, RunStatus.FAILED, None, error)
        if Phase.WAITING in phases.values():
            self.store.runs.set_status(self.run_id, RunStatus.PAUSED)
            return RunOutcome(self.run_id, RunStatus.PAUSED)
        output = self.state.run_output()
        self.store.runs.set_status(self.run_id, RunStatus.COMPLETED, output=output)
        self.engine.events.emit("workflow:complete", self.run_id, output=output)
        return RunOutcome(self.run_id, RunStatus.COMPLETED, output)
