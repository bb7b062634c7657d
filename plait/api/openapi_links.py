"""The links of /openapi.json: which value of one operation's response feeds which next operation.

OpenAPI 3 `links` say, for a response, which operations its values can be passed to and where
(`$response.body#/slug` into the path parameter `ref`, into a body field...). Generated clients
use them to chain calls, and the stateful fuzzer (tests/api/test_openapi_stateful.py) follows
them so that it reaches stored graphs, runs and the rest instead of 404s for random ids. They
are one table, `LINKS`, that `add_links` writes into the document `openapi.describe` serves.
"""

from __future__ import annotations

from typing import Any

Operation = tuple[str, str]
"""(method, path template), as in the document: ("POST", "/api/runs")."""


def _op(text: str) -> Operation:
    method, path = text.split(" ", 1)
    return method, path


Link = dict[str, Any]
"""An OpenAPI link object without its target: `parameters` and/or `requestBody` runtime expressions."""


def _path(**values: str) -> Link:
    return {"parameters": {f"path.{name}": value for name, value in values.items()}}


def _each(targets: str, link: Link) -> dict[Operation, Link]:
    """One link to each of several operations (one per line of `targets`)."""
    return {_op(line.strip()): link for line in targets.strip().splitlines()}


GRAPH_OPERATIONS = """
    GET /api/graphs/{ref}
    DELETE /api/graphs/{ref}
    GET /api/graphs/{ref}/versions
    GET /api/graphs/{ref}/export
    POST /api/graphs/{ref}/fork
    POST /api/graphs/{ref}/dry-run
    GET /api/graphs/{ref}/eval-sets
    POST /api/graphs/{ref}/eval-sets
    GET /api/graphs/{ref}/evaluations
    POST /api/graphs/{ref}/promote
    GET /api/graphs/{ref}/diff
    POST /api/graphs/{ref}/merge
"""
RUN_OPERATIONS = """
    GET /api/runs/{run_id}
    GET /api/runs/{run_id}/check
    GET /api/runs/{run_id}/ledger
    POST /api/runs/{run_id}/pause
    POST /api/runs/{run_id}/resume
    POST /api/runs/{run_id}/cancel
    POST /api/runs/{run_id}/rollback
    DELETE /api/runs/{run_id}
"""
SCHEDULE_OPERATIONS = """
    GET /api/schedules/{schedule_id}
    POST /api/schedules/{schedule_id}/pause
    POST /api/schedules/{schedule_id}/resume
    DELETE /api/schedules/{schedule_id}
"""
TEMPLATE_OPERATIONS = """
    GET /api/templates/{template_id}
    PUT /api/templates/{template_id}
    DELETE /api/templates/{template_id}
"""
SKILL_OPERATIONS = """
    GET /api/skills/{name}
    PUT /api/skills/{name}
    DELETE /api/skills/{name}
    GET /api/skills/{name}/export
"""
BASE_OPERATIONS = """
    GET /api/kb/{kb}
    DELETE /api/kb/{kb}
    GET /api/kb/{kb}/documents
    POST /api/kb/{kb}/documents
    POST /api/kb/{kb}/search
"""
SESSION_OPERATIONS = """
    GET /api/chat/sessions/{session_id}
    DELETE /api/chat/sessions/{session_id}
    GET /api/chat/sessions/{session_id}/messages
    POST /api/chat/sessions/{session_id}/messages
    POST /api/chat/sessions/{session_id}/answers
    POST /api/chat/sessions/{session_id}/runs
    POST /api/chat/sessions/{session_id}/uploads
"""
DRAFT_OPERATIONS = """
    GET /api/drafts/{slug}
    DELETE /api/drafts/{slug}
"""
FACT_OPERATIONS = """
    GET /api/memory/facts/{fact_id}
    POST /api/memory/facts/{fact_id}/correct
    POST /api/memory/facts/{fact_id}/retract
"""


