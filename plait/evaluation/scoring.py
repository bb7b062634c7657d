"""Scoring one output against its expected value, field by field, by what its schema says of each.

The expected value is what a person made of an output (a correction) or accepted (an approval);
the actual value is what a new graph version answers for the same input. Each field is compared
by the rule its schema implies (docs/evaluation.md, Scoring) or the one its `x-eval` names, and
the result lists every field with its rule, so a failure says which field, by which rule, and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import referencing
from referencing._core import Resolver  # the public package exports no name for it

from plait.compile.schema_keywords import matches, regex_problem
from plait.evaluation import compare
from plait.evaluation.alignment import fill_sequence, fill_set, sequence_pairs, set_pairs
from plait.evaluation.compare import Compared, Judge, is_number, show
from plait.evaluation.rules import (
    ARRAY_THRESHOLD,
    COMBINATORS,
    DYNAMIC_REFS,
    MEANING_THRESHOLD,
    WORDS_THRESHOLD,
    FieldSettings,
    Rule,
    declared_types,
    read_settings,
    settings_error,
)
from plait.evaluation.schemas import child, field_name, resolve, root_resolver, settings_problems
from plait.evaluation.text import Similarity

FIELDS = "fields"
"""The rule of an object: the weighted mean of its fields, passing when its required ones pass."""


@dataclass(frozen=True, slots=True)
class FieldResult:
    """How one field (a path such as `chapters[].start`; `$` is the whole value) was scored."""

    path: str
    rule: str
    """The rule applied: exact, normalised, tolerance, meaning, words, judge, set, sequence, fields,
    or 'exact (...)' where the schema says something the scorer does not read (a combinator)."""
    passed: bool
    score: float
    """0..1: 1 or 0 for the all-or-nothing rules, the similarity, F1 or weighted mean otherwise."""
    required: bool
    """Whether the object holding the field requires it: only required fields decide whether it passes."""
    detail: str
    weight: float = 1.0
    critical: bool = False
    samples: tuple[bool, ...] = ()
    """The judge's verdicts (rule judge)."""
    items: tuple[int, int] | None = None
    """For a field of an array's items (`chapters[].start`): (aligned items it passed in, aligned items)."""
    judged: int = 0
    """Judge calls behind this result, and how many of them had samples that disagreed (`split`)."""
    split: int = 0


@dataclass(frozen=True, slots=True)
class CaseScore:
    """One output scored against its expected value; `fields` in schema order, nested fields after their parent."""

    passed: bool
    score: float
    fields: list[FieldResult] = field(default_factory=list)

    def field(self, path: str) -> FieldResult | None:
        return next((f for f in self.fields if f.path == path), None)


def score(
    schema: Any,
    expected: Any,
    actual: Any,
    *,
    registry: referencing.Registry[Any] | None = None,
    similarity: Similarity | None = None,
    judge: Judge | None = None,
) -> CaseScore:
    """Score `actual` against `expected` under `schema` (references resolved in `registry`, the
    graph's: `schema_registry(registry_key(graph.schemas))`). Free strings are compared by
    `similarity` when given (see `embedding_similarity`), else by their words; fields whose
    `x-eval` says `rule: judge` are asked of `judge`. Raises EvalSettingsError for a wrong `x-eval`."""
    resolver = root_resolver(schema, registry)
    problems = settings_problems(schema, resolver)
    if problems:
        raise settings_error(problems)
    results = _Scorer(similarity, judge).value(schema, resolver, "", expected, actual, present=True, required=True)
    if results is None:
        return CaseScore(True, 1.0, [])
    root = results[0]
    whole_object = root.rule == FIELDS and isinstance(actual, dict)  # its fields say it all
    return CaseScore(root.passed, root.score, results[1:] if whole_object else results)


