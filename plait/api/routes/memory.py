"""/api/memory: the facts a chat's memory keeps, and correcting or retracting one. A correction
stores a new fact in place of the old one; the old one is kept in its history and never
recalled again (409 when it is no longer active)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from plait.api.auth import CallerDep
from plait.api.errors import ApiError
from plait.api.schemas import CheckedIn
from plait.api.state import ServerState, get_state
from plait.runs import memory
from plait.store.memory import Fact

router = APIRouter(prefix="/memory", tags=["memory"])
State = Annotated[ServerState, Depends(get_state)]


class ScopeOut(BaseModel):
    scope: str
    facts: int


class FactOut(BaseModel):
    id: str
    scope: str
    subject: str
    predicate: str
    object: str
    text: str
    valid_from: float | None
    status: str
    supersedes: str | None
    superseded_by: str | None
    source: dict[str, Any]
    created_by: str
    note: str | None
    created_at: float


class FactHistoryOut(FactOut):
    history: list[FactOut] = Field(
        description="The fact's versions, oldest first: what it corrected, what corrected it."
    )


class CorrectIn(CheckedIn):
    subject: str | None = Field(None, min_length=1, max_length=2000)
    predicate: str | None = Field(None, min_length=1, max_length=2000)
    object: str | None = Field(None, min_length=1, max_length=2000)
    text: str | None = Field(None, min_length=1, max_length=2000)
    note: str | None = Field(None, max_length=2000)


class RetractIn(CheckedIn):
    note: str | None = Field(None, max_length=2000)


@router.get("", response_model=list[ScopeOut])
def scopes(state: State) -> list[ScopeOut]:
    """Every memory with facts, and how many are active."""
    return [ScopeOut(scope=name, facts=count) for name, count in state.store.memory.scopes()]


@router.get("/facts", response_model=list[FactOut])
def facts(
    state: State,
    scope: Annotated[str, Query(min_length=1, max_length=200, description="Whose memory, e.g. chat:<session id>.")],
    history: Annotated[bool, Query(description="Superseded and retracted facts too.")] = False,
) -> list[FactOut]:
    """A memory's active facts, oldest first."""
    return [_out(f) for f in state.store.memory.facts(scope, history=history)]


@router.get("/facts/{fact_id}", response_model=FactHistoryOut)
def fact(state: State, fact_id: str) -> FactHistoryOut:
    """One fact, with its history."""
    found = state.store.memory.get(fact_id)
    return FactHistoryOut(**_out(found).model_dump(), history=[_out(f) for f in state.store.memory.history(fact_id)])


@router.post("/facts/{fact_id}/correct", response_model=FactOut, status_code=201)
async def correct(state: State, caller: CallerDep, fact_id: str, body: CorrectIn) -> FactOut:
    """Store the corrected fact in place of this one (409 when this one is no longer active)."""
    changes = body.model_dump(exclude={"note"}, exclude_none=True)
    if not changes:
        raise ApiError(422, "nothing_to_correct", "nothing to correct", hint="give subject, predicate, object or text")
    made = await run_in_threadpool(memory.correct, state.store, fact_id, changes, by=caller.by, note=body.note)
    return _out(made)


@router.post("/facts/{fact_id}/retract", response_model=FactOut)
def retract(state: State, caller: CallerDep, fact_id: str, body: RetractIn) -> FactOut:
    """Mark the fact wrong, with nothing in its place (409 when it is no longer active)."""
    return _out(memory.retract(state.store, fact_id, by=caller.by, note=body.note))


def _out(f: Fact) -> FactOut:
    return FactOut(id=f.id, scope=f.scope, subject=f.subject, predicate=f.predicate, object=f.object, text=f.text,
                   valid_from=f.valid_from, status=str(f.status), supersedes=f.supersedes,
                   superseded_by=f.superseded_by, source=f.source, created_by=f.created_by, note=f.note,
                   created_at=f.created_at)  # fmt: skip
