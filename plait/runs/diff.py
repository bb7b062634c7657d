"""Two runs compared node by node: what each node's current result is, and what changed.

Runs may be of the same graph version, of two versions of one graph, or of different graphs:
nodes are matched by id. A node's *current* result is its node run with the highest activation
(a rerun adds an activation; older ones are history), and its value is the effective output
(`override ?? output`, the only read path), without the `_schema_id` / `_schema_version`
annotations: those say which contract an output was checked against, not what it says, so two
versions of a graph whose schemas moved would otherwise differ on every node.

Only repository read methods are used, so the diff works the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from plait.compile.topology import Topology
from plait.model import GraphDef
from plait.model.output_meta import strip_meta_deep
from plait.store import NodeRunRecord, RunRecord, Store, current_activations

TEXT_DIFF_MIN_CHARS = 80
"""Strings at least this long (or spanning lines) that differ also get a unified text diff:
for a paragraph, "old → new" hides where the edit is."""

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Verdict(StrEnum):
    """How one node compares between run A and run B."""

    SAME = "same"
    CHANGED = "changed"
    """The effective outputs differ (the statuses may differ too)."""
    STATUS = "status"
    """Same effective output, different status (e.g. `completed` vs `overridden` with the same value)."""
    ONLY_A = "only_a"
    ONLY_B = "only_b"


@dataclass(frozen=True, slots=True)
class RunFacts:
    """The run-level facts shown above the node table."""

    id: str
    graph_id: str
    graph: str
    graph_version: int
    status: str
    output: Any
    tokens_input: int
    tokens_output: int
    cost_usd: float
    llm: dict[str, Any] | None = None
    """The model selection the run executes on (see `plait.runs.model_choice`)."""
    llm_history: tuple[dict[str, Any], ...] = ()
    """Each explicit change of it."""

    @classmethod
    def of(cls, run: RunRecord) -> RunFacts:
        return cls(
            id=run.id,
            graph_id=run.graph_id,
            graph=run.graph_slug,
            graph_version=run.graph_version,
            status=str(run.status),
            output=run.output,
            tokens_input=run.tokens_input,
            tokens_output=run.tokens_output,
            cost_usd=run.cost_usd,
            llm=run.llm,
            llm_history=run.llm_history,
        )


@dataclass(frozen=True, slots=True)
class NodeSide:
    """One node in one run. `status` None: the node is in that run's graph but never ran (not reached)."""

    status: str | None
    activation: int | None = None
    output: Any = None
    """The effective output, schema annotations stripped."""
    overridden: bool = False
    node_run_id: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """One difference at one JSON path (`$` is the whole output, `$.chapters[0].title` a field)."""

    path: str
    kind: str
    """`added` (only in B), `removed` (only in A) or `changed`."""
    old: Any = None
    new: Any = None


@dataclass(slots=True)
class NodeDiff:
    """One node id compared between the two runs: the verdict, and each difference by path."""

    node_id: str
    verdict: Verdict
    a: NodeSide | None
    """None: the node is not in run A (neither in its graph nor among its node runs)."""
    b: NodeSide | None
    changes: list[Change] = field(default_factory=list)
    text_diffs: dict[str, str] = field(default_factory=dict)
    """Path → unified diff, for long or multi-line strings that differ."""
    notes: list[str] = field(default_factory=list)
    """E.g. list length changes, which per-index changes alone make hard to see."""


@dataclass(slots=True)
class RunDiff:
    """Two runs compared: their facts, every node of either run, and whether the outputs agree."""

    a: RunFacts
    b: RunFacts
    nodes: list[NodeDiff]
    outputs_equal: bool
    """The runs' outputs, compared like node outputs (annotations stripped)."""

    @property
    def same_graph(self) -> bool:
        return self.a.graph_id == self.b.graph_id

    @property
    def same_model(self) -> bool:
        """Both runs executed on one model selection (and neither changed it)."""
        return self.a.llm == self.b.llm and not self.a.llm_history and not self.b.llm_history

    @property
    def same_version(self) -> bool:
        return self.same_graph and self.a.graph_version == self.b.graph_version

    def counts(self) -> dict[str, int]:
        """How many nodes got each verdict (every verdict present, zeros included)."""
        return {v.value: sum(1 for n in self.nodes if n.verdict is v) for v in Verdict}

    def to_json(self) -> dict[str, Any]:
        """The `plait runs diff --json` document."""
        return {
            "a": _facts_json(self.a),
            "b": _facts_json(self.b),
            "same_graph": self.same_graph,
            "same_version": self.same_version,
            "same_model": self.same_model,
            "outputs_equal": self.outputs_equal,
            "counts": self.counts(),
            "nodes": [
                {
                    "node_id": n.node_id,
                    "verdict": n.verdict.value,
                    "a": _side_json(n.a),
                    "b": _side_json(n.b),
                    "changes": [{"path": c.path, "kind": c.kind, "old": c.old, "new": c.new} for c in n.changes],
                    "text_diffs": dict(n.text_diffs),
                    "notes": list(n.notes),
                }
                for n in self.nodes
            ],
        }


def _facts_json(facts: RunFacts) -> dict[str, Any]:
    return {
        "id": facts.id,
        "graph_id": facts.graph_id,
        "graph": facts.graph,
        "graph_version": facts.graph_version,
        "status": facts.status,
        "output": facts.output,
        "tokens_input": facts.tokens_input,
        "tokens_output": facts.tokens_output,
        "cost_usd": facts.cost_usd,
        "llm": facts.llm,
        "llm_history": list(facts.llm_history),
    }


