"""Executing one run: event-driven readiness, node tasks, and the group-committed writes.

`Engine` (runner.py) begins a run and hands it to a `Scheduler`, which claims ready nodes,
runs them, commits each result together with the claims and skips it decides (one unit of
the group commit, `commits.py`), and records the run's outcome. The writes and events that
record a node's result, and the run's verdict, are built in `recording.py`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.engine.absorb import RERUN_AFTER, STALE_AFTER, absorb
from plait.engine.ahead import start_ahead
from plait.engine.events import NodeSkipped, NodeStale, NodeStarted, RunCompleted, RunFailed
from plait.engine.executors import EXECUTORS
from plait.engine.guard import committable, internal_failure, lost_failure, lost_too_often
from plait.engine.ledger import commit_versions, consumed, input_version
from plait.engine.node_gate import NodeGate
from plait.engine.outcome import EngineError, RunOutcome
from plait.engine.recording import Records, Verdict, announce, cache_put, encode_records, finish_write, run_verdict
from plait.engine.render_limits import RenderLimitError
from plait.engine.restore import restore
from plait.engine.results import budget_failure
from plait.engine.run_budget import BudgetExceeded
from plait.engine.runtime import NodeResult
from plait.engine.state import Phase, RunState
from plait.failpoints import failpoint
from plait.llm.slots import may_go_on, paced
from plait.model.enums import NodeStatus, RunStatus
from plait.model.nodes import NodeBase
from plait.store import NodeRunRecord
from plait.store.faults import StoreUnavailable, transient
from plait.store.ledger import INPUT
from plait.store.new_runs import CreateRun
from plait.store.writes import Claim, EndRun, Skip, Stale, Watch, Write

if TYPE_CHECKING:
    from plait.engine.commits import GroupCommit
    from plait.engine.events import EventBus
    from plait.engine.resources import ResourceGate
    from plait.engine.runtime import Runtime
    from plait.store import Store


@dataclass(frozen=True, slots=True)
class Kernel:
    """What a scheduler executes with, from the engine that owns it: its name on claims and
    leases, the runtime that executes nodes, the group commit, the event bus and the store."""

    owner: str
    runtime: Runtime
    commits: GroupCommit
    events: EventBus
    store: Store
    retry_lost: bool = False
    """Execute a node again however often its process went down while executing it (an explicit
    `plait resume` by a person); otherwise such a node fails (`plait.engine.guard.lost_too_often`)."""
    gate: ResourceGate | None = None
    """Decides each node before it executes (`plait.engine.node_gate`); None: nothing is decided."""
    max_nodes: int = 3
    """The nodes of one run executing at once (`[resources] max_concurrent_nodes`)."""


@dataclass(frozen=True, slots=True)
class _Committed:
    """What committing a node's result decided: its status, the successors' claims and skips
    (with their results) and the run's count of corrections seen in that transaction."""

    status: NodeStatus
    follow: list[Write]
    follow_results: list[Any]
    corrections: Any


_NODE_STATUS = {
    Phase.COMPLETED: NodeStatus.COMPLETED,
    Phase.FAILED: NodeStatus.FAILED,
    Phase.WAITING: NodeStatus.PENDING,
}


