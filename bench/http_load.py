"""Load test of `plait serve` on loopback: many clients start runs and poll them, while one more asks `/api/health`.

Starts `plait serve` as a subprocess (as a user runs it) on a fresh database: a SQLite file in a
temp dir, or a fresh schema in the PostgreSQL database given with `--db` (dropped afterwards).
Model calls are answered by the scripted provider with a fixed delay (`--delay-ms`, 50 ms by
default), so what is measured is the service: HTTP, the store, the engine. The graph is
examples/feedback_triage.yaml (LLM_CALL, CONDITION, a branch, MERGE, TRANSFORM), stored first.

Each of `--clients` concurrent clients (its own `httpx.AsyncClient`, so its own connection)
starts `--rounds` runs one after the other, each with its own feedback text (no response-cache
hits; the three labels in turn), and polls each run every `--poll-interval` seconds until it
ends. Beside them a prober in a process of its own asks `GET /api/health` every
`--health-interval` seconds, as a load balancer or an operator's monitor would during the load: its
latency is what a deployment sees of a server this busy. An error is any refused or failed
request (the health checks' included), a timeout, or a run that does not end `completed`; the
server's log is searched for tracebacks and database lock errors too.

    .venv/bin/python bench/http_load.py                         # 200 clients, SQLite
    .venv/bin/python bench/http_load.py --db postgresql+psycopg://postgres@127.0.0.1:5432/test
    .venv/bin/python bench/http_load.py --clients 20 --json     # what tests/api/test_load_smoke.py runs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import select
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "examples" / "feedback_triage.yaml"
SCRIPT = ROOT / "examples" / "scripted" / "feedback_triage.yaml"
ENDED = {"completed", "failed", "cancelled"}
FEEDBACK = (
    "The export fails with an error every time (case {n}).",  # bug
    "How do I share a board with my team (case {n})?",  # question
    "Lovely update, the new editor is great (case {n}).",  # praise
)
SERVER_PROBLEMS = re.compile(r'Traceback|database is locked|QueuePool limit|HTTP/1\.1" 5\d\d ')


@dataclass
class Result:
    """What the clients saw; latencies in seconds."""

    clients: int
    rounds: int
    backend: str
    starts: list[float] = field(default_factory=list)
    polls: list[float] = field(default_factory=list)
    runs: list[float] = field(default_factory=list)
    health: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    server_problems: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    server_cpu_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "clients": self.clients,
            "runs": len(self.runs) + sum(1 for e in self.errors if e.startswith("run ")),
            "completed": self.statuses.get("completed", 0),
            "statuses": self.statuses,
            "errors": len(self.errors) + len(self.server_problems),
            "error_samples": (self.errors + self.server_problems)[:10],
            "wall_s": round(self.wall_s, 3),
            "runs_per_s": round(len(self.runs) / self.wall_s, 1) if self.wall_s else 0.0,
            "start_ms": percentiles(self.starts),
            "poll_ms": percentiles(self.polls),
            "run_ms": percentiles(self.runs),
            "health_ms": percentiles(self.health),
            "requests": len(self.starts) + len(self.polls) + len(self.health),
            "server_cpu_s": round(self.server_cpu_s, 2),
        }


def percentiles(values: list[float]) -> dict[str, float | int]:
    """p50/p99/max in ms, by nearest rank (no interpolation: every figure was measured)."""
    if not values:
        return {"n": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)

    def rank(p: float) -> float:
        return round(ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * p // 100) - 1))] * 1000, 1)

    return {"n": len(ordered), "p50": rank(50), "p99": rank(99), "max": round(ordered[-1] * 1000, 1)}


async def client(
    http: httpx.AsyncClient, index: int, rounds: int, poll_interval: float, timeout: float, result: Result
) -> None:
    """One client: start a run, poll it until it ends, `rounds` times."""
    async with http:
        for round_ in range(rounds):
            n = index * rounds + round_
            feedback = FEEDBACK[n % len(FEEDBACK)].format(n=n)
            began = time.perf_counter()
            try:
                response = await http.post(
                    "/api/runs", json={"graph": "feedback_triage", "input": {"feedback": feedback}}
                )
            except httpx.HTTPError as exc:
                result.errors.append(f"start: {type(exc).__name__}: {exc}")
                continue
            result.starts.append(time.perf_counter() - began)
            if response.status_code != 202:
                result.errors.append(f"start: {response.status_code} {response.text[:200]}")
                continue
            run_id = response.json()["run_id"]
            deadline = began + timeout
            status = "pending"
            while status not in ENDED:
                if time.perf_counter() > deadline:
                    result.errors.append(f"run {run_id}: not ended after {timeout:.0f} s (last status {status})")
                    break
                await asyncio.sleep(poll_interval)
                asked = time.perf_counter()
                try:
                    polled = await http.get(f"/api/runs/{run_id}")
                except httpx.HTTPError as exc:
                    result.errors.append(f"poll: {type(exc).__name__}: {exc}")
                    continue
                result.polls.append(time.perf_counter() - asked)
                if polled.status_code != 200:
                    result.errors.append(f"poll: {polled.status_code} {polled.text[:200]}")
                    continue
                status = polled.json()["status"]
            else:
                result.runs.append(time.perf_counter() - began)
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status != "completed":
                    result.errors.append(f"run {run_id} ended {status}: {polled.json().get('error')}")


def probe_health(base_url: str, interval: float, timeout: float) -> None:
    """The prober's process: ask `/api/health` every `interval` seconds until stdin closes, then
    print the latencies (s) and errors as JSON. A process of its own, so that what it measures
    is the server and not the 200 clients' busy event loop in the bench's process."""
    latencies: list[float] = []
    errors: list[str] = []
    with httpx.Client(base_url=base_url, timeout=timeout) as http:
        while not select.select([sys.stdin], [], [], interval)[0]:
            asked = time.perf_counter()
            try:
                answer = http.get("/api/health")
            except httpx.HTTPError as exc:
                errors.append(f"health: {type(exc).__name__}: {exc}")
                continue
            latencies.append(time.perf_counter() - asked)
            if answer.status_code != 200:
                errors.append(f"health: {answer.status_code} {answer.text[:200]}")
    print(json.dumps({"latencies": latencies, "errors": errors}))


@contextmanager
def health_prober(base_url: str, interval: float, timeout: float, result: Result) -> Iterator[None]:
    """`probe_health` in a child process while the block runs; its figures added to `result`."""
    command = [sys.executable, __file__, "--probe-health", base_url, "--health-interval", str(interval),
               "--timeout", str(timeout)]  # fmt: skip
    prober = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield
    finally:
        out, _ = prober.communicate(input="done\n", timeout=timeout + 30)
        found = json.loads(out)
        result.health.extend(found["latencies"])
        result.errors.extend(found["errors"])


async def load(
    base_url: str,
    *,
    clients: int,
    rounds: int,
    poll_interval: float,
    timeout: float,
    backend: str,
    health_interval: float = 0.1,
) -> Result:
    result = Result(clients=clients, rounds=rounds, backend=backend)
    # Every client has its own connection pool (as separate clients would), all built before
    # the clock starts and sharing one TLS context: building one per client (httpx loads the CA
    # bundle, ~40 ms) would keep this process's loop busy for seconds while requests wait.
    tls = ssl.create_default_context()
    https = [httpx.AsyncClient(base_url=base_url, timeout=timeout, verify=tls) for _ in range(clients)]
    with health_prober(base_url, health_interval, timeout, result):
        began = time.perf_counter()
        await asyncio.gather(*(client(http, i, rounds, poll_interval, timeout, result) for i, http in enumerate(https)))
        result.wall_s = time.perf_counter() - began
    return result


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process so far, from /proc (Linux); 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def database(url: str | None, workdir: Path) -> Iterator[tuple[str, str]]:
    """(URL, backend name) of a fresh database: a SQLite file in `workdir`, or a new schema in
    the PostgreSQL database `url` (selected with search_path, dropped afterwards)."""
    if url is None or url.startswith("sqlite"):
        yield url or f"sqlite:///{workdir / 'plait.db'}", "sqlite"
        return
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    schema = f"plait_load_{uuid.uuid4().hex[:10]}"
    admin = create_engine(url, poolclass=NullPool)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False), "postgresql"
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()


@contextmanager
def server(db_url: str, workdir: Path, delay_ms: int) -> Iterator[tuple[str, Path, int]]:
    """`plait serve` on a free loopback port with the scripted provider answering after
    `delay_ms`; yields (base URL, its log file, its pid); stops it with SIGINT (graceful)."""
    script = yaml.safe_load(SCRIPT.read_text())
    for response in script["responses"]:
        response["delay_ms"] = delay_ms
    script_file = workdir / "script.yaml"
    script_file.write_text(yaml.safe_dump(script))
    port = free_port()
    log = workdir / "server.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PLAIT_DB", "PLAIT_CONFIG")}
    command = [
        sys.executable,
        "-m",
        "plait",
        "serve",
        "--port",
        str(port),
        "--db",
        db_url,
        "--llm",
        f"scripted:{script_file}",
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"plait serve exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"plait serve did not answer within 60 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        yield url, log, proc.pid
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def drive(url: str, args: argparse.Namespace, backend: str) -> Result:
    """Store the graph on the server at `url`, then run the clients against it."""
    stored = httpx.post(f"{url}/api/graphs/import", json={"source": GRAPH.read_text()}, timeout=30)
    stored.raise_for_status()
    return asyncio.run(
        load(
            url,
            clients=args.clients,
            rounds=args.rounds,
            poll_interval=args.poll_interval,
            timeout=args.timeout,
            backend=backend,
            health_interval=args.health_interval,
        )
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.url:
        result = drive(args.url.rstrip("/"), args, "(a server started elsewhere)")
    else:
        with tempfile.TemporaryDirectory(prefix="plait-load-") as tmp, database(args.db, Path(tmp)) as (db, backend):
            with server(db, Path(tmp), args.delay_ms) as (url, log, pid):
                cpu_before = cpu_seconds(pid)
                result = drive(url, args, backend)
                result.server_cpu_s = cpu_seconds(pid) - cpu_before
            result.server_problems = [
                f"server log: {line.strip()[:200]}"
                for line in log.read_text().splitlines()
                if SERVER_PROBLEMS.search(line)
            ]
    summary = result.summary()
    summary.update(
        delay_ms=args.delay_ms,
        rounds=args.rounds,
        poll_interval_s=args.poll_interval,
        host=f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        date=time.strftime("%Y-%m-%d %H:%M"),
    )
    return summary


def table(s: dict[str, Any]) -> str:
    rows = [
        f"plait serve under load - bench/http_load.py ({s['date']}, {s['host']})",
        f"backend {s['backend']}; {s['clients']} clients x {s['rounds']} runs of feedback_triage; "
        f"model calls {s['delay_ms']} ms; poll every {s['poll_interval_s']} s",
        "",
        f"  errors           {s['errors']}",
        f"  runs             {s['runs']} ({s['completed']} completed)",
        f"  wall time        {s['wall_s']:.2f} s",
        f"  runs/s           {s['runs_per_s']}",
        f"  requests         {s['requests']}",
        f"  server CPU       {s['server_cpu_s']:.2f} s ({s['server_cpu_s'] / max(s['wall_s'], 1e-9):.0%} of one core)",
        "",
        f"  {'latency, ms':<28}{'n':>7}{'p50':>9}{'p99':>9}{'max':>9}",
    ]
    for label, key in (
        ("start (POST /api/runs)", "start_ms"),
        ("poll (GET /api/runs/{id})", "poll_ms"),
        ("run, start to seen ended", "run_ms"),
        ("GET /api/health meanwhile", "health_ms"),
    ):
        p = s[key]
        rows.append(f"  {label:<28}{p['n']:>7}{p['p50']:>9.1f}{p['p99']:>9.1f}{p['max']:>9.1f}")
    if s["error_samples"]:
        rows += ["", "  first errors:", *(f"    {e}" for e in s["error_samples"])]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients (default 200)")
    parser.add_argument("--rounds", type=int, default=1, help="runs each client starts, one after the other")
    parser.add_argument("--db", default=None, help="sqlite:///FILE, or a PostgreSQL URL (a fresh schema is used)")
    parser.add_argument("--delay-ms", type=int, default=50, help="how long each model call takes (default 50)")
    parser.add_argument("--poll-interval", type=float, default=0.25, help="seconds between polls (default 0.25)")
    parser.add_argument("--health-interval", type=float, default=0.1, help="seconds between health checks (0.1)")
    parser.add_argument("--timeout", type=float, default=120.0, help="longest a request or a run may take, s")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--url", help="drive a server started elsewhere instead (it needs --llm scripted:FILE)")
    parser.add_argument("--probe-health", metavar="URL", help=argparse.SUPPRESS)  # the prober's own process
    args = parser.parse_args(argv)
    if args.probe_health:
        probe_health(args.probe_health, args.health_interval, args.timeout)
        return 0
    summary = run(args)
    print(json.dumps(summary, indent=2) if args.json else table(summary))
    return 0 if summary["errors"] == 0 and summary["completed"] == summary["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
