"""The tool loop against a real model, not scripted answers: llama.cpp's OpenAI-compatible server
(`python -m llama_cpp.server --chat_format chatml-function-calling`) serving the SmolLM2-135M GGUF,
reached through a `plait.toml` provider of kind `openai` and driven by the engine.

The scripted tests (test_tool_loop.py) prove the loop's logic; these prove that the requests it
builds are ones a real server turns into tool calls, that the calls it gets back parse, route and
feed the next node, and that the forced final answer comes back in the out-edge schema. What is
asserted is what grammar-constrained decoding guarantees (a named `tool_choice` makes the server
emit a call of that tool, with arguments matching its parameters; `response_format` makes the
final answer match its schema), never the tiny model's wording: the routed value is compared with
whatever argument the model gave.

A loopback proxy between Plait and the server keeps each request body as it went on the wire: the
node run records the offered tools and every round, but not the `tool_choice` sent, and "the first
request forced the tool" is the point. Skipped, with the reason, only where the `local` extra is
not installed.

These tests found that this server refuses an assistant tool-call message whose `content` is null
(HTTP 500) and breaks without the key: the loop sends `""` (plait/engine/tool_loop.py).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from plait.config import load_config
from plait.engine.runner import RunOutcome
from plait.llm.pool import ProviderPool
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import NodeRunRecord, Store, current_activations
from tests.engine.test_engine import graph_file
from tests.llm.llm_helpers import needs_local, serve_llama
from tests.runs.test_corrections import drive_with

pytestmark = needs_local

CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}}, "required": ["city"]}
DONE = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}
"""The final answer: trivially satisfiable, so the run completes whatever the tiny model thinks."""
SAVE_CITY = {
    "name": "save_city",
    "description": "Save the city the user names.",
    "handler": "CONTEXT_WRITE",
    "parameters": CITY,
    "output_edge_id": "e_city",
}
SAVE_CITY_SPEC = {
    "type": "function",
    "function": {"name": "save_city", "description": SAVE_CITY["description"], "parameters": CITY},
}
"""The Chat Completions `tools` entry Plait builds from the inline tool."""
FORCE_SAVE_CITY = {"type": "function", "function": {"name": "save_city"}}
SYSTEM = "You save the city the user names with the save_city function."
"""llama.cpp's chatml-function-calling template lists the tools inside the system message only:
without one the model is forced into the call without ever seeing the tool."""
PROMPT = "Save the city Oslo."
CALL_TIMEOUT_S = 60
"""Per model call (the node's `timeout_s`) and per proxied request: a hang fails, never blocks CI."""


@dataclass
class ToolRun:
    outcome: RunOutcome
    nodes: dict[str, NodeRunRecord]
    sent: list[dict[str, Any]]
    """The chat-completion request bodies as they reached the server, in order."""


@contextlib.contextmanager
def recording_proxy(upstream: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback HTTP proxy forwarding POSTs to `upstream` (a `.../v1` base URL); yields its own
    base URL and the list it appends each chat-completion request body to."""
    root = upstream.removesuffix("/v1")
    sent: list[dict[str, Any]] = []

    class Forward(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.endswith("/chat/completions"):
                sent.append(json.loads(body))
            answer = httpx.post(
                root + self.path, content=body, headers={"Content-Type": "application/json"}, timeout=CALL_TIMEOUT_S
            )
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures, not traffic
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", sent
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def tool_pool(base_url: str, folder: Path) -> ProviderPool:
    """The pool from a `plait.toml` whose chat role is the llama.cpp server. `json_object_schema`:
    this server answers HTTP 500 to `response_format.type = json_schema`. The `tools` capability
    is what lets the engine send a tooled node to this model at all. `retries = 0`: a refused
    request is not retried by the pool, so the node's own `max_retries` are the only tries made
    and each try is one request seen by the proxy."""
    config = folder / "plait.toml"
    config.write_text(f"""
[[providers]]
id = "llamacpp"
kind = "openai"
base_url = "{base_url}"
json_mode = "json_object_schema"
retries = 0
models = [{{ name = "smollm2", context = 2048, capabilities = ["tools", "json_schema"] }}]

[roles]
chat = ["llamacpp/smollm2"]
""")
    return ProviderPool(load_config(str(config)))


def city_graph(folder: Path) -> str:
    """pick (LLM_CALL, one forced tool round; `save_city`'s result routed down e_city) -> keep
    (TRANSFORM of the routed value); pick -> END with the final answer."""
    return graph_file(
        folder,
        [
            {
                "id": "pick",
                "type": "LLM_CALL",
                "system_prompt": SYSTEM,
                "user_prompt_tpl": PROMPT,
                "tools": [SAVE_CITY],
                "tool_choice": FORCE_SAVE_CITY,
                "max_tool_rounds": 1,
                "max_retries": 2,
                "timeout_s": CALL_TIMEOUT_S,
                "temperature_override": 0,
                "max_tokens_override": 96,
            },
            {"id": "keep", "type": "TRANSFORM", "transform_expr": "({saved: current.city})"},
        ],
        [
            {"id": "e_city", "source": "pick", "target": "keep", "schema_id": "city"},
            {"id": "e_done", "source": "pick", "target": "END", "schema_id": "done"},
        ],
        schemas=[{"id": "city", "schema": CITY}, {"id": "done", "schema": DONE}],
    )


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolRun]:
    """One run of the graph on the real model (the slow part, so shared by the tests below), on
    SQLite only: the store backends are covered elsewhere, the model is what is under test here."""
    folder = tmp_path_factory.mktemp("real_tools")
    with (
        serve_llama("--chat_format", "chatml-function-calling") as server,
        recording_proxy(server) as (proxy, sent),
        Store(f"sqlite:///{folder / 'plait.db'}") as store,
    ):
        outcome = drive_with(store, start_run(store, city_graph(folder), {}), tool_pool(proxy, folder))
        nodes = current_activations(store.runs.node_runs(outcome.run_id))
        yield ToolRun(outcome, nodes, list(sent))


def the_call(run: ToolRun) -> dict[str, Any]:
    """The one call of the one tool round, as the node run recorded it."""
    snapshot = run.nodes["pick"].input_snapshot
    assert snapshot is not None
    (round_one,) = snapshot["tool_rounds"]
    assert round_one["round"] == 1
    (call,) = round_one["calls"]
    return dict(call)


def test_round_one_offers_the_tool_and_forces_it(tool_run: ToolRun) -> None:
    """What went on the wire first: the node's prompt, the tool as recorded in the snapshot, the
    named `tool_choice`, and no `response_format` (a format would fight the tool call)."""
    pick = tool_run.nodes["pick"]
    assert pick.input_snapshot is not None
    assert pick.input_snapshot["tools"] == [SAVE_CITY_SPEC]
    first = tool_run.sent[0]
    assert first["tools"] == [SAVE_CITY_SPEC]
    assert first["tool_choice"] == FORCE_SAVE_CITY
    assert "response_format" not in first
    assert first["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]


def test_the_server_calls_the_forced_tool_and_the_round_is_recorded(tool_run: ToolRun) -> None:
    """The real server answered round 1 with a call of `save_city` whose arguments are valid for
    its parameters (its grammar guarantees that much); CONTEXT_WRITE made them the result. The
    round is attempt 1 of the node run (`tool_round`, the call as the server returned it, the
    tokens llama.cpp counted) and is in the snapshot's `tool_rounds`."""
    call = the_call(tool_run)
    assert (call["tool"], call["source"]) == ("save_city", "inline")
    jsonschema.validate(call["arguments"], CITY)
    assert call["result"] == call["arguments"]
    first = tool_run.nodes["pick"].attempts[0]
    assert (first["attempt"], first["tool_round"]) == (1, True)
    (recorded,) = first["tool_calls"]
    assert recorded["id"]
    assert (recorded["name"], recorded["arguments"]) == ("save_city", call["arguments"])
    assert (first["provider"], first["model"]) == ("llamacpp", "smollm2")
    assert first["usage"]["input"] > 0
    assert first["usage"]["output"] > 0


def test_the_final_call_continues_with_the_call_and_its_result_and_asks_for_the_schema(tool_run: ToolRun) -> None:
    """`max_tool_rounds: 1`, so after the round comes the final call: no tools, the out-edge schema
    in llama.cpp's `{type: json_object, schema}` form, and the conversation carrying the call and
    its result under the call id the server gave."""
    call = the_call(tool_run)
    (recorded,) = tool_run.nodes["pick"].attempts[0]["tool_calls"]
    finals = tool_run.sent[1:]
    assert 1 <= len(finals) <= 1 + 2  # the final answer, plus at most max_retries more tries
    for final in finals:
        assert "tools" not in final
        assert "tool_choice" not in final
        assert final["response_format"] == {"type": "json_object", "schema": DONE}
        assert final["messages"][:2] == tool_run.sent[0]["messages"]
    assistant, result = finals[0]["messages"][2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [
        {
            "id": recorded["id"],
            "type": "function",
            "function": {"name": "save_city", "arguments": json.dumps(call["arguments"])},
        }
    ]
    assert result == {
        "role": "tool",
        "tool_call_id": recorded["id"],
        "content": json.dumps(call["result"], ensure_ascii=False),
    }


def test_the_run_completes_and_the_routed_result_feeds_the_next_node(tool_run: ToolRun) -> None:
    """End to end: the final answer is valid for e_done, the tool's result went down e_city, and
    `keep` read it as `current`: its output is built from whatever city the model gave."""
    assert tool_run.outcome.status == RunStatus.COMPLETED, tool_run.outcome.error
    city = the_call(tool_run)["arguments"]["city"]
    pick, keep = tool_run.nodes["pick"], tool_run.nodes["keep"]
    assert pick.output["_routed"] == {"e_city": {"city": city}}
    answer = {k: v for k, v in pick.output.items() if not k.startswith("_")}
    jsonschema.validate(answer, DONE)
    assert keep.status == "completed"
    assert keep.effective_output == {"saved": city}
    assert tool_run.outcome.output == {"pick": answer, "keep": {"saved": city}}


def test_every_model_call_is_an_attempt_with_its_token_usage(tool_run: ToolRun) -> None:
    """Each request the server answered is one attempt, numbered in order, the tool round first;
    each counts the tokens llama.cpp reported, and the node run's totals are their sums."""
    pick = tool_run.nodes["pick"]
    assert len(pick.attempts) == len(tool_run.sent)
    assert [a["attempt"] for a in pick.attempts] == list(range(1, len(pick.attempts) + 1))
    assert [a.get("tool_round", False) for a in pick.attempts] == [True] + [False] * (len(pick.attempts) - 1)
    for attempt in pick.attempts:
        assert (attempt["provider"], attempt["model"]) == ("llamacpp", "smollm2")
        assert attempt["usage"]["input"] > 0
        assert attempt["usage"]["output"] > 0
    assert pick.tokens_input == sum(a["usage"]["input"] for a in pick.attempts)
    assert pick.tokens_output == sum(a["usage"]["output"] for a in pick.attempts)
