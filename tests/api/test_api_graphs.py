"""/api/graphs over a real server: list, get, create, update, delete, versions, import, export,
fork, diff, merge; and their refusals (404, 403, 409, 422)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from api_helpers import ECHO, Api

from plait.evolve.fork import ForkError, fork_graph


def test_list_pages_and_filters_by_source_type(api: Api) -> None:
    everything = api.client.get("/api/graphs").json()
    slugs = [g["slug"] for g in everything["items"]]
    assert {"echo", "reviewed", "slow", "plait.video_chapters"} <= set(slugs)
    assert everything["total"] == len(slugs)
    page = api.client.get("/api/graphs", params={"offset": 1, "limit": 2}).json()
    assert [g["slug"] for g in page["items"]] == slugs[1:3]
    system = api.client.get("/api/graphs", params={"source_type": "system"}).json()
    assert sorted(g["slug"] for g in system["items"]) == [
        "plait.designer", "plait.kb_ingest", "plait.kb_search", "plait.memory_extract", "plait.video_chapters",
    ]  # fmt: skip
    bad = api.client.get("/api/graphs", params={"source_type": "mine"})
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid_request"


def test_get_returns_the_graph_with_its_schema_registry(api: Api) -> None:
    got = api.client.get("/api/graphs/echo").json()
    assert got["version"] == 1
    assert got["graph"]["schemas"][0]["id"] == "text"
    assert [n["id"] for n in got["graph"]["nodes"]] == ["draft", "polish"]
    assert api.client.get(f"/api/graphs/{got['id']}").json()["slug"] == "echo"  # by id too
    missing = api.client.get("/api/graphs/nope")
    assert missing.status_code == 404
    assert "no graph 'nope'" in missing.json()["error"]["message"]
    assert api.client.get("/api/graphs/echo", params={"version": 9}).status_code == 404


def test_create_refuses_a_taken_id_and_an_invalid_graph(api: Api) -> None:
    taken = api.client.post("/api/graphs", json={"source": ECHO})
    assert taken.status_code == 409
    assert taken.json()["error"]["hint"]
    broken = ECHO.replace("id: echo", "id: broken").replace("target: END", "target: nowhere")
    invalid = api.client.post("/api/graphs", json={"source": broken})
    assert invalid.status_code == 422
    body = invalid.json()["error"]
    assert body["code"] == "graph_invalid"
    assert any(d["code"] and d["line"] for d in body["details"])
    both = api.client.post("/api/graphs", json={"source": ECHO, "graph": {}})
    assert both.status_code == 422
    as_object = yaml.safe_load(ECHO.replace("id: echo", "id: echo_obj"))
    created = api.client.post("/api/graphs", json={"graph": as_object})
    assert created.status_code == 201
    assert created.json()["slug"] == "echo_obj"


def test_skill_nodes_are_refused_in_uploads(api: Api) -> None:
    graph = {"plait": 1, "id": "skilled", "nodes": [{"id": "s", "type": "SKILL", "skill": "../../etc/x.yaml"}]}
    refused = api.client.post("/api/graphs", json={"graph": graph})
    assert refused.status_code == 422
    assert refused.json()["error"]["details"][0]["code"] == "skill_in_upload"


def test_a_graph_file_named_inside_an_uploaded_body_is_refused_unread(api: Api, tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text(yaml.safe_dump({"plait": 1, "id": "marker_in_secret", "nodes": [
        {"id": "t", "type": "TRANSFORM", "transform_expr": "current"}]}))  # fmt: skip
    inner = {"nodes": [{"id": "inner", "type": "SUBGRAPH", "graph": str(secret)}], "edges": []}
    graph = {"plait": 1, "id": "reaching", "nodes": [{"id": "outer", "type": "LOOP", "while_expr": "false",
                                                      "body": inner}]}  # fmt: skip
    refused = api.client.post("/api/graphs", json={"graph": graph})
    assert refused.status_code == 422
    assert "file_in_content" in [d["code"] for d in refused.json()["error"]["details"]]
    assert "marker_in_secret" not in refused.text


def test_update_stores_a_new_version_and_versions_lists_them(api: Api) -> None:
    changed = ECHO.replace("system_prompt: Polish.", "system_prompt: Polish it.")
    updated = api.client.put("/api/graphs/echo", json={"source": changed})
    assert updated.status_code == 200, updated.text
    assert (updated.json()["version"], updated.json()["created"]) == (2, True)
    same = api.client.put("/api/graphs/echo", json={"source": changed}).json()
    assert (same["version"], same["created"]) == (2, False)
    versions = api.client.get("/api/graphs/echo/versions").json()
    assert [v["version"] for v in versions] == [1, 2]
    other = api.client.put("/api/graphs/reviewed", json={"source": changed})
    assert other.status_code == 422  # its id says echo
    assert api.client.put("/api/graphs/nope", json={"source": changed}).status_code == 404


def test_system_graphs_are_read_only(api: Api) -> None:
    deleted = api.client.delete("/api/graphs/plait.video_chapters")
    assert deleted.status_code == 403
    assert deleted.json()["error"]["code"] == "read_only"
    exported = api.client.get("/api/graphs/plait.video_chapters/export").text
    assert api.client.put("/api/graphs/plait.video_chapters", json={"source": exported}).status_code == 403


def test_delete_needs_force_when_the_graph_has_runs(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    refused = api.client.delete("/api/graphs/echo")
    assert refused.status_code == 409
    assert "force" in refused.json()["error"]["message"]
    gone = api.client.delete("/api/graphs/echo", params={"force": "true"}).json()
    assert (gone["deleted"], gone["runs_kept"]) == (True, 1)
    assert "echo" not in [g["slug"] for g in api.client.get("/api/graphs").json()["items"]]
    assert api.run(run_id)["status"] == "completed"  # its run stays readable
    graph_id = api.run(run_id)["graph_id"]
    assert api.client.get(f"/api/graphs/{graph_id}").status_code == 404
    pinned = api.client.get(f"/api/graphs/{graph_id}", params={"version": 1})
    assert pinned.status_code == 200  # the version its runs used
    again = api.client.post("/api/runs", json={"graph": graph_id, "input": {}})
    assert again.status_code == 404
    assert "was deleted" in again.json()["error"]["message"]


def test_export_then_import_round_trips(api: Api) -> None:
    as_yaml = api.client.get("/api/graphs/echo/export")
    assert as_yaml.headers["content-type"].startswith("application/yaml")
    as_json = api.client.get("/api/graphs/echo/export", params={"format": "json"}).json()
    assert yaml.safe_load(as_yaml.text) == as_json
    again = api.client.post("/api/graphs/import", json={"source": as_yaml.text})
    assert again.status_code == 200  # unchanged: no new version
    assert (again.json()["version"], again.json()["created"]) == (1, False)
    renamed = api.client.post(
        "/api/graphs/import", json={"source": json.dumps({**as_json, "id": "copy"}), "format": "json"}
    )
    assert renamed.status_code == 201
    assert renamed.json()["slug"] == "copy"


def test_fork_diff_and_merge(api: Api) -> None:
    forked = api.client.post("/api/graphs/echo/fork", json={"name": "my_echo"})
    assert forked.status_code == 201
    assert api.client.post("/api/graphs/echo/fork", json={"name": "my_echo"}).status_code == 409
    assert api.client.post("/api/graphs/nope/fork").status_code == 404
    parent_now = ECHO.replace("system_prompt: Draft.", "system_prompt: Draft well.")
    assert api.client.put("/api/graphs/echo", json={"source": parent_now}).json()["version"] == 2
    listed = {g["slug"]: g for g in api.client.get("/api/graphs").json()["items"]}
    assert listed["my_echo"]["parent_updated"] is True
    assert api.client.get("/api/graphs/my_echo").json()["parent_updated"] is True  # one graph, same flag
    assert api.client.get("/api/graphs/echo").json()["parent_updated"] is False  # not a fork
    diff = api.client.get("/api/graphs/my_echo/diff").json()
    assert (diff["parent_at_fork"], diff["parent_now"], diff["parent_moved"]) == (1, 2, True)
    assert [i["key"] for i in diff["items"] if i["parent"] == "changed"] == ["draft"]
    assert api.client.get("/api/graphs/echo/diff").status_code == 422  # not a fork
    assert api.client.get("/api/graphs/my_echo/diff", params={"against": "x"}).status_code == 422
    unknown = api.client.post("/api/graphs/my_echo/merge", json={"from_parent": ["nope"]})
    assert unknown.status_code == 404
    merged = api.client.post("/api/graphs/my_echo/merge", json={"from_parent": ["draft"]})
    assert merged.status_code == 200, merged.text
    assert merged.json()["version"] == 2
    fork_now = api.client.get("/api/graphs/my_echo").json()["graph"]
    assert fork_now["nodes"][0]["system_prompt"] == "Draft well."
    assert api.client.post("/api/graphs/my_echo/merge", json={"refork": True}).status_code == 422  # no confirm
    reforked = api.client.post("/api/graphs/my_echo/merge", json={"refork": True, "confirm": True})
    assert reforked.status_code == 200


def test_a_deleted_graph_cannot_be_changed_by_its_slug_nor_brought_back_by_it(api: Api) -> None:
    # Merging into a deleted fork used to store a new live graph under its slug, so the graph and
    # its evaluation sets answered again after the delete.
    assert api.client.post("/api/graphs/echo/fork", json={"name": "gone_echo"}).status_code == 201
    assert api.client.delete("/api/graphs/gone_echo").json()["deleted"] is True
    attempts = {
        "refork": api.client.post("/api/graphs/gone_echo/merge", json={"refork": True, "confirm": True}),
        "merge": api.client.post("/api/graphs/gone_echo/merge", json={"from_parent": ["draft"]}),
        "diff": api.client.get("/api/graphs/gone_echo/diff"),
        "fork": api.client.post("/api/graphs/gone_echo/fork", json={"name": "from_gone"}),
        "update": api.client.put("/api/graphs/gone_echo", json={"source": ECHO.replace("id: echo", "id: gone_echo")}),
        "eval sets": api.client.get("/api/graphs/gone_echo/eval-sets"),
        "delete again": api.client.delete("/api/graphs/gone_echo"),
    }
    assert {what: r.status_code for what, r in attempts.items()} == dict.fromkeys(attempts, 404)
    assert "was deleted" in attempts["refork"].json()["error"]["message"]
    assert api.client.get("/api/graphs/gone_echo").status_code == 404
    assert "gone_echo" not in [g["slug"] for g in api.client.get("/api/graphs").json()["items"]]
    again = api.client.post("/api/graphs/import", json={"source": ECHO.replace("id: echo", "id: gone_echo")})
    assert again.status_code == 201  # storing it again on purpose is how it comes back


def test_bodies_are_one_of_their_documented_shapes(api: Api) -> None:
    """Regressions found by test_openapi_fuzz.py: the document said `{}` was a valid graph body
    (both fields optional) and a fork could be named with a space, which broke the graph list."""
    for path in ("/api/graphs", "/api/graphs/import"):
        empty = api.client.post(path, json={})
        assert empty.status_code == 422
        assert "either as `source`" in empty.json()["error"]["details"][0]["problem"]
    assert api.client.post("/api/graphs", json={"graph": {}, "format": "json"}).status_code == 422
    assert api.client.post("/api/graphs/echo/merge", json={}).status_code == 422
    for name in (" ", "a b", "-x", "x" * 129):
        refused = api.client.post("/api/graphs/echo/fork", json={"name": name})
        assert refused.status_code == 422, name
    assert api.client.get("/api/graphs").status_code == 200
    with pytest.raises(ForkError, match="cannot be a graph id"):
        fork_graph(api.store, "echo", "a b")  # the CLI's path refuses it too
