"""Schemathesis over /openapi.json of a real `plait serve`.

A server on loopback with `--require-auth` and a token, holding a few graphs (one forked, one
with two versions) and runs (one completed, one paused at a HUMAN_REVIEW), is fuzzed operation
by operation: schema examples, the coverage phase (boundary values, invalid values, unexpected
methods) and a bounded number of generated cases. Every response must have a documented status,
a body matching its documented schema and the documented content type, and never be a 5xx;
invalid requests must be refused with a 4xx and valid ones not; requests without a valid
token must get 401. Path parameters are the stored ids half of the time, so that the fuzzer
reaches the routes' logic, not only their 404s.

Schemathesis runs through its CLI (`st run`) rather than its pytest plugin: the plugin's
fixture-based loader (the only one that can reach a server started by a fixture) relies on a
pytest internal that pytest 9.2 removed (`Function._nodeid`). The plugin is disabled in
pyproject.toml for the same reason (and its ~1 s import on every pytest start).

`PLAIT_FUZZ_EXAMPLES` bounds the generated cases per operation (default 12 on SQLite, 4 on
PostgreSQL, where the fuzzer checks what only that database refuses, such as NUL characters in
text) and `PLAIT_FUZZ_SEED` replaces the fixed seed, to explore further than CI does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import schemathesis
from api_helpers import ECHO, REVIEWED, wait_for

from plait.store import Store
from plait.testing import served_app

EXAMPLES = os.environ.get("PLAIT_FUZZ_EXAMPLES")
SEED = int(os.environ.get("PLAIT_FUZZ_SEED", "20261130"))
EVENTS = "/api/runs/{run_id}/events"
CHAT_EVENTS = "/api/chat/sessions/{session_id}/events"
EVALUATION_EVENTS = "/api/evaluations/{evaluation_id}/events"
KB_UPLOAD = "/api/kb/{kb}/documents"
"""A conversation's stream stays open while the client listens: checked case by case too."""


@dataclass
class Seeded:
    """The fuzzed server: where it is, its token, and the ids of what it holds."""

    url: str
    token: str
    runs: dict[str, str]
    node_runs: list[str]
    examples: int
    """Generated cases per operation: fewer on PostgreSQL, whose server is slower to answer."""

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def seeded(store: Store, script: Path, db_url: str) -> Iterator[Seeded]:
    _, token = store.tokens.create("fuzz")
    serving = served_app(store=store, llm=f"scripted:{script}", require_auth=True)
    with serving as served, served.client(headers={"Authorization": f"Bearer {token}"}) as client:
        for text in (ECHO, REVIEWED):
            assert client.post("/api/graphs", json={"source": text}).status_code == 201
        assert client.put("/api/graphs/echo", json={"source": ECHO.replace("Polish.", "Polish it.")}).status_code == 200
        assert client.post("/api/graphs/echo/fork", json={"name": "echo_fork"}).status_code == 201

        def started(graph: str, status: str) -> str:
            run_id = str(client.post("/api/runs", json={"graph": graph, "input": {"text": "hi"}}).json()["run_id"])
            wait_for(lambda: client.get(f"/api/runs/{run_id}").json()["status"] == status, what=f"{graph} {status}")
            return run_id

        runs = {"completed": started("echo", "completed"), "paused": started("reviewed", "paused")}
        node_runs = [n["id"] for r in runs.values() for n in client.get(f"/api/runs/{r}").json()["nodes"]]
        examples = int(EXAMPLES or (12 if db_url.startswith("sqlite") else 4))
        yield Seeded(served.url, token, runs, node_runs, examples)


