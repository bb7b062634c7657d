"""GET /api/runs/{id}/events: the engine's events over SSE, numbered per run, resumable with
Last-Event-ID without loss or duplicates; rebuilt from the store for a run this server has
not watched."""

from __future__ import annotations

from pathlib import Path

from api_helpers import Api, read_events

from plait.store import Store
from plait.testing import served_app


def kinds(events: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(e["event"], e["node_id"]) for e in events]


def test_a_run_streams_every_event_then_ends(api: Api) -> None:
    run_id = api.start("echo")
    status, events = read_events(api.client, run_id)
    assert status == 200
    assert kinds(events) == [
        ("execution.started", None),
        ("node:start", "draft"),
        ("node:complete", "draft"),
        ("node:start", "polish"),
        ("node:complete", "polish"),
        ("workflow:complete", None),
    ]
    assert [e["id"] for e in events] == [1, 2, 3, 4, 5, 6]
    assert events[-1]["data"]["output"] == {"text": "polished"}
    status, rest = read_events(api.client, run_id, last_id=3)
    assert [e["id"] for e in rest] == [4, 5, 6]
    assert read_events(api.client, run_id, last_id=6)[0] == 204  # ended, nothing newer
    bad = api.client.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "abc"})
    assert bad.status_code == 422


def test_reconnecting_with_last_event_id_loses_and_repeats_nothing(api: Api) -> None:
    run_id = api.start("reviewed")
    _, first = read_events(api.client, run_id, until=lambda e: e["event"] == "run:paused")
    assert first[-1]["node_id"] == "check"
    assert first[-1]["data"]["review_prompt"] == "Check the draft"
    api.wait_status(run_id, "paused")
    answered = api.client.post(f"/api/runs/{run_id}/nodes/check/review", json={"approve": True})
    assert answered.status_code == 200
    _, second = read_events(api.client, run_id, last_id=first[-1]["id"])
    ids = [e["id"] for e in first + second]
    assert ids == list(range(1, len(ids) + 1))
    assert second[-1]["event"] == "workflow:complete"
    assert ("node:complete", "polish") in kinds(second)


def test_corrections_and_control_are_events_too(api: Api) -> None:
    run_id = api.start("echo")
    _, before = read_events(api.client, run_id)
    api.client.post(f"/api/runs/{run_id}/nodes/draft/override", json={"value": {"text": "x"}})
    _, stale = read_events(api.client, run_id, last_id=before[-1]["id"])
    assert kinds(stale) == [("node:overridden", "draft"), ("node:stale", "polish")]
    slow = api.start("slow")
    _, started = read_events(api.client, slow, until=lambda e: e["event"] == "node:start" and e["node_id"] == "crawl")
    assert api.client.post(f"/api/runs/{slow}/cancel").status_code == 200
    _, ended = read_events(api.client, slow, last_id=started[-1]["id"])
    assert ended[-1]["event"] == "run:cancelled"


def test_a_run_from_before_the_server_started_is_rebuilt_from_the_store(api: Api, store: Store, script: Path) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    with served_app(store=store, llm=f"scripted:{script}") as served, served.client() as other:
        status, events = read_events(other, run_id)
    assert status == 200
    assert kinds(events) == [
        ("execution.started", None),
        ("node:start", "draft"),
        ("node:complete", "draft"),
        ("node:start", "polish"),
        ("node:complete", "polish"),
        ("workflow:complete", None),
    ]
    assert all(e["data"]["replayed"] for e in events)


def test_the_replay_buffer_is_bounded_in_bytes_and_says_what_it_dropped() -> None:
    """Large events of many runs: the buffer keeps within its byte bound by dropping the oldest
    events of the least recently active runs; a client that asks for them is told of the gap."""
    from plait.api.events import EventLog
    from plait.engine.events import EventBus, NodeFailed

    log = EventLog(EventBus(), max_bytes=1_000_000)
    for run in range(20):
        for _ in range(10):
            log.emit(NodeFailed(f"run{run}", "a", error={"message": "x" * 20_000}))
    assert 900_000 < log.bytes <= 1_000_000
    assert not log.has("run0")  # the least recently active run went first, whole
    events, _ = log.listen("run19", after=0)
    assert len(events) == 10  # the newest run is kept whole
    oldest_kept = next(run for run in range(20) if log.has(f"run{run}"))
    events, _ = log.listen(f"run{oldest_kept}", after=0)
    assert events[0].kind == "stream:gap"  # its first events were dropped: the client is told
    assert events[0].data["from"] == 1
