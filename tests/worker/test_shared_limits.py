"""Provider limits held across processes in Redis: four `plait worker` processes, eight runs at
once each, against a server that counts its concurrent requests: it never sees more than the
provider's `max_concurrency` of 8 (and does see 8); `rpm` holds across two processes; a holder
that crashed loses its slot when its lease ends."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid

import yaml
from worker_helpers import Cluster, wait_until

from plait.llm.shared_limits import SharedLimits
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from tests.worker.counting_server import counting_server

GRAPH = {
    "id": "one_call",
    "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    "nodes": [{"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": "Question {{ input.n }}"}],
    "edges": [{"source": "ask", "target": "END"}],
}


def test_four_workers_never_exceed_the_providers_max_concurrency(cluster: Cluster) -> None:
    # Each call lasts long enough that eight are surely in flight together, however loaded the
    # host: a slot given back is taken again only after the next run's scheduling.
    with counting_server(latency_s=1.5) as (url, counts):
        workers = cluster.config.read_text().split("[workers]")[1]
        cluster.config.write_text(
            f'[[providers]]\nid = "fake"\nkind = "openai"\nbase_url = "{url}"\nmax_concurrency = 8\n'
            'models = [{name = "m"}]\n[roles]\nchat = "fake/m"\n[workers]' + workers
        )
        (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH))
        for _ in range(4):
            cluster.worker("-c", "8")  # 32 runs at once across the workers, 8 model calls
        with cluster.store() as store:
            runs = [start_run(store, str(cluster.folder / "graph.yaml"), {"n": i}, announce="start")
                    for i in range(48)]  # fmt: skip
            from plait.worker.app import WorkerSettings, make_app
            from plait.worker.relay import Relay

            settings = WorkerSettings(broker=cluster.broker, queue=cluster.queue)
            Relay(store, make_app(settings), settings).flush()
            done = lambda: all(store.runs.get(r).status == RunStatus.COMPLETED for r in runs)  # noqa: E731
            wait_until(done, 120, "48 runs to complete")
        assert len(counts.arrivals) == 48
        assert counts.most == 8  # the limit was reached, never passed


def _holder_script(url: str, namespace: str) -> str:
    return (
        "import asyncio, sys\n"
        "from plait.llm.shared_limits import SharedLimits\n"
        f"limits = SharedLimits({url!r}, {namespace!r}, lease_s=3.0)\n"
        "async def main():\n"
        "    async with limits.slot('p', 1):\n"
        "        print('held', flush=True)\n"
        "        await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )


def test_a_crashed_holder_loses_its_slot_when_its_lease_ends(redis_url: str) -> None:
    """Judged on Redis's own clock, not on how fast this host runs: the slot is given only once
    the dead holder's last lease has ended, and it is given (not held forever)."""
    import redis

    namespace = f"plait-test-{uuid.uuid4().hex[:8]}"
    holder = subprocess.Popen([sys.executable, "-c", _holder_script(redis_url, namespace)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ})  # fmt: skip
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    client = redis.Redis.from_url(redis_url)
    [(_, dead_lease_ends_ms)] = client.zrange(f"{namespace}:slots:p", 0, -1, withscores=True)
    limits = SharedLimits(redis_url, namespace, lease_s=3.0)

    async def granted_at_ms() -> float:
        async with limits.slot("p", 1):
            seconds, micros = client.time()
            return seconds * 1000 + micros / 1000

    assert asyncio.run(asyncio.wait_for(granted_at_ms(), 60)) >= dead_lease_ends_ms


def test_rpm_holds_across_two_processes(redis_url: str) -> None:
    namespace = f"plait-test-{uuid.uuid4().hex[:8]}"
    script = (
        "import asyncio, time\n"
        "from plait.llm.shared_limits import SharedLimits\n"
        f"limits = SharedLimits({redis_url!r}, {namespace!r})\n"
        "async def one():\n"
        "    await limits.window_wait('p', 5, None, 1)\n"
        "    print(time.time(), flush=True)\n"
        "async def main():\n"
        "    await asyncio.wait([asyncio.create_task(one()) for _ in range(4)], timeout=3)\n"
        "asyncio.run(main())\n"
    )
    processes = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    sent = [float(line) for p in processes for line in p.communicate(timeout=30)[0].split()]
    assert len(sent) == 5  # 8 asked within the same minute, 5 allowed
    assert max(sent) - min(sent) < 60
