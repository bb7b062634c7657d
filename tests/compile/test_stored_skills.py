"""SKILL nodes naming stored skills (`skill: name`, `name@N`), expanded through a `SkillSource`:
parameters checked against the node's `inputs`, mapped into the skill's `input`, the version
recorded on the inlined nodes, cycles and depth refused, skill files inside stored skills refused,
and a clear error when no store is at hand. Skill files keep working beside them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from plait.compile import CompileResult, compile_data, compile_file
from plait.compile.skill_params import SkillSource, StoredSkill, parse_parameters, skill_ref

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
SCHEMAS = [{"id": "text", "schema": TEXT}]


def skill_graph(skill_id: str, nodes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    nodes = nodes or [{"id": "up", "type": "LLM_CALL", "user_prompt_tpl": "Shout {{ input.text }} {{ input.times }}"}]
    return {
        "plait": 1,
        "id": skill_id,
        "schemas": SCHEMAS,
        "nodes": nodes,
        "edges": [{"source": nodes[-1]["id"], "target": "END", "schema_id": "text"}],
    }


SHOUT_PARAMS, _ = parse_parameters(
    [
        {"name": "words", "schema": {"type": "string"}},
        {"name": "times", "schema": {"type": "integer", "minimum": 1}, "default": 2},
    ]
)


class Shelf:
    """An in-memory source of stored skills: name -> versions (1-based)."""

    def __init__(self) -> None:
        self.skills: dict[str, list[StoredSkill]] = {}

    def put(self, name: str, document: dict[str, Any], parameters: Any = (), mapping: Any = None) -> None:
        versions = self.skills.setdefault(name, [])
        versions.append(StoredSkill(name, len(versions) + 1, document, tuple(parameters), dict(mapping or {})))

    def source(self) -> SkillSource:
        def find(name: str, version: int | None) -> StoredSkill | None:
            versions = self.skills.get(name, [])
            if not versions or (version is not None and version > len(versions)):
                return None
            return versions[-1 if version is None else version - 1]

        return find


def user(skill: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "plait": 1,
        "id": "user",
        "schemas": SCHEMAS,
        "nodes": [{"id": "s", "type": "SKILL", "skill": skill, "inputs": inputs}],
        "edges": [{"source": "s", "target": "END", "schema_id": "text"}],
    }


def codes(result: CompileResult) -> list[str]:
    return sorted(d.code for d in result.errors)


def shelf_with_shout() -> Shelf:
    shelf = Shelf()
    shelf.put("shout", skill_graph("shout"), SHOUT_PARAMS, {"text": "words"})
    return shelf


def test_a_name_or_a_version_is_a_stored_skill_and_a_path_is_a_file() -> None:
    assert skill_ref("shout") == ("shout", None)
    assert skill_ref("shout@3") == ("shout", 3)
    assert skill_ref("skills/shout.yaml") is None
    assert skill_ref("shout.yml") is None
    assert skill_ref("shout@0") is None


def test_parameters_are_mapped_into_the_input_and_the_version_is_recorded() -> None:
    shelf = shelf_with_shout()
    result = compile_data(user("shout", {"words": "{{ input.x }}"}), skills=shelf.source())
    assert result.valid, [d.format() for d in result.errors]
    assert result.expanded is not None
    [inner] = result.expanded.nodes
    assert inner.id == "__s__up"
    assert inner.skill_scope is not None
    assert inner.skill_scope.inputs == {"text": "{{ input.x }}", "times": 2}  # mapped; the default filled in
    assert inner.skill_scope.skill == "shout@1"


def test_the_newest_version_is_expanded_unless_one_is_named() -> None:
    shelf = shelf_with_shout()
    louder = skill_graph("shout", [{"id": "yell", "type": "LLM_CALL", "user_prompt_tpl": "YELL {{ input.text }}"}])
    shelf.put("shout", louder, SHOUT_PARAMS, {"text": "words"})
    newest = compile_data(user("shout", {"words": "hi"}), skills=shelf.source())
    pinned = compile_data(user("shout@1", {"words": "hi"}), skills=shelf.source())
    assert newest.expanded is not None
    assert pinned.expanded is not None
    assert [(n.id, n.skill_scope and n.skill_scope.skill) for n in newest.expanded.nodes] == [("__s__yell", "shout@2")]
    assert [(n.id, n.skill_scope and n.skill_scope.skill) for n in pinned.expanded.nodes] == [("__s__up", "shout@1")]


def test_inputs_that_break_the_parameters_are_compile_errors_on_the_node() -> None:
    shelf = shelf_with_shout()
    result = compile_data(user("shout", {"wrods": "hi", "times": 0}), skills=shelf.source())
    assert codes(result) == ["bad_skill_parameter", "missing_skill_parameter", "unknown_skill_parameter"]
    assert {d.node_id for d in result.errors} == {"s"}
    unknown = next(d for d in result.errors if d.code == "unknown_skill_parameter")
    assert "its parameters are: words, times" in (unknown.hint or "")
    templated = compile_data(user("shout", {"words": "hi", "times": "{{ input.n }}"}), skills=shelf.source())
    assert templated.valid  # a template is checked when the run renders it


def test_unknown_skills_versions_and_a_missing_store_are_clear_errors() -> None:
    shelf = shelf_with_shout()
    missing = compile_data(user("nope", {}), skills=shelf.source())
    assert [(d.code, d.message) for d in missing.errors] == [("unknown_skill", "there is no stored skill 'nope'")]
    assert "plait skills list" in (missing.errors[0].hint or "")
    version = compile_data(user("shout@9", {"words": "x"}), skills=shelf.source())
    assert "version 9 of the stored skill 'shout'" in version.errors[0].message
    nowhere = compile_data(user("shout", {"words": "x"}))
    assert codes(nowhere) == ["unknown_skill"]
    assert "no store is at hand" in nowhere.errors[0].message
    odd = compile_data(user("not a name!", {}))
    assert "neither a skill file nor a stored skill's name" in odd.errors[0].message


def test_a_cycle_through_stored_skills_is_refused_naming_the_chain() -> None:
    shelf = Shelf()
    shelf.put("a", skill_graph("a", [{"id": "b", "type": "SKILL", "skill": "b"}]))
    shelf.put("b", skill_graph("b", [{"id": "a", "type": "SKILL", "skill": "a"}]))
    result = compile_data(user("a", {}), skills=shelf.source())
    cycle = [d.message for d in result.errors if d.message.startswith("skill includes itself")]
    assert cycle == ["skill includes itself: a@1 → b@1 → a@1"], [d.format() for d in result.errors]


def test_stored_skills_nest_at_most_five_levels() -> None:
    shelf = Shelf()
    shelf.put("s0", skill_graph("s0"))
    for level in range(1, 8):
        shelf.put(f"s{level}", skill_graph(f"s{level}", [{"id": "n", "type": "SKILL", "skill": f"s{level - 1}"}]))
    deep = compile_data(user("s7", {}), skills=shelf.source())
    assert any("nest deeper than 5 levels" in d.message for d in deep.errors)
    shallow = compile_data(user("s4", {}), skills=shelf.source())
    assert shallow.valid, [d.format() for d in shallow.errors]
    assert shallow.expanded is not None
    assert [n.id for n in shallow.expanded.nodes] == ["__s____n____n____n____n__up"]


def test_a_stored_skill_cannot_name_a_skill_file(tmp_path: Path) -> None:
    (tmp_path / "inner.yaml").write_text(yaml.safe_dump(skill_graph("inner")))
    shelf = Shelf()
    shelf.put("outer", skill_graph("outer", [{"id": "f", "type": "SKILL", "skill": str(tmp_path / "inner.yaml")}]))
    result = compile_data(user("outer", {}), skills=shelf.source())
    assert "skill_file_in_stored_skill" in codes(result)


def test_a_skill_file_may_name_a_stored_skill_and_files_still_work(tmp_path: Path) -> None:
    shelf = shelf_with_shout()
    (tmp_path / "inner.yaml").write_text(yaml.safe_dump(user("shout", {"words": "{{ input.text }}"})))
    outer = user("inner.yaml", {"text": "hello"})
    (tmp_path / "outer.yaml").write_text(yaml.safe_dump(outer))
    result = compile_file(tmp_path / "outer.yaml", skills=shelf.source())
    assert result.valid, [d.format() for d in result.errors]
    assert result.expanded is not None
    [inner] = result.expanded.nodes
    assert inner.id == "__s____s__up"
    assert inner.skill_scope is not None
    assert inner.skill_scope.skill == "shout@1"
