"""The seed 000 §9 routes, driven only through their exact paths as a client written against that
document would: list and read graph definitions, start the video-chapters run, poll it until it
waits at its human review, read node snapshots, correct a node with a downstream policy, answer
the review, rerun a stale node; create, update, fork and delete graphs; and every refusal the
seed implies (unknown ids 404, bad bodies 422, conflicts 409), in the /api error shape.
Each test runs on SQLite and on PostgreSQL against a real server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import wait_for

from plait.evolve.system import SYSTEM_DIR
from plait.store import Store
from plait.testing import served_app

SCRIPTED = Path(__file__).resolve().parents[2] / "examples" / "scripted" / "video_chapters.yaml"
VIDEO = "plait.video_chapters"
TRANSCRIPT = {"transcript": "Welcome. Today we build a birdhouse from one pine board.", "language": "en"}
FIXED = {
    "chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 10}, {"title": "Build", "start_sec": 10, "end_sec": 90}]
}
ROUTES = {
    ("get", "/PromptGraphDefListRoute"),
    ("get", "/PromptGraphDefGetRoute"),
    ("post", "/PromptGraphDefCreateRoute"),
    ("post", "/PromptGraphDefUpdateRoute"),
    ("post", "/PromptGraphDefDeleteRoute"),
    ("post", "/PromptGraphDefForkRoute"),
    ("post", "/PromptGraphRunStartRoute"),
    ("get", "/PromptGraphRunGetRoute"),
    ("post", "/PromptGraphNodeOverrideRoute"),
    ("post", "/PromptGraphNodeRerunRoute"),
}
NOTES_GRAPH: dict[str, Any] = {
    "name": "Meeting notes",
    "description": "Meeting notes to action items.",
    "nodes": [
        {
            "id": "extract",
            "type": "LLM_CALL",
            "label": "Extract",
            "system_prompt": "List the action items.",
            "user_prompt_tpl": "Notes: %input.notes%",
        },
    ],
    "edges": [{"id": "e_out", "source_node_id": "extract", "target_node_id": "END", "schema_id": "items"}],
    "schema_registry": [
        {
            "id": "items",
            "description": "action items",
            "version": "1.0.0",
            "breaking_change": False,
            "schema": {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]},
        },
    ],
}


@dataclass
class SeedClient:
    """What a seed 000 §9 client knows: ten routes, their parameters and the seed's field names."""

    http: httpx.Client

    def get(self, route: str, **params: Any) -> httpx.Response:
        return self.http.get(f"/{route}", params=params)

    def post(self, route: str, body: Any) -> httpx.Response:
        return self.http.post(f"/{route}", json=body)

    def ok(self, response: httpx.Response) -> dict[str, Any]:
        assert response.status_code == 200, response.text
        return dict(response.json())

    def run(self, run_id: str) -> dict[str, Any]:
        return self.ok(self.get("PromptGraphRunGetRoute", id=run_id))

    def wait(self, run_id: str, *statuses: str) -> dict[str, Any]:
        """The run (with its node runs) once its status is one of `statuses`; `running` is
        reported for as long as the server executes the run, so this waits for it to settle."""
        return dict(
            wait_for(
                lambda: (d := self.run(run_id))["run"]["status"] in statuses and d,
                what=f"run {run_id} to be {' or '.join(statuses)}",
            )
        )

    def nodes(self, run_id: str) -> dict[str, dict[str, Any]]:
        return {n["node_def_id"]: n for n in self.run(run_id)["node_runs"]}

    def start(self, graph: str, context: dict[str, Any] | None = None) -> str:
        body = {"prompt_graph_def_id": graph, "initial_context": context or TRANSCRIPT}
        return str(self.ok(self.post("PromptGraphRunStartRoute", body))["run_id"])

    def override(self, run_id: str, node: str, value: Any, **extra: Any) -> httpx.Response:
        body = {"prompt_graph_run_id": run_id, "node_def_id": node, "override_json": value, **extra}
        return self.post("PromptGraphNodeOverrideRoute", body)

    def rerun(self, run_id: str, node: str, **extra: Any) -> httpx.Response:
        return self.post("PromptGraphNodeRerunRoute", {"prompt_graph_run_id": run_id, "node_def_id": node, **extra})


def error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """The error body, checked against the /api error shape and `status` (and `code`)."""
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert {"code", "message", "details"} <= set(body), body
    assert body["message"]
    if code is not None:
        assert body["code"] == code, body
    return dict(body)


