"""Checking a run: once its corrections have settled, does every recorded value agree with the
values in effect? (`plait runs check`, `GET /api/runs/{id}/check`; docs/corrections.md,
"Checking a run", says exactly what is guaranteed.)

Nothing is written. The run is read from the store as the engine reads it when it continues a
run (`plait.engine.restore`), and every check reuses what the engine decides with:

- each node's newest activation that completed or was overridden read every owner (`input` or a
  node) at the value that owner has now: the version it recorded in `consumed`, or a later one
  with the same value (a `freeze`, or a rollback to that value). Otherwise it must be `stale`,
  or every change since must be excused: an override made with policy KEEP (a person kept the
  node as it is), or one made before the node itself was corrected (its value is a person's). A
  node waiting for a person, or queued, is not judged: it reads the values when it goes on;
- its input snapshot agrees with its predecessors' effective outputs now: the same active
  predecessors, and the same `current` (what `RunState.current_for` hands it);
- the field ledger's newest version of every node with an output holds that output;
- whether a node is on a taken branch is worked out again from each CONDITION's effective branch
  (`RunState.decide`, `RunState.edge_active`): a node with an output on a branch no longer taken,
  or a skipped node on a branch that is taken, is a problem;
- a completed run's output is what `RunState.run_output` gives from its exit nodes' effective
  outputs;
- the output of a SUBGRAPH, MAP or LOOP node holds its completed children's current outputs (as
  `plait.runs.children.regathered` gathers them; once the node is overridden, those of the
  children changed since), and each child run of a node's newest activation is checked the same
  way, recursively.

A run still pending, or marked running, has not settled: that is a problem of its own, and the
values of a run an engine is executing right now are not judged (they are moving).

How values are compared (a read against the field ledger, a snapshot's `current`, a value quoted
in a message) is `_check_values.py`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from plait.engine.compiled import load_compiled
from plait.engine.restore import restore
from plait.engine.state import Phase, RunState
from plait.model.enums import NodeStatus, RunStatus
from plait.model.nodes import NodeType
from plait.model.output_meta import strip_meta_deep
from plait.runs._check_values import Ledger, as_recorded, differing_predecessors, names, shown, topological
from plait.runs.children import regathered
from plait.store import NodeRunRecord, RunRecord, Store, current_activations
from plait.store.ledger import INPUT

_CHILD_RUN_NODES = frozenset({NodeType.SUBGRAPH, NodeType.MAP, NodeType.LOOP})
_DONE = frozenset({NodeStatus.COMPLETED, NodeStatus.OVERRIDDEN})
"""The activations whose reads are judged (a `stale` one is known to be out of date)."""


class ProblemKind(StrEnum):
    """What is inconsistent; the codes are stable (scripts and the HTTP API branch on them)."""

    STALE_READ_NOT_MARKED = "stale_read_not_marked"
    """A node read a value that has changed since, and is not marked stale."""
    INPUT_MISMATCH = "input_mismatch"
    """A node's input snapshot disagrees with its predecessors' effective outputs now."""
    LEDGER_MISMATCH = "ledger_mismatch"
    """The field ledger's newest version of a node does not hold the node's effective output."""
    OUTPUT_MISMATCH = "output_mismatch"
    """A completed run's output is not what its exit nodes' effective outputs give."""
    INACTIVE_BRANCH_OUTPUT = "inactive_branch_output"
    """A node has an output on a branch its CONDITION no longer takes."""
    ACTIVE_BRANCH_SKIPPED = "active_branch_skipped"
    """A node is skipped on a branch its CONDITION takes now."""
    CHILD_OUTPUT_NOT_GATHERED = "child_output_not_gathered"
    """A SUBGRAPH, MAP or LOOP node's output does not hold a child run's current output."""
    NOT_SETTLED = "not_settled"
    """The run has work left (pending, or marked running): it has not settled."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One inconsistency: where (run, node, activation), what (`kind`, `message`) and what to do (`hint`)."""

    kind: ProblemKind
    run_id: str
    message: str
    hint: str
    node_id: str | None = None
    """None for a problem of the run as a whole (`not_settled`, an output no exit node explains)."""
    node_run_id: str | None = None
    activation: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "run_id": self.run_id,
            "node_id": self.node_id,
            "node_run_id": self.node_run_id,
            "activation": self.activation,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True, slots=True)
class RunCheck:
    """The check of a run and of its child runs: how many node runs were checked, what is wrong."""

    run_id: str
    checked: int
    """Node runs checked: the newest activation of every node that has one, in the run and its children."""
    problems: list[Problem] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        """What `plait runs check --json` prints and `GET /api/runs/{id}/check` answers."""
        return {
            "run_id": self.run_id,
            "consistent": self.consistent,
            "checked": self.checked,
            "problems": [p.as_json() for p in self.problems],
        }


