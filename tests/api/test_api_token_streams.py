"""Revoking a token ends the event streams opened with it (within 1 s), not the others'; and the
stream's Last-Event-ID is a bounded whole number (10,000 digits were a 500)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import Api, import_graphs, read_events, wait_for

from plait.store import Store
from plait.testing import served_app


class Follower:
    """Reads a run's event stream on a thread: the events seen, and when the stream ended."""

    def __init__(self, url: str, run_id: str, token: str) -> None:
        self.events: list[str] = []
        self.ended_at: float | None = None
        self._args = (url, run_id, token)
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self) -> None:
        url, run_id, token = self._args
        headers = {"Authorization": f"Bearer {token}"}
        with (
            httpx.Client(base_url=url, timeout=60) as client,
            client.stream("GET", f"/api/runs/{run_id}/events", headers=headers) as response,
        ):
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("event: "):
                    self.events.append(line.removeprefix("event: "))
        self.ended_at = time.monotonic()


@pytest.fixture
def guarded(store: Store, script: Path) -> Iterator[tuple[str, dict[str, str]]]:
    tokens = {name: store.tokens.create(name)[1] for name in ("revoked", "kept")}
    with served_app(store=store, llm=f"scripted:{script}", require_auth=True) as served:
        yield served.url, tokens


def test_revoking_a_token_ends_its_open_streams_within_a_second(
    guarded: tuple[str, dict[str, str]], store: Store
) -> None:
    url, tokens = guarded
    auth = {"Authorization": f"Bearer {tokens['kept']}"}
    with httpx.Client(base_url=url, timeout=30, headers=auth) as client:
        import_graphs(client)
        run_id = client.post("/api/runs", json={"graph": "slow", "input": {"text": "x"}}).json()["run_id"]
        revoked, kept = Follower(url, run_id, tokens["revoked"]), Follower(url, run_id, tokens["kept"])
        wait_for(lambda: "node:start" in revoked.events and "node:start" in kept.events, what="both streams")
        store.tokens.revoke("revoked")  # as `plait token revoke` does, from another connection
        revoked_at = time.monotonic()
        revoked.thread.join(timeout=10)
        assert revoked.ended_at is not None, "the revoked token's stream is still open"
        assert revoked.ended_at - revoked_at < 1.0
        assert kept.thread.is_alive(), "a stream of a token that was not revoked ended too"
        refused = client.get(f"/api/runs/{run_id}/events", headers={"Authorization": f"Bearer {tokens['revoked']}"})
        assert refused.status_code == 401
        assert client.post(f"/api/runs/{run_id}/cancel").status_code == 200
        kept.thread.join(timeout=20)
        assert kept.events[-1] == "run:cancelled"


@pytest.mark.parametrize("value", ["9" * 10_000, "-1", "+5", "1e3", str(2**63)])
def test_a_last_event_id_that_no_stream_sent_is_422(api: Api, value: str) -> None:
    run_id = api.start("echo")
    response = api.client.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": value})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert "whole number from 0 to" in error["message"]
    assert len(error["message"]) < 300  # the value is quoted shortened, not 10,000 digits back


def test_a_last_event_id_beyond_the_last_event_resets_the_stream(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    status, events = read_events(api.client, run_id, last_id=2**63 - 1)
    assert status == 200
    assert events[0]["event"] == "stream:reset"
