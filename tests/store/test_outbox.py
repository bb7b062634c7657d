"""The outbox on both stores: a message written with its run is sent once by a relay and marked
sent; one the broker refused stays unsent for the next relay; sent ones are pruned after a day,
unsent ones never."""

from __future__ import annotations

import time

import pytest

from plait.store import Store
from plait.store.outbox import KEEP_SENT_S


def test_messages_are_sent_in_order_kept_when_refused_and_pruned_once_old(store: Store) -> None:
    store.outbox.announce("run-a", "start")
    store.outbox.announce("run-b", "start")
    sent: list[str] = []

    def refuse_b(run_id: str, reason: str) -> None:
        if run_id == "run-b":
            raise ConnectionError("the broker is away")
        sent.append(run_id)

    with pytest.raises(ConnectionError):
        store.outbox.relay(refuse_b)
    assert sent == ["run-a"]
    assert store.outbox.unsent() == 1  # run-b waits for the next relay
    assert store.outbox.relay(lambda run_id, reason: sent.append(run_id)) == 1
    assert sent == ["run-a", "run-b"]
    store.outbox.announce("run-c", "start")
    store.outbox.prune(now=time.time() + KEEP_SENT_S + 1)
    assert store.outbox.relay(lambda run_id, reason: sent.append(run_id)) == 1  # the unsent one stayed
    assert sent[-1] == "run-c"
    assert store.outbox.unsent() == 0
