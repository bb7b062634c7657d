"""`client.skills` from Python: a skill file added, a graph object stored as its second version,
read, exported, used by a graph, deleted; a Markdown skill imported on the scripted designer with
the async client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from plait import AsyncClient, Client
from plait.compile import GraphInvalid
from tests.cli.test_skills_cli import EXAMPLE, MARKDOWN, RULES


def test_a_skill_is_added_updated_read_exported_used_and_deleted(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"responses": RULES}))
    with Client(tmp_path / "p.db", llm=f"scripted:{rules}") as client:
        first = client.skills.add(EXAMPLE, tags=["text"])
        assert (first.ref, first.tags) == ("summarize@1", ["text"])
        with pytest.raises(GraphInvalid):
            client.skills.update("summarize", {**first.document, "edges": []}, note="no edges")
        second = client.skills.update("summarize", first.document, note="again")
        assert second.version == 2
        assert [s.name for s in client.skills.list(tag="text")] == ["summarize"]
        assert client.skills.get("summarize", 1).parameters == first.parameters
        assert "input_mapping:\n    text: document" in client.skills.export("summarize", 1)
        graph = {
            "plait": 1,
            "id": "digest",
            "schemas": [{"id": "s", "schema": {"type": "object", "properties": {"summary": {"type": "string"}}}}],
            "nodes": [{"id": "sum", "type": "SKILL", "skill": "summarize@1", "inputs": {"document": "{{ input.d }}"}}],
            "edges": [{"source": "sum", "target": "END", "schema_id": "s"}],
        }
        client.save_graph(graph)
        stored = client.get_graph("digest")
        assert [n.id for n in stored.graph.nodes] == ["__sum__key_points", "__sum__condense"]
        client.skills.delete("summarize")
        assert client.skills.list() == []


def test_a_markdown_skill_is_imported_with_the_async_client(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"responses": RULES}))

    async def main() -> None:
        async with AsyncClient(tmp_path / "p.db", llm=f"scripted:{rules}") as client:
            skill = await client.skills.import_markdown(MARKDOWN.format(name="release_notes"))
            assert (skill.ref, [p["name"] for p in skill.parameters]) == ("release_notes@1", ["notes"])

    asyncio.run(main())
