"""`plait graphs versions | import | export | delete | fork | diff | merge` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from plait.evolve.system import SYSTEM_DIR
from tests.cli.test_run_cli import EXAMPLES, example_args, plait


def as_json(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_import_export_round_trip_and_versions(tmp_path: Path) -> None:
    imported = as_json(plait("graphs", "import", str(EXAMPLES / "blog_writer.yaml"), "--json", cwd=tmp_path))
    assert (imported["slug"], imported["version"], imported["created"]) == ("blog_writer", 1, True)
    exported = tmp_path / "blog.yaml"
    assert plait("graphs", "export", "blog_writer", "-o", str(exported), cwd=tmp_path).returncode == 0
    again = as_json(plait("graphs", "import", str(exported), "--json", cwd=tmp_path))
    assert (again["version"], again["created"]) == (1, False)  # the same def: no new version

    data = yaml.safe_load(exported.read_text())
    data["description"] = "edited"
    exported.write_text(yaml.safe_dump(data, sort_keys=False))
    assert as_json(plait("graphs", "import", str(exported), "--json", cwd=tmp_path))["version"] == 2
    versions = as_json(plait("graphs", "versions", "blog_writer", "--json", cwd=tmp_path))
    assert [v["version"] for v in versions] == [1, 2]
    first = yaml.safe_load(plait("graphs", "export", "blog_writer", "--version", "1", cwd=tmp_path).stdout)
    assert first.get("description") != "edited"  # old versions stay readable

    broken = tmp_path / "broken.yaml"
    broken.write_text("plait: 1\nid: broken\nnodes: [{id: a, type: LLM}]\n")
    refused = plait("graphs", "import", str(broken), cwd=tmp_path)
    assert refused.returncode == 2
    assert "nothing stored" in refused.stderr
    assert "broken" not in [g["slug"] for g in as_json(plait("graphs", "list", "--json", cwd=tmp_path))]


def test_delete_rules(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    refused = plait("graphs", "delete", "feedback_triage", cwd=tmp_path)
    assert refused.returncode == 2
    assert "has 1 runs" in refused.stderr
    system = plait("graphs", "delete", "plait.video_chapters", cwd=tmp_path)
    assert system.returncode == 2
    assert "cannot be deleted" in system.stderr
    deleted = as_json(plait("graphs", "delete", "feedback_triage", "--force", "--json", cwd=tmp_path))
    assert deleted["runs_kept"] == 1
    assert "feedback_triage" not in [g["slug"] for g in as_json(plait("graphs", "list", "--json", cwd=tmp_path))]
    (run,) = as_json(plait("runs", "list", "--json", cwd=tmp_path))
    shown = as_json(plait("runs", "show", run["id"], "--json", cwd=tmp_path))
    assert shown["status"] == "completed"  # the run and its pinned version stay readable
    again = plait("run", run["graph_id"], "-i", "feedback=x", cwd=tmp_path)
    assert again.returncode == 2
    assert "was deleted; its runs stay readable, but no new run starts" in again.stderr
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0  # the file stores it anew


def test_fork_a_system_graph_diff_and_merge(tmp_path: Path) -> None:
    fork = as_json(plait("graphs", "fork", "plait.video_chapters", "--name", "my_video", "--json", cwd=tmp_path))
    assert (fork["slug"], fork["version"]) == ("my_video", 1)
    listed = {g["slug"]: g for g in as_json(plait("graphs", "list", "--json", cwd=tmp_path))}
    assert listed["my_video"]["source_type"] == "system_fork"
    assert listed["my_video"]["parent_updated"] is False
    system = as_json(plait("graphs", "list", "--source-type", "system", "--json", cwd=tmp_path))
    assert sorted(g["slug"] for g in system) == sorted(f"plait.{p.stem}" for p in SYSTEM_DIR.glob("*.yaml"))

    exported = tmp_path / "mine.yaml"
    exported.write_text(plait("graphs", "export", "my_video", cwd=tmp_path).stdout)
    data = yaml.safe_load(exported.read_text())
    data["nodes"][1]["system_prompt"] = "You split transcripts into at most four chapters."
    exported.write_text(yaml.safe_dump(data, sort_keys=False))
    assert plait("graphs", "import", str(exported), cwd=tmp_path).returncode == 0
    diff = as_json(plait("graphs", "diff", "my_video", "--json", cwd=tmp_path))
    assert diff["parent_moved"] is False
    (item,) = diff["items"]
    assert (item["key"], item["parent"], item["fork"]) == ("chapter_split", "same", "changed")
    assert [f["name"] for f in item["fields"]] == ["system_prompt"]
    text = plait("graphs", "diff", "my_video", cwd=tmp_path)
    assert "parent unchanged" in text.stdout
    assert "at most four chapters" in text.stdout

    untouched = plait("graphs", "merge", "my_video", "--from-parent", "transcribe", cwd=tmp_path)
    assert untouched.returncode == 2
    assert "the parent did not change transcribe between version 1 (forked) and version 1 (now)" in untouched.stderr
    assert "nothing named" not in untouched.stderr
    ghost = plait("graphs", "merge", "my_video", "--from-parent", "ghost", cwd=tmp_path)
    assert "nothing named ghost in the fork or its parent" in ghost.stderr

    not_fork = plait("graphs", "diff", "plait.video_chapters", cwd=tmp_path)
    assert not_fork.returncode == 2
    assert "is not a fork" in not_fork.stderr
    unconfirmed = plait("graphs", "merge", "my_video", "--refork", cwd=tmp_path)
    assert unconfirmed.returncode == 2
    assert "--confirm" in unconfirmed.stderr
    reforked = as_json(plait("graphs", "merge", "my_video", "--refork", "--confirm", "--json", cwd=tmp_path))
    assert reforked["version"] == 3
    assert as_json(plait("graphs", "diff", "my_video", "--json", cwd=tmp_path))["items"] == []


def test_import_classifies_schema_changes_and_bumps_versions(tmp_path: Path) -> None:
    source = tmp_path / "g.yaml"
    data = yaml.safe_load((EXAMPLES / "feedback_triage.yaml").read_text())
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    first = as_json(plait("graphs", "import", str(source), "--json", cwd=tmp_path))
    entry = next(e for e in data["schemas"] if e["id"] == "bug_report")
    old_version = entry.get("version", "1.0.0")
    narrowed = "severity"  # no node reads it (changing a field a node reads may make the graph invalid)
    entry["schema"]["properties"][narrowed]["enum"] = ["low", "high"]  # stored "medium" no longer validates
    entry["breaking_change"] = False
    source.write_text(yaml.safe_dump(data, sort_keys=False))

    done = plait("graphs", "import", str(source), "--json", cwd=tmp_path)
    second = as_json(done)
    (changed,) = [c for c in second["schema_changes"] if c["schema_id"] == entry["id"]]
    assert (changed["level"], changed["from"]) == ("major", old_version)
    assert changed["to"].split(".")[0] == str(int(old_version.split(".")[0]) + 1)
    assert any(narrowed in f for f in changed["findings"])
    assert second["version"] == first["version"] + 1
    assert second["schema_version"].split(".")[0] == str(int(first["schema_version"].split(".")[0]) + 1)
    assert any("breaking_change" in w for w in second["warnings"])
    assert "warning:" in done.stderr


def test_a_forks_diff_shows_a_changed_schema_as_its_changed_values(tmp_path: Path) -> None:
    plait("graphs", "fork", "plait.video_chapters", "--name", "my_video", cwd=tmp_path)
    exported = tmp_path / "mine.yaml"
    exported.write_text(plait("graphs", "export", "my_video", cwd=tmp_path).stdout)
    data = yaml.safe_load(exported.read_text())
    clips = next(s for s in data["schemas"] if s["id"] == "clip_points")["schema"]["properties"]["clips"]
    clips["maxItems"] = 3
    clips["items"]["properties"]["reason"]["description"] = "why"
    exported.write_text(yaml.safe_dump(data, sort_keys=False))
    assert plait("graphs", "import", str(exported), cwd=tmp_path).returncode == 0

    diff = as_json(plait("graphs", "diff", "my_video", "--json", cwd=tmp_path))
    (item,) = [i for i in diff["items"] if i["key"] == "schema:clip_points"]
    changes = [c for f in item["fields"] for c in f["changes"]]
    assert {"path": "properties.clips.maxItems", "base": 5, "parent": 5, "fork": 3} in changes
    described = {"path": "properties.clips.items.properties.reason.description", "fork": "why"}
    assert described in changes  # absent at fork and in the parent: those sides are left out

    text = plait("graphs", "diff", "my_video", cwd=tmp_path).stdout
    assert "properties.clips.maxItems: at fork 5 | parent 5 | fork 3" in text
    assert "reason.description: at fork (absent) | parent (absent) | fork 'why'" in text


def test_a_forks_file_without_its_parent_fields_keeps_the_fork_a_fork(tmp_path: Path) -> None:
    plait("graphs", "fork", "plait.video_chapters", "--name", "my_video", cwd=tmp_path)
    data = yaml.safe_load(plait("graphs", "export", "my_video", cwd=tmp_path).stdout)
    for field in ("parent_def_id", "parent_def_ver_at_fork", "parent_schema_ver_at_fork"):
        del data[field]  # as a file written by hand says nothing of a parent
    data["nodes"][1]["system_prompt"] = "Split into at most three chapters."
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert plait("graphs", "import", "mine.yaml", cwd=tmp_path).returncode == 0

    diff = as_json(plait("graphs", "diff", "my_video", "--json", cwd=tmp_path))
    assert diff["fork_version"] == 2
    (item,) = diff["items"]
    assert (item["key"], item["fork"]) == ("chapter_split", "changed")
    listed = {g["slug"]: g for g in as_json(plait("graphs", "list", "--json", cwd=tmp_path))}
    assert listed["my_video"]["parent_id"] is not None


def test_drafts_left_in_the_workbench_are_listed_shown_and_discarded(tmp_path: Path) -> None:
    from plait import Client

    (tmp_path / ".plait").mkdir()  # the folder's own store, which the client opens too
    half = {"id": "half", "name": "Half built", "nodes": [], "edges": []}
    with Client(db=str(tmp_path / ".plait" / "plait.db")) as client:
        client.store.drafts.keep("half", half, None)
        assert [d.slug for d in client.drafts()] == ["half"]
        assert [e.message for e in client.draft("half").check.errors] == ["the graph has no nodes"]

    listed = plait("graphs", "drafts", cwd=tmp_path)
    assert "Half built" in listed.stdout
    assert "new graph" in listed.stdout
    shown = plait("graphs", "drafts", "half", cwd=tmp_path)
    assert yaml.safe_load(shown.stdout) == half  # the YAML a file would hold
    assert "<graph>: error planning/" in shown.stderr  # as validate says it
    assert "the graph has no nodes" in shown.stderr
    assert as_json(plait("graphs", "drafts", "--json", cwd=tmp_path))[0]["slug"] == "half"

    assert plait("graphs", "drafts", "half", "--discard", cwd=tmp_path).returncode == 0
    gone = plait("graphs", "drafts", "half", cwd=tmp_path)
    assert gone.returncode == 2
    assert "graph 'half' has no draft" in gone.stderr
    assert "no drafts in the store" in plait("graphs", "drafts", cwd=tmp_path).stderr
