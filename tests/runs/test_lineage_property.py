"""The lineage property, over random graphs and random sequences of corrections.

Random graphs mix TRANSFORM (reading upstream nodes by name, beyond their predecessors, and
some failing on some values), CONDITION, LLM_CALL on the scripted provider, HUMAN_REVIEW,
SUBGRAPH and MAP. A state machine applies overrides (every policy, failed nodes included),
reruns, rollbacks with and without cascade, reviews, resumes and crashes (an engine stopped
mid-run, its lease left behind), driving the run after each as the CLI does. After every
step the run check (`plait runs check`) must find nothing: each node's recorded reads are the
values in effect, or it is marked stale, or it waits for a person; branches are settled by the
CONDITIONs' effective values; and the run's output is what its exit nodes' outputs give.

The check judges what the engine recorded a node read. So that a read the engine failed to
record cannot hide, every TRANSFORM and CONDITION that completed is also evaluated again, in
the sandbox, on the outputs in effect: its recorded output must be what that gives, unless it
is marked stale or a person kept it as it was (an override with policy KEEP upstream).
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from plait.engine.compiled import load_compiled
from plait.engine.events import NodeCompleted
from plait.engine.executors import branch_key
from plait.engine.restore import restore
from plait.engine.runner import Engine
from plait.engine.state import RunState
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import DownstreamPolicy, NodeStatus, RunStatus
from plait.model.output_meta import strip_meta_deep
from plait.runs.check import check_run
from plait.runs.corrections import CorrectionError, Corrections
from plait.runs.start import start_run
from plait.sandbox import JsRuntimeError, JsSandbox
from plait.store import NodeRunRecord, Store, current_activations

VAL = {
    "id": "val",
    "version": "1.0.0",
    "schema": {
        "type": "object",
        "properties": {"v": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}},
        "required": ["v"],
    },
}
MIXES = {
    "every kind": ("TRANSFORM", "TRANSFORM", "FRAGILE", "CONDITION", "LLM_CALL", "HUMAN_REVIEW", "SUBGRAPH", "MAP"),
    "reviews": ("TRANSFORM", "FRAGILE", "HUMAN_REVIEW", "HUMAN_REVIEW", "LLM_CALL"),
    "branches": ("TRANSFORM", "FRAGILE", "CONDITION", "CONDITION", "TRANSFORM"),
}
"""The node kinds a graph draws from, and how often. Besides graphs of every kind, graphs rich
in reviews and in branches: a run of Hypothesis stops looking soon after the last bug it found,
so a bug that shows only where several reviews or branches meet needs a run of its own."""
EXAMPLES = {"every kind": 60, "reviews": 30, "branches": 30}
POSTGRESQL_EXAMPLES = {"every kind": 15, "reviews": 5, "branches": 5}
"""Lineage is decided above the store, so PostgreSQL, which costs about twice as much per
example, runs fewer: the same machine over the other store's reads, writes and transactions
(measured with coverage.py, these reach every line and branch of Plait that 30, 10 and 10 did).
SQLite runs the examples that found the lineage bugs of the code before it."""
CHILD = {
    "input_schema": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
    "schemas": [VAL],
    "nodes": [{"id": "inner", "type": "TRANSFORM", "transform_expr": "({v: input.v + '~'})"}],
    "edges": [{"source": "inner", "target": "END", "schema_id": "val"}],
}
_graphs = itertools.count()


class Inconsistent(AssertionError):
    """A step left the run inconsistent. Each kind of problem raises a class of its own, so
    Hypothesis reports (and shrinks) every kind it finds, and one bug cannot hide another."""


_KINDS: dict[str, type[Inconsistent]] = {}


def inconsistent(kind: str) -> type[Inconsistent]:
    return _KINDS.setdefault(kind, type(f"Inconsistent_{kind}", (Inconsistent,), {}))


@st.composite
def graphs(draw: st.DrawFn, mix: tuple[str, ...]) -> dict[str, Any]:
    """A random valid graph: `a` (the one entry) then 2-6 nodes, each after 1-2 earlier ones."""
    nodes: list[dict[str, Any]] = [
        {"id": "a", "type": "TRANSFORM", "transform_expr": "({v: input.t, items: [input.t, input.t + '!']})"}
    ]
    edges: list[dict[str, Any]] = []
    kinds = {"a": "TRANSFORM"}
    ancestors: dict[str, set[str]] = {"a": set()}
    condition_outs: dict[str, int] = {}
    for index in range(draw(st.integers(2, 6))):
        node_id = f"n{index}"
        kind = draw(st.sampled_from(mix))
        earlier = list(kinds)
        preds = draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=2, unique=True))
        if kind in ("HUMAN_REVIEW", "SUBGRAPH", "LLM_CALL", "CONDITION"):
            preds = preds[:1]
        valued = [n for n in earlier if kinds[n] not in ("CONDITION", "MAP")]
        above = set(preds).union(*(ancestors[p] for p in preds))
        readable = sorted(n for n in above if n in valued)
        for pred in preds:
            edge: dict[str, Any] = {"source": pred, "target": node_id}
            if kinds[pred] == "CONDITION":
                count = condition_outs[pred] = condition_outs.get(pred, 0) + 1
                edge["condition_key"] = "true" if count % 2 else "false"
                edge["default"] = count == 1  # a value no key names still takes a branch
            elif kinds[pred] != "MAP":  # a MAP's output is a list: its edges bind no schema
                edge["schema_id"] = "val"
            edges.append(edge)
        if kind == "HUMAN_REVIEW" and (kinds[preds[0]] in ("CONDITION", "MAP")):
            kind = "TRANSFORM"  # a review shows its one input's value: it needs one with `v`
        if kind == "SUBGRAPH" and not readable:
            kind = "TRANSFORM"
        if kind == "LLM_CALL" and not readable:
            kind = "TRANSFORM"
        nodes.append(_node(node_id, kind, readable, draw))
        kinds[node_id] = "TRANSFORM" if kind == "FRAGILE" else kind
        ancestors[node_id] = above
    exits = [n for n in kinds if n not in {e["source"] for e in edges}]
    for node_id in exits:
        if kinds[node_id] not in ("CONDITION", "MAP"):
            edges.append({"source": node_id, "target": "END", "schema_id": "val"})
    number = next(_graphs)
    return {
        "id": f"lineage{number}",
        "name": f"lineage {number}",
        "input_schema": {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"]},
        "schemas": [VAL],
        "nodes": nodes,
        "edges": edges,
    }


def _node(node_id: str, kind: str, readable: list[str], draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(readable), max_size=3, unique=True)) if readable else []
    parts = " + '|' + ".join(f"(nodes.{n} ? nodes.{n}.v : '-')" for n in names) or "input.t"
    value = f"({parts}).slice(-24) + '.{node_id}'"
    if kind == "TRANSFORM":
        return {"id": node_id, "type": "TRANSFORM", "transform_expr": f"({{v: {value}}})"}
    if kind == "FRAGILE":  # fails on some values: a person then gives its output
        return {
            "id": node_id,
            "type": "TRANSFORM",
            "transform_expr": f"(({value}).length % 3 == 0 ? null.v : {{v: {value}}})",
        }
    if kind == "CONDITION":
        return {"id": node_id, "type": "CONDITION", "condition_expr": f"({value}).length % 2 == 0"}
    if kind == "LLM_CALL":
        return {"id": node_id, "type": "LLM_CALL", "user_prompt_tpl": f"Answer for {{{{ nodes.{readable[-1]}.v }}}}"}
    if kind == "HUMAN_REVIEW":
        return {"id": node_id, "type": "HUMAN_REVIEW", "review_prompt": "Is it right?"}
    if kind == "SUBGRAPH":
        return {"id": node_id, "type": "SUBGRAPH", "body": CHILD, "inputs": {"v": f"{{{{ nodes.{readable[-1]}.v }}}}"}}
    return {"id": node_id, "type": "MAP", "items": "a.items", "inputs": {"v": "{{ item }}"}, "body": CHILD}


def _ancestors(graph: dict[str, Any]) -> dict[str, set[str]]:
    """Each node's ancestors (the nodes come in topological order)."""
    found: dict[str, set[str]] = {n["id"]: set() for n in graph["nodes"]}
    for node in graph["nodes"]:
        for edge in graph["edges"]:
            if edge["target"] == node["id"]:
                found[node["id"]] |= {edge["source"]} | found[edge["source"]]
    return found