@pytest.fixture
def seed(store: Store) -> Iterator[SeedClient]:
    """A server on loopback answering model calls from examples/scripted/video_chapters.yaml."""
    with served_app(store=store, llm=f"scripted:{SCRIPTED}") as served, served.client() as client:
        yield SeedClient(client)


def test_the_seed_story_from_graph_list_to_rerun(seed: SeedClient) -> None:
    page = seed.ok(seed.get("PromptGraphDefListRoute", source_type="system"))
    assert page["total"] >= 1
    assert {g["source_type"] for g in page["items"]} == {"system"}
    listed = next(g for g in page["items"] if g["slug"] == VIDEO)
    assert "nodes" not in listed  # the list is light; the get has the body
    graph = seed.ok(seed.get("PromptGraphDefGetRoute", id=listed["id"]))
    assert graph["id"] == listed["id"]
    assert isinstance(graph["created_at"], int)
    assert {s["id"]: s["version"] for s in graph["schema_registry"]}["chapter_list"] == "1.2.0"
    split_edge = next(e for e in graph["edges"] if e["id"] == "e_chapters_clip")
    assert (split_edge["source_node_id"], split_edge["target_node_id"]) == ("chapter_split", "clip_points")
    assert split_edge["schema_id"] == "chapter_list"

    started = seed.ok(
        seed.post("PromptGraphRunStartRoute", {"prompt_graph_def_id": graph["id"], "initial_context": TRANSCRIPT})
    )
    run_id = started["run_id"]
    assert (started["prompt_graph_def_id"], started["graph_def_ver"]) == (graph["id"], graph["version"])
    paused = seed.wait(run_id, "paused")
    run, nodes = paused["run"], {n["node_def_id"]: n for n in paused["node_runs"]}
    assert (run["graph_def_ver"], run["schema_version"]) == (graph["version"], graph["schema_version"])
    assert {k: n["status"] for k, n in nodes.items()} == {
        "transcribe": "completed", "chapter_split": "completed", "clip_points": "completed", "review": "pending",
    }  # fmt: skip
    assert run["context_json"]["chapter_split"]["_schema_id"] == "chapter_list"  # seed §3.3
    split = nodes["chapter_split"]
    snapshot = split["input_snapshot_json"]
    assert "birdhouse" in snapshot["rendered_user_prompt"]
    assert snapshot["response_format"]["json_schema"]["name"] == "chapter_list"
    assert split["effective_output"] == split["output_json"]
    assert split["override_json"] is None

    # a node with no output yet cannot be corrected; a value that breaks the edge schema is refused
    error(seed.override(run_id, "subtitles", {"lines": []}), 409, "conflict")
    bad = error(seed.override(run_id, "chapter_split", {"chapters": "two"}), 422, "invalid")
    assert bad["details"]

    corrected = seed.ok(
        seed.override(
            run_id, "chapter_split", FIXED, override_note="merged two chapters", downstream_policy="INVALIDATE"
        )
    )
    assert corrected["stale"] == ["clip_points"]
    assert corrected["queued"] == ["review"]  # the waiting review is opened again on the new value
    assert corrected["node_run"]["status"] == "overridden"
    seed.wait(run_id, "paused")
    nodes = seed.nodes(run_id)
    split = nodes["chapter_split"]
    assert split["output_json"]["chapters"][0]["title"] == "Introduction"  # the original is kept
    assert split["override_json"]["chapters"][0]["title"] == "Intro"
    assert split["effective_output"]["chapters"][0]["title"] == "Intro"
    assert (split["override_by"], split["override_note"], split["downstream_policy"]) == (
        "api", "merged two chapters", "INVALIDATE",
    )  # fmt: skip
    assert isinstance(split["override_at"], int)
    assert nodes["clip_points"]["status"] == "stale"
    assert seed.run(run_id)["run"]["stale"] == ["clip_points"]
    assert nodes["review"]["activation"] == 2
    assert nodes["review"]["input_snapshot_json"]["value"]["chapters"][0]["title"] == "Intro"  # what it shows

    # the run waits at its HUMAN_REVIEW: an override of that node is the person's answer
    answered = seed.ok(seed.override(run_id, "review", FIXED, override_note="checked by Ana"))
    assert answered["review_answered"] is True
    done = seed.wait(run_id, "completed")
    nodes = {n["node_def_id"]: n for n in done["node_runs"]}
    # the review showed the corrected chapters already: answering with that same value approves it
    assert (nodes["review"]["status"], nodes["review"]["override_note"]) == ("completed", "checked by Ana")
    assert nodes["subtitles"]["status"] == "completed"
    assert "Intro" in nodes["subtitles"]["input_snapshot_json"]["rendered_user_prompt"]
    assert done["run"]["output"]["subtitles"]["lines"]
    assert nodes["clip_points"]["status"] == "stale"  # still: nothing reran it

    rerun = seed.ok(seed.rerun(run_id, "clip_points"))
    assert rerun["queued"] == ["clip_points"]
    nodes = {n["node_def_id"]: n for n in seed.wait(run_id, "completed")["node_runs"]}
    clip = nodes["clip_points"]
    assert (clip["status"], clip["activation"]) == ("completed", 2)
    assert (rerun["node_run"]["id"], rerun["node_run"]["activation"]) == (clip["id"], 2)  # the answer named it
    assert "Intro" in clip["input_snapshot_json"]["rendered_user_prompt"]  # it read the corrected chapters
    assert seed.run(run_id)["run"]["stale"] == []

    # RERUN reruns the direct downstream at once; KEEP leaves it alone
    before = nodes["subtitles"]["activation"]
    assert seed.ok(seed.override(run_id, "review", FIXED, downstream_policy="RERUN"))["queued"] == ["subtitles"]
    nodes = {n["node_def_id"]: n for n in seed.wait(run_id, "completed")["node_runs"]}
    assert (nodes["subtitles"]["activation"], nodes["subtitles"]["status"]) == (before + 1, "completed")
    kept = seed.ok(seed.override(run_id, "transcribe", {"text": "shorter", "language": "en"}, downstream_policy="KEEP"))
    assert (kept["stale"], kept["queued"]) == ([], [])
    assert seed.nodes(run_id)["chapter_split"]["status"] == "overridden"


