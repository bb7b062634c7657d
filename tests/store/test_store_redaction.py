"""The last line of defence: attempts and errors are redacted as they are written, whoever built
them (a provider, a tool, the engine), on both backends."""

from __future__ import annotations

import uuid

from store_helpers import new_run

from plait.model.enums import NodeStatus, RunStatus
from plait.redact import register
from plait.store import Store
from plait.store.writes import Claim, EndRun, Finish


def test_attempts_and_errors_are_stored_redacted(store: Store) -> None:
    key = f"tool-secret-{uuid.uuid4().hex}"
    register(key)
    run_id = new_run(store).id
    assert store.runs.acquire_lease(run_id, "me", 30)
    (claimed,) = store.runs.nodes.write_one([Claim(run_id, "classify", 0, "me")])
    error = {"kind": "http", "message": f"HTTP 401: Incorrect API key provided: {key}"}
    attempts = [{"error": f"echoed {key} via http://u:{key}@h/v1", "decisions": [{"error": key}]}]
    store.runs.nodes.write_one([Finish(run_id, claimed.id, "me", NodeStatus.FAILED, attempts=attempts, error=error)])
    store.runs.nodes.write_one([EndRun(run_id, "me", RunStatus.FAILED, error=error)])
    node = store.runs.node_run(claimed.id)
    assert node.error == {"kind": "http", "message": "HTTP 401: Incorrect API key provided: ***"}
    assert node.attempts == [{"error": "echoed *** via http://***@h/v1", "decisions": [{"error": "***"}]}]
    assert store.runs.get(run_id).error == node.error
