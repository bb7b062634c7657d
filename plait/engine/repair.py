"""The repair hook: when an LLM_CALL's check fails for good, a model is asked why.

Only on failure (the normal path spends nothing), and only for failures a change of the node's
configuration can help: a pre-check, the out-edge schema, a post-check, the judge. The model is
shown the node's prompts and settings, the error and the last answer, and answers under a
schema with one of:

- `fix {config_overrides, explanation, confidence}`: with `confidence` at least the hook's
  `min_confidence` (0.5), the overrides (prompts, temperature, max tokens) are applied to the
  node for one more try, recorded on the node run;
- `escalate {explanation}`: the input or the data is wrong, a person must look: the run pauses
  at the node (answer it with `plait review`);
- `giveup {explanation}`: the node fails with its error and the explanation.

Its attempt, tokens and cost are the node run's, like any model call of the node.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from plait.compile.template_types import TemplateError
from plait.compile.templates import parse_template
from plait.engine.runtime import NodeResult
from plait.engine.state import Phase
from plait.llm.types import ChatRequest, ChatResponse, ProviderError
from plait.model.nodes import LlmCallNode

Send = Callable[[ChatRequest, list[dict[str, Any]], dict[str, Any]], Awaitable[ChatResponse]]
"""Sends the repair model's request as one more attempt of the node run, adding its usage."""

REPAIRABLE = frozenset({"precheck_failed", "schema", "postcheck", "judge"})
"""Failure kinds a change of configuration can help (not a provider's fault or a timeout)."""

FIXABLE = {
    "system_prompt": {"type": "string"},
    "user_prompt_tpl": {"type": "string", "minLength": 1},
    "temperature_override": {"type": "number", "minimum": 0, "maximum": 2},
    "max_tokens_override": {"type": "integer", "minimum": 1, "maximum": 32768},
}
DIAGNOSIS = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["fix", "escalate", "giveup"]},
        "config_overrides": {"type": "object", "properties": FIXABLE, "additionalProperties": False},
        "explanation": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["action", "explanation", "confidence"],
    "additionalProperties": False,
}
SYSTEM = (
    "You diagnose why a step of an LLM pipeline failed its checks. Answer with JSON only: "
    '{"action": "fix" | "escalate" | "giveup", "config_overrides": {...}, "explanation": "...", '
    '"confidence": 0..1}. Use "fix" when a change of the step\'s prompts or settings would make its '
    "answer pass (give only the fields to change: system_prompt, user_prompt_tpl, temperature_override, "
    'max_tokens_override; templates keep their {{ ... }} references), "escalate" when the input data '
    'is wrong and a person must look, "giveup" when you cannot tell.'
)


@dataclass
class Diagnosis:
    """What the repair model said, as recorded on the node run."""

    action: str
    explanation: str
    confidence: float
    overrides: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "explanation": self.explanation,
            "confidence": self.confidence,
            "config_overrides": self.overrides,
        }


def diagnosis_request(node: LlmCallNode, snapshot: dict[str, Any], error: dict[str, Any]) -> ChatRequest:
    """The question put to the repair model about `node`'s failure."""
    assert node.repair is not None
    facts = {
        "node": node.id,
        "system_prompt": node.system_prompt,
        "user_prompt_tpl": node.user_prompt_tpl,
        "temperature_override": node.temperature_override,
        "max_tokens_override": node.max_tokens_override,
        "rendered_user_prompt": str(snapshot.get("rendered_user_prompt") or "")[:4000],
        "expected_schema": (snapshot.get("response_format") or {}).get("json_schema", {}).get("schema"),
        "error": {k: error.get(k) for k in ("kind", "message", "details")},
        "last_answer": str(error.get("last_output") or "")[:4000],
    }
    return ChatRequest(
        node_id=node.id,
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": json.dumps(facts, ensure_ascii=False, default=str)},
        ],
        model_role=node.repair.model_role,
        response_format={"type": "json_schema", "json_schema": {"name": "diagnosis", "schema": DIAGNOSIS}},
        temperature=0.0,
        timeout_s=node.timeout_s,
    )


