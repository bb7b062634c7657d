"""jsonschema's regex keywords, evaluated with ECMA-262 meaning on RE2 (see `ecma_regex`).

jsonschema runs `pattern`, `patternProperties`, the `additionalProperties` beside them and the
`unevaluatedProperties` that looks at them with Python's backtracking `re`: `(a+)+$` takes
exponential time, and `re` reads `\\s`, `\\d`, `\\w` and `$` differently from JSON Schema's dialect.
These replacements keep jsonschema's verdicts and messages and change only how a regex matches.

A string holding a lone surrogate (valid JSON, not Unicode text) matches no pattern: a `pattern`
on it is a violation, as is such a property name where `patternProperties` must be matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from jsonschema import ValidationError
from referencing.jsonschema import lookup_recursive_ref

from plait.caches import ByteBoundCache
from plait.compile.ecma_regex import RegexRefused, compile_regex, has_lone_surrogate

REGEX_MEMORY = 1 << 20
"""RE2 memory for one pattern (program and matching state); a pattern too large for it gets `LARGE_REGEX_MEMORY`."""
LARGE_REGEX_MEMORY = 4 << 20
_REGEXES: ByteBoundCache[tuple[Any, int]] = ByteBoundCache(
    "schema patterns", 64 << 20, max_entries=512, weigh=lambda built, _: built[1]
)
"""Compiled patterns (and refusals), each charged the RE2 memory it may use."""


def _build(pattern: str) -> tuple[Any, int]:
    """(compiled regex or RegexRefused, the bytes it may hold)."""
    try:
        return compile_regex(pattern, REGEX_MEMORY), REGEX_MEMORY
    except RegexRefused as refused:
        if not refused.reason.startswith("RE2 cannot run it: pattern too large"):
            return refused, 2 * len(pattern) + 512
    try:
        return compile_regex(pattern, LARGE_REGEX_MEMORY), LARGE_REGEX_MEMORY
    except RegexRefused as refused:
        return refused, 2 * len(pattern) + 512


def _compiled(pattern: str) -> Any:
    return _REGEXES.get((pattern,), lambda: _build(pattern))[0]


def regex_problem(pattern: str) -> RegexRefused | None:
    """Why `pattern` cannot run with its ECMA-262 meaning on RE2 (with what to write instead), or None."""
    compiled = _compiled(pattern)
    return compiled if isinstance(compiled, RegexRefused) else None


def matches(pattern: str, text: str) -> bool:
    """Whether the ECMA-262 `pattern` (one RE2 accepts) matches somewhere in `text`; never for a
    text with a lone surrogate, which is not Unicode text."""
    if has_lone_surrogate(text):
        return False
    return _compiled(pattern).search(text) is not None


def _usable(patterns: Iterable[Any]) -> list[str]:
    return [p for p in patterns if isinstance(p, str) and regex_problem(p) is None]


def _unsupported(regex: str, refused: RegexRefused) -> ValidationError:
    return ValidationError(f"the schema's pattern {regex!r} cannot be checked: {refused.reason}")


def _surrogate_text(text: str) -> str:
    return f"{text!r} is not valid Unicode text (it holds a lone surrogate)"


def pattern(validator: Any, regex: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    refused = regex_problem(regex)
    if refused is not None:
        yield _unsupported(regex, refused)
    elif has_lone_surrogate(instance):
        yield ValidationError(f"{_surrogate_text(instance)}, so it cannot match {regex!r}")
    elif not matches(regex, instance):
        yield ValidationError(f"{instance!r} does not match {regex!r}")


def pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for regex in patterns:
        refused = regex_problem(regex)
        if refused is not None:
            yield _unsupported(regex, refused)
    if patterns:
        for key in instance:
            if has_lone_surrogate(key):
                yield ValidationError(f"the property name {_surrogate_text(key)}, so no pattern can match it")
    for regex, subschema in patterns.items():
        if regex_problem(regex) is None:
            for key, value in instance.items():
                if matches(regex, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)


def additional_properties(validator: Any, extra: Any, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """jsonschema's `additionalProperties` (same messages), with `patternProperties` matched as above."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = _usable(schema.get("patternProperties", {}))
    extras = sorted(
        (key for key in instance if key not in properties and not any(matches(p, key) for p in patterns)), key=str
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


def unevaluated_properties(validator: Any, extra: Any, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """jsonschema's `unevaluatedProperties` of drafts 2019-09 and 2020-12 (same messages)."""
    if not validator.is_type(instance, "object"):
        return
    legacy = "$recursiveRef" in validator.VALIDATORS
    evaluated = _evaluated_keys(validator, instance, schema, legacy)
    unevaluated = [
        key
        for key in instance
        if key not in evaluated and next(validator.descend(instance[key], extra, path=key, schema_path=key), None)
    ]
    if not unevaluated:
        return
    if extra is False:
        names = sorted(unevaluated, key=str)
        verb = "was" if len(names) == 1 else "were"
        listed = ", ".join(repr(key) for key in names)
        yield ValidationError(f"Unevaluated properties are not allowed ({listed} {verb} unexpected)")
    else:
        verb = "was" if len(unevaluated) == 1 else "were"
        listed = ", ".join(repr(key) for key in unevaluated)
        yield ValidationError(
            f"Unevaluated properties are not valid under the given schema ({listed} {verb} unevaluated and invalid)"
        )


def _valid(errors: Iterator[Any]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any, legacy: bool) -> set[str]:
    """The property names some keyword of `schema` evaluated (what jsonschema computes, with
    `patternProperties` matched as above); `legacy`: draft 2019-09's rules."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    targets = []
    if (ref := schema.get("$ref")) is not None:
        targets.append(validator._resolver.lookup(ref))
    if legacy and "$recursiveRef" in schema:
        targets.append(lookup_recursive_ref(validator._resolver))
    if not legacy and (dynamic := schema.get("$dynamicRef")) is not None:
        targets.append(validator._resolver.lookup(dynamic))
    for resolved in targets:
        inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        keys |= _evaluated_keys(inner, instance, resolved.contents, legacy)
    keys |= _own_keys(validator, instance, schema, legacy)
    for name, subschema in (schema.get("dependentSchemas") or {}).items():
        if name in instance:
            keys |= _evaluated_keys(validator, instance, subschema, legacy)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema, legacy)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"], legacy)
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"], legacy)
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"], legacy)
    return keys


def _own_keys(validator: Any, instance: dict[str, Any], schema: dict[str, Any], legacy: bool) -> set[str]:
    """The names evaluated by `schema`'s own `properties`, `patternProperties`, `additionalProperties`
    and `unevaluatedProperties` (not its subschemas)."""
    keys: set[str] = set()
    if legacy:
        for keyword in ("properties", "additionalProperties", "unevaluatedProperties"):
            value = schema.get(keyword)
            if value is True:
                keys |= instance.keys()
            elif isinstance(value, dict):
                keys |= {name for name in value if name in instance}
    else:
        properties = schema.get("properties")
        if isinstance(properties, dict):
            keys |= properties.keys() & instance.keys()
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if (subschema := schema.get(keyword)) is not None:
                keys |= {key for key, value in instance.items() if _valid(validator.descend(value, subschema))}
    patterns = _usable(schema.get("patternProperties", {}))
    keys |= {key for key in instance if any(matches(p, key) for p in patterns)}
    return keys


KEYWORDS = {
    "pattern": pattern,
    "patternProperties": pattern_properties,
    "additionalProperties": additional_properties,
    "unevaluatedProperties": unevaluated_properties,
}
"""The keywords replaced in every draft that has them."""
