"""A graph's schema changes after it has runs, as its author changes it: `plait run FILE`,
`plait graphs import FILE` and `plait runs show RUN` as real processes on a real SQLite file.
Old runs stay readable (their outputs as stored, with a notice naming the migration to write),
the import says how many stored outputs its change leaves behind, and a migration written
against the schema version the import reported is accepted while the file still says less."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.cli.test_run_cli import plait

TITLE = "A headline long enough to break a limit of fifty ch"  # 51 characters


def write_graph(
    folder: Path, *, max_length: int = 60, field: str = "title", migrations: list[dict[str, str]] | None = None
) -> Path:
    """The author's file: one model call whose answer the `headline` schema types."""
    graph: dict[str, Any] = {
        "plait": 1,
        "id": "headline",
        "schemas": [
            {
                "id": "headline",
                "schema": {
                    "type": "object",
                    "properties": {field: {"type": "string", "maxLength": max_length}},
                    "required": [field],
                },
            }
        ],
        "nodes": [{"id": "write", "type": "LLM_CALL", "user_prompt_tpl": "A headline about {{ input.topic }}"}],
        "edges": [{"source": "write", "target": "END", "schema_id": "headline"}],
    }
    if migrations is not None:
        graph["migrations"] = migrations
    path = folder / "headline.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False), encoding="utf-8")
    return path


def run_once(folder: Path) -> str:
    """One run of the file as it is now (the scripted model answers TITLE); its id."""
    script = folder / "script.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"node": "write", "output": {"title": TITLE}}]}))
    done = plait("run", str(folder / "headline.yaml"), "-i", "topic=x", "--llm", f"scripted:{script}", cwd=folder)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(plait("runs", "list", "--json", cwd=folder).stdout)
    return str(run["id"])


def shown_write(run_id: str, folder: Path) -> dict[str, Any]:
    done = plait("runs", "show", run_id, "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    return dict(node)


def test_a_tightened_schema_leaves_old_runs_readable_and_the_import_counts_what_it_left_behind(
    tmp_path: Path,
) -> None:
    graph = write_graph(tmp_path, max_length=60)
    run_id = run_once(tmp_path)

    write_graph(tmp_path, max_length=50)
    imported = plait("graphs", "import", str(graph), cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "schema 'headline' changed (major) 1.0.0 → 2.0.0" in imported.stderr  # the warning it printed before
    assert (
        "warning: schema 'headline' 2.0.0: 1 stored output (1 run of this graph) no longer validates under 2.0.0, "
        "and no migration brings it forward" in imported.stderr
    )
    assert "add to the graph's `migrations` one with schema_id headline, from_version 1.x.x, to_version 2.0.0" in (
        imported.stderr
    )

    table = plait("runs", "show", run_id, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "outdated: write: stored at schema 'headline' 1.0.0, which predates the graph's 2.0.0" in table.stdout
    assert "schema_id headline, from_version 1.x.x, to_version 2.0.0" in table.stdout
    assert f"plait runs show {run_id} --raw" in table.stdout

    node = shown_write(run_id, tmp_path)
    assert node["effective_output"] == {"title": TITLE, "_schema_id": "headline", "_schema_version": "1.0.0"}
    notice = node["outdated"]
    assert (notice["schema_id"], notice["stored_version"], notice["current_version"], notice["reason"]) == (
        "headline",
        "1.0.0",
        "2.0.0",
        "no_migration",
    )
    assert notice["migration"] == {"schema_id": "headline", "from_version": "1.x.x", "to_version": "2.0.0"}
    assert run_id in notice["message"]

    again = plait("graphs", "import", str(graph), "--json", cwd=tmp_path)  # unchanged: nothing new to report
    assert json.loads(again.stdout)["left_behind"] == []


def test_a_migration_written_against_the_version_the_import_reported_is_accepted(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, field="title")
    run_id = run_once(tmp_path)

    write_graph(tmp_path, field="headline")  # a rename in the author's own graph; the file keeps no version
    renamed = plait("graphs", "import", str(graph), "--json", cwd=tmp_path)
    assert renamed.returncode == 0, renamed.stderr
    assert f"note: schema 'headline' is stored as 2.0.0 while {graph} says 1.0.0" in renamed.stderr
    facts = json.loads(renamed.stdout)
    [change] = facts["schema_changes"]
    assert (change["from"], change["to"], change["declared"]) == ("1.0.0", "2.0.0", "1.0.0")
    [behind] = facts["left_behind"]
    assert (behind["outputs"], behind["invalid"], behind["runs"]) == (1, 1, 1)
    assert node_notice(run_id, tmp_path)["migration"]["to_version"] == "2.0.0"

    # a migration that throws: the output is still shown as stored, saying which migration to fix
    migration = {"schema_id": "headline", "from_version": "1.x.x", "to_version": "2.0.0"}
    write_graph(tmp_path, field="headline", migrations=[migration | {"migrate_expr": "old => { throw Error('no') }"}])
    assert plait("graphs", "import", str(graph), cwd=tmp_path).returncode == 0
    table = plait("runs", "show", run_id, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "outdated: write:" in table.stdout
    assert "why: migration of schema 'headline' from 1.0.0 to 2.0.0" in table.stdout
    assert node_notice(run_id, tmp_path)["reason"] == "migration_failed"

    # the same migration, fixed, against 2.0.0 (the version the import reported; the file still says 1.0.0)
    write_graph(tmp_path, field="headline", migrations=[migration | {"migrate_expr": "old => ({headline: old.title})"}])
    checked = plait("validate", str(graph), cwd=tmp_path)  # the database here is the one imported into
    assert checked.returncode == 0, checked.stderr
    accepted = plait("graphs", "import", str(graph), cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    node = shown_write(run_id, tmp_path)
    assert node["effective_output"] == {"headline": TITLE, "_schema_id": "headline", "_schema_version": "2.0.0"}
    assert node["migrated"] == "headline 1.0.0 → 2.0.0"
    assert "outdated" not in node

    # past the version the store gave the schema is still a mistake, and the error says the limit
    beyond = migration | {"to_version": "3.0.0", "migrate_expr": "old => ({headline: old.title})"}
    write_graph(tmp_path, field="headline", migrations=[beyond])
    refused = plait("graphs", "import", str(graph), cwd=tmp_path)
    assert refused.returncode == 2
    assert "migration targets headline 3.0.0, newer than 2.0.0, the version the schema is stored at" in refused.stderr


def node_notice(run_id: str, folder: Path) -> dict[str, Any]:
    return dict(shown_write(run_id, folder)["outdated"])
