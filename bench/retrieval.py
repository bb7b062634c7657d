"""Knowledge bases measured: how well search finds the passage that answers a question, how fast
documents are ingested, that an ingestion killed anywhere resumes without embedding a chunk
twice, what re-ingesting an edited document costs, and how long a search takes at 10k and 100k
chunks.

    .venv/bin/python bench/retrieval.py [--quick] [--latency-only] [--db URL] [--json PATH]

1. Quality, offline: CPython's help topics (`pydoc_data.topics`, each topic a Markdown document
   `<key>.md`) and Plait's docs/*.md and README.md go into one base (the default embedder); the
   questions of `bench/retrieval_questions.yaml` are searched in each mode with top_k 10. A hit is
   relevant when its document is one the question names and its heading path or text holds the
   question's marker. Recall@1, recall@5 and MRR@10 per mode; with the whole corpus, dense and
   hybrid again on a base the numpy embedder filled.
2. Ingestion: chunks per second of each embedder, on the same corpus (the int8 figure is the
   quality base's ingestion). Then `plait kb add` killed (`PLAIT_FAILPOINTS`) at five points of
   a document of a few hundred chunks and resumed with `plait resume`: one vector per distinct
   chunk, and the vectors kept before the kill plus those the resumed INDEX embedded make exactly
   that number. Then a ~100-page document ingested, one sentence of it changed, ingested again:
   the share of its chunks embedded again.
3. Latency: `plait.engine.retrieval.search` (what RETRIEVE calls) on bases of 10k and 100k
   chunks written straight through the store (sentences of the corpus, each chunk's vector the
   mean of its sentences' embeddings), p50 and p95 per mode, the whole `client.kb.search` (a
   run of `plait.kb_search`) p50, and the first dense search after a document of 20 chunks was
   added. On PostgreSQL with pgvector, also recall@10 of the dense search through the HNSW
   index against exact search, and whether the planner used the index.

`--quick`: 10 questions on their own documents and the smallest topics, six small topics per
embedder, one kill point, 15- and 4-page documents, 2k chunks made of 100 sentences: a smoke run
of every section, about a minute. `--db`: a SQLite URL (a new file), or a PostgreSQL URL (a new
schema in that database, dropped afterwards); by default a SQLite file in a temporary folder.
`--latency-only`: section 3 alone (a few minutes at 10k and 100k chunks). Progress goes to
stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from pydoc_data.topics import topics
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = Path(__file__).resolve().parent / "retrieval_questions.yaml"
sys.path.insert(0, str(ROOT))

from bench._machine import machine  # noqa: E402
from plait.client import Client  # noqa: E402
from plait.store import Store  # noqa: E402

MODES = ("keyword", "dense", "hybrid")
TOP_K = 10
KILL_POINTS = ("execute:parse", "after_commit:parse", "after_commit:chunk", "embedded:index", "before_commit:index")
PAGE_WORDS = 450
QUICK_SMALL_TOPIC_WORDS = 200
"""With --quick, topics shorter than this join the questions' documents as distractors."""


@dataclass(frozen=True)
class Question:
    """A question as a user would ask it, the documents that answer it, and the markers that
    tell the answering chunk from its neighbours."""

    id: str
    text: str
    documents: tuple[str, ...]
    markers: tuple[str, ...]
    quick: bool


@dataclass
class Scores:
    """One mode's figures over the questions, and each question's first relevant rank (0: none)."""

    mode: str
    recall_1: float = 0.0
    recall_5: float = 0.0
    mrr_10: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------ corpus and questions


def corpus() -> dict[str, str]:
    """Document name -> Markdown: each help topic under its key, then Plait's own docs."""
    documents = {f"{key}.md": f"# {key}\n\n{text}" for key, text in sorted(topics.items())}
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        documents[path.name] = path.read_text(encoding="utf-8")
    return documents


def questions(quick: bool) -> list[Question]:
    """The questions of the file (those marked `quick` for --quick)."""
    loaded = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    asked = [
        Question(
            item["id"],
            item["q"],
            tuple(item["documents"]),
            tuple(item["marker"]) if isinstance(item["marker"], list) else (item["marker"],),
            bool(item.get("quick")),
        )
        for item in loaded
    ]
    return [q for q in asked if q.quick] if quick else asked


