"""Child graphs of SUBGRAPH, MAP and LOOP nodes, compiled and embedded in the graph.

A node's `graph` naming a graph file is compiled (relative to this file) and embedded as the
node's `body`; an inline `body` is compiled the same way. The expanded graph then carries every
child graph it runs by file or inline, so a stored graph is self-contained: a run never reads a
file, and a server never reads a file a graph sent to it names. A stored graph named by id is
looked up when the node starts (its version pinned then).

Each body is compiled with every pass; its errors are reported on the node, saying which body
they are in. Files that include each other, and bodies nested deeper than `MAX_BODY_DEPTH`, are
errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.source import SourceDoc
from plait.model.graph import GraphDef
from plait.model.nodes import NodeBase, is_graph_file, node_field

if TYPE_CHECKING:
    from plait.compile.load import LoadedGraph
    from plait.compile.result import CompileResult

MAX_BODY_DEPTH = 5
"""How deeply child graphs may nest (a body inside a body); runs enforce the same depth."""

CompileFile = Callable[[Path, tuple[str, ...]], "CompileResult"]
CompileBody = Callable[[SourceDoc, tuple[str, ...]], "CompileResult"]


@dataclass
class Embedded:
    """A graph with its child graphs compiled into their nodes' `body`, or the errors found."""

    graph: GraphDef
    errors: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)


def runs_graph(node: NodeBase) -> bool:
    """Whether `node` runs a graph as child runs (SUBGRAPH, MAP, LOOP)."""
    return hasattr(node, "body") and hasattr(node, "graph")


def embed_bodies(
    graph: GraphDef, loaded: LoadedGraph, chain: tuple[str, ...], compile_file: CompileFile, compile_body: CompileBody
) -> Embedded:
    """`graph` (`loaded`'s graph, SKILLs expanded) with every child graph given by file or inline
    compiled and embedded as `body`; errors name the node and, where the file has them, the
    lines. Never raises for a bad child graph."""
    result = Embedded(graph)
    if not any(runs_graph(n) for n in graph.nodes):
        return result
    file = loaded.doc.file
    base_dir = loaded.doc.files_folder()  # None: content with no file reads no file it names
    nodes: list[NodeBase] = []
    for node in graph.nodes:
        source = _inline_source(loaded, node)
        where = _Where(file, base_dir, chain, loaded.node_line(node.id, "body") or loaded.node_line(node.id, "graph"))
        body = _body_of(result, node, where, source, compile_file, compile_body)
        nodes.append(node if body is None else node.model_copy(update={"body": body}))
    if not result.errors:
        result.graph = graph.model_copy(update={"nodes": nodes})
    return result


@dataclass(frozen=True)
class _Where:
    file: str | None
    base_dir: Path | None
    """The folder graph files are found in; None: the graph came as content (an upload, a model's
    draft, a stored document), and no file it names is read."""
    chain: tuple[str, ...]
    line: int | None
    """The node's `body:` (or `graph:`) line."""


def _inline_source(loaded: LoadedGraph, node: NodeBase) -> SourceDoc | None:
    """An inline body as a document of its own, with the lines it has in this file."""
    body = node_field(node, "body", None)
    path = loaded.node_paths.get(node.id)
    if body is None:
        return None
    named = {"id": f"{loaded.graph.id}.{node.id}", "name": node.label or node.id, **body}
    if path is None:  # an inlined SKILL's node: its lines are in the skill's file
        return SourceDoc(data=named, folder=loaded.doc.folder)
    prefix = (*path, "body")
    lines = {p[len(prefix) :]: line for p, line in loaded.doc.lines.items() if p[: len(prefix)] == prefix}
    return SourceDoc(data=named, file=loaded.doc.file, lines=lines, folder=loaded.doc.folder)


NO_FOLDER_HINT = (
    "put the child graph inline (`body:`), name a stored graph by its id, or import the file with "
    "`plait graphs import FILE` on the machine that has it (files are embedded then)"
)


def _body_of(
    result: Embedded,
    node: NodeBase,
    where: _Where,
    source: SourceDoc | None,
    compile_file: CompileFile,
    compile_body: CompileBody,
) -> dict[str, Any] | None:
    """The compiled body to embed in `node` (None: nothing to embed, or an error was reported)."""
    if not runs_graph(node):
        return None
    file, chain = where.file, where.chain

    def fail(category: Category, code: str, message: str, hint: str) -> None:
        result.errors.append(
            Diagnostic(category, code, message, node_id=node.id, file=file, line=where.line, hint=hint)
        )

    ref = node_field(node, "graph", None)
    if len(chain) > MAX_BODY_DEPTH:
        fail(
            Category.PLANNING,
            "graph_recursion",
            f"child graphs nest deeper than {MAX_BODY_DEPTH} levels",
            f"at most {MAX_BODY_DEPTH} levels of SUBGRAPH, MAP or LOOP inside one another",
        )
        return None
    if source is not None:
        sub = compile_body(source, (*chain, f"{chain[-1] if chain else '-'}#{node.id}"))
        label = f"the body of '{node.id}'"
    elif isinstance(ref, str) and is_graph_file(ref):
        if where.base_dir is None:
            message = f"this node names the graph file '{ref}', and a graph sent as content reads no files"
            fail(Category.CONFIG, "file_in_content", message, NO_FOLDER_HINT)
            return None
        path = (where.base_dir / ref).resolve()
        if not path.is_file():
            return None  # reported by check_graph_files
        if str(path) in chain:
            trail = " → ".join(Path(p).name for p in (*chain, str(path)))
            fail(
                Category.PLANNING,
                "graph_recursion",
                f"graph files run each other in a cycle: {trail}",
                "a graph cannot run itself as a child graph, directly or through others",
            )
            return None
        sub = compile_file(path, (*chain, str(path)))
        label = f"graph file '{ref}'"
    else:
        return None  # a stored graph: found when the node starts
    result.warnings.extend(sub.warnings)
    if not sub.valid or sub.expanded is None:
        fail(
            Category.CONFIG,
            "invalid_child_graph",
            f"{label} is not valid ({len(sub.errors)} error{'s' if len(sub.errors) != 1 else ''})",
            "fix the errors that follow",
        )
        result.errors.extend(_inside(d, node.id, label, file) for d in sub.errors)
        return None
    return sub.expanded.model_dump(mode="json", by_alias=True, exclude_none=True)


def _inside(diagnostic: Diagnostic, node_id: str, label: str, file: str | None) -> Diagnostic:
    """A child graph's diagnostic, saying which child graph it is in; a diagnostic without a
    position is put on the node that runs that graph."""
    return Diagnostic(
        diagnostic.category,
        diagnostic.code,
        f"in {label}: {diagnostic.message}",
        node_id=diagnostic.node_id if diagnostic.line is not None else node_id,
        edge_id=diagnostic.edge_id,
        file=diagnostic.file if diagnostic.line is not None else file,
        line=diagnostic.line,
        hint=diagnostic.hint,
        severity=diagnostic.severity,
    )
