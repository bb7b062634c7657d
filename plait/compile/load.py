"""Load graph data into `GraphDef`, turning every validation error into a positioned Diagnostic.

Nodes, edges, schemas and migrations are validated one by one so that one
bad node never hides the problems of the others: the compiler then runs its
semantic passes over everything that did validate.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.source import Path_, SourceDoc
from plait.model.graph import EdgeDef, GraphDef, SchemaEntry, SchemaMigration
from plait.model.nodes import NODE_CLASSES, NodeDef, NodeType, node_types_with_field

_SECTIONS = ("nodes", "edges", "schemas", "migrations")
SEMVER_FIELDS = ("version", "from_version", "to_version", "schema_version")


@dataclass
class LoadedGraph:
    """A GraphDef built from what validated, plus where everything came from."""

    graph: GraphDef
    doc: SourceDoc
    diagnostics: list[Diagnostic] = field(default_factory=list)
    node_paths: dict[str, Path_] = field(default_factory=dict)
    edge_paths: dict[str, Path_] = field(default_factory=dict)
    schema_paths: dict[str, Path_] = field(default_factory=dict)
    invalid_node_ids: set[str] = field(default_factory=set)
    """Ids of nodes that failed validation: edges to them are not 'dangling', just unchecked."""
    invalid_schema_ids: set[str] = field(default_factory=set)
    """Ids of schema entries that failed validation: references to them are not 'unknown', just unchecked."""

    def line(self, path: Path_) -> int | None:
        return self.doc.line_of(path)

    def node_line(self, node_id: str, *rest: str | int) -> int | None:
        path = self.node_paths.get(node_id)
        return self.line((*path, *rest)) if path is not None else None

    def edge_line(self, edge_id: str, *rest: str | int) -> int | None:
        path = self.edge_paths.get(edge_id)
        return self.line((*path, *rest)) if path is not None else None


@cache
def _node_adapter() -> TypeAdapter[Any]:
    return TypeAdapter(NodeDef)


def load_graph(doc: SourceDoc) -> LoadedGraph:
    """Validate `doc`'s data into a GraphDef part by part, never raising for bad data: each node,
    edge, schema and migration that fails is left out and reported as a positioned diagnostic,
    and the rest is kept so that the passes can check it."""
    data = doc.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        diag = Diagnostic(
            Category.CONFIG,
            "wrong_type",
            f"a graph file must hold a mapping, not {kind}",
            file=doc.file,
            line=1,
            hint="start the file with `id: my_graph` and `nodes:`",
        )
        return LoadedGraph(GraphDef.model_construct(id="invalid"), doc, [diag])

    diagnostics: list[Diagnostic] = []
    header = {k: v for k, v in data.items() if k not in _SECTIONS and k != "schema_registry"}
    schemas_key = "schemas" if "schemas" in data or "schema_registry" not in data else "schema_registry"
    header_ok = _validate(GraphDef, header, (), doc, diagnostics)

    # a placeholder until the parts are validated; its lists are given, not defaulted: pydantic reads
    # each default factory's signature on every model_construct (~1.5 ms of a small graph's compile)
    empty: dict[str, Any] = {"nodes": [], "edges": [], "schemas": [], "migrations": []}
    placeholder = GraphDef.model_construct(id=str(data.get("id", "invalid")), **empty)
    loaded = LoadedGraph(placeholder, doc, diagnostics)
    nodes = _validate_items(data, "nodes", _node_adapter().validate_python, doc, diagnostics, loaded)
    edges = _validate_items(data, "edges", EdgeDef.model_validate, doc, diagnostics, loaded)
    schemas = _validate_items(data, schemas_key, SchemaEntry.model_validate, doc, diagnostics, loaded)
    migrations = _validate_items(data, "migrations", SchemaMigration.model_validate, doc, diagnostics, loaded)

    for index, node in nodes:
        loaded.node_paths.setdefault(node.id, ("nodes", index))
    for index, schema in schemas:
        loaded.schema_paths.setdefault(schema.id, (schemas_key, index))
    _name_edges(edges, loaded)

    parts: dict[str, Any] = {
        "nodes": [n for _, n in nodes],
        "edges": [e for _, e in edges],
        "schemas": [s for _, s in schemas],
        "migrations": [m for _, m in migrations],
    }
    if isinstance(header_ok, GraphDef):
        loaded.graph = header_ok.model_copy(update=parts)
    else:
        loaded.graph = GraphDef.model_construct(**_valid_header_fields(header), **parts)
    return loaded


def _name_edges(edges: list[tuple[int, EdgeDef]], loaded: LoadedGraph) -> None:
    taken = {e.id for _, e in edges if e.id}
    for index, edge in edges:
        if edge.id is None:
            base = f"{edge.source_node_id}__{edge.target_node_id}"
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            edge.id = name
        loaded.edge_paths.setdefault(edge.id, ("edges", index))


def _valid_header_fields(header: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": str(header.get("id", "invalid"))}
    for key, value in header.items():
        try:
            GraphDef.__pydantic_validator__.validate_assignment(GraphDef.model_construct(id="_"), key, value)
        except (ValidationError, AttributeError):
            continue
        out[key] = value
    return out


def _validate_items(
    data: dict[str, Any], key: str, validate: Any, doc: SourceDoc, out: list[Diagnostic], loaded: LoadedGraph
) -> list[tuple[int, Any]]:
    items = data.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        out.append(
            Diagnostic(
                Category.CONFIG,
                "wrong_type",
                f"'{key}' must be a list, not {type(items).__name__}",
                file=doc.file,
                line=doc.line_of((key,)),
                hint=f"write `{key}:` followed by `- ...` items",
            )
        )
        return []
    valid: list[tuple[int, Any]] = []
    for index, item in enumerate(items):
        result = _validate(validate, item, (key, index), doc, out)
        if result is not None:
            valid.append((index, result))
        elif key == "nodes" and isinstance(item, dict) and isinstance(item.get("id"), str):
            loaded.invalid_node_ids.add(item["id"])
        elif key in ("schemas", "schema_registry") and isinstance(item, dict) and isinstance(item.get("id"), str):
            loaded.invalid_schema_ids.add(item["id"])
    return valid


def _validate(validate: Any, item: Any, base: Path_, doc: SourceDoc, out: list[Diagnostic]) -> Any:
    try:
        if isinstance(validate, type) and issubclass(validate, BaseModel):
            return validate.model_validate(item)
        return validate(item)
    except ValidationError as exc:
        out.extend(_translate(exc, item, base, doc))
        return None


def _translate(exc: ValidationError, item: Any, base: Path_, doc: SourceDoc) -> Iterable[Diagnostic]:
    node_id = item.get("id") if base[:1] == ("nodes",) and isinstance(item, dict) else None
    edge_id = item.get("id") if base[:1] == ("edges",) and isinstance(item, dict) else None
    node_type = item.get("type") if node_id is not None or base[:1] == ("nodes",) else None
    located = [(_data_path(item, err["loc"], err["type"]), err) for err in exc.errors(include_url=False)]
    seen: set[Path_] = set()
    for rel, err in located:
        # A union reports the same bad value once per member: keep one error per data path, and
        # drop "wrong shape" errors of members when another member got further into the value.
        if rel in seen or any(len(other) > len(rel) and other[: len(rel)] == rel for other, _ in located):
            continue
        seen.add(rel)
        if err["type"] == "union_tag_invalid" and not rel and isinstance(item, dict) and "type" in item:
            rel = ("type",)  # point at the bad `type:` line, not the node's first line
        code, message, hint = _describe(err, rel, node_type, base, item)
        yield Diagnostic(
            Category.CONFIG,
            code,
            message,
            node_id=node_id if isinstance(node_id, str) else None,
            edge_id=edge_id if isinstance(edge_id, str) else None,
            file=doc.file,
            line=doc.line_of((*base, *rel)),
            hint=hint,
        )


def _data_path(item: Any, loc: tuple[Any, ...], kind: str) -> Path_:
    """Map a pydantic `loc` onto the data, dropping union-member tags that are not keys."""
    path: list[str | int] = []
    current = item
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if (isinstance(current, dict) and part in current) or (
            isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        ):
            path.append(part)
            current = current[part]
        elif (
            last
            and kind == "missing"
            and isinstance(part, str)
            and isinstance(current, dict)
            and part not in NodeType.__members__
        ):
            path.append(part)  # a missing field: point at its parent's line, keep the name
        # anything else is a union tag or model name (e.g. 'LLM_CALL', 'function-after')
    return tuple(path)


def _describe(err: Any, rel: Path_, node_type: Any, base: Path_, item: Any) -> tuple[str, str, str]:
    kind = err["type"]
    field_name = str(rel[-1]) if rel else ""
    where = ".".join(str(p) for p in (*base, *rel))
    is_node_field = base[:1] == ("nodes",) and len(rel) == 1
    type_label = f"{node_type} nodes" if isinstance(node_type, str) else "nodes"

    if kind == "extra_forbidden":
        if is_node_field and node_type in NodeType.__members__:
            owners = [str(t) for t in node_types_with_field(field_name)]
            allowed = list(NODE_CLASSES[NodeType(node_type)].model_fields)
            message = f"field '{field_name}' is not allowed on {type_label}"
            if owners:
                return (
                    "field_not_allowed",
                    f"{message}; it belongs to {', '.join(owners)}",
                    f"remove '{field_name}' or change the node type",
                )
            return "unknown_field", message, _suggest(field_name, allowed, "remove it")
        return (
            "unknown_field",
            f"unknown field '{where}'",
            _suggest(field_name, _allowed_fields(base, rel), "remove it"),
        )
    if kind == "missing" and field_name == "handler" and "tools" in rel:
        tool = _value_at(item, rel[:-1])
        name = tool.get("name") if isinstance(tool, dict) else None
        return (
            "tool_without_handler",
            f"tool '{name if isinstance(name, str) else where.removesuffix('.handler')}' has no handler",
            "add `handler:` CONTEXT_WRITE, TRANSFORM_EXPR or WORKFLOW_TASK",
        )
    if kind == "missing" and base[:1] == ("edges",) and field_name in ("source_node_id", "target_node_id"):
        end = field_name.removesuffix("_node_id")
        return "missing_field", f"edge {where.rsplit('.', 1)[0]} has no '{end}'", f"add `{end}:`; {_EDGE_ENDS}"
    if kind == "missing":
        suffix = f" for {type_label}" if is_node_field else ""
        return "missing_field", f"missing required field '{where}'{suffix}", f"add `{field_name}:`"
    if kind == "union_tag_invalid":
        given = err.get("ctx", {}).get("tag", "?")
        names = [t.value for t in NodeType]
        return (
            "unknown_node_type",
            f"unknown node type '{given}'",
            _suggest(str(given), names, "use one of: " + ", ".join(names)),
        )
    if kind == "union_tag_not_found":
        return "missing_field", f"node '{where}' has no 'type'", "add `type:` (e.g. LLM_CALL)"
    message = str(err["msg"]).removeprefix("Value error, ")
    if field_name in SEMVER_FIELDS and kind == "value_error":
        return "bad_semver", f"{where}: {message}", "versions are MAJOR.MINOR.PATCH, e.g. 1.2.0"
    code = "wrong_type" if kind.endswith(("_type", "_parsing")) else "invalid_value"  # `max_retries: lots` too
    return code, f"{where}: {message}" if where else message, _value_hint(err)


_BOUNDS = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}
_LENGTHS = {"min_length": "at least", "max_length": "at most"}
_TYPE_NAMES = {
    "list": "a list (`- item` lines or `[a, b]`)",
    "dict": "a mapping (`key: value` lines or `{key: value}`)",
    "model": "a mapping (`key: value` lines or `{key: value}`)",
    "string": "a string (quote it if it looks like a number or a boolean)",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
}


def _value_hint(err: Any) -> str:
    ctx = err.get("ctx", {})
    if ctx.get("expected"):
        return f"expected {ctx['expected']}"
    bounds = [f"{word} {ctx[key]}" for key, word in _BOUNDS.items() if key in ctx]
    if bounds:
        return "the value must be " + " and ".join(bounds)
    lengths = [f"{word} {ctx[key]} long" for key, word in _LENGTHS.items() if key in ctx]
    if lengths:
        return "make it " + " and ".join(lengths)
    kind = str(err["type"]).removesuffix("_type").removesuffix("_parsing")
    if kind in _TYPE_NAMES:
        return f"write {_TYPE_NAMES[kind]}"
    return "see docs/graph-format.md for what this field accepts"


def _value_at(item: Any, path: Path_) -> Any:
    for part in path:
        found = (isinstance(item, dict) and part in item) or (
            isinstance(item, list) and isinstance(part, int) and 0 <= part < len(item)
        )
        if not found:
            return None
        item = item[part]
    return item


def _allowed_fields(base: Path_, rel: Path_) -> list[str]:
    if not base and len(rel) == 1:
        return [*GraphDef.model_fields, "schema_registry"]
    models: dict[str, type[BaseModel]] = {"edges": EdgeDef, "schemas": SchemaEntry, "migrations": SchemaMigration}
    model: type[BaseModel] | None = models.get(str(base[0])) if base else None
    if model is not None and len(rel) == 1:
        return [*model.model_fields, "source", "target", "schema"]
    return []


_ALIASES = {
    **dict.fromkeys(
        ("prompt", "user_prompt", "template", "prompt_template", "user_template", "message"), "user_prompt_tpl"
    ),
    **dict.fromkeys(("system", "system_message", "instructions", "system_template"), "system_prompt"),
    **dict.fromkeys(("from", "src", "source_node", "start"), "source"),
    **dict.fromkeys(("to", "dst", "dest", "destination", "target_node", "end"), "target"),
    **dict.fromkeys(("condition", "when", "if"), "condition_expr"),
    **dict.fromkeys(("expression", "expr", "transform"), "transform_expr"),
    **dict.fromkeys(("retries", "retry"), "max_retries"),
    **dict.fromkeys(("timeout",), "timeout_s"),
    **dict.fromkeys(("model", "llm"), "model_role"),
    **dict.fromkeys(("temperature",), "temperature_override"),
    **dict.fromkeys(("max_tokens",), "max_tokens_override"),
}
"""What other prompt tools call a field, and its name here: a spelling match would pick the wrong one
(`prompt` is closest to `spj_prompt`, but a prompt template is `user_prompt_tpl`)."""
_EDGE_ENDS = "edges are written `source:` and `target:` (or source_node_id / target_node_id)"


def _suggest(given: str, options: list[str], fallback: str) -> str:
    alias = _ALIASES.get(given.lower())
    if alias in options or (alias in ("source", "target") and "source_node_id" in options):
        return f"did you mean '{alias}'?" + (f" {_EDGE_ENDS}" if alias in ("source", "target") else "")
    close = difflib.get_close_matches(given, options, n=1, cutoff=0.5)
    close = close or [o for o in options if given and o.upper().startswith(given.upper())][:1]
    return f"did you mean '{close[0]}'?" if close else fallback