def quick_corpus(documents: dict[str, str], asked: Sequence[Question]) -> dict[str, str]:
    """The questions' own documents and the smallest help topics: a corpus ingested in seconds."""
    wanted = {name for q in asked for name in q.documents}
    small = {f"{k}.md" for k, text in topics.items() if len(text.split()) < QUICK_SMALL_TOPIC_WORDS}
    return {name: text for name, text in documents.items() if name in wanted | small}


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def relevant(question: Question, document: str, heading_path: Sequence[str], text: str) -> bool:
    """The hit's document answers the question and its place or text holds the marker."""
    if document not in question.documents:
        return False
    where = _plain(" > ".join(heading_path) + "\n" + text)
    return any(_plain(marker) in where for marker in question.markers)


def pages(count: int, words: int = PAGE_WORDS) -> str:
    """A Markdown document of `count` sections of about `words` words each (a page each), made of
    the help topics' paragraphs in order."""
    paragraphs = [p.strip() for key in sorted(topics) for p in topics[key].split("\n\n") if len(p.split()) > 8]
    out, index = ["# A long manual\n"], 0
    for page in range(1, count + 1):
        body: list[str] = []
        while sum(len(p.split()) for p in body) < words:
            body.append(paragraphs[index % len(paragraphs)])
            index += 1
        out.append(f"## Page {page}\n\n" + "\n\n".join(body) + "\n")
    return "\n".join(out)


def edited(document: str) -> str:
    """`document` with one sentence of one paragraph changed, in its middle section."""
    sections = document.split("\n## ")
    middle = len(sections) // 2
    paragraphs = sections[middle].split("\n\n")
    target = next(i for i, p in enumerate(paragraphs) if i > 0 and " the " in p)
    paragraphs[target] = paragraphs[target].replace(" the ", " this ", 1)
    sections[middle] = "\n\n".join(paragraphs)
    return "\n## ".join(sections)


# ------------------------------------------------------------------ 1. quality


def gold_missing(store: Store, base_name: str, asked: Sequence[Question]) -> list[Question]:
    """The questions none of whose documents' chunks holds the marker (the documents moved on)."""
    base = store.knowledge.get(base_name)
    by_name = {d.name: d for d in store.knowledge.documents(base.id)}
    chunks: dict[str, list[Any]] = {}
    missing = []
    for q in asked:
        found = False
        for name in q.documents:
            if name not in by_name:
                continue
            if name not in chunks:
                chunks[name] = store.knowledge_index.document_chunks(by_name[name].id)
            if any(relevant(q, name, c.heading_path, c.text) for c in chunks[name]):
                found = True
                break
        if not found:
            missing.append(q)
    return missing


def quality(client: Client, base_name: str, asked: Sequence[Question], modes: Sequence[str]) -> list[Scores]:
    """Each question in each mode through `client.kb.search`: the search a person or a graph gets."""
    results = []
    for mode in modes:
        scores = Scores(mode)
        for q in asked:
            hits = client.kb.search(base_name, q.text, mode=mode, top_k=TOP_K)["hits"]
            flags = [relevant(q, h["document"], h["heading_path"], h["text"]) for h in hits]
            scores.ranks[q.id] = next((rank for rank, ok in enumerate(flags, 1) if ok), 0)
        ranks = list(scores.ranks.values())
        scores.recall_1 = sum(1 for r in ranks if r == 1) / len(ranks)
        scores.recall_5 = sum(1 for r in ranks if 1 <= r <= 5) / len(ranks)
        scores.mrr_10 = sum(1 / r for r in ranks if r) / len(ranks)
        results.append(scores)
        _progress(f"quality {base_name} {mode}: recall@5 {scores.recall_5:.2f}")
    return results


# ------------------------------------------------------------------ 2. ingestion


