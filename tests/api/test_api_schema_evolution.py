"""A graph saved over HTTP with a breaking schema change, after it has runs: the preview and the
save say how many stored outputs the change leaves behind and which migration to write, and
the run read routes still answer, with each such output as stored and a notice on it."""

from __future__ import annotations

from typing import Any

import yaml
from api_helpers import ECHO, Api

MIGRATION = {"schema_id": "text", "from_version": "1.x.x", "to_version": "2.0.0"}


def _echo(**extra: Any) -> dict[str, Any]:
    """The `echo` graph with its `text` schema limited to 5 characters ("drafted" and "polished"
    are longer), and `extra` top-level fields."""
    graph = yaml.safe_load(ECHO)
    graph["schemas"][0]["schema"]["properties"]["text"]["maxLength"] = 5
    return dict(graph) | extra


def test_runs_stay_readable_after_a_breaking_save_and_the_save_says_what_to_write(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")

    preview = api.client.post("/api/graphs/echo/preview", json={"graph": _echo()})
    assert preview.status_code == 200, preview.text
    left = (
        "schema 'text' 2.0.0: 2 stored outputs (1 run of this graph) no longer validate under 2.0.0, and no "
        "migration brings them forward"
    )
    assert any(w.startswith(left) for w in preview.json()["warnings"]), preview.json()["warnings"]
    saved = api.client.put("/api/graphs/echo", json={"graph": _echo()})
    assert saved.status_code == 200, saved.text
    [warning] = [w for w in saved.json()["warnings"] if w.startswith(left)]
    assert "one with schema_id text, from_version 1.x.x, to_version 2.0.0" in warning

    detail = api.client.get(f"/api/runs/{run_id}")
    assert detail.status_code == 200, detail.text
    nodes = {n["node_id"]: n for n in detail.json()["nodes"]}
    assert nodes["draft"]["effective_output"]["text"] == "drafted"  # as stored
    notice = nodes["draft"]["outdated"]
    assert (notice["schema_id"], notice["stored_version"], notice["current_version"]) == ("text", "1.0.0", "2.0.0")
    assert notice["migration"] == MIGRATION
    assert notice["reason"] == "no_migration"

    seed = api.client.get("/PromptGraphRunGetRoute", params={"id": run_id})
    assert seed.status_code == 200, seed.text
    polish = next(n for n in seed.json()["node_runs"] if n["node_def_id"] == "polish")
    assert polish["outdated"]["migration"] == MIGRATION

    # the migration, written against the version the save reported, brings them forward
    migration = MIGRATION | {"migrate_expr": "old => ({text: old.text.slice(0, 5)})"}
    fixed = api.client.put("/api/graphs/echo", json={"graph": _echo(migrations=[migration])})
    assert fixed.status_code == 200, fixed.text
    nodes = api.newest(run_id)
    assert nodes["draft"]["effective_output"]["text"] == "draft"
    assert (nodes["draft"]["outdated"], nodes["draft"]["migrated"]) == (None, "text 1.0.0 → 2.0.0")