class _Scorer:
    def __init__(self, similarity: Similarity | None, judge: Judge | None):
        self.similarity = similarity
        self.judge = judge

    def value(
        self,
        node: Any,
        resolver: Resolver[Any],
        path: str,
        expected: Any,
        actual: Any,
        *,
        present: bool,
        required: bool,
    ) -> list[FieldResult] | None:
        """The field's result, then its descendants'; None when its `x-eval` says to ignore it."""
        where = f"field `{field_name(path)}`"
        schema, resolver = resolve(node, resolver, where)
        settings = read_settings(schema, where)
        if settings.rule is Rule.IGNORE:
            return None
        rule = _rule(schema, settings, expected, resolver, where)
        shown = Rule.WORDS.value if rule == Rule.MEANING and self.similarity is None else rule
        if not present:
            return [
                _result(path, shown, Compared(False, 0.0, f"missing (expected {show(expected)})"), required, settings)
            ]
        if rule == FIELDS:
            return self._object(schema, resolver, path, expected, actual, required, settings)
        if rule in (Rule.SET, Rule.SEQUENCE):
            return self._array(schema, resolver, path, expected, actual, required, settings, Rule(rule))
        compared = self._leaf(rule, path, expected, actual, settings)
        return [_result(path, shown, compared, required, settings)]

    def _leaf(self, rule: str, path: str, expected: Any, actual: Any, settings: FieldSettings) -> Compared:
        if rule == Rule.TOLERANCE:
            return compare.tolerance(expected, actual, settings.tolerance, settings.relative_tolerance)
        if rule == Rule.NORMALISED:
            return compare.normalised_equal(expected, actual)
        if rule == Rule.MEANING and self.similarity is not None:
            return compare.meaning(expected, actual, self.similarity, _threshold(settings, MEANING_THRESHOLD))
        if rule in (Rule.MEANING, Rule.WORDS):
            why = "; no similarity was given" if rule == Rule.MEANING else ""
            return compare.words(expected, actual, _threshold(settings, WORDS_THRESHOLD), why)
        if rule == Rule.JUDGE:
            return compare.judged(field_name(path), expected, actual, self.judge, settings.samples)
        return compare.exact(expected, actual)

    def _object(
        self,
        schema: dict[str, Any],
        resolver: Resolver[Any],
        path: str,
        expected: dict[str, Any],
        actual: Any,
        required: bool,
        settings: FieldSettings,
    ) -> list[FieldResult]:
        if not isinstance(actual, dict):
            return [
                _result(
                    path, FIELDS, Compared(False, 0.0, f"expected an object, got {show(actual)}"), required, settings
                )
            ]
        declared = schema.get("properties")
        properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
        listed = schema.get("required")
        needed = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
        names = [*properties, *(n for n in needed if n not in properties)]
        names += sorted(set(expected) - set(names))
        own: list[FieldResult] = []
        failing: list[str] = []
        below: list[FieldResult] = []
        for name in names:
            if name not in expected and name not in actual:
                continue
            sub, here, is_required = _property(schema, name), child(path, name), name in needed
            if name in expected:
                got = self.value(
                    sub, resolver, here, expected[name], actual.get(name), present=name in actual, required=is_required
                )
            else:
                got = self._unexpected(sub, resolver, here, actual[name], is_required)
            if got is not None:
                own.append(got[0])
                failing += [] if got[0].passed else [name]
                below.extend(got)
        passed = all(r.passed for r in own if r.required)
        total = sum(r.weight for r in own)
        value = sum(r.weight * r.score for r in own) / total if total > 0 else float(passed)
        detail = f"{len(own) - len(failing)} of {len(own)} fields passed"
        if failing:
            detail += f"; failing: {', '.join(failing)}"
        return [_result(path, FIELDS, Compared(passed, value, detail), required, settings), *below]

    def _unexpected(
        self, node: Any, resolver: Resolver[Any], path: str, actual: Any, required: bool
    ) -> list[FieldResult] | None:
        """A field the expected value does not have: a wrong answer (unless ignored), gating only if required."""
        where = f"field `{field_name(path)}`"
        schema, _ = resolve(node, resolver, where)
        settings = read_settings(schema, where)
        if settings.rule is Rule.IGNORE:
            return None
        compared = Compared(False, 0.0, f"expected no value, got {show(actual)}")
        return [_result(path, Rule.EXACT.value, compared, required, settings)]

    def _array(
        self,
        schema: dict[str, Any],
        resolver: Resolver[Any],
        path: str,
        expected: list[Any],
        actual: Any,
        required: bool,
        settings: FieldSettings,
        rule: Rule,
    ) -> list[FieldResult]:
        if not isinstance(actual, list):
            return [
                _result(path, rule, Compared(False, 0.0, f"expected an array, got {show(actual)}"), required, settings)
            ]
        items = schema.get("items", True)
        here = f"{path}[]"
        grid = [
            [self.value(items, resolver, here, e, a, present=True, required=True) for a in actual] for e in expected
        ]
        match = [[cell is None or cell[0].passed for cell in row] for row in grid]
        width = len(actual)
        pairs = sequence_pairs(match, width) if rule is Rule.SEQUENCE else set_pairs(match, width)
        total = len(expected) + width
        f1 = 2 * len(pairs) / total if total else 1.0
        threshold = _threshold(settings, ARRAY_THRESHOLD)
        detail = f"F1 {f1:.2f} ({len(pairs)} of {len(expected)} expected items matched, {width} given)"
        detail += _leftovers(expected, actual, pairs)
        own = _result(path, rule, Compared(f1 >= threshold, f1, detail), required, settings)
        if not any(cell is not None and len(cell) > 1 for row in grid for cell in row):
            return [own]
        if rule is Rule.SEQUENCE:
            aligned = fill_sequence(pairs, len(expected), width)
        else:
            closeness = [[cell[0].score if cell else 1.0 for cell in row] for row in grid]
            aligned = fill_set(pairs, closeness, width)
        return [own, *_per_item_field([grid[i][j] for i, j in aligned])]


