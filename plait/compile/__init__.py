"""Load, validate and expand graph files: what `plait validate` checks, and the graph a run executes."""

from plait.compile.compiler import compile_data, compile_doc, compile_file
from plait.compile.diagnostics import Category, Diagnostic, GraphLoadError
from plait.compile.files import GraphInvalid, load_graph, validate
from plait.compile.result import CompileResult

__all__ = [
    "Category",
    "CompileResult",
    "Diagnostic",
    "GraphInvalid",
    "GraphLoadError",
    "compile_data",
    "compile_doc",
    "compile_file",
    "load_graph",
    "validate",
]
