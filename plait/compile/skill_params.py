"""Stored skills as the compiler sees them: a graph document with declared parameters and an
input mapping, and the checks of a SKILL node's `inputs` against those parameters.

The compiler cannot read the store (it sits below it), so whoever has one passes a
`SkillSource`: `(name, version or None for the newest) -> StoredSkill | None`. A SKILL node's
`skill:` names a stored skill when it reads `name` or `name@N`; a value with a `/` or a graph
file's suffix is a skill file, as before. The parameters become the skill's `input` through the
mapping (`SkillScope.inputs`), so inside the skill `input` means what it always meant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plait.compile.schema_validator import cached_validator, messages, schema_key
from plait.compile.schemas import check_json_schema
from plait.model.nodes import is_graph_file

SKILL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
"""A stored skill's name: no dot and no slash, so it can never be read as a skill file."""
_SKILL_REF = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_-]{0,63})(?:@(?P<version>[1-9][0-9]{0,8}))?$")
_PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_PARAMETERS = 64
STORED_PREFIX = "skill:"
"""How a stored skill is written in the compiler's chain of what it is expanding (`skill:name@N`)."""


@dataclass(frozen=True, slots=True)
class SkillParameter:
    """One declared parameter: its JSON Schema, and its default when it has one."""

    name: str
    schema: Any = True
    description: str | None = None
    has_default: bool = False
    default: Any = None
    required: bool = True

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "schema": self.schema}
        if self.description:
            data["description"] = self.description
        if self.has_default:
            data["default"] = self.default
        if not self.required and not self.has_default:
            data["required"] = False
        return data