def _rule(schema: dict[str, Any], settings: FieldSettings, expected: Any, resolver: Resolver[Any], where: str) -> str:
    """The rule a field is scored by: its `x-eval` rule when the expected value fits it, else the
    one its schema implies for the expected value's type."""
    chosen = settings.rule
    if chosen is Rule.JUDGE or chosen is Rule.EXACT:
        return chosen
    if chosen is not None and _fits(chosen, schema, expected):
        return chosen
    if "enum" in schema or "const" in schema:
        return Rule.EXACT
    if any(key in schema for key in COMBINATORS):
        return "exact (combinator)"
    if any(key in schema for key in DYNAMIC_REFS):
        return "exact (dynamic reference)"
    types = declared_types(schema)
    kind = next((t for t in types if _is_type(t, expected)), None)
    if kind is None:
        return Rule.EXACT if types else "exact (no type)"
    if kind == "object":
        return FIELDS
    if kind == "array":
        if not _item_schema(schema):
            return "exact (tuple)"
        return Rule.SEQUENCE if _compound_items(schema, expected, resolver, where) else Rule.SET
    if kind == "string":
        return Rule.NORMALISED if "format" in schema or "pattern" in schema else Rule.MEANING
    return Rule.TOLERANCE if kind == "number" else Rule.EXACT


def _fits(rule: Rule, schema: dict[str, Any], expected: Any) -> bool:
    if rule in (Rule.NORMALISED, Rule.MEANING, Rule.WORDS):
        return isinstance(expected, str)
    if rule is Rule.TOLERANCE:
        return is_number(expected)
    return isinstance(expected, list) and _item_schema(schema)  # set, sequence


def _item_schema(schema: dict[str, Any]) -> bool:
    """Whether the array's items share one schema (not a tuple: `items` as a list, or `prefixItems`)."""
    return "prefixItems" not in schema and not isinstance(schema.get("items"), list)


def _compound_items(schema: dict[str, Any], expected: list[Any], resolver: Resolver[Any], where: str) -> bool:
    """Arrays of objects (or arrays) are sequences by default; of scalars, sets."""
    items, _ = resolve(schema.get("items", True), resolver, f"the items of {where}")
    types = declared_types(items)
    if types:
        return "object" in types or "array" in types
    return any(isinstance(item, dict | list) for item in expected)


def _is_type(kind: str, value: Any) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    checks: dict[str, Any] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "number": is_number,
    }
    check = checks.get(kind)
    return bool(check(value)) if check else False


def _property(schema: dict[str, Any], name: str) -> Any:
    """The schema of property `name`: declared, else the first pattern it matches, else additionalProperties."""
    properties = schema.get("properties")
    if isinstance(properties, dict) and name in properties:
        return properties[name]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, sub in patterns.items():
            if isinstance(pattern, str) and regex_problem(pattern) is None and matches(pattern, name):
                return sub
    extra = schema.get("additionalProperties", True)
    return extra if isinstance(extra, dict) else True


def _threshold(settings: FieldSettings, default: float) -> float:
    return default if settings.threshold is None else settings.threshold


def _result(path: str, rule: str, compared: Compared, required: bool, settings: FieldSettings) -> FieldResult:
    samples = compared.samples
    return FieldResult(
        path=field_name(path),
        rule=str(rule),
        passed=compared.passed,
        score=compared.score,
        required=required,
        detail=compared.detail,
        weight=settings.weight,
        critical=settings.critical,
        samples=samples,
        judged=1 if samples else 0,
        split=1 if samples and len(set(samples)) > 1 else 0,
    )


def _leftovers(expected: list[Any], actual: list[Any], pairs: list[tuple[int, int]]) -> str:
    """The first few items neither side matched, quoted."""
    matched_i, matched_j = {i for i, _ in pairs}, {j for _, j in pairs}
    missing = [item for i, item in enumerate(expected) if i not in matched_i]
    extra = [item for j, item in enumerate(actual) if j not in matched_j]
    parts = []
    for label, values in (("missing", missing), ("unexpected", extra)):
        if values:
            quoted = ", ".join(show(v) for v in values[:3])
            parts.append(f"{label} {quoted}{f' and {len(values) - 3} more' if len(values) > 3 else ''}")
    return f"; {'; '.join(parts)}" if parts else ""


def _per_item_field(cells: list[list[FieldResult] | None]) -> list[FieldResult]:
    """Each field below an array's items over the aligned pairs: passed only if it passed in every one."""
    groups: dict[str, list[FieldResult]] = {}
    for cell in cells:
        for result in (cell or [])[1:]:
            groups.setdefault(result.path, []).append(result)
    merged: list[FieldResult] = []
    for path, results in groups.items():
        counts = [r.items or (int(r.passed), 1) for r in results]
        won, of = sum(c[0] for c in counts), sum(c[1] for c in counts)
        failing = next((r for r in results if not r.passed), None)
        detail = f"passed in {won} of {of} aligned items" + (f"; e.g. {failing.detail}" if failing else "")
        first = results[0]
        merged.append(
            FieldResult(
                path=path,
                rule=first.rule,
                passed=won == of,
                score=sum(r.score for r in results) / len(results),
                required=first.required,
                detail=detail,
                weight=first.weight,
                critical=any(r.critical for r in results),
                items=(won, of),
                judged=sum(r.judged for r in results),
                split=sum(r.split for r in results),
            )
        )
    return merged
