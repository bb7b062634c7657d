"""Whoever can write to the broker's Redis is not trusted with runs. With a real `plait serve`
handing its runs to a real `plait worker`, on a Redis of the test's own (a broadcast must not
reach other deployments' workers):

- a `workflow:complete` forged on the events channel (unsigned, signed with another key, or a
  genuine message replayed) never appears on the run's event stream, nor ends it;
- a forged `stop` on the control channel does not stop the run a worker executes;
- Celery's remote control is off: `ping`, `shutdown` and `cancel_consumer` broadcast on the
  broker reach no worker, which goes on taking runs.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from worker_helpers import Cluster, need, wait_until

from plait.engine.event_wire import WireEvent
from plait.worker.app import WorkerSettings, make_app
from plait.worker.events import CHANNEL, CONTROL, Seal, encode, signing_key
from tests.api.api_helpers import REVIEWED, read_events

SCRIPT = {
    "responses": [
        {"node": "draft", "output": {"text": "drafted"}},
        {"node": "polish", "output": {"text": "polished"}, "delay_ms": 3000},
    ]
}


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A redis-server of this test's own (overrides the shared one the `cluster` fixture uses)."""
    binary = shutil.which("redis-server")
    if binary is None:
        need("redis-server is not installed (apt-get install -y redis-server)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)  # fmt: skip
    import redis

    client = redis.Redis(port=port, socket_timeout=0.5)
    wait_until(lambda: _pings(client), 10, "redis-server to start")
    yield f"redis://127.0.0.1:{port}/0"
    client.close()
    server.kill()
    server.wait(timeout=10)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


class Raw:
    """Every message published on a channel, as Redis carries it (what a reader of Redis sees)."""

    def __init__(self, url: str, channel: str) -> None:
        import redis

        self.messages: list[bytes] = []
        self._pubsub = redis.Redis.from_url(url).pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        self._pubsub.subscribe(**{channel: lambda m: self.messages.append(m["data"])})  # in place from now on
        self._thread = self._pubsub.run_in_thread(sleep_time=0.05, daemon=True)

    def close(self) -> None:
        self._thread.stop()


def test_forged_and_replayed_messages_on_redis_neither_reach_a_stream_nor_stop_a_run(cluster: Cluster) -> None:
    (cluster.folder / "model.yaml").write_text(yaml.safe_dump(SCRIPT))
    worker = cluster.worker()
    events_channel = CHANNEL.format(queue=cluster.queue)
    control_channel = CONTROL.format(queue=cluster.queue)
    raw = Raw(cluster.broker, events_channel)
    import redis

    broker = redis.Redis.from_url(cluster.broker)
    with cluster.served(REVIEWED) as client, cluster.store() as store:
        run_id = client.post("/api/runs", json={"graph": "reviewed", "input": {"text": "x"}}).json()["run_id"]
        wait_until(lambda: client.get(f"/api/runs/{run_id}").json()["status"] == "paused", 30, "the review")
        genuine = wait_until(lambda: [m for m in raw.messages if run_id.encode() in m], 10, "a genuine event")[0]

        streamed: list[dict[str, Any]] = []
        ended = threading.Event()

        def kept(event: dict[str, Any]) -> bool:
            streamed.append(event)
            return event["event"] == "workflow:complete"

        def follow() -> None:
            read_events(client, run_id, until=kept)
            ended.set()

        threading.Thread(target=follow, daemon=True).start()
        forged = {"kind": "workflow:complete", "run_id": run_id, "node_id": None, "data": {"forged": True},
                  "at": 1.0}  # fmt: skip
        broker.publish(events_channel, json.dumps(forged))  # as every process sent events before
        broker.publish(events_channel, Seal(b"k" * 32, events_channel).sign(json.dumps(forged)))  # another key
        broker.publish(events_channel, Seal(signing_key(store), control_channel).sign(json.dumps(forged)))  # channel
        broker.publish(events_channel, genuine)  # a replay of a message the deployment really sent
        marker = WireEvent("test:marker", run_id, None, {}, time.time())
        broker.publish(events_channel, Seal(signing_key(store), events_channel).sign(encode(marker)))
        wait_until(lambda: ended.is_set() or any(e["event"] == "test:marker" for e in streamed), 20,
                   "the genuine marker on the stream")  # fmt: skip
        assert not ended.is_set(), f"a forged message ended the stream: {streamed[-1]}"
        assert [e for e in streamed if e["event"] == "workflow:complete" or e["data"].get("forged")] == []
        seen = [(e["event"], e["node_id"], e["at"]) for e in streamed]
        assert len(seen) == len(set(seen)), "a replayed event reached the stream"

        assert client.post(f"/api/runs/{run_id}/nodes/check/review", json={"approve": True}).status_code == 200
        wait_until(lambda: store.runs.get(run_id).lease_owner, 20, "a worker to take the run again")
        broker.publish(control_channel, json.dumps({"stop": run_id}))  # polish is in its 3 s model call
        broker.publish(control_channel, Seal(signing_key(store), events_channel).sign(json.dumps({"stop": run_id})))
        assert ended.wait(60), "the run's stream did not end"
        assert streamed[-1]["event"] == "workflow:complete"
        assert not streamed[-1]["data"].get("forged")
        assert client.get(f"/api/runs/{run_id}").json()["status"] == "completed"
    raw.close()
    assert worker.poll() is None
    assert ": stopped" not in cluster.logs()


def test_remote_control_broadcast_on_the_broker_reaches_no_worker(cluster: Cluster) -> None:
    (cluster.folder / "model.yaml").write_text(yaml.safe_dump(SCRIPT))
    (cluster.folder / "graph.yaml").write_text(REVIEWED.replace("id: reviewed", "id: again"))
    worker = cluster.worker()
    wait_until(lambda: "taking runs from" in cluster.logs(), 30, "the worker to be ready")
    control = make_app(WorkerSettings(broker=cluster.broker, queue=cluster.queue)).control
    assert control.ping(timeout=2.0) == []  # no worker listens to the broker's broadcasts
    control.broadcast("shutdown")
    control.cancel_consumer(cluster.queue)
    queued = cluster.plait("run", "graph.yaml", "-i", "text=x", "--json")  # waits at the review: paused
    assert queued.returncode == 3, queued.stderr + cluster.logs()  # paused: the worker executed it
    assert json.loads(queued.stdout)["status"] == "paused", queued.stdout
    assert worker.poll() is None


def test_a_signed_message_is_accepted_once_and_only_while_fresh() -> None:
    now = [1000.0]
    sender, receiver = (Seal(b"k" * 32, "plait:events:q", clock=lambda: now[0]) for _ in range(2))
    sealed = sender.sign('{"kind": "x"}')
    assert receiver.open(sealed) == '{"kind": "x"}'
    assert receiver.open(sealed) is None  # replayed
    late = sender.sign('{"kind": "y"}')
    now[0] += 61.0  # older than FRESH_S when it arrives
    assert receiver.open(late) is None
    assert receiver.open(sender.sign('{"kind": "z"}')) == '{"kind": "z"}'
    assert Seal(b"k" * 32, "plait:control:q").open(sender.sign("{}")) is None  # another channel's
