"""Run budgets (SPEC §6.3): `max_cost_usd` stops a run before a call that would exceed it;
`token_budget_input` cuts inserted context, `token_budget_output` caps the answer."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait import load_graph
from plait.config import load_config
from plait.engine.runner import Engine
from plait.engine.runtime import Runtime
from plait.llm.pool import ProviderPool
from plait.llm.tokens import CHARS_PER_TOKEN, count_messages, tiktoken_counter
from plait.runs.dry_run import dry_run
from plait.runs.start import start_run
from plait.store import Store

PRICED = """
[[providers]]
id = "priced"
kind = "scripted"
file = "answers.yaml"
models = [{ name = "m", price_in = 1000.0, price_out = 1000.0 }]   # $0.001 per token

[roles]
chat = "priced/m"
"""


def run_chain(store: Store, tmp_path: Path, max_cost: float | None) -> tuple[Any, list[dict[str, Any]]]:
    (tmp_path / "plait.toml").write_text(PRICED)
    (tmp_path / "answers.yaml").write_text(
        'log: calls.jsonl\nresponses:\n  - {output: {text: "ok"}, usage: {input: 100, output: 50}}\n'
    )
    nodes = [{"id": n, "type": "LLM_CALL", "user_prompt_tpl": "go", "token_budget_output": 50} for n in "abc"]
    graph = {"id": "budgeted", "nodes": nodes,
             "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "c"}]}  # fmt: skip
    if max_cost is not None:
        graph["max_cost_usd"] = max_cost
    path = tmp_path / "budgeted.yaml"
    path.write_text(yaml.safe_dump(graph))
    run_id = start_run(store, str(path), {})
    engine = Engine(store, ProviderPool(load_config(str(tmp_path / "plait.toml"))))

    async def go() -> Any:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    log = tmp_path / "calls.jsonl"
    return outcome, [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_run_stops_before_the_call_that_would_exceed_its_budget(store: Store, tmp_path: Path) -> None:
    # each call costs (100 + 50) x $0.001 = $0.15; the next is estimated at $0.05 (a 2-character prompt + 50)
    outcome, calls = run_chain(store, tmp_path, max_cost=0.34)
    assert [c["node"] for c in calls] == ["a", "b"], "c would have brought the run to ~$0.35"
    assert outcome.status == "failed"
    assert outcome.error["kind"] == "budget"
    assert "max_cost_usd = 0.34 would be exceeded" in outcome.error["message"]
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    assert nodes["c"].status == "failed"
    assert nodes["c"].error["kind"] == "budget"
    assert nodes["c"].attempts == []  # nothing was sent
    assert store.runs.get(outcome.run_id).cost_usd == 0.30


def test_a_budget_that_holds_lets_the_run_complete(store: Store, tmp_path: Path) -> None:
    outcome, calls = run_chain(store, tmp_path, max_cost=1.0)
    assert outcome.status == "completed"
    assert len(calls) == 3


def test_a_run_without_a_budget_never_estimates_its_calls(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Estimates only count against `max_cost_usd`: without one, no prompt is tokenized before it
    is sent (a cost on every call of every run); the real cost is still recorded."""
    estimated: list[str] = []
    real = ProviderPool.estimate_cost

    def counting(self: ProviderPool, request: Any) -> float:
        estimated.append(request.node_id)
        return real(self, request)

    monkeypatch.setattr(ProviderPool, "estimate_cost", counting)
    outcome, calls = run_chain(store, tmp_path, max_cost=None)
    assert outcome.status == "completed"
    assert len(calls) == 3
    assert estimated == []
    assert store.runs.get(outcome.run_id).cost_usd == pytest.approx(0.45)
    run_chain(store, tmp_path, max_cost=1.0)
    assert estimated == ["a", "b", "c"]


