"""The Python entry points for graph files: `plait.validate` and `plait.load_graph`."""

from __future__ import annotations

import os

from plait.compile.compiler import compile_file
from plait.compile.diagnostics import Diagnostic
from plait.compile.result import CompileResult
from plait.errors import PlaitError, Refusal
from plait.model.graph import GraphDef


class GraphInvalid(PlaitError, ValueError):
    """A graph has errors; `diagnostics` lists all of them (what `plait validate` prints)."""

    kind = Refusal.INVALID
    code = "graph_invalid"

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__(
            "invalid graph:\n" + "\n".join(d.format() for d in diagnostics),
            "fix every listed problem (`plait validate FILE` reports the same ones)",
        )


def validate(path: str | os.PathLike[str]) -> CompileResult:
    """Compile a graph file; never raises for a bad graph (see `CompileResult.errors`)."""
    return compile_file(path)


def load_graph(path: str | os.PathLike[str], *, expand_skills: bool = True) -> GraphDef:
    """The graph in a file, with SKILL nodes inlined unless `expand_skills=False`; raise GraphInvalid."""
    result = compile_file(path)
    if not result.valid or result.graph is None or result.expanded is None:
        raise GraphInvalid(result.errors)
    return result.expanded if expand_skills else result.graph
