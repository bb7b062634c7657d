"""Pairs of JSON Schemas (old, new), each with the level a person expects, for the compatibility oracle.

Levels, for data written under the old schema (reader-side backward compatibility): none:
the same document; patch: the same values validate; minor: every old value validates, and
more; major: some old value is refused. Schemas are Draft 2020-12 unless a pair says
otherwise (no `$schema`: Draft 7). `witness`: values valid under the old schema, written by
hand; for a major pair at least one the new schema refuses (generated data rarely finds some),
for the others values the generator cannot draw (a recursive schema). This module holds the
value, string, array and annotation keywords; `compat_corpus_structure` holds objects,
combinators and references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.evolve.classify import Level

DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Pair:
    """One schema change and the level it should be classified at."""

    id: str
    old: Any
    new: Any
    expected: Level
    witness: tuple[Any, ...] = ()


def s(**keywords: Any) -> dict[str, Any]:
    """A Draft 2020-12 schema (`$schema` set, so Plait's validator reads it as that draft)."""
    return {"$schema": DRAFT_2020, **keywords}


def pair(id: str, old: Any, new: Any, expected: str, *witness: Any) -> Pair:
    return Pair(id, old, new, Level(expected), witness)


def obj(props: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return s(type="object", properties=props, **keywords)


STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}

ANNOTATIONS = [
    pair("title added", s(type="string"), s(type="string", title="Name"), "patch"),
    pair("description changed", s(type="string", description="a"), s(type="string", description="b"), "patch"),
    pair("default added", s(type="integer"), s(type="integer", default=3), "patch"),
    pair("examples changed", s(type="string", examples=["a"]), s(type="string", examples=["b", "c"]), "patch"),
    pair("deprecated added", s(type="string"), s(type="string", deprecated=True), "patch"),
    pair("readOnly added", s(type="string"), s(type="string", readOnly=True), "patch"),
    pair("writeOnly removed", s(type="string", writeOnly=True), s(type="string"), "patch"),
    pair("$comment changed", s(type="string", **{"$comment": "x"}), s(type="string", **{"$comment": "y"}), "patch"),
    pair("format added (not asserted)", s(type="string"), s(type="string", format="email"), "patch"),
    pair("format changed", s(type="string", format="date"), s(type="string", format="uri"), "patch"),
    pair("format removed", s(type="string", format="date"), s(type="string"), "patch"),
    pair("contentMediaType added", s(type="string"), s(type="string", contentMediaType="text/html"), "patch"),
    pair("unknown keyword", s(type="string"), s(type="string", **{"x-eval": {"critical": True}}), "patch"),
    pair("title removed", s(type="string", title="Name"), s(type="string"), "patch"),
    pair("description removed", s(type="string", description="a"), s(type="string"), "patch"),
    pair("default removed", s(type="integer", default=3), s(type="integer"), "patch"),
    pair("examples added", s(type="string"), s(type="string", examples=["a"]), "patch"),
    pair("examples removed", s(type="string", examples=["a"]), s(type="string"), "patch"),
    pair("deprecated removed", s(type="string", deprecated=True), s(type="string"), "patch"),
    pair("readOnly removed", s(type="string", readOnly=True), s(type="string"), "patch"),
    pair("writeOnly added", s(type="string"), s(type="string", writeOnly=True), "patch"),
    pair("$comment added", s(type="string"), s(type="string", **{"$comment": "x"}), "patch"),
    pair("$comment removed", s(type="string", **{"$comment": "x"}), s(type="string"), "patch"),
    pair(
        "nested description",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string", "description": "A"}}),
        "patch",
    ),
    pair(
        "unreferenced $defs changed",
        s(type="string", **{"$defs": {"x": INT}}),
        s(type="string", **{"$defs": {"x": STR}}),
        "patch",
    ),
]

TYPES = [
    pair("type made nullable", s(type="string"), s(type=["string", "null"]), "minor"),
    pair("null dropped from type", s(type=["string", "null"]), s(type="string"), "major", None),
    pair("integer to number", s(type="integer"), s(type="number"), "minor"),
    pair("number to integer", s(type="number"), s(type="integer"), "major", 1.5),
    pair("string to integer", s(type="string"), s(type="integer"), "major"),
    pair("type as a one-item list", s(type="string"), s(type=["string"]), "patch"),
    pair("type removed", s(type="string"), s(), "minor"),
    pair("type added", s(), s(type="string"), "major"),
    pair("integer folded into number", s(type=["integer", "number"]), s(type="number"), "patch"),
    pair("object or array", s(type="object"), s(type=["object", "array"]), "minor"),
    pair("boolean widened twice", s(type="boolean"), s(type=["boolean", "null", "string"]), "minor"),
    pair("type list reordered", s(type=["string", "integer"]), s(type=["integer", "string"]), "patch"),
    pair("type narrowed from a union", s(type=["string", "integer"]), s(type="integer"), "major", "a"),
    pair("true schema to false", True, False, "major"),
    pair("false schema to true", False, True, "minor"),
    pair("empty schema to true", s(), True, "patch"),
]

ENUMS = [
    pair("enum value added", s(enum=["a", "b"]), s(enum=["a", "b", "c"]), "minor"),
    pair("enum value removed", s(enum=["a", "b"]), s(enum=["a"]), "major"),
    pair("enum reordered", s(enum=["a", "b"]), s(enum=["b", "a"]), "patch"),
    pair("enum value swapped", s(enum=["a", "b"]), s(enum=["a", "c"]), "major"),
    pair("enum removed", s(type="string", enum=["a", "b"]), s(type="string"), "minor"),
    pair("enum added", s(type="string"), s(type="string", enum=["a", "b"]), "major"),
    pair("enum 1 written 1.0", s(enum=[1, 2]), s(enum=[1.0, 2]), "patch"),
    pair("enum to its type", s(enum=["a", "b"]), s(type="string"), "minor"),
    pair("mixed enum to a type", s(enum=["a", 1]), s(type="string"), "major"),
    pair("enum of objects grown", s(enum=[{"k": 1}]), s(enum=[{"k": 1}, {"k": 2}]), "minor"),
    pair("enum of objects shrunk", s(enum=[{"k": 1}, {"k": 2}]), s(enum=[{"k": 1}]), "major"),
    pair("enum true is not 1", s(enum=[True]), s(enum=[1]), "major"),
    pair("enum null added", s(enum=["a"]), s(enum=["a", None]), "minor"),
    pair("const changed", s(const="a"), s(const="b"), "major"),
    pair("const removed", s(type="string", const="a"), s(type="string"), "minor"),
    pair("const added", s(type="string"), s(type="string", const="a"), "major"),
    pair("const to a wider enum", s(const="a"), s(enum=["a", "b"]), "minor"),
    pair("one-value enum to const", s(enum=["a"]), s(const="a"), "patch"),
    pair("const to its type", s(const="a"), s(type="string"), "minor"),
    pair("const to another type", s(const=1), s(type="string"), "major"),
    pair("const object changed", s(const={"k": [1]}), s(const={"k": [1, 2]}), "major"),
    pair("const in a property", obj({"v": {"const": 1}}), obj({"v": {"enum": [1, 2]}}), "minor"),
]

NUMBERS = [
    pair("maximum raised", s(type="number", maximum=10), s(type="number", maximum=20), "minor"),
    pair("maximum lowered", s(type="number", maximum=10), s(type="number", maximum=5), "major", 10),
    pair("maximum removed", s(type="number", maximum=10), s(type="number"), "minor"),
    pair("maximum added", s(type="number"), s(type="number", maximum=10), "major", 11),
    pair("minimum raised", s(type="integer", minimum=0), s(type="integer", minimum=5), "major", 0),
    pair("minimum lowered", s(type="integer", minimum=0), s(type="integer", minimum=-5), "minor"),
    pair("minimum removed", s(type="integer", minimum=0), s(type="integer"), "minor"),
    pair("minimum added", s(type="integer"), s(type="integer", minimum=0), "major", -1),
    pair(
        "maximum to a larger exclusiveMaximum",
        s(type="number", maximum=10),
        s(type="number", exclusiveMaximum=11),
        "minor",
    ),
    pair("exclusiveMaximum to maximum", s(type="number", exclusiveMaximum=10), s(type="number", maximum=10), "minor"),
    pair(
        "maximum to exclusiveMaximum", s(type="number", maximum=10), s(type="number", exclusiveMaximum=10), "major", 10
    ),
    pair("exclusiveMinimum to minimum", s(type="number", exclusiveMinimum=0), s(type="number", minimum=0), "minor"),
    pair("minimum to exclusiveMinimum", s(type="number", minimum=0), s(type="number", exclusiveMinimum=0), "major", 0),
    pair("exclusiveMinimum added", s(type="number"), s(type="number", exclusiveMinimum=0), "major", 0),
    pair("exclusiveMaximum removed", s(type="number", exclusiveMaximum=1), s(type="number"), "minor"),
    pair(
        "the looser of two maxima dropped",
        s(type="number", maximum=5, exclusiveMaximum=10),
        s(type="number", maximum=5),
        "patch",
    ),
    pair("maximum 5 written 5.0", s(type="number", maximum=5), s(type="number", maximum=5.0), "patch"),
    pair("numeric bound on a string", s(type="string", maximum=3), s(type="string", maximum=1), "patch"),
    pair("integer minimum 0.5 to 1", s(type="integer", minimum=0.5), s(type="integer", minimum=1), "patch"),
    pair("multipleOf 4 to 2", s(type="integer", multipleOf=4), s(type="integer", multipleOf=2), "minor"),
    pair("multipleOf 2 to 4", s(type="integer", multipleOf=2), s(type="integer", multipleOf=4), "major", 2),
    pair("multipleOf 2 to 3", s(type="integer", multipleOf=2), s(type="integer", multipleOf=3), "major", 2),
    pair("multipleOf added", s(type="integer"), s(type="integer", multipleOf=5), "major", 1),
    pair("multipleOf removed", s(type="integer", multipleOf=5), s(type="integer"), "minor"),
    pair("multipleOf 0.5 to 0.25", s(type="number", multipleOf=0.5), s(type="number", multipleOf=0.25), "minor"),
    pair("multipleOf on a string", s(type="string", multipleOf=2), s(type="string"), "patch"),
    pair(
        "bounds in a property",
        obj({"n": {"type": "integer", "maximum": 3}}),
        obj({"n": {"type": "integer", "maximum": 9}}),
        "minor",
    ),
]

STRINGS = [
    pair("maxLength raised", s(type="string", maxLength=5), s(type="string", maxLength=10), "minor"),
    pair("maxLength lowered", s(type="string", maxLength=5), s(type="string", maxLength=2), "major", "abcde"),
    pair("maxLength added", s(type="string"), s(type="string", maxLength=3), "major", "abcd"),
    pair("maxLength removed", s(type="string", maxLength=3), s(type="string"), "minor"),
    pair("minLength raised", s(type="string", minLength=1), s(type="string", minLength=3), "major", "a"),
    pair("minLength lowered", s(type="string", minLength=3), s(type="string", minLength=1), "minor"),
    pair("minLength added", s(type="string"), s(type="string", minLength=1), "major", ""),
    pair("minLength removed", s(type="string", minLength=2), s(type="string"), "minor"),
    pair("minLength 0 added", s(type="string"), s(type="string", minLength=0), "patch"),
    pair("pattern added", s(type="string"), s(type="string", pattern="^[a-z]+$"), "major", "A"),
    pair("pattern removed", s(type="string", pattern="^[a-z]+$"), s(type="string"), "minor"),
    pair("pattern changed", s(type="string", pattern="^a"), s(type="string", pattern="^b"), "major", "a"),
    pair("pattern rewritten alike", s(type="string", pattern="^a"), s(type="string", pattern="^(?:a)"), "patch"),
    pair("pattern on an integer", s(type="integer", pattern="^a"), s(type="integer"), "patch"),
    pair(
        "length in a nested array",
        obj({"t": {"type": "array", "items": {"type": "string", "maxLength": 4}}}),
        obj({"t": {"type": "array", "items": {"type": "string", "maxLength": 2}}}),
        "major",
        {"t": ["abcd"]},
    ),
]

ARRAY = {"type": "array"}

ARRAYS = [
    pair("items widened", s(type="array", items=STR), s(type="array", items={"type": ["string", "integer"]}), "minor"),
    pair(
        "items narrowed",
        s(type="array", items={"type": ["string", "integer"]}),
        s(type="array", items=STR),
        "major",
        [1],
    ),
    pair("items added", s(type="array"), s(type="array", items=STR), "major", [1]),
    pair("items removed", s(type="array", items=STR), s(type="array"), "minor"),
    pair("items false to true", s(type="array", items=False), s(type="array", items=True), "minor"),
    pair("items {} dropped", s(type="array", items={}), s(type="array"), "patch"),
    pair("prefixItems added", s(type="array"), s(type="array", prefixItems=[STR]), "major", [1]),
    pair("prefixItems removed", s(type="array", prefixItems=[STR]), s(type="array"), "minor"),
    pair(
        "prefixItems element widened",
        s(type="array", prefixItems=[STR]),
        s(type="array", prefixItems=[{"type": ["string", "null"]}]),
        "minor",
    ),
    pair(
        "prefixItems element narrowed",
        s(type="array", prefixItems=[{}]),
        s(type="array", prefixItems=[STR]),
        "major",
        [1],
    ),
    pair(
        "prefixItems lengthened",
        s(type="array", prefixItems=[STR]),
        s(type="array", prefixItems=[STR, INT]),
        "major",
        ["a", "b"],
    ),
    pair("prefixItems shortened", s(type="array", prefixItems=[STR, INT]), s(type="array", prefixItems=[STR]), "minor"),
    pair(
        "tuple closed",
        s(type="array", prefixItems=[STR]),
        s(type="array", prefixItems=[STR], items=False),
        "major",
        ["a", 1],
    ),
    pair("tuple opened", s(type="array", prefixItems=[STR], items=False), s(type="array", prefixItems=[STR]), "minor"),
    pair(
        "items moved into prefixItems",
        s(type="array", items=STR),
        s(type="array", prefixItems=[STR], items=STR),
        "patch",
    ),
    pair(
        "rest items widened after a prefix",
        s(type="array", prefixItems=[STR], items=INT),
        s(type="array", prefixItems=[STR], items=NUM),
        "minor",
    ),
    pair("contains added", s(type="array"), s(type="array", contains=INT), "major", []),
    pair("contains removed", s(type="array", contains=INT), s(type="array"), "minor"),
    pair("contains widened", s(type="array", contains=INT), s(type="array", contains=NUM), "minor"),
    pair("contains narrowed", s(type="array", contains=NUM), s(type="array", contains=INT), "major", [1.5]),
    pair(
        "minContains raised",
        s(type="array", contains=INT, minContains=1),
        s(type="array", contains=INT, minContains=2),
        "major",
        [1],
    ),
    pair(
        "minContains lowered",
        s(type="array", contains=INT, minContains=2),
        s(type="array", contains=INT, minContains=1),
        "minor",
    ),
    pair(
        "minContains added", s(type="array", contains=INT), s(type="array", contains=INT, minContains=2), "major", [1]
    ),
    pair("minContains removed", s(type="array", contains=INT, minContains=2), s(type="array", contains=INT), "minor"),
    pair(
        "maxContains added",
        s(type="array", contains=INT),
        s(type="array", contains=INT, maxContains=1),
        "major",
        [1, 2],
    ),
    pair("maxContains removed", s(type="array", contains=INT, maxContains=1), s(type="array", contains=INT), "minor"),
    pair(
        "maxContains raised",
        s(type="array", contains=INT, maxContains=1),
        s(type="array", contains=INT, maxContains=3),
        "minor",
    ),
    pair(
        "contains widened under maxContains",
        s(type="array", contains={"const": 1}, maxContains=1),
        s(type="array", contains=INT, maxContains=1),
        "major",
        [1, 2],
    ),
    pair("maxItems raised", s(type="array", maxItems=2), s(type="array", maxItems=5), "minor"),
    pair("maxItems lowered", s(type="array", maxItems=5), s(type="array", maxItems=2), "major", [1, 2, 3]),
    pair("maxItems added", s(type="array"), s(type="array", maxItems=1), "major", [1, 2]),
    pair("maxItems removed", s(type="array", maxItems=1), s(type="array"), "minor"),
    pair("minItems raised", s(type="array", minItems=1), s(type="array", minItems=2), "major", [1]),
    pair("minItems lowered", s(type="array", minItems=2), s(type="array", minItems=1), "minor"),
    pair("minItems added", s(type="array"), s(type="array", minItems=1), "major", []),
    pair("minItems removed", s(type="array", minItems=1), s(type="array"), "minor"),
    pair("uniqueItems added", s(type="array"), s(type="array", uniqueItems=True), "major", [1, 1]),
    pair("uniqueItems removed", s(type="array", uniqueItems=True), s(type="array"), "minor"),
    pair("uniqueItems false dropped", s(type="array", uniqueItems=False), s(type="array"), "patch"),
    pair(
        "unevaluatedItems false added",
        s(type="array", prefixItems=[STR]),
        s(type="array", prefixItems=[STR], unevaluatedItems=False),
        "major",
        ["a", 1],
    ),
    pair(
        "unevaluatedItems false removed",
        s(type="array", prefixItems=[STR], unevaluatedItems=False),
        s(type="array", prefixItems=[STR]),
        "minor",
    ),
    pair(
        "unevaluatedItems widened",
        s(type="array", prefixItems=[STR], unevaluatedItems=False),
        s(type="array", prefixItems=[STR], unevaluatedItems=INT),
        "minor",
    ),
    pair(
        "prefix shortened under unevaluatedItems",
        s(type="array", prefixItems=[STR, STR], unevaluatedItems=False),
        s(type="array", prefixItems=[STR], unevaluatedItems=False),
        "major",
        ["a", "b"],
    ),
    pair(
        "prefix element widened under unevaluatedItems",
        s(type="array", prefixItems=[STR], unevaluatedItems=False),
        s(type="array", prefixItems=[{"type": ["string", "null"]}], unevaluatedItems=False),
        "minor",
    ),
    pair("array keywords on a string", s(type="string", minItems=3), s(type="string"), "patch"),
]


def corpus() -> list[Pair]:
    """Every pair, values and arrays first, then objects, combinators and references."""
    from tests.evolve.compat_corpus_structure import STRUCTURE

    return [*ANNOTATIONS, *TYPES, *ENUMS, *NUMBERS, *STRINGS, *ARRAYS, *STRUCTURE]
