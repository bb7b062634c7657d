"""The checks around an LLM_CALL's model call: logic only, so the normal path spends no tokens.

- **Pre-check**, before the call (`checks.pre`): the inputs the node reads arrive typed as their
  edges' schemas say, and every path its prompts print unconditionally (outside `if`/`for`,
  without `default`) holds a value, unless its schema leaves that field optional (then it
  prints as nothing: `optional_paths`). A failure blocks the call (`precheck_failed`, with the
  reasons); the run's budget is checked before every call too (`budget`).
- **Post-check**, after an answer, beyond the out-edge schemas: JSON written inside a string
  where the schema wants an object or a list is read as that value (`checks.coerce_json`), and
  required fields must hold something, not "" or an empty list or object (`checks.non_empty`).
- **Judge** (`spj_prompt`): a model reads the instruction with the answer and says pass or fail
  with a reason.
A post-check or judge failure is fed back to the model like a schema error, within the node's
`max_retries`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from plait.caches import bounded, text_weight
from plait.compile.schema_validator import violations
from plait.compile.template_types import Segment
from plait.engine.contracts import OutputContract
from plait.engine.optional_paths import optional
from plait.engine.render import NodeView, PromptBudget, build_view, json_text, value_at
from plait.engine.state import RunState
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.graph import EdgeDef
from plait.model.nodes import LlmCallNode
from plait.model.output_meta import strip_meta

PROMPTS = ("system_prompt", "user_prompt_tpl")


# -- before the call ---------------------------------------------------------------------------------------


def precheck(node: LlmCallNode, state: RunState, view: NodeView) -> list[str]:
    """Why the node's model call would be wasted now, `view` being what its prompts see; empty:
    it may go out. Its parts, `input_problems` (each in-edge) and `unprinted` (each printed
    path), are what `plait run --dry-run` applies too, to the values it has for real
    (`plait.runs.dry_run`): a check added here belongs there as well."""
    typed = (problem for edge in state.compiled.in_edges[node.id] for problem in input_problems(edge, state))
    return [*typed, *(reason for _, reason in unprinted(node, state, view))]


def input_problems(edge: EdgeDef, state: RunState) -> list[str]:
    """Why the data `edge` carries now breaks the edge's schema (none for an edge without a
    schema, or not active)."""
    bound = state.compiled.edge_schema(edge)
    if bound is None or not state.edge_active(edge):
        return []
    source = state.nodes[edge.source_node_id]
    data = source.routed.get(edge.id, source.data) if edge.id in source.routed else source.data
    return [
        f"the input from '{edge.source_node_id}' breaks schema '{bound.entry.id}': {problem}"
        for problem in violations(bound.key, bound.registry, strip_meta(data))[:5]
    ]


def unprinted(node: LlmCallNode, state: RunState, view: NodeView) -> Iterator[tuple[tuple[Segment, ...], str]]:
    """Each path the node's prompts print unconditionally that holds nothing in `view` (no
    value, or "") where its schema does not leave the field optional, with the pre-check's reason."""
    for field in PROMPTS:
        text = getattr(node, field)
        if not text or ("{" not in text and "%" not in text):
            continue
        for path in printed(view.plan.template(text).source):
            value = value_at(view.names, path)
            if (value is None or value == "") and not optional(state, node, view.names, path):
                dotted = ".".join(str(p) for p in path)
                yield path, f"{field} prints '{dotted}', which is {'empty' if value == '' else 'missing'} in this run"


@bounded("paths templates print", max_bytes=4 << 20, weigh=text_weight)
def printed(source: str) -> tuple[tuple[Segment, ...], ...]:
    """`plait.compile.jinja_refs.printed_paths`, once per template."""
    from plait.compile.jinja_refs import printed_paths

    return tuple(printed_paths(source))


# -- after the call ----------------------------------------------------------------------------------------


