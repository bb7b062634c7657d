"""The executable plan of a graph: what the engine needs from the compiler, worked out once.

The compiler parses every template while it checks a graph; the plan keeps those results
(the parsed templates, which values each node's definition reads, the topology), so that the
engine executes a graph version without parsing anything again. `plan_graph` is the one place
they are derived: `plait validate` builds the plan of a valid graph, and the engine builds it
once per stored graph version it executes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from plait.compile.bodies import runs_graph
from plait.compile.refs import STATE_ALIASES
from plait.compile.template_types import Template, TemplateError
from plait.compile.templates import parse_template
from plait.compile.topology import Topology
from plait.model.graph import GraphDef
from plait.model.nodes import NodeBase, NodeType, node_field
from plait.sandbox.names import code_reads, named_members

RUN_INPUT = "input"
"""The name the run input goes by: as a template root, and as the owner of its ledger versions."""
PROMPT_FIELDS = ("system_prompt", "user_prompt_tpl", "review_prompt")


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One node's share of the plan."""

    templates: dict[str, Template]
    """Every template text of the node's definition (prompts, MCP resource URIs and prompt
    arguments, a SKILL's inputs), parsed, by its text."""
    reads: tuple[str, ...]
    """The values its definition names, beside its predecessors: `input` and node ids (what the
    field ledger records as consumed and `on_consume` freezes)."""
    js_names: tuple[str, ...] = ()
    """The outputs its JavaScript (or Python) sees in `nodes`: those it names, or every upstream
    output when it uses `nodes` in a way a text scan cannot follow. What it is given is what the
    ledger records it read, so a correction of any of them reaches it."""

    def template(self, text: str) -> Template:
        """The parsed form of one of the node's template texts. A text outside its definition
        (the prompt a repair's fix gives the node for one more try) is parsed when asked for:
        TemplateError when it does not parse."""
        parsed = self.templates.get(text)
        return parsed if parsed is not None else parse_template(text)


@dataclass(frozen=True, slots=True)
class ExecutionPlan:
    """What a run of one graph version executes by: built once per version, never changed."""

    topology: Topology
    aliases: dict[str, list[str]]
    """A top-level SKILL's id -> its exit nodes (what the SKILL's id stands for downstream)."""
    nodes: dict[str, NodePlan]


def plan_graph(graph: GraphDef, topology: Topology | None = None) -> ExecutionPlan:
    """The plan of a valid, SKILL-expanded graph (`topology`: the compiler's, when it has it)."""
    ids = [n.id for n in graph.nodes]
    if topology is None:
        topology = Topology.build(ids, [(e.source_node_id, e.target_node_id) for e in graph.edges])
    known = set(ids)
    aliases = skill_aliases(graph, topology)
    nodes = {}
    for node in graph.nodes:
        templates = _parsed(_template_texts(node))
        js_names = _js_names(node, topology, known, aliases)
        owners = (o for name in js_names for o in aliases.get(name, [name]))
        reads = tuple(dict.fromkeys([*_reads(node, templates, known), *owners]))
        nodes[node.id] = NodePlan(templates, reads, js_names)
    return ExecutionPlan(topology, aliases, nodes)


EXPRESSION_FIELDS = ("condition_expr", "transform_expr", "until_expr", "while_expr", "code")


def expression_of(node: NodeBase) -> tuple[str, str] | None:
    """(field, text) of the node's JavaScript (or Python) that sees `input`, `nodes` and
    `current`: a CONDITION's, TRANSFORM's, WAIT's or LOOP's expression, or a CODE node's code
    (a node has at most one)."""
    for name in EXPRESSION_FIELDS:
        text = node_field(node, name, None)
        if isinstance(text, str):
            return name, text
    return None


def _uses(expression: str, binding: str) -> bool:
    names = named_members(expression, binding)
    return names is None or bool(names)


