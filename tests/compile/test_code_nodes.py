"""CODE and TOOL nodes at validate time: each language's code is parsed by its own parser (nothing
runs), and what only the machine can decide (the allow-list, Python on or off) waits for the run."""

from __future__ import annotations

from typing import Any

import pytest

from plait.compile import compile_data


def errors(node: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in compile_data({"id": "g", "nodes": [node], "edges": []}).errors]


def test_python_code_is_parsed_as_python_not_javascript() -> None:
    code = "import json\n\ndef main(input, nodes):\n    return {'n': len(json.dumps(input))}\n"
    assert errors({"id": "p", "type": "CODE", "language": "python", "code": code}) == []


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def main(input, nodes)\n    return 1\n", "code does not parse as Python: expected ':' (line 1)"),
        ("def main(input, nodes):\n    return (1\n", "code does not parse as Python: '(' was never closed (line 2)"),
        ("def helper():\n    return 1\n", "Python code defines no main(input, nodes)"),
    ],
)
def test_python_code_that_does_not_parse_or_has_no_main_is_refused(code: str, message: str) -> None:
    assert errors({"id": "p", "type": "CODE", "language": "python", "code": code}) == [("bad_expression", message)]


def test_javascript_code_is_parsed_as_a_body() -> None:
    assert errors({"id": "j", "type": "CODE", "code": "return {a: 1};"}) == []
    found = errors({"id": "j", "type": "CODE", "code": "return {a: 1"})
    assert [code for code, _ in found] == ["bad_expression"]


def test_a_tool_program_is_checked_when_a_run_starts_not_at_validate_time() -> None:
    """The allow-list is the machine's (plait.toml), not the graph's: the same graph validates
    everywhere and runs only where its program is allowed (tests/engine/test_program_nodes.py)."""
    assert errors({"id": "t", "type": "TOOL", "command": ["jq", "-n", "{{ input.query }}"]}) == []
