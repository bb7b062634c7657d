"""/api/templates: CRUD with read-only system templates, and the live preview over SSE (console
events, then the prompt or the layered error), bounded to 3 previews at once (503
`sandbox_busy`), one per editor session, while the server keeps answering. A real server."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
from api_helpers import Api, sse_messages, sse_post

SLOW = "async function main() { for (;;) { await 0 } }"


def preview(client: httpx.Client, body: dict[str, Any]) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    return sse_post(client, "/api/templates/preview", body)


def test_templates_are_created_read_updated_and_deleted_and_system_ones_copied(api: Api) -> None:
    client = api.client
    system = {t["id"]: t for t in client.get("/api/templates").json()}
    assert system["plait.summary"]["source_type"] == "system"
    assert system["plait.summary"]["script_code"] is None  # lists leave the code out
    refused = client.put("/api/templates/plait.summary", json={"name": "mine"})
    assert refused.status_code == 409
    assert "read-only" in refused.json()["error"]["message"]
    made = client.post("/api/templates", json={"id": "mine", "from": "plait.summary", "category": "mine"})
    assert made.status_code == 201, made.text
    assert made.json()["based_on_template_id"] == "plait.summary"
    assert "async function main()" in made.json()["script_code"]
    bad = client.put("/api/templates/mine", json={"script_code": "async function main( {"})
    assert bad.status_code == 422
    assert "does not parse" in bad.json()["error"]["message"]
    changed = client.put("/api/templates/mine", json={"script_code": 'async function main() { return "v2" }'})
    assert changed.json()["script_code"] == 'async function main() { return "v2" }'
    assert client.post("/api/templates", json={"id": "mine", "script_code": SLOW}).status_code == 409
    assert client.delete("/api/templates/mine").json()["deleted_at"] is not None
    assert client.get("/api/templates/mine").status_code == 404


def test_a_preview_streams_the_console_then_the_prompt_and_remembers_the_template(api: Api) -> None:
    status, events = preview(api.client, {"template_id": "plait.summary", "input": {"text": "Birds fly south."}})
    assert status == 200
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "log"
    assert events[0][1]["args"] == ["summarising", 3, "words"]
    assert kinds[-1] == "result"
    assert events[-1][1]["args"][0].startswith("Summarise the text below in two sentences.")
    used = api.client.get("/api/templates/last-used", params={"category": "summary"}).json()
    assert used["template_id"] == "plait.summary"


def test_a_failing_preview_ends_with_its_layered_error(api: Api) -> None:
    code = 'async function main() {\n  console.warn("careful");\n  return missing();\n}'
    status, events = preview(api.client, {"script_code": code})
    assert status == 200
    assert [kind for kind, _ in events] == ["warning", "error"]
    assert events[-1][1]["args"][0] == "ReferenceError: missing is not defined (line 3, column 10)"
    error = events[-1][1]["error"]  # where in the script, for the editor to mark
    assert (error["kind"], error["line"], error["column"]) == ("thrown", 3, 10)


def running_preview(
    url: str, body: dict[str, Any], holding: threading.Semaphore, ended: list[tuple[int, list[Any]]]
) -> threading.Thread:
    """A preview on a thread of its own: `holding` is released once the server has given it a
    place (its stream has begun), and what it answered is appended to `ended`."""

    def go() -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            with client.stream("POST", "/api/templates/preview", json=body) as response:
                holding.release()
                events = [(m.get("event", ""), json.loads(m["data"])) for m in sse_messages(response)]
            ended.append((response.status_code, events))

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def test_previews_beyond_three_are_refused_and_the_server_keeps_answering(api: Api) -> None:
    holding = threading.Semaphore(0)
    ended: list[tuple[int, list[Any]]] = []
    threads = [running_preview(api.url, {"script_code": SLOW}, holding, ended) for _ in range(3)]
    for _ in threads:
        assert holding.acquire(timeout=60), "a preview never began"
    status, refused = preview(api.client, {"script_code": SLOW})  # the three spin (each up to 5 s)
    health = api.client.get("/api/health")
    for thread in threads:
        thread.join()
    assert status == 503
    assert refused[0][1]["error"]["code"] == "sandbox_busy"
    assert health.status_code == 200  # answered while three scripts spun
    assert [code for code, _ in ended] == [200, 200, 200]


def test_a_newer_preview_of_the_same_session_cancels_the_older(api: Api) -> None:
    holding = threading.Semaphore(0)
    ended: list[tuple[int, list[Any]]] = []
    thread = running_preview(api.url, {"script_code": SLOW, "session": "editor-1"}, holding, ended)
    assert holding.acquire(timeout=60), "the older preview never began"
    status, newer = preview(
        api.client, {"script_code": 'async function main() { return "new" }', "session": "editor-1"}
    )
    thread.join()
    assert status == 200
    assert newer[-1] == ("result", newer[-1][1])
    older = ended[0][1]
    assert "cancelled" in older[-1][1]["args"][0]  # stopped by the newer one, not by its 5 s limit
