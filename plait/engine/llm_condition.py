"""A CONDITION decided by a model (`condition_llm`): the model picks one of the node's choices.

The question is asked as an LLM_CALL would ask it (the same rendering, provider pool, retries
with the problems fed back, cache and recorded attempts, tokens and cost), under a schema that
allows exactly the choices: `{"branch": one of them}`. The node's output is that `{branch}`,
which selects the out-edges by `condition_key` like a `condition_expr`'s value.
"""

from __future__ import annotations

from plait.engine.contracts import BoundSchema, OutputContract
from plait.engine.llm_call import ask
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import Phase, RunState
from plait.model.nodes import ConditionLlm, ConditionNode, LlmCallNode, NodeBase, node_field

CHOICE_SCHEMA_ID = "condition_choice"


def asker(node: NodeBase) -> LlmCallNode | None:
    """The model call a CONDITION with `condition_llm` makes (None for one with an expression)."""
    decided_by: ConditionLlm | None = node_field(node, "condition_llm", None)
    if decided_by is None:
        return None
    return LlmCallNode(
        id=node.id,
        system_prompt=decided_by.system_text(),
        user_prompt_tpl=decided_by.prompt,
        model_role=decided_by.model_role,
        max_retries=decided_by.max_retries,
        timeout_s=node.timeout_s,
        context_include=node.context_include,
    )


def choice_contract(decided_by: ConditionLlm) -> OutputContract:
    """The only answers allowed: `{"branch": one of the choices}`."""
    schema = {
        "type": "object",
        "properties": {"branch": {"type": "string", "enum": list(decided_by.choices)}},
        "required": ["branch"],
        "additionalProperties": False,
    }
    return OutputContract((BoundSchema(CHOICE_SCHEMA_ID, "1.0.0", schema),))


async def run_llm_condition(node: ConditionNode, state: RunState, rt: Runtime) -> NodeResult:
    """CONDITION with `condition_llm`: ask the model; the output is `{"branch": its choice}`."""
    call, decided_by = asker(node), node.condition_llm
    assert call is not None
    assert decided_by is not None
    result = await ask(call, choice_contract(decided_by), state, rt)
    result.snapshot["node_type"] = str(node.type)
    if result.phase == Phase.COMPLETED:
        result.output = {"branch": result.output["branch"]}
    return result
