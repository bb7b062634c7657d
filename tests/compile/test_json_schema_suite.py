"""The official JSON-Schema-Test-Suite (drafts 2020-12 and 7, required tests) through Plait's own path.

Each schema of the suite is a graph's schema entry: `plait validate` either accepts it, and then
every instance of the suite must get the suite's verdict from the validator Plait checks outputs
with, or refuses it (a remote reference, an `$id` URI, a pattern RE2 cannot run). Refusals are
expected, and listed in `json_schema_suite_refusals.json` with their diagnostic codes; the test
prints the counts, writes them to pytest's cache (`json-schema-test-suite/report`), and fails on
a wrong verdict or on any change in what is refused (a new refusal is a regression; one that
went away belongs off the list).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from plait.compile import compile_data
from plait.engine.contracts import schema_violations
from plait.model.graph import SchemaEntry
from tests.compile.json_schema_suite import Group, groups, suite_folder
from tests.user_cache import kept_folder

EXPECTED = Path(__file__).with_name("json_schema_suite_refusals.json")


@pytest.fixture(scope="module")
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[Group]:
    folder = kept_folder()
    if folder is None:
        cache = getattr(request.config, "cache", None)  # None when pytest runs with -p no:cacheprovider
        folder = cache.mkdir("json-schema-test-suite") if cache is not None else tmp_path_factory.mktemp("suite")
    return list(groups(suite_folder(folder)))


def graph_of(group: Group) -> dict[str, Any]:
    schema = group.schema
    if isinstance(schema, dict) and "$schema" not in schema:
        schema = {"$schema": group.dialect, **schema}  # the suite's draft folder names the dialect
    return {
        "plait": 1,
        "id": "suite",
        "schemas": [{"id": "case", "schema": schema}],
        "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "input"}],
        "edges": [{"source": "a", "target": "END", "schema_id": "case"}],
    }


def test_every_schema_plait_accepts_gets_the_suites_verdicts(
    suite: list[Group], request: pytest.FixtureRequest
) -> None:
    refused: dict[str, list[str]] = {}
    wrong: list[str] = []
    checked = 0
    for group in suite:
        data = graph_of(group)
        errors = compile_data(data).errors
        if errors:
            refused[group.key] = sorted({e.code for e in errors})
            continue
        entry = SchemaEntry.model_validate(data["schemas"][0])
        for test in group.tests:
            found = schema_violations(entry.schema_, test["data"], [entry])
            checked += 1
            if (not found) != test["valid"]:
                verdict = "accepted" if not found else f"refused ({'; '.join(found)[:300]})"
                wrong.append(f"{group.key} / {test['description']}: expected valid={test['valid']}, {verdict}")
    expected: dict[str, list[str]] = json.loads(EXPECTED.read_text(encoding="utf-8"))
    report = {
        "groups": len(suite),
        "accepted": len(suite) - len(refused),
        "instances_checked": checked,
        "wrong_verdicts": len(wrong),
        "refused": len(refused),
        "refused_by_code": dict(sorted(Counter(c for codes in refused.values() for c in codes).items())),
    }
    print("\nJSON-Schema-Test-Suite:", json.dumps(report, indent=2))
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        cache.set("json-schema-test-suite/report", {**report, "refusals": refused})
    assert wrong == []
    new = {key: codes for key, codes in refused.items() if expected.get(key) != codes}
    assert new == {}, f"{len(new)} suite schemas are refused that were accepted (or refused for another reason)"
    gone = sorted(set(expected) - set(refused))
    assert gone == [], f"{len(gone)} suite schemas are accepted now: take them off {EXPECTED.name}"
