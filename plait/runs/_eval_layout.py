"""Which state every node of a graph version starts in when an evaluation executes one node on
the values a case recorded (`plait.store.evaluation_runs`).

The engine decides what runs from what it restores: a node whose in-edges are all settled runs,
and a settled node whose in-edges now decide otherwise is settled again (a branch turned). So
the nodes around the evaluated one must start in exactly the states the engine's own decisions
give them, or the engine would execute them too. They are decided here with the engine's
functions (`RunState.decide`), in topological order: the values the case recorded are given, a
node that would run holds no value that matters (stale), one on a branch not taken is skipped,
and a CONDITION without a recorded value takes the branch that leads to the recorded ones. The
nodes after the evaluated one are decided as if it had completed, which is how the engine will
find them once it has, so none of them runs again.

A node whose answer decides which nodes follow it (a CONDITION, a tool result sent down an edge)
could turn them when it answers otherwise; such a node is evaluated on a whole run instead, as
is any case whose recorded values do not place the node in the version (a node it reads that the
case did not record, a recorded value on a branch the version does not take).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plait.engine.state import CompiledRun, Phase, RunState
from plait.model.nodes import NodeType
from plait.store.ledger import INPUT

DEFAULT_BRANCH = "__default__"
"""A branch no edge names: what a CONDITION takes to follow its default edge."""


class NotPlaced(Exception):
    """The case's values do not place the node in this version; the message says why."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The node states an evaluation's run starts with: `given` the recorded values, `stale`
    nodes with the value they hold (None, or a CONDITION's branch), `skipped`, and the target."""

    target: str
    given: dict[str, Any]
    stale: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def layout(compiled: CompiledRun, target: str, given: Mapping[str, Any], run_input: dict[str, Any]) -> Layout:
    """The states around `target` with `given` recorded; NotPlaced when they cannot be made."""
    if target not in compiled.nodes:
        raise NotPlaced(f"node '{target}' is not in this version")
    node = compiled.nodes[target]
    if node.type == NodeType.CONDITION or any(e.id in compiled.routed_edges for e in compiled.out_edges[target]):
        raise NotPlaced(f"the answer of '{target}' decides which nodes run after it")
    if node.type in (NodeType.HUMAN_REVIEW, NodeType.WAIT):
        raise NotPlaced(f"'{target}' is a {node.type} node: it waits, it computes nothing to score")
    unknown = sorted(set(given) - set(compiled.nodes))
    if unknown:
        raise NotPlaced(f"the case recorded values of {_names(unknown)}, which this version does not have")
    after = set(compiled.downstream([target]))
    late = sorted(set(given) & after)
    if late:
        raise NotPlaced(f"{_names(late)} come after '{target}' in this version")
    order = [n for level in compiled.topology.levels for n in level]
    if len(order) != len(compiled.nodes):
        raise NotPlaced("the version's graph has nodes on a cycle")
    branches = _branches(compiled, target, given, after, order)
    state = RunState(compiled, run_input)
    placed = Layout(target, dict(given))
    for node_id in (n for n in order if n not in after and n != target):
        _settle(state, placed, node_id, branches)
    state.complete(target, None)  # how the engine finds the nodes after it once it has run
    for node_id in (n for n in order if n in after):
        _settle(state, placed, node_id, branches)
    _check(state, compiled, placed)
    return placed


def _branches(
    compiled: CompiledRun, target: str, given: Mapping[str, Any], after: set[str], order: list[str]
) -> dict[str, str]:
    """The branch each CONDITION without a recorded value takes: one leading to a node that must
    run (the target, a recorded node, or a node leading to one)."""
    active = {target, *given}
    branches: dict[str, str] = {}
    for node_id in reversed(order):
        if node_id not in active:
            continue
        edges = [e for e in compiled.in_edges[node_id] if e.source_node_id not in after]
        if not edges:
            continue

        def usable(edge: Any) -> bool:
            source = edge.source_node_id
            if source in given or compiled.nodes[source].type != NodeType.CONDITION:
                return source in active
            return source in active and branches.get(source) == _key(edge)

        if any(usable(e) for e in edges):
            continue
        edge = next((e for e in edges if e.source_node_id in given), edges[0])
        source = edge.source_node_id
        active.add(source)
        if source not in given and compiled.nodes[source].type == NodeType.CONDITION:
            branches.setdefault(source, _key(edge))
    return branches


def _key(edge: Any) -> str:
    return str(edge.condition_key) if edge.condition_key is not None else DEFAULT_BRANCH


def _settle(state: RunState, placed: Layout, node_id: str, branches: dict[str, str]) -> None:
    if node_id in placed.given:
        state.complete(node_id, placed.given[node_id])
        return
    decision = state.decide(node_id)
    if decision == Phase.SKIPPED:
        state.set_phase(node_id, Phase.SKIPPED)
        placed.skipped.append(node_id)
    elif decision == Phase.RUNNING:
        value = {"branch": branches[node_id]} if node_id in branches else None
        state.complete(node_id, value)
        placed.stale[node_id] = value
    else:
        raise NotPlaced(f"node '{node_id}' cannot be settled around '{placed.target}'")


def _check(state: RunState, compiled: CompiledRun, placed: Layout) -> None:
    """The recorded values are on branches the version takes, the target runs, and it reads
    nothing the case did not record."""
    for node_id in placed.given:
        if state.decide(node_id) != Phase.RUNNING:
            raise NotPlaced(f"the recorded value of '{node_id}' is on a branch this version does not take there")
    target = placed.target
    state.set_phase(target, Phase.PENDING)
    if state.decide(target) != Phase.RUNNING:
        raise NotPlaced(f"'{target}' would not run on the recorded values (its branch is not taken)")
    reads = [*state.active_predecessors(target), *compiled.plan.nodes[target].reads]
    for owner in dict.fromkeys(reads):
        for node_id in compiled.aliases.get(owner, [owner]):
            if node_id == INPUT or node_id in placed.given or node_id not in state.nodes:
                continue
            if state.nodes[node_id].phase == Phase.COMPLETED:
                raise NotPlaced(f"'{target}' reads '{node_id}' in this version, whose value the case did not record")


def _names(node_ids: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in node_ids)
