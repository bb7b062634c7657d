"""Per-field scoring settings: the `x-eval` keyword of a schema, read strictly.

A graph's author tunes how a field is scored where the field is declared, in its schema:
`{"type": "number", "x-eval": {"tolerance": 0.5}}`. JSON Schema ignores keywords it does not
know, so the same schema still validates values. A setting that cannot mean anything for the
field (a tolerance on a string, a threshold on an integer) is refused rather than ignored: a
setting that silently does nothing would make a gate pass that the author meant to fail.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from plait.errors import PlaitError, Refusal

KEYWORD = "x-eval"

ABSOLUTE_TOLERANCE = 1e-9
RELATIVE_TOLERANCE = 1e-6
"""Numbers pass when they differ by at most the larger of the absolute tolerance and the relative
one times the larger magnitude: float noise passes, a changed figure does not."""
MEANING_THRESHOLD = 0.8
"""Cosine of all-MiniLM-L6-v2 at or above which two texts say the same (paraphrases measured
0.79-0.97, unrelated sentences 0.01-0.64; a negation or a changed number can stay above it)."""
WORDS_THRESHOLD = 0.8
"""Word-level F1 at or above which two texts pass when no similarity is given."""
ARRAY_THRESHOLD = 1.0
"""An array passes only when every item is matched (F1 1.0) unless its field says otherwise."""
JUDGE_SAMPLES = 3
"""Verdicts asked of the judge per field: an odd number, so a majority always exists."""


class EvaluationError(PlaitError):
    """Scoring or gating cannot be done as asked (a reference that does not resolve, no judge given)."""

    kind = Refusal.INVALID
    code = "evaluation_refused"


class EvalSettingsError(EvaluationError):
    """A schema's `x-eval` settings are wrong; `details` lists every problem with where it is."""

    code = "eval_settings_invalid"


class Rule(StrEnum):
    """How a field's value is compared with the expected one."""

    EXACT = "exact"
    NORMALISED = "normalised"
    TOLERANCE = "tolerance"
    MEANING = "meaning"
    WORDS = "words"
    JUDGE = "judge"
    SET = "set"
    SEQUENCE = "sequence"
    IGNORE = "ignore"


THRESHOLD_RULES = frozenset({Rule.MEANING, Rule.WORDS, Rule.SET, Rule.SEQUENCE})
_ANY = frozenset({Rule.EXACT, Rule.JUDGE, Rule.IGNORE})
_BY_TYPE: dict[str, frozenset[Rule]] = {
    "object": _ANY,
    "array": _ANY | {Rule.SET, Rule.SEQUENCE},
    "string": _ANY | {Rule.NORMALISED, Rule.MEANING, Rule.WORDS},
    "number": _ANY | {Rule.TOLERANCE},
    "integer": _ANY | {Rule.TOLERANCE},
    "boolean": _ANY,
    "null": _ANY,
}
COMBINATORS = ("oneOf", "anyOf", "allOf", "if", "then", "else", "not")
DYNAMIC_REFS = ("$dynamicRef", "$recursiveRef")
_OBJECT_HINTS = ("properties", "required", "additionalProperties", "patternProperties")
_ARRAY_HINTS = ("items", "prefixItems")


@dataclass(frozen=True, slots=True)
class FieldSettings:
    """What `x-eval` says of one field; every value has its documented default."""

    rule: Rule | None = None
    """None: the rule the field's schema implies (docs/evaluation.md, Scoring)."""
    tolerance: float = ABSOLUTE_TOLERANCE
    relative_tolerance: float = RELATIVE_TOLERANCE
    threshold: float | None = None
    """None: the rule's own default."""
    weight: float = 1.0
    samples: int = JUDGE_SAMPLES
    critical: bool = False


DEFAULT = FieldSettings()
_FIELDS = ("rule", "tolerance", "relative_tolerance", "threshold", "weight", "samples", "critical")


def declared_types(node: Mapping[str, Any]) -> list[str]:
    """The JSON types a (resolved) schema says its value has; inferred from `properties` or `items`
    when it names none; empty when it does not say."""
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    if any(key in node for key in _OBJECT_HINTS):
        return ["object"]
    if any(key in node for key in _ARRAY_HINTS):
        return ["array"]
    return []


def allowed_rules(node: Mapping[str, Any]) -> frozenset[Rule]:
    """The rules that can mean something for a field with this (resolved) schema."""
    if any(key in node for key in (*COMBINATORS, *DYNAMIC_REFS)):
        return _ANY
    if "enum" in node or "const" in node:
        values = node["enum"] if "enum" in node else [node["const"]]
        strings = isinstance(values, list) and bool(values) and all(isinstance(v, str) for v in values)
        return _ANY | {Rule.NORMALISED} if strings else _ANY
    allowed: frozenset[Rule] = frozenset()
    for kind in declared_types(node) or ["untyped"]:
        allowed |= _BY_TYPE.get(kind, _ANY)
    return allowed


