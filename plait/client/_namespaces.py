"""The client's namespaces: `client.templates`, `client.schedules` and `client.tokens`, each
meaning what its `plait templates`, `plait schedules` or `plait token` command means, over the
same use cases and the same store.

Each is an async class holding its `AsyncClient` (its store, its model, its wording of
refusals), with a blocking twin that runs it on the `Client`'s loop thread.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from plait.client import _graphs
from plait.client._sync import _blocking
from plait.errors import PlaitError, Refusal

if TYPE_CHECKING:
    from plait.client._async import AsyncClient
    from plait.client._graphs import GraphSource
    from plait.client._portal import Portal
    from plait.engine.script_host import RunScriptHost
    from plait.runs.generate import Generation
    from plait.runs.schedules import ScheduleShown
    from plait.runs.templates import InputHost, Script
    from plait.sandbox.scripts import ScriptOutcome
    from plait.store.schedules import ScheduleRecord
    from plait.store.templates import TemplateRecord
    from plait.store.tokens import TokenInfo

A = TypeVar("A")
Emit = Callable[[str, dict[str, Any]], None]
"""`on_event(type, data)` of a generation: the console, the prompt, each piece of the answer."""


class NewToken(NamedTuple):
    """A token just created: what the store keeps of it, and the token itself (shown only now)."""

    info: TokenInfo
    token: str


class AsyncTemplates:
    """Prompt-script templates, as `plait templates` keeps them; system ones are read-only (a
    copy made with `create(ID, base=...)` is yours to change)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def list(self, category: str | None = None) -> builtins.list[TemplateRecord]:
        """The live templates by category, then name."""
        return self._client._refused(self._client.store.templates.list, category=category)

    async def get(self, id: str) -> TemplateRecord:
        """A template with its script."""
        return self._client._refused(self._client.store.templates.get, id)

    async def create(
        self,
        id: str,
        script: str | None = None,
        *,
        base: str | None = None,
        name: str | None = None,
        category: str | None = None,
        description: str | None = None,
        schema_target: str | None = None,
    ) -> TemplateRecord:
        """A new user template with `script`, or a copy of template `base`'s script (both: `script`
        is stored, `base` recorded as its base); a field not given is `base`'s. A script that does
        not parse is refused."""
        from plait.runs.template_edits import create_template

        return self._client._refused(
            create_template,
            self._client.store,
            id,
            script,
            base=base,
            name=name,
            category=category,
            description=description,
            schema_target=schema_target,
        )

    async def update(
        self,
        id: str,
        *,
        script: str | None = None,
        name: str | None = None,
        category: str | None = None,
        description: str | None = None,
        schema_target: str | None = None,
    ) -> TemplateRecord:
        """Change the fields given of a user template."""
        from plait.runs.template_edits import update_template

        return self._client._refused(
            update_template,
            self._client.store,
            id,
            script=script,
            name=name,
            category=category,
            description=description,
            schema_target=schema_target,
        )

    async def delete(self, id: str) -> TemplateRecord:
        """Delete a user template (softly: runs that named it keep reading it)."""
        return self._client._refused(self._client.store.templates.delete, id)

    async def preview(
        self,
        id: str | None = None,
        *,
        script: str | None = None,
        input: Any = None,
        run_id: str | None = None,
        node_id: str | None = None,
    ) -> ScriptOutcome:
        """Run a stored template's script (or `script`) once with the preview's limits (3 s soft,
        5 s hard), against `input` or as `node_id` of `run_id` sees it; the prompt or the script's
        error, with its console."""
        from plait.runs.templates import preview

        chosen, host = self._source(id, script, input, run_id, node_id)
        return await asyncio.to_thread(preview, chosen.code, host)

    async def run(
        self,
        id: str | None = None,
        *,
        script: str | None = None,
        input: Any = None,
        run_id: str | None = None,
        node_id: str | None = None,
        role: str = "chat",
        model: str | None = None,
        schema_target: str | None = None,
        on_event: Emit | None = None,
    ) -> Generation:
        """Run a script as `preview` does, send its prompt to this client's model (`role` of it, or
        `model` by name) and return the answer, parsed as JSON with `schema_target` (default: the
        template's). A step that fails is the result's `failure`, naming it: script, preview,
        llm_request, http, stream or parse. `on_event(type, data)` sees each console entry, the
        prompt and each piece of the answer as it arrives, on the client's loop."""
        from plait.runs.generate import GenerateRequest, generate

        chosen, host = self._source(id, script, input, run_id, node_id)
        request = GenerateRequest(chosen.code, host, role=role, model=model, schema_target=chosen.target(schema_target))
        provider = self._client._open()[1].provider
        return await generate(request, provider, on_event or _unheard)

    def _source(
        self, template_id: str | None, script: str | None, run_input: Any, run_id: str | None, node_id: str | None
    ) -> tuple[Script, InputHost | RunScriptHost]:
        """The script to run and the host it gets, as the arguments name them."""
        from plait.runs.templates import Script, script_host, stored_script

        if (run_id is None) != (node_id is None):
            raise PlaitError("run_id and node_id go together: the node of the run whose view the script gets",
                             kind=Refusal.INVALID)  # fmt: skip
        store, refused = self._client.store, self._client._refused
        if template_id is not None and script is None:
            chosen = refused(stored_script, store, template_id)
        elif script is not None and template_id is None:
            chosen = Script(script)
        else:
            raise PlaitError("give a stored template's id or a script, one of them",
                             'templates.preview("plait.summary") or templates.preview(script=code)',
                             kind=Refusal.INVALID)  # fmt: skip
        return chosen, refused(script_host, store, run_id, node_id, {} if run_input is None else run_input)


