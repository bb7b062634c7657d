"""`plait run --dry-run`: every prompt rendered, the checks a run makes before a model call
applied, budgets and providers checked, no model called and nothing stored.

Every node is taken as run: its output is the one given for it (`upstream`, e.g. copied from
an earlier run), else a placeholder derived from its out-edge schemas (`<node.field>` strings,
the first enum value, 0, false, one array item); a MERGE collects its inputs, HUMAN_REVIEW and
WAIT pass theirs on. A CONDITION lets each successor see it as taking that successor's branch,
so that every branch's prompts are rendered too. Each LLM_CALL is rendered through the engine's
own path (`llm_call.build_request`), so what is shown is exactly what a run would send, given
those outputs. Prompt tokens are counted by the embedded model itself when it is the provider
(its chat template included), else by the serving model's tokenizer (`plait.llm.tokens`: tiktoken
for OpenAI models), else estimated at ~4 characters per token.

What a run checks before an LLM_CALL (or a CONDITION's `condition_llm`) sends is checked here
with the engine's own functions, and each failure is a problem of the node:
- the pre-check (`plait.engine.checks.precheck`, unless the node says `checks: {pre: false}`):
  every path its prompts print unconditionally holds a value unless its schema leaves the
  field optional (`input.topic` when the run input has no `topic` and `input_schema` does not
  leave it optional: a run fails the node with `precheck_failed`), and the inputs it reads
  match their edges' schemas;
- the render limits of its prompts; whether its role is served here; the graph's `max_cost_usd`
  against the estimated cost of every node run once (a run checks its budget before each call).
The pre-check is made on the real values only: the run input, the outputs given in `upstream`,
literal params. A placeholder stands for an output the run does not have yet, so a check that
only fails because of one would be a false alarm: an input whose data holds a placeholder is
not checked against its schema (the placeholder is made from that schema anyway), and a printed
path that reaches into a placeholder (a field its schema does not declare, a second array
item, any field of a node without a schema) is not reported. Fields an MCP resource gives
(`inject_as: context_field`) are placeholders too: dry runs read no resources. The run input
itself is checked against `input_schema` by the callers (`plait run --dry-run`, the HTTP dry
run) before this runs. A run's freezes are not checked: they only refuse corrections of a run,
never a model call.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from plait.engine.checks import input_problems, unprinted
from plait.engine.contracts import OutputContract
from plait.engine.llm_call import build_request, prepared, with_mcp_fields
from plait.engine.llm_condition import asker, choice_contract
from plait.engine.mcp_inputs import McpInputs
from plait.engine.prompt_script import run_prompt_script
from plait.engine.render import NodeView, build_view, value_at
from plait.engine.render_limits import RenderLimitError
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import CompiledRun, Phase, RunState
from plait.llm.pool import DEFAULT_ANSWER_TOKENS
from plait.llm.provider import Provider
from plait.llm.tokens import count_messages
from plait.model.graph import GraphDef
from plait.model.nodes import ConditionNode, LlmCallNode, NodeType
from plait.model.tools import InjectAs


@dataclass
class DryNode:
    """One node as a run would execute it: the request it would send, its estimated tokens and
    cost, and what would keep it from running (`problems`)."""

    node_id: str
    type: str
    messages: list[dict[str, Any]] | None = None
    response_format: dict[str, Any] | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    output: Any = None
    """The placeholder the node's successors were rendered with."""
    problems: list[str] = field(default_factory=list)


@dataclass
class DryRun:
    """Every node of a graph as a dry run rendered it, the estimated cost of the whole run, and
    every problem found (those of the nodes included)."""

    nodes: list[DryNode]
    max_cost_usd: float | None
    problems: list[str]

    @property
    def cost_usd(self) -> float:
        return sum(n.cost_usd for n in self.nodes)

    def as_json(self) -> dict[str, Any]:
        return {
            "nodes": [vars(n) for n in self.nodes],
            "estimated_cost_usd": self.cost_usd,
            "max_cost_usd": self.max_cost_usd,
            "problems": self.problems,
        }