class Scheduler:
    """Event-driven readiness: finishing a node decides its successors (run or skip) at once,
    and its result, their claims and the skips commit together in one unit of the group commit."""

    def __init__(
        self,
        kernel: Kernel,
        run_id: str,
        state: RunState,
        seen: int = 0,
        *,
        create: CreateRun | None = None,
        bounded: bool = False,
    ):
        """`create`: the run does not exist yet; it is created in the first commit, with its
        input and first claims. `bounded`: its caller bounds its runs in flight (the provider
        capacity rule does not apply to its nodes)."""
        self.kernel = kernel
        self.admission = NodeGate(kernel.gate, run_id, kernel.max_nodes, bounded=bounded,
                                  degraded=kernel.runtime.degraded)  # fmt: skip
        self.create = create
        self.seen = seen
        """The run's count of corrections as this scheduler last took them up (see absorb.py)."""
        self.store = kernel.store
        self.run_id = run_id
        self.state = state
        self.tasks: set[asyncio.Task[None]] = set()
        self.failed: str | None = None
        self.budget_stop: dict[str, Any] | None = None
        """Set when a node was stopped by a budget (the run's max_cost_usd, or a run budget: the
        error's `budget` names its key): the run fails for that reason."""
        self.ended = False
        """The run's outcome is committed and its lease given up."""
        self._ended_with: Verdict | None = None
        """The outcome committed with the last node's result, for `_conclude` to report."""
        self.began = time.monotonic()
        """When this execution began: the run's execution time adds up its executions only."""
        self._busy = 1  # the node tasks in flight, plus `execute` until its first claims are made
        self._switched: set[str] = set()
        """Nodes a rerun's new value ran or skipped against an earlier decision (`_redecided`)."""
        self._held: set[str] = set()
        """Pending nodes ready but for a node upstream yet to give its value (`RunState.must_wait`):
        planned again whenever a node settles."""
        self._idle: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def execute(self, on_started: Callable[[], None], on_begun: Callable[[], None] = lambda: None) -> RunOutcome:
        """Run to the end; `on_begun()` once the run exists and before any node's event,
        `on_started()` once the first nodes are claimed (or nothing is left to claim)."""
        try:
            try:
                self._settle_branches()
                first = self._plan(self.state.compiled.topology.order)
                if INPUT not in self.state.versions:  # a fresh run: the input is version 1 of the ledger
                    first.insert(0, input_version(self.run_id, self.state))
                if self.create is None:
                    on_begun()
                    await self._commit(first)
                else:
                    await self._commit([self.create, *first], on_commit=on_begun)
            finally:
                self._release()
                on_started()
            while True:
                await self._idle
                outcome = await self._conclude()
                if outcome is not None:
                    return outcome
        except BaseException:
            await self._stop()
            raise

    async def _stop(self) -> None:
        """The run is stopped (cancelled, or an error): the nodes holding a model's answer record it
        first (a paid call is not asked again when the run is resumed), making no new call and
        claiming nothing; every other node is cancelled. Cancelled again meanwhile, it waits for
        nothing more."""
        self.state.stopping = True
        for task in self.tasks:
            if task not in self.state.answered:
                task.cancel()
        try:
            await asyncio.gather(*self.tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            raise

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
                    stack.extend([*self._redecided(current), *self._held])
                elif decision == Phase.RUNNING and self.state.must_wait(current):
                    self._held.add(current)
                elif decision == Phase.RUNNING and self.failed is None and not self.state.stopping:
                    self._held.discard(current)
                    node_state.phase = Phase.RUNNING
                    writes.append(Claim(self.run_id, current, node_state.activation, self.kernel.owner))
        return writes

    async def _commit(self, writes: list[Write], on_commit: Callable[[], None] | None = None) -> None:
        """Commit claims and skips (`on_commit()` once committed), then start the nodes won;
        adopt the ones finished elsewhere."""
        if writes:
            # nobody can have corrected a run that this very transaction creates: no need to look
            watch = [] if isinstance(writes[0], CreateRun) else [Watch(self.run_id)]
            results = await self.kernel.commits.submit([*writes, *watch])
            if on_commit is not None:
                on_commit()
            later = self._take_up(results[-1] if watch else None)
            await self._started(writes, results[: len(writes)])
            await self._commit(later)

    def _take_up(self, corrections: Any) -> list[Write]:
        """When corrections arrived since the last commit: apply them to the state (before any
        node claimed in this commit starts); the writes they call for."""
        if corrections is None or corrections <= self.seen:
            return []
        self.seen = corrections
        done = absorb(self.state, self.store, self.run_id)
        turned = self._settle_branches()  # an overridden CONDITION's new branch is taken now, not on a later drive
        return [*done.stale, *self._plan([*done.ready, *turned])]

    async def _started(
        self, writes: Sequence[Write], results: Sequence[Any], *, keep_one: bool = False
    ) -> NodeRunRecord | None:
        """Start the claimed nodes (with `keep_one`, all but one, returned for the caller's own
        task to continue with: a chain then runs in one task), adopt the rest, announce skips."""
        adopted: list[str] = []
        kept: NodeRunRecord | None = None
        for write, result in zip(writes, results, strict=True):
            if isinstance(write, Skip):
                self.kernel.events.emit(NodeSkipped(self.run_id, write.node_id))
            elif isinstance(write, Stale):  # a correction taken up while the run executes
                self.kernel.events.emit(NodeStale(self.run_id, write.node_id))
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
        self.state.answered.discard(task)
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
        """Once the node has a slot of its run and the resource gate's go, execute it and commit
        its unit; a successor it claimed, to continue with."""
        release = await self.admission.enter(self.state.nodes[claimed.node_id].node, claimed.id)
        try:
            return await self._execute_admitted(claimed)
        finally:
            release()

    async def _execute_admitted(self, claimed: NodeRunRecord) -> NodeRunRecord | None:
        node_id = claimed.node_id
        node = self.state.nodes[node_id].node
        if self.kernel.events.listened:
            self.kernel.events.emit(NodeStarted(self.run_id, node_id, node_type=str(node.type)))
        read = consumed(self.state, node)
        self.state.nodes[node_id].read = read
        self.state.nodes[node_id].node_run_id = claimed.id
        budget = self.state.budget
        if lost_too_often(claimed, node.type) and not self.kernel.retry_lost:
            result = lost_failure(claimed)
        elif budget is not None and (budget.reached or (claimed.claims == 1 and budget.execute_node())):
            result = budget_failure(budget)  # a fresh activation counts against the run's node runs
        else:
            result = await self._executed(node)
        records = encode_records(result)
        if budget is not None and budget.store(records.size) is not None and result.phase != Phase.FAILED:
            result = budget_failure(budget)  # storing it would pass the run's stored bytes
            records = encode_records(result)
        failpoint("before_commit", node_id)
        try:
            committed = await self._commit_result(claimed, result, read, records)
        except (EngineError, StoreUnavailable):  # the lease is lost, or the database is away: stop, fail nothing
            raise
        except Exception as exc:  # the store refused this node's writes: fail the node alone, never the engine
            result = internal_failure(exc, during=f"recording node '{node_id}'")
            committed = await self._commit_failure(claimed, result)
        self.state.answered.discard(asyncio.current_task())  # recorded: nothing held any more
        failpoint("after_commit", node_id)
        if not may_go_on():  # what follows (successors, the next node's prompt) can wait for calls ending now
            await paced()
        announce(self.kernel.events, self.run_id, node_id, claimed.id, result)
        if committed.status == NodeStatus.STALE:
            self.kernel.events.emit(NodeStale(self.run_id, node_id))
        later = self._take_up(committed.corrections)
        kept = await self._started(committed.follow, committed.follow_results, keep_one=True)
        await self._commit(later)
        return kept

    async def _executed(self, node: NodeBase) -> NodeResult:
        """The node's result as its executor makes it, made committable; a failure when the
        executor raises (a template over the render budget, a run budget reached, a bug)."""
        failpoint("execute", node.id)
        try:
            return committable(node.id, await EXECUTORS[node.type](node, self.state, self.kernel.runtime))
        except RenderLimitError as exc:  # one of its templates went over the render budget
            return NodeResult.failed({}, [], kind="render", message=f"node '{node.id}': {exc}")
        except BudgetExceeded:  # it would have started a child run past the run's budget
            assert self.state.budget is not None
            return budget_failure(self.state.budget)
        except Exception as exc:  # a bug in an executor must fail the node, not hang the run
            if isinstance(exc, StoreUnavailable) or transient(exc):
                raise  # the database failed under it: the run stops, unfailed, and is continued later
            return internal_failure(exc, during=f"executing node '{node.id}'")

    async def _commit_result(
        self, claimed: NodeRunRecord, result: NodeResult, read: dict[str, int], records: Records
    ) -> _Committed:
        """Apply `result` to the run state and commit it (its `records`, encoded) with the ledger
        versions, the cache entry and the successors' claims and skips it decides."""
        node_id = claimed.node_id
        status = _NODE_STATUS[result.phase]
        if status == NodeStatus.COMPLETED and self.state.nodes[node_id].after == STALE_AFTER:
            status = NodeStatus.STALE  # it read a value corrected while it ran (INVALIDATE)
        finish = finish_write(self.run_id, claimed.id, self.kernel.owner, status, result, read, records, node_id)
        completed = result.phase == Phase.COMPLETED
        versions = commit_versions(self.run_id, self.state, node_id, claimed.id, read, completed=completed)
        follow = self._record(node_id, result)
        for write in follow:  # their evaluations run while this commit is written
            if isinstance(write, Claim):
                start_ahead(self.state, self.state.nodes[write.node_id].node, self.kernel.runtime)
        remember = cache_put(self.run_id, claimed.id, result)
        last = self._last(follow)
        end = [] if last is None else [self._end_run(last)]
        try:
            results = await self.kernel.commits.submit(
                [finish, *versions, *remember, *follow, Watch(self.run_id), *end]
            )
        except Exception:
            for write in follow:  # not committed: the successors were never claimed or skipped
                if isinstance(write, Claim | Skip):
                    self.state.set_phase(write.node_id, Phase.PENDING)
            raise
        self._check_lease(node_id, results[0])
        if end:
            if results[-1]:
                self.ended, self._ended_with = True, last
            results = results[:-1]
        return _Committed(status, follow, list(results[1 + len(versions) + len(remember) : -1]), results[-1])

    def _last(self, follow: Sequence[Write]) -> Verdict | None:
        """The run's outcome when this node's commit is its last (no other node in flight, no
        successor claimed): written in the same transaction, which saves the run one commit. A
        correction committed meanwhile makes that write change nothing, and the run goes on."""
        if self._busy != 1 or self.state.stopping or any(isinstance(write, Claim) for write in follow):
            return None
        return run_verdict(self.state, self.failed, self.budget_stop)

    async def _commit_failure(self, claimed: NodeRunRecord, result: NodeResult) -> _Committed:
        """Commit a node's failure alone (no versions, no cache, no successors): what is left when
        its real result could not be stored. Raises what the store raises: then it is the store
        itself that fails, and the engine stops."""
        self._record(claimed.node_id, result)
        finish = finish_write(
            self.run_id, claimed.id, self.kernel.owner, NodeStatus.FAILED, result, {}, node_id=claimed.node_id
        )
        results = await self.kernel.commits.submit([finish, Watch(self.run_id)])
        self._check_lease(claimed.node_id, results[0])
        return _Committed(NodeStatus.FAILED, [], [], results[-1])

    def _check_lease(self, node_id: str, finished: Any) -> None:
        if not finished:
            raise EngineError(
                f"node '{node_id}' of run {self.run_id} was taken over by another engine (this one lost the "
                "run's lease); this engine stops driving the run"
            )

    def _record(self, node_id: str, result: NodeResult) -> list[Write]:
        """Apply a node's result to the run state; the writes for the successors it decides."""
        self.state.spent_usd += result.cost_usd
        if result.phase == Phase.COMPLETED:
            self.state.complete(node_id, result.output)
            node_state = self.state.nodes[node_id]
            after, node_state.after = node_state.after, None
            if after == RERUN_AFTER:  # it read a value corrected while it ran: run it again
                self.state.reopen(node_id)
                return self._plan([node_id])
            return self._plan([*self._redecided(node_id), *self._held])
        if result.phase == Phase.WAITING:
            self.state.set_phase(node_id, Phase.WAITING)
        else:
            self.state.set_phase(node_id, Phase.FAILED)
            self.failed = self.failed or node_id
            if result.error and result.error.get("kind") == "budget":
                self.budget_stop = self.budget_stop or result.error
        return []

    def _settle_branches(self) -> list[str]:
        """Before anything runs, and when corrections are taken up: nodes an earlier decision
        settled that the CONDITIONs' values in effect now turn the other way (a person overrode a
        CONDITION's branch) are made pending again, in topological order, as `_redecided` does
        when a CONDITION runs again. The nodes made pending, to plan."""
        return [node_id for level in self.state.compiled.topology.levels for node_id in level if self._turn(node_id)]

    def _turn(self, node_id: str, source: str | None = None) -> bool:
        """Make `node_id` pending again (a new activation) when its settled phase is not what its
        in-edges decide now, or when `source`, a node a new decision ran, reaches it; whether it did."""
        node_state = self.state.nodes[node_id]
        if node_state.phase not in (Phase.COMPLETED, Phase.SKIPPED):
            return False
        decision = self.state.decide(node_id)
        flips = decision is not None and (decision == Phase.SKIPPED) != (node_state.phase == Phase.SKIPPED)
        if flips or (decision == Phase.RUNNING and source in self._switched):
            self.state.reopen(node_id)
            self._switched.add(node_id)
            return True
        return False

    def _redecided(self, source: str) -> list[str]:
        """The successors of `source`, which just completed or was skipped; those an earlier
        activation of it settled are made pending again (a new activation) where its new value
        turns them the other way: a rerun CONDITION that now takes another branch runs the nodes
        it skipped before and skips those on the branch it left, so that their outputs leave the
        run's; and a node the newly taken branch reaches (a join) runs again on it. All of them
        are turned before any is planned: a join sees both branches as they now are."""
        successors = list(self.state.successors(source))
        for node_id in successors:
            self._turn(node_id, source)
        return successors

    def _adopt(self, node_id: str) -> list[Write]:
        """The node was finished elsewhere: take its committed state; the writes for its successors."""
        for rec in self.store.runs.node_runs(self.run_id):
            if rec.node_id == node_id and rec.activation == self.state.nodes[node_id].activation:
                restore(self.state, [rec])
        if self.state.nodes[node_id].phase == Phase.RUNNING:  # still running elsewhere: treat as not ours
            self.state.set_phase(node_id, Phase.PENDING)
            raise EngineError(f"node '{node_id}' of run {self.run_id} is being executed by another process")
        if self.state.nodes[node_id].phase == Phase.COMPLETED:
            return self._plan([*self.state.successors(node_id), *self._held])
        return []

    # -- the run's outcome -------------------------------------------------------------------------------------

    def _end_run(self, verdict: Verdict) -> EndRun:
        active = time.monotonic() - self.began
        return EndRun(
            self.run_id,
            self.kernel.owner,
            verdict.status,
            verdict.output,
            verdict.error,
            seen=self.seen,
            active_s=active,
            wake_at=verdict.wake_at,
        )

    async def _conclude(self) -> RunOutcome | None:
        """Record the run's outcome (unless the last node's commit already did); None when a
        correction arrived meanwhile and left work to do."""
        verdict = self._ended_with or run_verdict(self.state, self.failed, self.budget_stop)
        if self._ended_with is None and not await self._end(verdict):
            return None
        events = self.kernel.events
        if verdict.status == RunStatus.FAILED:
            events.emit(RunFailed(self.run_id, verdict.failed, error=verdict.error))
            return RunOutcome(self.run_id, RunStatus.FAILED, None, verdict.error)
        if verdict.status == RunStatus.COMPLETED:
            events.emit(RunCompleted(self.run_id, output=verdict.output))
            return RunOutcome(self.run_id, RunStatus.COMPLETED, verdict.output)
        return RunOutcome(self.run_id, verdict.status)

    async def _end(self, verdict: Verdict) -> bool:
        """Commit the outcome unless a correction arrived since the last commit: then take it up
        (False: the run goes on if it left work to do; `_conclude` is asked again when idle)."""
        end = self._end_run(verdict)
        if (await self.kernel.commits.submit([end]))[0]:
            self.ended = True
            return True
        record = self.store.runs.get(self.run_id)
        if record.lease_owner != self.kernel.owner or record.corrections == self.seen:
            raise EngineError(
                f"run {self.run_id} was taken over by another engine (this one lost its lease) before it "
                f"could record the outcome '{verdict.status}'"
            )
        self._busy = 1
        self._idle = asyncio.get_running_loop().create_future()
        try:
            await self._commit(self._take_up(record.corrections))
        finally:
            self._release()
        return False