def ingest(client: Client, base_name: str, embedder: str, documents: dict[str, str]) -> dict[str, Any]:
    """Create a base for `embedder` and ingest `documents` into it: chunks, seconds, chunks/s."""
    client.kb.create(base_name, embedder=embedder)
    began = time.perf_counter()
    added = client.kb.add(base_name, documents)
    seconds = time.perf_counter() - began
    failed = [d.name for d in added if d.status != "ready"]
    if failed:
        sys.exit(f"ingestion into {base_name} failed for {', '.join(failed)}")
    chunks = sum(d.chunks for d in added)
    _progress(f"ingested {len(documents)} documents, {chunks} chunks, with {embedder} in {seconds:.1f} s")
    return {"embedder": embedder, "documents": len(documents), "chunks": chunks, "seconds": seconds,
            "chunks_per_s": chunks / seconds, "load": os.getloadavg()[0]}  # fmt: skip


def resume_after_kill(client: Client, url: str, point: str, base_name: str, document: Path) -> dict[str, Any]:
    """`plait kb add` killed at `point`, then `plait resume`: what was kept and embedded."""
    from sqlalchemy import func, select

    from plait.store.knowledge_models import KB_VECTOR

    env = {**os.environ, "PLAIT_DB": url}
    client.kb.create(base_name)  # here: only the add and the resume need processes of their own
    killed = _plait({**env, "PLAIT_FAILPOINTS": point}, "kb", "add", base_name, str(document), check=False)
    found = re.search(r"\(run ([0-9a-f-]{36})\)", killed.stderr)
    row: dict[str, Any] = {"point": point, "killed": killed.returncode == 137, "resumed": False}
    if found is None or killed.returncode != 137:
        row["note"] = f"exit {killed.returncode}: {killed.stderr.strip()[-200:]}"
        return row
    run_id = found.group(1)
    with Store(url) as store:
        base = store.knowledge.get(base_name)

        def vectors() -> int:
            with store.db.connect() as conn:
                return int(conn.execute(select(func.count()).where(KB_VECTOR.c.kb_id == base.id)).scalar_one())

        before = vectors()
        resumed = _plait(env, "resume", run_id, "--quiet", check=False)
        [doc] = store.knowledge.documents(base.id)
        chunks = store.knowledge_index.document_chunks(doc.id)
        distinct = len({c.content_hash for c in chunks})
        [mapped] = [n for n in store.runs.node_runs(run_id) if n.node_id == "documents"]
        index_runs = [
            n
            for child in store.runs.children(mapped.id)
            for n in store.runs.node_runs(child.id)
            if n.node_id == "index" and n.output
        ]
        embedded = sum(int(n.output["embedded"]) for n in index_runs)
        row |= {"resumed": resumed.returncode == 0 and doc.status == "ready", "chunks": len(chunks),
                "distinct": distinct, "vectors": vectors(), "kept_before_kill": before,
                "embedded_on_resume": embedded, "embedded_twice": before + embedded - distinct}  # fmt: skip
    _progress(f"killed at {point}: {row}")
    return row


def _plait(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`plait ARGS` in a process of its own: its failpoints are its own, and a kill ends it."""
    done = subprocess.run([sys.executable, "-m", "plait", *args], env=env, capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        sys.exit(f"plait {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def reingest_one_edit(client: Client, base_name: str, page_count: int) -> dict[str, Any]:
    """Ingest a long document, change one sentence, ingest it again: the second INDEX's output."""
    client.kb.create(base_name)
    original = pages(page_count)
    client.kb.add(base_name, {"manual.md": original})
    [changed] = client.kb.add(base_name, {"manual.md": edited(original)})
    store = client.store
    assert changed.run_id is not None
    [mapped] = [n for n in store.runs.node_runs(changed.run_id) if n.node_id == "documents"]
    [index] = [
        n.output
        for child in store.runs.children(mapped.id)
        for n in store.runs.node_runs(child.id)
        if n.node_id == "index" and n.output
    ]
    row = {key: index[key] for key in ("chunks", "embedded", "added", "kept", "removed")}
    row |= {"pages": page_count, "words": len(original.split()), "share": index["embedded"] / index["chunks"]}
    _progress(f"re-ingested after one edit: {row}")
    return row


# ------------------------------------------------------------------ 3. latency


def sentences(documents: dict[str, str]) -> list[str]:
    """The corpus's sentences of 5 to 60 words: the stuff of generated chunks."""
    found = []
    for text in documents.values():
        for sentence in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)):
            if 5 <= len(sentence.split()) <= 60:
                found.append(sentence)
    return found


