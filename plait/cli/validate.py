"""`plait validate`: compile one file or every graph file of a folder and report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from plait.compile import CompileResult, compile_file
from plait.compile.diagnostics import Category, Diagnostic

GRAPH_SUFFIXES = (".yaml", ".yml", ".json")


def graph_files(target: Path) -> list[Path]:
    """The graph files a target names: itself, or the graph files directly inside a folder."""
    if target.is_dir():
        return sorted(p for p in target.iterdir() if p.is_file() and p.suffix.lower() in GRAPH_SUFFIXES)
    return [target]


def run_validate(target: Path, json_output: bool) -> int:
    """Compile `target` (a graph file, or every graph file in a folder) and print the diagnostics,
    as text or JSON; the exit code: 0 when every file is valid, else 2."""
    if not target.exists():
        diag = Diagnostic(
            Category.CONFIG,
            "unreadable",
            f"no such file or folder: {target}",
            file=str(target),
            hint="give the path of a .yaml/.yml/.json graph file",
        )
        results = [CompileResult(file=str(target), errors=[diag])]
    else:
        files = graph_files(target)
        if not files:
            sys.stderr.write(f"plait: no graph files (.yaml, .yml, .json) in {target}\n")
            return 2
        results = [compile_file(path) for path in files]
    if json_output:
        _print_json(results)
    else:
        _print_text(results)
    return 0 if all(r.valid for r in results) else 2


def _print_json(results: list[CompileResult]) -> None:
    payload = {
        "valid": all(r.valid for r in results),
        "errors": [d.to_json() for r in results for d in r.errors],
        "warnings": [d.to_json() for r in results for d in r.warnings],
    }
    if len(results) > 1:
        payload["files"] = [{"file": r.file, "valid": r.valid} for r in results]
    sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def _print_text(results: list[CompileResult]) -> None:
    for result in results:
        for diag in (*result.errors, *result.warnings):
            sys.stderr.write(diag.format() + "\n")
        if result.valid:
            graph = result.expanded or result.graph
            size = (
                f"{_count(len(graph.nodes), 'node')}, {_count(len(graph.edges), 'edge')}" if graph is not None else ""
            )
            note = f", {_count(len(result.warnings), 'warning')}" if result.warnings else ""
            sys.stdout.write(f"ok  {result.file}  ({size}{note})\n")
        else:
            sys.stdout.write(f"invalid  {result.file}  ({_count(len(result.errors), 'error')})\n")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
