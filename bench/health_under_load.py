"""How fast `plait serve` answers `/api/health` while hostile evaluations run, and how far past
its limit a runaway evaluation ends.

Part 1 starts `plait serve` as a subprocess (as a user runs it) on a SQLite file in a temp dir,
stores three hostile graphs and asks `/api/health` every 20 ms from a thread of its own: first
quietly (the baseline), then while the attack runs:

- MAP runs whose items each spin in a string search QuickJS cannot interrupt
  (`'a'.repeat(200000).indexOf(...)`, tens of seconds of CPU unless killed), 40 items a run (`--items`);
- JavaScript CODE nodes doing the same, and BigInt `toString` of a 300,000-digit number;
- prompt-script previews in the same builtin, and ones that flood their host calls;
- the HTTP abuse corpus's hostile requests (a body nested 100,000 levels, 1e400, ...);
- programs in the jail: a Python CODE fork bomb, one that fills memory in several processes,
  one that kills its parent and one that reads the server's environment, and a TOOL (`wc`) whose
  standard input is a template that tries to render a gigabyte;
- slow clients: connections that send their headers a byte at a time, and bodies that never end,
  held open for the whole attack (the server's header and body timeouts end them);
- browsers on other origins: cross-origin writes and foreign Host names (refused).

The server's `[resources]` gate is off, so that every run starts at once and the load is the
most the sandbox lets an attacker make. Printed: p50, p95 and max of health's latency, quiet
and under attack, and how long the attack took.

Part 2 measures the guarantee itself in this process: `--kills` evaluations in that builtin,
with a limit of `--limit` s, each on a place of its own (no queueing), and prints by how much
each ended past its limit (wall clock: the watchdog's kill, the pipe closing, the caller's
wake-up).

    .venv/bin/python bench/health_under_load.py              # ~1 min
    .venv/bin/python bench/health_under_load.py --runs 2 --kills 8
    .venv/bin/python bench/health_under_load.py --runs 1 --kills 2 --items 4 --quiet 1   # a smoke run
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
CONFIG = """
[resources]
enabled = false

[tools]
allow = ["wc"]

