"""The knowledge page (`#/knowledge`, `#/knowledge/NAME`) in the browser against a real `plait
serve`: a base made with the form (a bad name explained in the server's words), a Markdown file
and a broken PDF uploaded through the file input and the table read again until one is ready and
the other failed with its reason, a search whose hit shows where each ranking put it, a
document's chunks, removing a document and deleting the base after an inline confirmation;
a search narrowed by metadata, heading, document and a minimum score returning exactly what the
API returns with the same filters; searching nothing, or a base that is gone, and filters that
cannot be sent, said in plain words; and the canvas offering the RETRIEVE node with its fields."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from tests.knowledge.documents import GUIDE, guide_with
from tests.web.conftest import Served
from tests.web.test_accessibility import violations
from tests.web.test_canvas import editor_text, node

pytestmark = pytest.mark.usefixtures("embedder_installed")

FILES = "Files (text, Markdown, HTML, PDF or Word .docx)"
INGESTED = 90_000
"""How long the page may take to show a document read (a loaded CI host embeds slowly)."""


def _base(server: Served, name: str) -> dict[str, Any]:
    response = server.client.get(f"/api/kb/{name}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _documents(server: Served, name: str) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in _base(server, name)["documents"]}


def _row(page: Any, document: str) -> Any:
    return page.get_by_role("table", name="Documents").locator(f'tr[data-document="{document}"]')


def test_a_base_is_filled_searched_and_emptied_in_the_page(server: Served, page: Any) -> None:
    page.goto(server.url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Knowledge").click()
    expect(page).to_have_url(f"{server.url}/#/knowledge")
    expect(page.get_by_role("heading", name="Knowledge", exact=True)).to_be_visible()
    expect(page.get_by_text("No knowledge bases yet")).to_be_visible()

    # A name the server refuses: its message and hint beside the form, what was typed kept.
    form = page.get_by_role("form", name="New knowledge base")
    expect(form.get_by_label("Chunk size (tokens)")).to_have_value("200")
    form.get_by_label("Name").fill("Ops Handbook")
    form.get_by_label("Description (optional)").fill("What the operations team needs")
    form.get_by_role("button", name="Create knowledge base").click()
    alert = form.get_by_role("alert")
    expect(alert).to_contain_text("'Ops Handbook' is not a knowledge base name")
    expect(alert).to_contain_text("hint: use lower-case letters, digits")
    expect(form.get_by_label("Description (optional)")).to_have_value("What the operations team needs")
    assert server.client.get("/api/kb").json() == []

    form.get_by_label("Name").fill("handbook")
    form.get_by_role("button", name="Create knowledge base").click()
    expect(page).to_have_url(f"{server.url}/#/knowledge/handbook")
    expect(page.get_by_role("heading", name="Knowledge base handbook")).to_be_visible()
    expect(page.get_by_text("What the operations team needs")).to_be_visible()
    expect(page.get_by_text("No documents yet")).to_be_visible()
    made = _base(server, "handbook")
    assert (made["chunk_tokens"], made["description"]) == (200, "What the operations team needs")

    # Two files through the file input, with metadata; the table is read again until both settle.
    page.evaluate("window.__sameDocument = true")  # gone if the page were loaded again
    upload = page.get_by_role("form", name="Add documents")
    upload.get_by_label(FILES).set_input_files([
        {"name": "guide.md", "mimeType": "text/markdown", "buffer": GUIDE.encode()},
        {"name": "scan.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.7\nnot a pdf"},
    ])  # fmt: skip
    upload.get_by_label("Metadata (optional)").fill("team=ops\nyear=2024")
    upload.get_by_role("button", name="Add").click()
    expect(page.get_by_role("status").filter(has_text="reading guide.md, scan.pdf")).to_be_visible()
    guide, scan = _row(page, "guide.md"), _row(page, "scan.pdf")
    expect(guide.locator(".pill")).to_have_text("ready", timeout=INGESTED)
    expect(scan.locator(".pill")).to_have_text("failed", timeout=INGESTED)
    expect(scan.locator(".doc-error")).to_contain_text("scan.pdf")
    expect(page.locator(".working")).to_have_count(0)  # settled: no longer read every second
    assert page.evaluate("window.__sameDocument") is True

    stored = _documents(server, "handbook")
    assert stored["guide.md"]["metadata"] == {"team": "ops", "year": "2024"}
    assert stored["guide.md"]["chunks"] > 1
    expect(guide.locator("td").nth(3)).to_have_text(str(stored["guide.md"]["chunks"]))
    expect(scan.locator("td").nth(3)).to_have_text("0")
    run_id = stored["guide.md"]["run_id"]
    expect(guide.get_by_role("link", name=run_id[:8])).to_have_attribute("href", f"#/runs/{run_id}")
    assert server.run(run_id)["graph"] == "plait.kb_ingest"

    # A search: the best hit ranked first by both rankings, with its heading path and text.
    search = page.get_by_role("search", name="Search")
    search.get_by_label("Search for").fill("rotate the encryption keys")
    expect(search.get_by_label("Mode")).to_have_value("hybrid")
    search.get_by_role("button", name="Search").click()
    results = page.get_by_role("table", name="Search results")
    first = results.locator("tbody tr").first
    expect(first.locator(".ranks")).to_have_text("keyword 1 · dense 1")
    expect(first.locator(".rank")).to_have_text("1")
    expect(first.locator(".heading")).to_have_text("Handbook › Backups › Keys")
    expect(first.locator(".text")).to_contain_text("Rotate the backup encryption keys every ninety days.")
    expect(first.get_by_role("link", name="guide.md")).to_be_visible()
    summary = page.locator(".search-summary")
    expect(summary).to_contain_text("for “rotate the encryption keys” (hybrid)")
    search_run = summary.get_by_role("link").get_attribute("href")
    assert search_run is not None
    assert search_run.startswith("#/runs/")
    assert server.run(search_run.removeprefix("#/runs/"))["status"] == "completed"

    # Keyword only, at most one result: one hit, ranked by the words alone.
    search.get_by_label("Mode").select_option("keyword")
    search.get_by_label("Results (at most)").fill("1")
    search.get_by_role("button", name="Search").click()
    expect(summary).to_contain_text("1 hit for “rotate the encryption keys” (keyword)")
    expect(results.locator("tbody tr")).to_have_count(1)
    expect(first.locator(".ranks")).to_have_text("keyword 1")

    # A document's chunks, below the table, in order with their headings and tokens.
    guide.get_by_role("link", name="guide.md").click()
    expect(page).to_have_url(f"{server.url}/#/knowledge/handbook?document=guide.md")
    chunks = page.get_by_role("table", name="Chunks of guide.md")
    expected = server.client.get("/api/kb/handbook/documents/guide.md/chunks").json()
    expect(chunks.locator("tbody tr")).to_have_count(len(expected))
    keys = next(c for c in expected if c["heading_path"] == ["Handbook", "Backups", "Keys"])
    row = chunks.locator(f'tr[data-position="{keys["position"]}"]')
    expect(row.locator(".heading")).to_have_text("Handbook › Backups › Keys")
    expect(row.locator(".text")).to_have_text(keys["text"])
    expect(row.locator("td").last).to_have_text(str(keys["tokens"]))
    expect(page.get_by_role("heading", name="Chunks of guide.md")).to_be_focused()
    assert violations(page) == []

    # Remove asks first, in the row; keeping it changes nothing.
    guide.get_by_role("button", name="remove guide.md").click()
    confirm = guide.get_by_role("group", name="Confirm: remove guide.md")
    expect(confirm).to_contain_text("Remove guide.md from searches?")
    confirm.get_by_role("button", name="keep it").click()
    expect(confirm).to_have_count(0)
    assert _documents(server, "handbook")["guide.md"]["status"] == "ready"
    guide.get_by_role("button", name="remove guide.md").click()
    confirm.get_by_role("button", name="yes, remove").click()
    expect(page.get_by_role("status").filter(has_text="removed guide.md")).to_have_text(
        "removed guide.md: searches no longer find it"
    )
    expect(guide.locator(".pill")).to_have_text("removed")
    expect(guide.get_by_role("button", name="remove guide.md")).to_have_count(0)
    assert _documents(server, "handbook")["guide.md"]["status"] == "removed"
    expect(page.get_by_text("Removed from searches: these are the chunks it had.")).to_be_visible()
    search.get_by_role("button", name="Search").click()
    expect(summary).to_contain_text("No passage matches “rotate the encryption keys”")

    # The list says what the base holds now.
    page.get_by_role("link", name="all knowledge bases").click()
    listed = page.get_by_role("table", name="Knowledge bases").locator('tr[data-kb="handbook"]')
    expect(listed).to_contain_text("1 (1 failed)")
    expect(listed).to_contain_text("What the operations team needs")
    assert violations(page) == []

    # Deleting the base asks first too, then goes back to the list.
    listed.get_by_role("link", name="handbook").click()
    page.get_by_role("button", name="Delete this knowledge base").click()
    page.get_by_role("group", name=re.compile("Confirm: Delete this knowledge base")).get_by_role(
        "button", name="Yes, delete it"
    ).click()
    expect(page).to_have_url(f"{server.url}/#/knowledge")
    expect(page.get_by_text("No knowledge bases yet")).to_be_visible()
    assert server.client.get("/api/kb/handbook").status_code == 404


def _searched(server: Served, kb: str, **settings: Any) -> list[dict[str, Any]]:
    response = server.client.post(f"/api/kb/{kb}/search", json=settings, timeout=60)
    assert response.status_code == 200, response.text
    return list(response.json()["hits"])


def _shown(page: Any) -> list[tuple[str, str, str]]:
    """The search results on the page: each hit's chunk id, document and heading."""
    rows = page.get_by_role("table", name="Search results").locator("tbody tr").all()
    return [(r.get_attribute("data-chunk"), r.locator("td").nth(3).inner_text(), r.locator(".heading").inner_text())
            for r in rows]  # fmt: skip