def fuzz_config(seeded: Seeded, *, stateful: str = "enabled = false") -> str:
    """schemathesis.toml: bounds, the token, and the stored ids as likely parameter values;
    `stateful` is the body of `[phases.stateful]` (test_openapi_stateful.py follows the links)."""
    q = json.dumps  # a JSON string or list of strings is valid TOML
    lines = [
        f"seed = {SEED}",
        'suppress-health-check = ["too_slow", "filter_too_much", "data_too_large"]',
        "request-timeout = 20",
        f"hooks = {q(str(Path(__file__).with_name('fuzz_checks.py')))}",
        "[checks.positive_data_acceptance]",  # 422 for stored-data verdicts: see fuzz_checks.py
        'expected-statuses = ["2xx", "401", "403", "404", "409", "422"]',
        "[generation]",
        f"max-examples = {seeded.examples}",
        'database = "none"',
        "[phases.stateful]",
        stateful,  # the links between operations are followed by test_openapi_stateful.py
        "[auth.openapi.HTTPBearer]",
        f"bearer = {q(seeded.token)}",
        "[dictionaries]",
        f"runs = {{ values = {q(list(seeded.runs.values()))} }}",
        f"graphs = {{ values = {q(['echo', 'reviewed', 'echo_fork'])} }}",
        f"nodes = {{ values = {q(['draft', 'check', 'polish'])} }}",
        f"node_runs = {{ values = {q(seeded.node_runs)} }}",
        f"ids = {{ values = {q(['echo', 'reviewed', *seeded.runs.values()])} }}",
        "[parameters]",
        *(f'"path.{name}" = {{ dictionary = "runs", probability = 0.5 }}' for name in ("run_id", "run_a", "run_b")),
        '"path.ref" = { dictionary = "graphs", probability = 0.5 }',
        '"path.node_id" = { dictionary = "nodes", probability = 0.5 }',
        '"path.node_run_id" = { dictionary = "node_runs", probability = 0.5 }',
        '"query.graph" = { dictionary = "graphs", probability = 0.5 }',
        '"body.graph" = { dictionary = "graphs", probability = 0.3 }',
        # the seed 000 §9 routes name things their own way
        '"query.id" = { dictionary = "ids", probability = 0.5 }',
        '"body.id" = { dictionary = "ids", probability = 0.5 }',
        '"body.prompt_graph_def_id" = { dictionary = "graphs", probability = 0.5 }',
        '"body.prompt_graph_run_id" = { dictionary = "runs", probability = 0.5 }',
        '"body.node_def_id" = { dictionary = "nodes", probability = 0.5 }',
        # A multipart body cannot carry what a negative case makes of its schema (a null file, an
        # array for a text field): each arrives as some text part, which the route reads as one.
        # Every other check still applies to it, and its refusals are in test_api_knowledge.py.
        "[[operations]]",
        f"include-path = {q(KB_UPLOAD)}",
        'include-method = "POST"',
        "checks.negative_data_rejection.enabled = false",
    ]
    return "\n".join(lines) + "\n"


def test_every_operation_answers_as_documented(seeded: Seeded, tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(fuzz_config(seeded))
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color",
        "run", f"{seeded.url}/openapi.json", "--workers", "1",
        # The SSE stream stays open (a ping every 15 s) until the run ends, which a paused run
        # never does: every generated request would hang until its timeout. It is checked
        # case by case below (`test_the_event_stream_answers_as_documented`), and its
        # behaviour in tests/api/test_api_events.py (an evaluation's in
        # tests/api/test_api_evaluation_runs.py).
        "--exclude-path", EVENTS, "--exclude-path", CHAT_EVENTS, "--exclude-path", EVALUATION_EVENTS,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"schemathesis found problems:\n{done.stdout[-20000:]}\n{done.stderr[-3000:]}"
    assert "No issues found" in done.stdout or " passed" in done.stdout, done.stdout[-3000:]


def test_the_event_stream_answers_as_documented(seeded: Seeded) -> None:
    operation = schemathesis.openapi.from_url(f"{seeded.url}/openapi.json")[EVENTS]["GET"]

    def call(run_id: str, last_id: str | None, status: int) -> str:
        headers = {"Last-Event-ID": last_id} if last_id is not None else {}
        case = operation.Case(path_parameters={"run_id": run_id}, headers=headers)
        response = case.call_and_validate(headers=seeded.auth)
        assert response.status_code == status, response.text
        return str(response.text)

    completed = seeded.runs["completed"]
    backlog = call(completed, None, 200)  # the whole backlog of an ended run, then the stream closes
    last = [line.removeprefix("id: ") for line in backlog.splitlines() if line.startswith("id: ")][-1]
    call(completed, last, 204)  # ended, nothing newer: tells EventSource to stop reconnecting
    call("nope", None, 404)
    call(completed, "abc", 422)


def test_the_chat_stream_refuses_as_documented(seeded: Seeded) -> None:
    operation = schemathesis.openapi.from_url(f"{seeded.url}/openapi.json")[CHAT_EVENTS]["GET"]
    with httpx.Client(base_url=seeded.url, headers=seeded.auth) as client:
        session = client.post("/api/chat/sessions", json={}).json()["id"]

    def refused(session_id: str, last_id: str | None, status: int) -> None:
        headers = {"Last-Event-ID": last_id} if last_id is not None else {}
        case = operation.Case(path_parameters={"session_id": session_id}, headers=headers)
        response = case.call_and_validate(headers=seeded.auth)
        assert response.status_code == status, response.text

    refused("nope", None, 404)
    refused(session, "null", 422)