def synthetic_base(
    store: Store, name: str, size: int, pool: Sequence[str], pool_vectors: Any, per_document: int = 1000
) -> float:
    """A base of `size` chunks of about 120 words of corpus sentences each, written through the
    store as INDEX writes them; the seconds it took. A chunk's vector is the normalised mean of
    its sentences' embeddings (`pool_vectors`, row for row with `pool`): near what embedding the
    chunk would give, and spread like real text, which an approximate index's recall depends on
    (random unit vectors are its worst case)."""
    import numpy as np

    from plait.knowledge.chunk import Chunk, approximate_tokens, content_hash
    from plait.runs.knowledge import create_base

    pick = random.Random(size)
    began = time.perf_counter()
    base = create_base(store, name)
    for number in range(0, size, per_document):
        count = min(per_document, size - number)
        document, _ = store.knowledge.put_document(
            base.id, f"part-{number // per_document}.md", f"generated {name} {number}".encode(), "text/markdown"
        )
        chunks, matrix = [], np.zeros((count, pool_vectors.shape[1]), dtype=np.float32)
        for position in range(count):
            words: list[str] = []
            while len(words) < 120:
                sentence = pick.randrange(len(pool))
                words += pool[sentence].split()
                matrix[position] += pool_vectors[sentence]
            heading, text = (f"Part {number // per_document}", f"Section {position // 8}"), " ".join(words)
            chunks.append(Chunk(position, heading, text, approximate_tokens(text), content_hash(heading, text)))
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        store.knowledge_index.put_vectors(
            base.id, {c.content_hash: matrix[i].astype("<f4").tobytes() for i, c in enumerate(chunks)}
        )
        store.knowledge_index.replace_chunks(document.id, document.version, chunks)
    return time.perf_counter() - began


def latency(client: Client, name: str, size: int, queries: Sequence[str]) -> dict[str, Any]:
    """p50 and p95 of the engine's search per mode, the first dense search (it reads the vectors),
    the p50 of the whole `client.kb.search` (hybrid), each over the same queries; then the
    recall of pgvector's index, where it serves, and the first dense search after a change."""
    from plait.engine.retrieval import Search, search
    from plait.model.knowledge_nodes import RetrieveFilters, RetrieveMode

    store = client.store
    base = store.knowledge.get(name)
    row: dict[str, Any] = {"chunks": size}
    for mode in MODES:
        ask = [Search(q, RetrieveMode(mode), TOP_K, None, RetrieveFilters()) for q in queries]
        began = time.perf_counter()
        search(store.knowledge, store.knowledge_index, base, ask[0])  # dense: reads the vectors once
        row[f"{mode}_first_ms"] = (time.perf_counter() - began) * 1000
        times = []
        for each in ask:
            began = time.perf_counter()
            search(store.knowledge, store.knowledge_index, base, each)
            times.append((time.perf_counter() - began) * 1000)
        row[f"{mode}_p50_ms"], row[f"{mode}_p95_ms"] = _percentile(times, 50), _percentile(times, 95)
    client.kb.search(name, queries[0], top_k=TOP_K)
    whole = []
    for query in queries:
        began = time.perf_counter()
        client.kb.search(name, query, top_k=TOP_K)
        whole.append((time.perf_counter() - began) * 1000)
    row["client_hybrid_p50_ms"] = _percentile(whole, 50)
    row |= index_recall(store, base, queries)
    row["dense_after_change_ms"] = after_change(store, name, queries[0])
    row["load"] = os.getloadavg()[0]
    _progress(f"latency at {size} chunks: {row}")
    return row


