"""POST /api/templates/generate over a real server: the script's console, its prompt, the answer
streamed in deltas, then `done` or `failed` naming its layer (a broken stream keeps its partial
text); 2 generations at once (a third is refused with 503 while the server answers); closing
the stream or a newer generation of the session stops the model call. And readRoute's
allow-list, answered in-process by the server itself, with and without tokens."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import Api, sse_post, wait_for

from plait.store import Store
from plait.testing import served_app
from tests.llm.fault_server import fault_server

SCRIPT = """
responses:
  - {match: "BREAK", text: "the answer that breaks off here", stream_break_after: 14}
  - {match: "SLOW", text: "one two three four five six seven eight nine ten", delay_ms: 6000}
  - {match: "JSON", output: {title: "Birds"}}
  - {match: "FAIL", error: 500}
  - {text: "Birds fly south in winter."}
"""
ASK = 'async function main() { const t = await getVar("input.topic"); console.info("topic", t); return `ask ${t}`; }'


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """SQLite only: what is tested here is the sandbox and the stream, the same on every store."""
    return f"sqlite:///{tmp_path / 'plait.db'}"


@pytest.fixture
def gen(store: Store, tmp_path: Path) -> Iterator[Api]:
    script = tmp_path / "generate.yaml"
    script.write_text(SCRIPT)
    with served_app(store=store, llm=f"scripted:{script}") as served, served.client() as client:
        yield Api(client=client, url=served.url, store=store, script=script)


def generate(client: httpx.Client, body: dict[str, Any]) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    return sse_post(client, "/api/templates/generate", body)


def test_a_generation_streams_the_console_the_prompt_the_deltas_then_done(gen: Api) -> None:
    status, events = generate(gen.client, {"script_code": ASK, "input": {"topic": "birds"}})
    assert status == 200
    kinds = [kind for kind, _ in events]
    assert kinds[:2] == ["log", "prompt"]
    assert events[1][1]["prompt"] == "ask birds"
    deltas = [data["text"] for kind, data in events if kind == "delta"]
    assert len(deltas) == 5  # word by word
    assert kinds[-1] == "done"
    done = events[-1][1]
    assert done["content"] == "".join(deltas) == "Birds fly south in winter."
    assert done["partial"] is False
    assert done["provider"] == "scripted"


def test_the_answer_is_parsed_with_the_schema_target(gen: Api) -> None:
    _, events = generate(gen.client, {"script_code": ASK, "input": {"topic": "JSON"}, "schema_target": "x"})
    assert events[-1][0] == "done"
    assert events[-1][1]["value"] == {"title": "Birds"}
    _status, events = generate(gen.client, {"script_code": ASK, "input": {"topic": "birds"}, "schema_target": "x"})
    assert events[-1][0] == "failed"
    assert events[-1][1]["error"]["layer"] == "parse"
    assert events[-1][1]["content"] == "Birds fly south in winter."  # the text is kept


@pytest.mark.parametrize(
    ("code", "topic", "layer", "kind"),
    [
        ("async function main() { throw new Error('no') }", "x", "script", "thrown"),
        ("async function main() { return 42 }", "x", "preview", "not_string"),
        (ASK, "FAIL", "http", "http_500"),
        (ASK, "BREAK", "stream", "stream"),
    ],
)
def test_each_failing_step_is_reported_in_its_own_layer(gen: Api, code: str, topic: str, layer: str, kind: str) -> None:
    status, events = generate(gen.client, {"script_code": code, "input": {"topic": topic}})
    assert status == 200
    final, data = events[-1]
    assert final == "failed"
    assert (data["error"]["layer"], data["error"]["kind"]) == (layer, kind)
    if layer == "stream":
        assert data["partial"] is True
        assert data["content"] == "the answer tha"  # what arrived before the break
    if layer in ("script", "preview"):
        assert "prompt" not in [k for k, _ in events]  # no model was asked


@pytest.fixture
def pooled(store: Store, tmp_path: Path) -> Iterator[tuple[Api, Any]]:
    """A server whose pool sends `chat` to a real OpenAI-compatible server on loopback that
    answers slowly, and whose `writer` role no provider here can serve (its key is not set)."""
    with fault_server() as (model_url, calls):
        config = tmp_path / "plait.toml"
        config.write_text(
            f'[[providers]]\nid = "srv"\nkind = "openai"\nbase_url = "{model_url}"\ntimeout_s = 10\n'
            '[[providers]]\nid = "paid"\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            'api_key_env = "PLAIT_TEST_KEY_NOT_SET"\n'
            '[roles]\nchat = "srv/dribble"\nwriter = "paid/gpt"\n'
        )
        with served_app(store=store, config=str(config)) as served, served.client() as client:
            yield Api(client=client, url=served.url, store=store, script=config), calls


def test_a_role_no_provider_serves_is_an_llm_request_error_and_the_picker_says_so(
    pooled: tuple[Api, Any],
) -> None:
    api, _ = pooled
    _status, events = generate(api.client, {"script_code": ASK, "input": {"topic": "x"}, "role": "writer"})
    assert events[-1][0] == "failed"
    error = events[-1][1]["error"]
    assert (error["layer"], error["kind"]) == ("llm_request", "config")
    assert "writer" in error["message"]
    roles = {r["role"]: r for r in api.client.get("/api/providers").json()["roles"]}
    assert roles["chat"] == {"role": "chat", "default": True, "serves": "srv/dribble", "refusal": None}
    assert roles["writer"]["serves"] is None
    assert "PLAIT_TEST_KEY_NOT_SET" in roles["writer"]["refusal"]


def test_closing_the_stream_stops_the_model_call(pooled: tuple[Api, Any]) -> None:
    api, calls = pooled
    with api.client.stream(
        "POST", "/api/templates/generate", json={"script_code": ASK, "input": {"topic": "x"}}
    ) as response:
        for line in response.iter_lines():
            if line.startswith("event: delta"):
                break  # one piece arrived: leave
    wait_for(lambda: calls["dribble|closed"], timeout=5, what="the model server to see its client go")
    assert calls["dribble|finished"] == 0
    _status, events = generate(api.client, {"script_code": ASK, "input": {"topic": "x"}})  # the place is free
    assert events[-1][0] == "done"
    assert events[-1][1]["content"].split() == [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
    ]


def test_generations_beyond_two_are_refused_and_the_server_keeps_answering(gen: Api) -> None:
    results: list[str] = []
    streaming = threading.Semaphore(0)

    def slow() -> None:
        body = {"script_code": ASK, "input": {"topic": "SLOW"}, "max_tokens": 5}
        with (
            httpx.Client(base_url=gen.url, timeout=30) as client,
            client.stream("POST", "/api/templates/generate", json=body) as response,
        ):
            event, said = "", False
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                    if event == "delta" and not said:  # its answer is arriving: it holds its place
                        streaming.release()
                        said = True
            results.append(event if response.status_code == 200 else str(response.status_code))

    threads = [threading.Thread(target=slow) for _ in range(2)]
    for thread in threads:
        thread.start()
    for _ in threads:  # both stream (each for 6 s)
        assert streaming.acquire(timeout=20)
    status, refused = generate(gen.client, {"script_code": ASK, "input": {"topic": "x"}})
    health = gen.client.get("/api/health")
    for thread in threads:
        thread.join()
    assert status == 503
    assert refused[0][1]["error"]["code"] == "sandbox_busy"
    assert health.status_code == 200
    assert results == ["done", "done"]


def test_a_newer_generation_of_the_session_cancels_the_older_and_its_model_call(gen: Api) -> None:
    older: list[tuple[str, str]] = []
    streaming = threading.Event()

    def first() -> None:
        body = {"script_code": ASK, "input": {"topic": "SLOW"}, "session": "ed"}
        with (
            httpx.Client(base_url=gen.url, timeout=30) as client,
            client.stream("POST", "/api/templates/generate", json=body) as response,
        ):
            event = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    older.append((event, line.removeprefix("data: ")))
                    if event == "delta":
                        streaming.set()

    thread = threading.Thread(target=first)
    thread.start()
    assert streaming.wait(10), older
    started = time.monotonic()
    _, newer = generate(gen.client, {"script_code": ASK, "input": {"topic": "x"}, "session": "ed"})
    thread.join()
    assert newer[-1][0] == "done"
    final, text = older[-1]
    data = json.loads(text)
    assert final == "failed"
    assert data["error"]["layer"] == "cancelled"
    assert data["partial"] is True  # what had arrived is kept
    assert data["content"].startswith("one")
    assert "ten" not in data["content"]  # the rest never came: the call was stopped
    assert time.monotonic() - started < 4  # long before the slow answer's 6 s