def test_a_search_is_narrowed_by_metadata_heading_documents_and_a_minimum_score(server: Served, page: Any) -> None:
    assert server.client.post("/api/kb", json={"name": "teams"}).status_code == 201
    sales = guide_with("every ninety days", "every thirty days")
    for name, text, team in (("ops.md", GUIDE, "ops"), ("sales.md", sales, "sales")):
        sent = server.client.post("/api/kb/teams/documents", files={"files": (name, text.encode(), "text/markdown")},
                                  data={"metadata": json.dumps({"team": team})})  # fmt: skip
        assert sent.status_code == 202, sent.text
        server.wait_status(sent.json()["run_id"], "completed", timeout=INGESTED / 1000)
    page.goto(server.url + "/#/knowledge/teams")
    search = page.get_by_role("search", name="Search")
    summary = page.locator(".search-summary")
    search.get_by_label("Search for").fill("rotate the encryption keys")
    search.get_by_label("Results (at most)").fill("20")
    search.get_by_role("button", name="Search").click()
    expect(summary).to_contain_text("(hybrid) ·")
    assert {document for _, document, _ in _shown(page)} == {"ops.md", "sales.md"}

    # Only the documents whose metadata says team=sales: the API's hits with that filter, in order.
    search.get_by_label("Only documents whose metadata has").fill("team=sales")
    search.get_by_role("button", name="Search").click()
    expect(summary).to_contain_text("(hybrid; only team=sales)")
    wanted = _searched(server, "teams", query="rotate the encryption keys", top_k=20,
                       filters={"metadata": {"team": "sales"}})  # fmt: skip
    expect(page.get_by_role("table", name="Search results").locator("tbody tr")).to_have_count(len(wanted))
    assert [(chunk, document) for chunk, document, _ in _shown(page)] == [
        (str(h["chunk_id"]), "sales.md") for h in wanted
    ]

    # A minimum score between the best dense hit's and the next one's: the best one alone.
    dense = _searched(server, "teams", query="rotate the encryption keys", mode="dense", top_k=20,
                      filters={"metadata": {"team": "sales"}})  # fmt: skip
    best, second = dense[0]["score"], dense[1]["score"]
    threshold = f"{(best + second) / 2:.4f}"
    assert second < float(threshold) <= best
    search.get_by_label("Mode").select_option("dense")
    search.get_by_label("Minimum score").fill(threshold)
    search.get_by_role("button", name="Search").click()
    said = f"1 hit for “rotate the encryption keys” (dense; only team=sales · score ≥ {float(threshold)})"
    expect(summary).to_contain_text(said)
    assert _shown(page) == [(str(dense[0]["chunk_id"]), "sales.md", "Handbook › Backups › Keys")]
    kept = _searched(server, "teams", query="rotate the encryption keys", mode="dense", top_k=20,
                     min_score=float(threshold), filters={"metadata": {"team": "sales"}})  # fmt: skip
    assert [h["chunk_id"] for h in kept] == [dense[0]["chunk_id"]]

    # One document, under one heading (typed with the page's own separator): nothing from elsewhere.
    search.get_by_label("Minimum score").fill("")
    search.get_by_label("Only documents whose metadata has").fill("")
    search.get_by_label("Only these documents").fill("ops.md")
    search.get_by_label("Only under the heading").fill("Handbook › Deployments")
    search.get_by_role("button", name="Search").click()
    expect(summary).to_contain_text("(dense; only documents ops.md · under Handbook > Deployments)")
    shown = _shown(page)
    under = _searched(server, "teams", query="rotate the encryption keys", mode="dense", top_k=20,
                      filters={"documents": ["ops.md"], "heading": "Handbook > Deployments"})  # fmt: skip
    assert [chunk for chunk, _, _ in shown] == [str(h["chunk_id"]) for h in under]
    assert shown
    assert all(d == "ops.md" and h.startswith("Handbook › Deployments") for _, d, h in shown)

    # Filters that cannot be sent: said before anything is sent, the results left as they were.
    search.get_by_label("Minimum score").fill("high")
    search.get_by_role("button", name="Search").click()
    expect(search.get_by_role("alert")).to_contain_text("the minimum score must be a number, e.g. 0.5, not 'high'")
    search.get_by_label("Minimum score").fill("")
    search.get_by_label("Only documents whose metadata has").fill('{"team": ["ops"]}')
    expect(search.locator(".warning")).to_have_text(
        'the metadata filter\'s value of "team" must be text, a number or true/false, not ["ops"]'
    )
    search.get_by_label("Only documents whose metadata has").fill("team")
    expect(search.locator(".warning")).to_contain_text('line 1 of the metadata filter, "team", is not key=value')
    assert [chunk for chunk, _, _ in _shown(page)] == [str(h["chunk_id"]) for h in under]
    assert violations(page) == []


