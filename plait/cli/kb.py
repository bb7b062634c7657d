"""`plait kb create | add | search | ls | rm`: knowledge bases.

`add` stores the files and executes their ingestion run here (a run of `plait.kb_ingest`: it
shows in `plait runs list`, resumes with `plait resume`); `search` is a run of `plait.kb_search`,
the same RETRIEVE node a graph uses, so what it shows is what a graph gets.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import EXIT_FAILED, fail, print_json, print_table, store_for, store_named
from plait.cli.help import PlaitTyper
from plait.cli.options import DbOption, JsonOption, QuietOption

app = PlaitTyper(help="Knowledge bases: create, add documents, search, list, remove.", no_args_is_help=True)
KbArg = Annotated[str, typer.Argument(help="The knowledge base's name.")]
MODES = ("keyword", "dense", "hybrid")
EXCERPT = 160
"""Characters of a hit's text the table shows (--json has all of it)."""


@app.command("create")
def create_command(
    name: Annotated[str, typer.Argument(help="A name: lower-case letters, digits, '_', '.', '-'.")],
    embedder: Annotated[str | None, typer.Option("--embedder", help="What embeds its chunks.")] = None,
    chunk_tokens: Annotated[int | None, typer.Option("--chunk-tokens", help="The longest chunk, in tokens.")] = None,
    description: Annotated[str, typer.Option("--description", help="What it holds.")] = "",
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Create an empty knowledge base."""
    from plait.runs.knowledge import create_base

    options: dict[str, Any] = {"description": description}
    if embedder is not None:
        options["embedder"] = embedder
    if chunk_tokens is not None:
        options["chunk_tokens"] = chunk_tokens
    with store_for(db) as store:
        base = create_base(store, name, **options)
    if json_output:
        print_json(_base_json(base))
        return
    sys.stderr.write(f"knowledge base {base.name} created (embedder {base.embedder}, chunks of at most "
                     f"{base.chunk_tokens} tokens); add documents: plait kb add {base.name} FILE...\n")  # fmt: skip


@app.command("add")
def add_command(
    kb: KbArg,
    files: Annotated[list[Path], typer.Argument(help="Text, Markdown, HTML, PDF or DOCX files.")],
    meta: Annotated[
        list[str], typer.Option("--meta", help="Metadata of every file given, key=value (repeatable).")
    ] = [],  # noqa: B006
    db: DbOption = None,
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Add or update documents and ingest them here: only new and changed files are parsed, and
    only chunks the base has no vector for are embedded. Exit 1 when a document failed."""
    from plait.cli import interrupt
    from plait.runs.knowledge import DocumentUpload, add_documents, documents
    from plait.runs.session import RunSession

    metadata = dict(_pair(item) for item in meta)
    uploads = [DocumentUpload(path.name, _read(path), None, metadata) for path in files]
    with store_for(db) as store:
        ingestion = add_documents(store, kb, uploads)
        if ingestion.run_id is not None:
            if not quiet:
                sys.stderr.write(f"ingesting {len(ingestion.queued)} documents (run {ingestion.run_id})\n")
            session = RunSession(store, None)
            try:
                interrupt.run(session.finish(ingestion.run_id), cleanup=session.aclose)
            except interrupt.Interrupted:
                sys.stderr.write(f"interrupted: resume with plait resume {ingestion.run_id}\n")
                raise typer.Exit(interrupt.EXIT_INTERRUPTED) from None
        given = {u.name for u in uploads}
        shown = [d for d in documents(store, kb) if d.name in given]
    if json_output:
        print_json({"run_id": ingestion.run_id, "documents": [_document_json(d) for d in shown]})
    else:
        _documents_table(shown)
    if any(d.status == "failed" for d in shown):
        raise typer.Exit(EXIT_FAILED)


@app.command("search")
def search_command(
    kb: KbArg,
    query: Annotated[str, typer.Argument(help="What to search for.")],
    mode: Annotated[str | None, typer.Option("--mode", help="keyword | dense | hybrid (default).")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, max=50, help="How many hits (default 5).")] = None,
    min_score: Annotated[float | None, typer.Option("--min-score", help="Leave out hits scoring less.")] = None,
    document: Annotated[list[str], typer.Option("--document", help="Only in this document (repeatable).")] = [],  # noqa: B006
    heading: Annotated[str | None, typer.Option("--heading", help="Only under this heading path.")] = None,
    section: Annotated[bool, typer.Option("--section", help="Show each hit's whole section.")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Search a knowledge base, as a RETRIEVE node with these settings would."""
    from plait.cli import interrupt
    from plait.runs.knowledge import search_result, start_search
    from plait.runs.session import RunSession

    if mode is not None and mode not in MODES:
        fail(f"--mode '{mode}' is not one of {', '.join(MODES)}")
    settings: dict[str, Any] = {"mode": mode, "top_k": top_k, "min_score": min_score,
                                "expand": "section" if section else None}  # fmt: skip
    if document or heading:
        settings["filters"] = {"documents": document or None, "heading": heading}
    settings = {key: value for key, value in settings.items() if value is not None}
    with store_for(db) as store:
        run_id = start_search(store, kb, query, settings)
        session = RunSession(store, None)
        interrupt.run(session.finish(run_id), cleanup=session.aclose)
        found = search_result(store, run_id)
    if json_output:
        print_json({"run_id": run_id, **found})
        return
    _hits_table(found)


@app.command("ls")
def ls_command(
    kb: Annotated[str | None, typer.Argument(help="List this base's documents (default: every base).")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """The knowledge bases, or one base's documents with how their ingestion stands."""
    from plait.runs.knowledge import documents

    with store_for(db) as store:
        if kb is not None:
            shown = documents(store, kb)
            if json_output:
                print_json([_document_json(d) for d in shown])
            elif not shown:
                sys.stderr.write(f"knowledge base {kb} has no documents; add some: plait kb add {kb} FILE...\n")
            else:
                _documents_table(shown)
            return
        bases = store.knowledge.bases()
        counts = {b.id: store.knowledge.documents(b.id) for b in bases}
        where = store_named(store, db)
    if json_output:
        print_json([_base_json(b) | {"documents": len(counts[b.id])} for b in bases])
        return
    if not bases:
        sys.stderr.write(f"no knowledge bases in {where}; create one: plait kb create NAME\n")
        return
    from rich.table import Table

    table = Table("name", "documents", "chunks", "embedder", "generation", "description")
    for b in bases:
        docs = [d for d in counts[b.id] if d.status != "removed"]
        table.add_row(b.name, str(len(docs)), str(sum(d.chunks for d in docs)), b.embedder, str(b.generation),
                      b.description)  # fmt: skip
    print_table(table)


@app.command("rm")
def rm_command(
    kb: KbArg,
    document: Annotated[str | None, typer.Argument(help="Remove this document (name or id) only.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Delete the whole base without asking.")] = False,
    db: DbOption = None,
) -> None:
    """Remove a document (its chunks are searched no more), or delete the whole base with --yes."""
    from plait.runs.knowledge import remove_document

    with store_for(db) as store:
        if document is not None:
            change = remove_document(store, kb, document)
            sys.stderr.write(f"{document}: {change.removed} chunks removed (generation {change.generation})\n")
            return
        base = store.knowledge.get(kb)
        if not yes:
            hint = f"to go ahead: plait kb rm {base.name} --yes; to remove one document: plait kb rm {base.name} NAME"
            fail(f"this deletes knowledge base {base.name} with its documents and chunks", hint)
        store.knowledge.delete(base.id)
    sys.stderr.write(f"knowledge base {kb} deleted\n")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", "check the path")


def _pair(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        fail(f"--meta '{item}' is not key=value", "e.g. --meta team=support")
    return key, value


def _base_json(base: Any) -> dict[str, Any]:
    return {"id": base.id, "name": base.name, "description": base.description, "embedder": base.embedder,
            "chunk_tokens": base.chunk_tokens, "generation": base.generation}  # fmt: skip


def _document_json(d: Any) -> dict[str, Any]:
    return {"id": d.id, "name": d.name, "version": d.version, "status": str(d.status), "error": d.error,
            "chunks": d.chunks, "size": d.size, "media_type": d.media_type, "metadata": d.metadata,
            "run_id": d.run_id}  # fmt: skip


def _documents_table(shown: list[Any]) -> None:
    from rich.table import Table

    table = Table("document", "version", "status", "chunks", "run", "error")
    for d in shown:
        table.add_row(d.name, str(d.version), str(d.status), str(d.chunks), (d.run_id or "")[:8], d.error or "")
    print_table(table)


def _hits_table(found: dict[str, Any]) -> None:
    from rich.table import Table

    hits = found["hits"]
    sys.stderr.write(f"{len(hits)} hits for {found['query']!r} in {found['knowledge_base']} "
                     f"({found['mode']}, generation {found['generation']})\n")  # fmt: skip
    table = Table("#", "score", "ranks", "document", "heading", "text")
    for rank, hit in enumerate(hits, 1):
        ranks = " ".join(f"{k} {v}" for k, v in hit["ranks"].items() if v is not None)
        text = " ".join(hit["text"].split())
        table.add_row(str(rank), f"{hit['score']:.4f}", ranks, hit["document"], " > ".join(hit["heading_path"]),
                      text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…")  # fmt: skip
    print_table(table)