def index_recall(store: Store, base: Any, queries: Sequence[str]) -> dict[str, Any]:
    """Where pgvector serves dense search: recall@10 of its top 10 (of the 40 a search asks it
    for) against exact search over the same vectors, and whether the planner chose the index
    for the search's statement (it may sort every chunk instead, exactly, when it finds that
    cheaper). Nothing where search is exact."""
    import numpy as np
    from sqlalchemy import text

    from plait.engine.retrieval import CANDIDATES
    from plait.knowledge.embed import embedder
    from plait.store.knowledge_vectors import HNSW_INDEX, nearest_statement

    index = store.knowledge_index
    vectors = index.vector_search(base.dimensions)
    if vectors is None:
        return {}
    rows = index.vector_rows(base.id, base.generation)
    ids = np.array([chunk_id for chunk_id, _ in rows], dtype=np.int64)
    matrix = np.frombuffer(b"".join(v for _, v in rows), dtype="<f4").reshape(len(rows), base.dimensions)
    found, wanted = 0, max(20, TOP_K * CANDIDATES)
    for query in embedder(base.embedder).embed(list(queries)):
        near = {chunk_id for chunk_id, _ in index.nearest(base.id, vectors, query, wanted, base.generation)[:TOP_K]}
        found += len(near & set(ids[np.argsort(-(matrix @ query))[:TOP_K]].tolist()))
    statement, values = nearest_statement(vectors, base.id, query, wanted, base.generation, [], {})
    with store.db.connect() as conn:
        plan = "\n".join(conn.execute(text(f"EXPLAIN {statement.text}"), values).scalars())
    return {"dense_recall_10": found / (TOP_K * len(queries)), "dense_plan": "hnsw" if HNSW_INDEX in plan else "exact"}


def after_change(store: Store, name: str, query: str, count: int = 20) -> float:
    """Milliseconds of the first dense search after a new document of `count` chunks: exact
    search brings its matrix up to the new generation, pgvector has nothing to do."""
    import numpy as np

    from plait.engine.retrieval import Search, search
    from plait.knowledge.chunk import Chunk, content_hash
    from plait.model.knowledge_nodes import RetrieveFilters, RetrieveMode

    base = store.knowledge.get(name)
    document, _ = store.knowledge.put_document(base.id, "change.md", b"one more document", "text/markdown")
    chunks = [Chunk(i, ("Change",), f"added passage {i}", 3, content_hash(("Change",), f"added passage {i}"))
              for i in range(count)]  # fmt: skip
    matrix = np.random.default_rng(count).standard_normal((count, base.dimensions)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    store.knowledge_index.put_vectors(base.id, {c.content_hash: matrix[i].tobytes() for i, c in enumerate(chunks)})
    store.knowledge_index.replace_chunks(document.id, document.version, chunks)
    base = store.knowledge.get(name)
    began = time.perf_counter()
    search(store.knowledge, store.knowledge_index, base, Search(query, RetrieveMode.DENSE, TOP_K, None,
                                                                 RetrieveFilters()))  # fmt: skip
    return (time.perf_counter() - began) * 1000


def _percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))]


# ------------------------------------------------------------------ the run


@contextmanager
def database(url: str | None, folder: Path) -> Iterator[str]:
    """The URL of a new database: a SQLite file in `folder`, `url` itself for SQLite, or a new
    schema in the PostgreSQL database of `url` (dropped afterwards)."""
    if url is None or url.startswith("sqlite"):
        yield url or f"sqlite:///{folder / 'retrieval.db'}"
        return
    from plait.testing.postgres import create_schema, drop_schema, schema_url

    schema = create_schema(url)
    try:
        yield schema_url(url, schema)
    finally:
        drop_schema(url, schema)


@dataclass(frozen=True)
class Plan:
    """What one invocation measures: everything, or the `--quick` sizes."""

    quick: bool
    kill_points: tuple[str, ...]
    resume_pages: int
    """Pages of the document killed and resumed: 15 make more chunks than INDEX embeds in one batch (64)."""
    edit_pages: int
    sizes: tuple[int, ...]
    pool: int | None
    """How many of the corpus's sentences make the latency bases' chunks (None: all)."""

    @classmethod
    def of(cls, quick: bool) -> Plan:
        if quick:
            return cls(True, ("embedded:index",), 15, 4, (2_000,), 100)
        return cls(False, KILL_POINTS, 60, 100, (10_000, 100_000), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every section")
    parser.add_argument("--db", help="sqlite:///FILE (new) or a PostgreSQL URL; default a temporary SQLite file")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--latency-only", action="store_true", help="only section 3, search latency")
    args = parser.parse_args()
    plan = Plan.of(args.quick)
    figures: dict[str, Any] = {"machine": machine(), "quick": args.quick, "command": " ".join(sys.argv)}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, database(args.db, Path(tmp)) as url:
        client = Client(url)
        try:
            figures["database"] = "sqlite" if url.startswith("sqlite") else "postgresql"
            if args.latency_only:
                figures["latency"] = measure_latency(client, plan, questions(plan.quick), corpus())
            else:
                scores = measure(client, url, Path(tmp), plan, figures)
        finally:
            client.close()
    figures["machine"]["load_after"] = os.getloadavg()
    figures["seconds"] = time.perf_counter() - began
    if args.latency_only:
        report_latency(figures, header=True)
    else:
        report(figures, scores)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")


def measure(client: Client, url: str, folder: Path, plan: Plan, figures: dict[str, Any]) -> dict[str, list[Scores]]:
    """Every measure in turn, its figures put in `figures`; the quality scores per base."""
    from plait.knowledge.embed import DEFAULT_EMBEDDER, EMBEDDERS

    asked, documents = questions(plan.quick), corpus()
    searched = quick_corpus(documents, asked) if plan.quick else documents
    ingestion = [ingest(client, "corpus", DEFAULT_EMBEDDER, searched)]
    missing = gold_missing(client.store, "corpus", asked)
    scored = [q for q in asked if q not in missing]
    scores = {"corpus": quality(client, "corpus", scored, MODES)}
    small = sorted((k for k in topics if len(topics[k].split()) < 120), key=lambda k: len(topics[k]))
    same = {f"{k}.md": documents[f"{k}.md"] for k in small[:6]} if plan.quick else documents
    if plan.quick:  # every embedder on the same few documents (the numpy one is slow)
        ingestion = [ingest(client, f"ingest-{DEFAULT_EMBEDDER}", DEFAULT_EMBEDDER, same)]
    for name in (e for e in EMBEDDERS if e != DEFAULT_EMBEDDER):
        ingestion.append(ingest(client, f"ingest-{name}", name, same))
        if not plan.quick:
            scores[f"ingest-{name}"] = quality(client, f"ingest-{name}", scored, ("dense", "hybrid"))
    long_document = folder / "manual.md"
    long_document.write_text(pages(plan.resume_pages), encoding="utf-8")
    kills = [resume_after_kill(client, url, point, f"resume-{i}", long_document)
             for i, point in enumerate(plan.kill_points)]  # fmt: skip
    edit = reingest_one_edit(client, "reingest", plan.edit_pages)
    timed = measure_latency(client, plan, asked, documents)
    figures |= {"questions": len(asked), "scored": len(scored), "missing": [q.id for q in missing],
                "quality": {b: [asdict(s) for s in rows] for b, rows in scores.items()}, "ingestion": ingestion,
                "resume": kills, "reingest": edit, "latency": timed}  # fmt: skip
    return scores


def _recall_5(ranks: Sequence[int]) -> float:
    return sum(1 for r in ranks if 1 <= r <= 5) / len(ranks) if ranks else 0.0


def measure_latency(
    client: Client, plan: Plan, asked: Sequence[Question], documents: dict[str, str]
) -> list[dict[str, Any]]:
    """Section 3 at each of the plan's sizes: a base written, then searched."""
    from plait.knowledge.embed import embedder

    pool, timed = sentences(documents)[: plan.pool], []
    began = time.perf_counter()
    pool_vectors = embedder().embed(pool)
    _progress(f"{len(pool)} sentences embedded in {time.perf_counter() - began:.1f} s")
    for size in plan.sizes:
        name = f"latency-{size // 1000}k"
        built = synthetic_base(client.store, name, size, pool, pool_vectors)
        _progress(f"{name}: {size} chunks written in {built:.1f} s")
        timed.append(latency(client, name, size, [q.text for q in asked]) | {"built_s": built})
    return timed


def report(figures: dict[str, Any], scores: dict[str, list[Scores]]) -> None:
    m = figures["machine"]
    print(f"retrieval bench: {m['cores']} cores ({m['cpu']}), load {m['load'][0]:.2f} at start, "
          f"{m['load_after'][0]:.2f} at the end; {figures['database']}; {figures['seconds']:.0f} s")  # fmt: skip
    print()
    print(f"quality: {figures['scored']} questions, top_k {TOP_K}"
          + (f" ({len(figures['missing'])} left out: no chunk holds their passage: "
             f"{', '.join(figures['missing'])})" if figures["missing"] else ""))  # fmt: skip
    print(f"  {'base':24} {'mode':8} {'recall@1':>9} {'recall@5':>9} {'MRR@10':>8}")
    for base, rows in scores.items():
        for s in rows:
            print(f"  {base:24} {s.mode:8} {s.recall_1:9.2f} {s.recall_5:9.2f} {s.mrr_10:8.3f}")
    print("  recall@5 on the questions in even places (hybrid's weights were chosen on them) and odd places:")
    for base, rows in scores.items():
        for s in rows:
            tuned, held_out = (_recall_5(list(s.ranks.values())[start::2]) for start in (0, 1))
            print(f"  {base:24} {s.mode:8} {tuned:9.2f} {held_out:9.2f}")
    print()
    print("ingestion")
    print(f"  {'embedder':16} {'documents':>9} {'chunks':>7} {'seconds':>8} {'chunks/s':>9}   load after")
    for row in figures["ingestion"]:
        print(f"  {row['embedder']:16} {row['documents']:9} {row['chunks']:7} {row['seconds']:8.1f} "
              f"{row['chunks_per_s']:9.1f}   {row['load']:.2f}")  # fmt: skip
    print()
    print("resume after kill -9")
    print(f"  {'point':22} {'resumed':8} {'chunks':>6} {'vectors':>7} {'kept before':>11} {'embedded after':>14} "
          f"{'twice':>5}")  # fmt: skip
    for row in figures["resume"]:
        if "chunks" not in row:
            print(f"  {row['point']:22} {'no':8} {row.get('note', '')}")
            continue
        print(f"  {row['point']:22} {'ok' if row['resumed'] else 'FAILED':8} {row['chunks']:6} {row['vectors']:7} "
              f"{row['kept_before_kill']:11} {row['embedded_on_resume']:14} {row['embedded_twice']:5}")  # fmt: skip
    print()
    edit = figures["reingest"]
    print(f"re-ingest after one edited sentence: {edit['pages']} pages, {edit['words']} words, "
          f"{edit['chunks']} chunks: embedded {edit['embedded']} ({edit['share'] * 100:.2f} %), "
          f"added {edit['added']}, kept {edit['kept']}, removed {edit['removed']}")  # fmt: skip
    print()
    report_latency(figures)


def report_latency(figures: dict[str, Any], *, header: bool = False) -> None:
    """The latency table (section 3), with the machine's line first when it is printed alone."""
    if header:
        m = figures["machine"]
        print(f"retrieval bench, latency only: {m['cores']} cores ({m['cpu']}), load {m['load'][0]:.2f} at start, "
              f"{m['load_after'][0]:.2f} at the end; {figures['database']}; {figures['seconds']:.0f} s")  # fmt: skip
        print()
    print("search latency, ms (the engine's search; first: the first search after the base was written)")
    print(f"  {'chunks':>7} {'mode':8} {'p50':>7} {'p95':>7} {'first':>7}")
    for row in figures["latency"]:
        for mode in MODES:
            print(f"  {row['chunks']:7} {mode:8} {row[f'{mode}_p50_ms']:7.1f} {row[f'{mode}_p95_ms']:7.1f} "
                  f"{row[f'{mode}_first_ms']:7.1f}")  # fmt: skip
        whole = row["client_hybrid_p50_ms"]
        print(f"  {row['chunks']:7} {'hybrid, the whole client.kb.search (a run)':44} p50 {whole:7.1f}   "
              f"(load after: {row['load']:.2f})")  # fmt: skip
        after = row["dense_after_change_ms"]
        print(f"  {row['chunks']:7} {'dense, first search after 20 chunks were added':44} {after:7.1f}")
        if "dense_recall_10" in row:
            print(f"  {row['chunks']:7} {'dense through pgvector: recall@10 vs exact':44} {row['dense_recall_10']:7.3f}"
                  f"   (the planner chose: {row['dense_plan']})")  # fmt: skip


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