def postcheck(node: LlmCallNode, contract: OutputContract, value: Any, problems: list[str]) -> tuple[Any, list[str]]:
    """The answer after the post-check: coerced where JSON was written inside a string, and the
    problems left (schema violations, then empty required fields)."""
    if not contract.structured:
        return value, problems
    schema = contract.combined()
    if problems and node.checks.coerce_json and value is not None:
        coerced = coerce_json(value, schema)
        if coerced is not value:
            value, problems = coerced, contract.violations(coerced)
    if not problems and node.checks.non_empty:
        problems = list(empty_required(value, schema))
    return value, problems


def _schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """`schema` and the members of its `allOf` (how several out-edge schemas combine)."""
    return [schema, *[s for s in schema.get("allOf", ()) if isinstance(s, dict)]]


def _wants(schema: dict[str, Any]) -> type | None:
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return dict
    if kind == "array" or "items" in schema:
        return list
    return None


def coerce_json(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with JSON text read where `schema` wants an object or a list (the same object when
    nothing changed)."""
    for part in _schemas(schema):
        wanted = _wants(part)
        if isinstance(value, str) and wanted is not None:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if isinstance(parsed, wanted):
                return coerce_json(parsed, part)
        if isinstance(value, dict) and isinstance(part.get("properties"), dict):
            changed = {
                key: coerce_json(item, part["properties"][key])
                for key, item in value.items()
                if isinstance(part["properties"].get(key), dict)
            }
            changed = {k: v for k, v in changed.items() if v is not value[k]}
            if changed:
                value = {**value, **changed}
        if isinstance(value, list) and isinstance(part.get("items"), dict):
            items = [coerce_json(item, part["items"]) for item in value]
            if any(new is not old for new, old in zip(items, value, strict=True)):
                value = items
    return value


def empty_required(value: Any, schema: dict[str, Any], at: str = "") -> Iterator[str]:
    """Each required field of `value` that holds only "" (or whitespace), [] or {}."""
    for part in _schemas(schema):
        found = part.get("properties")
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        if isinstance(value, dict):
            for key in part.get("required", ()):
                item = value.get(key)
                if key in value and (item in ([], {}) or (isinstance(item, str) and not item.strip())):
                    yield f"{at}{key}: is empty; a required field must hold a value"
            for key, sub in properties.items():
                if isinstance(sub, dict) and isinstance(value.get(key), dict | list):
                    yield from empty_required(value[key], sub, f"{at}{key}.")
        if isinstance(value, list) and isinstance(part.get("items"), dict):
            for index, item in enumerate(value):
                yield from empty_required(item, part["items"], f"{at}[{index}].")


# -- the judge ---------------------------------------------------------------------------------------------

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
JUDGE_SYSTEM = (
    "You check an answer against an instruction. Reply with JSON only: "
    '{"verdict": "pass" or "fail", "reason": one sentence}.'
)


def judge_request(node: LlmCallNode, instruction: str, answer: Any) -> ChatRequest:
    """The question put to the judge: `instruction` (`spj_prompt` rendered), then the answer to judge."""
    return ChatRequest(
        node_id=node.id,
        messages=[
            {"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"Instruction: {instruction}\n\nThe answer:\n{json_text(strip_meta(answer))}"},
        ],
        model_role=node.model_role,
        model=node.model_id_override,
        response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT}},
        temperature=0.0,
        timeout_s=node.timeout_s,
    )


async def judged(
    node: LlmCallNode, state: RunState, answer: Any, send: Callable[[ChatRequest], Awaitable[ChatResponse]]
) -> str | None:
    """The judge's reason when it fails the answer, None when it passes it (an answer it gives
    that is not a verdict counts as a fail, saying so)."""
    assert node.spj_prompt is not None
    instruction = await build_view(state, node).arender(node.spj_prompt, PromptBudget(remaining=None))
    response = await send(judge_request(node, instruction, answer))
    try:
        verdict = json.loads(response.content or "")
    except ValueError:
        return f"the judge's answer is not a verdict: {(response.content or '')[:200]!r}"
    if not isinstance(verdict, dict) or verdict.get("verdict") not in ("pass", "fail"):
        return f"the judge's answer is not a verdict: {str(verdict)[:200]}"
    return None if verdict["verdict"] == "pass" else str(verdict.get("reason") or "no reason given")
