"""`client.chat` from Python: the same turns as `plait chat`, the blocking and the async client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from plait import AsyncClient, Client
from plait.errors import PlaitError
from tests.chat_rules import RULES


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "designer.json"
    path.write_text(json.dumps({"responses": RULES}))
    return f"scripted:{path}"


def test_a_question_answered_accepted_and_run(tmp_path: Path, script: str) -> None:
    with Client(tmp_path / "p.db", llm=script) as client:
        session = client.chat.open("Translator")
        [asked, card] = client.chat.send(session.id, "Translate my notes")
        assert (asked.kind, card.kind) == ("text", "questions")
        with pytest.raises(PlaitError, match="not a choice"):
            client.chat.answer(session.id, {"lang": "Klingon"})
        draft = client.chat.answer(session.id, {"lang": "German"})[-1]
        assert draft.content["status"] == "proposed"
        assert client.chat.accept(session.id, draft.draft_id).content["graph"] == "translator"
        started, ended = client.chat.run(session.id, {"notes": "Hello all"})
        assert started.content["status"] == "pending"
        assert ended.content["status"] == "completed"
        assert ended.content["output"]["text"] == "Hallo zusammen"
        assert [m.seq for m in client.chat.history(session.id)] == list(range(1, 8))
        assert [s.id for s in client.chat.sessions()] == [session.id]


def test_the_async_client_rejects_and_the_graph_stays(tmp_path: Path, script: str) -> None:
    async def main() -> None:
        async with AsyncClient(tmp_path / "p.db", llm=script) as client:
            session = await client.chat.open("Notes")
            draft = (await client.chat.send(session.id, "Summarise my meeting notes"))[-1]
            assert draft.content["rounds"] == 2
            assert (await client.chat.reject(session.id, draft.draft_id)).content["status"] == "rejected"
            assert [g for g in await client.list_graphs() if g.listed.slug == "notes"] == []

    asyncio.run(main())
