"""The `openai` provider against a real OpenAI-compatible server on loopback: llama.cpp's own
(`python -m llama_cpp.server`) serving the SmolLM2 GGUF, started by the fixture. Skipped, with the
reason, only where the `local` extra (which brings the server) is not installed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from llm_helpers import LABEL, complete_once, free_port, needs_local, serve_llama

from plait.config import JsonMode, ProviderConfig
from plait.llm import openai_compat
from plait.llm.openai_compat import OpenAIProvider
from plait.llm.types import ChatRequest, ProviderError
from plait.store import Store
from tests.plait_cli import run_plait

pytestmark = needs_local

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    with serve_llama() as base_url:
        yield base_url


def provider(base_url: str, mode: JsonMode, **extra: Any) -> OpenAIProvider:
    config = ProviderConfig(id="llamacpp", kind="openai", base_url=base_url, json_mode=mode, **extra)
    return OpenAIProvider(config)


def ask(p: OpenAIProvider, schema: dict[str, Any] | None = LABEL) -> Any:
    request = ChatRequest(
        node_id="classify",
        messages=[
            {"role": "system", "content": "Label user feedback as bug, praise or question."},
            {"role": "user", "content": "Feedback: the app crashes when I upload a photo."},
        ],
        model="smollm2",
        response_format={"type": "json_schema", "json_schema": {"name": "label", "strict": True, "schema": schema}},
        max_tokens=24,
        temperature=0.0,
    )

    return complete_once(p, request)


def test_json_object_with_schema_gets_a_schema_valid_answer(llama_server: str) -> None:
    response = ask(provider(llama_server, JsonMode.JSON_OBJECT_SCHEMA))
    jsonschema.validate(json.loads(response.content), LABEL)
    assert response.usage.input_tokens > 10
    assert response.usage.output_tokens > 0
    assert (response.provider, response.model) == ("llamacpp", "smollm2")


def test_the_json_schema_form_refused_by_this_server_is_asked_again_in_the_next_weaker_form(
    llama_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp's server answers HTTP 500 (naming `response_format`) to the json_schema form: the
    provider asks once more with `{type: json_object, schema}`, records the step, and the next
    request (another provider object, same process) starts at the form that worked."""
    monkeypatch.setattr(openai_compat, "_learned", {})
    response = ask(provider(llama_server, JsonMode.JSON_SCHEMA))
    jsonschema.validate(json.loads(response.content), LABEL)
    (step,) = response.decisions
    assert (step["event"], step["from"], step["to"]) == ("json_mode_downgraded", "json_schema", "json_object_schema")
    assert "HTTP 500" in step["error"]
    assert ask(provider(llama_server, JsonMode.JSON_SCHEMA)).decisions == []


def test_a_model_without_the_json_schema_capability_is_never_sent_that_form(
    llama_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_compat, "_learned", {})
    config = ProviderConfig(id="llamacpp", kind="openai", base_url=llama_server,
                            models=[{"name": "smollm2", "capabilities": []}])  # fmt: skip
    response = ask(OpenAIProvider(config))
    assert response.decisions == []  # nothing refused: json_object (the schema in the prompt) went first
    assert response.content


def test_a_closed_port_is_a_retryable_connection_error() -> None:
    with pytest.raises(ProviderError) as caught:
        ask(provider(f"http://127.0.0.1:{free_port()}/v1", JsonMode.JSON_OBJECT_SCHEMA))
    assert (caught.value.kind, caught.value.retryable) == ("connection", True)


def test_a_run_configured_in_plait_toml_fails_over_to_the_server(llama_server: str, tmp_path: Path) -> None:
    """`plait run --config`: the chat role's first target is down, the second is the llama.cpp
    server; the run completes on it and every model call records it, priced from the config."""
    config = tmp_path / "plait.toml"
    config.write_text(f"""
[[providers]]
id = "down"
kind = "openai"
base_url = "http://127.0.0.1:{free_port()}/v1"
models = [{{ name = "x" }}]

[[providers]]
id = "llamacpp"
kind = "openai"
base_url = "{llama_server}"
json_mode = "json_object_schema"
models = [{{ name = "smollm2", price_in = 1.0, price_out = 2.0, context = 2048, capabilities = ["json_schema"] }}]

[roles]
chat = ["down/x", "llamacpp/smollm2"]
""")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = run_plait(
        "run",
        str(EXAMPLES / "feedback_triage.yaml"),
        "--input-file",
        str(EXAMPLES / "inputs" / "feedback_triage.yaml"),
        "--config",
        str(config),
        "--db",
        db,
        "--quiet",
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["label"] in ("bug", "praise", "question")
    with Store(db) as store:
        (run,) = store.runs.list()
        calls = [n for n in store.runs.node_runs(run.id) if n.tokens_output]
    assert calls
    assert {(n.attempts[-1]["provider"], n.attempts[-1]["model"]) for n in calls} == {("llamacpp", "smollm2")}
    for node in calls:
        assert node.cost_usd == pytest.approx((node.tokens_input * 1.0 + node.tokens_output * 2.0) / 1e6)
    assert run.cost_usd == pytest.approx(sum(n.cost_usd for n in calls))
