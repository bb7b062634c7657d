"""Node definitions: one class per node type, a discriminated union on `type`.

Each class lists exactly the fields that mean something for its type, so a
`condition_expr` on an LLM_CALL is a validation error rather than dead config.
Fields shared by every type live on `NodeBase`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BeforeValidator, Field, model_validator

from plait.model.common import (
    Identifier,
    NonEmptyStr,
    PlaitModel,
)
from plait.model.knowledge_nodes import ChunkNode, IndexNode, ParseNode, RetrieveNode
from plait.model.node_base import INPUT_PATH
from plait.model.node_base import FreezeSpec as FreezeSpec
from plait.model.node_base import NodeBase as NodeBase
from plait.model.node_base import NodeType as NodeType
from plait.model.node_base import SkillScope as SkillScope
from plait.model.tools import McpPromptRef, McpResourceRef, McpServerRef, ToolChoice, ToolDef


class FewshotSelection(StrEnum):
    """Which earlier corrections an LLM_CALL node takes as few-shot examples (docs/corrections.md)."""

    LATEST = "latest"
    RANDOM = "random"
    SIMILAR = "similar"


class ContextOverflow(StrEnum):
    """What a value inserted in an LLM_CALL's prompts becomes when its budget cannot hold it whole."""

    TRUNCATE = "truncate"
    RETRIEVE = "retrieve"


class ParamType(StrEnum):
    """Whether a template variable holds a static value or a path into upstream output."""

    INPUT = "input"
    REFERENCE = "reference"


class TemplateParam(PlaitModel):
    """A template variable: a static value (`input`) or a path into upstream output (`reference`)."""

    name: Identifier
    type: ParamType = ParamType.INPUT
    value: Any = None
    reference_node: str | None = Field(default=None, validation_alias=AliasChoices("reference_node", "referenceNode"))

    @model_validator(mode="after")
    def _value_or_reference(self) -> TemplateParam:
        if self.type is ParamType.REFERENCE and not self.reference_node:
            raise ValueError("a 'reference' param needs reference_node, e.g. 'node_id.field'")
        if self.type is ParamType.INPUT and self.reference_node:
            raise ValueError("reference_node is only used by params of type 'reference'")
        return self


class InlineScript(PlaitModel):
    """Script code written in the graph itself, not named by a template id."""

    language: Literal["js"] = "js"
    code: NonEmptyStr


class NodeChecks(PlaitModel):
    """The checks around an LLM_CALL's model call, each logic only (no tokens): `pre` before the
    call (the inputs it reads are present and typed, every path its prompts print resolves),
    and after it, beyond the out-edge schemas, `non_empty` (required fields hold something) and
    `coerce_json` (JSON written inside a string where the schema wants an object or a list is
    read as that value)."""

    pre: bool = True
    non_empty: bool = True
    coerce_json: bool = True


class RepairHook(PlaitModel):
    """When a node fails for good, a model is asked for a diagnosis: `fix` (config overrides
    applied for one more try, when its confidence is at least `min_confidence`; only for an
    LLM_CALL's check failures, the one failure a change of prompts or settings can help),
    `escalate` (the run pauses for a person) or `giveup` (the node fails, with its explanation)."""

    model_role: NonEmptyStr = "chat"
    min_confidence: Annotated[float, Field(ge=0, le=1)] = 0.5


def _repair_switch(value: Any) -> Any:
    """`repair: true` is the hook with its defaults, `repair: false` none."""
    if value is True:
        return {}
    return None if value is False else value


Repair = Annotated[RepairHook | None, BeforeValidator(_repair_switch)]
"""The `repair` field of the node types whose failures a model may diagnose (LLM_CALL, TOOL, CODE)."""


ANSWER_SCHEMA_PATH = INPUT_PATH
"""What an LLM_CALL's `answer_schema` may be: `input.` and a dotted path of names (the compiler
says so of any other text, with a hint, rather than the model's validation)."""


