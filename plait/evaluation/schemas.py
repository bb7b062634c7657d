"""The schema as the scorer reads it: `$ref` followed through the graph's registry, never fetched.

A reference resolves like it does for every validator Plait builds (`plait.compile.schema_validator`):
inside the schema itself or to a schema of the graph's registry, whose retrieval refuses. Of the
keywords beside a `$ref`, only `x-eval` is read: a field's settings may sit on the reference
(`{"$ref": "#/definitions/money", "x-eval": {"critical": true}}`) and win over the target's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import referencing
import referencing.jsonschema
from referencing._core import Resolver  # the public package exports no name for it
from referencing.exceptions import Unresolvable

from plait.compile.schema_validator import NO_REGISTRY, schema_registry
from plait.compile.schemas import object_form
from plait.evaluation.rules import KEYWORD, EvaluationError, parse_settings

_PLAIN = re.compile(r"[^.\[\]\s\"]+")
MAX_REF_HOPS = 32
"""References followed one into another without reaching a schema: past this, the chain is a loop."""
REGISTRY_HINT = (
    "pass the graph's registry: registry=schema_registry(registry_key(graph.schemas)) "
    "(plait.compile.schema_validator), or refer to '#/...' inside the schema"
)


def root_resolver(schema: Any, registry: referencing.Registry[Any] | None) -> Resolver[Any]:
    """A resolver rooted at `schema`, in `registry` (none given: one that holds nothing and fetches nothing)."""
    registry = registry if registry is not None else schema_registry(NO_REGISTRY)
    return registry.resolver_with_root(_spec(schema).create_resource(schema))


def _spec(schema: Any) -> referencing.Specification[Any]:
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    return referencing.jsonschema.specification_with(
        dialect if isinstance(dialect, str) else "", default=referencing.jsonschema.DRAFT7
    )


def resolve(node: Any, resolver: Resolver[Any], where: str) -> tuple[dict[str, Any], Resolver[Any]]:
    """`node` (`true`/`false` as objects) with its `$ref` chain followed, and the resolver inside its target."""
    current = object_form(node)
    outer: list[Any] = []
    for _ in range(MAX_REF_HOPS):
        ref = current.get("$ref")
        if not isinstance(ref, str):
            return _with_settings(current, outer), resolver
        if KEYWORD in current:
            outer.append(current[KEYWORD])
        try:
            resolved = resolver.lookup(ref)
        except Unresolvable as failed:
            raise EvaluationError(
                f"$ref '{ref}' of {where} does not resolve", REGISTRY_HINT, [str(failed)], code="unresolved_schema_ref"
            ) from None
        current, resolver = object_form(resolved.contents), resolved.resolver
    raise EvaluationError(
        f"the $ref chain of {where} goes round in a loop (more than {MAX_REF_HOPS} references without a schema)",
        "make one reference in the chain point at a schema with a type",
        code="circular_schema_ref",
    )


def _with_settings(target: dict[str, Any], outer: list[Any]) -> dict[str, Any]:
    """The target with the referring nodes' `x-eval` laid over its own (the outermost wins)."""
    if not outer:
        return target
    layers = [*reversed(outer)]
    if KEYWORD in target:
        layers.insert(0, target[KEYWORD])
    bad = next((layer for layer in layers if not isinstance(layer, Mapping)), None)
    merged: Any = bad
    if bad is None:
        merged = {}
        for layer in layers:
            merged.update(layer)
    return {**target, KEYWORD: merged}


def field_name(path: str) -> str:
    """A field path as people read it: `chapters[].start`, `$` for the whole value."""
    return path or "$"


def child(path: str, name: str) -> str:
    """The path of property `name` of the value at `path`; a name that would read as a path
    (empty, or with a dot, a bracket or a space) is quoted: `meta["a.b"]`."""
    if not name or _PLAIN.fullmatch(name) is None:
        return f"{path}[{json.dumps(name, ensure_ascii=False)}]"
    return f"{path}.{name}" if path else name


def settings_problems(schema: Any, resolver: Resolver[Any]) -> list[tuple[str, str]]:
    """Every wrong `x-eval` in `schema`, wherever it sits (in a branch no value reaches too), each
    as (what is wrong and where, how to fix it)."""
    spec = _spec(schema)
    problems: list[tuple[str, str]] = []
    _check(object_form(schema), spec, resolver, "", "", problems)
    return problems


def _check(
    node: dict[str, Any],
    spec: referencing.Specification[Any],
    resolver: Resolver[Any],
    pointer: str,
    field: str | None,
    problems: list[tuple[str, str]],
) -> None:
    where = f"field `{field_name(field)}` (#{pointer})" if field is not None else f"the schema at #{pointer}"
    checked: dict[str, Any] | None = node
    if "$ref" in node:
        try:
            target, _ = resolve({k: v for k, v in node.items() if k != KEYWORD}, resolver, where)
        except EvaluationError:
            target = {}  # scoring reports the reference itself
        checked = {**target, KEYWORD: node[KEYWORD]} if KEYWORD in node else None
    if checked is not None:
        problems.extend(parse_settings(checked, where)[1])
    kids = {id(kid) for kid in spec.subresources_of(node) if isinstance(kid, dict)}
    for key, value in node.items():
        if id(value) in kids:
            below = f"{field}[]" if field is not None and key == "items" else None
            _check(value, spec, resolver, f"{pointer}/{_escape(key)}", below, problems)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if id(item) in kids:
                    _check(item, spec, resolver, f"{pointer}/{_escape(key)}/{index}", None, problems)
        elif isinstance(value, dict):
            for name, item in value.items():
                if id(item) in kids:
                    below = child(field, str(name)) if field is not None and key == "properties" else None
                    _check(item, spec, resolver, f"{pointer}/{_escape(key)}/{_escape(str(name))}", below, problems)


def _escape(step: str) -> str:
    return step.replace("~", "~0").replace("/", "~1")
