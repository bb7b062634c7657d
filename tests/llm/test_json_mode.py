"""Structured output follows the model's capabilities, and a server that refuses the form it was
sent is asked once in the next weaker one. Through the real engine, pool and `openai` provider,
against a real loopback server (tests/llm/fault_server.py) that refuses some forms."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fault_server import fault_server

from plait.config import load_config
from plait.engine.runner import Engine
from plait.llm import openai_compat
from plait.llm.pool import ProviderPool
from plait.runs.start import start_run
from plait.store import Store

LABEL = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["bug", "praise"]}},
    "required": ["label"],
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    monkeypatch.setattr(openai_compat, "_learned", {})  # what this process learned starts empty
    with fault_server() as served:
        yield served


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    yield opened
    opened.close()


def run_graph(store: Store, tmp_path: Path, url: str, model: str, capabilities: list[str]) -> Any:
    """One LLM node, the provider configured without `json_mode`: `capabilities` decide it."""
    (tmp_path / "plait.toml").write_text(
        f'[[providers]]\nid = "p"\nkind = "openai"\nbase_url = "{url}"\ntimeout_s = 5.0\nretries = 2\n'
        f'backoff_s = 0.05\nmodels = [{{ name = "{model}", capabilities = {capabilities!r} }}]\n\n'
        f'[roles]\nchat = ["p/{model}"]\n'
    )
    graph = {
        "id": "forms",
        "schemas": [{"id": "label", "schema": LABEL}],
        "nodes": [{"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}", "cache": False}],
        "edges": [{"source": "a", "target": "END", "schema_id": "label"}],
    }
    path = tmp_path / "forms.yaml"
    path.write_text(yaml.safe_dump(graph))
    run_id = start_run(store, str(path), {"text": "it crashes"})
    engine = Engine(store, ProviderPool(load_config(str(tmp_path / "plait.toml"))), cache=False)

    async def go() -> Any:
        try:
            return await asyncio.wait_for(engine.run(run_id), 30)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def steps(store: Store, run_id: str) -> list[tuple[str, str]]:
    (record,) = [n for n in store.runs.node_runs(run_id) if n.node_id == "a"]
    return [(d["from"], d["to"]) for a in record.attempts for d in a.get("decisions", [])
            if d["event"] == "json_mode_downgraded"]  # fmt: skip


def forms(calls: Any, model: str) -> dict[str, int]:
    return {key.split("|")[1]: n for key, n in calls.items() if key.startswith(f"{model}|")}


def test_a_model_that_does_not_declare_json_schema_is_never_sent_that_form(
    server: tuple[str, Any], store: Store, tmp_path: Path
) -> None:
    url, calls = server
    outcome = run_graph(store, tmp_path, url, "noschema", [])
    assert outcome.status == "completed", outcome.error
    assert forms(calls, "noschema") == {"json_object": 1}
    assert steps(store, outcome.run_id) == []


def test_a_refused_json_schema_is_asked_once_more_weaker_recorded_and_remembered(
    server: tuple[str, Any], store: Store, tmp_path: Path
) -> None:
    """llama.cpp's server behaviour: HTTP 500 naming response_format to json_schema. One more
    request in the next form, not the pool's retries of the identical one; the next run in this
    process starts at the form that worked."""
    url, calls = server
    first = run_graph(store, tmp_path, url, "noschema", ["json_schema"])
    assert first.status == "completed", first.error
    assert first.output["label"] == "bug"
    assert forms(calls, "noschema") == {"json_schema": 1, "json_object_schema": 1}
    assert steps(store, first.run_id) == [("json_schema", "json_object_schema")]

    second = run_graph(store, tmp_path, url, "noschema", ["json_schema"])
    assert second.status == "completed", second.error
    assert forms(calls, "noschema") == {"json_schema": 1, "json_object_schema": 2}
    assert steps(store, second.run_id) == []


def test_a_4xx_steps_down_through_every_form_to_plain_json_object(
    server: tuple[str, Any], store: Store, tmp_path: Path
) -> None:
    url, calls = server
    outcome = run_graph(store, tmp_path, url, "objectonly", ["json_schema"])
    assert outcome.status == "completed", outcome.error
    assert forms(calls, "objectonly") == {"json_schema": 1, "json_object_schema": 1, "json_object": 1}
    assert steps(store, outcome.run_id) == [
        ("json_schema", "json_object_schema"),
        ("json_object_schema", "json_object"),
    ]


def test_a_server_refusing_every_form_fails_the_node_without_blind_retries(
    server: tuple[str, Any], store: Store, tmp_path: Path
) -> None:
    url, calls = server
    outcome = run_graph(store, tmp_path, url, "noformat", ["json_schema"])
    assert outcome.status == "failed"
    assert forms(calls, "noformat") == {"json_schema": 1, "json_object_schema": 1, "json_object": 1}
    assert steps(store, outcome.run_id) == [
        ("json_schema", "json_object_schema"),
        ("json_object_schema", "json_object"),
    ]
