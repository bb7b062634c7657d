"""Plait: prompt graphs with typed edge contracts, recorded runs and human corrections.

    >>> import plait
    >>> graph = plait.load_graph("examples/video_chapters.yaml")   # GraphDef, or GraphInvalid
    >>> result = plait.validate("examples/video_chapters.yaml")    # CompileResult: errors, warnings
    >>> done = plait.run("examples/feedback_triage.yaml", {"feedback": "..."}, llm="local")  # RunResult
    >>> with plait.Client() as client: ...                         # runs, corrections, reads (docs/python.md)

The package stays import-light (`plait validate` must start fast): the names
below are imported on first use, and the store, HTTP stack and provider SDKs
are imported only by the code that needs them.
"""

from __future__ import annotations

__version__ = "0.1.0"

# `typing` is not imported at run time: evaluator processes import this module, and start
# faster without it (annotations are strings here; mypy reads the block below).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from plait.client import AsyncClient, Client, RunResult, run
    from plait.compile import CompileResult, Diagnostic, GraphInvalid, load_graph, validate
    from plait.compile.builder import GraphBuilder
    from plait.errors import PlaitError
    from plait.model import GraphDef

_LAZY = {
    "AsyncClient": "plait.client",
    "Client": "plait.client",
    "RunResult": "plait.client",
    "run": "plait.client",
    "GraphBuilder": "plait.compile.builder",
    "PlaitError": "plait.errors",
    "GraphDef": "plait.model",
    "CompileResult": "plait.compile",
    "Diagnostic": "plait.compile",
    "GraphInvalid": "plait.compile",
    "load_graph": "plait.compile",
    "validate": "plait.compile",
}

__all__ = [
    "AsyncClient",
    "Client",
    "CompileResult",
    "Diagnostic",
    "GraphBuilder",
    "GraphDef",
    "GraphInvalid",
    "PlaitError",
    "RunResult",
    "__version__",
    "load_graph",
    "run",
    "validate",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'plait' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
