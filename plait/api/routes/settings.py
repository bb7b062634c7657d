"""/api/settings: the settings in force (plait.toml with the changes made here over it), changing
them without a restart, their history and reverts (docs/configuration.md, "Settings at run time").

A change names the revision it was made on (409 when the settings changed since), is checked as
plait.toml is (422 naming the key), and is refused with 403 where the deployer did not allow it
(`[settings] enabled`, `fixed`); a refused change leaves everything as it was. This server takes
a change it recorded up at once; other servers and the workers at their next run or model call.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.concurrency import run_in_threadpool

from plait.api.auth import CallerDep
from plait.api.schemas import MAX_INT
from plait.api.settings_schemas import HistoryOut, RevertIn, SettingsIn, SettingsOut, history_out, settings_out
from plait.api.state import ServerState, get_state
from plait.config import PlaitConfig
from plait.runs import settings
from plait.runs.settings import Effective

router = APIRouter(prefix="/settings", tags=["settings"])
State = Annotated[ServerState, Depends(get_state)]
Revision = Annotated[int, Path(ge=1, le=MAX_INT, description="A recorded change of the settings.")]


@router.get("", response_model=SettingsOut, response_model_by_alias=True)
async def read(state: State) -> SettingsOut:
    """The settings in force: roles, providers (key variables by name, and whether each is set),
    the pool's order, `[resources]`, `[context]`, the sandbox's and tools' limits with their caps,
    and where each value comes from."""
    found = await run_in_threadpool(settings.effective, state.store, state.settings.config, base=_base(state))
    return settings_out(found)


@router.put("", response_model=SettingsOut, response_model_by_alias=True)
async def change(state: State, caller: CallerDep, body: SettingsIn) -> SettingsOut:
    """Change the settings (a patch of their sections) on revision `base_revision`; in force at
    once for new runs and model calls here, and on the workers at their next."""
    found = await run_in_threadpool(
        settings.change,
        state.store,
        state.settings.config,
        body.settings,
        by=caller.by,
        base_revision=body.base_revision,
        note=body.note,
        base=_base(state),
    )
    return _adopted(state, found)


@router.get("/history", response_model=list[HistoryOut])
def history(
    state: State,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> list[HistoryOut]:
    """The changes, newest first: who, when, the note, and each key's value before and after."""
    return [history_out(entry) for entry in settings.history(state.store, limit, offset)]


@router.post("/history/{revision}/revert", response_model=SettingsOut, response_model_by_alias=True)
async def revert(state: State, caller: CallerDep, revision: Revision, body: RevertIn | None = None) -> SettingsOut:
    """Undo one change (its keys go back to what they were before it), recorded as a new change."""
    found = await run_in_threadpool(
        settings.revert,
        state.store,
        state.settings.config,
        revision,
        by=caller.by,
        note=body.note if body is not None else None,
        base=_base(state),
    )
    return _adopted(state, found)


def _base(state: ServerState) -> PlaitConfig | None:
    """plait.toml's configuration as this server read it at its start (None: read it now)."""
    in_force = state.settings_in_force
    return in_force.base if in_force is not None else None


def _adopted(state: ServerState, found: Effective) -> SettingsOut:
    if state.settings_in_force is not None:
        state.settings_in_force.adopt(found)
    return settings_out(found)
