"""Run events across processes: what a worker's engine emits is published on Redis (one
channel), and a server or a `plait run --queue` subscribes, so SSE, the workbench and the CLI's
progress show nodes executed elsewhere.

Delivery is best effort, as the in-process bus is: an event is never the record (the store is),
so a subscriber that missed some (it connected late, Redis restarted) reads the run from the
store, as every page and `plait runs show` do.

Whoever can write to Redis is not trusted with runs (the database is the trusted place): every
message on these channels is signed with a key the processes of a deployment share through
their database (`Seal`), and a message that is not signed with it, is signed for another
channel, is older than `FRESH_S` or was received before (a replay) is dropped. So a forged
`workflow:complete` never reaches a run's event stream, and a forged `stop` never stops a run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plait.engine.event_wire import WireEvent, to_wire
from plait.engine.events import Event

if TYPE_CHECKING:
    from plait.store import Store

CONTROL = "plait:control:{queue}"
"""Requests to the workers of a queue: `{"stop": RUN_ID}` (a pause or a cancel asked elsewhere)."""
CHANNEL = "plait:events:{queue}"
"""One channel per queue: Redis pub/sub ignores the database number, so deployments (or tests)
sharing a Redis are kept apart by their queue's name."""
log = logging.getLogger("plait.worker")
KEY_SETTING = "redis_signing_key"
"""Where the deployment's signing key is kept in the store (`plait_setting`)."""
FRESH_S = 60.0
"""A signed message older (or further in the future) than this is dropped: a replay of one
captured earlier cannot be delivered again. The clocks of a deployment's machines must agree
within it (NTP)."""
MAX_SEEN = 200_000
"""The most signatures remembered to recognise a replay within `FRESH_S`."""


def signing_key(store: Store) -> bytes:
    """The key every process of the deployment signs its Redis messages with: made by the first
    process that asks, kept in the database they share (trusted, unlike Redis)."""
    return bytes.fromhex(
        store.settings.get(KEY_SETTING) or store.settings.setdefault(KEY_SETTING, secrets.token_hex(32))
    )


class Seal:
    """Signs the messages of one channel, and opens only those signed for it, fresh and unseen.

    A sealed message is `v1 <hmac-sha256 hex> <unix time> <body>`; the MAC covers the channel's
    name, the time and the body."""

    def __init__(self, key: bytes, channel: str, *, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._channel = channel
        self._clock = clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._warned_at = 0.0

    def sign(self, body: str) -> str:
        at = f"{self._clock():.6f}"
        return f"v1 {self._mac(at, body)} {at} {body}"

    def open(self, text: str) -> str | None:
        """The body of a message signed for this channel, fresh and not seen before; None (and
        a warning, at most once a minute) for anything else."""
        parts = text.split(" ", 3)
        if len(parts) != 4 or parts[0] != "v1" or not hmac.compare_digest(parts[1], self._mac(parts[2], parts[3])):
            self._drop("a message not signed with this deployment's key")
            return None
        _, mac, at, body = parts
        now = self._clock()
        if abs(now - float(at)) > FRESH_S:
            self._drop(f"a signed message {now - float(at):.0f} s old (a replay, or a clock that is off)")
            return None
        with self._lock:
            if mac in self._seen:
                self._drop("a signed message received before (a replay)")
                return None
            self._seen[mac] = float(at)
            self._forget(now)
        return body

    def _mac(self, at: str, body: str) -> str:
        return hmac.new(self._key, f"{self._channel}\n{at}\n{body}".encode(), hashlib.sha256).hexdigest()

    def _forget(self, now: float) -> None:
        """Drop the signatures too old to be accepted again anyway (and the oldest past MAX_SEEN)."""
        while self._seen:
            mac, at = next(iter(self._seen.items()))  # the oldest received first
            if now - at <= FRESH_S and len(self._seen) <= MAX_SEEN:
                break
            del self._seen[mac]

    def _drop(self, what: str) -> None:
        now = time.monotonic()
        if now - self._warned_at >= 60.0:
            self._warned_at = now
            log.warning("dropped %s on %s: someone who can write to Redis is sending messages", what, self._channel)


def encode(event: WireEvent) -> str:
    """An event as its message on the channel: its wire name and payload, as SSE has them."""
    return json.dumps({"kind": event.kind, "run_id": event.run_id, "node_id": event.node_id, "data": event.data,
                       "at": event.at, "path": event.path}, default=str)  # fmt: skip


def decode(text: str | bytes) -> WireEvent:
    value: dict[str, Any] = json.loads(text)
    path = tuple((str(run_id), str(node_id)) for run_id, node_id in value.get("path") or ())
    return WireEvent(value["kind"], value["run_id"], value.get("node_id"), value.get("data") or {}, value["at"], path)


class EventPublisher:
    """Publishes each event from a thread of its own: the engine's loop never waits on Redis."""

    def __init__(self, url: str, queue_name: str, key: bytes):
        import redis

        self._redis = redis.Redis.from_url(url)
        self._channel = CHANNEL.format(queue=queue_name)
        self._seal = Seal(key, self._channel)
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._publish, name="plait-events-out", daemon=True)
        self._thread.start()

    def __call__(self, event: Event) -> None:
        self._queue.put(self._seal.sign(encode(to_wire(event))))

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


def ask_to_stop(url: str, queue_name: str, run_id: str, key: bytes) -> None:
    """Ask the workers of `queue_name` to give `run_id` back without announcing it again."""
    _tell_workers(url, queue_name, key, {"stop": run_id})


def ask_to_stream(url: str, queue_name: str, run_id: str, nodes: bool | list[str], key: bytes) -> None:
    """Ask the workers of `queue_name` to stream the answers of `nodes` (True: every node) of
    `run_id` when they execute it (its events reach the servers as any other)."""
    _tell_workers(url, queue_name, key, {"stream": run_id, "nodes": nodes})


def _tell_workers(url: str, queue_name: str, key: bytes, message: dict[str, Any]) -> None:
    import redis

    channel = CONTROL.format(queue=queue_name)
    with redis.Redis.from_url(url) as client:
        client.publish(channel, Seal(key, channel).sign(json.dumps(message)))


class EventFollower:
    """Calls `deliver(event)` (on a thread of its own) for each event the workers publish (a
    `WireEvent`); reconnects when Redis goes away."""

    def __init__(self, url: str, queue_name: str, deliver: Callable[[Any], None], key: bytes, *,
                 channel: str = CHANNEL, raw: bool = False):  # fmt: skip
        """`key`: the deployment's (`signing_key`); `channel`, `raw`: follow another channel of
        the queue, its messages given as text."""
        import redis

        self._redis = redis.Redis.from_url(url)
        self._channel = channel.format(queue=queue_name)
        self._seal = Seal(key, self._channel)
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
                pubsub = self._redis.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call,unused-ignore]
                pubsub.subscribe(self._channel)
                pubsub.get_message(timeout=1.0)  # the subscription's confirmation
                self._ready.set()
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is not None and message.get("type") == "message":
                        self._receive(message["data"])
                pubsub.close()
            except Exception as exc:  # Redis restarting: subscribe again
                log.warning("following worker events: %s; reconnecting", exc)
                self._stop.wait(1.0)

    def _receive(self, data: bytes) -> None:
        body = self._seal.open(data.decode("utf-8", "replace"))
        if body is None:
            return
        try:
            self._deliver(body if self._raw else decode(body))
        except (ValueError, KeyError, TypeError) as exc:  # signed, so ours: a bug, not an attack
            log.warning("an event could not be read: %s", exc)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._redis.close()