def test_approving_a_review_unchanged_and_rerunning_with_downstream(seed: SeedClient) -> None:
    run_id = seed.start(VIDEO)
    review = {n["node_def_id"]: n for n in seed.wait(run_id, "paused")["node_runs"]}["review"]
    under_review = review["input_snapshot_json"]["value"]
    approved = seed.ok(seed.override(run_id, "review", under_review))
    assert approved["review_answered"] is True
    nodes = {n["node_def_id"]: n for n in seed.wait(run_id, "completed")["node_runs"]}
    assert nodes["review"]["status"] == "completed"  # approved, not corrected ("overridden")
    # rerun reruns the downstream too (the seed's "and its downstream"): the review waits again
    again = seed.ok(seed.rerun(run_id, "chapter_split"))
    assert again["queued"][0] == "chapter_split"
    nodes = {n["node_def_id"]: n for n in seed.wait(run_id, "paused")["node_runs"]}
    assert nodes["chapter_split"]["activation"] == 2
    assert nodes["review"]["status"] == "pending"
    # downstream: false reruns the node alone and marks what follows stale
    other = seed.start(VIDEO)
    seed.wait(other, "paused")
    alone = seed.ok(seed.rerun(other, "transcribe", downstream=False))
    assert (alone["queued"], alone["stale"]) == (["transcribe"], ["chapter_split"])
    nodes = {n["node_def_id"]: n for n in seed.wait(other, "paused", "completed")["node_runs"]}
    assert (nodes["transcribe"]["activation"], nodes["chapter_split"]["status"]) == (2, "stale")


