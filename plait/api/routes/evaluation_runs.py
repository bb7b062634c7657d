"""Running evaluations: a candidate version of a graph scored on an evaluation set against the
baseline, and the gate's verdict (docs/evaluation.md, "Running an evaluation").

`POST /api/graphs/{ref}/evaluations` starts one in the background (its runs execute here or on
workers like any run) and answers its id at once; `GET /api/graphs/{ref}/evaluations` lists the
graph's evaluations (the workbench links each to its page); `GET /api/evaluations/{id}` reads it, finished
or not; `GET /api/evaluations/{id}/events` streams it as Server-Sent Events: one `case` event per
case scored, numbered by the case's position and sent in the set's order, then one `verdict`
(or `failed`) event numbered one past the last case. A client that reconnects with
`Last-Event-ID` gets exactly what came after; asked again once the evaluation ended, with nothing
newer to send, the answer is 204.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse

from plait.api.auth import CallerDep
from plait.api.evaluation_tasks import evaluation_tasks
from plait.api.schemas import CheckedIn
from plait.api.sse import PING_S, LastEventId, parse_last_event_id
from plait.api.state import ServerState, get_state
from plait.evaluation import GateRules
from plait.runs.eval_run import (
    CONCURRENCY,
    MAX_CONCURRENCY,
    MAX_REPETITIONS,
    RECORDED,
    EvaluationReport,
    evaluation_report,
    resolve,
    start_evaluation,
)

router = APIRouter(tags=["evaluations"])
State = Annotated[ServerState, Depends(get_state)]
LOOK_S = 1.0
"""How often a stream looks at the store when nothing told it of a change (another process may drive it)."""
ENDED = ("completed", "failed")


class EvaluationIn(CheckedIn):
    set: str = Field(
        min_length=1, max_length=140, description="The evaluation set: NAME (newest revision) or NAME@REV."
    )
    version: int | None = Field(None, ge=1, le=2**31 - 1, description="The candidate version (default: the newest).")
    baseline_version: int | None = Field(
        None, ge=1, le=2**31 - 1, description="Run this version afresh as the baseline (default: the recorded outputs)."
    )
    repeat: int = Field(1, ge=1, le=MAX_REPETITIONS, description="Candidate runs per case (a sampling model).")
    max_regressions: int = Field(0, ge=0, le=2**31 - 1)
    alpha: float = Field(0.05, gt=0, le=1)
    max_approved_drop: float = Field(0.0, ge=0, le=1)
    min_cases: int = Field(10, ge=0, le=2**31 - 1, description="Fewer comparable cases: inconclusive.")
    time_split: bool = Field(False, description="Few-shot pools leave out every correction made after the case's.")
    concurrency: int = Field(
        CONCURRENCY,
        ge=1,
        le=MAX_CONCURRENCY,
        description="Cases driven at once (the provider pool still limits calls).",
    )


class EvaluationStartedOut(BaseModel):
    id: str
    status: str
    evaluation: str = Field(description="Where to read it.")
    events: str = Field(description="Where to follow it (Server-Sent Events).")


class EvaluationOut(BaseModel):
    id: str
    graph_id: str
    set: dict[str, Any] = Field(description="id, name, revision.")
    candidate_version: int
    baseline_version: int | None = Field(description="None: the recorded outputs are the baseline.")
    repetitions: int
    rules: dict[str, Any]
    status: str = Field(description="pending, running, completed or failed.")
    driving: bool = Field(description="This server is driving it now.")
    created_by: str
    created_at: float
    completed_at: float | None
    verdict: dict[str, Any] | None = Field(
        description="status, exit_code, lines, checks, cases, fields, sampling, judge."
    )
    error: dict[str, Any] | None
    cases: list[dict[str, Any]] = Field(
        description="Per case: position, case_id, gate_id, level, label, node_id, outcome, reason, and its results "
        "(baseline, candidate: run_id, passed, score, level, note, incomparable, output, fields)."
    )


class EvaluationListedOut(BaseModel):
    id: str
    set: dict[str, Any] = Field(description="id, name, revision.")
    candidate_version: int
    baseline_version: int | None = Field(description="None: the recorded outputs are the baseline.")
    repetitions: int
    status: str = Field(description="pending, running, completed or failed.")
    verdict: str | None = Field(description="pass, fail or inconclusive, once it completed.")
    created_by: str
    created_at: float
    completed_at: float | None


@router.post("/graphs/{ref}/evaluations", response_model=EvaluationStartedOut, status_code=202)
async def start(state: State, caller: CallerDep, ref: str, body: EvaluationIn) -> EvaluationStartedOut:
    """Start evaluating a version of the graph on an evaluation set; it runs in the background
    (follow its events, or read it). An unfinished evaluation of exactly the same is driven on
    instead of starting anew. 404 unknown graph, set or version; 422 a bad setting, or a graph
    this server cannot execute."""
    rules = GateRules(body.max_regressions, body.alpha, body.max_approved_drop, body.min_cases)
    baseline: str | int = RECORDED if body.baseline_version is None else body.baseline_version
    options: dict[str, Any] = {"candidate_version": body.version, "baseline": baseline, "repetitions": body.repeat,
                               "rules": rules, "time_split": body.time_split}  # fmt: skip
    target = await run_in_threadpool(resolve, state.store, ref, body.set, **options)
    state.executor.preflight(target.candidate)
    if target.baseline is not None:
        state.executor.preflight(target.baseline)
    made = await run_in_threadpool(start_evaluation, state.store, ref, body.set, by=caller.by, **options)
    evaluation_tasks(state).start(state, made.id, concurrency=body.concurrency)
    return EvaluationStartedOut(
        id=made.id, status=made.status, evaluation=f"/api/evaluations/{made.id}",
        events=f"/api/evaluations/{made.id}/events",
    )  # fmt: skip


@router.get("/graphs/{ref}/evaluations", response_model=list[EvaluationListedOut])
def list_evaluations(state: State, ref: str) -> list[EvaluationListedOut]:
    """The graph's evaluations, newest first, each with its set and verdict (404 unknown graph)."""
    graph = state.store.graphs.get(ref)
    sets = {s.id: s for s in state.store.evaluations.sets(graph.graph_id)}
    listed = []
    for e in state.store.evaluations.evaluations(graph_id=graph.graph_id):
        found = sets.get(e.set_id) or state.store.evaluations.set_by_id(e.set_id)
        verdict = e.verdict.get("status") if isinstance(e.verdict, dict) else None
        listed.append(EvaluationListedOut(
            id=e.id, set={"id": found.id, "name": found.name, "revision": found.revision},
            candidate_version=e.candidate_version, baseline_version=e.baseline_version, repetitions=e.repetitions,
            status=e.status, verdict=None if verdict is None else str(verdict), created_by=e.created_by,
            created_at=e.created_at, completed_at=e.completed_at,
        ))  # fmt: skip
    return listed


