"""What compiling a graph gives: the graph, its diagnostics and, when valid, its plan.

Apart from the compiler so that SKILL expansion, which compiles each skill file, can use it
without importing the compiler back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from plait.compile.diagnostics import Diagnostic
from plait.compile.plan import ExecutionPlan, plan_graph
from plait.compile.topology import Topology
from plait.model.graph import GraphDef
from plait.model.nodes import SkillScope


@dataclass
class CompileResult:
    """What compiling a graph found; `plait validate` reports it.

    - `valid` is True exactly when `errors` is empty; warnings never make a graph invalid.
    - `errors` holds every problem found, not only the first, each a positioned `Diagnostic`.
      A file that could not be read or parsed gives a result with only `file` and `errors` set.
    - `graph` is the graph as written, holding only the parts that validated. `expanded` (SKILL
      nodes inlined: what a run executes) and `aliases` are set only when the graph is valid.
    - `topology` is that of `expanded` when it is set, else of the graph as written.
    - `plan` is built on first access, and is None for an invalid graph.
    The compiler fills it in; callers read it and do not change it.
    """

    file: str | None
    graph: GraphDef | None = None
    """The graph as written (the parts that validated)."""
    expanded: GraphDef | None = None
    """With SKILL nodes inlined; what the engine executes. Set only when valid."""
    topology: Topology | None = None
    aliases: dict[str, list[str]] = field(default_factory=dict)
    errors: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def scopes(self) -> dict[str, SkillScope]:
        """Inlined node id -> how its names resolve (see `SkillScope`)."""
        graph = self.expanded or self.graph
        return {n.id: n.skill_scope for n in graph.nodes if n.skill_scope is not None} if graph else {}

    @property
    def valid(self) -> bool:
        return not self.errors

    @cached_property
    def plan(self) -> ExecutionPlan | None:
        """What the engine executes this graph by (None for an invalid graph); built when asked,
        so that `plait validate` does not pay for it."""
        return plan_graph(self.expanded) if self.valid and self.expanded is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "errors": [d.to_json() for d in self.errors],
            "warnings": [d.to_json() for d in self.warnings],
        }