def test_searching_nothing_or_a_base_that_is_gone_says_what_is_wrong(server: Served, page: Any) -> None:
    assert server.client.post("/api/kb", json={"name": "empty"}).status_code == 201
    page.goto(server.url + "/#/knowledge/empty")
    search = page.get_by_role("search", name="Search")
    search.get_by_role("button", name="Search").click()
    alert = search.get_by_role("alert")
    expect(alert).to_have_text(re.compile(r"^nothing to search for: type a few words in the search box first"))
    search.get_by_label("Search for").fill("   ")
    search.get_by_role("button", name="Search").click()
    expect(alert).to_contain_text("nothing to search for")

    search.get_by_label("Search for").fill("backups")
    search.get_by_label("Results (at most)").fill("90")
    search.get_by_role("button", name="Search").click()
    expect(alert).to_contain_text("the number of results must be a whole number from 1 to 50, not '90'")
    search.get_by_label("Results (at most)").fill("5")
    search.get_by_role("button", name="Search").click()
    expect(alert).to_have_count(0)
    expect(page.locator(".search-summary")).to_contain_text("No passage matches “backups”")

    # The base deleted behind the page's back: the server's words, with its hint as a place here.
    assert server.client.delete("/api/kb/empty").status_code == 204
    search.get_by_role("button", name="Search").click()
    expect(alert).to_contain_text("not_found: no knowledge base 'empty'")
    expect(alert).to_contain_text("hint: list the knowledge bases to see their names")
    expect(alert).not_to_contain_text("/api/")
    expect(page.locator(".search-summary")).to_have_count(0)  # no stale results under the error
    assert violations(page) == []

    # Uploads that cannot be sent say why before anything is sent.
    upload = page.get_by_role("form", name="Add documents")
    upload.get_by_role("button", name="Add").click()
    expect(upload.get_by_role("alert")).to_contain_text("no file chosen: choose one or more files to add")
    upload.get_by_label("Metadata (optional)").fill("team")
    expect(upload.locator(".warning")).to_contain_text('line 1 of the metadata, "team", is not key=value')
    upload.get_by_label("Metadata (optional)").fill('{"team": ')
    expect(upload.locator(".warning")).to_contain_text("the metadata is not valid JSON")

    # A base that does not exist: said, with the way back to the list.
    page.goto(server.url + "/#/knowledge/nope")
    expect(page.get_by_role("alert")).to_contain_text("no knowledge base 'nope'")
    page.get_by_role("link", name="all knowledge bases").click()
    expect(page).to_have_url(f"{server.url}/#/knowledge")


