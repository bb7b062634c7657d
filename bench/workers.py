"""Workers: throughput with 1 and 2 `plait worker` processes, the most calls in flight against
the provider's global limit, and how long a SIGKILLed worker's run takes to be picked up.

    .venv/bin/python bench/workers.py [--runs 400] [--latency-ms 200] [--concurrency 8] [--trials 5]

Needs PostgreSQL (PLAIT_TEST_PG_URL, default postgresql+psycopg://postgres@127.0.0.1:5432/test;
each measurement gets a fresh schema) and Redis at 127.0.0.1:6379. The provider is an
OpenAI-compatible server on loopback answering after `--latency-ms`, with `max_concurrency`
set high enough not to bind (64), so the workers are what is measured; it counts the calls it
is answering at once.

Scaling: `--runs` one-call runs enqueued at once, drained by 1 worker, then by 2 (each
`--concurrency` runs at a time); the ratio of the two throughputs (target: at least 1.8), and
the CPU each part of the deployment spent per run (the workers, PostgreSQL, Redis, and this
process, which serves the fake provider): on one small machine that hosts them all, the sum
says whether the machine or the design is what bounds the two workers.
Recovery: a run whose model call takes 6 s, its worker killed with SIGKILL 1 s into the call,
the time until another worker claims its node again, `--trials` times (min, median, max); it is
bounded by the lease (`lease_ttl_s`, 15 s by default) plus a relay pass.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import create_engine, text

from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store
from plait.worker.app import WorkerSettings, make_app, send

PG = os.environ.get("PLAIT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS = "redis://127.0.0.1:6379/0"
GRAPH = {
    "id": "bench_workers",
    "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    "nodes": [{"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": "Question {{ input.n }}"}],
    "edges": [{"source": "ask", "target": "END"}],
}


_ANSWER = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                      "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": "ok"}}],
                      "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()  # fmt: skip
_REPLY = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(_ANSWER), _ANSWER)


class Model:
    """The loopback provider: answers every request after `latency_s`, counting the calls in
    flight. A bare HTTP/1.1 keep-alive server on asyncio: the provider is remote in a real
    deployment, so its own CPU here (it shares the machine with what is measured) is kept to
    the least, not a web framework's."""

    def __init__(self, latency_s: float):
        self.latency_s, self.in_flight, self.most = latency_s, 0, 0
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def serve() -> None:
            self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            with contextlib.suppress(asyncio.CancelledError):  # closed: the benchmark is over
                await self._server.serve_forever()

        threading.Thread(target=lambda: self._loop.run_until_complete(serve()), daemon=True).start()
        ready.wait(10)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
                await reader.readexactly(length)
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
                try:
                    await asyncio.sleep(self.latency_s)
                finally:
                    self.in_flight -= 1
                writer.write(_REPLY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)


