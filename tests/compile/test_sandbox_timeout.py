"""`timeout_s` of a node that runs JavaScript is checked against the sandbox's cap at validate time."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plait.compile import compile_data
from plait.config import forget_loaded


@pytest.fixture(autouse=True)
def default_cap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # no plait.toml here
    monkeypatch.delenv("PLAIT_CONFIG", raising=False)
    forget_loaded()
    yield
    forget_loaded()


def graph(node: dict[str, Any]) -> dict[str, Any]:
    return {"id": "g", "nodes": [node], "edges": []}


def codes(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in compile_data(data).errors]


@pytest.mark.parametrize("timeout_s", [2_200_000, math.inf, 31])
@pytest.mark.parametrize(
    "node",
    [
        {"id": "t", "type": "TRANSFORM", "transform_expr": "({a: 1})"},
        {"id": "c", "type": "CONDITION", "condition_expr": "true"},
        {"id": "k", "type": "CODE", "code": "return {a: 1};"},
    ],
)
def test_a_timeout_over_the_cap_is_refused_naming_the_limit(node: dict[str, Any], timeout_s: float) -> None:
    found = codes(graph({**node, "timeout_s": timeout_s}))
    assert [code for code, _ in found] == ["timeout_over_limit"]
    assert "30 s" in found[0][1] or "finite" in found[0][1]


def test_a_timeout_within_the_cap_is_fine() -> None:
    assert codes(graph({"id": "t", "type": "TRANSFORM", "transform_expr": "1", "timeout_s": 30})) == []


def test_the_cap_comes_from_plait_toml(tmp_path: Path) -> None:
    (tmp_path / "plait.toml").write_text("[sandbox]\nmax_timeout_s = 120\n")
    assert codes(graph({"id": "t", "type": "TRANSFORM", "transform_expr": "1", "timeout_s": 100})) == []
    found = codes(graph({"id": "t", "type": "TRANSFORM", "transform_expr": "1", "timeout_s": 121}))
    assert found
    assert "limit of 120 s" in found[0][1]


def test_plait_toml_accepts_the_sandbox_table(tmp_path: Path) -> None:
    from plait.config import load_config
    from plait.sandbox.limits import max_timeout_s

    (tmp_path / "plait.toml").write_text("[sandbox]\nmax_timeout_s = 12\n")
    assert load_config(str(tmp_path / "plait.toml")).sandbox.max_timeout_s == 12
    assert max_timeout_s() == 12


def test_python_code_has_its_own_cap_not_the_sandboxs() -> None:
    code = "def main(input, nodes):\n    return 1\n"
    assert codes(graph({"id": "p", "type": "CODE", "language": "python", "code": code, "timeout_s": 120})) == []
