"""Load, validate and expand graph files (SPEC §2.3)."""

from plait.compile.compiler import CompileResult, compile_data, compile_doc, compile_file
from plait.compile.diagnostics import Category, Diagnostic, GraphLoadError

__all__ = ["Category", "CompileResult", "Diagnostic", "GraphLoadError", "compile_data", "compile_doc", "compile_file"]
