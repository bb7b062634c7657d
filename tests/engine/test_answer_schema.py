"""An LLM_CALL's answer schema from its run input (`answer_schema`): asked for first, enforced
with the out-edge schemas, refused with the node failing when it cannot be used, and never
sharing a cached answer with another schema."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.answer_schema import MAX_ANSWER_SCHEMA_BYTES
from plait.engine.runner import Engine, RunOutcome
from plait.llm.provider import Provider
from plait.llm.scripted import ScriptedProvider, script_from
from plait.llm.types import ChatRequest, ChatResponse, Usage
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store
from plait.testing import scripted

DESIGN = {
    "type": "object",
    "properties": {"target": {"type": "string"}, "reply": {"type": "string", "maxLength": 20}},
    "required": ["target", "reply"],
}
TARGETS = {"type": "object", "properties": {"target": {"enum": ["intro", "outro"]}}, "required": ["target"]}
FED_BACK = "Your answer was not valid"


def graph_file(tmp_path: Path, **node: Any) -> str:
    """a (LLM_CALL, answer schema at input.answer_schema) -> then (TRANSFORM), edge schema `design`."""
    data = {
        "id": "designer",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}, "answer_schema": {}}},
        "schemas": [{"id": "design", "version": "1.2.0", "schema": DESIGN}],
        "nodes": [
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Edit: {{ input.text }}"}
            | {"answer_schema": "input.answer_schema"}
            | node,
            {"id": "then", "type": "TRANSFORM", "transform_expr": "({target: nodes.a.target})"},
        ],
        "edges": [{"source": "a", "target": "then", "schema_id": "design"}],
    }
    path = tmp_path / f"designer_{len(list(tmp_path.glob('designer_*')))}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


class Recording(ScriptedProvider):
    """The scripted provider answering from `rules`, keeping every request it is sent."""

    def __init__(self, *rules: dict[str, Any]) -> None:
        super().__init__(script_from({"responses": list(rules)}))
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return await super().complete(request)


def execute(store: Store, path: str, provider: Provider | None, run_input: dict[str, Any]) -> RunOutcome:
    run_id = start_run(store, path, run_input)
    engine = Engine(store, provider)

    async def go() -> RunOutcome:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def node_run(store: Store, run_id: str, node_id: str = "a") -> Any:
    return next(n for n in store.runs.node_runs(run_id) if n.node_id == node_id)


def test_the_model_is_asked_under_the_run_inputs_schema_and_the_output_names_the_edge_schema(
    store: Store, tmp_path: Path
) -> None:
    provider = Recording({"node": "a", "output": {"target": "intro", "reply": "done"}})
    outcome = execute(store, graph_file(tmp_path), provider, {"text": "x", "answer_schema": TARGETS})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    (request,) = provider.requests
    asked = request.response_format
    assert asked is not None
    assert asked["json_schema"]["name"].startswith("answer_")
    assert asked["json_schema"]["name"].endswith("__design")
    schema = asked["json_schema"]["schema"]
    assert schema["properties"]["target"] == {"enum": ["intro", "outro"]}, "the narrower definition comes first"
    assert schema["properties"]["reply"] == {"type": "string", "maxLength": 20}
    assert schema["required"] == ["target", "reply"]
    done = node_run(store, outcome.run_id)
    assert done.output == {"target": "intro", "reply": "done", "_schema_id": "design", "_schema_version": "1.2.0"}
    recorded = done.input_snapshot["answer_schema"]
    assert (recorded["path"], recorded["schema"]) == ("input.answer_schema", TARGETS)
    assert done.input_snapshot["response_format"] == asked, "what a replay sends again"


def test_an_answer_outside_the_run_inputs_enum_is_asked_again_with_the_violation(store: Store, tmp_path: Path) -> None:
    provider = Recording(
        {"node": "a", "match": FED_BACK, "output": {"target": "outro", "reply": "fixed"}},
        {"node": "a", "output": {"target": "middle", "reply": "wrong"}},
    )
    path = graph_file(tmp_path, max_retries=1)
    outcome = execute(store, path, provider, {"text": "x", "answer_schema": TARGETS})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.output == {"target": "outro"}
    first, second = node_run(store, outcome.run_id).attempts
    assert first["violations"] == ["target: 'middle' is not one of ['intro', 'outro'] (schema 'input.answer_schema')"]
    assert "violations" not in second
    assert "'middle' is not one of" in provider.requests[1].messages[-1]["content"]
    assert provider.requests[1].response_format == provider.requests[0].response_format


def test_an_answer_the_run_input_allows_still_meets_the_edge_schema(store: Store, tmp_path: Path) -> None:
    provider = Recording(
        {"node": "a", "match": FED_BACK, "output": {"target": "intro", "reply": "short"}},
        {"node": "a", "output": {"target": "intro", "reply": "far too long for the edge schema"}},
    )
    path = graph_file(tmp_path, max_retries=1)
    outcome = execute(store, path, provider, {"text": "x", "answer_schema": TARGETS})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    first, _ = node_run(store, outcome.run_id).attempts
    assert first["violations"] == ["reply: 'far too long for the edge schema' is too long (schema 'design')"]
    assert node_run(store, outcome.run_id).output["_schema_id"] == "design"


def test_a_node_whose_retries_run_out_fails_naming_the_run_inputs_schema(store: Store, tmp_path: Path) -> None:
    provider = Recording({"node": "a", "output": {"target": "middle", "reply": "x"}})
    outcome = execute(store, graph_file(tmp_path, max_retries=1), provider, {"text": "x", "answer_schema": TARGETS})
    assert outcome.status == RunStatus.FAILED
    error = node_run(store, outcome.run_id).error
    assert error["kind"] == "schema"
    assert any("(schema 'input.answer_schema')" in d for d in error["details"])
    assert len(provider.requests) == 2


def test_a_field_outside_the_enum_stops_a_checked_stream(store: Store, tmp_path: Path) -> None:
    long = " ".join(f"word{i}" for i in range(2_000))
    provider = Recording(
        {"node": "a", "match": FED_BACK, "output": {"target": "intro", "reply": "ok"}},
        {"node": "a", "output": {"target": "middle", "reply": long}},
    )
    path = graph_file(tmp_path, max_retries=1, check_while_streaming=True)
    outcome = execute(store, path, provider, {"text": "x", "answer_schema": TARGETS})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    first, _ = node_run(store, outcome.run_id).attempts
    assert first["stopped"] is True
    assert any("'middle' is not one of" in p for p in first["violations"])


BAD = [
    ("missing", {"text": "x"}, "names nothing in the run input"),
    ("not an object", {"answer_schema": ["target"]}, "is a list, not a JSON Schema object"),
    ("null", {"answer_schema": None}, "is null, not a JSON Schema object"),
    (
        "oversized",
        {"answer_schema": {"type": "object", "description": "x" * MAX_ANSWER_SCHEMA_BYTES}},
        f"over the limit of {MAX_ANSWER_SCHEMA_BYTES}",
    ),
    ("invalid", {"answer_schema": {"type": 5}}, "is not a valid JSON Schema at 'type': 5 is not valid under"),
    (
        "pattern RE2 cannot run",
        {"answer_schema": {"properties": {"target": {"pattern": "^(?=a)"}}}},
        "is refused at 'properties/target/pattern'",
    ),
    (
        "unresolved reference",
        {"answer_schema": {"properties": {"target": {"$ref": "#/definitions/nope"}}}},
        "does not resolve",
    ),
]


@pytest.mark.parametrize(("case", "run_input", "said"), BAD, ids=[b[0] for b in BAD])
def test_an_answer_schema_that_cannot_be_used_fails_the_node_and_ends_the_run(
    store: Store, tmp_path: Path, case: str, run_input: dict[str, Any], said: str
) -> None:
    provider = Recording({"node": "a", "output": {"target": "intro", "reply": "x"}})
    outcome = execute(store, graph_file(tmp_path), provider, run_input)
    assert outcome.status == RunStatus.FAILED
    assert provider.requests == [], "nothing is asked under a schema that cannot be used"
    failed = node_run(store, outcome.run_id)
    assert failed.status == "failed"
    assert failed.error["kind"] == "input"
    assert failed.error["message"].startswith("node 'a': answer_schema 'input.answer_schema' ")
    assert said in failed.error["message"]
    assert failed.error["hint"]
    assert [n.node_id for n in store.runs.node_runs(outcome.run_id)] == ["a"]
    assert store.runs.get(outcome.run_id).status == RunStatus.FAILED


def test_a_reference_outside_the_schema_is_refused_and_never_fetched(store: Store, tmp_path: Path) -> None:
    from tests.compile.counting_server import counting_server

    with counting_server() as server:
        schema = {"properties": {"target": {"$ref": f"{server.url}/targets.json"}}}
        outcome = execute(store, graph_file(tmp_path), scripted(), {"answer_schema": schema})
    assert outcome.status == RunStatus.FAILED
    assert server.requests == []
    message = node_run(store, outcome.run_id).error["message"]
    assert "is refused at 'properties/target/$ref'" in message
    assert "Plait does not fetch schemas" in message


def test_a_draft_2020_12_schema_is_used_by_its_own_rules(store: Store, tmp_path: Path) -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"target": {"$ref": "#/$defs/target"}},
        "$defs": {"target": {"enum": ["intro"]}},
    }
    provider = Recording(
        {"node": "a", "match": FED_BACK, "output": {"target": "intro", "reply": "ok"}},
        {"node": "a", "output": {"target": "outro", "reply": "ok"}},
    )
    outcome = execute(store, graph_file(tmp_path, max_retries=1), provider, {"answer_schema": schema})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    shown = provider.requests[0].response_format
    assert shown is not None
    assert shown["json_schema"]["schema"]["properties"]["target"] == {"enum": ["intro"]}  # the reference written out
    (problem,) = node_run(store, outcome.run_id).attempts[0]["violations"]
    assert "'outro' is not one of ['intro']" in problem


class CountingModel(Provider):
    """A cacheable provider (it names its model) that counts the calls that reach it."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def cache_identity(self, request: ChatRequest) -> str:
        return "counting/m1"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        content = '{"target": "intro", "reply": "ok"}'
        return ChatResponse(content=content, usage=Usage(40, 6), provider="counting", model="m1", cost_usd=0.01)


