"""Every node type a graph can hold is executed: none passes validation only to be refused at
run time (SKILL nodes are replaced by their skill's nodes before a run)."""

from __future__ import annotations

from plait.engine.executors import SUPPORTED
from plait.model.nodes import NodeType


def test_the_engine_executes_every_node_type_but_the_expanded_skill() -> None:
    assert set(NodeType) - set(SUPPORTED) == {NodeType.SKILL}
