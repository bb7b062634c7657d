"""The one way Plait builds JSON Schema validators: references stay inside the graph, regexes run in linear time.

A schema comes from whoever wrote the graph (or from an MCP server), and is validated inside the
server process. jsonschema's defaults would fetch any `$ref` URL it cannot resolve (an SSRF, on the
event loop, with no timeout) and run `pattern` with Python's backtracking `re` (a pattern such as
`(a+)+$` takes exponential time). So every validator gets a `referencing.Registry` that holds only
the graph's registry schemas and whose retrieval refuses, and `pattern` / `patternProperties` /
`additionalProperties` evaluated with RE2.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]
import referencing
import referencing.jsonschema
from jsonschema import Draft7Validator, ValidationError, validators
from jsonschema.exceptions import UnknownType
from referencing.exceptions import NoSuchResource, Unresolvable

from plait.model.graph import SchemaEntry

NO_REGISTRY = "{}"
"""The registry key of a schema validated without the graph's registry."""
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to the user, not logged to stderr


def registry_key(entries: Iterable[SchemaEntry]) -> str:
    """The graph's registry as one hashable key (validators are cached by schema and registry). Key
    order is kept: a schema's property order is the order a model is asked to write the fields in."""
    return json.dumps({entry.id: entry.schema_ for entry in entries})


def schema_key(schema: Any) -> str:
    """`schema` as canonical JSON text (keys sorted): equal schemas get the same key, which caches their validator."""
    return json.dumps(schema, sort_keys=True)


def regex_error(pattern: str) -> str | None:
    """Why RE2 cannot run `pattern` (lookaround, backreferences, too large), or None when it can."""
    try:
        _regex(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return None


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern, _RE2_OPTIONS)


def _search(pattern: str, text: str) -> bool:
    return _regex(pattern).search(text) is not None


def _unsupported(pattern: str) -> ValidationError | None:
    reason = regex_error(pattern)
    if reason is None:
        return None
    return ValidationError(f"the schema's pattern {pattern!r} is not supported ({reason}); it cannot be checked")


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    refused = _unsupported(pattern)
    if refused is not None:
        yield refused
    elif not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        refused = _unsupported(pattern)
        if refused is not None:
            yield refused
            continue
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """jsonschema's `additionalProperties` (same messages), with `patternProperties` matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = [p for p in schema.get("patternProperties", {}) if regex_error(p) is None]
    extras = sorted(
        (key for key in instance if key not in properties and not any(_search(p, key) for p in patterns)), key=str
    )
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        names = ", ".join(repr(key) for key in extras)
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{names} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


_RE2_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@cache
def safe_class(cls: Any) -> Any:
    """`cls` (a jsonschema draft) with its regex keywords evaluated by RE2."""
    keywords = {k: f for k, f in _RE2_KEYWORDS.items() if k in cls.VALIDATORS}
    return validators.extend(cls, keywords)  # type: ignore[no-untyped-call]


def _refuse(uri: str) -> referencing.Resource[Any]:
    """Retrieval of any reference the graph does not hold: refused, never fetched or read from disk."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


@lru_cache(maxsize=256)
def schema_registry(key: str) -> referencing.Registry[Any]:
    """The graph's registry schemas under their ids (so `$ref: "label"` means registry entry `label`)."""
    entries: dict[str, Any] = json.loads(key)
    registry: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
    return registry.with_resources(
        (sid, referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT7))
        for sid, schema in entries.items()
    )


def draft_of(schema: Any) -> Any:
    """The jsonschema class of `schema`'s `$schema` (Draft 7 when absent or unknown)."""
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(dialect, str):
        return Draft7Validator
    return validators.validator_for({"$schema": dialect}, default=Draft7Validator)


@lru_cache(maxsize=1024)
def cached_validator(schema_json: str, registry_json: str = NO_REGISTRY) -> Any:
    """A validator of `schema_json` that resolves references only inside `registry_json`."""
    schema = json.loads(schema_json)
    return safe_class(draft_of(schema))(schema, registry=schema_registry(registry_json))


def messages(validator: Any, value: Any) -> list[str]:
    """Every way `value` breaks the validator's schema, as `path: message` lines; a schema that cannot
    be applied (a reference outside the graph, an unknown type) is one line saying so, not an exception."""
    try:
        return [
            f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
            for error in validator.iter_errors(value)
        ]
    except Unresolvable as exc:
        return [
            f"(schema): the schema's reference {getattr(exc, 'ref', '')!r} cannot be resolved: only references "
            "inside the graph ('#/...' and the ids of the graph's `schemas:`) are followed, nothing is fetched"
        ]
    except UnknownType as exc:
        return [f"(schema): the schema names an unknown type {exc.type!r}"]
