"""An empirical oracle for schema changes: values valid under the old schema, validated under the new one.

A change the classifier calls patch or minor promises that data written under the old schema
still validates under the new one (reader-side backward compatibility). The oracle tries to
break that promise: it draws values from the old schema (hypothesis-jsonschema, a bounded
number, derandomized so the suite is deterministic), keeps those Plait's own validator accepts
under the old schema, and looks for one the new schema refuses. Values are also drawn from the
old schema with the property names the new one mentions declared as "anything", so that an
open object is tried with exactly the properties the new schema constrains. Hand-written
witnesses are checked the same way.

Finding no counterexample proves nothing; finding one refutes a patch or minor verdict.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from plait.compile.schema_validator import NO_REGISTRY, violations
from tests.schema_values import from_schema

MAX_EXAMPLES = 30
"""Values drawn per strategy and pair: enough to find the breaks of the corpus, fast enough for the suite."""


@dataclass(frozen=True)
class Outcome:
    """What the oracle saw for one (old, new) pair."""

    tried: int
    """Values valid under the old schema that were validated under the new one."""
    broken: tuple[Any, ...]
    """Those the new schema refused (the first few)."""

    @property
    def counterexample(self) -> bool:
        return bool(self.broken)


def valid(schema: Any, value: Any) -> bool:
    """Plait's verdict (the draft the schema's `$schema` names, RE2 patterns, no fetching)."""
    return not violations(json.dumps(schema, sort_keys=True), NO_REGISTRY, value)


def check(old: Any, new: Any, witnesses: Iterable[Any] = (), max_examples: int = MAX_EXAMPLES) -> Outcome:
    """Draw values valid under `old` and report those `new` refuses."""
    tried: list[int] = [0]
    broken: list[Any] = []

    def judge(value: Any) -> None:
        if len(broken) >= 3 or not valid(old, value):
            return
        tried[0] += 1
        if not valid(new, value):
            broken.append(value)

    for value in witnesses:
        judge(value)
    for strategy in _strategies(old, new):
        if broken:  # one refusal settles it
            break
        _draw(strategy, judge, max_examples)
    return Outcome(tried[0], tuple(broken))


def _strategies(old: Any, new: Any) -> Iterator[st.SearchStrategy[Any]]:
    yield from_schema(old)
    names = sorted(_names(new) - _names(old))
    if names:
        yield from_schema(_hinted(old, names))


def _draw(strategy: st.SearchStrategy[Any], judge: Any, max_examples: int) -> None:
    @settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(value: Any) -> None:
        judge(value)

    try:
        run()
    except Exception:  # a schema hypothesis-jsonschema cannot draw from yields no values
        return


def _names(schema: Any) -> set[str]:
    """Every property name a schema mentions (declared, required, depended on)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("properties", "dependentSchemas", "dependentRequired") and isinstance(value, dict):
                found |= set(value)
                if key == "dependentRequired":
                    found |= {n for names in value.values() if isinstance(names, list) for n in names}
            if key == "required" and isinstance(value, list):
                found |= {n for n in value if isinstance(n, str)}
            if key not in ("enum", "const", "examples", "default"):
                found |= _names(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _names(value)
    return found


def _hinted(old: Any, names: list[str]) -> Any:
    """`old` with `names` declared as "anything" in each open object schema (so they get drawn)."""
    hinted = copy.deepcopy(old)
    _declare(hinted, names)
    return hinted


def _declare(schema: Any, names: list[str]) -> None:
    if isinstance(schema, list):
        for value in schema:
            _declare(value, names)
        return
    if not isinstance(schema, dict):
        return
    objectish = "properties" in schema or schema.get("type") == "object"
    closed = any(k in schema for k in ("additionalProperties", "patternProperties", "unevaluatedProperties"))
    if objectish and not closed and isinstance(schema.get("properties", {}), dict):
        schema["properties"] = {**{n: {} for n in names}, **schema.get("properties", {})}
    for key, value in schema.items():
        if key not in ("enum", "const", "examples", "default", "properties"):
            _declare(value, names)
    for value in (schema.get("properties") or {}).values() if isinstance(schema.get("properties"), dict) else ():
        _declare(value, names)