class Deployment:
    """A fresh PostgreSQL schema, a queue of its own, a plait.toml, and the workers started."""

    def __init__(self, folder: Path, model: Model, lease_ttl_s: float = 15):
        self.folder, self.schema, self.queue = (
            folder,
            f"plait_b_{uuid.uuid4().hex[:10]}",
            f"bench-{uuid.uuid4().hex[:8]}",
        )
        with create_engine(PG, isolation_level="AUTOCOMMIT").connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{self.schema}"'))
        self.db = f"{PG}?options=-csearch_path%3D{self.schema}"
        self.config = folder / "plait.toml"
        self.config.write_text(
            f'[[providers]]\nid = "m"\nkind = "openai"\nbase_url = "http://127.0.0.1:{model.port}/v1"\n'
            'max_concurrency = 64\nmodels = [{name = "m"}]\n[roles]\nchat = "m/m"\n[resources]\nenabled = false\n'
            f'[workers]\nbroker = "{REDIS}"\nqueue = "{self.queue}"\nlease_ttl_s = {lease_ttl_s}\n'
        )
        (folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH))
        self.workers: list[subprocess.Popen[bytes]] = []
        self.store = Store(self.db)
        self.settings = WorkerSettings(broker=REDIS, queue=self.queue)
        self.app = make_app(self.settings)

    def env(self) -> dict[str, str]:
        return {**os.environ, "PLAIT_DB": self.db, "PLAIT_CONFIG": str(self.config)}

    def worker(self, concurrency: int) -> subprocess.Popen[bytes]:
        process = subprocess.Popen([sys.executable, "-m", "plait", "worker", "-c", str(concurrency)],
                                   cwd=self.folder, env=self.env(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)  # fmt: skip
        self.workers.append(process)
        return process

    def create(self, count: int) -> list[str]:
        """Runs created, not yet handed to the workers (creating them is not what is measured)."""
        return [start_run(self.store, str(self.folder / "graph.yaml"), {"n": i}) for i in range(count)]

    def hand_over(self, runs: list[str]) -> None:
        for run_id in runs:
            send(self.app, self.settings, run_id, "bench")

    def enqueue(self, count: int) -> list[str]:
        runs = self.create(count)
        self.hand_over(runs)
        return runs

    def wait(self, runs: list[str], timeout: float = 600) -> None:
        """Until every run completed; each look asks only for the runs not seen completed yet."""
        deadline, left = time.monotonic() + timeout, set(runs)
        while time.monotonic() < deadline:
            left -= {run_id for run_id, s in self.store.runs.statuses(left).items() if s == RunStatus.COMPLETED}
            if not left:
                return
            time.sleep(0.05)
        raise SystemExit("the runs did not complete in time")

    def close(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        self.store.close()
        with create_engine(PG, isolation_level="AUTOCOMMIT").connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{self.schema}" CASCADE'))


def _cpu_seconds() -> dict[str, float]:
    """CPU seconds so far of the processes of this machine, by part of the deployment."""
    import psutil

    parts: dict[str, float] = {}
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            times = process.cpu_times()
            name = process.info["name"] or ""
            if process.pid == os.getpid():
                part = "bench"
            elif "worker" in " ".join(process.info["cmdline"] or []) and "python" in name:
                part = "workers"
            elif name.startswith(("postgres", "redis")):
                part = name.split("-")[0].split(":")[0]
            else:
                continue
            parts[part] = parts.get(part, 0.0) + times.user + times.system
        except psutil.Error:
            continue
    return parts


def throughput(workers: int, runs: int, latency_s: float, concurrency: int) -> tuple[float, int, dict[str, float]]:
    """(runs/s, the most calls in flight, CPU ms per run by part)."""
    model = Model(latency_s)
    with tempfile.TemporaryDirectory() as folder:
        deployment = Deployment(Path(folder), model)
        try:
            for _ in range(workers):
                deployment.worker(concurrency)
            warm = deployment.enqueue(workers * concurrency)  # the workers connected and warm
            deployment.wait(warm)
            model.most = 0
            created = deployment.create(runs)
            before, started = _cpu_seconds(), time.monotonic()
            deployment.hand_over(created)
            deployment.wait(created)
            elapsed, after = time.monotonic() - started, _cpu_seconds()
            spent = {part: (after[part] - before.get(part, 0.0)) * 1000 / runs for part in after}
            return runs / elapsed, model.most, spent
        finally:
            deployment.close()
            model.close()


def recovery(trials: int) -> list[float]:
    times: list[float] = []
    model = Model(6.0)
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as folder:
            deployment = Deployment(Path(folder), model)
            try:
                first, second = deployment.worker(2), deployment.worker(2)
                (run_id,) = deployment.enqueue(1)
                while (holder := deployment.store.runs.get(run_id).lease_owner) is None:
                    time.sleep(0.02)
                time.sleep(1.0)
                victim = first if first.pid == int(holder.split(":")[1]) else second
                victim.send_signal(signal.SIGKILL)
                killed = time.monotonic()
                while deployment.store.runs.get(run_id).lease_owner in (holder, None):
                    time.sleep(0.05)
                times.append(time.monotonic() - killed)
                deployment.wait([run_id])
            finally:
                deployment.close()
    model.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    one, most_one, cpu_one = throughput(1, args.runs, latency, args.concurrency)
    two, most_two, cpu_two = throughput(2, args.runs, latency, args.concurrency)
    ideal = args.concurrency / latency
    for label, rate, most, cpu, count in (
        ("1 worker: ", one, most_one, cpu_one, 1),
        ("2 workers:", two, most_two, cpu_two, 2),
    ):
        split = ", ".join(f"{part} {ms:.1f}" for part, ms in sorted(cpu.items(), key=lambda kv: -kv[1]))
        print(
            f"{label} {rate:7.1f} runs/s of an ideal {ideal * count:.0f} (at most {most} calls in flight; limit 64); "
            f"CPU ms per run: {split}; machine {sum(cpu.values()) * rate / 1000:.2f} of {os.cpu_count()} cores busy"
        )
    print(f"scaling: {two / one:.2f}× (target: at least 1.8)")
    if args.trials:
        found: Any = recovery(args.trials)
        print(f"recovery after SIGKILL ({args.trials} trials, lease 15 s): min {min(found):.1f} s, median "
              f"{statistics.median(found):.1f} s, max {max(found):.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
