"""/api/skills over a real server: a skill created, listed and filtered, read at a version,
updated to a second version, exported and deleted, with its refusals (409, 422, 404); a graph
naming a stored skill uploaded, compiled with namespaced nodes and run on the scripted provider;
a skill file in an upload still refused. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from api_helpers import SCRIPT, Api, import_graphs

from plait.store import Store
from plait.testing import served_app

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


@pytest.fixture
def api(store: Store, tmp_path: Path) -> Iterator[Api]:
    """The API tests' server, with answers for the stored skill's inlined node too."""
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT + "  - {node: __loud__up, output: {text: LOUD}}\n")
    with served_app(store=store, llm=f"scripted:{script}") as served, served.client() as client:
        import_graphs(client)
        yield Api(client=client, url=served.url, store=store, script=script)


def shout(prompt: str = "Shout {{ input.text }}") -> dict[str, Any]:
    return {
        "plait": 1,
        "id": "shout",
        "schemas": [{"id": "text", "schema": TEXT}],
        "nodes": [{"id": "up", "type": "LLM_CALL", "user_prompt_tpl": prompt}],
        "edges": [{"source": "up", "target": "END", "schema_id": "text"}],
    }


def body(**extra: Any) -> dict[str, Any]:
    parameters = [{"name": "words", "schema": {"type": "string"}, "description": "what to shout"}]
    return {"parameters": parameters, "input_mapping": {"text": "words"}, "graph": shout(), **extra}


def uses(skill: str, graph_id: str = "shouter") -> dict[str, Any]:
    return {
        "plait": 1,
        "id": graph_id,
        "input_schema": TEXT,
        "schemas": [{"id": "text", "schema": TEXT}],
        "nodes": [{"id": "loud", "type": "SKILL", "skill": skill, "inputs": {"words": "{{ input.text }}"}}],
        "edges": [{"source": "loud", "target": "END", "schema_id": "text"}],
    }


def test_a_skill_is_created_listed_read_updated_exported_and_deleted(api: Api) -> None:
    client = api.client
    made = client.post("/api/skills", json=body(name="shout", tags=["loud"], category="text", description="Shouts"))
    assert made.status_code == 201, made.text
    assert (made.json()["version"], made.json()["input_mapping"]) == (1, {"text": "words"})
    assert client.post("/api/skills", json=body(name="shout")).status_code == 409
    listed = client.get("/api/skills").json()
    assert [(s["name"], s["version"], s["tags"], s["category"]) for s in listed] == [("shout", 1, ["loud"], "text")]
    assert client.get("/api/skills", params={"tag": "quiet"}).json() == []
    assert [s["name"] for s in client.get("/api/skills", params={"q": "SHOUTS"}).json()] == ["shout"]
    changed = client.put("/api/skills/shout", json=body(graph=shout("YELL {{ input.text }}"), note="louder"))
    assert changed.status_code == 200, changed.text
    assert [(v["version"], v["note"]) for v in changed.json()["versions"]] == [(1, None), (2, "louder")]
    assert changed.json()["tags"] == ["loud"]  # a field left out keeps the skill's
    first = client.get("/api/skills/shout/versions/1").json()
    assert first["graph"]["nodes"][0]["user_prompt_tpl"] == "Shout {{ input.text }}"
    assert client.get("/api/skills/shout").json()["version"] == 2
    exported = client.get("/api/skills/shout/export", params={"version": 1})
    assert exported.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(exported.text)["skill"]["parameters"][0]["name"] == "words"
    assert client.delete("/api/skills/shout").status_code == 204
    assert client.get("/api/skills/shout").status_code == 404
    assert client.get("/api/skills/shout/versions/1").status_code == 404


def test_refusals_carry_the_compilers_diagnostics(api: Api) -> None:
    broken = api.client.post("/api/skills", json=body(name="broken", graph=shout("{{ nowhere.x }}")))
    assert broken.status_code == 422
    assert broken.json()["error"]["code"] == "graph_invalid"
    assert [d["code"] for d in broken.json()["error"]["details"]] == ["bad_template_path"]
    graph = shout()
    graph["nodes"].append({"id": "f", "type": "SKILL", "skill": "../../etc/passwd.yaml"})
    reads_a_file = api.client.post("/api/skills", json=body(name="sneaky", graph=graph))
    assert reads_a_file.status_code == 422
    assert [d["code"] for d in reads_a_file.json()["error"]["details"]] == ["file_in_skill"]
    bad_mapping = api.client.post("/api/skills", json=body(name="mapped", input_mapping={"text": "nope"}))
    assert bad_mapping.status_code == 422
    assert bad_mapping.json()["error"]["code"] == "skill_invalid"
    assert "plait" not in bad_mapping.text.replace("plait: 1", "")  # HTTP words, no command line
    assert api.client.put("/api/skills/nope", json=body()).status_code == 404
    assert api.client.get("/api/skills", params={}).json() == []


def test_an_uploaded_graph_naming_a_stored_skill_compiles_and_runs(api: Api) -> None:
    assert api.client.post("/api/skills", json=body(name="shout")).status_code == 201
    wrong = api.client.post("/api/graphs/validate", json={"graph": {**uses("shout"), "nodes": [
        {"id": "loud", "type": "SKILL", "skill": "shout", "inputs": {"wordz": "x"}}]}})  # fmt: skip
    assert {e["code"] for e in wrong.json()["errors"]} == {"unknown_skill_parameter", "missing_skill_parameter"}
    created = api.client.post("/api/graphs", json={"graph": uses("shout")})
    assert created.status_code == 201, created.text
    stored = api.client.get("/api/graphs/shouter").json()["graph"]
    [node] = stored["nodes"]
    assert node["id"] == "__loud__up"
    assert node["skill_scope"]["skill"] == "shout@1"
    run_id = api.start("shouter", {"text": "hello"})
    done = api.wait_status(run_id, "completed")
    assert done["output"] == {"text": "LOUD"}
    assert [n["node_id"] for n in done["nodes"]] == ["__loud__up"]


def test_a_skill_file_in_an_upload_is_still_refused(api: Api) -> None:
    refused = api.client.post("/api/graphs", json={"graph": uses("skills/shout.yaml", "filed")})
    assert refused.status_code == 422
    [detail] = refused.json()["error"]["details"]
    assert detail["code"] == "skill_in_upload"
    assert "POST /api/skills" in detail["hint"]
    unknown = api.client.post("/api/graphs", json={"graph": uses("nope", "unknown")})
    assert unknown.status_code == 422
    assert [d["code"] for d in unknown.json()["error"]["details"]] == ["unknown_skill"]
