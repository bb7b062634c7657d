"""A chat's memory over HTTP, on a real server (SQLite and PostgreSQL): facts listed, one
corrected (201, the old one superseded and in the new one's history, recorded as the caller),
one retracted; a fact no longer active refuses both with 409, an unknown one 404."""

from __future__ import annotations

import pytest

from plait.runs.memory import remember
from plait.store import Store
from plait.testing import served_app

pytestmark = pytest.mark.usefixtures("embedder_installed")


def test_facts_are_listed_corrected_and_retracted_over_http(store: Store) -> None:
    made = remember(store, "chat:s1", [
        {"subject": "Ada", "predicate": "lives in", "object": "Paris"},
        {"subject": "Ada", "predicate": "plays", "object": "the cello"},
    ], source={"messages": ["m1"]}, by="extractor")  # fmt: skip
    lives, plays = (f.id for f in made)
    with served_app(store=store) as served, served.client() as client:
        assert client.get("/api/memory").json() == [{"scope": "chat:s1", "facts": 2}]
        listed = client.get("/api/memory/facts", params={"scope": "chat:s1"}).json()
        assert [f["object"] for f in listed] == ["paris", "the cello"]
        corrected = client.post(f"/api/memory/facts/{lives}/correct", json={"object": "Lyon", "note": "moved"})
        assert corrected.status_code == 201, corrected.text
        new = corrected.json()
        assert (new["object"], new["supersedes"], new["created_by"]) == ("lyon", lives, "api")
        shown = client.get(f"/api/memory/facts/{new['id']}").json()
        assert [f["id"] for f in shown["history"]] == [lives, new["id"]]
        assert shown["history"][0]["status"] == "superseded"
        assert client.post(f"/api/memory/facts/{lives}/correct", json={"object": "Nice"}).status_code == 409
        assert client.post(f"/api/memory/facts/{plays}/retract", json={"note": "wrong"}).json()["status"] == "retracted"
        assert client.post(f"/api/memory/facts/{plays}/retract", json={}).status_code == 409
        assert client.post(f"/api/memory/facts/{new['id']}/correct", json={}).status_code == 422
        assert client.get("/api/memory/facts/nope").status_code == 404
        active = client.get("/api/memory/facts", params={"scope": "chat:s1"}).json()
        assert [f["object"] for f in active] == ["lyon"]
        everything = client.get("/api/memory/facts", params={"scope": "chat:s1", "history": True}).json()
        assert len(everything) == 3
