"""Knowledge bases through the HTTP API, on a real server (SQLite and PostgreSQL): a multipart
upload answered at once with the ingestion run's id, the documents' statuses once it ends (a
broken file failed alone, with its reason), searches in each mode with their ranks, a document's
chunks, a RETRIEVE in a graph corrected over HTTP (an unknown chunk refused, the downstream
stale), removing a document, and refusals with the right statuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from api_helpers import wait_for

from plait.store import Store
from plait.testing import served_app
from tests.knowledge.documents import GUIDE, html_page

pytestmark = pytest.mark.usefixtures("embedder_installed")


@pytest.fixture
def client(store: Store) -> Iterator[httpx.Client]:
    with served_app(store=store) as served, served.client() as api:
        yield api


def ended(client: httpx.Client, run_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        run = client.get(f"/api/runs/{run_id}").json()
        return run if run["status"] in ("completed", "failed", "cancelled") else None

    return wait_for(done, timeout=90, what=f"run {run_id} to end")


@pytest.fixture
def handbook(client: httpx.Client) -> httpx.Client:
    made = client.post("/api/kb", json={"name": "handbook", "chunk_tokens": 24})
    assert made.status_code == 201, made.text
    files = [
        ("files", ("guide.md", GUIDE.encode(), "text/plain")),  # a browser's type for .md: the suffix decides
        ("files", ("faq.html", html_page().encode(), "text/html")),
        ("files", ("scan.pdf", b"%PDF-1.7\nno pages here", "application/pdf")),
    ]
    sent = client.post("/api/kb/handbook/documents", files=files, data={"metadata": json.dumps({"team": "ops"})})
    assert sent.status_code == 202, sent.text
    body = sent.json()
    assert sorted(d["name"] for d in body["documents"]) == ["faq.html", "guide.md", "scan.pdf"]
    assert ended(client, body["run_id"])["status"] == "completed"
    return client


def test_uploaded_documents_are_ingested_and_a_broken_one_fails_alone(handbook: httpx.Client) -> None:
    shown = handbook.get("/api/kb/handbook").json()
    documents = {d["name"]: d for d in shown["documents"]}
    assert documents["guide.md"]["status"] == "ready"
    assert documents["guide.md"]["media_type"] == "text/plain"
    assert documents["guide.md"]["metadata"] == {"team": "ops"}
    assert documents["faq.html"]["status"] == "ready"
    assert documents["scan.pdf"]["status"] == "failed"
    assert "scan.pdf" in documents["scan.pdf"]["error"]
    chunks = handbook.get("/api/kb/handbook/documents/guide.md/chunks").json()
    assert [c["position"] for c in chunks] == list(range(len(chunks)))
    assert ["Handbook", "Backups", "Keys"] in [c["heading_path"] for c in chunks]  # Markdown, not plain text
    again = handbook.post(
        "/api/kb/handbook/documents", files=[("files", ("guide.md", GUIDE.encode(), "text/markdown"))]
    )
    assert again.status_code == 202
    assert again.json()["run_id"] is None  # the same content: nothing to ingest
    assert [d["name"] for d in again.json()["unchanged"]] == ["guide.md"]


def test_searches_give_hits_with_their_ranks_in_each_mode(handbook: httpx.Client) -> None:
    for mode, rankings in (("keyword", {"keyword"}), ("dense", {"dense"}), ("hybrid", {"keyword", "dense"})):
        found = handbook.post("/api/kb/handbook/search", json={"query": "rotate the encryption keys", "mode": mode})
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["hits"][0]["heading_path"] == ["Handbook", "Backups", "Keys"], mode
        assert set(body["hits"][0]["ranks"]) == rankings
        assert handbook.get(f"/api/runs/{body['run_id']}").json()["status"] == "completed"  # a recorded run
    narrowed = handbook.post("/api/kb/handbook/search", json={"query": "pager", "filters": {"documents": ["guide.md"]}})
    assert {h["document"] for h in narrowed.json()["hits"]} == {"guide.md"}


def test_a_search_node_run_replays_at_its_generation(handbook: httpx.Client) -> None:
    body = handbook.post("/api/kb/handbook/search", json={"query": "rotate the encryption keys"}).json()
    [node] = [n for n in handbook.get(f"/api/runs/{body['run_id']}").json()["nodes"] if n["node_id"] == "retrieve"]
    replayed = handbook.post(f"/api/node-runs/{node['id']}/replay")
    assert replayed.status_code == 200, replayed.text
    answer = replayed.json()
    assert answer["kind"] == "search"
    assert answer["same"] is True
    assert answer["generation"] == body["generation"]
    assert answer["replayed"] == [hit["chunk_id"] for hit in body["hits"]]


def test_refusals_have_their_statuses(handbook: httpx.Client) -> None:
    assert handbook.post("/api/kb/nowhere/search", json={"query": "x"}).status_code == 404
    assert handbook.post("/api/kb/handbook/search", json={"query": "x", "mode": "fuzzy"}).status_code == 422
    assert handbook.post("/api/kb/handbook/search", json={"query": "x", "top_k": 51}).status_code == 422
    assert handbook.post("/api/kb", json={"name": "handbook"}).status_code == 409
    assert handbook.post("/api/kb", json={"name": "Bad Name"}).status_code == 422
    png = [("files", ("picture.png", b"\x89PNG\r\n\x1a\n" + bytes(300), "image/png"))]
    refused = handbook.post("/api/kb/handbook/documents", files=png)
    assert refused.status_code == 422
    assert "not a document Plait can read" in refused.text
    bad_meta = handbook.post("/api/kb/handbook/documents", files=png, data={"metadata": "[1]"})
    assert bad_meta.status_code == 422
    assert handbook.get("/api/kb/handbook/documents/none.md/chunks").status_code == 404


GRAPH = """
id: answer
input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
nodes:
  - {id: search, type: RETRIEVE, knowledge_base: handbook, query: "{{ input.q }}", top_k: 2}
  - {id: first, type: TRANSFORM, transform_expr: "nodes.search.hits[0].text"}
