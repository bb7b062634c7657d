"""A graph's edits kept as a draft on the server before they are a version: an invalid graph (a new
one with no nodes, a stored one mid-edit) is kept as written and says what is still wrong; the
draft of a stored graph names the version it started from, a new graph's names none; system graphs
have none; storing the graph goes through every check, and deleting a graph drops its draft."""

from __future__ import annotations

from api_helpers import Api

NEW = {"id": "triage", "name": "Triage", "nodes": [], "edges": []}


def test_a_new_graph_with_no_nodes_is_kept_as_written_and_says_what_is_wrong(api: Api) -> None:
    kept = api.client.put("/api/drafts/triage", json={"graph": NEW})
    assert kept.status_code == 200, kept.text
    body = kept.json()
    assert body["graph"] == NEW
    assert body["base_version"] is None
    assert body["latest_version"] is None
    assert body["valid"] is False
    assert [e["message"] for e in body["errors"]] == ["the graph has no nodes"]

    # not a stored graph: no version, nothing to run
    assert api.client.get("/api/graphs/triage").status_code == 404
    listed = {d["slug"]: d for d in api.client.get("/api/drafts").json()}
    assert listed["triage"]["name"] == "Triage"
    assert listed["triage"]["nodes"] == 0
    assert listed["triage"]["latest_version"] is None

    # an edit replaces it; once valid it says so, and storing it is the ordinary save
    node = {"id": "shout", "type": "TRANSFORM", "transform_expr": "({text: input.text.toUpperCase()})"}
    graph = {**NEW, "nodes": [node], "edges": [{"source": "shout", "target": "END"}]}
    again = api.client.put("/api/drafts/triage", json={"graph": graph}).json()
    assert again["valid"] is True, again["errors"]
    assert api.client.get("/api/drafts/triage").json()["graph"]["nodes"] == [node]
    assert api.client.post("/api/graphs", json={"graph": again["graph"]}).status_code == 201
    assert api.client.delete("/api/drafts/triage").status_code == 204
    assert api.client.get("/api/drafts/triage").status_code == 404
    assert api.client.delete("/api/drafts/triage").status_code == 404


def test_the_draft_of_a_stored_graph_names_the_version_it_started_from(api: Api) -> None:
    stored = api.client.get("/api/graphs/echo").json()
    broken = {**stored["graph"], "nodes": [*stored["graph"]["nodes"], {"id": "orphan", "type": "TRANSFORM"}]}

    unnamed = api.client.put("/api/drafts/echo", json={"graph": broken})
    assert unnamed.status_code == 409, unnamed.text
    assert "base_version" in unnamed.json()["error"]["hint"]

    ahead = api.client.put("/api/drafts/echo", json={"graph": broken, "base_version": stored["version"] + 1})
    assert ahead.status_code == 404, ahead.text

    kept = api.client.put("/api/drafts/echo", json={"graph": broken, "base_version": stored["version"]})
    assert kept.status_code == 200, kept.text
    body = kept.json()
    assert body["valid"] is False
    assert any(e["node_id"] == "orphan" for e in body["errors"]), body["errors"]
    assert body["latest_version"] == stored["version"]
    # the stored graph is untouched
    assert api.client.get("/api/graphs/echo").json()["graph"] == stored["graph"]

    # deleting the graph drops its draft: a new graph of that id starts afresh
    assert api.client.delete("/api/graphs/echo?force=true").status_code == 200
    assert api.client.get("/api/drafts/echo").status_code == 404


def test_a_draft_of_no_stored_graph_names_no_version_and_its_id_is_the_address(api: Api) -> None:
    named = api.client.put("/api/drafts/triage", json={"graph": NEW, "base_version": 1})
    assert named.status_code == 404, named.text
    assert "leave `base_version` out" in named.json()["error"]["hint"]

    other = api.client.put("/api/drafts/other", json={"graph": NEW})
    assert other.status_code == 422, other.text
    assert "'triage'" in other.json()["error"]["message"]

    bad = api.client.put("/api/drafts/no%20spaces", json={"graph": {"nodes": []}})
    assert bad.status_code == 422, bad.text
    assert "not a graph id" in bad.json()["error"]["message"]
    trailing = api.client.put("/api/drafts/half%0A", json={"graph": {"nodes": []}})  # "half" and a newline
    assert trailing.status_code == 422, trailing.text

    unnamed = api.client.put("/api/drafts/triage", json={"graph": {"nodes": [], "edges": []}})
    assert unnamed.json()["graph"]["id"] == "triage"  # the address names it


def test_system_graphs_have_no_drafts(api: Api) -> None:
    system = next(g for g in api.client.get("/api/graphs?source_type=system").json()["items"])
    refused = api.client.put(f"/api/drafts/{system['slug']}", json={"graph": {"nodes": []}, "base_version": 1})
    assert refused.status_code == 403, refused.text
    assert "fork it" in refused.json()["error"]["hint"]
