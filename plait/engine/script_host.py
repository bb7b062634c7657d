"""What a prompt script's host APIs read in a run: the node's names, the graph's schemas, and
(where the surface running the engine gives one) Plait's own GET routes.

- `getVar(path)`: the paths templates use (`input.topic`, `nodes.classify.label`, `current`,
  `context.x`, a bare node id), `/` accepted as the separator as in the seed
  (`input/topic`); a path with no value is an error the script can catch.
- `getSchemaHint(target)`: a readable description of a schema of the graph's registry (its id),
  or of the node's out-edge contract (`output`): what the model is asked to produce.
- `readRoute(route, params)`: handed to the `RouteReader` the engine was given; none: an error
  saying where it works.
"""

from __future__ import annotations

import json
from typing import Any

from plait.compile.schema_validator import registry_key
from plait.compile.schemas import object_form
from plait.compile.templates import split_path
from plait.engine.contracts import BoundSchema, OutputContract
from plait.engine.ports import RouteReader
from plait.engine.render import NodeView, value_at
from plait.engine.state import RunState
from plait.model.nodes import NodeBase
from plait.sandbox.scripts import HostError

OUTPUT = "output"
"""`getSchemaHint("output")`: the node's own out-edge contract."""


def split_target(target: str) -> tuple[str, str | None]:
    """A template's `schema_target` as the schema id it names and the version it was written
    for, when it names one (`summary@1.0.0`)."""
    schema_id, at, version = target.rpartition("@")
    return (schema_id, version) if at and schema_id else (target, None)


class RunScriptHost:
    """The host of one node's prompt script in one run (a `ScriptHost`)."""

    def __init__(self, node: NodeBase, state: RunState, view: NodeView, routes: RouteReader | None = None):
        self.node, self.state, self.view, self.routes = node, state, view, routes

    def get_var(self, path: str) -> Any:
        dotted = path.strip().replace("/", ".")
        if not dotted:
            raise HostError("getVar needs a path, such as 'input.topic' or 'nodes.classify.label'")
        steps = split_path(dotted)
        value = value_at(self.view.names, steps)
        self._record_read(steps)
        if value is None:
            raise HostError(
                f"no value at '{path}' in this run; paths start with input, current, context, nodes or a node "
                f"id upstream of '{self.node.id}'"
            )
        return value

    def _record_read(self, path: tuple[str | int, ...]) -> None:
        """Add the value `path` reads to what the node run read (the field ledger's `consumed`),
        at the version it has now: a script's reads are known only as it runs, and a correction
        of what it read must reach the node as one of what its prompt names does."""
        read = self.state.nodes[self.node.id].read
        head = str(path[0])
        name = str(path[1]) if head in ("nodes", "nodeOutputs", "context") and len(path) > 1 else head
        scope = self.state.compiled.scopes.get(self.node.id)
        if scope is not None and scope.prefix + name in self.state.versions:
            name = scope.prefix + name
        owners = self.state.compiled.aliases.get(name, [name])
        if read is None or name == self.node.id:
            return
        for owner in owners:
            if owner in self.state.versions:
                read.setdefault(owner, self.state.versions[owner])

    def schema_hint(self, target: str) -> str:
        graph = self.state.compiled.graph
        if target == OUTPUT:
            contract = self.state.compiled.contracts[self.node.id]
            if not contract.schemas:
                return "free text (no schema is bound to this node's out-edges)"
            return describe(contract.combined(), "the answer")
        entry = graph.schema_entry(target)
        if entry is None:
            known = ", ".join([OUTPUT, *(s.id for s in graph.schemas)])
            raise HostError(f"no schema '{target}' in this graph (known: {known})")
        title = f"{entry.id} (version {entry.version})" + (f": {entry.description}" if entry.description else "")
        return describe(object_form(entry.schema_), title)

    def contract(self, target: str) -> OutputContract | None:
        """The contract an answer is parsed with when a template's `schema_target` is `target`:
        the node's out-edge contract for `output`, else the graph's schema of that id, as the
        graph has it now (None: no such schema). A target may name the version it was written
        for (`summary@1.0.0`): the answer is still parsed with the graph's version."""
        if target == OUTPUT:
            return self.state.compiled.contracts[self.node.id]
        graph = self.state.compiled.graph
        entry = graph.schema_entry(split_target(target)[0])
        if entry is None:
            return None
        return OutputContract((BoundSchema(entry.id, entry.version, entry.schema_),), registry_key(graph.schemas))

    def read_route(self, route: str, params: dict[str, Any]) -> Any:
        return (self.routes or no_routes)(route, params)


def no_routes(route: str, params: dict[str, Any]) -> Any:
    """The route reader of an engine that was given none (outside `plait serve`): refused."""
    raise HostError(
        "readRoute reads Plait's own HTTP API, which this engine has not been given; it works in runs "
        "executed by `plait serve` and in the workbench's preview"
    )


def describe(schema: dict[str, Any], title: str) -> str:
    """A JSON Schema as a person (or a model) reads it: one line per field, with its type,
    whether it is required, and its constraints."""
    lines = [f"{title}:"]
    _fields(schema, lines, "  ")
    return "\n".join(lines)


def _fields(schema: dict[str, Any], lines: list[str], indent: str) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        lines.append(f"{indent}{_kind(schema)}")
        return
    required = set(schema.get("required") or ())
    for name, sub in properties.items():
        sub = sub if isinstance(sub, dict) else {}
        note = "required" if name in required else "optional"
        constraints = ", ".join(_constraints(sub))
        text = f"{indent}- {name}: {_kind(sub)} ({note}{', ' + constraints if constraints else ''})"
        if sub.get("description"):
            text += f": {sub['description']}"
        lines.append(text)
        if isinstance(sub.get("properties"), dict):
            _fields(sub, lines, indent + "  ")
        elif isinstance(sub.get("items"), dict) and isinstance(sub["items"].get("properties"), dict):
            lines.append(f"{indent}  each item:")
            _fields(sub["items"], lines, indent + "    ")


def _kind(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list of {_kind(schema['items'])}"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def _constraints(schema: dict[str, Any]) -> list[str]:
    names = {
        "minLength": "at least {} characters",
        "maxLength": "at most {} characters",
        "minimum": "at least {}",
        "maximum": "at most {}",
        "minItems": "at least {} items",
        "maxItems": "at most {} items",
        "pattern": "matching {}",
    }
    return [text.format(schema[key]) for key, text in names.items() if key in schema]
