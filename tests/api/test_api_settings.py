"""/api/settings on a real server (SQLite and PostgreSQL): a change of the `chat` role applies to
the next run without a restart while a call in flight finishes on the provider it started on; a
change of `[resources]` applies to the resource gate of the next run; refused changes (422
naming the key, 409 stale, 403 fixed or read-only) leave the revision, the settings and the
history as they were; history and revert; no key's value in any response or stored row."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from plait.store import Store
from plait.testing import served_app, wait_for
from tests.worker.counting_server import counting_server

CANARY = "sk-canary-settings-5e1f0a2b9c7d"
GRAPH = {
    "id": "ask",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [
        {"id": "think", "type": "LLM_CALL", "user_prompt_tpl": "Think about {{ input.text }}"},
        {"id": "shape", "type": "TRANSFORM", "transform_expr": "({answer: current})"},
    ],
    "edges": [{"source": "think", "target": "shape"}, {"source": "shape", "target": "END"}],
}


def write_config(folder: Path, old_url: str, extra: str = "") -> Path:
    """`old`: an OpenAI-compatible server of the test's (held until released), serving `chat`;
    `new`: a scripted provider answering "from new"."""
    (folder / "new.yaml").write_text(json.dumps({"responses": [{"text": "from new"}]}))
    path = folder / "plait.toml"
    path.write_text(
        f'[[providers]]\nid = "old"\nkind = "openai"\nbase_url = "{old_url}"\nmodels = [{{ name = "m" }}]\n\n'
        '[[providers]]\nid = "new"\nkind = "scripted"\nfile = "new.yaml"\n\n'
        '[roles]\nchat = "old/m"\n\n'
        '[settings]\nkey_envs = ["PLAIT_TEST_SETTINGS_KEY"]\n' + extra
    )
    return path


@contextmanager
def serving(store: Store, config: Path) -> Iterator[httpx.Client]:
    with served_app(store=store, config=str(config)) as served, served.client() as client:
        assert client.post("/api/graphs", json={"source": json.dumps(GRAPH)}).status_code == 201
        yield client


def start(client: httpx.Client, text_: str = "birds") -> str:
    response = client.post("/api/runs", json={"graph": "ask", "input": {"text": text_}})
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


def ended(client: httpx.Client, run_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        run = client.get(f"/api/runs/{run_id}").json()
        return run if run["status"] in ("completed", "failed") and not run["executing_here"] else None

    return dict(wait_for(done, timeout=60, what=f"run {run_id} to end"))


def put(client: httpx.Client, base: int, settings: dict[str, Any], note: str | None = None) -> httpx.Response:
    return client.put("/api/settings", json={"base_revision": base, "settings": settings, "note": note})


def test_a_role_change_applies_to_the_next_run_while_a_call_in_flight_finishes_on_its_provider(
    store: Store, tmp_path: Path
) -> None:
    gate = threading.Event()
    with (
        counting_server(latency_s=0, gate=gate) as (url, counts),
        serving(store, write_config(tmp_path, url)) as client,
    ):
        first = start(client)
        wait_for(lambda: counts.in_flight == 1, timeout=60, what="the first run's call to reach the old provider")

        changed = put(client, 0, {"roles": {"chat": ["new/scripted"]}}, note="switch to new")
        assert changed.status_code == 200, changed.text
        assert changed.json()["revision"] == 1
        assert changed.json()["roles"]["chat"] == ["new/scripted"]
        assert changed.json()["sources"]["roles.chat"] == "settings rev 1"

        second = ended(client, start(client))
        assert second["status"] == "completed", second
        assert second["output"] == {"answer": "from new"}
        assert counts.in_flight == 1  # the first run's call is still held by the old provider

        gate.set()
        first_run = ended(client, first)
        assert first_run["output"] == {"answer": "ok"}  # finished on the settings it started with
        served_by = {
            run["id"]: (node["attempts"][-1]["provider"], node["attempts"][-1]["model"])
            for run in (first_run, second)
            for node in run["nodes"]
            if node["node_id"] == "think"
        }
        assert served_by == {first: ("old", "m"), second["id"]: ("new", "scripted")}
        assert len(counts.arrivals) == 1


def test_a_resources_change_applies_to_the_gate_of_the_next_run(store: Store, tmp_path: Path) -> None:
    with counting_server(latency_s=0) as (url, _counts), serving(store, write_config(tmp_path, url)) as client:
        assert ended(client, start(client))["status"] == "completed"
        refuse_all = {"resources": {"disk_free_gb_min": 1e12, "on_disk": "reject"}}
        assert put(client, 0, refuse_all).status_code == 200
        rejected = ended(client, start(client))
        assert rejected["status"] == "failed"
        assert "lack of resources" in json.dumps(rejected["error"])
        reverted = client.post("/api/settings/history/1/revert", json={"note": "too strict"})
        assert reverted.status_code == 200, reverted.text
        assert reverted.json()["revision"] == 2
        assert ended(client, start(client))["status"] == "completed"


def test_refused_changes_leave_everything_as_it_was_and_no_key_is_ever_shown(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_TEST_SETTINGS_KEY", CANARY)
    config = write_config(tmp_path, "http://127.0.0.1:9/v1", "fixed = ['tools']\n")
    with serving(store, config) as client:
        added = {"kind": "openai", "base_url": "https://elsewhere.example/v1", "api_key_env": "PLAIT_TEST_SETTINGS_KEY"}
        made = put(client, 0, {"providers": {"extra": added}}, note="a second endpoint")
        assert made.status_code == 200, made.text
        extra = next(p for p in made.json()["providers"] if p["id"] == "extra")
        assert (extra["key_set"], extra["from"], extra["api_key_env"]) == (True, "settings", "PLAIT_TEST_SETTINGS_KEY")
        before = [client.get("/api/settings").json(), client.get("/api/settings/history").json()]

        invalid = put(client, 1, {"providers": {"extra": {"rpm": -1}}})
        assert invalid.status_code == 422
        assert invalid.json()["error"]["code"] == "config_invalid"
        assert "settings.providers.extra.rpm" in invalid.json()["error"]["message"]
        foreign = put(
            client, 1, {"providers": {"x": {"kind": "openai", "base_url": "https://a.example", "api_key_env": "PATH"}}}
        )
        assert foreign.status_code == 422
        assert (
            "PATH is not a variable the deployer lets providers take a key from" in foreign.json()["error"]["message"]
        )
        stale = put(client, 0, {"roles": {"chat": ["new/scripted"]}})
        assert stale.status_code == 409
        assert stale.json()["error"]["code"] == "settings_stale"
        assert "GET /api/settings" in stale.json()["error"]["hint"]  # the hint in HTTP words
        fixed = put(client, 1, {"tools": {"timeout_s": 5}})
        assert fixed.status_code == 403
        assert fixed.json()["error"]["code"] == "settings_fixed"
        assert "[settings] fixed" in fixed.json()["error"]["hint"]
        assert client.post("/api/settings/history/7/revert").status_code == 404
        assert [client.get("/api/settings").json(), client.get("/api/settings/history").json()] == before

        [entry] = before[1]
        assert (entry["revision"], entry["note"], entry["by"]) == (1, "a second endpoint", "api")
        assert entry["changes"][0]["key"] == "providers.extra.api_key_env"
        texts = [made.text, invalid.text, foreign.text, stale.text, fixed.text, json.dumps(before)]
        texts += [client.get(path).text for path in ("/api/settings", "/api/settings/history", "/api/providers")]
        assert all(CANARY not in t for t in texts)
    with store.db.connect() as conn:
        rows = conn.execute(text("SELECT * FROM plait_settings_change")).all()
    assert len(rows) == 1
    assert CANARY not in repr(rows)


def test_a_server_whose_settings_are_read_only_refuses_every_change(store: Store, tmp_path: Path) -> None:
    with serving(store, write_config(tmp_path, "http://127.0.0.1:9/v1", "enabled = false\n")) as client:
        shown = client.get("/api/settings").json()
        assert (shown["editable"], shown["revision"]) == (False, 0)
        refused = put(client, 0, {"roles": {"chat": ["new/scripted"]}})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "settings_disabled"
        assert "[settings] enabled = true" in refused.json()["error"]["hint"]
        assert client.get("/api/settings").json()["revision"] == 0