def _side_json(side: NodeSide | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "status": side.status,
        "activation": side.activation,
        "output": side.output,
        "overridden": side.overridden,
        "node_run_id": side.node_run_id,
    }


# ------------------------------------------------------------------------------------ the diff


def diff_runs(store: Store, run_a: str, run_b: str) -> RunDiff:
    """Compare two stored runs node by node; raises the store's NotFoundError for an unknown run id.

    Nodes come in the topological order of run A's graph version, then the nodes only in B's.
    """
    record_a, record_b = store.runs.get(run_a), store.runs.get(run_b)
    graph_a = store.graphs.get(record_a.graph_id, record_a.graph_version).graph
    graph_b = store.graphs.get(record_b.graph_id, record_b.graph_version).graph
    current_a = current_activations(store.runs.node_runs(run_a))
    current_b = current_activations(store.runs.node_runs(run_b))
    in_a = set(topological_order(graph_a)) | set(current_a)
    in_b = set(topological_order(graph_b)) | set(current_b)
    order = _union_order(topological_order(graph_a), current_a, topological_order(graph_b), current_b)
    nodes = [
        diff_node(
            node_id,
            _side(current_a.get(node_id)) if node_id in in_a else None,
            _side(current_b.get(node_id)) if node_id in in_b else None,
        )
        for node_id in order
    ]
    run_changes, _, _ = compare_values(strip_meta_deep(record_a.output), strip_meta_deep(record_b.output))
    return RunDiff(RunFacts.of(record_a), RunFacts.of(record_b), nodes, outputs_equal=not run_changes)


def topological_order(graph: GraphDef) -> list[str]:
    """Node ids level by level from the entries (file order within a level), then any on a cycle."""
    topo = Topology.build([n.id for n in graph.nodes], ((e.source_node_id, e.target_node_id) for e in graph.edges))
    return [n for level in topo.levels for n in level] + topo.cyclic


def _union_order(*groups: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for group in groups:
        for node_id in group:
            seen.setdefault(node_id, None)
    return list(seen)


def _side(record: NodeRunRecord | None) -> NodeSide:
    if record is None:
        return NodeSide(status=None)
    return NodeSide(
        status=str(record.status),
        activation=record.activation,
        output=strip_meta_deep(record.effective_output),
        overridden=record.override is not None,
        node_run_id=record.id,
    )


def diff_node(node_id: str, a: NodeSide | None, b: NodeSide | None) -> NodeDiff:
    """Classify one node: only on one side, changed output, changed status only, or the same."""
    if a is None or b is None:
        verdict = Verdict.ONLY_B if a is None else Verdict.ONLY_A
        return NodeDiff(node_id, verdict, a, b)
    changes, text_diffs, notes = compare_values(a.output, b.output)
    if changes:
        verdict = Verdict.CHANGED
    elif a.status != b.status:
        verdict = Verdict.STATUS
    else:
        verdict = Verdict.SAME
    return NodeDiff(node_id, verdict, a, b, changes, text_diffs, notes)


def compare_values(old: Any, new: Any) -> tuple[list[Change], dict[str, str], list[str]]:
    """Field-level differences between two JSON values: (changes, text diffs by path, notes).

    Objects are compared key by key, recursively; lists index by index (a length change is noted,
    the extra items are `added` / `removed`). `true` and `1` differ; `1` and `1.0` do not (JSON numbers).
    """
    changes: list[Change] = []
    text_diffs: dict[str, str] = {}
    notes: list[str] = []
    _compare(old, new, "$", changes, text_diffs, notes)
    return changes, text_diffs, notes


def _compare(
    old: Any, new: Any, path: str, changes: list[Change], text_diffs: dict[str, str], notes: list[str]
) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            child = _child(path, key)
            if key not in new:
                changes.append(Change(child, "removed", old=old[key]))
            else:
                _compare(old[key], new[key], child, changes, text_diffs, notes)
        changes.extend(Change(_child(path, k), "added", new=v) for k, v in new.items() if k not in old)
        return
    if isinstance(old, list) and isinstance(new, list):
        for i, (item_a, item_b) in enumerate(zip(old, new, strict=False)):
            _compare(item_a, item_b, f"{path}[{i}]", changes, text_diffs, notes)
        if len(old) != len(new):
            notes.append(f"{path}: {len(old)} items → {len(new)} items")
            changes.extend(Change(f"{path}[{i}]", "removed", old=v) for i, v in enumerate(old) if i >= len(new))
            changes.extend(Change(f"{path}[{i}]", "added", new=v) for i, v in enumerate(new) if i >= len(old))
        return
    if _leaf_equal(old, new):
        return
    changes.append(Change(path, "changed", old=old, new=new))
    if isinstance(old, str) and isinstance(new, str) and _wordy(old, new):
        text_diffs[path] = text_diff(old, new)


def _leaf_equal(old: Any, new: Any) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    if isinstance(old, dict | list) or isinstance(new, dict | list):
        return False  # one container, one not (two containers of one kind were compared above)
    return bool(old == new)


def _wordy(old: str, new: str) -> bool:
    return any("\n" in s or len(s) >= TEXT_DIFF_MIN_CHARS for s in (old, new))


def text_diff(old: str, new: str) -> str:
    """A unified diff of two texts, line by line (`a` and `b` are the runs)."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), "a", "b")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{json.dumps(key, ensure_ascii=False)}]"
