"""How fast `plait serve` answers `/api/health` while hostile evaluations run, and how far past
its limit a runaway evaluation ends.

Part 1 starts `plait serve` as a subprocess (as a user runs it) on a SQLite file in a temp dir,
stores three hostile graphs and asks `/api/health` every 20 ms from a thread of its own: first
quietly (the baseline), then while the attack runs:

- MAP runs whose items each spin in a string search QuickJS cannot interrupt
  (`'a'.repeat(200000).indexOf(...)`, tens of seconds of CPU unless killed), 40 items a run;
- JavaScript CODE nodes doing the same, and BigInt `toString` of a 300,000-digit number;
- prompt-script previews in the same builtin, and ones that flood their host calls;
- the HTTP abuse corpus's hostile requests (a body nested 100,000 levels, 1e400, ...).

The server's `[resources]` gate is off, so that every run starts at once and the load is the
most the sandbox lets an attacker make. Printed: p50, p95 and max of health's latency, quiet
and under attack, and how long the attack took.

Part 2 measures the guarantee itself in this process: `--kills` evaluations in that builtin,
with a limit of `--limit` s, each on a place of its own (no queueing), and prints by how much
each ended past its limit (wall clock: the watchdog's kill, the pipe closing, the caller's
wake-up).

    .venv/bin/python bench/health_under_load.py              # ~1 min
    .venv/bin/python bench/health_under_load.py --runs 2 --kills 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

UNINTERRUPTIBLE = "'a'.repeat(200000).indexOf('a'.repeat(100000) + 'b')"
BIGINT = "(10n ** 300000n).toString().length"
LIMIT = 0.5
ITEMS = 40


def _graph(graph_id: str, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"source": json.dumps({"plait": 1, "id": graph_id, "nodes": nodes, "edges": []})}


SPIN = {"id": "spin", "type": "TRANSFORM", "transform_expr": UNINTERRUPTIBLE, "timeout_s": LIMIT}
GRAPHS = [
    _graph("hostile_map", [{"id": "m", "type": "MAP", "items": "input.values", "max_concurrency": ITEMS,
                            "on_item_error": "collect", "body": {"nodes": [SPIN], "edges": []}}]),
    _graph("hostile_code", [{"id": "c", "type": "CODE", "timeout_s": LIMIT,
                             "code": f"return {{n: {UNINTERRUPTIBLE}}};"}]),
    _graph("hostile_bigint", [{"id": "b", "type": "TRANSFORM", "transform_expr": BIGINT, "timeout_s": LIMIT}]),
]  # fmt: skip
SCRIPTS = [
    f"async function main() {{ return String({UNINTERRUPTIBLE}) }}",
    "async function main() { for (;;) await getVar('input.x') }",
    "async function main() { const a = []; for (let i = 0; i < 20; i++) a.push(getVar('input.x'));"
    " for (const x of a) await x; while (true) {} }",
]
CORPUS = [
    ("POST", "/api/runs", '{"graph": "hostile_map", "input": {"values": ' + "[" * 100_000 + "]" * 100_000 + "}}"),
    ("POST", "/api/runs", '{"graph": "hostile_map", "input": {"values": [1e400]}}'),
    ("POST", "/api/runs", '{"graph": "hostile_map", "input": {"values": "a\\ud800b"}}'),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def plait_serve(tmp: Path) -> Iterator[str]:
    (tmp / "plait.toml").write_text("[resources]\nenabled = false\n")
    port = free_port()
    db = f"sqlite:///{tmp / 'plait.db'}"
    server = subprocess.Popen(
        [sys.executable, "-m", "plait", "serve", "--db", db, "--port", str(port)],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("plait serve did not start")
            time.sleep(0.1)
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


class Probe:
    """`/api/health` every `every` s on a thread; the latencies of the answers, in seconds."""

    def __init__(self, url: str, every: float = 0.02):
        self.url, self.every = url, every
        self.latencies: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                ok = client.get("/api/health").status_code == 200
                self.latencies.append(time.monotonic() - started)
                self.errors += not ok
                self._stop.wait(self.every)


def summary(latencies: list[float]) -> str:
    ms = sorted(x * 1000 for x in latencies)
    return (
        f"{len(ms)} answers: p50 {statistics.median(ms):.1f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms, "
        f"max {ms[-1]:.1f} ms"
    )


def attack(client: httpx.Client, runs: int) -> list[str]:
    """Start the hostile runs (and send the corpus); their ids."""
    started = []
    for k in range(runs):
        for graph, run_input in (("hostile_map", {"values": list(range(ITEMS))}), ("hostile_code", {"k": k}),
                                 ("hostile_bigint", {"k": k})):  # fmt: skip
            response = client.post("/api/runs", json={"graph": graph, "input": run_input})
            started.append(response.json()["run_id"])
    for method, path, body in CORPUS:
        client.request(method, path, content=body.encode(), headers={"content-type": "application/json"})
    return started


def previews(url: str) -> list[threading.Thread]:
    def one(code: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            body = {"script_code": code, "input": {"x": 1}}
            with client.stream("POST", "/api/templates/preview", json=body) as response:
                for _ in response.iter_lines():
                    pass

    threads = [threading.Thread(target=one, args=(code,), daemon=True) for code in SCRIPTS]
    for thread in threads:
        thread.start()
    return threads


def part_one(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="plait-bench-health-") as name, plait_serve(Path(name)) as url:
        with httpx.Client(base_url=url, timeout=60) as client:
            for graph in GRAPHS:
                assert client.post("/api/graphs", json=graph).status_code == 201
            with Probe(url) as quiet:
                time.sleep(3)
            began = time.monotonic()
            with Probe(url) as loud:
                run_ids = attack(client, runs)
                scripts = previews(url)
                for run_id in run_ids:
                    while client.get(f"/api/runs/{run_id}").json()["status"] not in ("completed", "failed"):
                        time.sleep(0.2)
                for thread in scripts:
                    thread.join(timeout=60)
            took = time.monotonic() - began
        print(f"health, quiet:        {summary(quiet.latencies)}")
        print(f"health, under attack: {summary(loud.latencies)} ({loud.errors} errors)")
        print(f"the attack: {runs} x (a MAP of {ITEMS} + a CODE + a BigInt run), {len(SCRIPTS)} previews, "
              f"{len(CORPUS)} hostile requests; all ended in {took:.1f} s")  # fmt: skip


def part_two(kills: int, limit: float) -> None:
    from plait.sandbox import JsSandbox, JsTimeoutError

    async def main() -> list[float]:
        with JsSandbox(workers=kills, max_workers=kills) as box:
            await asyncio.gather(*(box.aevaluate("1", {}, owner=f"w{k}") for k in range(kills)))

            async def one(k: int) -> float:
                started = time.monotonic()
                try:
                    await box.aevaluate(UNINTERRUPTIBLE, {}, timeout_s=limit, owner=f"w{k}")
                except JsTimeoutError:
                    return time.monotonic() - started - limit
                raise SystemExit("the evaluation was not stopped")

            return await asyncio.gather(*(one(k) for k in range(kills)))

    past = sorted(x * 1000 for x in asyncio.run(main()))
    print(f"past the limit ({kills} uninterruptible evaluations at once, limit {limit:g} s, wall clock): "
          f"p50 {statistics.median(past):.0f} ms, max {past[-1]:.0f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="rounds of hostile runs (each: a MAP of 40, CODE, BigInt)")
    parser.add_argument("--kills", type=int, default=4, help="uninterruptible evaluations at once in part 2")
    parser.add_argument("--limit", type=float, default=0.3, help="their time limit in part 2, seconds")
    args = parser.parse_args()
    print(f"host: {platform.node()}, Python {platform.python_version()}, {platform.platform()}")
    part_one(args.runs)
    part_two(args.kills, args.limit)


if __name__ == "__main__":
    main()
