"""Output contracts: the JSON Schemas on a node's out-edges, combined for the model and enforced on the result.

A node's output must satisfy every out-edge schema. For the
model, the schemas are merged into one `response_format`; for enforcement,
each is validated separately so that errors name the schema that failed.
An LLM_CALL may also be asked for a schema of its run input (`answer_schema`): it comes first
and is enforced as well, but the stored output names only its out-edge schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from plait.compile.schema_inline import inline_refs
from plait.compile.schema_validator import NO_REGISTRY, registry_key, schema_key, violations
from plait.compile.schemas import object_form
from plait.model.graph import EdgeDef, GraphDef, SchemaEntry
from plait.model.output_meta import SCHEMA_ID, SCHEMA_VERSION, strip_meta

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class BoundSchema:
    """One out-edge schema in a node's contract: the schema entry's id, its version and its JSON Schema."""

    id: str
    version: str
    schema: dict[str, Any] | bool


@dataclass(frozen=True, slots=True)
class OutputContract:
    """Built once per graph version and used by every node run: what it derives is cached."""

    schemas: tuple[BoundSchema, ...]
    registry: str = NO_REGISTRY
    """The graph's `schemas:` (as `registry_key`), which a `$ref: "label"` names."""
    asked: BoundSchema | None = None
    """A schema from the run input (an LLM_CALL's `answer_schema`): shown to the model before the
    out-edge schemas (so its narrower definitions win when combined) and enforced with them, but
    never the one an output is annotated with. Its `id` is the path it was read from, its
    `version` a digest of its text."""
    _format: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)
    _combined: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)
    _keys: tuple[str, ...] | None = field(default=None, init=False, compare=False, repr=False)
    """Each schema's `schema_key`, computed once."""

    @property
    def structured(self) -> bool:
        return bool(self.schemas) or self.asked is not None

    @property
    def enforced(self) -> tuple[BoundSchema, ...]:
        """Every schema an answer must meet: the asked one first, then the out-edge schemas."""
        return self.schemas if self.asked is None else (self.asked, *self.schemas)

    def asking(self, schema: BoundSchema) -> OutputContract:
        """This contract with `schema` asked for first (see `asked`)."""
        return OutputContract(self.schemas, self.registry, schema)

    def response_format(self) -> dict[str, Any] | None:
        """OpenAI-style `json_schema` response_format for all out-edge schemas combined.
        The same (read-only) object every time: copy it before changing it."""
        if not self.structured:
            return None
        if self._format is None:
            ids = [s.id for s in self.schemas]
            if self.asked is not None:  # named by its digest: another schema is another request
                ids.insert(0, f"answer_{self.asked.version}")
            name = "__".join(ids)[:64]
            value = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": self.combined()}}
            object.__setattr__(self, "_format", value)
        return self._format

    def combined(self) -> dict[str, Any]:
        """The schemas as the model is shown them: references written out, then combined. The
        same (read-only) object every time: copy it before changing it."""
        if self._combined is None:
            shown = combine_schemas([inline_refs(object_form(s.schema), self.registry) for s in self.enforced])
            value: dict[str, Any] = _without_scoring(shown)
            object.__setattr__(self, "_combined", value)
            return value
        return self._combined

    def parse(self, text: str | None) -> tuple[Any, list[str]]:
        """A model's answer as a value, and every way it fails the contract (empty when valid).
        Without schemas the text is the value; a JSON answer may come inside a ``` fence."""
        text = text or ""
        if not self.structured:
            return text, []
        value, problems = parse_json(text)
        return (value, problems) if problems else (value, self.violations(value))

    def violations(self, value: Any) -> list[str]:
        """Every way `value` breaks a schema, as `path: message (schema 'id')` lines (empty when valid)."""
        data = strip_meta(value)
        if self._keys is None:
            object.__setattr__(self, "_keys", tuple(schema_key(b.schema) for b in self.enforced))
        problems: list[str] = []
        for bound, key in zip(self.enforced, self._keys or (), strict=True):
            # the schema id goes last: in front it read as a repeated path ("summary: summary: 5 is ...")
            problems.extend(f"{p} (schema '{bound.id}')" for p in violations(key, self.registry, data))
        return problems

    def annotate(self, value: Any) -> Any:
        """The stored form: objects carry `_schema_id` / `_schema_version` of their first out-edge
        schema (never of the asked one, which is the run's, not the graph's)."""
        if not self.schemas or not isinstance(value, dict):
            return value
        first = self.schemas[0]
        return {**value, SCHEMA_ID: first.id, SCHEMA_VERSION: first.version}


_DECODE = json.JSONDecoder(strict=False).decode
"""`json.loads(text, strict=False)` without a new decoder per call (`loads` builds one for any
keyword): a raw newline or tab inside a string (llama.cpp's JSON grammar lets the model write
one) is read as that character; the value is still schema-checked."""


def parse_json(text: str) -> tuple[Any, list[str]]:
    """A model's JSON answer (it may come inside a ``` fence) as a value, or why it is not JSON."""
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        if body.startswith("\ufeff"):  # what `json.loads` refuses before decoding
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", body, 0)
        return _DECODE(body), []
    except json.JSONDecodeError as exc:
        return None, [f"the answer is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]


def contract_for(graph: GraphDef, out_edges: list[EdgeDef]) -> OutputContract:
    """The contract of a node with `out_edges`: each distinct schema they name that the graph
    declares, in edge order; with none, an unstructured contract (any text is valid)."""
    seen: dict[str, BoundSchema] = {}
    for edge in out_edges:
        if edge.schema_id and edge.schema_id not in seen:
            entry = graph.schema_entry(edge.schema_id)
            if entry is not None:
                seen[edge.schema_id] = BoundSchema(entry.id, entry.version, entry.schema_)
    return OutputContract(tuple(seen.values()), registry_key(graph.schemas) if seen else NO_REGISTRY)


def combine_schemas(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema that accepts what all accept: object schemas merged, anything else as `allOf`."""
    if len(schemas) == 1:
        return schemas[0]
    if all(s.get("type") == "object" for s in schemas):
        properties: dict[str, Any] = {}
        required: list[str] = []
        for schema in schemas:
            for key, sub in (schema.get("properties") or {}).items():
                properties.setdefault(key, sub)
            required.extend(r for r in schema.get("required", []) if r not in required)
        merged: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
        if any(s.get("additionalProperties") is False for s in schemas):
            merged["additionalProperties"] = False
        return merged
    return {"allOf": schemas}


def schema_violations(schema: dict[str, Any] | bool, value: Any, registry: Iterable[SchemaEntry] = ()) -> list[str]:
    """Every way `value` breaks `schema`, as `path: message` lines (empty when valid); `registry` is the
    graph's `schemas:`, which a `$ref: "label"` names (nothing outside it is ever fetched)."""
    return violations(schema_key(schema), registry_key(registry), value)


def _without_scoring(schema: Any) -> Any:
    """`schema` without its `x-eval` settings: how Plait scores an answer is not the model's to see
    (nor, in strict mode, a keyword a provider must accept). Property names are kept, even
    "x-eval", and values (`enum`, `const`, `default`, `examples`) are left as they are."""
    if isinstance(schema, list):
        return [_without_scoring(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "x-eval":
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            kept[key] = {name: _without_scoring(sub) for name, sub in value.items()}
        elif key in _VALUES:
            kept[key] = value
        else:
            kept[key] = _without_scoring(value)
    return kept


_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_VALUES = frozenset({"enum", "const", "default", "examples", "required", "dependentRequired"})