def test_runs_with_different_answer_schemas_never_share_a_cached_answer(store: Store, tmp_path: Path) -> None:
    model = CountingModel()
    path = graph_file(tmp_path)
    narrower = {**TARGETS, "properties": {"target": {"enum": ["intro"]}}}
    # differs only in a keyword the combined response_format leaves out: still another request
    bounded = {**TARGETS, "maxProperties": 2}
    for schema, calls in [(TARGETS, 1), (TARGETS, 1), (narrower, 2), (bounded, 3), (narrower, 3)]:
        outcome = execute(store, path, model, {"text": "x", "answer_schema": schema})
        assert outcome.status == RunStatus.COMPLETED, outcome.error
        assert model.calls == calls, schema
    hit = node_run(store, outcome.run_id)
    assert hit.attempts[0]["cache_hit"] is True
    assert hit.output["_schema_id"] == "design"


def test_the_contract_is_built_once_per_schema_and_out_edge_contract() -> None:
    from plait.caches import cache_stats
    from plait.engine.answer_schema import asked_contract
    from plait.engine.contracts import BoundSchema, OutputContract

    edges = OutputContract((BoundSchema("design", "1.2.0", DESIGN),))
    first = asked_contract("input.s", edges, {"s": TARGETS})
    assert isinstance(first, OutputContract)
    assert asked_contract("input.s", edges, {"s": dict(TARGETS)}) is first, "equal text: the same contract"
    other_edges = OutputContract((BoundSchema("design", "2.0.0", DESIGN),))
    other = asked_contract("input.s", other_edges, {"s": TARGETS})
    assert isinstance(other, OutputContract)
    assert other is not first
    assert other.schemas is other_edges.schemas
    assert "answer-schema contracts" in cache_stats()
    assert first.annotate({"target": "intro"}) == {
        "target": "intro",
        "_schema_id": "design",
        "_schema_version": "1.2.0",
    }


