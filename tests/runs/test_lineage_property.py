"""The lineage property, over random graphs and random sequences of corrections.

Random graphs mix TRANSFORM (reading upstream nodes by name, beyond their predecessors, and
some failing on some values), CONDITION, LLM_CALL on the scripted provider, HUMAN_REVIEW,
SUBGRAPH and MAP. A state machine applies overrides (every policy, failed nodes included),
reruns, rollbacks with and without cascade, reviews, resumes and crashes (an engine stopped
mid-run, its lease left behind), driving the run after each as the CLI does. After every
step the run check (`plait runs check`) must find nothing: each node's recorded reads are the
values in effect, or it is marked stale, or it waits for a person; branches are settled by the
CONDITIONs' effective values; and the run's output is what its exit nodes' outputs give.
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

from plait.engine.runner import Engine
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import DownstreamPolicy, NodeStatus, RunStatus
from plait.runs.check import check_run
from plait.runs.corrections import CorrectionError, Corrections
from plait.runs.start import start_run
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
KINDS = ("TRANSFORM", "TRANSFORM", "FRAGILE", "CONDITION", "LLM_CALL", "HUMAN_REVIEW", "SUBGRAPH", "MAP")
CHILD = {
    "input_schema": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
    "schemas": [VAL],
    "nodes": [{"id": "inner", "type": "TRANSFORM", "transform_expr": "({v: input.v + '~'})"}],
    "edges": [{"source": "inner", "target": "END", "schema_id": "val"}],
}
_graphs = itertools.count()


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
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
        kind = draw(st.sampled_from(KINDS))
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


def scripted(tmp_path: Path, graph: dict[str, Any]) -> ScriptedProvider:
    rules = [{"node": n["id"], "output": {"v": f"llm-{n['id']}"}} for n in graph["nodes"] if n["type"] == "LLM_CALL"]
    path = tmp_path / f"{graph['id']}.answers.yaml"
    path.write_text(yaml.safe_dump({"responses": rules or [{"output": {"v": "none"}}]}))
    return ScriptedProvider.from_file(path)


class Lineage(RuleBasedStateMachine):
    """One run of one random graph, corrected at random; `store` and `folder` are set per test."""

    store: Store
    folder: Path

    def __init__(self) -> None:
        super().__init__()
        self.run_id = ""
        self.provider: ScriptedProvider | None = None
        self.node_ids: list[str] = []
        self.kinds: dict[str, str] = {}

    @initialize(graph=graphs(), text=st.text("abcxy", min_size=1, max_size=5))
    def start(self, graph: dict[str, Any], text: str) -> None:
        path = self.folder / f"{graph['id']}.yaml"
        path.write_text(yaml.safe_dump(graph, sort_keys=False))
        self.node_ids = [n["id"] for n in graph["nodes"]]
        self.kinds = {n["id"]: n["type"] for n in graph["nodes"]}
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
        self.correct(lambda c: c.override(self.run_id, node_id, value, policy=policy))

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
        problems = [f"{p.kind} {p.node_id}: {p.message}" for p in check.problems]
        assert check.consistent, "\n".join(problems)

    # -- helpers ----------------------------------------------------------------------------------

    def correct(self, change: Any) -> None:
        try:
            result = change(Corrections(self.store))
        except CorrectionError:
            return  # refused: nothing changed
        if result.needs_run:
            self.drive()
        parent = result.parent
        while parent is not None:
            if parent.needs_run:
                self.drive(parent.run_id)
            parent = parent.parent

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
        engine.events.subscribe(lambda event: stop.set() if event.kind == "node:complete" else None)
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


@pytest.mark.parametrize("steps", [10])
def test_corrections_leave_every_run_consistent(store: Store, tmp_path: Path, steps: int) -> None:
    class Machine(Lineage):
        pass

    Machine.store, Machine.folder = store, tmp_path
    run_state_machine_as_test(
        Machine,
        settings=settings(
            max_examples=60,
            derandomize=True,  # the same examples on every run: CI is repeatable, a failure reproducible
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )
