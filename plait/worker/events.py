"""Run events across processes: what a worker's engine emits is published on Redis (one
channel), and a server or a `plait run --queue` subscribes, so SSE, the workbench and the CLI's
progress show nodes executed elsewhere.

Delivery is best effort, as the in-process bus is: an event is never the record (the store is),
so a subscriber that missed some (it connected late, Redis restarted) reads the run from the
store, as every page and `plait runs show` do.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from plait.engine.events import Event

CONTROL = "plait:control:{queue}"
"""Requests to the workers of a queue: `{"stop": RUN_ID}` (a pause or a cancel asked elsewhere)."""
CHANNEL = "plait:events:{queue}"
"""One channel per queue: Redis pub/sub ignores the database number, so deployments (or tests)
sharing a Redis are kept apart by their queue's name."""
log = logging.getLogger("plait.worker")


def encode(event: Event) -> str:
    return json.dumps({"kind": event.kind, "run_id": event.run_id, "node_id": event.node_id, "data": event.data,
                       "at": event.at}, default=str)  # fmt: skip


def decode(text: str | bytes) -> Event:
    value: dict[str, Any] = json.loads(text)
    return Event(value["kind"], value["run_id"], value.get("node_id"), value.get("data") or {}, value["at"])


class EventPublisher:
    """Publishes each event from a thread of its own: the engine's loop never waits on Redis."""

    def __init__(self, url: str, queue_name: str):
        import redis

        self._redis = redis.Redis.from_url(url)
        self._channel = CHANNEL.format(queue=queue_name)
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._publish, name="plait-events-out", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        self._queue.put(encode(event))

    def _publish(self) -> None:
        while (text := self._queue.get()) is not None:
            try:
                self._redis.publish(self._channel, text)
            except Exception as exc:  # Redis away: this event is lost, the store still has the run
                log.warning("an event could not be published: %s", exc)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)
        self._redis.close()


def ask_to_stop(url: str, queue_name: str, run_id: str) -> None:
    """Ask the workers of `queue_name` to give `run_id` back without announcing it again."""
    import redis

    with redis.Redis.from_url(url) as client:
        client.publish(CONTROL.format(queue=queue_name), json.dumps({"stop": run_id}))


class EventFollower:
    """Calls `deliver(event)` (on a thread of its own) for each event the workers publish;
    reconnects when Redis goes away."""

    def __init__(self, url: str, queue_name: str, deliver: Callable[[Any], None], *, channel: str = CHANNEL,
                 raw: bool = False):  # fmt: skip
        """`channel`, `raw`: follow another channel of the queue, its messages given as text."""
        import redis

        self._redis = redis.Redis.from_url(url)
        self._channel = channel.format(queue=queue_name)
        self._deliver: Callable[[Any], None] = deliver
        self._raw = raw
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="plait-events-in", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """Whether the subscription is in place (events published from now on arrive)."""
        return self._ready.wait(timeout)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                pubsub = self._redis.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
                pubsub.subscribe(self._channel)
                pubsub.get_message(timeout=1.0)  # the subscription's confirmation
                self._ready.set()
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is not None and message.get("type") == "message":
                        data = message["data"]
                        self._deliver(data.decode() if self._raw else decode(data))
                pubsub.close()
            except Exception as exc:  # Redis restarting: subscribe again
                log.warning("following worker events: %s; reconnecting", exc)
                self._stop.wait(1.0)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._redis.close()
