"""The fault matrix (providers issue): a real HTTP server of our own on loopback answers with 429 +
Retry-After, 500, slowness past the timeout, a dropped connection, text that is not JSON, JSON
that breaks the schema. Through the real engine, `openai` provider and pool, each run either
succeeds by retrying or failing over, or fails its node with a clear reason: never hangs, never
stores an invalid output."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fault_server import dropping_server, fault_server

from plait.config import load_config
from plait.engine.runner import Engine
from plait.llm.pool import ProviderPool
from plait.runs.start import start_run
from plait.store import Store

LABEL = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["bug", "praise"]}},
    "required": ["label"],
}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    with fault_server() as served:
        yield served


_opened: list[Store] = []


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    while _opened:
        _opened.pop().close()


@pytest.fixture(scope="module")
def dropping() -> Iterator[str]:
    with dropping_server() as url:
        yield url


def run_graph(
    tmp_path: Path, targets: list[tuple[str, str]], *, max_retries: int = 0, stream: bool = False
) -> tuple[Store, Any]:
    providers = "".join(
        f'[[providers]]\nid = "p{i}"\nkind = "openai"\nbase_url = "{url}"\njson_mode = "json_object_schema"\n'
        f"timeout_s = 1.0\nretries = 1\nbackoff_s = 0.05\nstream = {'true' if stream else 'false'}\n"
        for i, (url, _) in enumerate(targets)
    )
    role = ", ".join(f'"p{i}/{model}"' for i, (_, model) in enumerate(targets))
    (tmp_path / "plait.toml").write_text(f"{providers}\n[roles]\nchat = [{role}]\n")
    graph = {
        "id": "faults",
        "schemas": [{"id": "label", "schema": LABEL}],
        "nodes": [
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}", "max_retries": max_retries},
            {"id": "b", "type": "TRANSFORM", "transform_expr": "({label: current.label})"},
        ],
        "edges": [{"source": "a", "target": "b", "schema_id": "label"}, {"source": "b", "target": "END"}],
    }
    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump(graph))
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    _opened.append(store)
    run_id = start_run(store, str(path), {"text": "it crashes"})
    engine = Engine(store, ProviderPool(load_config(str(tmp_path / "plait.toml"))), cache=False)

    async def go() -> Any:
        try:
            return await asyncio.wait_for(engine.run(run_id), 30)  # never hangs
        finally:
            await engine.aclose()

    return store, asyncio.run(go())


def node(store: Store, run_id: str, node_id: str) -> Any:
    return next(n for n in store.runs.node_runs(run_id) if n.node_id == node_id)


def downstream_ran(store: Store, run_id: str) -> bool:
    return any(n.node_id == "b" and n.status == "completed" for n in store.runs.node_runs(run_id))


def decisions(record: Any) -> list[str]:
    return [d["event"] for a in record.attempts for d in a.get("decisions", [])]


def test_429_with_retry_after_is_waited_out_and_retried(server: tuple[str, Any], tmp_path: Path) -> None:
    url, calls = server
    store, outcome = run_graph(tmp_path, [(url, "429*1")])
    assert outcome.status == "completed", outcome.error
    a = node(store, outcome.run_id, "a")
    assert decisions(a) == ["sent", "retry", "sent"]
    retry = a.attempts[0]["decisions"][1]
    assert retry["wait_s"] >= 1.0, "the server's Retry-After: 1 wins over the 0.05 s backoff"
    assert calls["429*1"] == 2


@pytest.mark.parametrize("fault", ["500", "slow"])
def test_a_failing_or_slow_provider_fails_over_to_the_next(server: tuple[str, Any], tmp_path: Path, fault: str) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(url, fault), (url, "ok")])
    assert outcome.status == "completed", outcome.error
    assert outcome.output == {"label": "bug"}
    a = node(store, outcome.run_id, "a")
    assert decisions(a) == ["sent", "retry", "sent", "failover", "sent"]
    assert (a.attempts[-1]["provider"], a.attempts[-1]["model"]) == ("p1", "ok")


def test_a_dropped_connection_fails_over(dropping: str, server: tuple[str, Any], tmp_path: Path) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(dropping, "ok"), (url, "ok")])
    assert outcome.status == "completed", outcome.error
    a = node(store, outcome.run_id, "a")
    failover = next(d for d in a.attempts[-1]["decisions"] if d["event"] == "failover")
    assert "cannot connect" in failover["error"] or "connection" in failover["error"].lower()


def test_every_provider_failing_fails_the_node_with_the_reason(server: tuple[str, Any], tmp_path: Path) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(url, "500"), (url, "500")])
    assert outcome.status == "failed"
    a = node(store, outcome.run_id, "a")
    assert a.status == "failed"
    assert "every provider for the role 'chat' failed; the last: p1: server error (HTTP 500)" in a.error["message"]
    assert a.output is None
    assert not downstream_ran(store, outcome.run_id)


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("notjson", "the answer is not JSON"), ("badschema", "'urgent' is not one of ['bug', 'praise']")],
)
def test_an_invalid_answer_is_retried_with_feedback_then_fails_and_nothing_invalid_is_stored(
    server: tuple[str, Any], tmp_path: Path, fault: str, reason: str
) -> None:
    url, calls = server
    before = calls[fault]
    store, outcome = run_graph(tmp_path, [(url, fault)], max_retries=1)
    assert outcome.status == "failed"
    a = node(store, outcome.run_id, "a")
    assert a.output is None, "an invalid answer is never stored as the output"
    assert a.error["kind"] == "schema"
    assert any(reason in d for d in a.error["details"])
    assert len(a.attempts) == 2
    assert calls[fault] - before == 2
    assert not downstream_ran(store, outcome.run_id)


def test_an_invalid_answer_then_a_valid_one_completes(server: tuple[str, Any], tmp_path: Path) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(url, "badschema*1")], max_retries=1)
    assert outcome.status == "completed", outcome.error
    a = node(store, outcome.run_id, "a")
    assert [bool(x.get("violations")) for x in a.attempts] == [True, False]


def test_a_streamed_answer_is_assembled_with_its_usage(server: tuple[str, Any], tmp_path: Path) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(url, "ok")], stream=True)
    assert outcome.status == "completed", outcome.error
    a = node(store, outcome.run_id, "a")
    assert a.attempts[-1]["content"] == '{"label": "bug"}'
    assert (a.tokens_input, a.tokens_output) == (20, 5)


def test_a_truncated_stream_is_retried_never_taken_as_a_short_answer(server: tuple[str, Any], tmp_path: Path) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(url, "truncate*1")], stream=True)
    assert outcome.status == "completed", outcome.error
    a = node(store, outcome.run_id, "a")
    retry = next(d for d in a.attempts[-1]["decisions"] if d["event"] == "retry")
    assert "stream ended before the model finished" in retry["error"] or "broke off" in retry["error"]


def test_a_stream_that_always_breaks_fails_the_node_with_the_reason(server: tuple[str, Any], tmp_path: Path) -> None:
    url, _ = server
    store, outcome = run_graph(tmp_path, [(url, "truncate")], stream=True)
    assert outcome.status == "failed"
    a = node(store, outcome.run_id, "a")
    assert a.output is None
    assert a.error["kind"] == "stream_broken"


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_cut_at_the_token_limit_fails_once_saying_so(
    server: tuple[str, Any], tmp_path: Path, stream: bool
) -> None:
    url, calls = server
    before = calls["length"]
    store, outcome = run_graph(tmp_path, [(url, "length")], max_retries=2, stream=stream)
    assert outcome.status == "failed"
    a = node(store, outcome.run_id, "a")
    assert a.error["kind"] == "truncated"
    assert "cut at the token limit" in a.error["message"]
    assert "asked again, it would be cut the same way" in a.error["message"]
    assert "raise max_tokens_override of node 'a'" in a.error["hint"]
    assert a.error["last_output"] == '{"label": "bu'
    # not asked again: a deterministic decoder would stop at the same token (max_retries is 2)
    assert calls["length"] - before == 1
    assert [attempt["kind"] for attempt in a.attempts] == ["truncated"]