def test_the_canvas_offers_the_retrieve_node_with_its_fields(server: Served, page: Any) -> None:
    graph = {"plait": 1, "id": "ask", "nodes": [{"id": "start", "type": "TRANSFORM", "transform_expr": "input"}],
             "edges": [{"source": "start", "target": "END"}]}  # fmt: skip
    server.import_graph(graph)
    page.goto(server.url + "/#/graphs/ask")
    palette = page.get_by_role("navigation", name="Node types")
    retrieve = palette.get_by_role("button", name="Add RETRIEVE")
    expect(retrieve).to_have_accessible_description(
        "Searches a knowledge base and passes on the best matching passages."
    )
    for kind in ("PARSE", "CHUNK", "INDEX"):
        expect(palette.get_by_role("button", name=f"Add {kind}")).to_be_visible()
    retrieve.click()
    node(page, "retrieve_1").click()
    assert editor_text(page, "Query") == "{{ input.question }}"
    page.get_by_label("Knowledge base (its name)").fill("handbook")
    page.get_by_label("Knowledge base (its name)").press("Enter")
    page.get_by_label("Results (1 to 50)").fill("3")
    page.get_by_label("Results (1 to 50)").press("Enter")
    page.get_by_role("tab", name="YAML").click()
    added = next(n for n in yaml.safe_load(editor_text(page, "Graph YAML"))["nodes"] if n["id"] == "retrieve_1")
    assert (added["type"], added["knowledge_base"], added["query"], added["top_k"]) == (
        "RETRIEVE", "handbook", "{{ input.question }}", 3
    )  # fmt: skip