def test_without_out_edge_schemas_the_answer_is_still_asked_for_and_checked_but_not_annotated() -> None:
    from plait.engine.answer_schema import asked_contract
    from plait.engine.contracts import OutputContract

    contract = asked_contract("input.s", OutputContract(()), {"s": TARGETS})
    assert isinstance(contract, OutputContract)
    assert contract.structured
    shown = contract.response_format()
    assert shown is not None
    assert shown["json_schema"]["schema"] == TARGETS
    assert contract.parse('{"target": "x"}')[1] == ["target: 'x' is not one of ['intro', 'outro'] (schema 'input.s')"]
    assert contract.annotate({"target": "intro"}) == {"target": "intro"}


def test_a_dry_run_shows_the_request_with_the_run_inputs_schema(tmp_path: Path) -> None:
    from plait.compile import compile_file
    from plait.runs.dry_run import dry_run_on

    graph = compile_file(graph_file(tmp_path)).expanded
    assert graph is not None
    dry = asyncio.run(dry_run_on(graph, {"text": "x", "answer_schema": TARGETS}, None))
    shown = next(n for n in dry.nodes if n.node_id == "a").response_format
    assert shown is not None
    assert shown["json_schema"]["schema"]["properties"]["target"] == {"enum": ["intro", "outro"]}