def test_graph_definitions_create_update_fork_delete(seed: SeedClient) -> None:
    created = seed.ok(seed.post("PromptGraphDefCreateRoute", NOTES_GRAPH))
    assert (created["slug"], created["source_type"], created["version"]) == ("meeting_notes", "user", 1)
    assert created["schema_version"] == "1.0.0"
    assert created["id"] != created["slug"]
    again = seed.ok(seed.post("PromptGraphDefCreateRoute", NOTES_GRAPH))  # names need not be unique
    assert again["slug"].startswith("meeting_notes_")
    assert again["id"] != created["id"]
    error(seed.post("PromptGraphDefCreateRoute", {**NOTES_GRAPH, "id": "meeting_notes"}), 409, "conflict")
    named = seed.ok(seed.post("PromptGraphDefCreateRoute", {**NOTES_GRAPH, "id": "notes"}))
    assert seed.ok(seed.get("PromptGraphDefGetRoute", id="notes"))["id"] == named["id"]

    # update: fields left out keep their value; the schema_version follows the schema change
    nodes = [{**NOTES_GRAPH["nodes"][0], "system_prompt": "List every action item with its owner."}]
    v2 = seed.ok(seed.post("PromptGraphDefUpdateRoute", {"id": created["id"], "nodes": nodes}))
    assert (v2["version"], v2["schema_version"], v2["name"]) == (2, "1.0.0", "Meeting notes")
    registry = v2["schema_registry"]
    registry[0]["schema"]["properties"]["items"]["description"] = "One per line"  # documentation: patch
    v3 = seed.ok(seed.post("PromptGraphDefUpdateRoute", {"id": created["id"], "schema_registry": registry}))
    assert (v3["version"], v3["schema_version"]) == (3, "1.0.1")
    echoed = seed.ok(seed.post("PromptGraphDefUpdateRoute", v3))  # what a client read, sent back
    assert echoed["version"] == 3
    old = seed.ok(seed.get("PromptGraphDefGetRoute", id=created["id"], version=1))
    assert (old["version"], old["latest_version"]) == (1, 3)

    # fork: a system graph becomes an editable system_fork; a slug asked for twice conflicts
    system = seed.ok(seed.get("PromptGraphDefGetRoute", id=VIDEO))
    fork = seed.ok(seed.post("PromptGraphDefForkRoute", {"id": system["id"]}))
    assert (fork["source_type"], fork["parent_def_id"], fork["version"]) == ("system_fork", system["id"], 1)
    assert (fork["parent_def_ver_at_fork"], fork["parent_schema_ver_at_fork"]) == (
        system["version"], system["schema_version"],
    )  # fmt: skip
    assert {s["id"] for s in fork["schema_registry"]} == {s["id"] for s in system["schema_registry"]}
    taken = error(seed.post("PromptGraphDefForkRoute", {"id": system["id"], "slug": fork["slug"]}), 409, "conflict")
    assert "slug" in taken["hint"]
    second = seed.ok(seed.post("PromptGraphDefForkRoute", {"id": system["id"]}))  # no slug asked: a free one
    assert second["slug"] != fork["slug"]
    seed.ok(seed.post("PromptGraphDefDeleteRoute", {"id": second["id"]}))
    edited = seed.ok(seed.post("PromptGraphDefUpdateRoute", {"id": fork["id"], "description": "mine"}))
    assert (edited["version"], edited["source_type"], edited["parent_def_id"]) == (2, "system_fork", system["id"])
    listed = seed.ok(seed.get("PromptGraphDefListRoute", source_type="system_fork"))["items"]
    assert [g["id"] for g in listed] == [fork["id"]]

    # system graphs are read-only; a graph with runs needs force
    error(seed.post("PromptGraphDefUpdateRoute", {"id": VIDEO, "description": "x"}), 403, "read_only")
    error(seed.post("PromptGraphDefDeleteRoute", {"id": VIDEO}), 403, "read_only")
    run_id = seed.start(fork["id"])
    seed.wait(run_id, "paused")
    error(seed.post("PromptGraphDefDeleteRoute", {"id": fork["id"]}), 409, "conflict")
    deleted = seed.ok(seed.post("PromptGraphDefDeleteRoute", {"id": fork["id"], "force": True}))
    assert (deleted["deleted"], deleted["runs_kept"]) == (True, 1)
    assert seed.ok(seed.get("PromptGraphDefListRoute", source_type="system_fork"))["items"] == []
    assert seed.run(run_id)["run"]["prompt_graph_def_id"] == fork["id"]  # its runs stay readable
    refork = seed.ok(seed.post("PromptGraphDefForkRoute", {"id": VIDEO, "slug": "my_chapters"}))
    assert (refork["slug"], refork["version"], refork["source_type"]) == ("my_chapters", 1, "system_fork")
    assert seed.ok(seed.post("PromptGraphDefDeleteRoute", {"id": "notes"}))["runs_kept"] == 0

    page = seed.ok(seed.get("PromptGraphDefListRoute", limit=1, offset=1))
    assert len(page["items"]) == 1
    shipped = len(list(SYSTEM_DIR.glob("*.yaml")))
    assert page["total"] == 3 + shipped  # the three made here and the system graphs Plait ships


