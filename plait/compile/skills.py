"""SKILL expansion: inline a skill graph's nodes under the namespace `__{skill_node}__`.

The skill file is compiled on its own first (its errors point into its own
file); only a valid skill is inlined. In-edges of the SKILL node are rewired
to the skill's entry nodes and its out-edges leave from the skill's exits.
Inner nodes keep their templates unchanged: their `skill_scope` records how the
renderer must read `input` (the SKILL node's `inputs`) and the inner ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.topology import Topology
from plait.model.graph import END, EdgeDef, GraphDef
from plait.model.nodes import NodeBase, SkillNode, SkillScope

if TYPE_CHECKING:
    from plait.compile.result import CompileResult

MAX_SKILL_DEPTH = 5


@dataclass
class Expansion:
    """A graph with its SKILL nodes inlined, or the errors that prevented it."""

    graph: GraphDef
    aliases: dict[str, list[str]] = field(default_factory=dict)
    """SKILL node id -> the prefixed exit node ids whose outputs stand for it."""
    errors: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)


CompileFn = Callable[[Path, tuple[str, ...]], "CompileResult"]


def expand_skills(
    graph: GraphDef,
    file: str | None,
    chain: tuple[str, ...],
    compile_file: CompileFn,
    line_of: Callable[[str], int | None],
) -> Expansion:
    """`graph` with each SKILL node replaced by its skill file's nodes (paths relative to `file`,
    else to the working directory). Each skill is compiled with `compile_file` first and only a
    valid one is inlined; a missing, invalid, self-including or too deeply nested skill is an
    error in the result, and its own errors follow it. Never raises for a bad skill."""
    result = Expansion(graph)
    skills = [n for n in graph.nodes if isinstance(n, SkillNode)]
    if not skills:
        return result
    base_dir = Path(file).parent if file else Path.cwd()
    for node in skills:
        _expand_one(result, node, base_dir, file, chain, compile_file, line_of(node.id))
    return result


def _expand_one(
    result: Expansion,
    node: SkillNode,
    base_dir: Path,
    file: str | None,
    chain: tuple[str, ...],
    compile_file: CompileFn,
    line: int | None,
) -> None:
    def fail(category: Category, code: str, message: str, hint: str) -> None:
        result.errors.append(Diagnostic(category, code, message, node_id=node.id, file=file, line=line, hint=hint))

    path = (base_dir / node.skill).resolve()
    if not path.is_file():
        fail(
            Category.CONFIG,
            "unknown_skill",
            f"skill file '{node.skill}' does not exist",
            "skill paths are relative to the graph file",
        )
        return
    trail = " → ".join(Path(p).name for p in (*chain, str(path)))
    if str(path) in chain:
        fail(
            Category.PLANNING,
            "skill_recursion",
            f"skill includes itself: {trail}",
            "a skill cannot contain itself, directly or through other skills",
        )
        return
    if len(chain) > MAX_SKILL_DEPTH:
        fail(
            Category.PLANNING,
            "skill_recursion",
            f"skills nest deeper than {MAX_SKILL_DEPTH} levels: {trail}",
            f"flatten the skills; at most {MAX_SKILL_DEPTH} levels of SKILL inside SKILL",
        )
        return
    sub = compile_file(path, (*chain, str(path)))
    result.warnings.extend(sub.warnings)
    if not sub.valid or sub.expanded is None:
        if any(d.code == "skill_recursion" for d in sub.errors):
            fail(
                Category.PLANNING,
                "skill_recursion",
                f"skill '{node.skill}' nests skills too deeply or includes itself (see the errors that follow)",
                f"at most {MAX_SKILL_DEPTH} levels of SKILL inside SKILL",
            )
        else:
            fail(
                Category.CONFIG,
                "invalid_skill",
                f"skill '{node.skill}' is not valid ({len(sub.errors)} error{'s' if len(sub.errors) != 1 else ''})",
                "fix the errors reported in the skill file",
            )
        result.errors.extend(sub.errors)  # after the SKILL node's own error: "see the errors that follow"
        return
    _inline(result, node, sub.expanded)


def _inline(result: Expansion, node: SkillNode, skill: GraphDef) -> None:
    prefix = f"__{node.id}__"
    graph = result.graph
    topo = Topology.build([n.id for n in skill.nodes], [(e.source_node_id, e.target_node_id) for e in skill.edges])
    nodes: list[NodeBase] = []
    for existing in graph.nodes:
        if existing.id != node.id:
            nodes.append(existing)
            continue
        for inner in skill.nodes:
            nested = inner.skill_scope
            scope = (
                nested.model_copy(update={"prefix": prefix + nested.prefix})
                if nested is not None
                else SkillScope(skill_node_id=node.id, prefix=prefix, inputs=dict(node.inputs))
            )
            nodes.append(inner.model_copy(update={"id": prefix + inner.id, "skill_scope": scope}))

    edges: list[EdgeDef] = []
    for edge in graph.edges:
        if edge.target_node_id == node.id:
            edges.extend(_rewire(edge, target=[prefix + e for e in topo.entries]))
        elif edge.source_node_id == node.id:
            edges.extend(_rewire(edge, source=[prefix + e for e in topo.exits]))
        else:
            edges.append(edge)
    for edge in skill.edges:
        if edge.target_node_id == END:
            continue  # the skill's output contract; in the parent, the SKILL node's out-edges type it
        edges.append(
            edge.model_copy(
                update={
                    "id": f"{prefix}{edge.id}",
                    "source_node_id": prefix + edge.source_node_id,
                    "target_node_id": prefix + edge.target_node_id,
                    "schema_id": f"{prefix}{edge.schema_id}" if edge.schema_id else None,
                }
            )
        )
    schemas = [*graph.schemas, *(s.model_copy(update={"id": prefix + s.id}) for s in skill.schemas)]
    migrations = [
        *graph.migrations,
        *(m.model_copy(update={"schema_id": prefix + m.schema_id}) for m in skill.migrations),
    ]
    result.graph = graph.model_copy(
        update={"nodes": nodes, "edges": edges, "schemas": schemas, "migrations": migrations}
    )
    result.aliases[node.id] = [prefix + e for e in topo.exits]


def _rewire(edge: EdgeDef, *, source: list[str] | None = None, target: list[str] | None = None) -> list[EdgeDef]:
    ends = source if source is not None else target or []
    key = "source_node_id" if source is not None else "target_node_id"
    return [
        edge.model_copy(update={key: end, "id": edge.id if i == 0 else f"{edge.id}__{i + 1}"})
        for i, end in enumerate(ends)
    ]