@dataclass(frozen=True, slots=True)
class StoredSkill:
    """One version of a stored skill, as the compiler expands it."""

    name: str
    version: int
    document: dict[str, Any]
    parameters: tuple[SkillParameter, ...] = ()
    input_mapping: dict[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


SkillSource = Callable[[str, "int | None"], "StoredSkill | None"]
"""Looks a stored skill up: by name, at a version (None: the newest). None when there is none."""


def skill_ref(value: str) -> tuple[str, int | None] | None:
    """(name, version) when `value` names a stored skill (`name`, `name@N`); None for a skill file
    (a path: a `/` or a graph file's suffix) or anything else (the caller says which)."""
    if "/" in value or "\\" in value or is_graph_file(value):
        return None
    found = _SKILL_REF.match(value)
    if found is None:
        return None
    version = found.group("version")
    return found.group("name"), int(version) if version else None


def is_skill_file(value: str) -> bool:
    """Whether a SKILL's `skill:` names a file (read relative to the graph file)."""
    return "/" in value or "\\" in value or is_graph_file(value)


def parse_parameters(raw: Any) -> tuple[tuple[SkillParameter, ...], list[str]]:
    """Declared parameters from their JSON form (a list of `{name, schema, default?, description?,
    required?}`), and every problem with them, each naming the parameter."""
    if raw is None:
        return (), []
    if not isinstance(raw, list):
        return (), ["`parameters` must be a list of {name, schema, default?, description?}"]
    if len(raw) > MAX_PARAMETERS:
        return (), [f"a skill declares at most {MAX_PARAMETERS} parameters, not {len(raw)}"]
    found: list[SkillParameter] = []
    problems: list[str] = []
    for index, item in enumerate(raw):
        parameter, wrong = _parameter(index, item)
        problems.extend(wrong)
        if parameter is not None:
            if any(p.name == parameter.name for p in found):
                problems.append(f"parameter '{parameter.name}' is declared twice")
            found.append(parameter)
    return tuple(found), problems


_PARAMETER_KEYS = frozenset({"name", "schema", "default", "description", "required"})


def _parameter(index: int, item: Any) -> tuple[SkillParameter | None, list[str]]:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None, [f"parameter {index + 1} must be an object with a `name`"]
    name = item["name"]
    problems = [f"parameter '{name}' has unknown field '{key}'" for key in sorted(set(item) - _PARAMETER_KEYS)]
    if not _PARAMETER_NAME.match(name):
        problems.append(f"parameter '{name}' is not a name: letters, digits and '_', starting with a letter or '_'")
    schema = item.get("schema", True)
    problems += [f"parameter '{name}': schema {p.message}" for p in check_json_schema(schema)]
    description = item.get("description")
    if description is not None and not isinstance(description, str):
        problems.append(f"parameter '{name}': `description` must be text")
    has_default = "default" in item
    required = item.get("required", not has_default)
    if not isinstance(required, bool):
        problems.append(f"parameter '{name}': `required` must be true or false")
        required = True
    if has_default and not problems:
        problems += [
            f"parameter '{name}': its default breaks its schema ({m})" for m in _breaks(schema, item["default"])
        ]
    parameter = SkillParameter(
        name, schema, description, has_default, item.get("default"), required and not has_default
    )
    return parameter, problems


def check_mapping(mapping: Any, parameters: tuple[SkillParameter, ...]) -> list[str]:
    """Problems with an input mapping: `{field of the skill's input: parameter name}`."""
    if mapping is None:
        return []
    if not isinstance(mapping, dict):
        return ["`input_mapping` must be an object {field of the skill's input: parameter name}"]
    names = {p.name for p in parameters}
    problems = []
    for key, value in mapping.items():
        if not isinstance(key, str) or not _PARAMETER_NAME.match(key):
            problems.append(f"input_mapping: '{key}' is not a field name")
        if not isinstance(value, str) or value not in names:
            problems.append(f"input_mapping: '{key}' maps from '{value}', which is not a declared parameter")
    return problems


@dataclass(frozen=True, slots=True)
class InputProblem:
    """A SKILL node's `inputs` do not fit the skill's parameters."""

    code: str
    message: str
    hint: str


def check_inputs(inputs: Mapping[str, Any], skill: StoredSkill) -> list[InputProblem]:
    """How a SKILL node's `inputs` break `skill`'s parameters: an unknown one, a required one
    missing, a literal value (not a template) its schema refuses. A skill that declares no
    parameters takes any inputs, as a skill file does."""
    if not skill.parameters:
        return []
    declared = {p.name: p for p in skill.parameters}
    listed = ", ".join(declared)
    problems = [
        InputProblem(
            "unknown_skill_parameter",
            f"skill '{skill.ref}' has no parameter '{name}'",
            f"its parameters are: {listed}",
        )
        for name in inputs
        if name not in declared
    ]
    for parameter in skill.parameters:
        if parameter.name not in inputs:
            if parameter.required:
                problems.append(
                    InputProblem(
                        "missing_skill_parameter",
                        f"skill '{skill.ref}' needs the parameter '{parameter.name}'",
                        f"add `{parameter.name}` to the node's `inputs`"
                        + (f" ({parameter.description})" if parameter.description else ""),
                    )
                )
            continue
        value = inputs[parameter.name]
        if _is_template(value):
            continue  # its value is known when the run renders it
        for broken in _breaks(parameter.schema, value)[:3]:
            problems.append(
                InputProblem(
                    "bad_skill_parameter",
                    f"the value of '{parameter.name}' does not fit skill '{skill.ref}': {broken}",
                    f"give a value matching {json.dumps(parameter.schema)[:200]}",
                )
            )
    return problems


def scope_inputs(inputs: Mapping[str, Any], skill: StoredSkill) -> dict[str, Any]:
    """What `input` means inside the skill: each parameter's value (given, else its default)
    under the field the mapping gives it (default: its own name). No parameters declared: the
    inputs as they are."""
    if not skill.parameters:
        return dict(inputs)
    fields: dict[str, list[str]] = {}
    for target, source in skill.input_mapping.items():
        fields.setdefault(source, []).append(target)
    scoped: dict[str, Any] = {}
    for parameter in skill.parameters:
        if parameter.name in inputs:
            value = inputs[parameter.name]
        elif parameter.has_default:
            value = parameter.default
        else:
            continue
        for target in fields.get(parameter.name, [parameter.name]):
            scoped[target] = value
    return scoped


def _is_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_is_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_is_template(v) for v in value)
    return False


def _breaks(schema: Any, value: Any) -> list[str]:
    if check_json_schema(schema):
        return []  # reported as the schema's own problem
    try:
        return messages(cached_validator(schema_key(schema)), value)
    except (TypeError, ValueError):
        return ["the value is not JSON"]