@router.get("/evaluations/{evaluation_id}", response_model=EvaluationOut)
async def get_evaluation(state: State, evaluation_id: str) -> EvaluationOut:
    """An evaluation as it stands: each case's results and outcome, and once it ended its verdict
    (or its error). 404 for an unknown id."""
    report = await run_in_threadpool(evaluation_report, state.store, evaluation_id)
    return EvaluationOut(**report.as_json(), driving=evaluation_tasks(state).driving(evaluation_id))


@router.get(
    "/evaluations/{evaluation_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {"content": {"text/event-stream": {}}},
        204: {"description": "The evaluation has ended; nothing newer."},
    },
)
async def evaluation_events(
    state: State,
    request: Request,
    evaluation_id: str,
    last_event_id: LastEventId = None,
) -> Response:
    """The evaluation's events: `case` per case scored (id: its position), then `verdict` or
    `failed`; every event after `Last-Event-ID`, then live ones until it ends. 204 when it has
    ended and nothing newer is left."""
    after = parse_last_event_id(last_event_id)
    report = await run_in_threadpool(evaluation_report, state.store, evaluation_id)
    if report.evaluation.status in ENDED and not [e for e in _said(report) if e[0] > after]:
        return Response(status_code=204)
    return EventSourceResponse(_stream(state, request, evaluation_id, after), ping=PING_S)


async def _stream(state: ServerState, request: Request, evaluation_id: str, sent: int) -> AsyncIterator[dict[str, str]]:
    tasks = evaluation_tasks(state)
    while not await request.is_disconnected():
        waiter = tasks.waiter(evaluation_id)
        report = await run_in_threadpool(evaluation_report, state.store, evaluation_id)
        for event_id, kind, data in _said(report):
            if event_id > sent:
                body = {"id": event_id, "event": kind, "evaluation_id": evaluation_id, "data": data}
                yield {"id": str(event_id), "event": kind, "data": json.dumps(body, default=str)}
                sent = event_id
        if report.evaluation.status in ENDED:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter.wait(), LOOK_S)


def _said(report: EvaluationReport) -> list[tuple[int, str, dict[str, Any]]]:
    """The report's events, and for an evaluation that failed, its error as the last."""
    said = report.events()
    if report.evaluation.status == "failed":
        said.append((len(report.cases) + 1, "failed", report.evaluation.error or {}))
    return said
