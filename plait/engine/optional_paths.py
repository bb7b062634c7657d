"""Whether a path a prompt prints, holding nothing in this run, is one its schema lets be missing.

A field a schema declares but does not list in `required` may be absent from a valid value: a
prompt that prints it renders nothing there, and the model call is worth making. A field the
schema requires, or one no schema speaks for, holding nothing means the prompt lost what it was
written around, and the pre-check blocks the call (`checks.unprinted`).

The schema a value comes from is the one bound where it arrives: for the run input (and the
`current` of an entry node) the graph's `input_schema`; for a node's output, the schemas on the
edges from that node into the reading node, or on the node's out-edges when it is further
upstream (the schemas the compiler checks the path against); through a MERGE, the edge of the
member read. The first step of the path that holds nothing decides: `input.user.name` is
optional when `user` is present and its schema leaves `name` optional, or when `user` is
absent and `input_schema` leaves `user` optional.
"""

from __future__ import annotations

from typing import Any

from plait.compile.refs import RefKind
from plait.compile.schema_inline import inline_refs
from plait.compile.schema_validator import registry_key
from plait.compile.schemas import object_form, schema_at
from plait.compile.template_types import Segment
from plait.compile.templates import split_path
from plait.engine.render import has_output_field, named_value, resolved
from plait.engine.state import RunState
from plait.model.graph import EdgeDef
from plait.model.nodes import NodeBase, NodeType, ParamType, node_field

_PARAM_DEPTH = 8
"""Params that name params: more than this many in a row are not followed (and block)."""


def optional(state: RunState, node: NodeBase, names: dict[str, Any], path: tuple[Segment, ...]) -> bool:
    """Whether the value `path` names in `names` (what `node`'s prompts see) is missing or ""
    where its schema leaves the field optional."""
    return _optional(state, node, names, path, 0)


def _optional(state: RunState, node: NodeBase, names: dict[str, Any], path: tuple[Segment, ...], depth: int) -> bool:
    if str(path[0]) == "context":
        return _in_context(state, node, names, path[1:])
    ref = resolved(names, path)
    if ref is None:
        return False
    value = named_value(names, ref)
    if ref.kind is RefKind.PARAM:
        param = next((p for p in node_field(node, "params", []) if p.name == ref.target), None)
        if param is None or param.type is not ParamType.REFERENCE or depth >= _PARAM_DEPTH:
            return False  # a literal the graph gives: no schema says what it may lack
        return _optional(state, node, names, (*split_path(param.reference_node), *ref.path), depth + 1)
    if ref.kind is RefKind.INPUT:
        return _within(_input_schemas(state, node), value, ref.path)
    if ref.kind is RefKind.NODE:
        return _from_node(state, node.id, str(ref.target), value, ref.inside(has_output_field(value)))
    if ref.kind is RefKind.CURRENT:
        return _in_current(state, node, value, ref.path)
    return False


def _in_context(state: RunState, node: NodeBase, names: dict[str, Any], path: tuple[Segment, ...]) -> bool:
    """`context.input.…` or `context.<node_id>.…`: the run input or an output, in the node's context."""
    context = names.get("context")
    if not path or not isinstance(context, dict) or str(path[0]) not in context:
        return False
    head = str(path[0])
    if head == "input":
        return _within(_input_schemas(state, node), context[head], path[1:])
    return head in state.compiled.nodes and _from_node(state, node.id, head, context[head], path[1:])


def _in_current(state: RunState, node: NodeBase, value: Any, path: tuple[Segment, ...]) -> bool:
    sources = list(dict.fromkeys(e.source_node_id for e in state.compiled.in_edges[node.id] if state.edge_active(e)))
    if not sources:
        return _within(_input_schemas(state, node), value, path)
    if len(sources) == 1:
        return _from_node(state, node.id, sources[0], value, path)
    if not path or str(path[0]) not in sources or not isinstance(value, dict):
        return False
    return _from_node(state, node.id, str(path[0]), value.get(str(path[0])), path[1:])


def _input_schemas(state: RunState, node: NodeBase) -> list[Any]:
    """The schema of what `node` reads as `input`: none inside an inlined SKILL (its inputs)."""
    graph = state.compiled.graph
    if graph.input_schema is None or node.id in state.compiled.scopes:
        return []
    return [inline_refs(object_form(graph.input_schema), registry_key(graph.schemas))]


def _from_node(state: RunState, reader: str, source: str, value: Any, path: tuple[Segment, ...]) -> bool:
    """`path` inside `source`'s output `value`, as `reader` receives it."""
    compiled = state.compiled
    if source not in compiled.nodes:
        return False  # a SKILL's id, standing for its exit nodes: no one schema
    if compiled.nodes[source].type == NodeType.MERGE and path:
        member = str(path[0])
        if not isinstance(value, dict) or member not in value:
            return False  # the member did not run: not a field a schema leaves out
        return _from_node(state, source, member, value[member], path[1:])
    edges = [e for e in compiled.in_edges.get(reader, []) if e.source_node_id == source]
    return _within(_edge_schemas(state, edges or compiled.out_edges[source]), value, path)


def _edge_schemas(state: RunState, edges: list[EdgeDef]) -> list[Any]:
    graph = state.compiled.graph
    schemas = []
    for schema_id in dict.fromkeys(e.schema_id for e in edges if e.schema_id):
        entry = graph.schema_entry(schema_id)
        if entry is not None:
            schemas.append(inline_refs(object_form(entry.schema_), registry_key(graph.schemas)))
    return schemas


def _within(schemas: list[Any], value: Any, path: tuple[Segment, ...]) -> bool:
    """Whether the first step of `path` that holds nothing in `value` is a field every one of
    `schemas` declares and leaves out of `required` (no schemas: not optional)."""
    if not schemas or not path or value is None:
        return False  # nothing at all (a node that did not run) is not a field left out
    missing = _first_missing(value, path)
    if missing is None:
        return False
    step = path[missing]
    if not isinstance(step, str):
        return False  # an index past the end: an array has no optional items
    return all(_leaves_optional(schema_at(schema, path[:missing]), step) for schema in schemas)


def _first_missing(value: Any, path: tuple[Segment, ...]) -> int | None:
    """The index of the first step of `path` with no value (None or absent) in `value`, or of the
    last step when it holds ""; None when the path holds something."""
    current = value
    for index, step in enumerate(path):
        if isinstance(current, dict):
            current = current.get(str(step))
        elif isinstance(current, list) and isinstance(step, int) and -len(current) <= step < len(current):
            current = current[step]
        else:
            current = None
        if current is None:
            return index
    return len(path) - 1 if current == "" else None


def _leaves_optional(schema: Any, field: str) -> bool:
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    required = schema.get("required")
    declared = isinstance(properties, dict) and field in properties
    return declared and not (isinstance(required, list) and field in required)
