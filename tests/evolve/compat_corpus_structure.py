"""Corpus pairs for objects, combinators, conditionals, references and Draft 7 (see `compat_corpus`)."""

from __future__ import annotations

from typing import Any

from tests.evolve.compat_corpus import INT, NUM, STR, obj, pair, s

NULLABLE = {"type": ["string", "null"]}
CLOSED: dict[str, Any] = {"additionalProperties": False}


def book(chapter_extra: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """A nested schema (object, array of objects) for changes deep inside a realistic output."""
    chapter = {
        "type": "object",
        "properties": {"title": {"type": "string", "maxLength": 80}, "words": {"type": "integer", "minimum": 0}},
        "required": ["title"],
        **(chapter_extra or {}),
    }
    props = {"name": STR, "chapters": {"type": "array", "items": chapter}, **top}
    return obj(props, required=["name"])


PROPERTIES = [
    pair(
        "optional property added to an open object",
        obj({"a": STR}),
        obj({"a": STR, "b": INT}),
        "major",
        {"a": "x", "b": "y"},
    ),
    pair(
        "optional property added to a closed object",
        obj({"a": STR}, **CLOSED),
        obj({"a": STR, "b": INT}, **CLOSED),
        "minor",
    ),
    pair("property declared as anything", obj({"a": STR}), obj({"a": STR, "b": {}}), "patch"),
    pair(
        "property declared as the extra schema",
        obj({}, additionalProperties=STR),
        obj({"b": STR}, additionalProperties=STR),
        "patch",
    ),
    pair(
        "property declared wider than the extra schema",
        obj({}, additionalProperties=STR),
        obj({"b": NULLABLE}, additionalProperties=STR),
        "minor",
    ),
    pair("property removed from an open object", obj({"a": STR, "b": INT}), obj({"a": STR}), "minor"),
    pair(
        "property removed from a closed object",
        obj({"a": STR, "b": INT}, **CLOSED),
        obj({"a": STR}, **CLOSED),
        "major",
        {"b": 1},
    ),
    pair(
        "property renamed in an open object", obj({"a": STR, "b": INT}), obj({"a": STR, "c": INT}), "major", {"c": "x"}
    ),
    pair(
        "property renamed in a closed object",
        obj({"a": STR, "b": INT}, **CLOSED),
        obj({"a": STR, "c": INT}, **CLOSED),
        "major",
        {"b": 1},
    ),
    pair("property type widened", obj({"a": STR}), obj({"a": NULLABLE}), "minor"),
    pair("property type narrowed", obj({"a": NULLABLE}), obj({"a": STR}), "major", {"a": None}),
    pair("property type changed", obj({"a": STR}), obj({"a": INT}), "major", {"a": "x"}),
    pair("properties reordered", obj({"a": STR, "b": INT}), obj({"b": INT, "a": STR}), "none"),
    pair(
        "nested title shortened",
        book(),
        book(
            {"properties": {"title": {"type": "string", "maxLength": 40}, "words": {"type": "integer", "minimum": 0}}}
        ),
        "major",
        {"name": "n", "chapters": [{"title": "t" * 60}]},
    ),
    pair(
        "nested minimum lowered",
        book(),
        book(
            {"properties": {"title": {"type": "string", "maxLength": 80}, "words": {"type": "integer", "minimum": -5}}}
        ),
        "minor",
    ),
    pair(
        "nested property added to a closed chapter",
        book(CLOSED),
        book(
            {
                "additionalProperties": False,
                "properties": {
                    "title": {"type": "string", "maxLength": 80},
                    "words": {"type": "integer", "minimum": 0},
                    "page": INT,
                },
            }
        ),
        "minor",
    ),
    pair("optional top-level property added", book(), book(isbn=STR), "major", {"name": "n", "isbn": 1}),
    pair(
        "required added for an existing property",
        obj({"a": STR, "b": INT}),
        obj({"a": STR, "b": INT}, required=["b"]),
        "major",
        {},
    ),
    pair(
        "required property added",
        obj({"a": STR}, required=["a"]),
        obj({"a": STR, "b": INT}, required=["a", "b"]),
        "major",
        {"a": "x"},
    ),
    pair("required removed", obj({"a": STR}, required=["a"]), obj({"a": STR}), "minor"),
    pair(
        "required reordered",
        obj({"a": STR, "b": STR}, required=["a", "b"]),
        obj({"a": STR, "b": STR}, required=["b", "a"]),
        "patch",
    ),
    pair("undeclared name required", obj({"a": STR}), obj({"a": STR}, required=["z"]), "major", {}),
    pair(
        "required in a nested chapter",
        book(),
        book({"required": ["title", "words"]}),
        "major",
        {"name": "n", "chapters": [{"title": "t"}]},
    ),
    pair("properties added", s(type="object"), obj({"a": STR}), "major", {"a": 1}),
    pair("property schema false to true", obj({"a": False}), obj({"a": True}), "minor"),
    pair("property schema true to false", obj({"a": True}), obj({"a": False}), "major", {"a": 1}),
]

EXTRA = [
    pair(
        "additionalProperties false to true",
        obj({"a": STR}, additionalProperties=False),
        obj({"a": STR}, additionalProperties=True),
        "minor",
    ),
    pair("additionalProperties false added", obj({"a": STR}), obj({"a": STR}, **CLOSED), "major", {"z": 1}),
    pair("additionalProperties false removed", obj({"a": STR}, **CLOSED), obj({"a": STR}), "minor"),
    pair("additionalProperties false to a schema", obj({}, **CLOSED), obj({}, additionalProperties=STR), "minor"),
    pair(
        "additionalProperties widened",
        obj({}, additionalProperties=STR),
        obj({}, additionalProperties=NULLABLE),
        "minor",
    ),
    pair(
        "additionalProperties changed",
        obj({}, additionalProperties=STR),
        obj({}, additionalProperties=INT),
        "major",
        {"z": "x"},
    ),
    pair("additionalProperties schema added", obj({}), obj({}, additionalProperties=STR), "major", {"z": 1}),
    pair("additionalProperties schema removed", obj({}, additionalProperties=STR), obj({}), "minor"),
    pair("additionalProperties true dropped", obj({"a": STR}, additionalProperties=True), obj({"a": STR}), "patch"),
    pair(
        "patternProperties added to an open object",
        obj({}),
        obj({}, patternProperties={"^x_": INT}),
        "major",
        {"x_a": "s"},
    ),
    pair(
        "patternProperties added to a closed object",
        obj({}, **CLOSED),
        obj({}, patternProperties={"^x_": INT}, **CLOSED),
        "minor",
    ),
    pair("patternProperties removed from an open object", obj({}, patternProperties={"^x_": INT}), obj({}), "minor"),
    pair(
        "patternProperties removed from a closed object",
        obj({}, patternProperties={"^x_": INT}, **CLOSED),
        obj({}, **CLOSED),
        "major",
        {"x_a": 1},
    ),
    pair(
        "patternProperties widened",
        obj({}, patternProperties={"^x_": INT}),
        obj({}, patternProperties={"^x_": NUM}),
        "minor",
    ),
    pair(
        "patternProperties narrowed",
        obj({}, patternProperties={"^x_": NUM}),
        obj({}, patternProperties={"^x_": INT}),
        "major",
        {"x_a": 1.5},
    ),
    pair(
        "pattern now covers a declared name",
        obj({"x_a": {}}),
        obj({"x_a": {}}, patternProperties={"^x_": INT}),
        "major",
        {"x_a": "s"},
    ),
    pair("propertyNames added", obj({}), obj({}, propertyNames={"maxLength": 3}), "major", {"long": 1}),
    pair("propertyNames removed", obj({}, propertyNames={"maxLength": 3}), obj({}), "minor"),
    pair(
        "propertyNames widened",
        obj({}, propertyNames={"maxLength": 3}),
        obj({}, propertyNames={"maxLength": 5}),
        "minor",
    ),
    pair(
        "propertyNames narrowed",
        obj({}, propertyNames={"maxLength": 5}),
        obj({}, propertyNames={"maxLength": 3}),
        "major",
        {"abcd": 1},
    ),
    pair("propertyNames pattern added", obj({}), obj({}, propertyNames={"pattern": "^[a-z]+$"}), "major", {"A": 1}),
    pair("dependentRequired added", obj({}), obj({}, dependentRequired={"a": ["b"]}), "major", {"a": 1}),
    pair("dependentRequired removed", obj({}, dependentRequired={"a": ["b"]}), obj({}), "minor"),
    pair(
        "dependentRequired grown",
        obj({}, dependentRequired={"a": ["b"]}),
        obj({}, dependentRequired={"a": ["b", "c"]}),
        "major",
        {"a": 1, "b": 1},
    ),
    pair(
        "dependentRequired shrunk",
        obj({}, dependentRequired={"a": ["b", "c"]}),
        obj({}, dependentRequired={"a": ["b"]}),
        "minor",
    ),
    pair("dependentSchemas added", obj({}), obj({}, dependentSchemas={"a": {"required": ["b"]}}), "major", {"a": 1}),
    pair("dependentSchemas removed", obj({}, dependentSchemas={"a": {"required": ["b"]}}), obj({}), "minor"),
    pair(
        "dependentSchemas widened",
        obj({}, dependentSchemas={"a": {"properties": {"b": INT}}}),
        obj({}, dependentSchemas={"a": {"properties": {"b": NUM}}}),
        "minor",
    ),
    pair(
        "dependentSchemas narrowed",
        obj({}, dependentSchemas={"a": {"properties": {"b": NUM}}}),
        obj({}, dependentSchemas={"a": {"properties": {"b": INT}}}),
        "major",
        {"a": 1, "b": 1.5},
    ),
    pair("maxProperties raised", obj({}, maxProperties=1), obj({}, maxProperties=3), "minor"),
    pair("maxProperties lowered", obj({}, maxProperties=3), obj({}, maxProperties=1), "major", {"a": 1, "b": 2}),
    pair("maxProperties added", obj({}), obj({}, maxProperties=1), "major", {"a": 1, "b": 2}),
    pair("maxProperties removed", obj({}, maxProperties=1), obj({}), "minor"),
    pair("minProperties raised", obj({}, minProperties=1), obj({}, minProperties=2), "major", {"a": 1}),
    pair("minProperties lowered", obj({}, minProperties=2), obj({}, minProperties=1), "minor"),
    pair("minProperties added", obj({}), obj({}, minProperties=1), "major", {}),
    pair("minProperties removed", obj({}, minProperties=1), obj({}), "minor"),
    pair(
        "unevaluatedProperties false added",
        obj({"a": STR}),
        obj({"a": STR}, unevaluatedProperties=False),
        "major",
        {"z": 1},
    ),
    pair("unevaluatedProperties false removed", obj({"a": STR}, unevaluatedProperties=False), obj({"a": STR}), "minor"),
    pair(
        "unevaluatedProperties false to a schema",
        obj({"a": STR}, unevaluatedProperties=False),
        obj({"a": STR}, unevaluatedProperties=INT),
        "minor",
    ),
    pair(
        "property added under unevaluatedProperties false",
        obj({"a": STR}, unevaluatedProperties=False),
        obj({"a": STR, "b": INT}, unevaluatedProperties=False),
        "minor",
    ),
    pair(
        "allOf property dropped under unevaluatedProperties",
        s(allOf=[{"properties": {"a": {}}}], unevaluatedProperties=False),
        s(allOf=[{"properties": {}}], unevaluatedProperties=False),
        "major",
        {"a": 1},
    ),
    pair(
        "allOf property added under unevaluatedProperties",
        s(allOf=[{"properties": {"a": {}}}], unevaluatedProperties=False),
        s(allOf=[{"properties": {"a": {}, "b": {}}}], unevaluatedProperties=False),
        "minor",
    ),
    pair(
        "anyOf branch emptied under unevaluatedProperties",
        s(anyOf=[{"properties": {"a": INT}}], unevaluatedProperties=False),
        s(anyOf=[{}], unevaluatedProperties=False),
        "major",
        {"a": 1},
    ),
    pair("object keywords on an array", s(type="array", required=["a"]), s(type="array"), "patch"),
]

LOGIC = [
    pair("allOf branch added", s(allOf=[STR]), s(allOf=[STR, {"maxLength": 3}]), "major", "abcd"),
    pair("allOf branch removed", s(allOf=[STR, {"maxLength": 3}]), s(allOf=[STR]), "minor"),
    pair("allOf branch widened", s(allOf=[{"maxLength": 3}]), s(allOf=[{"maxLength": 5}]), "minor"),
    pair("allOf branch narrowed", s(allOf=[{"maxLength": 5}]), s(allOf=[{"maxLength": 3}]), "major", "abcd"),
    pair("allOf added", s(), s(allOf=[STR]), "major", 1),
    pair("allOf flattened", s(allOf=[STR]), STR | {"$schema": s()["$schema"]}, "patch"),
    pair("allOf reordered", s(allOf=[STR, {"maxLength": 3}]), s(allOf=[{"maxLength": 3}, STR]), "patch"),
    pair("anyOf branch added", s(anyOf=[STR]), s(anyOf=[STR, INT]), "minor"),
    pair("anyOf branch removed", s(anyOf=[STR, INT]), s(anyOf=[STR]), "major", 1),
    pair("anyOf branch widened", s(anyOf=[STR, {"type": "integer", "maximum": 3}]), s(anyOf=[STR, INT]), "minor"),
    pair("anyOf branch narrowed", s(anyOf=[STR, INT]), s(anyOf=[STR, {"type": "integer", "maximum": 3}]), "major", 4),
    pair("anyOf added over a type", s(), s(anyOf=[STR, INT]), "major", None),
    pair("type generalised into anyOf", s(type="string"), s(anyOf=[STR, INT]), "minor"),
    pair("anyOf removed", s(anyOf=[STR, INT]), s(), "minor"),
    pair("anyOf reordered", s(anyOf=[STR, INT]), s(anyOf=[INT, STR]), "patch"),
    pair("oneOf branch added", s(oneOf=[INT]), s(oneOf=[INT, {"minimum": 5}]), "major", 7),
    pair("oneOf branch removed", s(oneOf=[STR, INT]), s(oneOf=[STR]), "major", 1),
    pair(
        "oneOf branch widened",
        s(oneOf=[STR, {"type": "integer", "maximum": 3}]),
        s(oneOf=[STR, {"type": ["integer", "string"]}]),
        "major",
        "a",
    ),
    pair("oneOf branch narrowed", s(oneOf=[STR, INT]), s(oneOf=[STR, {"type": "integer", "maximum": 3}]), "major", 4),
    pair("oneOf to anyOf", s(oneOf=[INT, {"minimum": 5}]), s(anyOf=[INT, {"minimum": 5}]), "minor"),
    pair("oneOf added", s(), s(oneOf=[STR, INT]), "major", None),
    pair("oneOf removed", s(oneOf=[STR, INT]), s(), "minor"),
    pair("oneOf reordered", s(oneOf=[STR, INT]), s(oneOf=[INT, STR]), "patch"),
    pair("not added", s(), s(**{"not": STR}), "major", "a"),
    pair("not removed", s(**{"not": STR}), s(), "minor"),
    pair("not widened (refuses more)", s(**{"not": STR}), s(**{"not": {"type": ["string", "integer"]}}), "major", 1),
    pair("not narrowed (refuses less)", s(**{"not": {"type": ["string", "integer"]}}), s(**{"not": STR}), "minor"),
    pair("if/then added", s(), s(**{"if": STR, "then": {"maxLength": 2}}), "major", "abc"),
    pair("if/then removed", s(**{"if": STR, "then": {"maxLength": 2}}), s(), "minor"),
    pair(
        "then widened", s(**{"if": STR, "then": {"maxLength": 2}}), s(**{"if": STR, "then": {"maxLength": 4}}), "minor"
    ),
    pair(
        "then narrowed",
        s(**{"if": STR, "then": {"maxLength": 4}}),
        s(**{"if": STR, "then": {"maxLength": 2}}),
        "major",
        "abc",
    ),
    pair("else widened", s(**{"if": STR, "else": INT}), s(**{"if": STR, "else": NUM}), "minor"),
    pair("else narrowed", s(**{"if": STR, "else": NUM}), s(**{"if": STR, "else": INT}), "major", 1.5),
    pair(
        "else added",
        s(**{"if": STR, "then": {"maxLength": 2}}),
        s(**{"if": STR, "then": {"maxLength": 2}, "else": INT}),
        "major",
        1.5,
    ),
    pair(
        "else removed",
        s(**{"if": STR, "then": {"maxLength": 2}, "else": INT}),
        s(**{"if": STR, "then": {"maxLength": 2}}),
        "minor",
    ),
    pair(
        "if changed",
        s(**{"if": STR, "then": {"maxLength": 2}, "else": INT}),
        s(**{"if": INT, "then": {"maxLength": 2}, "else": INT}),
        "major",
        "ab",
    ),
    pair("then without if", s(type="string"), s(type="string", then={"maxLength": 1}), "patch"),
]

NODE = {
    "type": "object",
    "properties": {"value": INT, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
}
NODE_WIDE = {
    "type": "object",
    "properties": {"value": NUM, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
}
NODE_STR = {
    "type": "object",
    "properties": {"value": STR, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
}


def ref(target: str, defs: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return s(**{"$ref": f"#/$defs/{target}", "$defs": defs}, **keywords)


REFS = [
    pair("$ref target widened", ref("x", {"x": STR}), ref("x", {"x": NULLABLE}), "minor"),
    pair("$ref target narrowed", ref("x", {"x": NULLABLE}), ref("x", {"x": STR}), "major", None),
    pair("$ref to an equal definition", ref("x", {"x": STR, "y": STR}), ref("y", {"x": STR, "y": STR}), "patch"),
    pair(
        "$ref to a wider definition", ref("x", {"x": STR, "y": NULLABLE}), ref("y", {"x": STR, "y": NULLABLE}), "minor"
    ),
    pair("inline to $ref", s(type="string"), ref("x", {"x": STR}), "patch"),
    pair("$ref to inline", ref("x", {"x": STR}), s(type="string"), "patch"),
    pair("$ref to inline, narrower", ref("x", {"x": NULLABLE}), s(type="string"), "major", None),
    pair(
        "$ref in a property widened",
        obj({"a": {"$ref": "#/$defs/x"}}, **{"$defs": {"x": INT}}),
        obj({"a": {"$ref": "#/$defs/x"}}, **{"$defs": {"x": NUM}}),
        "minor",
    ),
    pair(
        "recursive definition widened",
        ref("node", {"node": NODE}),
        ref("node", {"node": NODE_WIDE}),
        "minor",
        {"value": 1, "children": [{"value": 2, "children": []}]},
        {"children": [{"value": -3}]},
    ),
    pair(
        "recursive definition changed",
        ref("node", {"node": NODE}),
        ref("node", {"node": NODE_STR}),
        "major",
        {"value": 1},
    ),
    pair("$ref sibling added", ref("x", {"x": STR}), ref("x", {"x": STR}, maxLength=3), "major", "abcd"),
    pair("$ref sibling removed", ref("x", {"x": STR}, maxLength=3), ref("x", {"x": STR}), "minor"),
]

DRAFT_7 = [
    pair(
        "draft 7 tuple item widened", {"type": "array", "items": [STR]}, {"type": "array", "items": [NULLABLE]}, "minor"
    ),
    pair(
        "draft 7 tuple closed",
        {"type": "array", "items": [STR]},
        {"type": "array", "items": [STR], "additionalItems": False},
        "major",
        ["a", 1],
    ),
    pair(
        "draft 7 additionalItems removed",
        {"type": "array", "items": [STR], "additionalItems": False},
        {"type": "array", "items": [STR]},
        "minor",
    ),
    pair("draft 7 ignores prefixItems", {"type": "array"}, {"type": "array", "prefixItems": [STR]}, "patch"),
    pair(
        "draft 7 ignores unevaluatedProperties",
        {"type": "object"},
        {"type": "object", "unevaluatedProperties": False},
        "patch",
    ),
    pair(
        "draft 7 dependencies added",
        {"type": "object"},
        {"type": "object", "dependencies": {"a": ["b"]}},
        "major",
        {"a": 1},
    ),
    pair(
        "draft 7 ignores $ref siblings",
        {"definitions": {"x": {}}, "$ref": "#/definitions/x", "type": "string"},
        {"definitions": {"x": {}}, "$ref": "#/definitions/x"},
        "patch",
    ),
    pair(
        "draft 7 $ref dropped for its ignored siblings",
        {"definitions": {"x": {}}, "$ref": "#/definitions/x", "type": "string"},
        {"type": "string"},
        "major",
        1,
    ),
    pair(
        "draft 7 property added to a closed object",
        {"type": "object", "properties": {}, "additionalProperties": False},
        {"type": "object", "properties": {"a": STR}, "additionalProperties": False},
        "minor",
    ),
    pair(
        "draft 7 property added to an open object",
        {"type": "object", "properties": {}},
        {"type": "object", "properties": {"a": STR}},
        "major",
        {"a": 1},
    ),
]

STRUCTURE = [*PROPERTIES, *EXTRA, *LOGIC, *REFS, *DRAFT_7]
