"""Edits of a graph document as small operations, and the JSON Schema a model answers them under.

A model that designs or changes a graph proposes operations (add a node, set a field, connect,
remove, add a schema) instead of rewriting the whole document: an edit costs tokens in
proportion to its size, and what it may name is closed. The schema is built from the node
registry and the document being edited: node types and each type's field names are enums, and
a field is set, a node removed or an edge dropped only by naming an id the document has, so a
model constrained by it cannot produce a node type or a target that does not exist.

Applying operations is pure: it copies the document, applies each operation in order, and
reports each one that cannot apply as a `config` diagnostic (what is wrong, which operation,
how to fix it), which is what a repair loop hands back to the model. Whether the result is a
valid graph is the compiler's business.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

from plait.compile.diagnostics import Category, Diagnostic
from plait.model.common import IDENT_RE
from plait.model.graph import END
from plait.model.nodes import NODE_CLASSES, NodeType

MAX_OPERATIONS = 40
"""Operations in one answer: more is a rewrite, which a person could not review as an edit."""
SMALL_OPERATIONS = 8

DESIGNABLE_TYPES: tuple[NodeType, ...] = tuple(t for t in NodeType if t is not NodeType.SKILL)
"""Node types a model may add: a SKILL names a skill file, which a chat has no way to write."""

_NOT_SET_BY_NAME = frozenset({"id", "type", "skill_scope", "position"})
"""Fields an operation never sets: the id and type are the node's identity (remove and add it
again to change them), the skill scope is written by the compiler, the position by the canvas."""

GRAPH_FIELDS = ("name", "description", "input_schema")
"""Graph-level fields `set_graph` may change."""

_IDENTIFIER = {"type": "string", "pattern": IDENT_RE, "maxLength": 128}


def node_fields(node_type: NodeType) -> list[str]:
    """The fields an operation may set on a node of `node_type`, in the class's order."""
    return [name for name in NODE_CLASSES[node_type].model_fields if name not in _NOT_SET_BY_NAME]


def _node_ids(document: dict[str, Any]) -> dict[str, str]:
    """Node id -> its type, for the document's well-formed nodes."""
    found: dict[str, str] = {}
    for node in document.get("nodes") or []:
        if isinstance(node, dict) and isinstance(node.get("id"), str):
            found[node["id"]] = str(node.get("type", ""))
    return found


def _schema_ids(document: dict[str, Any]) -> list[str]:
    return [s["id"] for s in document.get("schemas") or [] if isinstance(s, dict) and isinstance(s.get("id"), str)]


def _op(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"op": {"const": name}, **properties},
        "required": ["op", *required],
        "additionalProperties": False,
    }


def _new_id(taken: list[str]) -> dict[str, Any]:
    return {**_IDENTIFIER, "not": {"enum": taken}} if taken else dict(_IDENTIFIER)


@functools.cache
def field_schemas(node_type: NodeType) -> dict[str, Any]:
    """Each settable field of `node_type` and the JSON Schema of its value, from the node class:
    a field of a plain type (text, a number and its bounds, a flag, a choice, a list of names) is
    typed, so a model held to it cannot put a list where a prompt goes; one of a nested model is
    any JSON, which the compiler checks. `null` unsets a field."""
    properties = NODE_CLASSES[node_type].model_json_schema()["properties"]
    return {name: _plain(properties.get(name, {})) for name in node_fields(node_type)}


_DROPPED = frozenset({"title", "description", "default"})


def _plain(schema: Any) -> Any:
    if "$ref" in json.dumps(schema):
        return {}
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k not in _DROPPED}
    return [_plain(v) for v in schema] if isinstance(schema, list) else schema


SMALL_TEXT_CHARS = 1_000
"""A text value's bound in the small form of the schema (see `operations_schema`)."""


def _fields_of(node_type: NodeType, *, small: bool, at_least_one: bool = False) -> dict[str, Any]:
    properties = field_schemas(node_type)
    if small:
        properties = {name: _bounded(value) for name, value in properties.items() if value}
    fields = {"type": "object", "properties": properties, "additionalProperties": False}
    return {**fields, "minProperties": 1} if at_least_one else fields


