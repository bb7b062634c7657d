"""Reading the keys Plait adds to outputs: which stored outputs need migrating on read."""

from __future__ import annotations

from plait.model.output_meta import annotated, is_current, outdated, strip_meta, strip_meta_deep

V1 = {"items": ["a"], "_schema_id": "chapters", "_schema_version": "1.2.0"}


def test_a_value_is_current_unless_its_major_is_another() -> None:
    assert is_current(V1, "chapters", "1.9.3")
    assert not is_current(V1, "chapters", "2.0.0")
    assert is_current(V1, "other", "2.0.0")  # not this schema's value
    assert is_current({"items": [], "_schema_id": "chapters"}, "chapters", "2.0.0")  # no version: nothing to migrate
    assert not is_current({**V1, "_schema_version": "one"}, "chapters", "1.0.0")  # unreadable: let migration say so
    assert not is_current({**V1, "_schema_version": 1}, "chapters", "1.0.0")


def test_outdated_looks_at_the_output_or_the_members_of_a_merge_map() -> None:
    assert outdated(V1, {"chapters": "2.0.0"})
    assert not outdated(V1, {"chapters": "1.0.0"})
    assert not outdated(V1, {"count": "2.0.0"})  # a schema the graph no longer has is left alone
    merged = {"split": V1, "count": {"n": 1, "_schema_id": "count", "_schema_version": "1.0.0"}, "x": 3}
    assert [key for key, _ in annotated(merged)] == ["split", "count"]
    assert outdated(merged, {"chapters": "2.0.0", "count": "1.0.0"})
    assert not outdated(merged, {"chapters": "1.1.0", "count": "1.0.0"})
    assert not outdated("text", {"chapters": "2.0.0"})
    assert not outdated({"deep": {"inner": V1}}, {"chapters": "2.0.0"})  # one level only, as migration reads it


def test_strip_meta_keeps_the_object_when_there_is_nothing_to_strip() -> None:
    plain = {"items": ["a"]}
    assert strip_meta(plain) is plain
    assert strip_meta(V1) == plain
    assert strip_meta_deep({"m": [V1], "_routed": {}}) == {"m": [plain]}