def test_unknown_ids_are_404(seed: SeedClient) -> None:
    run_id = seed.start(VIDEO)
    seed.wait(run_id, "paused")
    nobody = "00000000-0000-4000-8000-000000000000"
    for response in (
        seed.get("PromptGraphDefGetRoute", id=nobody),
        seed.get("PromptGraphDefGetRoute", id=VIDEO, version=99),
        seed.post("PromptGraphDefUpdateRoute", {"id": nobody, "description": "x"}),
        seed.post("PromptGraphDefDeleteRoute", {"id": nobody}),
        seed.post("PromptGraphDefForkRoute", {"id": nobody}),
        seed.post("PromptGraphRunStartRoute", {"prompt_graph_def_id": nobody}),
        seed.get("PromptGraphRunGetRoute", id=nobody),
        seed.override(nobody, "chapter_split", FIXED),
        seed.override(run_id, "ghost", FIXED),
        seed.rerun(nobody, "chapter_split"),
        seed.rerun(run_id, "ghost"),
    ):
        body = error(response, 404, "not_found")
        assert nobody in body["message"] or "ghost" in body["message"] or "99" in body["message"]


def test_bad_requests_are_422(seed: SeedClient) -> None:
    run_id = seed.start(VIDEO)
    seed.wait(run_id, "paused")
    for response in (
        seed.get("PromptGraphDefGetRoute"),  # id is required
        seed.get("PromptGraphRunGetRoute", id=""),
        seed.get("PromptGraphDefListRoute", source_type="mine"),
        seed.get("PromptGraphDefListRoute", limit=0),
        seed.post("PromptGraphDefUpdateRoute", {"description": "no id"}),
        seed.post("PromptGraphDefDeleteRoute", {"id": VIDEO, "forse": True}),
        seed.post("PromptGraphRunStartRoute", {"initial_context": TRANSCRIPT}),
        seed.post("PromptGraphRunStartRoute", {"prompt_graph_def_id": VIDEO, "initial_context": "text"}),
        seed.override(run_id, "chapter_split", FIXED, downstream_policy="SOMETIMES"),
        seed.post("PromptGraphNodeOverrideRoute", {"prompt_graph_run_id": run_id, "node_def_id": "chapter_split"}),
        seed.rerun(run_id, "chapter_split", downstream="maybe"),
    ):
        assert error(response, 422, "invalid_request")["details"]
    # refusals that say why: what Plait does not do, or does differently
    material = error(seed.post("PromptGraphRunStartRoute", {"prompt_graph_def_id": VIDEO, "material_id": "m1"}), 422)
    assert "initial_context" in str(material["details"])
    by = error(seed.override(run_id, "chapter_split", FIXED, override_by="alice"), 422)
    assert "api:TOKEN_NAME" in str(by["details"])
    assert "rollback" in str(error(seed.override(run_id, "chapter_split", None), 422)["details"])
    # values checked by the services: the run input, the graph, a correction
    no_transcript = error(seed.post("PromptGraphRunStartRoute", {"prompt_graph_def_id": VIDEO}), 422, "invalid")
    assert "transcript" in str(no_transcript["details"])
    broken = {**NOTES_GRAPH, "nodes": [{**NOTES_GRAPH["nodes"][0], "type": "LLM"}]}
    invalid = error(seed.post("PromptGraphDefCreateRoute", broken), 422, "graph_invalid")
    assert any(d["code"] == "unknown_node_type" for d in invalid["details"])
    error(seed.override(run_id, "review", {"chapters": [{"title": "no times"}]}), 422, "invalid")
    error(seed.post("PromptGraphDefForkRoute", {"id": VIDEO, "slug": "not a slug"}), 422, "invalid")


def test_the_seed_routes_need_the_same_token_as_api(store: Store) -> None:
    _, token = store.tokens.create("seed")
    serving = served_app(store=store, llm=f"scripted:{SCRIPTED}", require_auth=True)
    with serving as served, httpx.Client(base_url=served.url, timeout=30) as client:  # no token
        for method, path in sorted(ROUTES):
            error(client.request(method, path, json={}), 401, "unauthorized")
        seed = SeedClient(served.client(headers={"Authorization": f"Bearer {token}"}))
        with seed.http:
            run_id = seed.start(VIDEO)
            seed.wait(run_id, "paused")
            assert seed.ok(seed.override(run_id, "chapter_split", FIXED))["node_run"]["override_by"] == "api:seed"


def test_openapi_documents_the_ten_routes(seed: SeedClient) -> None:
    spec = seed.ok(seed.http.get("/openapi.json"))
    documented = {(method, path) for path, ops in spec["paths"].items() for method in ops if path.endswith("Route")}
    assert documented == ROUTES
    schemas = spec["components"]["schemas"]
    assert {"PromptGraphDef", "PromptGraphRun", "PromptNodeRun", "PromptGraphNodeOverrideIn"} <= set(schemas)
    assert "downstream_policy" in schemas["PromptNodeRun"]["properties"]
