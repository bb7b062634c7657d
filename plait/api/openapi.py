"""What /openapi.json says each operation can answer: only the error statuses it can return.

Every operation is generated with the full set of error responses (so that the shared
`ErrorResponse` schema is in the document once), then each keeps only the statuses that can
happen to it. Most are derived from what the document already says of the operation:

- 401 where the operation declares the bearer scheme, on a server that asks for tokens;
- 404 where the path names a thing (a path parameter), or `NAMED_ELSEWHERE` says the query or
  body does;
- 413 where there is a request body; 422 where there is any parameter or body to be invalid
  (FastAPI validates them; PostgreSQL refuses a NUL character in any text it looks up);
- 503 where the database is read (every route but `NO_DATABASE`).

What only the route's logic knows is listed here, one table per status: `CONFLICTS` (409: the
state forbids it), `SYSTEM_GRAPHS` (403: it changes a graph, and system graphs are
read-only) and `SETTINGS_FIXED` (403: the deployer fixed the settings it changes). The links
between operations (what one response feeds the next) are in `openapi_links.py`. A client
generated from the document, or a fuzzer, then expects exactly the errors that come.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from plait.api.openapi_links import add_links
from plait.api.schemas import ErrorResponse

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in (
        (401, "A bearer token is needed, or the one sent is not valid."),
        (403, "Refused: changing a system graph, or settings the deployer fixed."),
        (404, "Something the request names does not exist."),
        (409, "The current state forbids it (busy, ended, exists, conflicts, not migratable)."),
        (413, "The request body is over the limit."),
        (422, "The request is not valid (fields, graph, value vs schema)."),
        (503, "The database, or the model provider of a replay, is not answering."),
    )
}
ERROR_STATUSES = frozenset(str(status) for status in ERROR_RESPONSES)

Operation = tuple[str, str]
"""(method, path template), as in the document: ("POST", "/api/runs")."""

NO_DATABASE: frozenset[Operation] = frozenset({("GET", "/api/health"), ("GET", "/api/providers")})
NAMED_ELSEWHERE: frozenset[Operation] = frozenset(
    {
        ("POST", "/api/runs"),  # the graph to run
        ("GET", "/PromptGraphDefGetRoute"),
        ("POST", "/PromptGraphDefUpdateRoute"),
        ("POST", "/PromptGraphDefDeleteRoute"),
        ("POST", "/PromptGraphDefForkRoute"),
        ("POST", "/PromptGraphRunStartRoute"),
        ("GET", "/PromptGraphRunGetRoute"),
        ("POST", "/PromptGraphNodeOverrideRoute"),
        ("POST", "/PromptGraphNodeRerunRoute"),
        ("POST", "/api/templates/preview"),  # the template, or the run and node, to preview with
        ("POST", "/api/templates/generate"),
        ("POST", "/api/templates"),  # the template to start `from`
        ("POST", "/api/chat/sessions"),  # the graph to work on
    }
)
READS_OUTPUTS: frozenset[Operation] = frozenset(
    {
        # (reading a run is never refused: an output no migration brings forward comes as stored)
        ("GET", "/api/runs/{run_a}/diff/{run_b}"),
        ("GET", "/api/node-runs/{node_run_id}"),
        ("POST", "/PromptGraphNodeOverrideRoute"),
        ("POST", "/PromptGraphNodeRerunRoute"),
    }
)
CONFLICTS: frozenset[Operation] = READS_OUTPUTS | {
    ("POST", "/api/graphs"),  # the id is taken
    ("POST", "/api/graphs/import"),
    ("PUT", "/api/graphs/{ref}"),
    ("DELETE", "/api/graphs/{ref}"),  # the graph has runs
    ("POST", "/api/graphs/{ref}/fork"),
    ("GET", "/api/graphs/{ref}/diff"),  # not a fork
    ("POST", "/api/graphs/{ref}/merge"),  # the fork changed the same fields
    ("POST", "/api/runs/{run_id}/pause"),  # ended, or executing in another process
    ("POST", "/api/runs/{run_id}/resume"),
    ("POST", "/api/runs/{run_id}/cancel"),
    ("DELETE", "/api/runs/{run_id}"),
    ("POST", "/api/runs/{run_id}/nodes/{node_id}/override"),  # not correctable now, frozen, held
    ("POST", "/api/runs/{run_id}/nodes/{node_id}/rerun"),
    ("POST", "/api/runs/{run_id}/nodes/{node_id}/review"),
    ("POST", "/api/runs/{run_id}/rollback"),
    ("POST", "/PromptGraphDefCreateRoute"),
    ("POST", "/PromptGraphDefUpdateRoute"),
    ("POST", "/PromptGraphDefDeleteRoute"),
    ("POST", "/PromptGraphDefForkRoute"),
    ("POST", "/api/templates"),  # the id is taken
    ("PUT", "/api/templates/{template_id}"),  # a system template is read-only
    ("DELETE", "/api/templates/{template_id}"),
    ("POST", "/api/skills"),  # the name is taken
    ("PUT", "/api/skills/{name}"),  # a new version was stored meanwhile
    ("PUT", "/api/drafts/{slug}"),  # a stored graph's draft names the version it started from
    ("POST", "/api/chat/sessions/{session_id}/messages"),  # the last turn is still being worked on
    ("POST", "/api/chat/sessions/{session_id}/answers"),  # no question card waits
    ("POST", "/api/chat/sessions/{session_id}/drafts/{draft_id}/accept"),  # not a valid proposal, graph changed
    ("POST", "/api/chat/sessions/{session_id}/drafts/{draft_id}/reject"),  # decided already
    ("POST", "/api/kb"),  # the name is taken
    ("POST", "/api/graphs/{ref}/eval-sets"),  # another build of the same set wrote that revision first
    ("POST", "/api/graphs/{ref}/promote"),  # refused by the gate: no passing verdict for the version
    ("POST", "/api/memory/facts/{fact_id}/correct"),  # no longer active
    ("POST", "/api/memory/facts/{fact_id}/retract"),
    ("PUT", "/api/settings"),  # the settings changed since base_revision
    ("POST", "/api/settings/history/{revision}/revert"),  # changed meanwhile by another change
}
SYSTEM_GRAPHS: frozenset[Operation] = frozenset(
    {
        ("POST", "/api/graphs/import"),
        ("POST", "/api/graphs/{ref}/preview"),  # an update of a system graph would be refused
        ("PUT", "/api/graphs/{ref}"),
        ("DELETE", "/api/graphs/{ref}"),
        ("POST", "/api/graphs/{ref}/merge"),
        ("POST", "/PromptGraphDefUpdateRoute"),
        ("POST", "/PromptGraphDefDeleteRoute"),
        ("PUT", "/api/drafts/{slug}"),  # system graphs have no drafts
        ("POST", "/api/graphs/{ref}/promote"),  # the version Plait ships is the one that runs
    }
)
SETTINGS_FIXED: frozenset[Operation] = frozenset(
    {("PUT", "/api/settings"), ("POST", "/api/settings/history/{revision}/revert")}
)
"""403: `[settings] enabled = false`, or a section `[settings] fixed` names."""


def error_statuses(method: str, path: str, operation: dict[str, Any], *, auth: bool) -> set[int]:
    """The error statuses one operation of the generated document can answer (see the module doc)."""
    key = (method.upper(), path)
    parameters = operation.get("parameters", [])
    has_body = "requestBody" in operation
    statuses: set[int] = set()
    if auth and operation.get("security"):
        statuses.add(401)
    if any(p.get("in") == "path" for p in parameters) or key in NAMED_ELSEWHERE:
        statuses.add(404)
    if has_body:
        statuses.add(413)
    if has_body or parameters:
        statuses.add(422)
    if key not in NO_DATABASE or 401 in statuses:  # checking a token reads the database
        statuses.add(503)
    if key in CONFLICTS:
        statuses.add(409)
    if key in SYSTEM_GRAPHS or key in SETTINGS_FIXED:
        statuses.add(403)
    return statuses


def describe(app: FastAPI, *, auth: bool) -> None:
    """Make `app.openapi()` list per operation only its own error statuses; without `auth` the
    server asks for no token, so its operations declare no security scheme at all."""
    generate = app.openapi
    trimmed: list[dict[str, Any]] = []

    def openapi() -> dict[str, Any]:
        document = generate()
        if not trimmed or trimmed[0] is not document:  # FastAPI regenerates it when routes change
            _trim(document, auth=auth)
            trimmed[:] = [document]
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _trim(document: dict[str, Any], *, auth: bool) -> None:
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            own = {str(status) for status in error_statuses(method, path, operation, auth=auth)}
            responses = operation.get("responses", {})
            for status in ERROR_STATUSES - own:
                responses.pop(status, None)
            if not auth:
                operation.pop("security", None)
    if not auth:
        document.get("components", {}).pop("securitySchemes", None)
    add_links(document)