def read_diagnosis(content: str | None) -> Diagnosis:
    """The repair model's answer; one that is not a diagnosis reads as `giveup`, saying so."""
    try:
        data = json.loads(content or "")
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("action") not in ("fix", "escalate", "giveup"):
        return Diagnosis("giveup", f"the repair model's answer is not a diagnosis: {(content or '')[:200]!r}", 0.0)
    given = data.get("config_overrides")
    overrides: dict[str, Any] = given if isinstance(given, dict) else {}
    confidence = data.get("confidence")
    return Diagnosis(
        str(data["action"]),
        str(data.get("explanation") or ""),
        float(confidence) if isinstance(confidence, int | float) and not isinstance(confidence, bool) else 0.0,
        {k: v for k, v in overrides.items() if k in FIXABLE},
    )


def patched(node: LlmCallNode, diagnosis: Diagnosis) -> LlmCallNode | str:
    """`node` with the fix applied, or why the fix cannot be applied (a template that does not
    parse, a value out of range, nothing to change)."""
    if not diagnosis.overrides:
        return "the fix changes nothing"
    for name in ("system_prompt", "user_prompt_tpl"):
        text = diagnosis.overrides.get(name)
        if text is not None:
            try:
                parse_template(str(text))
            except TemplateError as exc:
                return f"the fixed {name} does not parse: {exc}"
    try:
        return LlmCallNode.model_validate({**node.model_dump(), **diagnosis.overrides, "repair": None})
    except ValueError as exc:
        return f"the fix is not a valid configuration: {exc}"


async def repaired(
    node: LlmCallNode, failed: NodeResult, send: Send, again: Callable[[LlmCallNode], Awaitable[NodeResult]]
) -> NodeResult:
    """Ask the repair model about `failed` and act on its diagnosis: the result of one more try
    with the fix (`again`), a node waiting for a person (escalate), or `failed` with the
    diagnosis recorded (giveup, a low confidence, a fix that cannot be applied)."""
    assert node.repair is not None
    assert failed.error is not None
    usage: dict[str, Any] = {
        "tokens_input": failed.tokens_input,
        "tokens_output": failed.tokens_output,
        "cost_usd": failed.cost_usd,
    }
    attempts = list(failed.attempts)
    try:
        diagnosis = read_diagnosis(
            (await send(diagnosis_request(node, failed.snapshot, failed.error), attempts, usage)).content
        )
    except (ProviderError, TimeoutError) as exc:
        diagnosis = Diagnosis("giveup", f"the repair model could not be asked: {exc or 'timed out'}", 0.0)
    snapshot = {**failed.snapshot, "repair": diagnosis.record()}
    if diagnosis.action == "escalate":
        snapshot.update(
            escalated=diagnosis.explanation,
            review_prompt=f"escalated by the repair hook: {diagnosis.explanation}",
            value=failed.error.get("last_output"),
        )
        return NodeResult(Phase.WAITING, snapshot=snapshot, attempts=attempts, **usage)
    fix: LlmCallNode | str = diagnosis.explanation or "no explanation given"
    if diagnosis.action == "fix":
        fix = patched(node, diagnosis)
        if diagnosis.confidence < node.repair.min_confidence:
            fix = f"its confidence {diagnosis.confidence} is under {node.repair.min_confidence}"
    if isinstance(fix, str):
        snapshot["repair"]["not_applied"] = fix
        message = f"{failed.error.get('message')} (repair: {diagnosis.action}: {fix})"
        return replace(
            failed, snapshot=snapshot, attempts=attempts, error={**failed.error, "message": message}, **usage
        )
    retried = await again(fix)
    retried.snapshot["repair"] = {**diagnosis.record(), "applied": True, "first_error": failed.error}
    retried.attempts = [*attempts, *retried.attempts]
    retried.tokens_input += int(usage["tokens_input"])
    retried.tokens_output += int(usage["tokens_output"])
    retried.cost_usd += float(usage["cost_usd"])
    return retried
