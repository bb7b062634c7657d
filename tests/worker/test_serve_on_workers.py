"""`plait serve` with a broker hands its runs to workers: a run started over HTTP is executed by
a `plait worker`, and the run's SSE stream on the server shows the worker's node events to the
end; a schedule fired by the server is executed by the worker too."""

from __future__ import annotations

import json
import threading
import time

import yaml
from worker_helpers import Cluster, wait_until

from tests.api.api_helpers import read_events
from tests.worker.counting_server import counting_server

GRAPH = {
    "plait": 1,
    "id": "served_on_workers",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [
        {"id": "think", "type": "LLM_CALL", "user_prompt_tpl": "Think about {{ input.text }}"},
        {"id": "shape", "type": "TRANSFORM", "transform_expr": "({answer: current})"},
    ],
    "edges": [{"source": "think", "target": "shape"}, {"source": "shape", "target": "END"}],
}

WORDS = " ".join(f"word{i}" for i in range(40))


def test_a_run_started_over_http_executes_on_a_worker_and_streams_its_events(cluster: Cluster) -> None:
    streamed = {
        "match": "streamed",
        "text": WORDS,
        "delay_ms": 6000,
    }  # spread over the words: generous for a loaded host
    (cluster.folder / "model.yaml").write_text(
        yaml.safe_dump({"responses": [streamed, {"text": "deep", "delay_ms": 300}]})
    )
    worker = cluster.worker()
    with cluster.served(yaml.safe_dump(GRAPH)) as client:
        run_id = client.post("/api/runs", json={"graph": "served_on_workers", "input": {"text": "x"}}).json()["run_id"]
        status, events = read_events(client, run_id, until=lambda e: e["event"] == "workflow:complete")
        assert status == 200
        kinds = [(e["event"], e.get("node_id")) for e in events]
        assert ("node:complete", "think") in kinds
        assert kinds[-1][0] == "workflow:complete"
        run = client.get(f"/api/runs/{run_id}").json()
        assert run["status"] == "completed"
        assert run["output"] == {"answer": "deep"}
        assert not run["executing_here"]  # the worker executed it, not the server
        # an answer the worker streams reaches the server's event stream through Redis
        body = {"graph": "served_on_workers", "input": {"text": "streamed"}, "stream": ["think"]}
        streaming = client.post("/api/runs", json=body).json()["run_id"]
        status, events = read_events(client, streaming, until=lambda e: e["event"] == "workflow:complete")
        assert status == 200
        pieces = [e["data"]["text"] for e in events if e["event"] == "node:delta" and e["node_id"] == "think"]
        assert "".join(pieces) == WORDS
        # the same from the command line: told to the workers before the run exists, then followed
        (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH))
        queued = cluster.plait("run", "graph.yaml", "-i", "text=streamed", "--stream-node", "think")
        assert queued.returncode == 0, queued.stderr
        lines = queued.stderr.splitlines()
        assert lines[lines.index("── think ──") + 1] == WORDS
        watched = cluster.plait("runs", "watch", streaming, "--json")  # ended: its result at once
        assert watched.returncode == 0, watched.stderr
        assert json.loads(watched.stdout)["output"] == {"answer": WORDS}
        made = client.post("/api/schedules", json={"graph": "served_on_workers", "cron": "* * * * *",
                                                   "input": {"text": "tick"}}).json()  # fmt: skip
        with cluster.store() as store:
            store.schedules.set_status(made["id"], "active", next_fire_at=time.time() - 1)
        fired = wait_until(lambda: client.get(f"/api/schedules/{made['id']}").json()["firings"], 20, "a firing")
        wait_until(lambda: client.get(f"/api/runs/{fired[0]['run_id']}").json()["status"] == "completed", 30,
                   "the scheduled run to complete on the worker")  # fmt: skip
    assert worker.poll() is None


def test_pausing_and_cancelling_over_http_stop_a_run_a_worker_executes(cluster: Cluster) -> None:
    # The model's answers wait at a gate the test opens: each request is made while the run's call
    # is surely in flight, however loaded the host.
    gate = threading.Event()
    with counting_server(latency_s=0, gate=gate) as (url, counts):
        cluster.model_at(url)
        cluster.worker()
        with cluster.served(yaml.safe_dump(GRAPH)) as client:

            def in_flight(text: str) -> str:
                """A run started over HTTP whose model call the server holds (each run its own
                `text`: the response cache would answer a prompt asked before)."""
                asked = len(counts.prompts)
                run = client.post("/api/runs", json={"graph": "served_on_workers", "input": {"text": text}}).json()
                wait_until(lambda: len(counts.prompts) > asked, 60, "the run's model call")
                return str(run["run_id"])

            def past_the_call() -> None:
                """The held call answered, and time for a run given back to have been continued."""
                gate.set()
                wait_until(lambda: counts.in_flight == 0, 60, "the held call to end")
                time.sleep(1)

            paused_id = in_flight("to pause")
            paused = client.post(f"/api/runs/{paused_id}/pause")
            assert paused.status_code == 200, paused.text
            assert paused.json()["status"] == "paused"
            # a message for it still in the queue (the outbox sends at least once) leaves it paused
            with cluster.store() as store:
                store.outbox.announce(paused_id, "lost")
            wait_until(lambda: f"run {paused_id}: paused (announced on lost)" in cluster.logs(), 30, "the message")
            past_the_call()
            assert client.get(f"/api/runs/{paused_id}").json()["status"] == "paused"
            assert client.post(f"/api/runs/{paused_id}/resume").status_code == 202  # accepted: a worker continues it
            wait_until(lambda: client.get(f"/api/runs/{paused_id}").json()["status"] == "completed", 60, "resumed")

            gate.clear()
            cancelled_id = in_flight("to cancel")
            cancelled = client.post(f"/api/runs/{cancelled_id}/cancel")
            assert cancelled.status_code == 200, cancelled.text
            past_the_call()
            assert client.get(f"/api/runs/{cancelled_id}").json()["status"] == "cancelled"
