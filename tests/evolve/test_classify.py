"""Classification of JSON Schema changes, version bumps and schema_version derivation.

Hand-written cases pin each rule (level, data path and kind); property-based tests apply known
mutations to generated object schemas and check that the classifier finds the expected level.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.evolve.classify import (
    EntryStatus,
    Kind,
    Level,
    RegistryChange,
    bump,
    classify,
    classify_registry,
    derive_schema_version,
    parse_version,
    with_derived_versions,
)
from plait.model.graph import SchemaEntry

Schema = dict[str, Any]


def book(title: Schema | None = None, **chapter_extra: Any) -> Schema:
    """A small nested schema (object → array of objects) the cases below edit."""
    chapter: Schema = {
        "type": "object",
        "properties": {
            "title": title or {"type": "string", "maxLength": 80},
            "words": {"type": "integer", "minimum": 0},
        },
        "required": ["title"],
        **chapter_extra,
    }
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Book name"},
            "mood": {"type": "string", "enum": ["calm", "tense"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            "chapters": {"type": "array", "items": chapter},
        },
        "required": ["name"],
    }


def edit(schema: Schema, path: str, value: Any) -> Schema:
    """A copy with `value` set at a '/'-separated schema path (`...` deletes the key)."""
    out = copy.deepcopy(schema)
    *parents, last = path.split("/")
    node = out
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


CHAPTER = "properties/chapters/items"

# (id, new schema, level, data path, kind) — old is always book().
CASES: list[tuple[str, Schema, Level, str, Kind]] = [
    (
        "optional property on an open object",
        edit(book(), "properties/isbn", {"type": "string"}),
        Level.MAJOR,
        "$.isbn",
        Kind.ADDED_OPTIONAL,
    ),
    (
        "nested description",
        edit(book(), f"{CHAPTER}/properties/title/description", "Heading"),
        Level.PATCH,
        "$.chapters[].title",
        Kind.DESCRIPTION,
    ),
    (
        "description changed",
        edit(book(), "properties/name/description", "Title"),
        Level.PATCH,
        "$.name",
        Kind.DESCRIPTION,
    ),
    ("title added", edit(book(), "title", "Book"), Level.PATCH, "$", Kind.TITLE),
    (
        "required property",
        edit(edit(book(), "properties/isbn", {"type": "string"}), "required", ["name", "isbn"]),
        Level.MAJOR,
        "$.isbn",
        Kind.ADDED_REQUIRED,
    ),
    ("became required", edit(book(), "required", ["name", "mood"]), Level.MAJOR, "$.mood", Kind.BECAME_REQUIRED),
    (
        "nested became required",
        edit(book(), f"{CHAPTER}/required", ["title", "words"]),
        Level.MAJOR,
        "$.chapters[].words",
        Kind.BECAME_REQUIRED,
    ),
    ("became optional", edit(book(), "required", []), Level.MINOR, "$.name", Kind.BECAME_OPTIONAL),
    ("removed from an open object", edit(book(), "properties/tags", ...), Level.MINOR, "$.tags", Kind.REMOVED),
    (
        "nested removed",
        edit(book(), f"{CHAPTER}/properties/words", ...),
        Level.MINOR,
        "$.chapters[].words",
        Kind.REMOVED,
    ),
    ("type change", edit(book(), "properties/name/type", "integer"), Level.MAJOR, "$.name", Kind.TYPE_CHANGED),
    (
        "nullable is a widening",
        edit(book(), "properties/name/type", ["string", "null"]),
        Level.MINOR,
        "$.name",
        Kind.TYPE_WIDENED,
    ),
    (
        "items type change",
        edit(book(), "properties/tags/items/type", "integer"),
        Level.MAJOR,
        "$.tags[]",
        Kind.TYPE_CHANGED,
    ),
    ("narrowed enum", edit(book(), "properties/mood/enum", ["calm"]), Level.MAJOR, "$.mood", Kind.ENUM_NARROWED),
    (
        "widened enum",
        edit(book(), "properties/mood/enum", ["calm", "tense", "sad"]),
        Level.MINOR,
        "$.mood",
        Kind.ENUM_WIDENED,
    ),
    ("enum added", edit(book(), "properties/name/enum", ["x"]), Level.MAJOR, "$.name", Kind.ENUM_ADDED),
    ("enum dropped", edit(book(), "properties/mood/enum", ...), Level.MINOR, "$.mood", Kind.ENUM_REMOVED),
    (
        "lower maxLength",
        book(title={"type": "string", "maxLength": 40}),
        Level.MAJOR,
        "$.chapters[].title",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    (
        "higher maxLength",
        book(title={"type": "string", "maxLength": 200}),
        Level.MINOR,
        "$.chapters[].title",
        Kind.CONSTRAINT_LOOSENED,
    ),
    (
        "new minLength",
        book(title={"type": "string", "maxLength": 80, "minLength": 1}),
        Level.MAJOR,
        "$.chapters[].title",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    (
        "maxLength dropped",
        book(title={"type": "string"}),
        Level.MINOR,
        "$.chapters[].title",
        Kind.CONSTRAINT_LOOSENED,
    ),
    ("lower maxItems", edit(book(), "properties/tags/maxItems", 3), Level.MAJOR, "$.tags", Kind.CONSTRAINT_TIGHTENED),
    ("higher maxItems", edit(book(), "properties/tags/maxItems", 9), Level.MINOR, "$.tags", Kind.CONSTRAINT_LOOSENED),
    (
        "higher minimum",
        edit(book(), f"{CHAPTER}/properties/words/minimum", 10),
        Level.MAJOR,
        "$.chapters[].words",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    (
        "lower minimum",
        edit(book(), f"{CHAPTER}/properties/words/minimum", -5),
        Level.MINOR,
        "$.chapters[].words",
        Kind.CONSTRAINT_LOOSENED,
    ),
    (
        "new maximum",
        edit(book(), f"{CHAPTER}/properties/words/maximum", 1000),
        Level.MAJOR,
        "$.chapters[].words",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    (
        "new pattern",
        edit(book(), "properties/name/pattern", "^[A-Z]"),
        Level.MAJOR,
        "$.name",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    (
        "closed object",
        edit(book(), "additionalProperties", False),
        Level.MAJOR,
        "$",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    (
        "additionalProperties schema",
        edit(book(), "additionalProperties", {"type": "string"}),
        Level.MAJOR,
        "$.*",
        Kind.TYPE_CHANGED,
    ),
    (
        "oneOf added",
        edit(book(), "properties/name/oneOf", [{"minLength": 1}]),
        Level.MAJOR,
        "$.name",
        Kind.CONSTRAINT_TIGHTENED,
    ),
    ("unknown keyword", edit(book(), "properties/name/x-hint", "a name"), Level.PATCH, "$.name", Kind.ANNOTATION),
    ("format is not asserted", edit(book(), "properties/name/format", "email"), Level.PATCH, "$.name", Kind.ANNOTATION),
    ("draft 7 dependencies", edit(book(), "dependencies", {"name": ["mood"]}), Level.MAJOR, "$", Kind.OTHER),
    (
        "reordered enum",
        edit(book(), "properties/mood/enum", ["tense", "calm"]),
        Level.PATCH,
        "$",
        Kind.COSMETIC,
    ),
]


@pytest.mark.parametrize(("new", "level", "path", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_rule_has_its_level_path_and_kind(new: Schema, level: Level, path: str, kind: Kind) -> None:
    change = classify(book(), new)
    assert change.level is level, change.describe()
    assert [(f.level, f.path, f.kind) for f in change.findings] == [(level, path, kind)], change.describe()
    assert change.findings[0].message


def test_identical_and_reordered_keys_are_none() -> None:
    assert classify(book(), book()).level is Level.NONE
    assert classify(book(), book()).findings == ()
    reordered = {k: book()[k] for k in reversed(list(book()))}
    assert classify(book(), reordered).level is Level.NONE


def test_a_text_change_that_validates_the_same_is_patch() -> None:
    change = classify(book(), edit(book(), "properties/name/type", ["string"]))
    assert [(f.level, f.kind) for f in change.findings] == [(Level.PATCH, Kind.COSMETIC)]


def test_rename_names_both_properties() -> None:
    new = edit(book(), f"{CHAPTER}/properties/word_count", {"type": "integer"})
    new = edit(new, f"{CHAPTER}/properties/words", ...)
    change = classify(book(), new)
    assert change.level is Level.MAJOR
    [finding] = change.findings
    assert (finding.kind, finding.path) == (Kind.RENAME, "$.chapters[].words")
    assert "'words'" in finding.message
    assert "'word_count'" in finding.message
    assert "rename" in finding.message


def test_removed_and_added_of_different_types_are_not_a_rename() -> None:
    new = edit(edit(book(), "properties/tags", ...), "properties/pages", {"type": "integer"})
    kinds = {(f.path, f.kind) for f in classify(book(), new).findings}
    assert kinds == {("$.tags", Kind.REMOVED), ("$.pages", Kind.ADDED_OPTIONAL)}


def test_widened_enum_tells_consumers_to_handle_the_new_values() -> None:
    change = classify(book(), edit(book(), "properties/mood/enum", ["calm", "tense", "sad"]))
    assert "consumers must handle" in change.findings[0].message
    assert '"sad"' in change.findings[0].message


def test_enum_with_values_removed_and_added_reports_both() -> None:
    change = classify(book(), edit(book(), "properties/mood/enum", ["calm", "sad"]))
    assert [f.kind for f in change.findings] == [Kind.ENUM_NARROWED, Kind.ENUM_WIDENED]
    assert change.level is Level.MAJOR


def test_disjoint_type_change_reports_only_the_type() -> None:
    change = classify(book(), edit(book(), "properties/chapters", {"type": "string"}))
    assert [(f.path, f.kind) for f in change.findings] == [("$.chapters", Kind.TYPE_CHANGED)]
    assert "array to string" in change.findings[0].message


def test_integer_to_number_is_a_widening_and_the_rest_is_still_analysed() -> None:
    new = edit(book(), f"{CHAPTER}/properties/words", {"type": "number", "minimum": 1})
    change = classify(book(), new)
    assert {(f.level, f.kind) for f in change.findings} == {
        (Level.MINOR, Kind.TYPE_WIDENED),
        (Level.MAJOR, Kind.CONSTRAINT_TIGHTENED),
    }


def test_opening_a_closed_object_is_minor() -> None:
    closed = edit(book(), "additionalProperties", False)
    change = classify(closed, book())
    assert (change.level, change.findings[0].kind) == (Level.MINOR, Kind.CONSTRAINT_LOOSENED)


def test_a_property_added_to_a_closed_object_is_minor_and_to_an_open_one_major() -> None:
    closed = edit(book(), "additionalProperties", False)
    change = classify(closed, edit(closed, "properties/isbn", {"type": "string"}))
    assert [(f.level, f.path, f.kind) for f in change.findings] == [(Level.MINOR, "$.isbn", Kind.ADDED_OPTIONAL)]
    change = classify(book(), edit(book(), "properties/isbn", {"type": "string"}))
    assert "existing data may hold 'isbn'" in change.findings[0].message


def test_property_names_that_are_not_identifiers_are_quoted_in_paths() -> None:
    change = classify(book(), edit(book(), "properties/first page", {"type": "string"}))
    assert change.findings[0].path == '$["first page"]'


def test_bool_and_number_enum_values_are_distinct() -> None:
    old: Schema = {"enum": [1, 2]}
    change = classify(old, {"enum": [True, 2]})
    assert [f.kind for f in change.findings] == [Kind.ENUM_NARROWED, Kind.ENUM_WIDENED]


def test_level_is_ordered_by_severity_not_alphabet() -> None:
    assert Level.NONE < Level.PATCH < Level.MINOR < Level.MAJOR
    assert max(Level.MINOR, Level.MAJOR) is Level.MAJOR
    assert sorted([Level.MAJOR, Level.NONE, Level.MINOR, Level.PATCH]) == list(Level)
    assert Level.MAJOR >= Level.MINOR
    assert not Level.PATCH >= Level.MINOR


@pytest.mark.parametrize(
    ("level", "expected"),
    [(Level.MAJOR, "2.0.0"), (Level.MINOR, "1.5.0"), (Level.PATCH, "1.4.8"), (Level.NONE, "1.4.7")],
)
def test_bump(level: Level, expected: str) -> None:
    assert bump("1.4.7", level) == expected


def test_bump_rejects_a_non_semver() -> None:
    with pytest.raises(ValueError, match="not a semantic version"):
        bump("1.2", Level.PATCH)


# -- registry ----------------------------------------------------------------------------------


def entry(schema_id: str, schema: Schema, version: str = "1.0.0", breaking: bool = False, **extra: Any) -> SchemaEntry:
    return SchemaEntry(id=schema_id, schema=schema, version=version, breaking_change=breaking, **extra)


def test_registry_added_removed_changed_and_unchanged() -> None:
    old = [entry("book", book(), "1.2.0"), entry("gone", {"type": "string"}, "3.0.0"), entry("same", {}, "1.0.1")]
    new = [
        entry("book", edit(book(), "properties/name/description", "Title"), "1.2.0"),
        entry("fresh", {"type": "integer"}, "1.0.0"),
        entry("same", {}, "1.0.1"),
    ]
    change = classify_registry(old, new)
    by_id = {e.schema_id: e for e in change.entries}
    assert [e.schema_id for e in change.entries] == ["book", "fresh", "same", "gone"]
    assert (by_id["book"].status, by_id["book"].level, by_id["book"].new_version) == (
        EntryStatus.CHANGED,
        Level.PATCH,
        "1.2.1",
    )
    assert by_id["book"].findings[0].path == "$.name"
    assert (by_id["fresh"].status, by_id["fresh"].level, by_id["fresh"].new_version) == (
        EntryStatus.ADDED,
        Level.MINOR,
        "1.0.0",
    )
    assert (by_id["same"].status, by_id["same"].level, by_id["same"].new_version) == (
        EntryStatus.UNCHANGED,
        Level.NONE,
        "1.0.1",
    )
    assert (by_id["gone"].status, by_id["gone"].level, by_id["gone"].new_version) == (
        EntryStatus.REMOVED,
        Level.MAJOR,
        None,
    )
    assert change.level is Level.MAJOR
    assert [e.schema_id for e in change.changed] == ["book", "fresh", "gone"]
    assert change.versions() == {"book": "1.2.1", "fresh": "1.0.0", "same": "1.0.1"}
    assert change.warnings == []
    assert any("schema 'gone' removed" in line for line in change.report())


def test_version_is_derived_unless_the_author_wrote_a_higher_one() -> None:
    old = [entry("book", book(), "1.2.3")]
    narrowed = edit(book(), "properties/mood/enum", ["calm"])
    derived = classify_registry(old, [entry("book", narrowed, "1.2.3", breaking=True)])
    assert derived.entry("book") is not None
    assert derived.versions() == {"book": "2.0.0"}
    assert derived.warnings == []
    authored = classify_registry(old, [entry("book", narrowed, "3.0.0", breaking=True)])
    assert authored.versions() == {"book": "3.0.0"}
    assert authored.warnings == []
    too_low = classify_registry(old, [entry("book", narrowed, "1.3.0", breaking=True)])
    assert too_low.versions() == {"book": "2.0.0"}
    [warning] = too_low.warnings
    assert "'book'" in warning
    assert "declared version 1.3.0 is below 2.0.0" in warning
    file_default = classify_registry(old, [entry("book", narrowed, "1.0.0", breaking=True)])
    assert (file_default.versions(), file_default.warnings) == ({"book": "2.0.0"}, [])


def test_breaking_flag_true_on_a_minor_change_warns_with_the_findings() -> None:
    old = [entry("book", book())]
    new = [entry("book", edit(book(), "properties/mood/enum", ["calm", "tense", "sad"]), breaking=True)]
    [warning] = classify_registry(old, new).warnings
    assert "'book'" in warning
    assert "breaking_change is true but the change classifies as minor" in warning
    assert "$.mood" in warning


def test_breaking_flag_false_on_a_major_change_warns() -> None:
    old = [entry("book", book())]
    new = [entry("book", edit(book(), "properties/mood/enum", ["calm"]))]
    [warning] = classify_registry(old, new).warnings
    assert "'book'" in warning
    assert "breaking (major) but breaking_change is false" in warning
    assert "$.mood" in warning


def test_agreeing_breaking_flags_do_not_warn() -> None:
    old = [entry("book", book())]
    narrowed = edit(book(), "properties/mood/enum", ["calm"])
    assert classify_registry(old, [entry("book", narrowed, breaking=True)]).warnings == []
    assert classify_registry(old, [entry("book", edit(book(), "title", "B"))]).warnings == []


def test_breaking_flag_on_an_unchanged_schema_warns_only_when_newly_set() -> None:
    assert classify_registry([entry("b", book(), breaking=True)], [entry("b", book(), breaking=True)]).warnings == []
    [warning] = classify_registry([entry("b", book())], [entry("b", book(), breaking=True)]).warnings
    assert "'b'" in warning
    assert "classifies as none" in warning


def test_entry_description_change_is_patch() -> None:
    change = classify_registry([entry("b", book(), description="x")], [entry("b", book(), description="y")])
    assert (change.level, change.versions()) == (Level.PATCH, {"b": "1.0.1"})


def test_with_derived_versions_copies_the_entries() -> None:
    widened = edit(book(), "properties/mood/enum", ["calm", "tense", "sad"])
    new = [entry("book", widened, "1.0.0"), entry("other", {}, "2.0.0")]
    change = classify_registry([entry("book", book(), "1.0.0"), entry("other", {}, "2.0.0")], new)
    stored = with_derived_versions(new, change)
    assert [(e.id, e.version) for e in stored] == [("book", "1.1.0"), ("other", "2.0.0")]
    assert new[0].version == "1.0.0"
    assert stored[0].schema_ == new[0].schema_


def test_schema_version_derivation() -> None:
    def registry(*levels: Level) -> RegistryChange:
        old = [entry(f"s{i}", book()) for i in range(len(levels))]
        edits = {
            Level.NONE: book(),
            Level.PATCH: edit(book(), "title", "B"),
            Level.MINOR: edit(book(), "properties/mood/enum", ["calm", "tense", "sad"]),
            Level.MAJOR: edit(book(), "properties/name/type", "integer"),
        }
        return classify_registry(old, [entry(f"s{i}", edits[lv]) for i, lv in enumerate(levels)])

    assert derive_schema_version(None, registry(Level.MAJOR)) == "1.0.0"
    assert derive_schema_version(None, registry(), declared="2.1.0") == "2.1.0"
    assert derive_schema_version("1.4.2", registry(Level.NONE, Level.NONE)) == "1.4.2"
    assert derive_schema_version("1.4.2", registry(Level.PATCH, Level.NONE)) == "1.4.3"
    assert derive_schema_version("1.4.2", registry(Level.PATCH, Level.MINOR)) == "1.5.0"
    assert derive_schema_version("1.4.2", registry(Level.MINOR, Level.MAJOR, Level.PATCH)) == "2.0.0"
    assert derive_schema_version("1.4.2", registry(Level.PATCH), declared="1.4.2") == "1.4.3"
    assert derive_schema_version("1.4.2", registry(Level.PATCH), declared="5.0.0") == "5.0.0"
    added = classify_registry([], [entry("new", {})])
    assert derive_schema_version("1.4.2", added) == "1.5.0"


# -- property-based ----------------------------------------------------------------------------

NAMES = st.text(alphabet="abcdefgh", min_size=1, max_size=4)  # fresh names below contain '_', never drawn
TYPES = ("string", "integer", "number", "boolean", "object", "array")


def _with_description(schema: Schema, description: str | None) -> Schema:
    return schema if description is None else {**schema, "description": description}


ENUMS = st.lists(st.sampled_from(["x", "y", "z", "w"]), min_size=2, max_size=4, unique=True).map(
    lambda values: {"type": "string", "enum": values}
)
LEAVES: st.SearchStrategy[Schema] = st.builds(
    _with_description,
    st.one_of(
        st.sampled_from(["string", "integer", "number", "boolean"]).map(lambda t: {"type": t}),
        st.integers(1, 100).map(lambda n: {"type": "string", "maxLength": n}),
        ENUMS,
        ENUMS,  # twice: enough enums for `narrow_enum` to find one
    ),
    st.none() | st.text(alphabet="pqr ", max_size=6),
)


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[Schema]) -> Schema:
    properties = draw(st.dictionaries(NAMES, children, min_size=1, max_size=4))
    required = [name for name in properties if draw(st.booleans())]
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


SCHEMAS: st.SearchStrategy[Schema] = objects(
    st.recursive(
        LEAVES,
        lambda inner: objects(inner) | inner.map(lambda items: {"type": "array", "items": items}),
        max_leaves=8,
    )
)

Pointer = tuple[str, ...]
EXPECTED = {
    "add_optional": (Level.MAJOR, Kind.ADDED_OPTIONAL),
    "add_required": (Level.MAJOR, Kind.ADDED_REQUIRED),
    "remove": (Level.MINOR, Kind.REMOVED),
    "change_type": (Level.MAJOR, Kind.TYPE_CHANGED),
    "rename": (Level.MAJOR, Kind.RENAME),
    "narrow_enum": (Level.MAJOR, Kind.ENUM_NARROWED),
    "description": (Level.PATCH, Kind.DESCRIPTION),
}
CLOSED = {"add_optional": Level.MINOR, "remove": Level.MAJOR}
"""Levels that differ in a closed object: nothing existing holds a new property, a removed one is refused."""


def expected(mutation: str, schema: Schema, at: Pointer) -> tuple[Level, Kind]:
    """The level and kind of `mutation` applied at `at` of `schema` (the schema before the change)."""
    level, kind = EXPECTED[mutation]
    if len(at) >= 2 and at[-2] == "properties" and resolve(schema, at[:-2]).get("additionalProperties") is False:
        level = CLOSED.get(mutation, level)
    return level, kind


def nodes(schema: Schema, at: Pointer = ()) -> list[Pointer]:
    """Pointers to every subschema (root, properties, items), parents first."""
    out = [at]
    for name, child in schema.get("properties", {}).items():
        out += nodes(child, (*at, "properties", name))
    if "items" in schema:
        out += nodes(schema["items"], (*at, "items"))
    return out


def resolve(schema: Schema, pointer: Pointer) -> Schema:
    for key in pointer:
        schema = schema[key]
    return schema


def data_path(pointer: Pointer) -> str:
    return "$" + "".join(f".{pointer[i + 1]}" if key == "properties" else "[]" for i, key in _keys(pointer))


def _keys(pointer: Pointer) -> list[tuple[int, str]]:
    out, i = [], 0
    while i < len(pointer):
        out.append((i, pointer[i]))
        i += 2 if pointer[i] == "properties" else 1
    return out


def _under(pointer: Pointer, ancestor: Pointer) -> bool:
    return pointer[: len(ancestor)] == ancestor


@dataclass
class Mutator:
    """Applies mutations that cannot undo each other, so their levels cannot cancel out.

    A removed, renamed, retyped or narrowed property is `touched`: nothing at or under it is
    mutated again, and no property is removed over something mutated inside it. New properties
    get fresh names, so no later mutation hits them.
    """

    original: Schema
    schema: Schema = field(init=False)
    touched: list[Pointer] = field(default_factory=list)
    mutated: list[Pointer] = field(default_factory=list)
    fresh: int = 0

    def __post_init__(self) -> None:
        self.schema = copy.deepcopy(self.original)

    def _free(self, pointer: Pointer) -> bool:
        return not any(_under(pointer, t) for t in self.touched)

    def targets(self, mutation: str) -> list[Pointer]:
        """Where `mutation` can apply; every pointer comes from the original and still resolves."""
        found = [p for p in nodes(self.original) if self._free(p)]
        if mutation in ("add_optional", "add_required"):
            return [p for p in found if "properties" in resolve(self.original, p)]
        if mutation == "description":
            return found
        found = [p for p in found if len(p) >= 2 and p[-2] == "properties"]
        if mutation == "remove":  # removing a property would undo what was changed inside it
            found = [p for p in found if not any(_under(m, p) for m in self.mutated)]
        if mutation == "narrow_enum":
            return [p for p in found if len(resolve(self.original, p).get("enum", [])) >= 2]
        return found

    def _name(self) -> str:
        self.fresh += 1
        return f"new_{self.fresh}"

    def apply(self, mutation: str, pointer: Pointer, data: st.DataObject) -> Pointer:
        """Mutate at `pointer`; returns the pointer of the node the finding is reported at."""
        self.mutated.append(pointer)
        node = resolve(self.schema, pointer)
        if mutation in ("add_optional", "add_required"):
            name = self._name()
            node["properties"][name] = data.draw(LEAVES)
            if mutation == "add_required":
                node["required"] = [*node.get("required", []), name]
            return (*pointer, "properties", name)
        if mutation == "description":
            self.fresh += 1
            node["description"] = f"{node.get('description', '')} (edit {self.fresh})"
            return pointer
        self.touched.append(pointer)
        parent, name = resolve(self.schema, pointer[:-2]), pointer[-1]
        if mutation == "remove":
            del parent["properties"][name]
            if name in parent.get("required", []):
                parent["required"].remove(name)
        elif mutation == "rename":
            new_name = self._name()
            parent["properties"] = {new_name if k == name else k: v for k, v in parent["properties"].items()}
            parent["required"] = [new_name if k == name else k for k in parent.get("required", [])]
        elif mutation == "change_type":  # never integer to number: that one is a widening
            others = [t for t in TYPES if t != node["type"] and (node["type"], t) != ("integer", "number")]
            parent["properties"][name] = {"type": data.draw(st.sampled_from(others))}
        elif mutation == "narrow_enum":
            values = node["enum"]
            drop = data.draw(st.lists(st.sampled_from(values), min_size=1, max_size=len(values) - 1, unique=True))
            node["enum"] = [v for v in values if v not in drop]
        return pointer


MUTATIONS = st.sampled_from(sorted(EXPECTED))


def mutate(mutator: Mutator, mutation: str, data: st.DataObject) -> Pointer | None:
    targets = mutator.targets(mutation)
    if not targets:
        return None
    return mutator.apply(mutation, data.draw(st.sampled_from(targets)), data)


@settings(max_examples=200, deadline=None)
@given(SCHEMAS, MUTATIONS, st.data())
def test_a_single_mutation_is_classified_at_its_level_kind_and_path(
    schema: Schema, mutation: str, data: st.DataObject
) -> None:
    mutator = Mutator(schema)
    at = mutate(mutator, mutation, data)
    if at is None:  # e.g. no enum to narrow: the other mutations always apply
        assert mutation == "narrow_enum"
        return
    level, kind = expected(mutation, schema, at)
    change = classify(schema, mutator.schema)
    assert change.level is level, change.describe()
    assert (kind, data_path(at)) in {(f.kind, f.path) for f in change.findings}, change.describe()
    assert max(f.level for f in change.findings) is level
    if mutation == "rename":
        [finding] = change.findings
        new_name = f"new_{mutator.fresh}"
        assert f"'{at[-1]}'" in finding.message
        assert f"'{new_name}'" in finding.message


@settings(max_examples=200, deadline=None)
@given(SCHEMAS, st.lists(MUTATIONS, min_size=2, max_size=4), st.data())
def test_the_level_of_combined_mutations_is_the_max_of_theirs(
    schema: Schema, mutations: list[str], data: st.DataObject
) -> None:
    mutator = Mutator(schema)
    applied = [(m, at) for m in mutations if (at := mutate(mutator, m, data)) is not None]
    level = max((expected(m, schema, at)[0] for m, at in applied), default=Level.NONE)
    change = classify(schema, mutator.schema)
    assert change.level is level, (applied, change.describe())


@settings(max_examples=200, deadline=None)
@given(SCHEMAS)
def test_a_schema_compared_with_itself_is_none(schema: Schema) -> None:
    change = classify(schema, copy.deepcopy(schema))
    assert (change.level, change.findings) == (Level.NONE, ())


SEMVERS = st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40)).map(lambda v: ".".join(map(str, v)))
LEVELS = st.sampled_from(list(Level))


@settings(max_examples=200, deadline=None)
@given(SEMVERS, SEMVERS, LEVELS, LEVELS)
def test_bump_is_monotonic(a: str, b: str, low: Level, high: Level) -> None:
    low, high = min(low, high), max(low, high)
    assert parse_version(bump(a, low)) <= parse_version(bump(a, high))
    assert (parse_version(bump(a, low)) > parse_version(a)) == (low > Level.NONE)
    a, b = sorted((a, b), key=parse_version)
    assert parse_version(bump(a, low)) <= parse_version(bump(b, low))


@settings(max_examples=200, deadline=None)
@given(SEMVERS, LEVELS)
def test_bump_raises_one_component_and_resets_the_lower_ones(version: str, level: Level) -> None:
    major, minor, patch = parse_version(version)
    expected = {
        Level.NONE: (major, minor, patch),
        Level.PATCH: (major, minor, patch + 1),
        Level.MINOR: (major, minor + 1, 0),
        Level.MAJOR: (major + 1, 0, 0),
    }
    assert parse_version(bump(version, level)) == expected[level]
