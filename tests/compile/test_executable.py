"""The compiler's list of executable node types is the engine's (it keeps its own copy so that
`plait validate` does not import the engine)."""

from __future__ import annotations

from plait.compile.checks.executable import EXECUTABLE
from plait.engine.executors import SUPPORTED


def test_the_compiler_warns_about_exactly_the_node_types_the_engine_refuses() -> None:
    assert set(SUPPORTED) == EXECUTABLE
