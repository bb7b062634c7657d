"""`plait run --dry-run`: every prompt rendered, budgets and providers checked, no model called
and nothing stored.

Every node is taken as run: its output is the one given for it (`upstream`, e.g. copied from
an earlier run), else a placeholder derived from its out-edge schemas (`<node.field>` strings,
the first enum value, 0, false, one array item); a MERGE collects its inputs, HUMAN_REVIEW and
WAIT pass theirs on. A CONDITION lets each successor see it as taking that successor's branch,
so that every branch's prompts are rendered too. Each LLM_CALL is rendered through the engine's
own path (`llm_call.build_request`), so what is shown is exactly what a run would send, given
those outputs. Prompt tokens are counted by the embedded model itself when it is the provider
(its chat template included), else by the serving model's tokenizer (`plait.llm.tokens`: tiktoken
for OpenAI models), else estimated at ~4 characters per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.contracts import OutputContract
from plait.engine.llm_call import build_request, prepared
from plait.engine.llm_condition import asker, choice_contract
from plait.engine.prompt_script import run_prompt_script
from plait.engine.render import build_view
from plait.engine.render_limits import RenderLimitError
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import CompiledRun, Phase, RunState
from plait.llm.pool import DEFAULT_ANSWER_TOKENS
from plait.llm.tokens import count_messages
from plait.model.graph import GraphDef
from plait.model.nodes import ConditionNode, LlmCallNode, NodeType


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
    placeholders elsewhere; no model is called and nothing is stored."""
    compiled = CompiledRun.from_graph(graph)
    state = RunState(compiled, run_input)
    given = upstream or {}
    unknown = sorted(set(given) - set(compiled.nodes))
    nodes = [await _node(compiled, state, node_id, runtime, given) for node_id in compiled.topology.order]
    problems = [f"node '{n.node_id}': {p}" for n in nodes for p in n.problems]
    problems.extend(f"--upstream names no node '{node_id}' of this graph" for node_id in unknown)
    dry = DryRun(nodes, graph.max_cost_usd, problems)
    if graph.max_cost_usd is not None and dry.cost_usd > graph.max_cost_usd:
        problems.append(
            f"the estimated cost ${dry.cost_usd:.6f} (every node run once) is over max_cost_usd = {graph.max_cost_usd}"
        )
    return dry


async def _node(
    compiled: CompiledRun, state: RunState, node_id: str, runtime: Runtime, given: dict[str, Any]
) -> DryNode:
    node = compiled.nodes[node_id]
    for edge in compiled.in_edges[node_id]:  # a CONDITION takes the branch that leads here
        source = state.nodes[edge.source_node_id]
        if source.node.type == NodeType.CONDITION:
            source.branch = edge.condition_key
    dry = DryNode(node_id, str(node.type))
    if isinstance(node, LlmCallNode):
        await _render(node, state, runtime, dry)
    elif (call := asker(node)) is not None and isinstance(node, ConditionNode) and node.condition_llm is not None:
        await _render(call, state, runtime, dry, choice_contract(node.condition_llm))
    if node_id in given:
        output: Any = given[node_id]
    elif node.type == NodeType.MERGE:
        output = {p: state.nodes[p].data for p in state.active_predecessors(node_id)}
    elif node.type in (NodeType.HUMAN_REVIEW, NodeType.WAIT):
        output = state.current_for(node_id)
    elif node.type == NodeType.CONDITION:
        output = {"branch": None}
    else:
        output = placeholder(compiled.contracts[node_id], node_id)
    dry.output = output
    state.complete(node_id, output)
    state.nodes[node_id].phase = Phase.COMPLETED
    return dry


async def _render(
    node: LlmCallNode, state: RunState, runtime: Runtime, dry: DryNode, contract: OutputContract | None = None
) -> None:
    """The node's request as it would be sent now (`contract`: the answer's schema, when it is
    not the out-edges')."""
    if node.mcp_prompt is not None:
        ref = node.mcp_prompt
        dry.problems.append(
            f"the prompt comes from MCP server '{ref.server_id}' (prompts/get '{ref.prompt_name}') when the node "
            "runs; dry runs do not connect to MCP servers"
        )
        return
    prompt = None
    if node.prompt_script is not None:  # the script runs (it only reads): its prompt is shown
        script = await run_prompt_script(node, state, runtime)
        if isinstance(script, NodeResult):
            dry.problems.append(str((script.error or {}).get("message")))
            return
        prompt = script.prompt
    if node.mcp_resources:
        uris = ", ".join(f"{r.server_id}:{r.uri}" for r in node.mcp_resources)
        dry.problems.append(f"MCP resources ({uris}) are read when the node runs and are not shown here")
    counter = runtime.counter(node.model_role, node.model_id_override)
    view = build_view(state, node)
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
    reason = runtime.unserved(node.model_role or "chat")
    if reason:
        dry.problems.append(reason)


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