def _graph(slug: str) -> dict[Operation, Link]:
    """What a stored graph's slug opens: its own operations, runs, schedules and chats about it."""
    return {
        **_each(GRAPH_OPERATIONS, _path(ref=slug)),
        _op("POST /api/runs"): {"requestBody": {"graph": slug}},
        _op("POST /api/schedules"): {"requestBody": {"graph": slug}},
        _op("POST /api/chat/sessions"): {"requestBody": {"graph": slug}},
    }


def _run(run_id: str) -> dict[Operation, Link]:
    return {
        **_each(RUN_OPERATIONS, _path(run_id=run_id)),
        _op("GET /api/runs/{run_a}/diff/{run_b}"): _path(run_a=run_id, run_b=run_id),
    }


def _legacy_graph(def_id: str) -> dict[Operation, Link]:
    return {
        _op("GET /PromptGraphDefGetRoute"): {"parameters": {"query.id": def_id}},
        _op("POST /PromptGraphRunStartRoute"): {"requestBody": {"prompt_graph_def_id": def_id}},
        _op("POST /PromptGraphDefForkRoute"): {"requestBody": {"id": def_id}},
        _op("POST /PromptGraphDefUpdateRoute"): {"requestBody": {"id": def_id}},
        _op("POST /PromptGraphDefDeleteRoute"): {"requestBody": {"id": def_id}},
    }


