"""What the CLI does without changing a run, over HTTP: `plait validate` (a graph sent as
content), `plait run --dry-run`, `plait replay`, `plait runs show --ledger` and `plait runs check`.
Each calls the function the CLI calls."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from plait.api.errors import ApiError
from plait.api.schemas import CheckProblemOut, GraphSource, RunCheckOut
from plait.api.state import ServerState, get_state
from plait.api.wording import for_http
from plait.engine.ledger import ledger_json
from plait.engine.run_input import check_input
from plait.evolve.skills import skill_source
from plait.evolve.upload import check_upload
from plait.llm.pool import roles_of
from plait.llm.types import ProviderError
from plait.runs.check import check_run
from plait.runs.dry_run import dry_run_on
from plait.runs.replay import ReplayError, replay
from plait.runs.replay_search import SearchReplayError, is_search, replay_search
from plait.runs.start import resolve_graph

router = APIRouter(tags=["inspect"])
State = Annotated[ServerState, Depends(get_state)]


class ValidationOut(BaseModel):
    """What `plait validate` finds in a graph; `valid` when there are no errors."""

    valid: bool
    errors: list[dict[str, Any]] = Field(description="As `plait validate --json`: code, message, node, line, hint.")
    warnings: list[dict[str, Any]]


class DryRunIn(BaseModel):
    """The input, and any upstream outputs to assume, for a dry run."""

    input: dict[str, Any] = Field(default_factory=dict, description="The run input (checked against input_schema).")
    upstream: dict[str, Any] | None = Field(
        default=None, description="Outputs to assume for nodes, by node id (else placeholders from the schemas)."
    )


class ReplayIn(BaseModel):
    """Where to send a recorded request again: by default, where it went first."""

    model: str | None = Field(default=None, description="Send it to this role (of plait.toml) or model instead.")


@router.post("/graphs/validate", response_model=ValidationOut)
def validate(state: State, body: GraphSource) -> ValidationOut:
    """Every check of `plait validate` on a graph sent as content (stored skills expanded from
    the store); nothing is stored."""
    result = check_upload(body.content, as_json=body.as_json, skills=skill_source(state.store))
    return ValidationOut(**result.to_json())


@router.post("/graphs/{ref}/dry-run", response_model=dict[str, Any])
async def dry_run_graph(state: State, ref: str, body: DryRunIn) -> dict[str, Any]:
    """`plait run --dry-run` on a stored graph's latest version: every prompt rendered, budgets
    and capabilities checked, estimated tokens and cost per node; no model is called and no run
    is stored (`problems` lists what a run would refuse)."""
    stored = resolve_graph(state.store, ref, files=False)
    check_input(stored, body.input)
    result = await dry_run_on(stored.graph, body.input, state.provider, body.upstream)  # the server's provider
    return result.as_json()


@router.post("/node-runs/{node_run_id}/replay", response_model=dict[str, Any])
async def replay_node_run(state: State, node_run_id: str, body: ReplayIn | None = None) -> dict[str, Any]:
    """`plait replay`: re-send a recorded model call exactly (or to another role or model) and
    diff the new answer against the stored one. A RETRIEVE node run is searched again at the
    knowledge base's generation it recorded, and now (`kind: search`); no model is called.
    Nothing is stored."""
    record = state.store.runs.node_run(node_run_id)
    if is_search(record):
        try:
            return (await run_in_threadpool(replay_search, state.store, record)).as_json()
        except SearchReplayError as exc:
            raise ApiError(422, "invalid", str(exc), hint=exc.hint) from None
    provider = state.provider
    if provider is None:
        raise ApiError(
            422,
            "invalid",
            "this server has no model provider to replay with",
            hint="ask the server's operator to configure a model provider",
        )
    roles = roles_of(provider)
    try:
        result = await replay(record, provider, body.model if body is not None else None, roles)
    except ReplayError as exc:
        raise ApiError(422, "invalid", str(exc)) from None
    except ProviderError as exc:
        raise ApiError(503, "provider_failed", f"the model call failed: {exc}") from None
    return asdict(result)


@router.get("/runs/{run_id}/ledger", response_model=list[dict[str, Any]])
def ledger(state: State, run_id: str) -> list[dict[str, Any]]:
    """The run's field ledger (`plait runs show --ledger --json`): every version of the input and
    of every node output, who wrote it and why, whether it is frozen, and who read it."""
    state.store.runs.get(run_id)  # 404 for an unknown run
    return ledger_json(state.store.ledger.history(run_id), state.store.runs.node_runs(run_id))


@router.get("/runs/{run_id}/check", response_model=RunCheckOut)
def check(state: State, run_id: str) -> RunCheckOut:
    """`plait runs check`: whether the run and its child runs are consistent after their
    corrections: every node read the values in effect (or is stale, was kept by a KEEP
    correction, or waits for a person), its input snapshot agrees with its predecessors, the
    ledger holds every output, branches are as the CONDITIONs now decide, the run's output is its
    exit nodes'. Each problem says what to do; 404 for an unknown run."""
    result = check_run(state.store, run_id)
    problems = [
        CheckProblemOut.model_validate({**p.as_json(), "message": for_http(p.message), "hint": for_http(p.hint)})
        for p in result.problems
    ]
    return RunCheckOut(run_id=result.run_id, consistent=result.consistent, checked=result.checked, problems=problems)