async def dry_run(
    graph: GraphDef, run_input: dict[str, Any], runtime: Runtime, upstream: dict[str, Any] | None = None
) -> DryRun:
    """Render every node of `graph` for `run_input`, with `upstream`'s outputs where given and
    placeholders elsewhere, and check each as a run would before calling a model; no model is
    called and nothing is stored."""
    compiled = CompiledRun.from_graph(graph)
    state = RunState(compiled, run_input)
    given = upstream or {}
    unknown = sorted(set(given) - set(compiled.nodes))
    placeholders = Placeholders()
    nodes = [await _node(compiled, state, node_id, runtime, given, placeholders) for node_id in compiled.topology.order]
    problems = [f"node '{n.node_id}': {p}" for n in nodes for p in n.problems]
    problems.extend(f"--upstream names no node '{node_id}' of this graph" for node_id in unknown)
    dry = DryRun(nodes, graph.max_cost_usd, problems)
    if graph.max_cost_usd is not None and dry.cost_usd > graph.max_cost_usd:
        problems.append(
            f"the estimated cost ${dry.cost_usd:.6f} (every node run once) is over max_cost_usd = {graph.max_cost_usd}"
        )
    return dry


async def dry_run_on(
    graph: GraphDef, run_input: dict[str, Any], provider: Provider | None, upstream: dict[str, Any] | None = None
) -> DryRun:
    """`dry_run` with a runtime of its own over `provider` (asked what it serves, never called),
    whose sandbox is closed when it is done; the provider is the caller's and stays open."""
    runtime = Runtime(provider)
    try:
        return await dry_run(graph, run_input, runtime, upstream)
    finally:
        runtime.close_sandbox()


async def _node(
    compiled: CompiledRun,
    state: RunState,
    node_id: str,
    runtime: Runtime,
    given: dict[str, Any],
    placeholders: Placeholders,
) -> DryNode:
    node = compiled.nodes[node_id]
    for edge in compiled.in_edges[node_id]:  # a CONDITION takes the branch that leads here
        source = state.nodes[edge.source_node_id]
        if source.node.type == NodeType.CONDITION:
            source.branch = edge.condition_key
    dry = DryNode(node_id, str(node.type))
    if isinstance(node, LlmCallNode):
        await _render(node, state, runtime, dry, placeholders)
    elif (call := asker(node)) is not None and isinstance(node, ConditionNode) and node.condition_llm is not None:
        await _render(call, state, runtime, dry, placeholders, choice_contract(node.condition_llm))
    if node_id in given:
        output: Any = given[node_id]
    elif node.type == NodeType.MERGE:
        output = {p: state.nodes[p].data for p in state.active_predecessors(node_id)}
    elif node.type in (NodeType.HUMAN_REVIEW, NodeType.WAIT):
        output = state.current_for(node_id)
    elif node.type == NodeType.CONDITION:
        output = placeholders.add({"branch": None})
    else:
        contract = compiled.contracts[node_id]
        output = placeholders.add(placeholder(contract, node_id), anything=not contract.structured)
    dry.output = output
    state.complete(node_id, output)
    state.nodes[node_id].phase = Phase.COMPLETED
    return dry


async def _render(
    node: LlmCallNode,
    state: RunState,
    runtime: Runtime,
    dry: DryNode,
    placeholders: Placeholders,
    contract: OutputContract | None = None,
) -> None:
    """The node's request as it would be sent now (`contract`: the answer's schema, when it is
    not the out-edges'), and what would keep it from going out."""
    if node.mcp_prompt is not None:
        ref = node.mcp_prompt
        dry.problems.append(
            f"the prompt comes from MCP server '{ref.server_id}' (prompts/get '{ref.prompt_name}') when the node "
            "runs; dry runs do not connect to MCP servers"
        )
        return
    view = build_view(state, node)  # built once, as a run builds it: the script, the prompts, the pre-check
    prompt = None
    if node.prompt_script is not None:  # the script runs (it only reads): its prompt is shown
        script = await run_prompt_script(node, state, runtime, view)
        if isinstance(script, NodeResult):
            dry.problems.append(str((script.error or {}).get("message")))
            return
        prompt = script.prompt
    if node.mcp_resources:
        uris = ", ".join(f"{r.server_id}:{r.uri}" for r in node.mcp_resources)
        dry.problems.append(f"MCP resources ({uris}) are read when the node runs and are not shown here")
        fields = {
            r.field_name: placeholders.add(f"<{r.server_id}:{r.uri}>", anything=True)
            for r in node.mcp_resources
            if r.inject_as is InjectAs.CONTEXT_FIELD and r.field_name
        }
        with_mcp_fields(view, McpInputs(fields=fields))
    counter = runtime.counter(node.model_role, node.model_id_override)
    try:
        budget = await prepared(node, view, counter, prompt=prompt)
    except RenderLimitError as exc:
        dry.problems.append(str(exc))
        return
    request, _ = build_request(node, state, counter, contract=contract, prompt=prompt, view=view, budget=budget)
    dry.messages = request.messages
    dry.response_format = request.response_format
    counted = await runtime.count_tokens(request.messages)  # the embedded model counts its own chat template
    dry.tokens_in = counted if counted is not None else count_messages(counter, request.messages)
    dry.tokens_out = request.max_tokens or DEFAULT_ANSWER_TOKENS
    dry.cost_usd = runtime.estimate_cost(request)
    dry.problems.extend(_prechecked(node, state, view, placeholders))
    reason = runtime.unserved(node.model_role or "chat")
    if reason:
        dry.problems.append(reason)