class AsyncSchedules:
    """Cron schedules of graphs, as `plait schedules` keeps them. A schedule fires while a
    scheduler runs (`plait serve`, `plait worker --beat`), not in the client."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def add(
        self, graph: GraphSource, cron: str, input: dict[str, Any] | None = None, *, catch_up: str = "one",
        timezone: str = "UTC",
    ) -> ScheduleRecord:  # fmt: skip
        """Run `graph` at the instants `cron` (five fields) names in `timezone`; `catch_up` says
        what happens to firings missed while no scheduler ran: none, one or all."""
        from plait.runs.schedules import add_schedule

        store, refused = self._client.store, self._client._refused
        ref = refused(_graphs.reference, store, graph)
        return refused(add_schedule, store, ref, cron, dict(input or {}), catch_up=catch_up, timezone=timezone)

    async def list(self) -> builtins.list[ScheduleRecord]:
        """Every live schedule, oldest first."""
        return self._client._refused(self._client.store.schedules.list)

    async def get(self, id: str) -> ScheduleShown:
        """A schedule (by id or a unique prefix of one) with the runs it fired, the newest first."""
        from plait.runs.schedules import show

        return self._client._refused(show, self._client.store, id)

    async def pause(self, id: str) -> ScheduleRecord:
        """Stop firing (nothing is caught up when it resumes)."""
        from plait.runs.schedules import pause

        return self._client._refused(pause, self._client.store, id)

    async def resume(self, id: str) -> ScheduleRecord:
        """Fire again, from the next instant on."""
        from plait.runs.schedules import resume

        return self._client._refused(resume, self._client.store, id)

    async def delete(self, id: str) -> ScheduleRecord:
        """Delete a schedule (its past runs stay)."""
        return self._client._refused(self._client.store.schedules.delete, id)


class AsyncTokens:
    """Bearer tokens of the HTTP API, as `plait token` keeps them (only their digests)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create(self, name: str) -> NewToken:
        """A new token named `name`; the token itself is in the result only: copy it now."""
        info, token = self._client._refused(self._client.store.tokens.create, name)
        return NewToken(info, token)

    async def list(self) -> builtins.list[TokenInfo]:
        """The tokens' names and dates, oldest first (never the tokens)."""
        return self._client._refused(self._client.store.tokens.list)

    async def revoke(self, name_or_id: str) -> TokenInfo:
        """Revoke a token: requests carrying it are refused from now on."""
        return self._client._refused(self._client.store.tokens.revoke, name_or_id)


class _Blocking(Generic[A]):
    """A blocking namespace: its async namespace's methods, each run on the client's loop thread."""

    def __init__(self, portal: Portal, namespace: A) -> None:
        self._portal = portal
        self._client = namespace


class Templates(_Blocking[AsyncTemplates]):
    """`Client.templates`: the methods of `AsyncTemplates`, each returning its result."""

    list = _blocking(AsyncTemplates.list)
    get = _blocking(AsyncTemplates.get)
    create = _blocking(AsyncTemplates.create)
    update = _blocking(AsyncTemplates.update)
    delete = _blocking(AsyncTemplates.delete)
    preview = _blocking(AsyncTemplates.preview)
    run = _blocking(AsyncTemplates.run)


class Schedules(_Blocking[AsyncSchedules]):
    """`Client.schedules`: the methods of `AsyncSchedules`, each returning its result."""

    add = _blocking(AsyncSchedules.add)
    list = _blocking(AsyncSchedules.list)
    get = _blocking(AsyncSchedules.get)
    pause = _blocking(AsyncSchedules.pause)
    resume = _blocking(AsyncSchedules.resume)
    delete = _blocking(AsyncSchedules.delete)


class Tokens(_Blocking[AsyncTokens]):
    """`Client.tokens`: the methods of `AsyncTokens`, each returning its result."""

    create = _blocking(AsyncTokens.create)
    list = _blocking(AsyncTokens.list)
    revoke = _blocking(AsyncTokens.revoke)


def _unheard(kind: str, data: dict[str, Any]) -> None:
    """A generation's events when nobody listens."""
