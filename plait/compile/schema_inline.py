"""A schema with its references written out, for the model.

A node's out-edge schemas reach the model as one `response_format`. There a `$ref` would mean
nothing: a registry id (`$ref: label`) names a schema the model never sees, and a local
`#/definitions/x` points into the edge's own document, which is no longer the root once the
edge schemas are combined. So each schema is shown with every reference replaced by what it
resolves to, inside the graph only (the registry retrieves nothing). A recursive reference is
shown as `{}` from its second appearance on: the model may write anything there, and the real
validator, which follows the recursion, still checks the answer.
"""

from __future__ import annotations

import json
from typing import Any

import referencing.jsonschema
from referencing._core import Resolver  # the public package exports no name for it
from referencing.exceptions import Unresolvable

from plait.compile.schema_validator import NO_REGISTRY, schema_registry

_DEFINITIONS = ("$defs", "definitions")
_DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a `$ref` key there is not a reference."""
MAX_INLINE_DEPTH = 32
"""References followed within one another before the rest is shown as `{}`."""


def inline_refs(schema: dict[str, Any], registry_json: str = NO_REGISTRY) -> dict[str, Any]:
    """`schema` with every `$ref` replaced by its target (the same object when it has none)."""
    if '"$ref"' not in json.dumps(schema):
        return schema
    registry = schema_registry(registry_json)
    root = referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT7)
    resolver = registry.resolver_with_root(root)
    out = _walk(schema, resolver, ())
    return {k: v for k, v in out.items() if k not in _DEFINITIONS} if isinstance(out, dict) else schema


def _walk(node: Any, resolver: Resolver[Any], following: tuple[int, ...]) -> Any:
    if isinstance(node, list):
        return [_walk(item, resolver, following) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolved = resolver.lookup(ref)
        except Unresolvable:
            return {}  # refused at validate time; shown as "anything" if one slips through
        target = id(resolved.contents)
        if target in following or len(following) >= MAX_INLINE_DEPTH:
            return {}
        inlined = _walk(resolved.contents, resolved.resolver, (*following, target))
        if not isinstance(inlined, dict):
            return inlined
        notes = {k: v for k, v in node.items() if k in ("description", "title")}
        return {**{k: v for k, v in inlined.items() if k not in _DEFINITIONS}, **notes}
    return {key: value if key in _DATA else _walk(value, resolver, following) for key, value in node.items()}
