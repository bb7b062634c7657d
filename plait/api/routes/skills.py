"""/api/skills: stored skills, as `plait skills` keeps them (docs/skills.md).

A skill's graph comes as an object and is compiled before anything is stored (422 with the
compiler's diagnostics, as a graph upload); it may name stored skills but never a file, since
the server never reads its own files for a client.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from plait.api.auth import CallerDep
from plait.api.schemas import MAX_INT
from plait.api.skill_schemas import SkillChange, SkillIn, SkillOut, SkillSummaryOut
from plait.api.state import ServerState, get_state
from plait.evolve.skills import SkillDraft, add_skill, export_skill, update_skill

router = APIRouter(prefix="/skills", tags=["skills"])
State = Annotated[ServerState, Depends(get_state)]
Version = Annotated[int, Path(ge=1, le=MAX_INT, description="A stored version of the skill.")]


def _draft(body: SkillChange, name: str) -> SkillDraft:
    return SkillDraft(
        document=body.graph,
        name=name,
        description=body.description,
        category=body.category,
        tags=body.tags,
        parameters=body.parameter_list(),
        input_mapping=dict(body.input_mapping),
    )


@router.get("", response_model=list[SkillSummaryOut])
def list_skills(
    state: State,
    tag: Annotated[str | None, Query(max_length=64, description="Only skills with this tag.")] = None,
    category: Annotated[str | None, Query(max_length=64)] = None,
    q: Annotated[str | None, Query(max_length=200, description="In the name or description, any case.")] = None,
) -> list[SkillSummaryOut]:
    """The skills by name, each at its newest version (without its graph)."""
    return [SkillSummaryOut(**s.summary()) for s in state.store.skills.list(tag=tag, category=category, q=q)]


@router.post("", response_model=SkillOut, status_code=201)
def create_skill(state: State, body: SkillIn, caller: CallerDep) -> SkillOut:
    """A new skill at version 1; 409 when the name is taken, 422 when its graph does not compile."""
    record = add_skill(state.store, _draft(body, body.name), by=caller.by, note=body.note)
    return SkillOut(**record.as_json())


@router.get("/{name}", response_model=SkillOut)
def get_skill(state: State, name: str) -> SkillOut:
    """The newest version of a skill, with its graph and every version's history."""
    return SkillOut(**state.store.skills.get(name).as_json())


@router.get("/{name}/versions/{version}", response_model=SkillOut)
def get_skill_version(state: State, name: str, version: Version) -> SkillOut:
    """One version of a skill (what `skill: NAME@VERSION` expands)."""
    return SkillOut(**state.store.skills.get(name, version).as_json())


@router.put("/{name}", response_model=SkillOut)
def update_skill_route(state: State, name: str, body: SkillChange, caller: CallerDep) -> SkillOut:
    """A new version of the skill; graphs that name an older version keep it."""
    record = update_skill(state.store, name, _draft(body, name), by=caller.by, note=body.note)
    return SkillOut(**record.as_json())


@router.delete("/{name}", status_code=204)
def delete_skill(state: State, name: str) -> Response:
    """Delete the skill and its versions (stored graphs keep the nodes they inlined)."""
    state.store.skills.delete(name)
    return Response(status_code=204)


@router.get("/{name}/export", response_class=Response, responses={200: {"content": {"application/yaml": {}}}})
def export(
    state: State,
    name: str,
    version: Annotated[int | None, Query(ge=1, le=MAX_INT, description="Default: the newest.")] = None,
) -> Response:
    """The skill as a skill file (YAML with its `skill:` block), which POST and PUT read back."""
    return Response(export_skill(state.store.skills.get(name, version)), media_type="application/yaml")