def _js_names(node: NodeBase, topology: Topology, known: set[str], aliases: dict[str, list[str]]) -> tuple[str, ...]:
    found_expression = expression_of(node)
    if found_expression is None:
        return ()
    expression = found_expression[1]
    if node.type == NodeType.CODE:
        named = code_reads(expression, str(node_field(node, "language", "js")))
    else:
        named = named_members(expression)
    if named is None:
        upstream = topology.ancestors(node.id)
        above = set(upstream)
        return (*upstream, *(a for a, exits in aliases.items() if above.intersection(exits)))
    scope = node.skill_scope
    found = []
    for name in sorted(named):
        inner = scope.prefix + name if scope is not None else name
        for candidate in (inner, name):
            if candidate != node.id and (candidate in known or candidate in aliases):
                found.append(candidate)
                break
    return tuple(found)


def _template_texts(node: NodeBase) -> Iterator[str]:
    for name in PROMPT_FIELDS:
        text = node_field(node, name, None)
        if isinstance(text, str):
            yield text
    for ref in node_field(node, "mcp_resources", None) or ():
        yield ref.uri
    prompt = node_field(node, "mcp_prompt", None)
    if prompt is not None:
        yield from prompt.arguments.values()
    decided_by = node_field(node, "condition_llm", None)
    if decided_by is not None:
        yield decided_by.prompt
        yield decided_by.system_text()
    for text in node_field(node, "command", None) or ():
        yield text
    for name in ("stdin", "query", "knowledge_base", "document"):  # TOOL's, RETRIEVE's and PARSE's templates
        text = node_field(node, name, None)
        if isinstance(text, str):
            yield text
    for text in node_field(node, "cleanup", None) or ():
        if isinstance(text, str):
            yield text
    env = node_field(node, "env", None)
    if isinstance(env, dict):
        yield from env.values()
    if node.skill_scope is not None:
        yield from _strings(node.skill_scope.inputs)
    if runs_graph(node):
        yield from _strings(node_field(node, "inputs", {}))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _parsed(texts: Iterator[str]) -> dict[str, Template]:
    parsed: dict[str, Template] = {}
    for text in texts:
        try:
            parsed[text] = parse_template(text)
        except TemplateError:
            continue  # a graph stored by an older release: the node fails when it renders it
    return parsed


def _reads(node: NodeBase, templates: dict[str, Template], known: set[str]) -> Iterator[str]:
    """What the node's definition names: the input, when its JavaScript uses it (a CODE node's
    code is given it always) or its answer schema comes from it, `context_include`, and the roots
    of its prompts (`nodes.X`, `nodeOutputs.X` or `X`), never the node itself. The outputs its
    JavaScript reads are `_js_names`."""
    expression = expression_of(node)
    if expression is not None and (node.type == NodeType.CODE or _uses(expression[1], RUN_INPUT)):
        yield RUN_INPUT
    if node_field(node, "answer_schema", None) is not None:
        yield RUN_INPUT
    yield from (n for n in node.context_include or () if n == RUN_INPUT or n in known)
    texts = [node_field(node, name, None) for name in PROMPT_FIELDS]
    if runs_graph(node):
        texts.extend(_strings(node_field(node, "inputs", {})))
        items = node_field(node, "items", None)
        if isinstance(items, str):  # a MAP reads the list it fans out over
            texts.append("{{ " + items + " }}")
            templates = {**templates, **_parsed(iter(texts[-1:]))}
    for text in texts:
        template = templates.get(text) if isinstance(text, str) else None
        for ref in template.refs if template is not None else ():
            root = ref.root
            if (root == "nodes" or STATE_ALIASES.get(root) == "nodes") and len(ref.path) > 1:
                root = str(ref.path[1])
            if root == RUN_INPUT or (root in known and root != node.id):
                yield root


def skill_aliases(graph: GraphDef, topology: Topology) -> dict[str, list[str]]:
    """A top-level SKILL's id stands for its exit nodes: those whose successors are all outside it."""
    aliases: dict[str, list[str]] = {}
    for node in graph.nodes:
        scope = node.skill_scope
        if scope is None or scope.prefix != f"__{scope.skill_node_id}__":
            continue
        if not any(s.startswith(scope.prefix) for s in topology.succs[node.id]):
            aliases.setdefault(scope.skill_node_id, []).append(node.id)
    return aliases
