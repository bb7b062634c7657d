"""With only the embedded model, a new graph is designed by retrieval: the nearest shipped
starter, built as operations, named after the conversation and told the request; the reply says
a configured provider would design it from the words. No model is asked for it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plait.compile.operations import apply_operations
from plait.evolve.upload import check_upload
from plait.model.graph import GraphDef
from plait.runs._starters import nearest, operations_for, starters
from plait.runs.chat import Chat, ChatPorts
from plait.store import Store


async def _no_model(run_id: str) -> None:
    raise AssertionError(f"a model was asked (run {run_id}) for a design retrieval answers")


def _allowed(graph: GraphDef) -> None:
    """What this test process may execute: everything the starters hold."""


@pytest.mark.parametrize("starter", starters(), ids=lambda s: str(s.document["id"]))
def test_every_starter_builds_a_valid_graph_and_is_found_by_its_own_description(starter: Any) -> None:
    document, problems = apply_operations({"plait": 1, "id": "mine"}, operations_for(starter, "Do it.", "Mine"))
    assert problems == []
    result = check_upload(document)
    assert result.valid, [d.format() for d in result.errors]
    assert nearest(starter.description)[0] is starter


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("Summarise my meeting notes", "Summarise a text"),
        ("Sort incoming support emails into bugs and praise", "Classify and route"),
        ("Pull the invoice number and total from invoices", "Extract fields"),
        ("Translate subtitles into French", "Translate a text"),
        ("Write a blog post and let me check it before publishing", "Draft, review, finish"),
        ("For each chapter of a book write a summary", "Do the same for each item"),
    ],
)
def test_requests_find_the_starter_a_person_would_pick(request_text: str, expected: str) -> None:
    assert nearest(request_text)[0].name == expected


def test_a_new_graph_with_the_embedded_model_comes_from_the_nearest_starter(store: Store) -> None:
    chat = Chat(store, ChatPorts(drive=_no_model, check_graph=_allowed, llm={"llm": "local"}))
    session = chat.open("Support triage")
    [_, draft] = asyncio.run(chat.send(session.id, "Sort incoming support emails into bugs and praise"))
    content = draft.content
    assert content["status"] == "proposed"
    assert content["rounds"] == 0  # no designer run
    assert "Classify and route" in content["text"]
    assert "configure a provider" in content["text"]
    assert "+ node route" in content["lines"]
    stored = chat.accept(session.id, str(draft.draft_id))
    graph = store.graphs.get(stored.content["graph"]).graph
    assert graph.name == "Support triage"
    prompts = [n.system_prompt for n in graph.nodes if n.type == "LLM_CALL"]
    assert all("Sort incoming support emails" in (p or "") for p in prompts)
    assert store.runs.list(limit=10) == []
