"""`client.kb` from Python: the same knowledge bases as `plait kb`, the blocking and the async client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plait import AsyncClient, Client
from plait.errors import PlaitError
from plait.runs.replay_search import SearchReplay
from tests.knowledge.documents import GUIDE, html_page

pytestmark = pytest.mark.usefixtures("embedder_installed")


def test_a_base_filled_searched_and_emptied_from_python(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db") as client:
        base = client.kb.create("handbook", chunk_tokens=24)
        assert base.chunk_tokens == 24
        added = client.kb.add("handbook", {"guide.md": GUIDE, "faq.html": html_page()}, metadata={"team": "ops"})
        assert {d.name: str(d.status) for d in added} == {"guide.md": "ready", "faq.html": "ready"}
        found = client.kb.search("handbook", "rotate the encryption keys", mode="keyword", top_k=2)
        assert found["hits"][0]["heading_path"] == ["Handbook", "Backups", "Keys"]
        assert client.get_run(found["run_id"]).run.status == "completed"
        [retrieve] = [n for n in client.get_run(found["run_id"]).nodes if n.node_id == "retrieve"]
        replayed = client.replay(retrieve.id)  # a search replays without a model
        assert isinstance(replayed, SearchReplay)
        assert replayed.same
        assert replayed.replayed == [hit["chunk_id"] for hit in found["hits"]]
        with pytest.raises(PlaitError, match=r"settings at input\.settings are not valid"):
            client.kb.search("handbook", "keys", mode="fuzzy")
        assert client.kb.remove("handbook", "faq.html").removed > 0
        assert [d.name for d in client.kb.documents("handbook") if str(d.status) == "ready"] == ["guide.md"]
        assert client.kb.delete("handbook")
        assert client.kb.list() == []


def test_the_async_client_searches_the_same_way(tmp_path: Path) -> None:
    async def go() -> list[str]:
        async with AsyncClient(tmp_path / "p.db") as client:
            await client.kb.create("handbook")
            await client.kb.add("handbook", {"guide.md": GUIDE})
            found = await client.kb.search("handbook", "how often do backups run", mode="dense", top_k=1)
            return [hit["heading_path"][-1] for hit in found["hits"]]

    assert asyncio.run(go()) == ["Backups"]
