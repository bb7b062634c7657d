"""The repair hook: when a node with `repair` fails for good, a model is asked why.

Only on failure (the normal path spends nothing). What the model is shown, and what it may
answer, depend on what failed (`question_for`):

- an LLM_CALL's check (a pre-check, the out-edge schema, a post-check, the judge): a change of
  the node's configuration can help, so the model is shown the node's prompts and settings, the
  error and the last answer, and may answer `fix`, `escalate` or `giveup`;
- an LLM_CALL's provider fault (its last call failed with a provider error or timed out, its
  retries spent): no prompt change helps, and trying again is the retry policy's work, not the
  model's: it is shown the failed calls and may answer `escalate` or `giveup`;
- a TOOL or CODE failure (a program that exited non-zero, timed out or printed no JSON, code that
  threw, an output its schema refuses): there is no prompt or setting to change, so it is shown
  the command or the code, the error and the output, and may answer `escalate` or `giveup`.

Other failures (a budget, an MCP server, a prompt script) are not diagnosed. The answers:

- `fix {config_overrides, explanation, confidence}`: with `confidence` at least the hook's
  `min_confidence` (0.5), the overrides (prompts, temperature, max tokens) are applied to the
  node for one more try, recorded on the node run;
- `escalate {explanation}`: a person must look: the run pauses at the node, which waits for its
  output (`plait review RUN NODE --file F`, or `plait override` with the output);
- `giveup {explanation}`: the node fails with its error and the explanation.

The model answers under a schema that offers only the actions that apply (`diagnosis_schema`).
Its attempt, tokens and cost are the node run's, like any model call of the node.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from plait.compile.template_types import TemplateError
from plait.compile.templates import parse_template
from plait.engine.events import RepairDiagnosing
from plait.engine.model_calls import model_call, new_attempt
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import Phase, RunState
from plait.llm.types import ChatRequest, ChatResponse, ProviderError
from plait.model.nodes import CodeNode, LlmCallNode, NodeBase, ToolNode

Repairable = LlmCallNode | ToolNode | CodeNode
"""The node types that may declare `repair`."""
Send = Callable[[ChatRequest, list[dict[str, Any]], dict[str, Any]], Awaitable[ChatResponse]]
"""Sends the repair model's request as one more attempt of the node run, adding its usage."""
Again = Callable[[LlmCallNode], Awaitable[NodeResult]]
"""Runs an LLM_CALL once more, with a fix applied."""
Executor = Callable[[NodeBase, RunState, Runtime], Awaitable[NodeResult]]

CHECK_FAILURES = frozenset({"precheck_failed", "schema", "postcheck", "judge"})
"""An LLM_CALL's failure kinds a change of its configuration can help."""
FIX, ESCALATE, GIVEUP = "fix", "escalate", "giveup"
WITH_FIX = (FIX, ESCALATE, GIVEUP)
HAND_OVER = (ESCALATE, GIVEUP)
"""What the model may answer where no change of configuration helps: a person, or the end."""
_TEXT = 4000
"""Characters of a prompt, an answer, code or an output the repair model is shown."""

FIXABLE = {
    "system_prompt": {"type": "string"},
    "user_prompt_tpl": {"type": "string", "minLength": 1},
    "temperature_override": {"type": "number", "minimum": 0, "maximum": 2},
    "max_tokens_override": {"type": "integer", "minimum": 1, "maximum": 32768},
}
_ANSWER = (
    "Answer with JSON only: "
    '{"action": "escalate" | "giveup", "explanation": "...", "confidence": 0..1}. Say in the explanation '
    "what went wrong and what would fix it."
)
CHECK_SYSTEM = (
    "You diagnose why a step of an LLM pipeline failed its checks. Answer with JSON only: "
    '{"action": "fix" | "escalate" | "giveup", "config_overrides": {...}, "explanation": "...", '
    '"confidence": 0..1}. Use "fix" when a change of the step\'s prompts or settings would make its '
    "answer pass (give only the fields to change: system_prompt, user_prompt_tpl, temperature_override, "
    'max_tokens_override; templates keep their {{ ... }} references), "escalate" when the input data '
    'is wrong and a person must look, "giveup" when you cannot tell.'
)
PROVIDER_SYSTEM = (
    "You diagnose why a step of an LLM pipeline got no answer from its model provider: its calls "
    'failed and its retries are spent. Use "escalate" when a person can unblock the step (supply its '
    "answer, fix the provider's configuration, wait for the service to come back) and the run should "
    'wait for them, "giveup" when the step should fail. Changing the prompts or retrying is not '
    f"yours to offer. {_ANSWER}"
)
PROGRAM_SYSTEM = (
    "You diagnose why a step of a pipeline that runs a program or code failed. There is no prompt "
    'to change. Use "escalate" when the input data looks wrong or a person can supply the step\'s '
    'output, so the run waits for them; "giveup" when the program or the code itself is at fault '
    f"and the step should fail. {_ANSWER}"
)


