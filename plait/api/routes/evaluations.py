"""Evaluations: the sets of cases a new version of a graph is scored on (docs/evaluation.md).

A set is built from what people said of the graph's outputs and never changes: building under a
name already taken answers its next revision. Each route is a function on `router`; a new one
goes beside them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from plait.api.auth import CallerDep
from plait.api.schemas import CheckedIn
from plait.api.state import ServerState, get_state
from plait.runs import eval_build
from plait.store.evaluations import EvalCase, EvalSet

router = APIRouter(tags=["evaluations"])
State = Annotated[ServerState, Depends(get_state)]


class EvalSetIn(CheckedIn):
    name: str = Field(min_length=1, max_length=120, description="Lower-case letters, digits, '_', '.', '-'.")
    sources: list[Literal["corrections", "approvals"]] = Field(
        ["corrections", "approvals"], min_length=1, description="Where cases come from."
    )
    since: float | str | None = Field(
        None, description="Only what was judged since: Unix seconds, a date (2026-12-01) or a duration back (7d)."
    )
    nodes: list[str] | None = Field(None, description="Only these nodes' cases.")
    level: Literal["node", "run"] = "node"


class EvalSetOut(BaseModel):
    id: str
    graph_id: str
    name: str
    revision: int
    ref: str = Field(description="NAME@REV.")
    cases: int
    built_from: dict[str, Any] = Field(
        description="sources, since, nodes, level, graph_version, runs, labels (cases by label) and skipped "
        "(count, and the cases whose expected value fails its schemas, with the reason)."
    )
    created_by: str
    created_at: float


class EvalCaseOut(BaseModel):
    id: str
    position: int
    level: str
    label: str
    critical: bool
    source_run_id: str
    node_run_id: str | None
    node_id: str | None
    graph_version: int
    ledger_version: int
    input: Any
    original: Any
    expected: Any
    schemas: list[dict[str, Any]]
    judged_by: str | None
    judged_at: float | None
    note: str | None
    diff: str = Field(description="What the expected value changes in the original, in one line (empty: nothing).")


class EvalSetShownOut(BaseModel):
    set: EvalSetOut
    cases: list[EvalCaseOut]


@router.post("/graphs/{ref}/eval-sets", response_model=EvalSetOut, status_code=201)
def build(state: State, caller: CallerDep, ref: str, body: EvalSetIn) -> EvalSetOut:
    """Build the next revision of an evaluation set from the graph's corrections and approvals
    (404 unknown graph; 422 a bad request, or nothing to build the set from)."""
    since = None if body.since is None else eval_build.since_time(body.since)
    made = eval_build.build_set(
        state.store, ref, name=body.name, sources=body.sources, since=since, nodes=body.nodes, level=body.level,
        by=caller.by,
    )  # fmt: skip
    return _set(made)


@router.get("/graphs/{ref}/eval-sets", response_model=list[EvalSetOut])
def list_sets(state: State, ref: str) -> list[EvalSetOut]:
    """Every revision of every evaluation set of the graph, newest first."""
    return [_set(s) for s in eval_build.list_sets(state.store, ref)]


@router.get("/graphs/{ref}/eval-sets/{name}", response_model=EvalSetShownOut)
def show_set(
    state: State, ref: str, name: str, revision: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None
) -> EvalSetShownOut:
    """One evaluation set (its newest revision unless `revision`) with its cases."""
    shown = eval_build.show_set(state.store, ref, name, revision)
    return EvalSetShownOut(set=_set(shown.set), cases=[_case(c) for c in shown.cases])


def _set(made: EvalSet) -> EvalSetOut:
    return EvalSetOut(id=made.id, graph_id=made.graph_id, name=made.name, revision=made.revision, ref=made.ref,
                      cases=made.cases, built_from=made.built_from, created_by=made.created_by,
                      created_at=made.created_at)  # fmt: skip


def _case(case: EvalCase) -> EvalCaseOut:
    return EvalCaseOut(
        id=case.id, position=case.position, level=case.level, label=case.label, critical=case.critical,
        source_run_id=case.source_run_id, node_run_id=case.node_run_id, node_id=case.node_id,
        graph_version=case.graph_version, ledger_version=case.ledger_version, input=case.input,
        original=case.original, expected=case.expected, schemas=case.schemas, judged_by=case.judged_by,
        judged_at=case.judged_at, note=case.note, diff=eval_build.short_diff(case.original, case.expected),
    )  # fmt: skip