def _prechecked(node: LlmCallNode, state: RunState, view: NodeView, placeholders: Placeholders) -> list[str]:
    """What of the engine's pre-check (`checks.precheck`: its parts, in its order) fails on the
    real values, each with what to fix; nothing when the node switches the pre-check off."""
    if not node.checks.pre:
        return []
    blocked = "(a run fails the node with precheck_failed, before calling the model)"
    problems = [
        f"pre-check failed: {reason} {blocked}; correct the upstream output given for '{edge.source_node_id}'"
        for edge in state.compiled.in_edges[node.id]
        if not placeholders.within(state.nodes[edge.source_node_id].data)
        for reason in input_problems(edge, state)
    ]
    for path, reason in unprinted(node, state, view):
        if placeholders.along(view.names, path):
            continue
        reads_input = path[0] == "input" or path[:2] == ("context", "input")
        where = "the run input" if reads_input else "the run input or the upstream outputs given"
        problems.append(
            f"pre-check failed: {reason} {blocked}; give it a value in {where}, or print it inside "
            "{% if %} or with | default(...)"
        )
    return problems


class Placeholders:
    """The placeholder outputs of a dry run, told apart from real values by identity: a run's
    state and views hand on the very objects stored as outputs, never copies, so a value a check
    reads is (part of) a placeholder when it is one of the objects kept here: every list and
    object inside a placeholder, and a text that stands for an output of any shape. (A scalar
    is not kept: Python shares them, and a scalar placeholder has its schema's type, as the
    run's output will.)"""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._kept: list[Any] = []  # alive, so that no real value can take an id of theirs

    def add(self, value: Any, *, anything: bool = False) -> Any:
        """`value`, a placeholder, remembered as one (itself too when `anything`: a text that
        stands for an output of any shape, a node's without out-edge schemas or an MCP resource's)."""
        self._kept.append(value)
        if anything:
            self._ids.add(id(value))
        for item in _walk(value):
            if isinstance(item, dict | list):
                self._ids.add(id(item))
        return value

    def within(self, value: Any) -> bool:
        """Whether `value` is (part of) a placeholder or holds one at any depth."""
        return any(id(item) in self._ids for item in _walk(value))

    def along(self, names: dict[str, Any], path: tuple[Any, ...]) -> bool:
        """Whether looking `path` up in `names` passes through (part of) a placeholder."""
        return any(id(value_at(names, path[:end])) in self._ids for end in range(1, len(path) + 1))


def _walk(value: Any) -> Iterator[Any]:
    """`value` and every value inside it, each list or object once (upstream outputs are bounded
    in size, not in how they share parts)."""
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict | list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)


def placeholder(contract: OutputContract, node_id: str) -> Any:
    """A value shaped like the node's out-edge schemas (a string naming the node without any)."""
    return _shaped(contract.combined(), node_id) if contract.structured else f"<{node_id}>"


def _shaped(schema: Any, path: str) -> Any:
    if not isinstance(schema, dict):
        return f"<{path}>"
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("allOf", "anyOf", "oneOf"):
        if schema.get(combinator):
            parts = [_shaped(s, path) for s in schema[combinator]]
            if combinator == "allOf" and all(isinstance(p, dict) for p in parts):
                return {k: v for p in parts for k, v in p.items()}
            return parts[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        return {key: _shaped(sub, f"{path}.{key}") for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_shaped(schema.get("items"), f"{path}[0]")]
    return {"integer": 0, "number": 0, "boolean": False, "null": None}.get(str(kind), f"<{path}>")