BODY = "$response.body#"
NODE = f"{BODY}/nodes/0"
LINKS: dict[tuple[str, str, str], dict[Operation, Link]] = {
    # graphs: what creates, changes or lists one gives its slug to everything that names it
    ("POST", "/api/graphs", "201"): _graph(f"{BODY}/slug"),
    ("POST", "/api/graphs/import", "200"): _graph(f"{BODY}/slug"),
    ("PUT", "/api/graphs/{ref}", "200"): _graph(f"{BODY}/slug"),
    ("POST", "/api/graphs/{ref}/fork", "201"): _graph(f"{BODY}/slug"),
    ("POST", "/api/graphs/{ref}/merge", "200"): _graph(f"{BODY}/slug"),
    ("GET", "/api/graphs", "200"): _graph(f"{BODY}/items/0/slug"),
    ("GET", "/api/graphs/{ref}", "200"): {
        **_graph(f"{BODY}/slug"),
        # the stored graph itself is a valid body: saving it again, previewing it, keeping a draft
        _op("PUT /api/graphs/{ref}"): {**_path(ref=f"{BODY}/slug"), "requestBody": {"graph": f"{BODY}/graph"}},
        _op("POST /api/graphs/{ref}/preview"): {**_path(ref=f"{BODY}/slug"), "requestBody": {"graph": f"{BODY}/graph"}},
        _op("PUT /api/drafts/{slug}"): {**_path(slug=f"{BODY}/slug"), "requestBody": {"graph": f"{BODY}/graph"}},
        _op("POST /api/graphs/validate"): {"requestBody": {"graph": f"{BODY}/graph"}},
    },
    ("GET", "/api/graphs/{ref}/versions", "200"): {
        _op("POST /api/graphs/{ref}/promote"): {
            **_path(ref="$request.path.ref"),
            "requestBody": {"version": f"{BODY}/0/version"},
        },
        _op("GET /api/graphs/{ref}"): {
            "parameters": {"path.ref": "$request.path.ref", "query.version": f"{BODY}/0/version"}
        },
    },
    ("POST", "/api/graphs/{ref}/eval-sets", "201"): {
        _op("GET /api/graphs/{ref}/eval-sets/{name}"): _path(ref="$request.path.ref", name=f"{BODY}/name"),
        _op("POST /api/graphs/{ref}/evaluations"): {
            **_path(ref="$request.path.ref"),
            "requestBody": {"set": f"{BODY}/name"},
        },
    },
    ("GET", "/api/graphs/{ref}/eval-sets", "200"): {
        _op("GET /api/graphs/{ref}/eval-sets/{name}"): _path(ref="$request.path.ref", name=f"{BODY}/0/name"),
        _op("POST /api/graphs/{ref}/evaluations"): {
            **_path(ref="$request.path.ref"),
            "requestBody": {"set": f"{BODY}/0/name"},
        },
    },
    ("POST", "/api/graphs/{ref}/evaluations", "202"): {
        _op("GET /api/evaluations/{evaluation_id}"): _path(evaluation_id=f"{BODY}/id"),
    },
    ("GET", "/api/graphs/{ref}/evaluations", "200"): {
        _op("GET /api/evaluations/{evaluation_id}"): _path(evaluation_id=f"{BODY}/0/id"),
    },
    # runs: a started or listed run's id opens its operations; its detail names its node runs
    ("POST", "/api/runs", "202"): _run(f"{BODY}/run_id"),
    ("GET", "/api/runs", "200"): _run(f"{BODY}/items/0/id"),
    ("POST", "/api/runs/{run_id}/pause", "200"): _run(f"{BODY}/id"),
    ("POST", "/api/runs/{run_id}/resume", "202"): _run(f"{BODY}/id"),
    ("POST", "/api/runs/{run_id}/cancel", "200"): _run(f"{BODY}/id"),
    ("POST", "/api/chat/sessions/{session_id}/runs", "202"): _run(f"{BODY}/run_id"),
    ("GET", "/api/runs/{run_id}", "200"): {
        **_each(
            """
            POST /api/runs/{run_id}/nodes/{node_id}/override
            POST /api/runs/{run_id}/nodes/{node_id}/rerun
            """,
            _path(run_id=f"{BODY}/id", node_id=f"{NODE}/node_id"),
        ),
        # the second node: the review of the paused test graph, or what follows the first
        _op("POST /api/runs/{run_id}/nodes/{node_id}/review"): _path(
            run_id=f"{BODY}/id", node_id=f"{BODY}/nodes/1/node_id"
        ),
        _op("POST /api/runs/{run_id}/rollback"): {
            **_path(run_id=f"{BODY}/id"),
            "requestBody": {"target": f"{NODE}/node_id"},
        },
        _op("GET /api/node-runs/{node_run_id}"): _path(node_run_id=f"{NODE}/id"),
        _op("POST /api/node-runs/{node_run_id}/replay"): _path(node_run_id=f"{NODE}/id"),
        _op("GET /api/runs/{run_a}/diff/{run_b}"): _path(run_a=f"{BODY}/id", run_b=f"{BODY}/id"),
        _op("GET /api/graphs/{ref}"): _path(ref=f"{BODY}/graph_id"),
    },
    # schedules, templates, skills, knowledge bases, chats, drafts, facts: created or listed -> named
    ("POST", "/api/schedules", "201"): _each(SCHEDULE_OPERATIONS, _path(schedule_id=f"{BODY}/id")),
    ("GET", "/api/schedules", "200"): _each(SCHEDULE_OPERATIONS, _path(schedule_id=f"{BODY}/0/id")),
    ("POST", "/api/schedules/{schedule_id}/pause", "200"): _each(SCHEDULE_OPERATIONS, _path(schedule_id=f"{BODY}/id")),
    ("POST", "/api/templates", "201"): _each(TEMPLATE_OPERATIONS, _path(template_id=f"{BODY}/id")),
    ("GET", "/api/templates", "200"): {
        **_each(TEMPLATE_OPERATIONS, _path(template_id=f"{BODY}/0/id")),
        _op("POST /api/templates/preview"): {"requestBody": {"template_id": f"{BODY}/0/id"}},
        _op("POST /api/templates"): {"requestBody": {"from": f"{BODY}/0/id"}},
    },
    ("POST", "/api/skills", "201"): {
        **_each(SKILL_OPERATIONS, _path(name=f"{BODY}/name")),
        _op("GET /api/skills/{name}/versions/{version}"): _path(name=f"{BODY}/name", version=f"{BODY}/version"),
    },
    ("GET", "/api/skills", "200"): {
        **_each(SKILL_OPERATIONS, _path(name=f"{BODY}/0/name")),
        _op("GET /api/skills/{name}/versions/{version}"): _path(name=f"{BODY}/0/name", version=f"{BODY}/0/version"),
    },
    ("POST", "/api/kb", "201"): _each(BASE_OPERATIONS, _path(kb=f"{BODY}/name")),
    ("GET", "/api/kb", "200"): _each(BASE_OPERATIONS, _path(kb=f"{BODY}/0/name")),
    ("GET", "/api/kb/{kb}/documents", "200"): _each(
        """
        DELETE /api/kb/{kb}/documents/{document}
        GET /api/kb/{kb}/documents/{document}/chunks
        """,
        _path(kb="$request.path.kb", document=f"{BODY}/0/id"),
    ),
    ("POST", "/api/chat/sessions", "201"): _each(SESSION_OPERATIONS, _path(session_id=f"{BODY}/id")),
    ("GET", "/api/chat/sessions", "200"): _each(SESSION_OPERATIONS, _path(session_id=f"{BODY}/0/id")),
    ("GET", "/api/drafts", "200"): _each(DRAFT_OPERATIONS, _path(slug=f"{BODY}/0/slug")),
    ("PUT", "/api/drafts/{slug}", "200"): _each(DRAFT_OPERATIONS, _path(slug=f"{BODY}/slug")),
    ("GET", "/api/memory/facts", "200"): _each(FACT_OPERATIONS, _path(fact_id=f"{BODY}/0/id")),
    # settings: the revision read is the base of a change; a listed revision can be reverted to
    ("GET", "/api/settings", "200"): {_op("PUT /api/settings"): {"requestBody": {"base_revision": f"{BODY}/revision"}}},
    ("GET", "/api/settings/history", "200"): {
        _op("POST /api/settings/history/{revision}/revert"): _path(revision=f"{BODY}/0/revision"),
    },
    # the seed-compatible routes name graphs and runs in their query or body
    ("GET", "/PromptGraphDefListRoute", "200"): _legacy_graph(f"{BODY}/items/0/id"),
    ("POST", "/PromptGraphDefCreateRoute", "200"): _legacy_graph(f"{BODY}/id"),
    ("POST", "/PromptGraphRunStartRoute", "200"): {
        **_run(f"{BODY}/run_id"),
        _op("GET /PromptGraphRunGetRoute"): {"parameters": {"query.id": f"{BODY}/run_id"}},
    },
    ("GET", "/PromptGraphRunGetRoute", "200"): {
        _op(f"POST {route}"): {
            "requestBody": {
                "prompt_graph_run_id": f"{BODY}/run/id",
                "node_def_id": f"{BODY}/node_runs/0/node_def_id",
            }
        }
        for route in ("/PromptGraphNodeOverrideRoute", "/PromptGraphNodeRerunRoute")
    },
}
"""OpenAPI links: (method, path, status) of a response -> the operations its values feed, so a
client generator, or a stateful fuzzer, chains what one operation makes into the next."""


def add_links(document: dict[str, Any]) -> list[str]:
    """Write `LINKS` into the document's responses; return the links it could not place (a source
    response or a target operation the document does not have), which a test keeps empty."""
    paths = document.get("paths", {})
    ids = {(m.upper(), p): o.get("operationId") for p, ops in paths.items() for m, o in ops.items()}
    missing: list[str] = []
    for (method, path, status), targets in LINKS.items():
        response = paths.get(path, {}).get(method.lower(), {}).get("responses", {}).get(status)
        if response is None:
            missing.append(f"{method} {path} {status}")
            continue
        links = response.setdefault("links", {})
        for target, link in targets.items():
            operation_id = ids.get(target)
            if operation_id is None:
                missing.append(f"{method} {path} {status} -> {' '.join(target)}")
                continue
            links[operation_id] = {"operationId": operation_id, **link}
    return missing
