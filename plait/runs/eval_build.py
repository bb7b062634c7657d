"""Evaluation sets built from what people said about a graph's outputs (docs/evaluation.md,
"Where cases come from").

A case is a person's judgement read back from the field ledger: an override, or a review that
corrected or approved, each bound to the node run it judged and the values that node run read.
Only what stands counts: the newest judgement of each node of a run, with rollbacks undoing what
they roll back (a rollback is not a judgement of a new value). A HUMAN_REVIEW passes its input
through, so its answer is a case of the node whose value it showed. Every case's expected value
is checked against the schemas it names before the set is written; a set is never changed, a
build under a name already taken is its next revision.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from plait.engine.compiled import load_compiled
from plait.engine.state import CompiledRun
from plait.errors import PlaitError, Refusal
from plait.model.nodes import NodeType
from plait.model.output_meta import strip_meta, strip_meta_deep
from plait.store import NodeRunRecord, RunRecord, Store
from plait.store.evaluations import EvalCase, EvalSet, NewCase
from plait.store.ledger import INPUT, FieldVersion

SOURCES = ("corrections", "approvals")
"""Where cases come from: corrections make `corrected` cases, approvals `approved` ones."""
LEVELS = ("node", "run")
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,119}$")
LABELS = {"corrections": "corrected", "approvals": "approved"}
SKIPPED_LISTED = 50
"""Skipped cases listed by reason in a set's `built_from` (all are counted)."""
HOW_TO_GET_CASES = (
    "correct or approve some outputs first (`plait override RUN NODE --file F`, `plait review RUN NODE --approve`), "
    "then build again"
)
_ROLLBACK = re.compile(r"^rollback of (?P<label>\S+) to version (?P<version>\d+)$")
_DURATION = re.compile(r"^(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>[smhdw])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


class EvalBuildError(PlaitError):
    """An evaluation set that cannot be built as asked."""

    kind = Refusal.INVALID
    code = "eval_build"


@dataclass(frozen=True, slots=True)
class SetShown:
    """One revision of a set with its cases, in order."""

    set: EvalSet
    cases: list[EvalCase]


@dataclass(frozen=True, slots=True)
class _Judgement:
    """What a person said of an owner's value, as it stands: `version` holds `value`."""

    owner: str
    version: int
    value: Any
    node_run_id: str | None
    """The activation it judged."""
    by: str
    at: float
    note: str | None


@dataclass(frozen=True, slots=True)
class _Found:
    """A case before it is checked: the case, and each value it expects by the node whose
    out-edge schemas must accept it."""

    case: NewCase
    checks: dict[str, Any]


def build_set(
    store: Store,
    graph_ref: str,
    *,
    name: str,
    sources: Sequence[str] = SOURCES,
    since: float | None = None,
    nodes: Sequence[str] | None = None,
    level: str = "node",
    by: str,
) -> EvalSet:
    """Build the next revision of the evaluation set `name` of a graph from its runs' corrections
    and approvals (`since`: judged then or later; `nodes`: of these nodes only)."""
    sources = _checked_sources(sources)
    if since is not None and not math.isfinite(since):
        raise EvalBuildError(f"since {since} is not a time", "give Unix seconds, a date or a duration back")
    if not NAME.match(name):
        raise EvalBuildError(
            f"'{name}' is not an evaluation set name",
            "use lower-case letters, digits, '_', '.' and '-', starting with a letter or digit (at most 120)",
        )
    if level not in LEVELS:
        raise EvalBuildError(f"level '{level}' is not one of {', '.join(LEVELS)}")
    graph = store.graphs.live(graph_ref)
    wanted = _checked_nodes(graph.slug, graph.graph.nodes, nodes)
    compiled: dict[int, CompiledRun] = {}
    found: list[_Found] = []
    run_ids = store.evaluations.judged_runs(graph.graph_id, since=since)
    for run_id in run_ids:
        record = store.runs.get(run_id)
        if record.graph_version not in compiled:
            compiled[record.graph_version] = load_compiled(store, graph.graph_id, record.graph_version)
        run = _RunReader(store, record, compiled[record.graph_version])
        found.extend(run.node_cases() if level == "node" else run.run_cases(wanted))
    labels = {LABELS[s] for s in sources}
    kept = [
        f for f in found
        if f.case.label in labels
        and (since is None or (f.case.judged_at or 0.0) >= since)
        and (wanted is None or level == "run" or f.case.node_id in wanted)
    ]  # fmt: skip
    kept.sort(key=lambda f: (f.case.judged_at or 0.0, f.case.source_run_id, f.case.node_id or ""))
    cases, skipped = _checked(kept, compiled)
    built_from: dict[str, Any] = {
        "sources": list(sources), "since": since, "nodes": sorted(wanted) if wanted is not None else None,
        "level": level, "graph_version": graph.version, "runs": len({c.source_run_id for c in cases}),
        "labels": {label: sum(1 for c in cases if c.label == label) for label in ("corrected", "approved")},
        "skipped": {"count": len(skipped), "cases": skipped[:SKIPPED_LISTED]},
    }  # fmt: skip
    if not cases:
        raise _nothing(graph.slug, sources, since, wanted, skipped)
    return store.evaluations.create_set(graph.graph_id, name, cases, built_from=built_from, by=by)


def list_sets(store: Store, graph_ref: str) -> list[EvalSet]:
    """Every revision of every set of the graph, newest first."""
    return store.evaluations.sets(store.graphs.live(graph_ref).graph_id)


def show_set(store: Store, graph_ref: str, name: str, revision: int | None = None) -> SetShown:
    """A set of the graph (its newest revision unless `revision`; `name` may be `NAME@REV`) with its cases."""
    if revision is None:
        name, revision = set_ref(name)
    found = store.evaluations.get_set(store.graphs.live(graph_ref).graph_id, name, revision)
    return SetShown(found, store.evaluations.cases(found.id))


def set_ref(text: str) -> tuple[str, int | None]:
    """`NAME` or `NAME@REV` as (name, revision or None)."""
    name, at, revision = text.partition("@")
    if not at:
        return name, None
    if not revision.isdigit() or int(revision) < 1:
        raise EvalBuildError(f"'{text}' names no revision", "write NAME or NAME@REV, e.g. triage@2")
    return name, int(revision)


def since_time(text: str | float, now: float | None = None) -> float:
    """A `since` as Unix seconds: a number of them, a date or time (ISO 8601; local time unless it
    names a zone), or a duration back from now (`90m`, `12h`, `7d`, `2w`)."""
    given = text.strip() if isinstance(text, str) else text
    found: float | None = None
    try:
        if not isinstance(given, str):
            found = float(given)
        elif duration := _DURATION.match(given):
            found = (time.time() if now is None else now) - float(duration["amount"]) * _SECONDS[duration["unit"]]
        elif _NUMBER.match(given):
            found = float(given)
        else:
            found = dt.datetime.fromisoformat(given).timestamp()
    except (ValueError, OverflowError, OSError):
        pass
    if found is None or not math.isfinite(found):
        raise EvalBuildError(
            f"since '{text}' is neither a date nor a duration",
            "write a date or time (2026-12-01, 2026-12-01T09:30) or a duration back from now (30m, 12h, 7d, 2w)",
        )
    return found


def short_diff(original: Any, expected: Any, width: int = 120) -> str:
    """What a case's expected value changes in the original, in one line (empty when the same)."""
    before, after = strip_meta_deep(original), strip_meta_deep(expected)
    if before == after:
        return ""
    if isinstance(before, dict) and isinstance(after, dict):
        parts = [
            f"{key}: {_brief(before[key])} → {_brief(after[key])}" if key in before and key in after
            else f"+{key}: {_brief(after[key])}" if key in after else f"-{key}"
            for key in sorted(set(before) | set(after), key=str)
            if before.get(key, _ABSENT) != after.get(key, _ABSENT)
        ]  # fmt: skip
        line = "; ".join(parts)
    else:
        line = f"{_brief(before)} → {_brief(after)}"
    return line if len(line) <= width else line[: width - 1] + "…"


_ABSENT = object()


def _when(ts: float) -> str:
    try:
        return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return f"{ts:.0f} (Unix seconds)"


def _brief(value: Any, width: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


# -- reading a run's judgements -------------------------------------------------------------------


class _RunReader:
    """One run's judgements as cases: its node runs, its ledger and its graph version."""

    def __init__(self, store: Store, record: RunRecord, compiled: CompiledRun) -> None:
        self.record = record
        self.compiled = compiled
        self.node_runs = {r.id: r for r in store.runs.node_runs(record.id)}
        self.history: dict[str, list[FieldVersion]] = {}
        for version in store.ledger.history(record.id):
            self.history.setdefault(version.owner_id, []).append(version)
        self.values = {(v.owner_id, v.version): v.value for vs in self.history.values() for v in vs}
        self.standing: dict[str, _Judgement] = {}
        self.makers: dict[str, dict[int, str | None]] = {}
        for owner, versions in self.history.items():
            if owner == INPUT:
                continue
            judgement, self.makers[owner] = _standing(owner, versions)
            if judgement is not None:
                self.standing[owner] = judgement

    def node_cases(self) -> list[_Found]:
        """The newest standing judgement of each node: a review's goes to the node it showed."""
        newest: dict[str, _Found] = {}
        for judgement in self.standing.values():
            found = self._node_case(judgement)
            if found is None:
                continue
            node_id = found.case.node_id or ""
            if node_id not in newest or (found.case.judged_at or 0.0) > (newest[node_id].case.judged_at or 0.0):
                newest[node_id] = found
        return list(newest.values())

    def run_cases(self, wanted: set[str] | None) -> list[_Found]:
        """The run as a whole, when a person judged a node its output comes from."""
        exits = [e for e in self.compiled.output_nodes if e in self.standing and (wanted is None or e in wanted)]
        if not exits:
            return []
        judged = {e: self.standing[e] for e in exits}
        original = {e: strip_meta(_original(self._judged_run(j))) for e, j in judged.items()}
        expected = {e: strip_meta(j.value) for e, j in judged.items()}
        last = max(judged.values(), key=lambda j: j.at)
        single = len(self.compiled.output_nodes) == 1
        case = NewCase(
            level="run", label=_label(original, expected), source_run_id=self.record.id,
            graph_version=self.record.graph_version, ledger_version=last.version, input=self.record.input,
            original=original[exits[0]] if single else original, expected=expected[exits[0]] if single else expected,
            schemas=_schemas(self.compiled, exits), judged_by=last.by, judged_at=last.at, note=last.note,
        )  # fmt: skip
        return [_Found(case, expected)]

    def _node_case(self, judgement: _Judgement) -> _Found | None:
        rec = self._judged_run(judgement)
        node_id = judgement.owner
        if node_id not in self.compiled.nodes:
            return None
        value = judgement.value
        shown = self._producer(node_id, rec)
        if shown is not None:  # a HUMAN_REVIEW: the case is the node whose value it showed
            node_id, rec = shown
            value = self.compiled.contracts[node_id].annotate(strip_meta(value))
        if rec is None:
            return None
        original = _original(rec)
        case = NewCase(
            level="node", label=_label(original, value), source_run_id=self.record.id,
            graph_version=self.record.graph_version, ledger_version=judgement.version, input=self._read(rec),
            original=original, expected=value, node_run_id=rec.id, node_id=node_id,
            schemas=_schemas(self.compiled, [node_id]), judged_by=judgement.by, judged_at=judgement.at,
            note=judgement.note,
        )  # fmt: skip
        return _Found(case, {node_id: value})

    def _judged_run(self, judgement: _Judgement) -> NodeRunRecord | None:
        if judgement.node_run_id in self.node_runs:
            return self.node_runs[judgement.node_run_id]
        own = [r for r in self.node_runs.values() if r.node_id == judgement.owner]
        return max(own, key=lambda r: r.activation) if own else None

    def _producer(self, node_id: str, rec: NodeRunRecord | None) -> tuple[str, NodeRunRecord | None] | None:
        """For a HUMAN_REVIEW that showed one predecessor's value: that node and the node run
        that made the value it read; None for any other node (it is judged itself)."""
        if rec is None or self.compiled.nodes[node_id].type != NodeType.HUMAN_REVIEW:
            return None
        state = (rec.input_snapshot or {}).get("state") or {}
        predecessors = state.get("predecessors") or []
        read = rec.consumed or {}
        if len(predecessors) != 1 or predecessors[0] not in read or predecessors[0] not in self.compiled.nodes:
            return None
        producer = predecessors[0]
        edges = [e for e in self.compiled.in_edges.get(node_id, []) if e.source_node_id == producer]
        if not edges or any(e.id in self.compiled.routed_edges for e in edges):
            return None  # a tool's result went down the edge, not the node's value
        maker = self.makers.get(producer, {}).get(read[producer])
        return producer, self.node_runs.get(maker) if maker is not None else None

    def _read(self, rec: NodeRunRecord) -> dict[str, Any]:
        """The node run's input: the run input and the upstream values, at the versions it read."""
        read = dict(rec.consumed or {})
        given = self.values.get((INPUT, read[INPUT]), self.record.input) if INPUT in read else self.record.input
        upstream = {owner: self.values.get((owner, version)) for owner, version in read.items() if owner != INPUT}
        return {"input": given, "upstream": upstream, "read": read}


def _standing(owner: str, versions: list[FieldVersion]) -> tuple[_Judgement | None, dict[int, str | None]]:
    """The judgement in effect after an owner's last version (None: nobody's, or undone), and the
    node run whose value each version holds.

    An override or a review is a judgement; an execution or a freeze leaves the one before in
    effect (a rerun does not unsay a correction of an earlier activation); a rollback restores the
    one in effect at the version it rolls back to, and one of a field keeps the one in effect with
    that field restored."""
    current: _Judgement | None = None
    maker: str | None = None
    state: dict[int, _Judgement | None] = {}
    makers: dict[int, str | None] = {}
    for v in versions:
        if v.kind in ("override", "review"):
            current = _Judgement(owner, v.version, v.value, v.node_run_id or maker, v.by, v.at, v.reason)
            maker = v.node_run_id or maker
        elif v.kind == "rollback":
            target, field_name = _rolled_back(owner, v.reason)
            if target is not None and field_name is None:
                current, maker = state.get(target), makers.get(target, maker)
            elif target is not None and current is not None:
                current = replace(current, version=v.version, value=v.value, by=v.by, at=v.at, note=v.reason)
        elif v.kind == "execute":
            maker = v.node_run_id
        state[v.version], makers[v.version] = current, maker
    return current, makers


def _rolled_back(owner: str, reason: str | None) -> tuple[int | None, str | None]:
    """The version a rollback went back to and the field it restored (None: the whole value)."""
    match = _ROLLBACK.match(reason or "")
    if match is None:
        return None, None
    label = match["label"]
    field_name = None if label == owner else label.removeprefix(f"{owner}.") if label.startswith(f"{owner}.") else ""
    return (int(match["version"]), field_name) if field_name != "" else (None, None)


def _original(rec: NodeRunRecord | None) -> Any:
    """What the graph produced: the node run's own output; for a node that waited for a person
    (a review, an escalation), the value it showed."""
    if rec is None:
        return None
    return rec.output if rec.output is not None else (rec.input_snapshot or {}).get("value")


def _label(original: Any, expected: Any) -> str:
    return "approved" if strip_meta_deep(original) == strip_meta_deep(expected) else "corrected"


def _schemas(compiled: CompiledRun, node_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The out-edge schemas of the nodes, each once, as [{id, version}]."""
    seen: dict[str, dict[str, Any]] = {}
    for node_id in node_ids:
        for bound in compiled.contracts[node_id].schemas:
            seen.setdefault(bound.id, {"id": bound.id, "version": bound.version})
    return list(seen.values())


def _checked(found: list[_Found], compiled: dict[int, CompiledRun]) -> tuple[list[NewCase], list[dict[str, Any]]]:
    """The cases whose expected value passes the out-edge schemas it names, and why the others do not."""
    cases: list[NewCase] = []
    skipped: list[dict[str, Any]] = []
    for f in found:
        contracts = compiled[f.case.graph_version].contracts
        problems = [p for node_id, value in f.checks.items() for p in contracts[node_id].violations(value)]
        if not problems:
            cases.append(f.case)
            continue
        skipped.append({
            "run_id": f.case.source_run_id, "node_id": f.case.node_id, "node_run_id": f.case.node_run_id,
            "label": f.case.label, "judged_at": f.case.judged_at,
            "reason": f"the expected value does not match the schemas it names: {'; '.join(problems[:3])}",
        })  # fmt: skip
    return cases, skipped


def _checked_sources(sources: Sequence[str]) -> list[str]:
    given = list(dict.fromkeys(s.strip() for s in sources if s.strip()))
    if not given:
        raise EvalBuildError("no source of cases was given", f"name one or both of {', '.join(SOURCES)}")
    unknown = [s for s in given if s not in SOURCES]
    if unknown:
        raise EvalBuildError(f"unknown source '{unknown[0]}' of cases", f"use {' and/or '.join(SOURCES)}")
    return given


def _checked_nodes(graph: str, defined: Iterable[Any], nodes: Sequence[str] | None) -> set[str] | None:
    if nodes is None:
        return None
    known = [n.id for n in defined]
    wanted = {n.strip() for n in nodes if n.strip()}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise EvalBuildError(f"graph '{graph}' has no node '{unknown[0]}'", f"its nodes: {', '.join(known)}")
    return wanted or None


def _nothing(
    graph: str, sources: list[str], since: float | None, wanted: set[str] | None, skipped: list[dict[str, Any]]
) -> EvalBuildError:
    """The refusal of a build that found no case: an empty set could judge nothing."""
    where = " or ".join(sources)
    if wanted is not None:
        where += f" of {', '.join(sorted(wanted))}"
    if since is not None:
        where += f" since {_when(since)}"
    if skipped:
        return EvalBuildError(
            f"no case of graph '{graph}' can be used: the {len(skipped)} {where} found all fail their schemas",
            HOW_TO_GET_CASES,
            [f"run {s['run_id']}, node {s['node_id']}: {s['reason']}" for s in skipped[:10]],
        )
    return EvalBuildError(f"graph '{graph}' has no {where} to build an evaluation set from", HOW_TO_GET_CASES)