def default_rules(node: Mapping[str, Any]) -> frozenset[Rule]:
    """The rules a field falls to when `x-eval` names none (any of them, for a list of types)."""
    if any(key in node for key in (*COMBINATORS, *DYNAMIC_REFS, "enum", "const")):
        return frozenset({Rule.EXACT})
    found: set[Rule] = set()
    for kind in declared_types(node):
        if kind == "string":
            free = "format" not in node and "pattern" not in node
            found |= {Rule.MEANING, Rule.WORDS} if free else {Rule.NORMALISED}
        elif kind == "array":
            found |= {Rule.SET, Rule.SEQUENCE}
        elif kind == "number":
            found.add(Rule.TOLERANCE)
        elif kind != "object":
            found.add(Rule.EXACT)
    return frozenset(found or {Rule.EXACT})


def read_settings(node: Mapping[str, Any], where: str) -> FieldSettings:
    """The `x-eval` settings of a (resolved) schema node; raises EvalSettingsError when any is wrong."""
    settings, problems = parse_settings(node, where)
    if problems:
        raise settings_error(problems)
    return settings


def settings_error(problems: list[tuple[str, str]]) -> EvalSettingsError:
    """One refusal for every (problem, fix) found, the first one as its message."""
    first, fix = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return EvalSettingsError(
        f"{first}{more}",
        fix if len(problems) == 1 else "fix each x-eval setting listed (docs/evaluation.md, Scoring)",
        [f"{problem}: {how}" for problem, how in problems],
    )


def parse_settings(node: Mapping[str, Any], where: str) -> tuple[FieldSettings, list[tuple[str, str]]]:
    """(settings, problems): each problem is (what is wrong and where, how to fix it)."""
    raw = node.get(KEYWORD)
    if raw is None:
        return DEFAULT, []
    at = f"x-eval of {where}"
    if not isinstance(raw, Mapping):
        return DEFAULT, [(f"{at} is {_show(raw)}", "write an object, e.g. x-eval: {rule: exact}")]
    problems: list[tuple[str, str]] = []
    for key in raw:
        if key not in _FIELDS:
            near = difflib.get_close_matches(str(key), _FIELDS, n=1)
            fix = f"did you mean '{near[0]}'?" if near else f"use only {', '.join(_FIELDS)}"
            problems.append((f"{at}: unknown setting '{key}'", fix))
    values: dict[str, Any] = {}
    for key, check in _CHECKS.items():
        if key in raw:
            value, problem = check(raw[key])
            if problem is None:
                values[key] = value
            else:
                problems.append((f"{at}: {key} {problem[0]}", problem[1]))
    problems.extend(_fit(node, values, at))
    if problems:
        return DEFAULT, problems
    if values.get("rule") is None and ("tolerance" in values or "relative_tolerance" in values):
        values["rule"] = Rule.TOLERANCE  # a tolerance on an integer asks for the tolerance rule
    return FieldSettings(**values), []


def _fit(node: Mapping[str, Any], values: dict[str, Any], at: str) -> Iterator[tuple[str, str]]:
    """Settings that mean nothing for this field: refused, so none is silently without effect."""
    allowed = allowed_rules(node)
    rule: Rule | None = values.get("rule")
    types = ", ".join(declared_types(node)) or "no type"
    if rule is not None and rule not in allowed:
        names = ", ".join(sorted(allowed))
        yield f"{at}: rule '{rule}' cannot apply to a field of type {types}", f"use one of {names}"
    tolerant = [key for key in ("tolerance", "relative_tolerance") if key in values]
    if tolerant and ((rule or Rule.TOLERANCE) is not Rule.TOLERANCE or Rule.TOLERANCE not in allowed):
        yield (
            f"{at}: {tolerant[0]} applies only to numbers scored by rule 'tolerance' (this field: {types}"
            f"{f', rule {rule}' if rule else ''})",
            f"remove {tolerant[0]}, or use it on a number or integer field",
        )
    if "threshold" in values and not ({rule} if rule else default_rules(node)) & THRESHOLD_RULES:
        yield (
            f"{at}: threshold applies only to rules {', '.join(sorted(THRESHOLD_RULES))} (this field: {types})",
            "remove threshold, or set rule to one that reads it",
        )
    if "samples" in values and rule is not Rule.JUDGE:
        yield f"{at}: samples is read only by rule 'judge'", "add rule: judge, or remove samples"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


Check = tuple[Any, tuple[str, str] | None]


def _rule(value: Any) -> Check:
    if isinstance(value, str) and value in Rule.__members__.values():
        return Rule(value), None
    names = ", ".join(rule.value for rule in Rule)
    return None, (f"is {_show(value)}, not a rule", f"use one of {names}")


def _non_negative(value: Any) -> Check:
    if _number(value) and value >= 0:
        return float(value), None
    return None, (f"must be a non-negative number, not {_show(value)}", "write e.g. 0.5")


def _share(value: Any) -> Check:
    if _number(value) and 0 <= value <= 1:
        return float(value), None
    return None, (f"must be a number from 0 to 1, not {_show(value)}", "write e.g. 0.8")


def _samples(value: Any) -> Check:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 99:
        return value, None
    return None, (f"must be a whole number from 1 to 99, not {_show(value)}", "write an odd number, e.g. 3")


def _flag(value: Any) -> Check:
    if isinstance(value, bool):
        return value, None
    return None, (f"must be true or false, not {_show(value)}", "write critical: true")


_CHECKS = {
    "rule": _rule,
    "tolerance": _non_negative,
    "relative_tolerance": _non_negative,
    "threshold": _share,
    "weight": _non_negative,
    "samples": _samples,
    "critical": _flag,
}