class LlmCallNode(NodeBase):
    """Calls a model with a rendered prompt, optionally with tools and MCP servers. It has
    exactly one prompt source: `user_prompt_tpl`, `prompt_script` or `mcp_prompt`."""

    type: Literal[NodeType.LLM_CALL] = NodeType.LLM_CALL
    model_role: NonEmptyStr = "chat"
    model_id_override: str | None = None
    system_prompt: str | None = None
    user_prompt_tpl: str | None = None
    params: list[TemplateParam] = Field(default_factory=list)
    prompt_script: str | InlineScript | None = None
    """A prompt-script template id, or inline code, used instead of `user_prompt_tpl`."""
    tools: list[ToolDef] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    temperature_override: Annotated[float, Field(ge=0, le=2)] | None = None
    max_tokens_override: Annotated[int, Field(gt=0)] | None = None
    max_tool_rounds: Annotated[int, Field(ge=0, le=50)] = 5
    mcp_servers: list[McpServerRef] = Field(default_factory=list)
    mcp_resources: list[McpResourceRef] = Field(default_factory=list)
    mcp_prompt: McpPromptRef | None = None
    use_overrides_as_fewshot: bool = False
    fewshot_max_count: Annotated[int, Field(ge=0, le=50)] = 3
    fewshot_selection: FewshotSelection = FewshotSelection.LATEST
    sanitize_input: bool = False
    token_budget_input: Annotated[int, Field(gt=0)] | None = None
    token_budget_output: Annotated[int, Field(gt=0)] | None = None
    context_overflow: ContextOverflow = ContextOverflow.TRUNCATE
    """What a value that `context_max_chars` or `token_budget_input` cannot hold whole becomes:
    its beginning (`truncate`), or its passages most relevant to the node's instructions, in their
    order, with markers where passages were left out (`retrieve`: a long transcript or document
    is otherwise read from its start only)."""
    cache: bool = True
    stream: bool = False
    """Pass the answer on as it arrives (`node:delta` events) to whoever follows the run, even
    when they did not ask for this node: an answer a person reads while it is written."""
    check_while_streaming: bool = False
    """Check each field of the answer against the out-edge schema as soon as it is complete,
    while the model is still writing: a field that breaks it stops the call at once and the
    node asks again with the problem fed back, instead of paying for the rest of a wrong answer
    (the embedded model is checked at the end only). The answer is streamed for it."""
    allow_data_in_system_prompt: bool = False
    """Opt-in for run data in `system_prompt`. Off by default: the system prompt is the trusted
    instruction channel, and run data placed there could carry instructions of its own."""
    spj_prompt: str | None = None
    """A judge's instruction (a template): after a valid answer, a model reads it with the answer
    and says pass or fail with a reason; a fail is fed back like a schema error."""
    checks: NodeChecks = Field(default_factory=NodeChecks)
    repair: Repair = None
    """Ask a model to diagnose a check that failed for good, or a provider's fault (`repair: true`
    for the defaults)."""
    answer_schema: str | None = None
    """A path into the run input, `input.<dotted path>`, to a JSON Schema object: the answer is
    asked for under it as well as under the out-edge schemas, and must satisfy both. For a schema
    that differs on every run (enums of ids the caller knows), which edge schemas, fixed per graph
    version, cannot be."""

    @model_validator(mode="after")
    def _one_prompt_source(self) -> LlmCallNode:
        if self.prompt_script is not None and self.user_prompt_tpl is not None:
            raise ValueError("use either user_prompt_tpl or prompt_script, not both")
        if self.prompt_script is None and self.user_prompt_tpl is None and self.mcp_prompt is None:
            raise ValueError("an LLM_CALL needs a prompt: user_prompt_tpl, prompt_script or mcp_prompt")
        return self


ChoiceKey = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_ .:-]*$")]


class ConditionLlm(PlaitModel):
    """A CONDITION decided by a model: it picks one of `choices`, under a schema that allows no other."""

    prompt: NonEmptyStr
    """A template: the question, with what the model needs to decide it."""
    choices: Annotated[list[ChoiceKey], Field(min_length=2, max_length=50)]
    """The keys the model picks from; out-edges are selected by `condition_key` as with `condition_expr`."""
    system_prompt: str | None = None
    """A template; by default the model is told to answer with one of the choices."""
    model_role: NonEmptyStr = "chat"
    max_retries: Annotated[int, Field(ge=0, le=20)] = 1
    """More attempts when an answer is not one of the choices (each sees what was wrong)."""

    @model_validator(mode="after")
    def _distinct(self) -> ConditionLlm:
        if len(set(self.choices)) != len(self.choices):
            raise ValueError("choices must be distinct")
        return self

    def system_text(self) -> str:
        """The system prompt the model is sent (the choices are keys, so this needs no escaping)."""
        listed = ", ".join(f'"{choice}"' for choice in self.choices)
        told = f'Answer with a JSON object {{"branch": CHOICE}}, CHOICE being exactly one of: {listed}'
        if self.system_prompt:
            return f"{self.system_prompt}\n\n{told}"
        return f"You decide which way a workflow goes. {told}"


