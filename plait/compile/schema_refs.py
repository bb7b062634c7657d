"""What a schema may point at: references only inside the graph, regexes RE2 can run.

A validator never fetches (see `schema_validator`), so a reference to a URL or a file would only
fail when a value is checked, and so would a pattern RE2 cannot run with its ECMA-262 meaning.
Validation refuses both up front, naming where they are: `$ref`,
`$dynamicRef` and `$recursiveRef` may be `#...` (inside the same schema) or `<registry id>[#...]`
(a schema of the graph's `schemas:`); `$id` (draft-4 `id`) may only name an anchor (`#name`),
since a URI there would change what every reference below it means; a nested `$schema` may only
repeat the root's dialect. Schema positions are found with `referencing`'s own knowledge of each
dialect, so a property that happens to be named `$ref` is data, not a reference.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import referencing
import referencing.jsonschema
from referencing.exceptions import Unresolvable

from plait.compile.schema_validator import regex_error, schema_registry

Path = tuple[str | int, ...]
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_REF_HINT = (
    "refer to '#/...' inside the schema, or to a schema of the graph's `schemas:` by its id ('label' or 'label#/...')"
)


@dataclass(frozen=True, slots=True)
class RefProblem:
    """A reference or pattern in a schema that Plait refuses, with where it is and how to fix it."""

    code: str
    """`external_schema_ref`, `unresolved_schema_ref` or `unsupported_regex`."""
    path: Path
    message: str
    hint: str


def reference_problems(schema: Any, registry_json: str, registry_ids: frozenset[str]) -> list[RefProblem]:
    """Every reference, identifier, dialect and regex in `schema` that Plait cannot honour inside the graph.
    `registry_ids` are the ids a reference may name (empty where the registry cannot be seen)."""
    if not isinstance(schema, dict):
        return []
    dialect = schema.get("$schema")
    spec = referencing.jsonschema.specification_with(
        dialect if isinstance(dialect, str) else "", default=referencing.jsonschema.DRAFT7
    )
    resolver = schema_registry(registry_json).resolver_with_root(spec.create_resource(schema))
    problems: list[RefProblem] = []
    for path, node in _schema_nodes(spec, schema, ()):
        problems.extend(_identity_problems(spec, node, path, dialect))
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if isinstance(ref, str):
                problems.extend(_ref_problems(keyword, ref, (*path, keyword), resolver, registry_ids))
        problems.extend(_regex_problems(node, path))
    return problems


def _schema_nodes(spec: referencing.Specification[Any], node: dict[str, Any], path: Path) -> Iterator[tuple[Path, Any]]:
    """Every (sub)schema object with its path, by the dialect's own list of subschema keywords."""
    yield path, node
    kids = {id(kid) for kid in spec.subresources_of(node) if isinstance(kid, dict)}
    for key, value in node.items():
        if id(value) in kids:
            yield from _schema_nodes(spec, value, (*path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if id(item) in kids:
                    yield from _schema_nodes(spec, item, (*path, key, index))
        elif isinstance(value, dict):
            for name, item in value.items():
                if id(item) in kids:
                    yield from _schema_nodes(spec, item, (*path, key, name))


def _identity_problems(
    spec: referencing.Specification[Any], node: dict[str, Any], path: Path, dialect: Any
) -> list[RefProblem]:
    found: list[RefProblem] = []
    uri = spec.id_of(node)
    if isinstance(uri, str) and not uri.startswith("#"):
        key = "$id" if node.get("$id") == uri else "id"
        found.append(
            RefProblem(
                "external_schema_ref",
                (*path, key),
                f"{key} '{uri}' gives the schema a URI; references would be resolved against it, and nothing "
                "outside the graph is fetched",
                f"remove `{key}` (a registry schema is named by its `id:` entry; an anchor is written '#name')",
            )
        )
    nested = node.get("$schema")
    if path and nested is not None and not _same_dialect(nested, dialect):
        found.append(
            RefProblem(
                "external_schema_ref",
                (*path, "$schema"),
                f"nested $schema '{nested}' names another dialect than the schema's root; no dialect is fetched",
                "name the dialect once, in the root `$schema` (or remove the nested one)",
            )
        )
    return found


def _same_dialect(nested: Any, root: Any) -> bool:
    """Whether a nested `$schema` repeats the root's dialect (Draft 7 when the root names none)."""
    default = referencing.jsonschema.DRAFT7
    if not isinstance(nested, str):
        return False
    mine = referencing.jsonschema.specification_with(nested, default=None)  # type: ignore[arg-type]
    theirs = referencing.jsonschema.specification_with(root, default=default) if isinstance(root, str) else default
    return mine is not None and mine is theirs


def _ref_problems(keyword: str, ref: str, path: Path, resolver: Any, registry_ids: frozenset[str]) -> list[RefProblem]:
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or parts.query or (parts.path and parts.path not in registry_ids):
        why = (
            "a URL"
            if parts.scheme or parts.netloc
            else f"not the id of a schema of the graph's `schemas:` ({', '.join(sorted(registry_ids)) or 'none'})"
            if registry_ids
            else "a reference outside this schema (registry ids cannot be used here)"
        )
        message = f"{keyword} '{ref}' points outside the graph ({why}); Plait does not fetch schemas"
        return [RefProblem("external_schema_ref", path, message, _REF_HINT if registry_ids else _LOCAL_HINT)]
    try:
        resolver.lookup(ref)
    except Unresolvable:
        target = f"schema '{parts.path}'" if parts.path else "this schema"
        message = f"{keyword} '{ref}' does not resolve: {target} has no '#{parts.fragment}'"
        return [RefProblem("unresolved_schema_ref", path, message, "point at a JSON pointer or anchor that exists")]
    return []


_LOCAL_HINT = (
    "tool parameters are sent to the model as written: put the shared part under `definitions` and refer to "
    "'#/definitions/...'"
)


def _regex_problems(node: dict[str, Any], path: Path) -> list[RefProblem]:
    found: list[RefProblem] = []
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        found.extend(_regex_problem(pattern, (*path, "pattern")))
    props = node.get("patternProperties")
    if isinstance(props, Mapping):
        for key in props:
            if isinstance(key, str):
                found.extend(_regex_problem(key, (*path, "patternProperties", key)))
    return found


def _regex_problem(pattern: str, path: Path) -> list[RefProblem]:
    refused = regex_error(pattern)
    if refused is None:
        return []
    message = f"pattern {pattern!r} is not supported: {refused.reason}"
    return [RefProblem("unsupported_regex", path, message, refused.hint)]
