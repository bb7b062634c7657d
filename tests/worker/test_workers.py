"""Runs executed by real `plait worker` processes over real Redis and PostgreSQL: `plait run
--queue` gives the same output as a run in-process, with the workers' events shown; a worker
SIGKILLed in the middle of a node has its run finished by another worker, each node's effect
once, within the lease; SIGTERM gives the run back at once; a message whose run rolled back is
never sent, and one the broker could not take is sent when it is back."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time

import pytest
import yaml
from worker_helpers import Cluster, wait_until

from plait.model.enums import RunStatus
from plait.worker.app import WorkerSettings
from plait.worker.main import ready_line

GRAPH = {
    "id": "slow_then_shape",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [
        {"id": "think", "type": "LLM_CALL", "user_prompt_tpl": "Think about {{ input.text }}"},
        {"id": "shape", "type": "TRANSFORM", "transform_expr": "({answer: current, asked: input.text})"},
    ],
    "edges": [{"source": "think", "target": "shape"}, {"source": "shape", "target": "END"}],
}


def setup(cluster: Cluster, delay_ms: int) -> None:
    (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    (cluster.folder / "model.yaml").write_text(
        yaml.safe_dump({"responses": [{"text": "a thought", "delay_ms": delay_ms}]})
    )


def start_queued(cluster: Cluster) -> subprocess.Popen[str]:
    return cluster.start(
        "run", "graph.yaml", "-i", "text=birds", "--json", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_a_queued_run_executes_on_a_worker_with_the_same_output_and_its_events(cluster: Cluster) -> None:
    setup(cluster, delay_ms=200)
    local = cluster.plait("run", "graph.yaml", "-i", "text=birds", "--json", "--queue", "none")  # here
    cluster.worker()
    queued = cluster.plait("run", "graph.yaml", "-i", "text=birds", "--json")
    assert queued.returncode == 0, queued.stderr + cluster.logs()
    assert json.loads(queued.stdout)["output"] == {"answer": "a thought", "asked": "birds"}
    assert "node:complete  think" in queued.stderr  # the worker's events, shown here
    with cluster.store() as store:
        run = store.runs.get(json.loads(queued.stdout)["run_id"])
        assert run.lease_owner is None
    assert local.returncode == 0, local.stderr
    assert json.loads(local.stdout)["output"] == json.loads(queued.stdout)["output"]
    logs = cluster.logs()  # what the worker said: where it takes runs from, and each run's ending
    assert f"plait worker: taking runs from queue '{cluster.queue}' on {cluster.broker}" in logs
    # A new queue has no relay marker yet, so a worker may also re-announce the pending run as
    # possibly lost by the broker; either message may be the one that executes it.
    assert re.search(
        rf"plait worker: run {json.loads(queued.stdout)['run_id']}: ended \(announced on (start|lost)\)", logs
    )


def test_the_workers_ready_line_masks_the_credentials_in_its_urls() -> None:
    settings = WorkerSettings(broker="redis://:hunter2@cache:6379/0", queue="q")
    line = ready_line(settings, "postgresql://plait:hunter2@db:5432/plait", 8, beat=True)
    assert "hunter2" not in line
    assert "queue 'q' on redis://***@cache:6379/0 into postgresql://***@db:5432/plait, 8 at once" in line
    assert "firing the cron schedules" in line


@pytest.mark.parametrize("lease_s", [4])  # short: the other worker takes over when it runs out
def test_a_worker_killed_mid_node_has_its_run_finished_by_another_exactly_once(cluster: Cluster) -> None:
    setup(cluster, delay_ms=3000)
    first, second = cluster.worker(), cluster.worker()
    follower = start_queued(cluster)
    with cluster.store() as store:
        run_id = wait_until(lambda: next((r.id for r in store.runs.list(limit=5)), None), 30, "the run")
        holder = wait_until(lambda: store.runs.get(run_id).lease_owner, 30, "a worker to take the run")
        pid = int(holder.split(":")[1])
        killed = first if first.pid == pid else second
        assert killed.pid == pid, f"the run is held by {holder}, not by a worker of this test"
        time.sleep(0.5)  # in the middle of the 3 s model call
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
        died = time.monotonic()
        out, err = follower.communicate(timeout=60)
        taken_over = time.monotonic() - died
        assert follower.returncode == 0, err + cluster.logs()
        assert json.loads(out)["output"] == {"answer": "a thought", "asked": "birds"}
        nodes = store.runs.node_runs(run_id)
        assert [n.node_id for n in nodes if n.status.has_output] == ["think", "shape"]  # each effect once
        assert len({(n.node_id, n.activation) for n in nodes}) == len(nodes)
        assert store.runs.get(run_id).status == RunStatus.COMPLETED
    # the lease, a relay pass, the node again, and what a host with busy cores adds: far under
    # anything but the lease (the broker's redelivery of an unacknowledged task takes an hour)
    assert taken_over < 4 + 1 + 3 + 30


def test_sigterm_gives_the_run_back_to_another_worker_at_once(cluster: Cluster) -> None:
    setup(cluster, delay_ms=2000)
    first, second = cluster.worker(), cluster.worker()
    follower = start_queued(cluster)
    with cluster.store() as store:
        run_id = wait_until(lambda: next((r.id for r in store.runs.list(limit=5)), None), 30, "the run")
        holder = wait_until(lambda: store.runs.get(run_id).lease_owner, 30, "a worker to take the run")
        stopping = first if first.pid == int(holder.split(":")[1]) else second
        time.sleep(0.3)
        stopping.send_signal(signal.SIGTERM)
        assert stopping.wait(timeout=15) == 0
        released = store.runs.get(run_id)
        assert released.lease_owner != holder  # given back, not left to expire
        out, err = follower.communicate(timeout=60)
        assert follower.returncode == 0, err + cluster.logs()
        assert json.loads(out)["output"]["answer"] == "a thought"


def test_a_message_the_broker_could_not_take_is_sent_when_it_is_back(cluster: Cluster) -> None:
    setup(cluster, delay_ms=0)
    (cluster.folder / "away.toml").write_text(
        cluster.config.read_text().replace(cluster.broker, "redis://127.0.0.1:9/0")  # nothing listens there
    )
    from plait.runs.start import start_run

    with cluster.store() as store:
        run_id = start_run(store, str(cluster.folder / "graph.yaml"), {"text": "later"}, announce="start")
        assert store.outbox.unsent() == 1  # written with the run, not yet sent
        cluster.worker()  # its relay sends what is unsent
        wait_until(lambda: store.runs.get(run_id).status == RunStatus.COMPLETED, 30, "the run to complete")
        assert store.outbox.unsent() == 0


def test_a_beat_worker_fires_due_schedules_and_executes_their_runs(cluster: Cluster) -> None:
    setup(cluster, delay_ms=0)
    from plait.runs.schedules import add_schedule

    with cluster.store() as store:
        made = add_schedule(store, str(cluster.folder / "graph.yaml"), "* * * * *", {"text": "tick"})
        store.schedules.set_status(made.id, "active", next_fire_at=time.time() - 1)  # due now
        cluster.worker("--beat")
        fired = wait_until(lambda: store.schedules.firings(made.id), 20, "the beat to fire the schedule")
        run_id = fired[0][1]
        done = lambda: store.runs.exists(run_id) and store.runs.get(run_id).status == RunStatus.COMPLETED  # noqa: E731
        wait_until(done, 30, "its run to complete")
        assert store.runs.get(run_id).output == {"answer": "a thought", "asked": "tick"}


def test_a_worker_does_not_queue_its_runs_for_provider_capacity(cluster: Cluster) -> None:
    """A worker bounds its runs in flight (the rest wait in the broker's queue): runs that find
    the provider's one slot taken wait for it in the pool's queue, with no resource decision."""
    config = cluster.config.read_text().replace('file = "model.yaml"\n', 'file = "model.yaml"\nmax_concurrency = 1\n')
    # probed often; the CPU rule off: the plait processes this test starts load the machine
    cluster.config.write_text(config + "[resources]\nprobe_s = 0.1\ncpu_percent_max = 100\n")
    setup(cluster, delay_ms=600)
    cluster.worker()
    first = start_queued(cluster)
    with cluster.store() as store:
        wait_until(lambda: any(r.status == RunStatus.RUNNING for r in store.runs.list()), 30, "the first run executing")
    time.sleep(0.3)  # its call holds the provider's only slot: capacity 0 % from now on
    later = [start_queued(cluster) for _ in range(3)]
    outputs = [json.loads(p.communicate(timeout=60)[0]) for p in [first, *later]]
    assert all(o["status"] == "completed" for o in outputs), outputs
    with cluster.store() as store:
        assert [store.decisions.of_run(o["run_id"]) for o in outputs] == [[], [], [], []]


def test_a_run_no_worker_takes_is_reported_with_how_to_start_one_and_stays_queued(cluster: Cluster) -> None:
    setup(cluster, delay_ms=0)
    waiting = start_queued(cluster)  # no worker runs
    stop = threading.Timer(120, waiting.send_signal, [signal.SIGINT])  # the line never came: end the wait
    stop.start()
    try:
        line = waiting.stderr.readline()  # type: ignore[union-attr]
    finally:
        stop.cancel()
        waiting.send_signal(signal.SIGINT)
    _, rest = waiting.communicate(timeout=120)
    # said once the run has waited UNTAKEN_S (5 s), with how long it has: more on a busy host
    told = re.search(
        rf"is waiting in queue '{re.escape(cluster.queue)}' on {re.escape(cluster.broker)}: "
        r"no worker has taken it in (\d+) s\.",
        line,
    )
    assert told is not None, line
    assert int(told.group(1)) >= 5, line
    assert f"Start one with: plait worker --queue {cluster.broker}" in line
    assert waiting.returncode == 130, rest
    with cluster.store() as store:
        [run] = store.runs.list()
        assert run.status == RunStatus.PENDING
    cluster.worker()  # the run was left queued: a worker started later executes it
    with cluster.store() as store:
        wait_until(lambda: store.runs.get(run.id).status == RunStatus.COMPLETED, 120, "a later worker to run it")
