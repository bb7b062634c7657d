"""Knowledge bases end to end through the use cases, on SQLite and PostgreSQL: ingestion is a run
of `plait.kb_ingest` in which a broken document fails alone, with its reason, while the others
are indexed; re-ingesting an edited document embeds only the chunks whose text is new and marks
the dropped ones removed; a search is a run of `plait.kb_search` whose hits carry their ranks,
and each mode finds what it should."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from plait.evolve.system import sync_system_graphs
from plait.knowledge.fusion import KEYWORD_WEIGHT, SEARCH_K
from plait.model.enums import RunStatus
from plait.runs.knowledge import DocumentUpload, add_documents, create_base, documents, start_search
from plait.runs.session import RunSession
from plait.store import Store
from plait.store.knowledge import DocumentStatus
from tests.knowledge.documents import GUIDE, guide_with, html_page

pytestmark = pytest.mark.usefixtures("embedder_installed")


def drive(store: Store, run_id: str) -> Any:
    session = RunSession(store, None)

    async def go() -> Any:
        try:
            return await session.finish(run_id)
        finally:
            await session.aclose()

    return asyncio.run(go())


def search(store: Store, query: str, **settings: Any) -> dict[str, Any]:
    run_id = start_search(store, "handbook", query, settings)
    outcome = drive(store, run_id)
    assert outcome.status == RunStatus.COMPLETED, outcome
    return dict(outcome.output)


def index_outputs(store: Store, run_id: str) -> dict[str, dict[str, Any]]:
    """The INDEX outputs of an ingestion run, by document name."""
    found = {}
    [documents_node] = [n for n in store.runs.node_runs(run_id) if n.node_id == "documents"]
    for child in store.runs.children(documents_node.id):
        for node in store.runs.node_runs(child.id):
            if node.node_id == "index" and node.output is not None:
                found[node.output["name"]] = node.output
    return found


@pytest.fixture
def handbook(store: Store) -> Store:
    sync_system_graphs(store)
    create_base(store, "handbook", chunk_tokens=24)  # small chunks: a section is several of them
    uploads = [
        DocumentUpload("guide.md", GUIDE.encode(), metadata={"team": "ops"}),
        DocumentUpload("faq.html", html_page().encode(), metadata={"team": "support"}),
        DocumentUpload("scan.pdf", b"%PDF-1.7\nthis is not really a pdf"),
    ]
    ingestion = add_documents(store, "handbook", uploads)
    assert ingestion.run_id is not None
    assert drive(store, ingestion.run_id).status == RunStatus.COMPLETED  # a failed item does not fail the run
    return store


def test_a_broken_document_fails_alone_with_its_reason(handbook: Store) -> None:
    shown = {d.name: d for d in documents(handbook, "handbook")}
    assert shown["guide.md"].status == DocumentStatus.READY
    assert shown["guide.md"].chunks > 5
    assert shown["faq.html"].status == DocumentStatus.READY
    assert shown["scan.pdf"].status == DocumentStatus.FAILED
    assert "scan.pdf" in (shown["scan.pdf"].error or "")
    assert "PDF" in (shown["scan.pdf"].error or "")


def test_each_mode_finds_what_it_should_and_says_how_it_ranked(handbook: Store) -> None:
    keyword = search(handbook, "rotate the backup encryption keys", mode="keyword")
    assert keyword["hits"][0]["heading_path"] == ["Handbook", "Backups", "Keys"]
    assert keyword["hits"][0]["ranks"] == {"keyword": 1}
    dense = search(handbook, "how often are copies of the data made?", mode="dense")
    assert dense["hits"][0]["heading_path"][:2] == ["Handbook", "Backups"]
    assert -1.0 <= dense["hits"][0]["score"] <= 1.0
    hybrid = search(handbook, "who do I call when the pager goes off at night", top_k=3)
    assert hybrid["mode"] == "hybrid"
    assert len(hybrid["hits"]) == 3
    assert hybrid["hits"][0]["document"] == "faq.html"
    assert set(hybrid["hits"][0]["ranks"]) == {"keyword", "dense"}
    assert hybrid["generation"] == handbook.knowledge.get("handbook").generation
    # a hybrid score is the weighted fusion of the ranks it shows: keyword counts less than dense
    for hit in hybrid["hits"]:
        weighted = {"dense": 1.0, "keyword": KEYWORD_WEIGHT}
        expected = sum(weighted[name] / (SEARCH_K + rank) for name, rank in hit["ranks"].items() if rank)
        assert hit["score"] == pytest.approx(expected, abs=1e-6)


def test_filters_and_sections_narrow_and_widen_the_hits(handbook: Store) -> None:
    only_faq = search(handbook, "backups", filters={"metadata": {"team": "support"}})
    assert {hit["document"] for hit in only_faq["hits"]} == {"faq.html"}
    under = search(handbook, "keys", filters={"heading": "Handbook > Backups"}, mode="keyword")
    assert under["hits"]
    assert all(hit["heading_path"][:2] == ["Handbook", "Backups"] for hit in under["hits"])
    section = search(handbook, "rotate the backup encryption keys", mode="keyword", top_k=1, expand="section")
    chunk = search(handbook, "rotate the backup encryption keys", mode="keyword", top_k=1)
    assert len(section["hits"][0]["text"]) > len(chunk["hits"][0]["text"])


def test_bad_search_settings_fail_the_search_with_what_is_wrong(handbook: Store) -> None:
    run_id = start_search(handbook, "handbook", "backups", {"mode": "fuzzy", "top_k": 0})
    outcome = drive(handbook, run_id)
    assert outcome.status == RunStatus.FAILED
    [failed] = [n for n in handbook.runs.node_runs(run_id) if n.error]
    assert "settings at input.settings are not valid" in failed.error["message"]
    assert any(d.startswith("mode:") for d in failed.error["details"])


def test_re_ingesting_an_edited_document_embeds_only_new_chunks(handbook: Store) -> None:
    edited = guide_with("Backups run every night at two.", "Backups run every six hours, on the hour.")
    ingestion = add_documents(handbook, "handbook", [DocumentUpload("guide.md", edited.encode())])
    assert ingestion.run_id is not None
    assert drive(handbook, ingestion.run_id).status == RunStatus.COMPLETED
    indexed = index_outputs(handbook, ingestion.run_id)["guide.md"]
    assert indexed["embedded"] == 1
    assert indexed["added"] == 1
    assert indexed["removed"] == 1
    assert indexed["kept"] == indexed["chunks"] - 1
    guide = next(d for d in documents(handbook, "handbook") if d.name == "guide.md")
    assert guide.version == 2
    gone = [c for c in handbook.knowledge_index.document_chunks(guide.id, live_only=False) if not c.live]
    assert len(gone) == 1
    assert "every night at two" in gone[0].text
    again = add_documents(handbook, "handbook", [DocumentUpload("guide.md", edited.encode())])
    assert again.run_id is None  # the same content: nothing to ingest


def test_a_search_replays_at_the_generation_it_saw_and_says_what_changed_since(handbook: Store) -> None:
    from plait.runs.knowledge import remove_document
    from plait.runs.replay_search import SearchReplayError, replay_search

    run_id = start_search(handbook, "handbook", "how often do backups run", {"mode": "keyword", "top_k": 3})
    assert drive(handbook, run_id).status == RunStatus.COMPLETED
    [retrieve] = [n for n in handbook.runs.node_runs(run_id) if n.input_snapshot.get("node_type") == "RETRIEVE"]
    before = retrieve.output["hits"]
    assert any("every night at two" in hit["text"] for hit in before)
    seen = retrieve.input_snapshot["generation"]
    # the answering chunk is replaced, and another document is removed
    edited = guide_with("Backups run every night at two.", "Backups run every six hours, on the hour.")
    ingestion = add_documents(handbook, "handbook", [DocumentUpload("guide.md", edited.encode())])
    assert ingestion.run_id is not None
    assert drive(handbook, ingestion.run_id).status == RunStatus.COMPLETED
    remove_document(handbook, "handbook", "faq.html")

    replayed = replay_search(handbook, handbook.runs.node_run(retrieve.id))
    assert replayed.generation == seen < replayed.current_generation
    assert replayed.same
    assert replayed.explanations == []
    assert replayed.replayed == replayed.stored == [hit["chunk_id"] for hit in before]
    assert [hit["text"] for hit in replayed.hits] == [hit["text"] for hit in before]
    assert replayed.now != replayed.stored  # today's search no longer finds the night-time sentence
    assert replayed.changed_since == ["faq.html", "guide.md"]

    ingest_node = next(n for n in handbook.runs.node_runs(ingestion.run_id) if n.input_snapshot)
    with pytest.raises(SearchReplayError, match="is not a completed search"):
        replay_search(handbook, ingest_node)


ANSWER_GRAPH = {
    "id": "answer_from_handbook",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    "nodes": [
        {"id": "search", "type": "RETRIEVE", "knowledge_base": "handbook", "query": "{{ input.q }}", "top_k": 2},
        {"id": "context", "type": "TRANSFORM",
         "transform_expr": "({texts: nodes.search.hits.map(h => h.text), first: nodes.search.hits[0].document})"},
    ],
    "edges": [{"source": "search", "target": "context"}, {"source": "context", "target": "END"}],
}  # fmt: skip


def test_a_corrected_retrieve_checks_its_chunks_and_makes_the_downstream_stale(handbook: Store) -> None:
    from plait.evolve.upload import UploadMode, save_upload
    from plait.runs.corrections import CorrectionError, Corrections
    from plait.runs.start import start_run

    save_upload(handbook, ANSWER_GRAPH, mode=UploadMode.CREATE)
    run_id = start_run(handbook, "answer_from_handbook", {"q": "who carries the pager"}, files=False)
    assert drive(handbook, run_id).status == RunStatus.COMPLETED
    first = {n.node_id: n for n in handbook.runs.node_runs(run_id)}
    assert first["search"].input_snapshot["generation"] == handbook.knowledge.get("handbook").generation
    guide = next(d for d in documents(handbook, "handbook") if d.name == "guide.md")
    wanted = next(c for c in handbook.knowledge_index.document_chunks(guide.id) if "Rotate the backup" in c.text)
    corrections = Corrections(handbook)
    with pytest.raises(CorrectionError, match="has no chunk 987654"):
        corrections.override(run_id, "search", {"hits": [{"chunk_id": 987654}]})
    kept = first["search"].output["hits"][0]
    made = corrections.override(run_id, "search", {"hits": [kept, {"chunk_id": wanted.id, "text": "made up"}]})
    assert made.stale == ["context"]
    corrected = {n.node_id: n for n in handbook.runs.node_runs(run_id)}["search"].effective_output
    added = corrected["hits"][1]
    assert added["text"] == wanted.text  # the store's text, not the one written
    assert added["document"] == "guide.md"
    assert added["heading_path"] == ["Handbook", "Backups", "Keys"]


def test_a_graph_cannot_make_parse_read_a_file_of_the_host(store: Store, tmp_path: Path) -> None:
    """PARSE takes a stored document's id; a path, however written, names no document."""
    from plait.evolve.upload import UploadMode, save_upload
    from plait.runs.start import start_run

    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nthe host's own file\n")
    graph = {
        "id": "reads_a_path",
        "input_schema": {"type": "object", "properties": {"doc": {"type": "string"}}, "required": ["doc"]},
        "nodes": [{"id": "parse", "type": "PARSE", "document": "{{ input.doc }}"}],
        "edges": [{"source": "parse", "target": "END"}],
    }
    save_upload(store, graph, mode=UploadMode.CREATE)
    for path in (str(secret), f"file://{secret}", "/etc/passwd", "../../etc/passwd"):
        run_id = start_run(store, "reads_a_path", {"doc": path}, files=False)
        assert drive(store, run_id).status == RunStatus.FAILED
        [failed] = store.runs.node_runs(run_id)
        assert failed.error["kind"] == "not_found", failed.error
        assert "the host's own file" not in json.dumps([failed.error, failed.input_snapshot, failed.attempts])