class ConditionNode(NodeBase):
    """Chooses which out-edges are taken; the others are skipped, and skipping propagates."""

    type: Literal[NodeType.CONDITION] = NodeType.CONDITION
    condition_expr: str | None = None
    """JS expression over `input`, `nodes`, `current`; its value selects out-edges by `condition_key`."""
    condition_llm: ConditionLlm | None = None
    """Or a model decides: it answers one of the choices, which selects out-edges the same way."""

    @model_validator(mode="after")
    def _one_way_to_decide(self) -> ConditionNode:
        if (self.condition_expr is None) == (self.condition_llm is None):
            raise ValueError("a CONDITION needs exactly one of condition_expr or condition_llm")
        return self


class MergeNode(NodeBase):
    """Waits for every incoming edge; its output maps each active input node id to its output."""

    type: Literal[NodeType.MERGE] = NodeType.MERGE


class TransformNode(NodeBase):
    """Its output is the value of one JavaScript expression, run in the sandbox."""

    type: Literal[NodeType.TRANSFORM] = NodeType.TRANSFORM
    transform_expr: str


class HumanReviewNode(NodeBase):
    """Pauses the run until a person approves or corrects the value under review."""

    type: Literal[NodeType.HUMAN_REVIEW] = NodeType.HUMAN_REVIEW
    review_prompt: str | None = None


class ToolNode(NodeBase):
    """A program run without a shell (argv), allowed only if plait.toml `[tools] allow` lists it."""

    type: Literal[NodeType.TOOL] = NodeType.TOOL
    command: Annotated[list[str], Field(min_length=1)]
    """argv; items may contain template references (each renders to exactly one argument)."""
    stdin: str | None = None
    """A template: what the program reads on its standard input (none: stdin is closed)."""
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    parse: Literal["text", "json"] = "text"
    cleanup: list[str] | None = None
    """argv run when the node fails, to undo side effects."""
    repair: Repair = None
    """Ask a model to diagnose a failure: it escalates to a person or gives up, with its explanation."""


class CodeNode(NodeBase):
    """Its output is what its code returns: JavaScript in the sandbox (a function body, or a
    program declaring `main(input, nodes, current)`), or Python defining `main(input, nodes)`,
    run in a child process in the jail where plait.toml allows it."""

    type: Literal[NodeType.CODE] = NodeType.CODE
    language: Literal["js", "python"] = "js"
    code: str
    cleanup: str | None = None
    repair: Repair = None
    """Ask a model to diagnose a failure: it escalates to a person or gives up, with its explanation."""


GRAPH_FILE_SUFFIXES = (".yaml", ".yml", ".json")
"""A SUBGRAPH/MAP/LOOP `graph` ending so names a graph file; anything else is a stored graph."""


def is_graph_file(ref: str) -> bool:
    return ref.lower().endswith(GRAPH_FILE_SUFFIXES)


class _SubgraphCall(NodeBase):
    """A node that runs a graph as child runs: a stored graph (`graph` + `graph_version`), a graph
    file (`graph` ending in .yaml/.yml/.json, relative to this file: the compiler embeds it as
    `body`), or an inline graph (`body`)."""

    graph: NonEmptyStr | None = None
    """A stored graph id or slug, or a graph file path relative to this file."""
    graph_version: Annotated[int, Field(ge=1)] | None = None
    """Pins a stored graph's version; without it, the newest version when the node starts."""
    body: dict[str, Any] | None = None
    """An inline graph (nodes, edges, schemas, input_schema as in a graph file; `id` and `name`
    may be left out). A graph file named by `graph` is embedded here by the compiler."""
    inputs: dict[str, Any] = Field(default_factory=dict)
    """Run input of the child graph; string values may contain template references (a string that
    is exactly `{{ path }}` keeps the value's type). Empty: the child's input is `current`."""

    @model_validator(mode="after")
    def _one_graph(self) -> _SubgraphCall:
        if self.body is None and self.graph is None:
            raise ValueError(f"a {self.type} node needs `graph` (a stored graph or a graph file) or `body`")
        if self.body is not None and self.graph is not None and not is_graph_file(self.graph):
            raise ValueError(f"a {self.type} node takes `graph` (a stored graph) or `body`, not both")
        if self.graph_version is not None and (self.graph is None or is_graph_file(self.graph)):
            raise ValueError("graph_version pins a stored graph: give `graph` as a stored graph id or slug")
        return self


class SubgraphNode(_SubgraphCall):
    """Runs a graph once as a child run; its output is the child's output."""

    type: Literal[NodeType.SUBGRAPH] = NodeType.SUBGRAPH


class ItemErrors(StrEnum):
    """What a MAP does with an item whose child run failed."""

    FAIL = "fail"
    """The node fails (items not started yet are not started)."""
    SKIP = "skip"
    """The item is left out of the gathered list."""
    COLLECT = "collect"
    """The item's place holds `{"error": {...}, "index": i}`."""


