"""Helpers of the API tests: a real `plait serve` (`plait.testing.served_app`: uvicorn on a free
port of 127.0.0.1, in a thread) on the `store` fixture's database (SQLite and PostgreSQL), models
answered by the scripted provider."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from plait.engine.event_wire import STREAMED
from plait.store import Store
from plait.testing import HttpRuns
from plait.testing import wait_for as wait_for

SCHEMAS = """
schemas:
  - id: text
    version: 1.0.0
    schema: {type: object, properties: {text: {type: string}}, required: [text]}
"""

ECHO = f"""
plait: 1
id: echo
input_schema: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
{SCHEMAS}
nodes:
  - {{id: draft, type: LLM_CALL, system_prompt: Draft., user_prompt_tpl: "Draft {{{{ input.text }}}}"}}
  - {{id: polish, type: LLM_CALL, system_prompt: Polish., user_prompt_tpl: "Polish {{{{ draft.text }}}}"}}
edges:
  - {{source: draft, target: polish, schema_id: text}}
  - {{source: polish, target: END, schema_id: text}}
"""

REVIEWED = f"""
plait: 1
id: reviewed
{SCHEMAS}
nodes:
  - {{id: draft, type: LLM_CALL, system_prompt: Draft., user_prompt_tpl: "Draft {{{{ input.text }}}}"}}
  - {{id: check, type: HUMAN_REVIEW, review_prompt: "Check the draft"}}
  - {{id: polish, type: LLM_CALL, system_prompt: Polish., user_prompt_tpl: "Polish {{{{ check.text }}}}"}}
edges:
  - {{source: draft, target: check, schema_id: text}}
  - {{source: check, target: polish, schema_id: text}}
  - {{source: polish, target: END, schema_id: text}}
"""

SLOW = f"""
plait: 1
id: slow
{SCHEMAS}
nodes:
  - {{id: first, type: LLM_CALL, system_prompt: First., user_prompt_tpl: "First {{{{ input.text }}}}"}}
  - {{id: crawl, type: LLM_CALL, system_prompt: Slow., user_prompt_tpl: "Slow {{{{ first.text }}}}"}}
edges:
  - {{source: first, target: crawl, schema_id: text}}
  - {{source: crawl, target: END, schema_id: text}}
"""

SCRIPT = """
responses:
  - {node: draft, output: {text: drafted}}
  - {node: polish, output: {text: polished}}
  - {node: first, output: {text: first}}
  - {node: crawl, output: {text: crawled}, delay_ms: 60000, times: 1}   # the first call hangs
  - {node: crawl, output: {text: crawled}}
"""


def sse_messages(response: httpx.Response) -> Iterator[dict[str, str]]:
    """The fields (`id`, `event`, `data`...) of each Server-Sent Event of a streamed response;
    comments (pings) are skipped."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if line:
            key, _, value = line.partition(":")
            fields[key] = value.removeprefix(" ")
            continue
        if "data" in fields:
            yield fields
        fields = {}


def sse_post(client: httpx.Client, path: str, body: dict[str, Any]) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """POST to a Server-Sent Events route: (status, [(event, data)]) until the stream ends; a
    refusal is (status, [("refused", its JSON body)])."""
    with client.stream("POST", path, json=body, timeout=30) as response:
        if response.status_code != 200:
            response.read()
            return response.status_code, [("refused", response.json())]
        return 200, [(m.get("event", ""), json.loads(m["data"])) for m in sse_messages(response)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Api(HttpRuns):
    """The `api` fixture: a served app with the test graphs stored, its client, its store and the
    scripted answers its models give."""

    url: str
    store: Store
    script: Path

    def start(self, graph: str, run_input: dict[str, Any] | None = None) -> str:
        return super().start(graph, run_input or {"text": "hi"})

    def newest(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {n["node_id"]: n for n in self.run(run_id)["nodes"] if n["current"]}


def import_graphs(client: httpx.Client, headers: dict[str, str] | None = None) -> None:
    for text in (ECHO, REVIEWED, SLOW):
        assert client.post("/api/graphs", json={"source": text}, headers=headers).status_code == 201


def read_events(
    client: httpx.Client,
    run_id: str,
    *,
    last_id: int | None = None,
    until: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """GET the run's SSE stream: (status, events) until the server ends it or `until(event)`.
    Each event is its JSON data, checked against the SSE `id` and `event` fields."""
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    events: list[dict[str, Any]] = []
    with client.stream("GET", f"/api/runs/{run_id}/events", headers=headers, timeout=30) as response:
        if response.status_code != 200:
            response.read()
            return response.status_code, events
        for fields in sse_messages(response):
            event = json.loads(fields["data"])
            if "id" in fields:
                assert (str(event["id"]), event["event"]) == (fields["id"], fields["event"])
            else:  # a streaming answer's piece: not numbered, so a reconnect is not asked to replay it
                assert event["event"] == fields["event"]
                assert event["event"] in STREAMED
            events.append(event)
            if until is not None and until(event):
                break
    return 200, events
