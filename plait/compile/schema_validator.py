"""The one way Plait builds JSON Schema validators: references stay inside the graph, regexes run in linear time.

A schema comes from whoever wrote the graph (or from an MCP server), and is validated inside the
server process. jsonschema's defaults would fetch any `$ref` URL it cannot resolve (an SSRF, on the
event loop, with no timeout) and run `pattern` with Python's backtracking `re` (a pattern such as
`(a+)+$` takes exponential time). So every validator gets a `referencing.Registry` that holds only
the graph's registry schemas and whose retrieval refuses, and its regex keywords evaluated with
ECMA-262 meaning on RE2 (`schema_keywords`). Validators and registries are cached by their
schema's text, charged for the bytes they hold, with long keys kept as digests (`plait.caches`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from typing import Any

import referencing
import referencing.jsonschema
from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import UnknownType
from referencing.exceptions import NoSuchResource, Unresolvable

from plait.caches import ByteBoundCache, small
from plait.compile.ecma_regex import RegexRefused
from plait.compile.schema_keywords import KEYWORDS, regex_problem
from plait.model.graph import SchemaEntry

NO_REGISTRY = "{}"
"""The registry key of a schema validated without the graph's registry."""
PARSED_BYTES_PER_CHAR = 10
"""What a parsed schema holds per character of its JSON text (dicts, lists and strings of CPython)."""
_REGISTRIES: ByteBoundCache[referencing.Registry[Any]] = ByteBoundCache(
    "schema registries", 32 << 20, max_entries=256, weigh=lambda _, key: PARSED_BYTES_PER_CHAR * len(key[0]) + 4096
)
_VALIDATORS: ByteBoundCache[Any] = ByteBoundCache(
    "schema validators",
    128 << 20,
    max_entries=2048,
    weigh=lambda _, key: PARSED_BYTES_PER_CHAR * (len(key[0]) + len(key[1])) + 4096,
)
_FOUND_VALID: ByteBoundCache[bool] = ByteBoundCache("values found valid", 8 << 20, max_entries=16_384, weigh=small)
"""(schema, registry, value as JSON text) of values a schema accepted (long texts kept as digests)."""
_ENCODE = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")).encode


def registry_key(entries: Iterable[SchemaEntry]) -> str:
    """The graph's registry as one hashable key (validators are cached by schema and registry). Key
    order is kept: a schema's property order is the order a model is asked to write the fields in."""
    return json.dumps({entry.id: entry.schema_ for entry in entries})


def schema_key(schema: Any) -> str:
    """`schema` as canonical JSON text (keys sorted): equal schemas get the same key, which caches their validator."""
    return json.dumps(schema, sort_keys=True)


def regex_error(pattern: str) -> RegexRefused | None:
    """Why `pattern` cannot run with its ECMA-262 meaning on RE2 (lookaround, backreferences, a
    property RE2 does not know, too large), with what to write instead; None when it can."""
    return regex_problem(pattern)


@cache
def safe_class(cls: Any) -> Any:
    """`cls` (a jsonschema draft) with its regex keywords evaluated on RE2."""
    keywords = {k: f for k, f in KEYWORDS.items() if k in cls.VALIDATORS}
    return validators.extend(cls, keywords)  # type: ignore[no-untyped-call]


def _refuse(uri: str) -> referencing.Resource[Any]:
    """Retrieval of any reference the graph does not hold: refused, never fetched or read from disk."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


def schema_registry(key: str) -> referencing.Registry[Any]:
    """The graph's registry schemas under their ids (so `$ref: "label"` means registry entry `label`)."""
    return _REGISTRIES.get((key,), lambda: _registry(key))


def _registry(key: str) -> referencing.Registry[Any]:
    entries: dict[str, Any] = json.loads(key)
    registry: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
    return registry.with_resources(
        (sid, referencing.Resource.from_contents(schema, default_specification=referencing.jsonschema.DRAFT7))
        for sid, schema in entries.items()
    )


def draft_of(schema: Any) -> Any:
    """The jsonschema class of `schema`'s `$schema` (Draft 7 when absent or unknown, or for `true` / `false`)."""
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(dialect, str):
        return Draft7Validator
    return validators.validator_for({"$schema": dialect}, default=Draft7Validator)


def cached_validator(schema_json: str, registry_json: str = NO_REGISTRY) -> Any:
    """A validator of `schema_json` that resolves references only inside `registry_json`."""
    return _VALIDATORS.get((schema_json, registry_json), lambda: _validator(schema_json, registry_json))


def _validator(schema_json: str, registry_json: str) -> Any:
    schema = json.loads(schema_json)
    return safe_class(draft_of(schema))(schema, registry=schema_registry(registry_json))


def violations(schema_json: str, registry_json: str, value: Any) -> list[str]:
    """`messages` of `value` under the schema `schema_json` (with `registry_json`'s references),
    remembering the values it accepted: a node's output, checked against its out-edge's schema,
    is checked against the same schema again as the next node's input, and by every branch of a
    fan-out. Values are told apart by their JSON text (`1` and `1.0`, `true` and `1` differ)."""
    try:
        text: str | None = _ENCODE(value)
    except (TypeError, ValueError, RecursionError):  # not JSON: never remembered
        text = None
    if text is not None and _FOUND_VALID.hit((schema_json, registry_json, text)) is not None:
        return []
    problems = messages(cached_validator(schema_json, registry_json), value)
    if not problems and text is not None:
        _FOUND_VALID.put((schema_json, registry_json, text), True)
    return problems


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
