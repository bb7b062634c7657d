"""SKILL expansion: inline a skill graph's nodes under the namespace `__{skill_node}__`.

A skill is a graph file (a path: relative to the graph file) or a stored skill (`name` or
`name@N`, looked up through the `SkillSource` the caller passes: the compiler cannot read the
store). It is compiled on its own first (its errors point into its own file); only a valid
skill is inlined. A stored skill's parameters check the SKILL node's `inputs`, and its inlined
nodes record the version expanded (`SkillScope.skill`), so a stored graph keeps meaning what it
meant when a newer version of the skill is stored. In-edges of the SKILL node are rewired
to the skill's entry nodes and its out-edges leave from the skill's exits.
Inner nodes keep their templates unchanged: their `skill_scope` records how the
renderer must read `input` (the SKILL node's `inputs`) and the inner ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.skill_params import (
    STORED_PREFIX,
    SkillSource,
    StoredSkill,
    check_inputs,
    is_skill_file,
    scope_inputs,
    skill_ref,
)
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
CompileStoredFn = Callable[[StoredSkill, tuple[str, ...]], "CompileResult"]
NO_SOURCE_HINT = (
    "stored skills come from the store: store it with `plait skills add FILE` and compile through a "
    "command that opens the store (`plait graphs import`, `plait run`), or name a skill file (a path ending in .yaml)"
)


@dataclass(frozen=True)
class SkillLookup:
    """Where stored skills come from, and how one is compiled (None: no store at hand)."""

    source: SkillSource
    compile: CompileStoredFn


def expand_skills(
    graph: GraphDef,
    file: str | None,
    chain: tuple[str, ...],
    compile_file: CompileFn,
    line_of: Callable[[str], int | None],
    stored: SkillLookup | None = None,
    folder: Path | None = None,
) -> Expansion:
    """`graph` with each SKILL node replaced by its skill's nodes: a skill file (paths relative
    to `folder`; None: no file is read) or a stored skill (`stored`). Each skill is
    compiled first and only a valid one is inlined; a missing, invalid, self-including or too
    deeply nested skill is an error in the result, and its own errors follow it. Never raises
    for a bad skill."""
    result = Expansion(graph)
    skills = [n for n in graph.nodes if isinstance(n, SkillNode)]
    if not skills:
        return result
    base_dir = folder
    for node in skills:
        where = _Site(node, file, chain, line_of(node.id), result)
        if skill_ref(node.skill) is not None:
            _expand_stored(where, stored)
        elif not is_skill_file(node.skill):
            where.fail(
                Category.CONFIG,
                "unknown_skill",
                f"'{node.skill}' is neither a skill file nor a stored skill's name",
                "name a skill file (a path ending in .yaml or .yml) or a stored skill: `name` or `name@VERSION`, "
                "a name being letters, digits, '_' and '-'",
            )
        else:
            _expand_one(where, base_dir, compile_file)
    return result


@dataclass(frozen=True)
class _Site:
    """One SKILL node being expanded, and where its errors go."""

    node: SkillNode
    file: str | None
    chain: tuple[str, ...]
    line: int | None
    result: Expansion

    def fail(self, category: Category, code: str, message: str, hint: str) -> None:
        self.result.errors.append(
            Diagnostic(category, code, message, node_id=self.node.id, file=self.file, line=self.line, hint=hint)
        )

    def trail(self, key: str) -> str:
        return " → ".join(_shown(p) for p in (*self.chain, key))

    def too_deep(self, key: str) -> bool:
        if len(self.chain) <= MAX_SKILL_DEPTH:
            return False
        self.fail(
            Category.PLANNING,
            "skill_recursion",
            f"skills nest deeper than {MAX_SKILL_DEPTH} levels: {self.trail(key)}",
            f"flatten the skills; at most {MAX_SKILL_DEPTH} levels of SKILL inside SKILL",
        )
        return True

    def sub_failed(self, sub: CompileResult, what: str, fix: str) -> bool:
        """Report a skill that did not compile (with its own errors after); True when it did not."""
        self.result.warnings.extend(sub.warnings)
        if sub.valid and sub.expanded is not None:
            return False
        if any(d.code == "skill_recursion" for d in sub.errors):
            self.fail(
                Category.PLANNING,
                "skill_recursion",
                f"{what} nests skills too deeply or includes itself (see the errors that follow)",
                f"at most {MAX_SKILL_DEPTH} levels of SKILL inside SKILL",
            )
        else:
            count = f"{len(sub.errors)} error{'s' if len(sub.errors) != 1 else ''}"
            self.fail(Category.CONFIG, "invalid_skill", f"{what} is not valid ({count})", fix)
        self.result.errors.extend(sub.errors)  # after the SKILL node's own error: "see the errors that follow"
        return True


def _shown(entry: str) -> str:
    return entry[len(STORED_PREFIX) :] if entry.startswith(STORED_PREFIX) else Path(entry).name


def _expand_stored(site: _Site, stored: SkillLookup | None) -> None:
    """Inline the stored skill `name[@N]` the node names (the newest version when none is given)."""
    name, version = skill_ref(site.node.skill) or ("", None)
    if stored is None:
        site.fail(
            Category.CONFIG,
            "unknown_skill",
            f"'{site.node.skill}' names a stored skill, and no store is at hand to read it from",
            NO_SOURCE_HINT,
        )
        return
    skill = stored.source(name, version)
    if skill is None:
        which = f"version {version} of the stored skill '{name}'" if version else f"stored skill '{name}'"
        site.fail(
            Category.CONFIG,
            "unknown_skill",
            f"there is no {which}",
            "`plait skills list` shows the stored skills and `plait skills show NAME` their versions",
        )
        return
    key = f"{STORED_PREFIX}{skill.ref}"
    if any(entry.startswith(f"{STORED_PREFIX}{name}@") for entry in site.chain):  # any version: a@2 in a@1 loops too
        site.fail(
            Category.PLANNING,
            "skill_recursion",
            f"skill includes itself: {site.trail(key)}",
            "a skill cannot contain itself, directly or through other skills",
        )
        return
    if site.too_deep(key):
        return
    problems = check_inputs(site.node.inputs, skill)
    for problem in problems:
        site.fail(Category.CONFIG, problem.code, problem.message, problem.hint)
    if problems:
        return
    sub = stored.compile(skill, (*site.chain, key))
    if site.sub_failed(
        sub, f"stored skill '{skill.ref}'", f"store a fixed version (`plait skills update {name} FILE`)"
    ):
        return
    assert sub.expanded is not None
    _inline(site.result, site.node, sub.expanded, scope_inputs(site.node.inputs, skill), skill.ref)


def _expand_one(site: _Site, base_dir: Path | None, compile_file: CompileFn) -> None:
    node, chain, fail = site.node, site.chain, site.fail
    if chain and chain[-1].startswith(STORED_PREFIX):
        fail(
            Category.CONFIG,
            "skill_file_in_stored_skill",
            f"a stored skill cannot name the skill file '{node.skill}'",
            "store that skill too (`plait skills add FILE`) and name it, or inline its nodes",
        )
        return
    if base_dir is None:
        fail(
            Category.CONFIG,
            "skill_in_upload",
            f"this SKILL names the skill file '{node.skill}', and a graph sent as content reads no files",
            "store the skill (`plait skills add FILE`) and name it: `skill: NAME`, or import the graph file "
            "with `plait graphs import FILE` on the machine that has it (it inlines the skills)",
        )
        return
    path = (base_dir / node.skill).resolve()
    if not path.is_file():
        fail(
            Category.CONFIG,
            "unknown_skill",
            f"skill file '{node.skill}' does not exist",
            "skill paths are relative to the graph file",
        )
        return
    if str(path) in chain:
        fail(
            Category.PLANNING,
            "skill_recursion",
            f"skill includes itself: {site.trail(str(path))}",
            "a skill cannot contain itself, directly or through other skills",
        )
        return
    if site.too_deep(str(path)):
        return
    sub = compile_file(path, (*chain, str(path)))
    if site.sub_failed(sub, f"skill '{node.skill}'", "fix the errors reported in the skill file"):
        return
    assert sub.expanded is not None
    _inline(site.result, node, sub.expanded, dict(node.inputs), None)


def _inline(result: Expansion, node: SkillNode, skill: GraphDef, inputs: dict[str, Any], ref: str | None) -> None:
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
                else SkillScope(skill_node_id=node.id, prefix=prefix, inputs=inputs, skill=ref)
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