def scripted(tmp_path: Path, graph: dict[str, Any]) -> ScriptedProvider:
    rules = [{"node": n["id"], "output": {"v": f"llm-{n['id']}"}} for n in graph["nodes"] if n["type"] == "LLM_CALL"]
    path = tmp_path / f"{graph['id']}.answers.yaml"
    path.write_text(yaml.safe_dump({"responses": rules or [{"output": {"v": "none"}}]}))
    return ScriptedProvider.from_file(path)


class Lineage(RuleBasedStateMachine):
    """One run of one random graph, corrected at random; `store` and `folder` are set per test."""

    store: Store
    folder: Path
    sandbox: JsSandbox
    mix: tuple[str, ...]

    def __init__(self) -> None:
        super().__init__()
        self.run_id = ""
        self.provider: ScriptedProvider | None = None
        self.node_ids: list[str] = []
        self.kinds: dict[str, str] = {}
        self.expressions: dict[str, str] = {}
        """TRANSFORM and CONDITION node -> its expression: evaluated again by `reproducible`."""
        self.ancestors: dict[str, set[str]] = {}
        self.kept: set[str] = set()
        """Nodes overridden with policy KEEP: what read them keeps the value it was built from."""

    @initialize(data=st.data(), text=st.text("abcxy", min_size=1, max_size=5))
    def start(self, data: st.DataObject, text: str) -> None:
        graph = data.draw(graphs(self.mix))
        path = self.folder / f"{graph['id']}.yaml"
        path.write_text(yaml.safe_dump(graph, sort_keys=False))
        self.node_ids = [n["id"] for n in graph["nodes"]]
        self.kinds = {n["id"]: n["type"] for n in graph["nodes"]}
        self.expressions = {
            n["id"]: n.get("transform_expr") or n["condition_expr"]
            for n in graph["nodes"]
            if n["type"] in ("TRANSFORM", "CONDITION")
        }
        self.ancestors = _ancestors(graph)
        self.provider = scripted(self.folder, graph)
        self.run_id = start_run(self.store, str(path), {"t": text})
        self.drive()

    # -- what a person does ------------------------------------------------------------------------

    @rule(data=st.data(), policy=st.sampled_from(list(DownstreamPolicy)))
    def override(self, data: st.DataObject, policy: DownstreamPolicy) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        if self.kinds[node_id] == "CONDITION":
            value: Any = {"branch": data.draw(st.sampled_from(["true", "false"]))}
        elif self.kinds[node_id] == "MAP":
            value = [{"v": data.draw(st.text("pqr", min_size=1, max_size=4))}]
        else:
            value = {"v": data.draw(st.text("pqr", min_size=1, max_size=4))}
        newest = self.newest().get(node_id)
        done = self.correct(lambda c: c.override(self.run_id, node_id, value, policy=policy))
        if not done and newest is not None and newest.status == NodeStatus.FAILED:
            raise inconsistent("failed_node_refused")(f"the override of failed node {node_id} was refused")
        if done and policy == DownstreamPolicy.KEEP:
            self.kept.add(node_id)

    @rule(data=st.data(), policy=st.sampled_from(list(DownstreamPolicy)))
    def override_child(self, data: st.DataObject, policy: DownstreamPolicy) -> None:
        """A correction inside a SUBGRAPH's or a MAP item's child run, which reaches the parent node."""
        pick = data.draw(st.integers(0, 7))  # drawn whatever the store holds: replays draw the same
        value = {"v": data.draw(st.text("pqr", min_size=1, max_size=4))}
        parents = [rec for rec in self.newest().values() if self.kinds[rec.node_id] in ("SUBGRAPH", "MAP")]
        children = [(rec.node_id, child) for rec in parents for child in self.store.runs.children(rec.id)]
        if not children:
            return
        node_id, child = children[pick % len(children)]
        done = self.correct(lambda c: c.override(child.id, "inner", value, policy=policy))
        if done and policy == DownstreamPolicy.KEEP:
            self.kept.add(node_id)  # the node is corrected with its child, and what read it is kept

    @rule(data=st.data(), downstream=st.booleans())
    def rerun(self, data: st.DataObject, downstream: bool) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        self.correct(lambda c: c.rerun(self.run_id, node_id, downstream=downstream))

    @rule(data=st.data(), cascade=st.booleans())
    def rollback(self, data: st.DataObject, cascade: bool) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        pick = data.draw(st.integers(0, 7))  # drawn whatever the store holds: replays draw the same
        versions = [v.version for v in self.store.ledger.history(self.run_id, node_id)]
        if not versions:
            return
        version = versions[pick % len(versions)]
        self.correct(lambda c: c.rollback(self.run_id, node_id, None, version, cascade=cascade))

    @precondition(lambda self: bool(self.waiting()))
    @rule(data=st.data(), approve=st.booleans())
    def review(self, data: st.DataObject, approve: bool) -> None:
        waiting = self.waiting()
        node_id = waiting[data.draw(st.integers(0, 7)) % len(waiting)]
        value = None if approve else {"v": data.draw(st.text("rs", min_size=1, max_size=3))}
        self.correct(lambda c: c.review(self.run_id, node_id, value, approve=approve))

    @rule()
    def resume(self) -> None:
        if self.store.runs.get(self.run_id).status in (RunStatus.PENDING, RunStatus.RUNNING):
            self.drive()

    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        """An engine stops after its first node commit, holding the lease (a process gone);
        the next one takes the run over once the lease lapses and finishes it."""
        node_id = data.draw(st.sampled_from(self.node_ids))
        try:
            result = Corrections(self.store).rerun(self.run_id, node_id, downstream=True)
        except CorrectionError:
            return
        if result.needs_run:
            asyncio.run(self._crashing())
            self.drive()

    # -- the property -----------------------------------------------------------------------------

    @invariant()
    def consistent(self) -> None:
        if not self.run_id:
            return
        check = check_run(self.store, self.run_id)
        if check.problems:
            first = min(check.problems, key=lambda p: (p.kind, p.node_id or ""))
            kind = f"{first.kind}_{self.kinds.get(first.node_id or '', 'run')}"  # a review's stale read is its own bug
            raise inconsistent(kind)("\n".join(f"{p.kind} {p.node_id}: {p.message}" for p in check.problems))

    @invariant()
    def reproducible(self) -> None:
        """Each TRANSFORM and CONDITION that completed gives, evaluated again on the outputs in
        effect, the output it recorded: whatever it read was tracked, so a change reached it."""
        if not self.run_id:
            return
        record = self.store.runs.get(self.run_id)
        state = RunState(load_compiled(self.store, record.graph_id, record.graph_version, record.body), record.input)
        records = self.store.runs.node_runs(self.run_id)
        restore(state, records)
        wrong = []
        for node_id, rec in current_activations(records).items():
            expr = self.expressions.get(node_id)
            if expr is None or rec.status != NodeStatus.COMPLETED or self.ancestors[node_id] & self.kept:
                continue
            scope = {"input": record.input, "nodes": state.outputs(), "current": state.current_for(node_id)}
            try:
                value = self.sandbox.evaluate(expr, scope)
            except JsRuntimeError as exc:
                wrong.append(f"{node_id} recorded {rec.output}, its expression fails now: {exc}")
                continue
            if self.kinds[node_id] == "CONDITION":
                value = {"branch": branch_key(value)}
            if strip_meta_deep(rec.output) != value:
                wrong.append(f"{node_id} recorded {rec.output}, its expression gives {value} now")
        if wrong:
            raise inconsistent("unrecorded_read")("\n".join(wrong))

    # -- helpers ----------------------------------------------------------------------------------

    def correct(self, change: Any) -> bool:
        """Apply a correction and drive what it reopens, as the CLI does; False when it was refused."""
        try:
            result = change(Corrections(self.store))
        except CorrectionError:
            return False  # refused: nothing changed
        if result.needs_run:
            self.drive()
        parent = result.parent
        while parent is not None:
            if parent.needs_run:
                self.drive(parent.run_id)
            parent = parent.parent
        return True

    def drive(self, run_id: str | None = None) -> None:
        async def go() -> None:
            engine = Engine(self.store, self.provider, lease_ttl_s=0.5)
            try:
                await engine.run(run_id or self.run_id)
            finally:
                await engine.aclose()

        asyncio.run(go())

    async def _crashing(self) -> None:
        engine = Engine(self.store, self.provider, lease_ttl_s=0.5)
        stop = asyncio.Event()
        engine.events.subscribe(lambda event: stop.set() if isinstance(event, NodeCompleted) else None)
        task = asyncio.create_task(engine.run(self.run_id))
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        task.cancel()
        waiter.cancel()
        await asyncio.gather(task, waiter, return_exceptions=True)
        await engine.aclose()

    def newest(self) -> dict[str, NodeRunRecord]:
        return current_activations(self.store.runs.node_runs(self.run_id))

    def waiting(self) -> list[str]:
        return sorted(n for n, rec in self.newest().items() if rec.status == NodeStatus.PENDING and rec.input_snapshot)


@pytest.mark.parametrize("mix", list(MIXES))
def test_corrections_leave_every_run_consistent(store: Store, db_url: str, tmp_path: Path, mix: str) -> None:
    class Machine(Lineage):
        pass

    Machine.store, Machine.folder, Machine.mix = store, tmp_path, MIXES[mix]
    with JsSandbox(timeout_s=5.0) as Machine.sandbox:
        run_state_machine_as_test(
            Machine,
            settings=settings(
                max_examples=(POSTGRESQL_EXAMPLES if db_url.startswith("postgresql") else EXAMPLES)[mix],
                derandomize=True,  # the same examples on every run: CI is repeatable, a failure reproducible
                stateful_step_count=10,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                database=None,
            ),
        )