class MapNode(_SubgraphCall):
    """Runs a graph once per item of a list, at most `max_concurrency` at a time; its output is
    the list of the children's outputs, in the items' order."""

    type: Literal[NodeType.MAP] = NodeType.MAP
    items: NonEmptyStr
    """Path to the list to fan out over, e.g. `chapter_split.chapters`."""
    item_name: Identifier = "item"
    """The name `inputs` templates read the item under (its position is `index`)."""
    max_concurrency: Annotated[int, Field(ge=1, le=1000)] = 4
    on_item_error: ItemErrors = ItemErrors.FAIL


class LoopNode(_SubgraphCall):
    """Runs a graph repeatedly, one child run per iteration, while `while_expr` holds and at most
    `max_iterations` times; its output is the last iteration's output."""

    type: Literal[NodeType.LOOP] = NodeType.LOOP
    while_expr: str
    """JS over `input`, `nodes`, `current`, `iteration` (iterations done so far) and `last` (the
    output of the last one, null before the first): another iteration runs while it is truthy."""
    max_iterations: Annotated[int, Field(ge=1, le=10_000)] = 10
    on_max_iterations: Literal["fail", "stop"] = "fail"
    """At `max_iterations` with `while_expr` still true: fail the node, or `stop` and complete with
    the last iteration's output (the snapshot says it was cut short)."""


class WaitNode(NodeBase):
    """Holds its successors back for `delay_s` seconds, until a point in time (`until`), or until
    the time a JavaScript expression gives (`until_expr`): exactly one of the three. A wait of
    more than a moment parks the run (it holds no task) until it is due."""

    type: Literal[NodeType.WAIT] = NodeType.WAIT
    delay_s: Annotated[float, Field(ge=0)] | None = None
    until: datetime | None = None
    until_expr: str | None = None
    """JS over `input`, `nodes`, `current`: an ISO 8601 time (with its offset) or Unix seconds."""

    @model_validator(mode="after")
    def _exactly_one(self) -> WaitNode:
        given = [name for name in ("delay_s", "until", "until_expr") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("a WAIT node needs exactly one of delay_s, until or until_expr")
        return self


class SkillNode(NodeBase):
    """Expanded at compile time into the skill's own nodes, namespaced `__{id}__…`."""

    type: Literal[NodeType.SKILL] = NodeType.SKILL
    skill: NonEmptyStr
    """A skill graph file relative to this file (a path: a `/` or a .yaml/.yml/.json name), or a
    stored skill: `name` (its newest version when the graph is compiled) or `name@N`."""
    inputs: dict[str, Any] = Field(default_factory=dict)


NodeDef = Annotated[
    LlmCallNode
    | ConditionNode
    | MergeNode
    | TransformNode
    | HumanReviewNode
    | ToolNode
    | CodeNode
    | SubgraphNode
    | MapNode
    | LoopNode
    | WaitNode
    | SkillNode
    | ParseNode
    | ChunkNode
    | IndexNode
    | RetrieveNode,
    Field(discriminator="type"),
]

NODE_CLASSES: dict[NodeType, type[NodeBase]] = {
    NodeType.LLM_CALL: LlmCallNode,
    NodeType.CONDITION: ConditionNode,
    NodeType.MERGE: MergeNode,
    NodeType.TRANSFORM: TransformNode,
    NodeType.HUMAN_REVIEW: HumanReviewNode,
    NodeType.TOOL: ToolNode,
    NodeType.CODE: CodeNode,
    NodeType.SUBGRAPH: SubgraphNode,
    NodeType.MAP: MapNode,
    NodeType.LOOP: LoopNode,
    NodeType.WAIT: WaitNode,
    NodeType.SKILL: SkillNode,
    NodeType.PARSE: ParseNode,
    NodeType.CHUNK: ChunkNode,
    NodeType.INDEX: IndexNode,
    NodeType.RETRIEVE: RetrieveNode,
}


def node_types_with_field(name: str) -> list[NodeType]:
    """Which node types accept a field — used to say where a misplaced field belongs."""
    return [t for t, cls in NODE_CLASSES.items() if name in cls.model_fields]


def node_field(node: NodeBase, name: str, default: Any = None) -> Any:
    """A field that only some node types have (`tools`, `params`...), or `default`.

    Cheaper than `getattr(node, name, default)`: pydantic's `__getattr__` makes a miss slow,
    and compiler passes ask every node of a 1,000-node graph.
    """
    return node.__dict__.get(name, default)
