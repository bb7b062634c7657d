"""`client.skills`: what `plait skills` does, from Python, over the client's store (and, for
`import_markdown`, its model).

A skill is given as a skill file (a path: a graph file with an optional `skill:` block) or as a
graph object with its parameters beside it; it is stored only once it compiles.
"""

from __future__ import annotations

import builtins
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plait.client._namespaces import _Blocking
from plait.client._sync import _blocking
from plait.client._wording import for_python
from plait.errors import PlaitError

if TYPE_CHECKING:
    from plait.client._async import AsyncClient
    from plait.evolve.skills import SkillDraft
    from plait.store.skills import SkillRecord

BY = "python"


class AsyncSkills:
    """Stored skills: the graphs a SKILL node names with `skill: NAME` or `skill: NAME@VERSION`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(
        self, tag: str | None = None, category: str | None = None, q: str | None = None
    ) -> builtins.list[SkillRecord]:
        """The skills by name, each at its newest version: with `tag`, in `category`, and whose
        name or description holds `q`."""
        return self._client._refused(self._client.store.skills.list, tag=tag, category=category, q=q)

    async def get(self, name: str, version: int | None = None) -> SkillRecord:
        """A skill at `version` (default: the newest), with its graph and version history."""
        return self._client._refused(self._client.store.skills.get, name, version)

    async def add(
        self,
        skill: str | os.PathLike[str] | dict[str, Any],
        *,
        name: str | None = None,
        description: str | None = None,
        tags: builtins.list[str] | None = None,
        category: str | None = None,
        parameters: builtins.list[dict[str, Any]] | None = None,
        input_mapping: dict[str, str] | None = None,
        note: str | None = None,
    ) -> SkillRecord:
        """Store a new skill (version 1) from a skill file or a graph object; GraphInvalid when its
        graph does not compile, a conflict when the name is taken."""
        from plait.evolve.skills import add_skill

        draft = _draft(skill, name, description, tags, category, parameters, input_mapping)
        return self._client._refused(add_skill, self._client.store, draft, by=BY, note=note)

    async def update(
        self,
        name: str,
        skill: str | os.PathLike[str] | dict[str, Any],
        *,
        description: str | None = None,
        tags: builtins.list[str] | None = None,
        category: str | None = None,
        parameters: builtins.list[dict[str, Any]] | None = None,
        input_mapping: dict[str, str] | None = None,
        note: str | None = None,
    ) -> SkillRecord:
        """Store a new version of skill `name` (graphs naming an older version keep it)."""
        from plait.evolve.skills import update_skill

        draft = _draft(skill, name, description, tags, category, parameters, input_mapping)
        return self._client._refused(update_skill, self._client.store, name, draft, by=BY, note=note)

    async def delete(self, name: str) -> None:
        """Delete a skill and its versions (graphs stored with it keep the nodes they inlined)."""
        self._client._refused(self._client.store.skills.delete, name)

    async def export(self, name: str, version: int | None = None) -> str:
        """A skill version as skill-file YAML, which `add` and `update` read back."""
        from plait.evolve.skills import export_skill

        return export_skill(self._client._refused(self._client.store.skills.get, name, version))

    async def import_markdown(self, markdown: str, *, name: str | None = None) -> SkillRecord:
        """Turn a skill written in prose (Markdown with `name` and `description` front matter) into
        a skill graph with this client's model, stored only once it compiles (a few designer rounds)."""
        from plait.runs.skill_import import ImportPorts, import_skill

        store, engines = self._client._open()
        engine = engines.default

        async def drive(run_id: str) -> Any:
            return await self._client._drive(run_id, engine)

        ports = ImportPorts(
            drive=drive, check_run=engine.check_executable, check_graph=engine.check_graph, llm=engine.llm, by=BY
        )
        try:
            return (await import_skill(store, markdown, ports, name=name)).skill
        except PlaitError as exc:
            exc.hint = for_python(exc.hint)
            raise


def _draft(
    skill: str | os.PathLike[str] | dict[str, Any],
    name: str | None,
    description: str | None,
    tags: builtins.list[str] | None,
    category: str | None,
    parameters: builtins.list[dict[str, Any]] | None,
    input_mapping: dict[str, str] | None,
) -> SkillDraft:
    """The skill as a draft: a file read (its `skill:` block under the arguments given) or an object."""
    from plait.compile import GraphInvalid, GraphLoadError
    from plait.compile.source import SourceDoc, check_values, read_source
    from plait.evolve.skills import draft_of

    try:
        doc = read_source(Path(skill)) if not isinstance(skill, dict) else check_values(SourceDoc(data=dict(skill)))
    except GraphLoadError as exc:
        raise GraphInvalid(list(exc.diagnostics)) from None
    draft = draft_of(doc)
    given: dict[str, Any] = {
        "name": name,
        "description": description,
        "tags": tags,
        "category": category,
        "parameters": parameters,
        "input_mapping": input_mapping,
    }
    return replace(draft, **{k: v for k, v in given.items() if v is not None})


class Skills(_Blocking[AsyncSkills]):
    """`Client.skills`: the methods of `AsyncSkills`, each returning its result."""

    list = _blocking(AsyncSkills.list)
    get = _blocking(AsyncSkills.get)
    add = _blocking(AsyncSkills.add)
    update = _blocking(AsyncSkills.update)
    delete = _blocking(AsyncSkills.delete)
    export = _blocking(AsyncSkills.export)
    import_markdown = _blocking(AsyncSkills.import_markdown)
