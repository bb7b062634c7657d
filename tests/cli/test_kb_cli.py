"""`plait kb` as a person uses it (real `plait` processes, SQLite and PostgreSQL): a base created,
documents added (a broken one fails alone and the command exits 1), listed, searched in each
mode, a search replayed, a document removed, the base deleted only with --yes; bad options exit 2 in the command
line's words; and an ingestion killed (SIGKILL at a failpoint) between two batches of embeddings
resumes with `plait resume` without embedding any chunk twice."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from plait.model.knowledge_nodes import RetrieveMode
from plait.store import Store
from tests.knowledge.documents import GUIDE
from tests.plait_cli import bare_env, run_plait

pytestmark = pytest.mark.usefixtures("embedder_installed")


def plait(db_url: str, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = bare_env(PLAIT_DB=db_url, PATH="/usr/bin:/bin", COLUMNS="200", **(env or {}))
    return run_plait(*args, cwd=cwd, env=environment, timeout=180)


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else done.stdout


def test_a_base_is_created_filled_listed_searched_and_emptied(db_url: str, tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(GUIDE)
    (tmp_path / "scan.pdf").write_bytes(b"%PDF-1.7\nnot a pdf at all")
    ok(plait(db_url, tmp_path, "kb", "create", "handbook", "--description", "ops"))
    added = plait(db_url, tmp_path, "kb", "add", "handbook", "guide.md", "scan.pdf", "--meta", "team=ops", "--json")
    assert added.returncode == 1, added.stderr  # a document failed
    statuses = {d["name"]: d for d in json.loads(added.stdout)["documents"]}
    assert statuses["guide.md"]["status"] == "ready"
    assert statuses["guide.md"]["metadata"] == {"team": "ops"}
    assert statuses["scan.pdf"]["status"] == "failed"
    assert "scan.pdf" in statuses["scan.pdf"]["error"]
    [base] = ok(plait(db_url, tmp_path, "kb", "ls", "--json"))
    assert (base["name"], base["documents"], base["description"]) == ("handbook", 2, "ops")
    shown = plait(db_url, tmp_path, "kb", "ls", "handbook")
    assert re.search(r"guide\.md\s+│ 1\s+│ ready", ok(shown))
    for mode in RetrieveMode:
        found = ok(plait(db_url, tmp_path, "kb", "search", "handbook", "rotate the encryption keys", "--mode",
                         str(mode), "--top-k", "2", "--json"))  # fmt: skip
        assert found["mode"] == str(mode)
        assert found["hits"][0]["heading_path"] == ["Handbook", "Backups", "Keys"], mode
        assert 1 <= len(found["hits"]) <= 2  # PostgreSQL leaves stop words out of keyword queries
    with Store(db_url) as store:  # the last search, replayed at the generation it saw
        [retrieve] = [n.id for n in store.runs.node_runs(found["run_id"]) if n.node_id == "retrieve"]
    replayed = ok(plait(db_url, tmp_path, "replay", retrieve, "--json"))
    assert (replayed["kind"], replayed["same"], replayed["generation"]) == ("search", True, found["generation"])
    assert "the same hits, in the same order" in ok(plait(db_url, tmp_path, "replay", retrieve))
    table = ok(plait(db_url, tmp_path, "kb", "search", "handbook", "rollback", "--heading", "Handbook > Deployments"))
    assert "Rollbacks" in table
    assert "Backups" not in table
    ok(plait(db_url, tmp_path, "kb", "rm", "handbook", "scan.pdf"))
    assert [d["name"] for d in ok(plait(db_url, tmp_path, "kb", "ls", "handbook", "--json"))
            if d["status"] != "removed"] == ["guide.md"]  # fmt: skip
    refused = plait(db_url, tmp_path, "kb", "rm", "handbook")
    assert refused.returncode == 2
    assert "--yes" in refused.stderr
    ok(plait(db_url, tmp_path, "kb", "rm", "handbook", "--yes"))
    assert ok(plait(db_url, tmp_path, "kb", "ls", "--json")) == []


def test_bad_options_exit_2_in_the_command_lines_words(db_url: str, tmp_path: Path) -> None:
    ok(plait(db_url, tmp_path, "kb", "create", "handbook"))
    cases = {
        ("kb", "search", "handbook", "keys", "--mode", "fuzzy"): "--mode 'fuzzy' is not one of keyword, dense, hybrid",
        ("kb", "search", "nowhere", "keys"): "no knowledge base 'nowhere'",
        ("kb", "add", "handbook", "missing.md"): "cannot read missing.md",
        ("kb", "create", "Bad Name"): "not a knowledge base name",
        ("kb", "create", "handbook"): "exists already",
        ("kb", "add", "handbook", "guide.md", "--meta", "team"): "--meta 'team' is not key=value",
    }
    (tmp_path / "guide.md").write_text(GUIDE)
    for args, said in cases.items():
        done = plait(db_url, tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert said in done.stderr, (args, done.stderr)
    (tmp_path / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200))
    refused = plait(db_url, tmp_path, "kb", "add", "handbook", "picture.png")
    assert refused.returncode == 2
    assert "not a document Plait can read" in refused.stderr


def test_an_ingestion_killed_between_batches_resumes_without_embedding_twice(db_url: str, tmp_path: Path) -> None:
    # 80 one-section chunks: one batch of 64 embedded before the kill, the rest after the resume
    sections = "\n\n".join(f"## Topic {i}\n\nFact number {i}: the value of item {i} is {i * 7}." for i in range(80))
    (tmp_path / "long.md").write_text(f"# Long\n\n{sections}\n")
    ok(plait(db_url, tmp_path, "kb", "create", "facts"))
    killed = plait(db_url, tmp_path, "kb", "add", "facts", "long.md", env={"PLAIT_FAILPOINTS": "embedded:index#1"})
    assert killed.returncode == 137, killed.stderr
    run_id = re.search(r"\(run ([0-9a-f-]{36})\)", killed.stderr).group(1)  # type: ignore[union-attr]
    with Store(db_url) as store:
        base = store.knowledge.get("facts")
        hashes_before = store.knowledge_index.missing_vectors(base.id, [])  # nothing asked: nothing missing
        kept = _vector_count(store, base.id)
    assert hashes_before == set()
    assert kept == 64  # one batch of vectors was kept before the kill
    resumed = plait(db_url, tmp_path, "resume", run_id, "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    with Store(db_url) as store:
        base = store.knowledge.get("facts")
        [document] = store.knowledge.documents(base.id)
        chunks = store.knowledge_index.document_chunks(document.id)
        index_runs = [n for c in _children(store, run_id) for n in store.runs.node_runs(c) if n.node_id == "index"]
        total = _vector_count(store, base.id)
    assert document.status == "ready"
    assert len(chunks) == len({c.content_hash for c in chunks}) > 64
    assert total == len(chunks)  # one vector per chunk: none embedded twice
    assert [n.output["embedded"] for n in index_runs if n.output] == [len(chunks) - 64]


def _vector_count(store: Store, kb_id: str) -> int:
    from sqlalchemy import func, select

    from plait.store.knowledge_models import KB_VECTOR

    with store.db.connect() as conn:
        return int(conn.execute(select(func.count()).where(KB_VECTOR.c.kb_id == kb_id)).scalar_one())


def _children(store: Store, run_id: str) -> list[str]:
    [documents] = [n for n in store.runs.node_runs(run_id) if n.node_id == "documents"]
    return [child.id for child in store.runs.children(documents.id)]


def test_config_check_says_how_knowledge_bases_search_in_the_store(db_url: str, tmp_path: Path) -> None:
    said = ok(plait(db_url, tmp_path, "config", "check", "--json"))["knowledge"]
    backend = "FTS5" if db_url.startswith("sqlite") else "tsvector"
    assert backend in said["keyword"]
    assert said["dense"].startswith("exact")
    assert said["embedder_missing"] == []
    shown = plait(db_url, tmp_path, "config", "check")
    assert f"knowledge bases: keyword search by {said['keyword']}" in shown.stdout