[code]
python = true
"""
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
    _graph("hostile_fork", [{"id": "fork", "type": "CODE", "language": "python", "timeout_s": 2,
                             "code": "import os\ndef main(input, nodes):\n    while True:\n        os.fork()"}]),
    _graph("hostile_memory", [{"id": "memory", "type": "CODE", "language": "python", "timeout_s": 2,
                               "code": "import os\ndef main(input, nodes):\n    for _ in range(3):\n        os.fork()\n"
                                       "    block = [bytearray(1 << 20) for _ in range(400)]\n    return len(block)"}]),
    _graph("hostile_kill", [{"id": "kill", "type": "CODE", "language": "python", "timeout_s": 2,
                             "code": "import os, signal\ndef main(input, nodes):\n"
                                     "    os.kill(os.getppid(), signal.SIGKILL)\n"
                                     "    return open('/proc/1/environ').read()"}]),
    _graph("hostile_render", [{"id": "render", "type": "TOOL", "command": ["wc", "-c"],
                               "stdin": "{{ 'a' * input.n }}", "parse": "text"}]),
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
    (tmp / "plait.toml").write_text(CONFIG)
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


def attack(client: httpx.Client, runs: int, items: int) -> list[tuple[str, str]]:
    """Start the hostile runs (and send the corpus); their graphs and ids."""
    started = []
    for k in range(runs):
        for graph, run_input in (("hostile_map", {"values": list(range(items))}), ("hostile_code", {"k": k}),
                                 ("hostile_bigint", {"k": k}), ("hostile_fork", {"k": k}),
                                 ("hostile_memory", {"k": k}), ("hostile_kill", {"k": k}),
                                 ("hostile_render", {"n": 10**9})):  # fmt: skip
            response = client.post("/api/runs", json={"graph": graph, "input": run_input})
            started.append((graph, response.json()["run_id"]))
    for method, path, body in CORPUS:
        client.request(method, path, content=body.encode(), headers={"content-type": "application/json"})
    for _, run_id in started[:3]:  # a page on another origin, and a rebinding name: refused
        client.post(f"/api/runs/{run_id}/cancel", content=b"{}", headers={"origin": "http://evil.example"})
        client.get("/api/runs", headers={"host": "evil.example"})
    return started


def slow_clients(url: str, stop: threading.Event, connections: int = 20) -> list[threading.Thread]:
    """Connections that trickle their headers, and bodies that never end, until `stop`; each is
    opened again when the server closes it."""
    host, port = url.removeprefix("http://").split(":")

    def trickle(header_only: bool) -> None:
        while not stop.is_set():
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                start = b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n"
                try:
                    if header_only:
                        for byte in start:
                            sock.sendall(bytes([byte]))
                            if stop.wait(0.5):
                                return
                    else:
                        sock.sendall(start + b"\r\n{")
                        while not stop.wait(0.5):
                            sock.sendall(b" ")
                except OSError:
                    continue  # closed by the server's timeout: open another

    threads = [threading.Thread(target=trickle, args=(k % 2 == 0,), daemon=True) for k in range(connections)]
    for thread in threads:
        thread.start()
    return threads


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


def part_one(runs: int, items: int, quiet_s: float) -> None:
    with tempfile.TemporaryDirectory(prefix="plait-bench-health-") as name, plait_serve(Path(name)) as url:
        with httpx.Client(base_url=url, timeout=60) as client:
            for graph in GRAPHS:
                stored = client.post("/api/graphs", json=graph)
                if stored.status_code != 201:
                    raise SystemExit(f"storing a graph failed: {stored.status_code} {stored.text}")
            with Probe(url) as quiet:
                time.sleep(quiet_s)
            began = time.monotonic()
            stop = threading.Event()
            with Probe(url) as loud:
                slow = slow_clients(url, stop)
                run_ids = attack(client, runs, items)
                scripts = previews(url)
                endings: dict[str, int] = {}
                for graph, run_id in run_ids:
                    while (run := client.get(f"/api/runs/{run_id}").json())["status"] not in ("completed", "failed"):
                        time.sleep(0.2)
                    kinds = sorted({(node.get("error") or {}).get("kind", "?") for node in run["nodes"]
                                    if node["status"] == "failed"})  # fmt: skip
                    ending = f"{graph} {run['status']}" + (f" ({', '.join(kinds)})" if kinds else "")
                    endings[ending] = endings.get(ending, 0) + 1
                for thread in scripts:
                    thread.join(timeout=60)
                stop.set()
                for thread in slow:
                    thread.join(timeout=10)
            took = time.monotonic() - began
            alive = client.get("/api/health").status_code == 200
        print(f"health, quiet:        {summary(quiet.latencies)}")
        print(f"health, under attack: {summary(loud.latencies)} ({loud.errors} errors)")
        print("how the hostile runs ended: " + "; ".join(f"{k} (x{n})" for k, n in sorted(endings.items())))
        print(f"the attack: {runs} x (a MAP of {items} + a CODE + a BigInt run + 4 runs of hostile programs), "
              f"{len(SCRIPTS)} previews, {len(CORPUS)} hostile requests, cross-origin writes, 20 slow clients; "
              f"all ended in {took:.1f} s; the server {'answers' if alive else 'is DOWN'} after it")  # fmt: skip


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
    parser.add_argument("--items", type=int, default=ITEMS, help="items of each hostile MAP run (at most 40 at once)")
    parser.add_argument("--quiet", type=float, default=3.0, help="seconds of the quiet baseline")
    args = parser.parse_args()
    print(f"host: {platform.node()}, Python {platform.python_version()}, {platform.platform()}")
    part_one(args.runs, args.items, args.quiet)
    part_two(args.kills, args.limit)


if __name__ == "__main__":
    main()