def diagnosis_schema(actions: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema the repair model answers under: one of `actions`, with `config_overrides`
    only where `fix` is one of them (a model cannot be asked for what would not be applied)."""
    properties: dict[str, Any] = {"action": {"type": "string", "enum": list(actions)}}
    if FIX in actions:
        properties["config_overrides"] = {"type": "object", "properties": FIXABLE, "additionalProperties": False}
    properties["explanation"] = {"type": "string"}
    properties["confidence"] = {"type": "number", "minimum": 0, "maximum": 1}
    return {
        "type": "object",
        "properties": properties,
        "required": ["action", "explanation", "confidence"],
        "additionalProperties": False,
    }


@dataclass(frozen=True, slots=True)
class Question:
    """What the repair model is asked about one failure: its instruction, the facts, and the
    actions it may answer."""

    system: str
    facts: dict[str, Any]
    actions: tuple[str, ...]


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


def provider_fault(failed: NodeResult) -> bool:
    """Whether an LLM_CALL failed because its last model call did (a provider error or a timeout,
    its retries spent): that call's error is the node's. A budget, an MCP server or a check that
    failed after an earlier fault is no provider fault."""
    last = failed.attempts[-1] if failed.attempts else {}
    kind = (failed.error or {}).get("kind")
    return kind is not None and last.get("kind") == kind and not last.get("repair")


def question_for(node: Repairable, failed: NodeResult, expected: Any = None) -> Question | None:
    """What the repair model is asked about `failed`, or None when it is not a failure it
    diagnoses. `expected`: the out-edge schema a TOOL or CODE output must meet (None: any)."""
    error = failed.error or {}
    if not isinstance(node, LlmCallNode):
        return Question(PROGRAM_SYSTEM, _program_facts(node, failed, expected), HAND_OVER)
    if error.get("kind") in CHECK_FAILURES:
        return Question(CHECK_SYSTEM, _check_facts(node, failed.snapshot, error), WITH_FIX)
    if provider_fault(failed):
        return Question(PROVIDER_SYSTEM, _provider_facts(node, failed), HAND_OVER)
    return None


def _said(error: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k in ("kind", "message", "details") if (v := (error or {}).get(k)) is not None}


def _provider_facts(node: LlmCallNode, failed: NodeResult) -> dict[str, Any]:
    calls = [
        {"attempt": a.get("attempt"), "kind": a.get("kind"), "error": _cut(a.get("error"), 500)}
        for a in failed.attempts
        if "kind" in a
    ]
    return {
        "node": node.id,
        "model_role": node.model_role,
        "model": node.model_id_override,
        "timeout_s": node.timeout_s,
        "max_retries": node.max_retries,
        "prompt_chars": len(str(failed.snapshot.get("rendered_user_prompt") or "")),
        "error": _said(failed.error),
        "failed_calls": calls[-10:],
    }


def _program_facts(node: ToolNode | CodeNode, failed: NodeResult, expected: Any) -> dict[str, Any]:
    snapshot, last = failed.snapshot, (failed.attempts[-1] if failed.attempts else {})
    facts: dict[str, Any] = {"node": node.id, "type": str(node.type)}
    if isinstance(node, ToolNode):
        facts["command"] = node.command
        facts["argv"] = snapshot.get("argv")
        facts["stdin"] = _cut(snapshot.get("stdin"))
        facts["parse"] = node.parse
        facts["exit_code"] = last.get("exit_code")
        facts["stderr"] = _cut(last.get("stderr"))
    else:
        facts["language"] = node.language
        facts["code"] = _cut(node.code)
        facts["current"] = _cut(_json((snapshot.get("state") or {}).get("current")))
    facts["error"] = _said(failed.error)
    facts["output"] = _cut(_json((failed.error or {}).get("last_output")))
    facts["expected_schema"] = expected
    return facts


def _check_facts(node: LlmCallNode, snapshot: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
    return {
        "node": node.id,
        "system_prompt": node.system_prompt,
        "user_prompt_tpl": node.user_prompt_tpl,
        "temperature_override": node.temperature_override,
        "max_tokens_override": node.max_tokens_override,
        "rendered_user_prompt": str(snapshot.get("rendered_user_prompt") or "")[:_TEXT],
        "expected_schema": (snapshot.get("response_format") or {}).get("json_schema", {}).get("schema"),
        "error": {k: error.get(k) for k in ("kind", "message", "details")},
        "last_answer": str(error.get("last_output") or "")[:_TEXT],
    }


def _cut(text: Any, limit: int = _TEXT) -> str | None:
    return None if text is None else str(text)[:limit]


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


def diagnosis_request(node: Repairable, question: Question) -> ChatRequest:
    """The question put to the repair model about `node`'s failure."""
    assert node.repair is not None
    schema = diagnosis_schema(question.actions)
    return ChatRequest(
        node_id=node.id,
        messages=[
            {"role": "system", "content": question.system},
            {"role": "user", "content": json.dumps(question.facts, ensure_ascii=False, default=str)},
        ],
        model_role=node.repair.model_role,
        response_format={"type": "json_schema", "json_schema": {"name": "diagnosis", "schema": schema}},
        temperature=0.0,
        timeout_s=node.timeout_s if isinstance(node, LlmCallNode) else None,
    )


def read_diagnosis(content: str | None, actions: Sequence[str] = WITH_FIX) -> Diagnosis:
    """The repair model's answer; one that is not a diagnosis, or names an action not offered,
    reads as `giveup`, saying so."""
    try:
        data = json.loads(content or "")
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("action") not in actions:
        offered = " | ".join(actions)
        return Diagnosis(
            GIVEUP, f"the repair model's answer is not a diagnosis ({offered}): {(content or '')[:200]!r}", 0.0
        )
    given = data.get("config_overrides")
    overrides: dict[str, Any] = given if isinstance(given, dict) and FIX in actions else {}
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


async def diagnosed(
    node: NodeBase, failed: NodeResult, state: RunState, rt: Runtime, again: Again | None = None
) -> NodeResult:
    """`failed` as the node's repair hook leaves it (`repaired`), when the node has `repair` and
    the failure is one it diagnoses; any other result as it is. `again` runs an LLM_CALL once
    more with a fix applied."""
    if not isinstance(node, Repairable) or node.repair is None or failed.phase != Phase.FAILED:
        return failed
    expected = None
    if not isinstance(node, LlmCallNode):
        contract = state.compiled.contracts[node.id]
        expected = contract.combined() if contract.structured else None
    question = question_for(node, failed, expected)
    if question is None:
        return failed

    role = node.repair.model_role

    async def send(request: ChatRequest, attempts: list[dict[str, Any]], usage: dict[str, Any]) -> ChatResponse:
        if rt.provider is None:  # a TOOL or CODE run needs none until its repair model is asked
            raise ProviderError(
                f"no model provider is configured to serve its role '{role}': pass --llm, or configure one in "
                "plait.toml",
                retryable=False,
            )
        return await model_call(rt, state, request, 0.0, usage, new_attempt(attempts, repair=True))

    rt.emit(RepairDiagnosing(state.run_id, node.id, error_kind=(failed.error or {}).get("kind")))
    return await repaired(node, failed, question, send, again)


def repairable(execute: Executor) -> Executor:
    """`execute` (a TOOL or CODE executor) with the node's repair hook on its failures."""

    async def run(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
        return await diagnosed(node, await execute(node, state, rt), state, rt)

    return run


async def repaired(
    node: Repairable, failed: NodeResult, question: Question, send: Send, again: Again | None = None
) -> NodeResult:
    """Ask the repair model `question` about `failed` and act on its diagnosis: the result of one
    more try with the fix (`again`), a node waiting for a person (escalate), or `failed` with the
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
        answer = await send(diagnosis_request(node, question), attempts, usage)
        diagnosis = read_diagnosis(answer.content, question.actions)
    except (ProviderError, TimeoutError) as exc:
        diagnosis = Diagnosis(GIVEUP, f"the repair model could not be asked: {exc or 'timed out'}", 0.0)
    snapshot = {**failed.snapshot, "repair": diagnosis.record()}
    if diagnosis.action == ESCALATE:
        snapshot["repair"]["first_error"] = failed.error  # the node run has no error while it waits
        snapshot.update(
            escalated=diagnosis.explanation,
            review_prompt=f"escalated by the repair hook: {diagnosis.explanation} "
            f"(the node failed: {failed.error.get('message')})",
            value=failed.error.get("last_output"),
        )
        return NodeResult(Phase.WAITING, snapshot=snapshot, attempts=attempts, **usage)
    fix: LlmCallNode | str = diagnosis.explanation or "no explanation given"
    if diagnosis.action == FIX and isinstance(node, LlmCallNode) and again is not None:
        fix = patched(node, diagnosis)
        if diagnosis.confidence < node.repair.min_confidence:
            fix = f"its confidence {diagnosis.confidence} is under {node.repair.min_confidence}"
    if isinstance(fix, str):
        snapshot["repair"]["not_applied"] = fix
        message = f"{failed.error.get('message')} (repair: {diagnosis.action}: {fix})"
        return replace(
            failed, snapshot=snapshot, attempts=attempts, error={**failed.error, "message": message}, **usage
        )
    assert again is not None
    retried = await again(fix)
    retried.snapshot["repair"] = {**diagnosis.record(), "applied": True, "first_error": failed.error}
    retried.attempts = [*attempts, *retried.attempts]
    retried.tokens_input += int(usage["tokens_input"])
    retried.tokens_output += int(usage["tokens_output"])
    retried.cost_usd += float(usage["cost_usd"])
    return retried