edges:
  - {source: search, target: first}
  - {source: first, target: END}
"""


def test_a_retrieve_corrected_over_http_checks_its_chunks_and_stales_the_downstream(handbook: httpx.Client) -> None:
    stored = handbook.post("/api/graphs", json={"source": GRAPH})
    assert stored.status_code in (200, 201), stored.text
    started = handbook.post("/api/runs", json={"graph": "answer", "input": {"q": "who carries the pager"}})
    run_id = started.json()["run_id"]
    run = ended(handbook, run_id)
    assert run["status"] == "completed"
    chunks = handbook.get("/api/kb/handbook/documents/guide.md/chunks").json()
    keys = next(c for c in chunks if c["heading_path"][-1] == "Keys")
    unknown = handbook.post(
        f"/api/runs/{run_id}/nodes/search/override", json={"value": {"hits": [{"chunk_id": 10**9}]}}
    )
    assert unknown.status_code == 404
    assert "has no chunk" in unknown.text
    done = handbook.post(
        f"/api/runs/{run_id}/nodes/search/override", json={"value": {"hits": [{"chunk_id": keys["id"]}]}}
    )
    assert done.status_code == 200, done.text
    assert done.json()["stale"] == ["first"]
    removed = handbook.delete("/api/kb/handbook/documents/faq.html")
    assert removed.status_code == 200
    assert removed.json()["removed"] > 0
    after = handbook.post("/api/kb/handbook/search", json={"query": "who carries the pager", "top_k": 10}).json()
    assert "faq.html" not in {h["document"] for h in after["hits"]}
    assert handbook.delete("/api/kb/handbook").status_code == 204
    assert handbook.get("/api/kb").json() == []
