"""The response cache in a real store: a repeated identical request is answered from
it at no cost, recorded with the node run it came from; `cache: false`, `--no-cache`, a failover
and an uncacheable provider all go to the model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.runner import Engine
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, Usage
from plait.runs.start import start_run
from plait.store import Store
from tests.plait_cli import run_plait
from tests.worker.counting_server import counting_server, openai_config

LABEL = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}


class CountingModel(Provider):
    """A cacheable provider (names its model) that counts the calls that reach it."""

    name = "counting"

    def __init__(self, serves_as: str = "counting/m1") -> None:
        self.calls = 0
        self.serves_as = serves_as

    def cache_identity(self, request: ChatRequest) -> str:
        return "counting/m1"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        provider, model = self.serves_as.split("/")
        return ChatResponse(
            content='{"label": "bug"}', usage=Usage(40, 6), provider=provider, model=model, cost_usd=0.01
        )


def graph(tmp_path: Path, cache: bool = True) -> str:
    data = {
        "id": "cached",
        "schemas": [{"id": "label", "schema": LABEL}],
        "nodes": [{"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}", "cache": cache}],
        "edges": [{"source": "a", "target": "END", "schema_id": "label"}],
    }
    path = tmp_path / f"cached_{cache}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def run(store: Store, path: str, provider: Provider, text: str = "it crashes", **engine: Any) -> Any:
    run_id = start_run(store, path, {"text": text})
    return asyncio.run(Engine(store, provider, **engine).run(run_id))


def node(store: Store, run_id: str) -> Any:
    (record,) = store.runs.node_runs(run_id)
    return record


def test_an_identical_request_is_answered_from_the_cache(store: Store, tmp_path: Path) -> None:
    model = CountingModel()
    first = run(store, graph(tmp_path), model)
    second = run(store, graph(tmp_path), model)
    assert model.calls == 1
    assert second.output == first.output == {"label": "bug"}
    hit = node(store, second.run_id)
    assert (hit.cost_usd, hit.tokens_input, hit.tokens_output) == (0.0, 0, 0)
    assert hit.attempts[0]["cache_hit"] is True
    assert hit.attempts[0]["cached_from"] == node(store, first.run_id).id
    assert store.runs.get(second.run_id).cost_usd == 0.0
    other = run(store, graph(tmp_path), model, text="other text")
    assert model.calls == 2, "a different prompt is a different request"
    assert node(store, other.run_id).attempts[0].get("cache_hit") is None


@pytest.mark.parametrize("how", ["node cache: false", "Engine(cache=False) / --no-cache"])
def test_the_cache_can_be_bypassed(store: Store, tmp_path: Path, how: str) -> None:
    model = CountingModel()
    node_cache = how.startswith("node")
    path = graph(tmp_path, cache=not node_cache)
    run(store, path, model)
    run(store, path, model, **({} if node_cache else {"cache": False}))
    assert model.calls == 2


def test_an_answer_from_a_failover_target_is_not_remembered_under_the_first_targets_key(
    store: Store, tmp_path: Path
) -> None:
    model = CountingModel(serves_as="backup/m2")
    run(store, graph(tmp_path), model)
    run(store, graph(tmp_path), model)
    assert model.calls == 2


TWO_CALLS = {
    "id": "two_calls",
    "schemas": [{"id": "label", "schema": LABEL}],
    "nodes": [
        {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}"},
        {"id": "b", "type": "LLM_CALL", "user_prompt_tpl": "Label again: {{ a.label }}"},
    ],
    "edges": [
        {"source": "a", "target": "b", "schema_id": "label"},
        {"source": "b", "target": "END", "schema_id": "label"},
    ],
}


def test_no_cache_on_the_command_line(tmp_path: Path) -> None:
    """`plait run` again answers every model call from the cache; with `--no-cache` every call
    reaches the model. The model is an OpenAI-compatible server on loopback (a cacheable provider,
    as the embedded one is) that counts the calls it answers: the cache is judged by what reached
    the model, not only by what the store recorded."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    path = tmp_path / "two_calls.yaml"
    path.write_text(yaml.safe_dump(TWO_CALLS))
    base = ["run", str(path), "-i", "text=it crashes", "--config", str(tmp_path / "plait.toml"), "--db", db,
            "--quiet", "--json"]  # fmt: skip
    runs, reached = [], []
    with counting_server(latency_s=0, answer=lambda prompt: '{"label": "bug"}') as (url, counts):
        (tmp_path / "plait.toml").write_text(openai_config(url))
        for extra in ([], [], ["--no-cache"]):
            runs.append(run_plait(*base, *extra))
            reached.append(len(counts.prompts))
    assert [r.returncode for r in runs] == [0, 0, 0], [r.stderr for r in runs]
    assert reached == [2, 2, 4]  # the second run asked nothing; --no-cache asked both again
    with Store(db) as store:
        nodes = [store.runs.node_runs(json.loads(r.stdout)["run_id"]) for r in runs]
    called = sorted(n.node_id for n in nodes[0] if n.tokens_output)
    hits = [
        sorted(n.node_id for n in run_nodes if n.attempts and n.attempts[0].get("cache_hit")) for run_nodes in nodes
    ]
    assert called == ["a", "b"]  # the first run asked the model
    assert hits == [[], called, []]
    second = json.loads(runs[1].stdout)["run_id"]
    shown = run_plait("runs", "show", second, "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert "served by" in shown.stdout
    assert "│ cache " in shown.stdout