def _bounded(schema: Any) -> Any:
    """`schema` with every text bounded (a small model held by a grammar may write without end)."""
    if isinstance(schema, list):
        return [_bounded(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {k: _bounded(v) for k, v in schema.items()}
    if bounded.get("type") == "string" and "enum" not in bounded:
        bounded.setdefault("maxLength", SMALL_TEXT_CHARS)
    if bounded.get("type") == "array":
        bounded.setdefault("maxItems", 20)
    return bounded


def _add_node(node_type: NodeType, taken: list[str], small: bool) -> dict[str, Any]:
    fields = _fields_of(node_type, small=small)
    return _op(
        "add_node",
        {"id": _new_id(taken), "type": {"const": str(node_type)}, "fields": fields},
        ["id", "type", "fields"],
    )


def _set_fields(ids: dict[str, str], small: bool) -> list[dict[str, Any]]:
    """One `set_field` branch per node type present: its ids, and its fields with their values."""
    branches = []
    for node_type in DESIGNABLE_TYPES:
        of_type = sorted(i for i, t in ids.items() if t == node_type)
        if of_type:
            fields = _fields_of(node_type, small=small, at_least_one=True)
            branches.append(_op("set_field", {"node": {"enum": of_type}, "fields": fields}, ["node", "fields"]))
    return branches


def _endpoint(existing: list[str]) -> dict[str, Any]:
    """A node an edge names: one the document has, or one an earlier operation of the same
    answer adds (checked when applied: its id cannot be known before the answer)."""
    return {"anyOf": [{"enum": existing}, _IDENTIFIER]} if existing else dict(_IDENTIFIER)


def operations_schema(document: dict[str, Any], *, small: bool = False) -> dict[str, Any]:
    """The JSON Schema of a list of operations on `document`. `small`: for a small model held to
    it by a grammar (the embedded one): only fields of a plain type, every text and list bounded,
    at most 8 operations; a field of a nested model (tools, params...) is then not offered, as a
    grammar over any JSON lets such a model nest without end."""
    ids = _node_ids(document)
    existing = sorted(ids)
    schemas = _schema_ids(document)
    branches = [_add_node(t, existing, small) for t in DESIGNABLE_TYPES]
    branches += _set_fields(ids, small)
    connect = {
        "from": _endpoint(existing),
        "to": {"anyOf": [{"const": END}, _endpoint(existing)]},
        "schema_id": {"anyOf": [{"enum": schemas}, _IDENTIFIER]} if schemas else dict(_IDENTIFIER),
        "condition_key": {"type": "string", "maxLength": 100},
    }
    branches.append(_op("connect", connect, ["from", "to"]))
    if existing:
        branches.append(_op("remove_node", {"node": {"enum": existing}}, ["node"]))
        ends = {"from": {"enum": existing}, "to": {"enum": [*existing, END]}}
        branches.append(_op("disconnect", ends, ["from", "to"]))
    schema = {"id": _new_id(schemas), "description": {"type": "string"}, "schema": {"type": "object"}}
    branches.append(_op("add_schema", schema, ["id", "schema"]))
    branches.append(_op("set_graph", {"field": {"enum": list(GRAPH_FIELDS)}, "value": {}}, ["field", "value"]))
    return {"type": "array", "maxItems": SMALL_OPERATIONS if small else MAX_OPERATIONS, "items": {"anyOf": branches}}


class _Refused(Exception):
    """One operation cannot apply: why, and how to fix it."""

    def __init__(self, code: str, message: str, hint: str, node_id: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.hint, self.node_id = code, message, hint, node_id


def apply_operations(document: dict[str, Any], operations: list[Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
    """`document` with `operations` applied in order (a copy), and a `config` diagnostic for
    each operation that could not apply (it is left out; the others still apply)."""
    doc = copy.deepcopy(document)
    for key in ("nodes", "edges", "schemas"):
        if not isinstance(doc.get(key), list):
            doc[key] = []
    problems: list[Diagnostic] = []
    for index, operation in enumerate(operations[:MAX_OPERATIONS]):
        try:
            _apply_one(doc, operation)
        except _Refused as refused:
            problems.append(_diagnostic(index, operation, refused))
    if len(operations) > MAX_OPERATIONS:
        hint = "Propose the most important changes first; the rest can follow in the next message."
        cut = _Refused("operation_too_many", f"only the first {MAX_OPERATIONS} operations were applied", hint)
        problems.append(_diagnostic(MAX_OPERATIONS, {"op": "…"}, cut))
    return doc, problems


def _diagnostic(index: int, operation: Any, refused: _Refused) -> Diagnostic:
    name = operation.get("op") if isinstance(operation, dict) else None
    message = f"operation {index + 1} ({name or 'unnamed'}): {refused.message}"
    return Diagnostic(Category.CONFIG, refused.code, message, node_id=refused.node_id, hint=refused.hint)


def _apply_one(doc: dict[str, Any], operation: Any) -> None:
    if not isinstance(operation, dict) or not isinstance(operation.get("op"), str):
        raise _Refused("operation_shape", "is not an object with an `op`", "Write each operation as {op: ..., ...}.")
    apply = _APPLY.get(operation["op"])
    if apply is None:
        raise _Refused("operation_unknown", f"`{operation['op']}` is no operation", f"Use one of: {', '.join(_APPLY)}.")
    apply(doc, operation)


def _text(operation: dict[str, Any], key: str) -> str:
    value = operation.get(key)
    if not isinstance(value, str) or not value:
        raise _Refused("operation_shape", f"needs `{key}` as a non-empty string", f"Give `{key}`.")
    return value


def _find(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    for node in doc["nodes"]:
        if isinstance(node, dict) and node.get("id") == node_id:
            return node
    known = ", ".join(sorted(_node_ids(doc))) or "none yet"
    raise _Refused(
        "operation_unknown_node",
        f"names node '{node_id}', which the graph does not have",
        (f"Name one of its nodes ({known}), or add this one first."),
        node_id,
    )


def _add(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    node_id, kind = _text(operation, "id"), _text(operation, "type")
    if node_id in _node_ids(doc) or node_id == END:
        raise _Refused(
            "operation_duplicate_id",
            f"adds node '{node_id}', an id already taken",
            ("Choose a new id, or change the existing node with set_field."),
            node_id,
        )
    if kind not in {str(t) for t in DESIGNABLE_TYPES}:
        types = ", ".join(str(t) for t in DESIGNABLE_TYPES)
        raise _Refused(
            "operation_unknown_type",
            f"adds a node of type '{kind}', which does not exist",
            (f"Use one of: {types}."),
            node_id,
        )
    fields = operation.get("fields") or {}
    if not isinstance(fields, dict):
        raise _Refused(
            "operation_shape", "needs `fields` as an object", "Give the node's fields as an object.", node_id
        )
    _check_fields(NodeType(kind), fields, node_id)
    doc["nodes"].append({"id": node_id, "type": kind, **fields})


def _check_fields(kind: NodeType, fields: dict[str, Any], node_id: str) -> None:
    allowed = node_fields(kind)
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise _Refused(
            "operation_unknown_field",
            f"sets {', '.join(unknown)}, which a {kind} node does not have",
            (f"A {kind} node's fields are: {', '.join(allowed)}."),
            node_id,
        )


def _set(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    node_id = _text(operation, "node")
    fields = operation.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise _Refused(
            "operation_shape",
            "needs `fields`: an object of field -> value",
            ('Give the fields to change, e.g. {"fields": {"system_prompt": "..."}} (null unsets one).'),
            node_id,
        )
    node = _find(doc, node_id)
    kind = node.get("type")
    if kind not in {str(t) for t in DESIGNABLE_TYPES}:
        raise _Refused(
            "operation_unknown_type",
            f"sets a field of '{node_id}', whose type '{kind}' is unknown",
            ("Remove the node and add it again with a known type."),
            node_id,
        )
    _check_fields(NodeType(str(kind)), fields, node_id)
    for field, value in fields.items():
        if value is None:
            node.pop(field, None)
        else:
            node[field] = value


def _connect(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    source, target = _text(operation, "from"), _text(operation, "to")
    _find(doc, source)
    if target != END:
        _find(doc, target)
    if any(_ends(e) == (source, target) for e in doc["edges"]):
        raise _Refused(
            "operation_duplicate_edge",
            f"connects {source} to {target}, which are connected already",
            ("Leave it out, or disconnect first to change the edge."),
            source,
        )
    edge: dict[str, Any] = {"source": source, "target": target}
    for key in ("schema_id", "condition_key"):
        if operation.get(key):
            edge[key] = operation[key]
    doc["edges"].append(edge)


def _ends(edge: Any) -> tuple[Any, Any]:
    if not isinstance(edge, dict):
        return None, None
    return edge.get("source", edge.get("source_node_id")), edge.get("target", edge.get("target_node_id"))


def _disconnect(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    source, target = _text(operation, "from"), _text(operation, "to")
    kept = [e for e in doc["edges"] if _ends(e) != (source, target)]
    if len(kept) == len(doc["edges"]):
        raise _Refused(
            "operation_unknown_edge",
            f"disconnects {source} from {target}, which are not connected",
            ("Name an edge the graph has."),
            source,
        )
    doc["edges"] = kept


def _remove(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    node_id = _text(operation, "node")
    node = _find(doc, node_id)
    doc["nodes"] = [n for n in doc["nodes"] if n is not node]
    doc["edges"] = [e for e in doc["edges"] if node_id not in _ends(e)]


def _add_schema(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    schema_id = _text(operation, "id")
    if schema_id in _schema_ids(doc):
        raise _Refused(
            "operation_duplicate_schema", f"adds schema '{schema_id}', an id already taken", ("Choose a new schema id.")
        )
    if not isinstance(operation.get("schema"), dict):
        raise _Refused("operation_shape", "needs `schema` as a JSON Schema object", "Give the schema as an object.")
    entry = {"id": schema_id, "version": "1.0.0", "schema": operation["schema"]}
    if isinstance(operation.get("description"), str):
        entry["description"] = operation["description"]
    doc["schemas"].append(entry)


def _set_graph(doc: dict[str, Any], operation: dict[str, Any]) -> None:
    field = _text(operation, "field")
    if field not in GRAPH_FIELDS:
        raise _Refused(
            "operation_unknown_field",
            f"sets the graph's `{field}`, which it may not change",
            (f"set_graph changes one of: {', '.join(GRAPH_FIELDS)}."),
        )
    if operation.get("value") is None:
        doc.pop(field, None)
    else:
        doc[field] = operation["value"]


_APPLY: dict[str, Callable[[dict[str, Any], dict[str, Any]], None]] = {
    "add_node": _add,
    "set_field": _set,
    "connect": _connect,
    "disconnect": _disconnect,
    "remove_node": _remove,
    "add_schema": _add_schema,
    "set_graph": _set_graph,
}
