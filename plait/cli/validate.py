"""`plait validate`: compile one file or every graph file of a folder and report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from plait.compile import CompileResult, compile_file
from plait.compile.context import VersionsFor
from plait.compile.diagnostics import Category, Diagnostic, Severity
from plait.model.graph import GraphDef

GRAPH_SUFFIXES = (".yaml", ".yml", ".json")


def graph_files(target: Path) -> list[Path]:
    """The graph files a target names: itself, or the graph files directly inside a folder."""
    if target.is_dir():
        return sorted(p for p in target.iterdir() if p.is_file() and p.suffix.lower() in GRAPH_SUFFIXES)
    return [target]


def run_validate(target: Path, json_output: bool, db: str | None = None) -> int:
    """Compile `target` (a graph file, or every graph file in a folder) and print the diagnostics,
    as text or JSON; the exit code: 0 when every file is valid, else 2. Prompt-script templates
    a graph names must be system templates or stored in `db`."""
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
        versions = _stored_versions(db)
        from plait.evolve.skill_lookup import skill_source_at

        skills = skill_source_at(db)
        results = [compile_file(path, versions=versions, skills=skills) for path in files]
        for result in results:
            result.warnings.extend(unknown_templates(result, db))
    if json_output:
        _print_json(results)
    else:
        _print_text(results)
    return 0 if all(r.valid for r in results) else 2


def unknown_templates(result: CompileResult, db: str | None) -> list[Diagnostic]:
    """A warning for each `prompt_script` template id the graph names that is neither shipped with
    Plait nor stored in `db` (the store is opened only when a graph names one). Not an error: the
    graph is valid, and the template may be stored where it will run; a run there fails the node
    if it is not."""
    graph = result.expanded or result.graph
    named = [
        (node.id, script)
        for node in (graph.nodes if graph is not None else [])
        if isinstance(script := getattr(node, "prompt_script", None), str)
    ]
    if not named:
        return []
    known = _known_templates(db)
    return [
        Diagnostic(
            Category.CONFIG,
            "unknown_template",
            f"prompt_script names the template '{template_id}', which is not a system template nor stored in "
            "the database",
            node_id=node_id,
            file=result.file,
            hint="store it with `plait templates create ID --file F` (--db names the database), or write the "
            "script inline: prompt_script: {language: js, code: ...}",
            severity=Severity.WARNING,
        )
        for node_id, template_id in named
        if template_id not in known
    ]


def _stored_versions(db: str | None) -> VersionsFor:
    """The schema versions a graph would be stored at in `db`, for its migrations to be checked
    against, as `plait graphs import` checks them: the store gives a schema its version, and a
    file's `version` is a floor. Asked only when a migration targets a major above its entry's
    written one; a database that does not exist or cannot be read stores nothing: the file's
    versions hold."""

    def versions(graph: GraphDef) -> dict[str, str]:
        from sqlalchemy.exc import SQLAlchemyError

        from plait.evolve.save import versions_on_save
        from plait.store import Store, StoreError, database_url

        url = database_url(db)
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
            return {}
        try:
            with Store(url, migrate=False) as store:
                return versions_on_save(store)(graph)
        except (StoreError, SQLAlchemyError):
            return {}

    return versions


def _known_templates(db: str | None) -> set[str]:
    """The ids of the system templates, and of those stored in `db` when it can be read (an
    SQLite file that does not exist is not created: nothing is stored there)."""
    import yaml

    from plait.evolve.system import TEMPLATES_DIR
    from plait.store import Store, database_url

    known = {str(yaml.safe_load(f.read_text(encoding="utf-8"))["id"]) for f in TEMPLATES_DIR.glob("*.yaml")}
    url = database_url(db)
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        return known
    try:
        with Store(url, migrate=False) as store:
            known |= {t.id for t in store.templates.list()}
    except Exception:  # unreachable, or from before templates were stored: only the system ones are known
        pass
    return known


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