def check_run(store: Store, run_id: str) -> RunCheck:
    """Check the run `run_id` (a full id; NotFoundError when there is none) and every child run
    of its nodes' newest activations. Reads only."""
    root = store.runs.get(run_id)
    problems: list[Problem] = []
    checked = 0
    pending = [root]
    while pending:  # the run, then its children, level by level
        record = pending.pop(0)
        if _executing(record):
            problems.append(
                Problem(
                    ProblemKind.NOT_SETTLED,
                    record.id,
                    f"run {record.id} is being executed ({record.lease_owner} holds it): its values may still "
                    "change, so they were not checked",
                    "check it again once it has ended or paused",
                )
            )
            continue
        checker = _RunChecker(store, record)
        checker.check()
        problems.extend(checker.problems)
        checked += checker.checked
        pending.extend(checker.children)
    return RunCheck(root.id, checked, problems)


def _executing(record: RunRecord) -> bool:
    """An engine is executing the run now: it is `running` and its lease is live."""
    live = record.lease_owner is not None and (record.lease_expires_at or 0.0) >= time.time()
    return record.status == RunStatus.RUNNING and live


class _RunChecker:
    """The checks of one run that no engine is executing (its child runs get checkers of their own)."""

    def __init__(self, store: Store, record: RunRecord) -> None:
        self.store = store
        self.record = record
        self.compiled = load_compiled(store, record.graph_id, record.graph_version, record.body)
        self.records = store.runs.node_runs(record.id)
        self.newest = current_activations(self.records)
        """Per node, its newest activation: what the checks judge (older ones are history)."""
        self.ledger = Ledger(store.ledger.history(record.id), {r.id: r for r in self.records})
        self.expected = RunState(self.compiled, record.input or {}, run_id=record.id)
        """The run state the CONDITIONs' effective branches give (see `_place`)."""
        self.inactive: dict[str, str] = {}
        """Node with an output on a branch no longer taken -> the first such node of its branch."""
        self.checked = 0
        self.children: list[RunRecord] = []
        """The child runs of the nodes' newest activations: checked next."""
        self.problems: list[Problem] = []

    def check(self) -> None:
        self._settled()
        self._nodes()
        self._children()
        if self.record.status == RunStatus.COMPLETED:
            self._output()

    # -- the run as a whole ------------------------------------------------------------------------

    def _settled(self) -> None:
        """A pending run (work queued), or one marked running that no engine executes, has not settled."""
        record = self.record
        if record.status == RunStatus.PENDING:
            queued = sorted(
                n for n, r in self.newest.items() if r.status == NodeStatus.PENDING and not r.input_snapshot
            )
            verb = "is" if len(queued) == 1 else "are"
            what = f"{names(queued)} {verb} queued to run" if queued else "it has not started"
            self._run_problem(
                ProblemKind.NOT_SETTLED,
                f"run {record.id} is pending: {what}",
                f"execute what is left with `plait resume {record.id}`, then check it again",
            )
        elif record.status == RunStatus.RUNNING:
            self._run_problem(
                ProblemKind.NOT_SETTLED,
                f"run {record.id} is marked running but no engine is executing it (it was stopped or killed)",
                f"finish it with `plait resume {record.id}`, then check it again",
            )

    def _output(self) -> None:
        """A completed run's output is what the engine makes of its exit nodes' effective outputs."""
        state = RunState(self.compiled, self.record.input or {}, run_id=self.record.id)
        restore(state, self.records)
        now, recorded = state.run_output(), self.record.output
        if now == recorded:
            return
        exits = self.compiled.output_nodes
        if len(exits) == 1:
            differing = exits
        elif isinstance(now, dict) and isinstance(recorded, dict):
            differing = [e for e in exits if now.get(e) != recorded.get(e)]
        else:
            differing = []
        run = self.record.id
        for node_id in differing:
            rec = self.newest.get(node_id)
            mine = now.get(node_id) if len(exits) > 1 else now
            theirs = recorded.get(node_id) if len(exits) > 1 and isinstance(recorded, dict) else recorded
            self._problem(
                ProblemKind.OUTPUT_MISMATCH,
                node_id,
                rec,
                f"the output of run {run} is not what its exit node {node_id} gives now: the run recorded "
                f"{shown(theirs)}, {node_id}'s effective output is {shown(mine)}",
                f"run the exit node again, which records the run's output anew: `plait rerun {run} {node_id}`",
            )
        if not differing:
            self._run_problem(
                ProblemKind.OUTPUT_MISMATCH,
                f"the output of run {run} is not what its exit nodes ({', '.join(exits)}) give now: the run "
                f"recorded {shown(recorded)}, they give {shown(now)}",
                f"run an exit node again, which records the run's output anew: `plait rerun {run} NODE`",
            )

    # -- node by node ------------------------------------------------------------------------------

    def _nodes(self) -> None:
        """Every node in topological order: its branch, its ledger version, what it read, its snapshot."""
        for node_id in topological(self.compiled):
            rec = self.newest.get(node_id)
            verdict = self._place(node_id, rec)
            if rec is None:
                continue
            self.checked += 1
            if rec.status.has_output:
                self._ledger(node_id, rec)
            if node_id in self.inactive or rec.status not in _DONE:
                continue
            if self._reads_current(node_id, rec) and verdict == Phase.RUNNING:
                self._snapshot(node_id, rec)

    def _place(self, node_id: str, rec: NodeRunRecord | None) -> Phase | None:
        """Where the CONDITIONs' effective branches put the node (`RunState.decide` on `expected`):
        RUNNING, SKIPPED, or None while that cannot be known. `expected` is the run state rebuilt
        from those branches: a node they select holds its effective output there, one they leave
        out is skipped, and a node whose place cannot be known (an upstream that failed, waits,
        or was wrongly skipped) stays undecided, as does everything that depends on it."""
        expected = self.expected
        verdict = expected.decide(node_id)
        if verdict == Phase.SKIPPED:
            expected.set_phase(node_id, Phase.SKIPPED)
            if rec is not None and rec.status.has_output:
                inactive = self.inactive
                above = [e.source_node_id for e in self.compiled.in_edges[node_id] if e.source_node_id in inactive]
                inactive[node_id] = inactive[above[0]] if above else node_id
                self._inactive_output(node_id, rec, inactive[node_id])
        elif verdict == Phase.RUNNING and rec is not None:
            if rec.status.has_output:
                expected.complete(node_id, rec.effective_output)
            elif rec.status == NodeStatus.SKIPPED:
                self._active_skipped(node_id, rec)
            elif rec.status == NodeStatus.FAILED:
                expected.set_phase(node_id, Phase.FAILED)
        return verdict

    def _inactive_output(self, node_id: str, rec: NodeRunRecord, first: str) -> None:
        run = self.record.id
        where = "" if first == node_id else f" (the branch is left out from {first} on)"
        self._problem(
            ProblemKind.INACTIVE_BRANCH_OUTPUT,
            node_id,
            rec,
            f"{node_id} is {rec.status} on a branch that is no longer taken{where}: with the CONDITIONs' "
            "effective branches it would be skipped, yet its output is still handed on to what follows it",
            "run it again with what follows it, so that the engine skips them: "
            f"`plait rerun {run} {first} --downstream`",
        )

    def _active_skipped(self, node_id: str, rec: NodeRunRecord) -> None:
        run = self.record.id
        self._problem(
            ProblemKind.ACTIVE_BRANCH_SKIPPED,
            node_id,
            rec,
            f"{node_id} is skipped, but it is on a branch that is taken now (a CONDITION upstream selects it)",
            f"run it with what follows it: `plait rerun {run} {node_id} --downstream`",
        )

    def _reads_current(self, node_id: str, rec: NodeRunRecord) -> bool:
        """Whether every value the node read is the value in effect. A value changed since is a
        problem, unless each change was excused (see `Ledger.unexcused`); either way the node's
        reads are not current."""
        moved = [
            (owner, version)
            for owner, version in sorted((rec.consumed or {}).items())
            if self.ledger.moved(owner, version)
        ]
        corrected_at = self.ledger.corrected_at(node_id)
        changes = [(o, v, c) for o, v in moved if (c := self.ledger.unexcused(o, v, corrected_at)) is not None]
        if changes:
            read = ", ".join(f"{owner} at version {version}" for owner, version, _ in changes)
            since = "; ".join(self.ledger.describe(owner, change) for owner, _, change in changes)
            self._problem(
                ProblemKind.STALE_READ_NOT_MARKED,
                node_id,
                rec,
                f"{node_id} read {read}, which changed since ({since}), and {node_id} is {rec.status}, "
                "not marked stale",
                f"run it again on the values in effect: `plait rerun {self.record.id} {node_id}`",
            )
        return not moved

    def _snapshot(self, node_id: str, rec: NodeRunRecord) -> None:
        """Its input snapshot agrees with its predecessors' effective outputs: the active
        predecessors, and `current` where the snapshot records what `current_for` hands over."""
        seen = (rec.input_snapshot or {}).get("state")
        if not isinstance(seen, dict):
            return  # no record of what it was handed (e.g. a failed node a person gave its output)
        expected = self.expected
        predecessors = expected.active_predecessors(node_id)
        differences: list[str] = []
        if "predecessors" in seen and seen["predecessors"] != predecessors:
            differences.append(
                f"its active predecessors were {names(seen['predecessors']) or 'none'} and are "
                f"{names(predecessors) or 'none'} now"
            )
        elif "current" in seen and self._records_current(node_id):
            now = as_recorded(self._current(node_id, predecessors))
            if seen["current"] != now:
                differing = differing_predecessors(seen["current"], now, predecessors) or [INPUT]
                differences.append(
                    f"the value it was handed (`current` in its input snapshot) is not what {names(differing)} "
                    f"give{'s' if len(differing) == 1 else ''} now"
                )
        if not differences:
            return
        run = self.record.id
        left_out = [p for p in seen.get("predecessors") or () if p in self.inactive]
        if left_out:  # it would be handed that output again: the branch must be skipped first
            first = self.inactive[left_out[0]]
            hint = f"run {first} again with what follows it, so that the engine skips its branch: "
            hint += f"`plait rerun {run} {first} --downstream`"
        else:
            hint = f"run it again on the values in effect: `plait rerun {run} {node_id}`"
        message = f"{node_id} ran on other inputs than those in effect: {'; '.join(differences)}"
        self._problem(ProblemKind.INPUT_MISMATCH, node_id, rec, message, hint)

    def _records_current(self, node_id: str) -> bool:
        """Whether the node's snapshot keeps `current` as its predecessors hand it over (a WAIT
        keeps none; the entry node of an inlined SKILL is handed the SKILL's inputs)."""
        node = self.compiled.nodes[node_id]
        if node.type == NodeType.WAIT:
            return False
        return not (node_id in self.compiled.scopes and not self.compiled.in_edges[node_id])

    def _current(self, node_id: str, predecessors: list[str]) -> Any:
        if self.compiled.nodes[node_id].type == NodeType.MERGE:  # a map by predecessor, even of one
            return {p: self.expected.nodes[p].data for p in predecessors}
        return self.expected.current_for(node_id)

    def _ledger(self, node_id: str, rec: NodeRunRecord) -> None:
        """The ledger's newest version of the node holds its effective output."""
        history = self.ledger.versions.get(node_id)
        if not history:
            return  # recorded before the ledger existed
        head = history[-1]
        if strip_meta_deep(head.value) == strip_meta_deep(rec.effective_output):
            return
        run = self.record.id
        self._problem(
            ProblemKind.LEDGER_MISMATCH,
            node_id,
            rec,
            f"the field ledger's newest version of {node_id} (version {head.version}, {head.kind} by {head.by}) "
            f"holds {shown(head.value)}, not its effective output {shown(rec.effective_output)}",
            f"record the value it should have with `plait override {run} {node_id} --file F`, or run it again: "
            f"`plait rerun {run} {node_id}`",
        )

    # -- child runs --------------------------------------------------------------------------------

    def _children(self) -> None:
        """Child runs of the nodes' newest activations are checked next. A SUBGRAPH, MAP or LOOP
        node that completed holds its completed children's current outputs; one corrected holds
        those of the children that changed after its correction (a child's correction is gathered
        into the node's value, as `plait.runs.children.reach_parent` does)."""
        for node_id in topological(self.compiled):
            rec = self.newest.get(node_id)
            if rec is None or self.compiled.nodes[node_id].type not in _CHILD_RUN_NODES:
                continue
            children = self.store.runs.children(rec.id)
            self.children.extend(children)
            if rec.status not in _DONE:
                continue
            missed: list[str] = []
            for child in children:
                if child.status != RunStatus.COMPLETED:
                    continue
                if rec.override_at is not None and child.updated_at <= rec.override_at:
                    continue  # the node was corrected after the child last changed: the correction is in effect
                if regathered(self.store, child, newest=rec, parent=self.record) is not None:  # it would change
                    missed.append(child.id)
            if missed:
                self._problem(
                    ProblemKind.CHILD_OUTPUT_NOT_GATHERED,
                    node_id,
                    rec,
                    f"the output of {node_id} does not hold the current output of its child "
                    f"run{'s' if len(missed) > 1 else ''} {', '.join(missed)}",
                    f"correct the child run's exit node again (`plait override {missed[0]} NODE --file F`, with the "
                    f"value it should have): {node_id} then gathers its output; or run {node_id} again, with new "
                    f"child runs: `plait rerun {self.record.id} {node_id}`",
                )

    # -- problems ----------------------------------------------------------------------------------

    def _problem(self, kind: ProblemKind, node_id: str, rec: NodeRunRecord | None, message: str, hint: str) -> None:
        self.problems.append(
            Problem(
                kind,
                self.record.id,
                message,
                hint,
                node_id=node_id,
                node_run_id=rec.id if rec is not None else None,
                activation=rec.activation if rec is not None else None,
            )
        )

    def _run_problem(self, kind: ProblemKind, message: str, hint: str) -> None:
        self.problems.append(Problem(kind, self.record.id, message, hint))