def test_token_budget_input_cuts_inserted_context_with_a_marker(store: Store, tmp_path: Path) -> None:
    (tmp_path / "answers.yaml").write_text('responses:\n  - {output: {text: "ok"}}\n')
    graph = {
        "id": "cut",
        "nodes": [
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Text: {{ input.text }}", "token_budget_input": 10}
        ],
        "edges": [],
    }
    path = tmp_path / "cut.yaml"
    path.write_text(yaml.safe_dump(graph))
    run_id = start_run(store, str(path), {"text": "x" * 500})
    from plait.llm.scripted import ScriptedProvider

    engine = Engine(store, ScriptedProvider.from_file(tmp_path / "answers.yaml"))
    asyncio.run(engine.run(run_id))
    (node,) = store.runs.node_runs(run_id)
    prompt = node.input_snapshot["rendered_user_prompt"]  # type: ignore[index]
    assert prompt == "Text: " + "x" * 40 + "…[truncated 460 chars]"
    assert node.input_snapshot["truncated_chars"] == 460  # type: ignore[index]


TOKENIZED = """
[[providers]]
id = "p"
kind = "scripted"
file = "answers.yaml"
tokenizer = "o200k_base"

[roles]
chat = "p/m"
"""


def test_token_budget_input_counts_the_serving_models_tokens(store: Store, tmp_path: Path) -> None:
    (tmp_path / "plait.toml").write_text(TOKENIZED)
    (tmp_path / "answers.yaml").write_text('responses:\n  - {output: {text: "ok"}}\n')
    template = "A: {{ input.a }}\nB: {{ input.b }}"
    graph = {"id": "cut", "nodes": [{"id": "n", "type": "LLM_CALL", "user_prompt_tpl": template,
                                     "token_budget_input": 40}], "edges": []}  # fmt: skip
    path = tmp_path / "cut.yaml"
    path.write_text(yaml.safe_dump(graph))
    first, second = "short words come first. " * 4, "字" * 300  # one o200k token per character
    run_id = start_run(store, str(path), {"a": first, "b": second})
    engine = Engine(store, ProviderPool(load_config(str(tmp_path / "plait.toml"))))

    async def go() -> None:
        try:
            await engine.run(run_id)
        finally:
            await engine.aclose()

    asyncio.run(go())
    (node,) = store.runs.node_runs(run_id)
    snapshot: dict[str, Any] = node.input_snapshot  # type: ignore[assignment]
    cut = re.fullmatch(r"A: (.*)\nB: (.*)…\[truncated (\d+) chars\]", snapshot["rendered_user_prompt"], re.S)
    assert cut is not None, snapshot["rendered_user_prompt"]
    assert cut.group(1) == first  # the first value fits; the second gets what is left
    kept = cut.group(2)
    assert second.startswith(kept)
    counter = tiktoken_counter("o200k_base")
    inserted = counter.count(first) + counter.count(kept)
    assert 38 <= inserted <= 40
    assert int(cut.group(3)) == len(second) - len(kept) == snapshot["truncated_chars"]
    assert len(first) + len(kept) != 40 * CHARS_PER_TOKEN  # ~4 characters per token would keep 160


def test_the_dry_run_counts_prompt_tokens_with_the_serving_models_tokenizer(tmp_path: Path) -> None:
    (tmp_path / "plait.toml").write_text(TOKENIZED)
    (tmp_path / "answers.yaml").write_text('responses:\n  - {output: {text: "ok"}}\n')
    path = tmp_path / "g.yaml"
    node = {"id": "n", "type": "LLM_CALL", "user_prompt_tpl": "{{ input.t }}"}
    path.write_text(yaml.safe_dump({"id": "g", "nodes": [node], "edges": []}))
    runtime = Runtime(ProviderPool(load_config(str(tmp_path / "plait.toml"))))
    dry = asyncio.run(dry_run(load_graph(path), {"t": "字" * 500}, runtime))
    (rendered,) = dry.nodes
    assert rendered.messages is not None
    assert rendered.tokens_in == count_messages(tiktoken_counter("o200k_base"), rendered.messages) >= 500
