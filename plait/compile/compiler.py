"""The compiler: load → structural, schema, node and template passes → skill expansion →
child graphs embedded.

`compile_file` is what `plait validate` runs. It never raises for a bad graph:
every problem comes back in `CompileResult.errors` (all of them, not the first),
warnings separately.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plait.compile.bodies import embed_bodies
from plait.compile.checks import answer_schemas, expressions, structure, templates
from plait.compile.checks import nodes as node_checks
from plait.compile.checks import schemas as schema_checks
from plait.compile.context import CheckContext, VersionsFor
from plait.compile.diagnostics import Category, Diagnostic, GraphLoadError
from plait.compile.load import LoadedGraph, load_graph
from plait.compile.result import CompileResult
from plait.compile.run_bounds import run_bounds
from plait.compile.skill_params import SkillSource, StoredSkill
from plait.compile.skills import SkillLookup, expand_skills
from plait.compile.source import SourceDoc, max_graph_bytes, read_source
from plait.compile.topology import Topology
from plait.model.documents import DocumentError, read_limited
from plait.model.graph import GraphDef

PASSES = (
    structure.check_duplicates,
    structure.check_edges,
    structure.check_topology,
    structure.check_branching,
    structure.check_edge_schemas,
    structure.check_duplicate_members,
    schema_checks.check_schema_documents,
    schema_checks.check_migrations,
    schema_checks.check_schema_conflicts,
    schema_checks.check_unused_schemas,
    node_checks.check_expressions,
    node_checks.check_tools,
    node_checks.check_program_env,
    node_checks.check_repair,
    node_checks.check_context_overflow,
    node_checks.check_context_include,
    templates.check_templates,
    expressions.check_expression_paths,
    answer_schemas.check_answer_schemas,
)


def compile_file(
    path: str | os.PathLike[str],
    *,
    versions: VersionsFor | None = None,
    skills: SkillSource | None = None,
    _chain: tuple[str, ...] = (),
) -> CompileResult:
    """Compile the graph file at `path` (YAML, or JSON for a `.json` name) with every pass, and
    inline its SKILLs.

    Never raises for a bad graph or a file it cannot read: every problem comes back as a
    diagnostic in the result. The SKILL files it names are compiled the same way, relative to
    this file. `versions`: the schema versions the graph would be stored at (see
    `CheckContext.versions`). `skills`: where stored skills (`skill: name[@N]`) are looked up;
    without it a SKILL naming one is an error. `_chain` is internal: the files (and stored
    skills) being compiled above this one, so that a SKILL that includes itself is reported
    instead of followed.
    """
    file = str(path)
    with _javascript_preloaded(path):
        try:
            doc = read_source(path)
        except GraphLoadError as exc:
            return CompileResult(file=file, errors=exc.diagnostics)
        chain = _chain or (str(Path(path).resolve()),)
        return compile_doc(doc, chain=chain, versions=versions, skills=skills)


_JAVASCRIPT_KEYS = (b"_expr", b"code")
"""Keys whose values the compiler hands to the JavaScript parser (`condition_expr`,
`transform_expr`, `while_expr`, `until_expr`, `migrate_expr`, CODE `code`); a false positive only loads
QuickJS for nothing."""


@contextmanager
def _javascript_preloaded(path: str | os.PathLike[str]) -> Iterator[None]:
    """A graph with JavaScript needs QuickJS for its syntax check: start loading it at once, on a
    thread, so that it overlaps with parsing and validating the file (`plait validate` start-up)."""
    try:
        raw = read_limited(path, "graph file", max_bytes=max_graph_bytes())  # never blocks on a FIFO
    except DocumentError:
        raw = b""  # read_source reports it
    loader = None
    if any(key in raw for key in _JAVASCRIPT_KEYS):
        from plait.sandbox.syntax import preload

        loader = preload()
    try:
        yield
    finally:
        if loader is not None:
            loader.join()


def compile_data(data: Any, *, file: str | None = None, skills: SkillSource | None = None) -> CompileResult:
    """Compile already-parsed data (API bodies, stored defs): same checks, no line numbers."""
    return compile_doc(SourceDoc(data=data, file=file), skills=skills)


def compile_doc(
    doc: SourceDoc,
    *,
    chain: tuple[str, ...] = (),
    versions: VersionsFor | None = None,
    skills: SkillSource | None = None,
) -> CompileResult:
    """Compile already-parsed source: load it into a GraphDef, run every pass over what validated,
    and, only when no pass found an error, inline its SKILLs (files relative to `doc.file`; content
    without a file reads none; stored skills from `skills`). `chain`: the files being compiled
    above this one (see `compile_file`). Never raises for a bad graph."""
    loaded = load_graph(doc)
    result = CompileResult(file=doc.file, graph=loaded.graph, errors=list(loaded.diagnostics))
    if not isinstance(doc.data, dict):
        return result
    ctx = CheckContext.build(loaded, versions=versions)
    for check in PASSES:
        check(ctx)
    base_dir = Path(doc.file).parent if doc.file else None
    node_checks.check_graph_files(ctx, base_dir)
    result.errors.extend(ctx.errors)
    result.warnings.extend(ctx.warnings)
    result.topology = ctx.topo
    if result.errors:
        return result
    _expand(result, loaded, chain, skills)
    if result.expanded is not None and not result.errors:
        result.errors.extend(budget_problems(result.expanded, loaded))
    return result


def budget_problems(graph: GraphDef, loaded: LoadedGraph) -> list[Diagnostic]:
    """The run budget (`[runs]` of plait.toml) that one run of `graph` (expanded: its bodies and
    graph files embedded) could pass, by its static bounds (`run_bounds`): the first one only."""
    from plait.config import runs_settings

    budget = runs_settings()
    bounds = run_bounds(graph)
    problems: list[Diagnostic] = []
    where = bounds.chain[0][1] if bounds.chain else None
    line = loaded.node_line(where) if where is not None else None
    for made, limit, what, key in (
        (bounds.child_runs, budget.max_child_runs, "child runs", "max_child_runs"),
        (bounds.node_runs, budget.max_node_runs, "node runs", "max_node_runs"),
    ):
        if made > limit:
            why = f": {bounds.explain()}" if bounds.chain else ""
            problems.append(
                Diagnostic(
                    Category.PLANNING,
                    "run_budget",
                    f"one run of this graph can make up to {made:,} {what}{why}; the run budget allows {limit:,}",
                    node_id=where,
                    file=loaded.doc.file,
                    line=line,
                    hint=(
                        "lower max_iterations or the maxItems of the lists MAPs go over, or split the work into "
                        f"runs of their own; the budget is the deployer's ([runs] {key} in plait.toml)"
                    ),
                )
            )
            break  # one cause: the node runs follow the child runs
    return problems


def _expand(result: CompileResult, loaded: LoadedGraph, chain: tuple[str, ...], skills: SkillSource | None) -> None:
    def compile_skill(path: Path, sub_chain: tuple[str, ...]) -> CompileResult:
        return compile_file(path, skills=skills, _chain=sub_chain)

    def compile_stored(skill: StoredSkill, sub_chain: tuple[str, ...]) -> CompileResult:
        return compile_doc(SourceDoc(data=skill.document), chain=sub_chain, skills=skills)

    def skill_line(node_id: str) -> int | None:
        return loaded.node_line(node_id, "skill")  # the `skill:` line is the one to fix

    stored = SkillLookup(skills, compile_stored) if skills is not None else None
    folder = loaded.doc.files_folder()
    expansion = expand_skills(loaded.graph, loaded.doc.file, chain, compile_skill, skill_line, stored, folder)
    result.errors.extend(expansion.errors)
    result.warnings.extend(expansion.warnings)
    if expansion.errors:
        return

    def compile_body(doc: SourceDoc, sub_chain: tuple[str, ...]) -> CompileResult:
        return compile_doc(doc, chain=sub_chain, skills=skills)

    embedded = embed_bodies(expansion.graph, loaded, chain, compile_skill, compile_body)
    result.errors.extend(embedded.errors)
    result.warnings.extend(embedded.warnings)
    if embedded.errors:
        return
    result.expanded = embedded.graph
    result.aliases = expansion.aliases
    if embedded.graph is not loaded.graph:
        result.topology = Topology.build(
            [n.id for n in embedded.graph.nodes],
            [(e.source_node_id, e.target_node_id) for e in embedded.graph.edges],
        )
