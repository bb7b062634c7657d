"""HTTP errors speak HTTP: over many requests that fail, no error body names a CLI command, a
`-i` or a `--flag`, and none shows where the database is."""

from __future__ import annotations

import re
from typing import Any

from api_helpers import Api

from plait.api.wording import for_http

CLI = re.compile(r"\bplait [a-z]+|(?<![\w-])--[a-z]|(?<!\w)-i ")


def requests(api: Api) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, path, JSON body) of requests that fail, one per kind of refusal."""
    done = api.start("echo")
    api.wait_status(done, "completed")
    paused = api.start("reviewed")
    api.wait_status(paused, "paused")
    node_run = api.newest(done)["draft"]["id"]
    system = next(g["id"] for g in api.client.get("/api/graphs?source_type=system").json()["items"])
    assert api.client.post("/api/graphs/echo/fork", json={"name": "echo_copy"}).status_code == 201
    node = f"/api/runs/{done}/nodes"
    return [
        ("POST", "/api/runs", {"graph": "nope", "input": {}}),
        ("POST", "/api/runs", {"graph": "echo", "input": {}}),  # breaks input_schema
        ("GET", "/api/runs/nope", None),
        ("GET", "/api/runs/abcd", None),
        ("GET", "/api/node-runs/nope", None),
        ("GET", "/api/runs/nope/ledger", None),
        ("GET", "/api/graphs/nope", None),
        ("GET", "/api/graphs/echo?version=99", None),
        ("POST", "/api/graphs", {"source": "plait: 1\nid: echo\nnodes: []\n"}),
        ("POST", "/api/graphs", {"graph": {"plait": 1, "id": "s", "nodes": [{"id": "s", "type": "SKILL"}]}}),
        ("DELETE", "/api/graphs/echo", None),  # has runs
        ("DELETE", f"/api/graphs/{system}", None),
        ("PUT", f"/api/graphs/{system}", {"source": "plait: 1\nid: x\nnodes: []\n"}),
        ("POST", "/api/graphs/echo/fork", {"name": "echo_copy"}),  # name taken
        ("GET", "/api/graphs/echo/diff", None),  # not a fork
        ("POST", "/api/graphs/echo_copy/merge", {"from_parent": ["nope"]}),
        ("POST", f"{node}/nope/override", {"value": {"text": "x"}}),
        ("POST", f"{node}/draft/override", {"value": {"text": 5}}),  # breaks the edge schema
        ("POST", f"/api/runs/{paused}/nodes/check/override", {"value": {"text": "x"}}),  # a review
        ("POST", f"/api/runs/{paused}/nodes/polish/rerun", {}),  # has not run
        ("POST", f"{node}/draft/review", {"approve": True}),  # not waiting
        ("POST", f"/api/runs/{done}/rollback", {"target": "draft", "to_version": 9}),
        ("POST", "/api/runs/nope/nodes/draft/rerun", {}),
        ("POST", f"/api/runs/{done}/pause", None),
        ("POST", f"/api/runs/{done}/resume", None),
        ("POST", f"/api/node-runs/{node_run}/replay", {"model": "no-such-role"}),
        ("POST", "/api/graphs/echo/dry-run", {"input": {}}),
        ("GET", "/PromptGraphDefGetRoute?id=nope", None),
        ("GET", "/PromptGraphRunGetRoute?id=nope", None),
        (
            "POST",
            "/PromptGraphNodeOverrideRoute",
            {"prompt_graph_run_id": "nope", "node_def_id": "x", "override_json": {}},
        ),
        ("POST", "/PromptGraphDefDeleteRoute", {"id": "echo"}),
        ("GET", "/no/such/route", None),
    ]


def test_no_error_body_speaks_cli_or_shows_the_database(api: Api) -> None:
    hidden = [api.store.url, api.store.display_url]
    if api.store.url.startswith("sqlite:///"):
        hidden.append(api.store.url.removeprefix("sqlite:///"))
    failed = 0
    for method, path, body in requests(api):
        response = api.client.request(method, path, json=body)
        if response.status_code < 400:
            continue
        failed += 1
        text = response.text
        assert not CLI.search(text), f"{method} {path}: {text}"
        assert not any(h in text for h in hidden), f"{method} {path} shows the database: {text}"
    assert failed >= 25  # the sweep reaches the refusals it is about


def test_cli_hints_are_said_with_routes_and_fields() -> None:
    assert for_http("`plait runs list` shows the run ids") == "GET /api/runs shows the run ids"
    assert for_http("pass the missing or corrected fields with -i key=value or --input-file") == (
        "send the missing or corrected fields in `input`"
    )
    assert (
        for_http("keeps them; pass --force to delete it anyway") == "keeps them; send `force=true` to delete it anyway"
    )
    assert for_http("finish it with `plait resume abc`, then correct it") == (
        "finish it with POST /api/runs/abc/resume, then correct it"
    )
    assert for_http("cannot open sqlite:///tmp/x.db", ["sqlite:///tmp/x.db"]) == "cannot open the database"
    assert not CLI.search(for_http("try `plait frobnicate X` or --frob 3"))
