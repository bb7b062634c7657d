"""Checks around an LLM_CALL (pre-check, post-check, judge) and the repair hook, on the scripted
provider: what each check blocks, what it feeds back, what the repair model's diagnosis does,
and what is recorded on the node run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from plait.engine.events import RepairDiagnosing
from plait.engine.runner import Engine, RunOutcome
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_engine import calls, graph_file, nodes_of, script

TITLE = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
LISTING = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "integer"}}, "title": {"type": "string"}},
    "required": ["items", "title"],
}
TOPIC = {"type": "object"}
"""Says nothing of `topic`: a prompt printing it without a value is blocked (no schema lets it be missing)."""


def titled(tmp_path: Path, node: dict[str, Any], schema: dict[str, Any] = TITLE) -> str:
    base = {"id": "write", "type": "LLM_CALL", "user_prompt_tpl": "A title about {{ input.topic }}"}
    return graph_file(
        tmp_path,
        [{**base, **node}],
        [{"source": "write", "target": "END", "schema_id": "answer"}],
        schemas=[{"id": "answer", "schema": schema}],
        input_schema=TOPIC,
    )


def recorded(provider: Any) -> list[Any]:
    """Every request `provider` is sent, from now on."""
    seen: list[Any] = []
    complete = provider.complete

    async def recording(request: Any) -> Any:
        seen.append(request)
        return await complete(request)

    provider.complete = recording
    return seen


def run(
    store: Store, graph: str, provider: Any, run_input: dict[str, Any], events: list[Any] | None = None
) -> RunOutcome:
    run_id = start_run(store, graph, run_input)

    async def go() -> RunOutcome:
        engine = Engine(store, provider)
        if events is not None:
            engine.events.subscribe(events.append)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


# -- pre-check -----------------------------------------------------------------------------------------------


def test_a_prompt_printing_a_missing_value_is_blocked_before_any_token_is_spent(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"node": "write", "output": {"title": "t"}}])
    outcome = run(store, titled(tmp_path, {}), provider, {})
    assert outcome.status == RunStatus.FAILED
    write = nodes_of(store, outcome.run_id)["write"]
    assert write.error["kind"] == "precheck_failed"
    assert write.error["details"] == ["user_prompt_tpl prints 'input.topic', which is missing in this run"]
    assert write.input_snapshot["precheck"] == {"passed": False, "reasons": write.error["details"]}
    assert (write.tokens_input, write.tokens_output, write.attempts) == (0, 0, [])
    assert calls(tmp_path) == []  # the model was never called


def test_a_guarded_path_and_a_default_pass_the_pre_check(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"node": "write", "output": {"title": "t"}}])
    prompt = "A title{% if input.topic %} about {{ input.topic }}{% endif %} on {{ input.topic | default('anything') }}"
    outcome = run(store, titled(tmp_path, {"user_prompt_tpl": prompt}), provider, {})
    assert outcome.status == RunStatus.COMPLETED
    assert nodes_of(store, outcome.run_id)["write"].input_snapshot["precheck"]["passed"] is True


def test_the_pre_check_can_be_switched_off(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"node": "write", "output": {"title": "t"}}])
    outcome = run(store, titled(tmp_path, {"checks": {"pre": False}}), provider, {})
    assert outcome.status == RunStatus.COMPLETED
    assert len(calls(tmp_path)) == 1


# -- post-check ----------------------------------------------------------------------------------------------


def test_an_empty_required_field_is_fed_back_and_asked_again(store: Store, tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        [{"node": "write", "output": {"title": "  "}, "times": 1}, {"node": "write", "output": {"title": "Birds"}}],
    )
    sent = recorded(provider)
    outcome = run(store, titled(tmp_path, {"max_retries": 1}), provider, {"topic": "birds"})
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"title": "Birds"}
    first = nodes_of(store, outcome.run_id)["write"].attempts[0]
    assert first["violations"] == ["title: is empty; a required field must hold a value"]
    assert "title: is empty" in sent[1].messages[-1]["content"]  # told what was wrong


def test_an_empty_required_field_fails_the_node_once_retries_are_spent(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"node": "write", "output": {"title": ""}}])
    outcome = run(store, titled(tmp_path, {}), provider, {"topic": "birds"})
    error = nodes_of(store, outcome.run_id)["write"].error
    assert error["kind"] == "postcheck"
    assert error["message"] == "the model's answer has empty required fields"
    off = run(store, titled(tmp_path, {"checks": {"non_empty": False}}), provider, {"topic": "birds"})
    assert off.status == RunStatus.COMPLETED


def test_json_written_inside_a_string_is_read_as_the_value(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"node": "write", "output": {"items": "[1, 2, 3]", "title": "t"}}])
    outcome = run(store, titled(tmp_path, {}, LISTING), provider, {"topic": "birds"})
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"items": [1, 2, 3], "title": "t"}
    no_coercion = run(store, titled(tmp_path, {"checks": {"coerce_json": False}}, LISTING), provider, {"topic": "b"})
    assert nodes_of(store, no_coercion.run_id)["write"].error["kind"] == "schema"


# -- the judge -----------------------------------------------------------------------------------------------


def test_the_judge_fails_an_answer_with_a_reason_and_the_next_answer_passes(store: Store, tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        [
            {
                "node": "write",
                "match": "Instruction:",
                "output": {"verdict": "fail", "reason": "too vague"},
                "times": 1,
            },
            {"node": "write", "match": "Instruction:", "output": {"verdict": "pass", "reason": "concrete"}},
            {"node": "write", "output": {"title": "Things"}, "times": 1},
            {"node": "write", "output": {"title": "Six birdhouses from one board"}},
        ],
    )
    node = {"spj_prompt": "The title must be concrete, about {{ input.topic }}.", "max_retries": 1}
    sent = recorded(provider)
    outcome = run(store, titled(tmp_path, node), provider, {"topic": "birdhouses"})
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"title": "Six birdhouses from one board"}
    write = nodes_of(store, outcome.run_id)["write"]
    assert [bool(a.get("judge")) for a in write.attempts] == [False, True, False, True]
    assert write.attempts[0]["violations"] == ["a reviewer rejected the answer: too vague"]
    judged = [r for r in sent if "Instruction:" in r.messages[-1]["content"]]
    assert "about birdhouses" in judged[0].messages[-1]["content"]  # spj_prompt is a template


# -- the repair hook -----------------------------------------------------------------------------------------


DIAGNOSE = "rendered_user_prompt"  # only the repair model's question holds it


def test_a_confident_fix_is_applied_for_one_more_try_and_recorded(store: Store, tmp_path: Path) -> None:
    fix = {
        "action": "fix",
        "config_overrides": {"user_prompt_tpl": "Reply with a JSON title about {{ input.topic }}"},
        "explanation": "ask for JSON",
        "confidence": 0.8,
    }
    provider = script(
        tmp_path,
        [
            {"node": "write", "match": DIAGNOSE, "output": fix},
            {"node": "write", "match": "Reply with a JSON title", "output": {"title": "Birds"}},
            {"node": "write", "text": "Birds, I think"},
        ],
    )
    events: list[Any] = []
    outcome = run(store, titled(tmp_path, {"repair": True}), provider, {"topic": "birds"}, events)
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"title": "Birds"}
    write = nodes_of(store, outcome.run_id)["write"]
    repair = write.input_snapshot["repair"]
    assert repair["applied"] is True
    assert repair["config_overrides"] == fix["config_overrides"]
    assert repair["first_error"]["kind"] == "schema"
    assert [bool(a.get("repair")) for a in write.attempts] == [False, True, False]
    assert write.input_snapshot["rendered_user_prompt"] == "Reply with a JSON title about birds"
    diagnosing = [e for e in events if isinstance(e, RepairDiagnosing)]
    assert [(e.node_id, e.error_kind) for e in diagnosing] == [("write", "schema")]


def test_a_fix_under_the_confidence_threshold_is_not_applied(store: Store, tmp_path: Path) -> None:
    fix = {"action": "fix", "config_overrides": {"temperature_override": 0.1}, "explanation": "?", "confidence": 0.3}
    provider = script(tmp_path, [{"node": "write", "match": DIAGNOSE, "output": fix}, {"node": "write", "text": "no"}])
    outcome = run(store, titled(tmp_path, {"repair": True}), provider, {"topic": "birds"})
    write = nodes_of(store, outcome.run_id)["write"]
    assert write.status == NodeStatus.FAILED
    assert write.input_snapshot["repair"]["not_applied"] == "its confidence 0.3 is under 0.5"
    assert "(repair: fix: its confidence 0.3 is under 0.5)" in write.error["message"]


def test_giveup_fails_the_node_with_the_explanation(store: Store, tmp_path: Path) -> None:
    giveup = {"action": "giveup", "explanation": "the model cannot write JSON", "confidence": 0.9}
    provider = script(
        tmp_path, [{"node": "write", "match": DIAGNOSE, "output": giveup}, {"node": "write", "text": "x"}]
    )
    outcome = run(store, titled(tmp_path, {"repair": True}), provider, {"topic": "birds"})
    assert outcome.status == RunStatus.FAILED
    error = nodes_of(store, outcome.run_id)["write"].error
    assert error["message"].endswith("(repair: giveup: the model cannot write JSON)")


def test_escalate_pauses_the_run_for_a_person_who_answers_with_a_review(store: Store, tmp_path: Path) -> None:
    from plait.runs.corrections import Corrections

    escalate = {"action": "escalate", "explanation": "the topic is not a topic", "confidence": 0.9}
    provider = script(
        tmp_path, [{"node": "write", "match": DIAGNOSE, "output": escalate}, {"node": "write", "text": "?"}]
    )
    outcome = run(store, titled(tmp_path, {"repair": True}), provider, {"topic": "???"})
    assert outcome.status == RunStatus.PAUSED
    write = nodes_of(store, outcome.run_id)["write"]
    assert write.status == NodeStatus.PENDING
    assert write.input_snapshot["escalated"] == "the topic is not a topic"
    Corrections(store).review(outcome.run_id, "write", {"title": "A title a person wrote"})

    async def go() -> RunOutcome:
        engine = Engine(store, provider)
        try:
            return await engine.run(outcome.run_id)
        finally:
            await engine.aclose()

    done = asyncio.run(go())
    assert done.status == RunStatus.COMPLETED
    assert done.output == {"title": "A title a person wrote"}


def test_a_pre_check_failure_goes_to_the_repair_hook_too(store: Store, tmp_path: Path) -> None:
    fix = {
        "action": "fix",
        "config_overrides": {"user_prompt_tpl": "A title about {{ input.topic | default('anything') }}"},
        "explanation": "give the topic a default",
        "confidence": 0.9,
    }
    provider = script(
        tmp_path, [{"node": "write", "match": DIAGNOSE, "output": fix}, {"node": "write", "output": {"title": "t"}}]
    )
    outcome = run(store, titled(tmp_path, {"repair": True}), provider, {})
    assert outcome.status == RunStatus.COMPLETED
    assert nodes_of(store, outcome.run_id)["write"].input_snapshot["repair"]["first_error"]["kind"] == "precheck_failed"
