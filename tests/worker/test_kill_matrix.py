"""The kill -9 matrix (docs/reliability.md): `plait run`, `plait serve`, `plait worker` and
`plait batch`, on SQLite and PostgreSQL, each killed at six points of a run and resumed the way
it is resumed (`plait resume`, a restarted server, another worker, `plait batch --resume`).

One graph for every cell: two model calls in a chain, a MAP of four items (a call each, one at a
time), a LOOP of three iterations (a call each), and a TRANSFORM gathering every answer. Every
prompt names its node, item or iteration and the run's topic, and the loopback provider answers
a digest of the prompt, so its log says which call was paid how often and two runs' outputs
compare. Exactly one call is in flight at any moment (the batch runs one record at a time), so
a kill interrupts one call at most. After the resume, each cell asserts: the killed process died
of the kill (137 at a failpoint, -9 for SIGKILL); the output is an uninterrupted run's; every
(node, activation) of the run and its child runs has one committed node run, none left running;
and the provider was asked every prompt once, except `REPEATED[point]`, asked once more.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from worker_helpers import Cluster, wait_until

from plait.evolve.system import open_store
from plait.model.enums import NodeStatus, RunStatus
from plait.store import Store
from plait.testing import wait_until_healthy
from tests.api.api_helpers import free_port
from tests.conftest import BACKENDS, pg_schema_made, pg_schema_url
from tests.plait_cli import run_plait, start_plait
from tests.worker.counting_server import Hold, counting_server, openai_config

ITEMS = [1, 2, 3, 4]
ITERATIONS = 3
RECORDS = 6
KILLED = 2
"""The record (its topic `r2`) whose run each cell kills; a `plait batch` finished records 0 and 1 before."""
TOPIC = f"r{KILLED}"


def _llm(node_id: str, prompt: str) -> dict[str, Any]:
    return {"id": node_id, "type": "LLM_CALL", "user_prompt_tpl": prompt}


def _body(node: dict[str, Any], **fields: str) -> dict[str, Any]:
    properties = {name: {"type": kind} for name, kind in fields.items()}
    return {"input_schema": {"type": "object", "properties": properties, "required": list(fields)}, "nodes": [node]}


GRAPH = {
    "plait": 1,
    "id": "kill_matrix",
    "input_schema": {"type": "object", "required": ["topic", "items"], "properties": {
        "topic": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 8}}},
    "nodes": [
        _llm("n1", "n1 of {{ input.topic }}"),
        _llm("n2", "n2 of {{ input.topic }} after {{ n1 }}"),
        {"id": "each", "type": "MAP", "items": "input.items", "max_concurrency": 1,
         "inputs": {"n": "{{ item }}", "topic": "{{ input.topic }}"},
         "body": _body(_llm("item_call", "item {{ input.n }} of {{ input.topic }}"), n="integer", topic="string")},
        {"id": "again", "type": "LOOP", "while_expr": f"iteration < {ITERATIONS}",
         "inputs": {"topic": "{{ input.topic }}", "loop": "{{ loop }}"},
         "body": _body(_llm("iter_call", "iteration {{ input.loop.iteration }} of {{ input.topic }}"),
                       topic="string", loop="object")},
        {"id": "gather", "type": "TRANSFORM",
         "transform_expr": "({n1: nodes.n1, n2: nodes.n2, items: nodes.each, loop: nodes.again})"},
    ],
    "edges": [{"source": a, "target": b} for a, b in
              [("n1", "n2"), ("n2", "each"), ("each", "again"), ("again", "gather"), ("gather", "END")]],
}  # fmt: skip
SOURCE = yaml.safe_dump(GRAPH, sort_keys=False)
CALLS = {"n1": 1, "n2": 1, "item_call": len(ITEMS), "iter_call": ITERATIONS}
"""How many times a run reaches each node's points: the batch's failpoints count past the records before."""

POINTS: dict[str, tuple[str | None, str, int]] = {
    "before_claim": ("before_claim", "n2", 1),  # inside n1's commit: n2's claim is written with n1's result
    "mid_call": (None, "n2", 1),  # SIGKILL while the provider holds n2's request open
    "before_commit": ("before_commit", "n2", 1),
    "mid_commit": ("mid_commit", "n2", 1),
    "MAP": ("before_commit", "item_call", 3),  # the third item's answer, not yet written
    "LOOP": ("after_commit", "iter_call", 2),  # the second iteration's answer, written
}
"""Point: (failpoint, node, the time the run reaches it); a point without a failpoint is a SIGKILL."""
REPEATED: dict[str, str | None] = {
    "before_claim": f"n1 of {TOPIC}",  # its answer was rolled back with the claim: asked again
    "mid_call": f"n2 of {TOPIC} after",
    "before_commit": f"n2 of {TOPIC} after",
    "mid_commit": f"n2 of {TOPIC} after",
    "MAP": f"item 3 of {TOPIC}",
    "LOOP": None,  # killed after a commit: nothing is asked again
}
"""The prompt (its beginning) of the one call each point pays twice."""
TARGETS = ("run", "serve", "worker", "batch")


def answer(prompt: str) -> str:
    return "a" + hashlib.sha256(prompt.encode()).hexdigest()[:10]


def run_input(topic: str) -> dict[str, Any]:
    return {"topic": topic, "items": ITEMS}


@dataclass
class Cell:
    """One cell: its folder, database, held call (mid-call), point and plait.toml."""

    folder: Path
    db: str
    hold: Hold | None
    """The provider holds this call open (mid-call: the test kills the process meanwhile)."""
    point: str
    config: Path

    def env(self, failpoint: str | None = None) -> dict[str, str]:
        env = {**os.environ, "PLAIT_DB": self.db, "PLAIT_CONFIG": str(self.config)}
        env.pop("PLAIT_FAILPOINTS", None)
        if failpoint is not None:
            env["PLAIT_FAILPOINTS"] = failpoint
        return env

    def failpoint(self, runs_before: int = 0) -> str | None:
        """`PLAIT_FAILPOINTS` for this cell's point, in a process that executed `runs_before` runs first."""
        point, node, nth = POINTS[self.point]
        return None if point is None else f"{point}:{node}#{runs_before * CALLS[node] + nth}"

    def killed(self, process: Any) -> None:
        """Wait for the point, where the process dies: at a failpoint it ends itself (137, as
        SIGKILL); mid-call, once the provider holds the call, the test sends SIGKILL (-9)."""
        if (hold := self.hold) is not None:
            wait_until(lambda: hold.arrived.is_set() or process.poll() is not None, 120, "the call to hold")
            process.kill()
            hold.release.set()  # its answer goes nowhere
        assert process.wait(timeout=120) == (-9 if self.hold is not None else 137), "it did not die at the point"


@dataclass
class Reference:
    """What uninterrupted runs gave: `plait run` on topic `r2`, and `plait batch` over every record."""

    output: Any
    prompts: Counter[str]
    outputs: dict[int, Any]
    batch_prompts: Counter[str]


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Reference]]:
    """Per backend, computed once: an uninterrupted `plait run` and `plait batch` on a database of their own."""
    made: dict[str, Reference] = {}
    with contextlib.ExitStack() as stack:

        def reference(backend: str) -> Reference:
            if backend not in made:
                folder = tmp_path_factory.mktemp(f"reference-{backend}")
                db = (pg_schema_url(stack.enter_context(pg_schema_made())) if backend == "postgresql"
                      else f"sqlite:///{folder / 'plait.db'}")  # fmt: skip
                made[backend] = _reference(folder, db)
            return made[backend]

        yield reference


def _reference(folder: Path, db: str) -> Reference:
    _write_inputs(folder)
    with counting_server(latency_s=0, answer=answer) as (url, counts):
        (folder / "plait.toml").write_text(openai_config(url))
        env = {**os.environ, "PLAIT_DB": db, "PLAIT_CONFIG": str(folder / "plait.toml")}
        env.pop("PLAIT_FAILPOINTS", None)
        batch = run_plait(*_batch_args(), cwd=folder, env=env)
        assert batch.returncode == 0, batch.stderr
        outputs = {line["index"]: line["output"] for line in _lines(folder / "out.jsonl")}
        assert sorted(outputs) == list(range(RECORDS))
        batch_prompts = Counter(counts.prompts)
        args = ("run", "graph.yaml", "--input-file", "input.json", "--json", "--quiet", "--no-cache")  # the batch's r2
        done = run_plait(*args, cwd=folder, env=env)
        assert done.returncode == 0, done.stderr
        prompts = Counter(counts.prompts) - batch_prompts
    output = json.loads(done.stdout)["output"]
    assert output == outputs[KILLED]  # the same input, the same answers
    assert sorted(prompts.values()) == [1] * sum(CALLS.values())  # every prompt is a call of its own
    return Reference(output, prompts, outputs, batch_prompts)


def _write_inputs(folder: Path) -> None:
    (folder / "graph.yaml").write_text(SOURCE)
    (folder / "input.json").write_text(json.dumps(run_input(TOPIC)))
    (folder / "in.jsonl").write_text("".join(json.dumps(run_input(f"r{i}")) + "\n" for i in range(RECORDS)))


def _batch_args(*extra: str) -> list[str]:
    return ["batch", "graph.yaml", "--input-file", "in.jsonl", "--output", "out.jsonl", "-c", "1", "--quiet", *extra]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database with Plait's tables and system graphs, made once: each cell starts
    from a copy instead of paying for them in its first process."""
    path = tmp_path_factory.mktemp("template") / "plait.db"
    open_store(f"sqlite:///{path}").close()
    return path


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of the cell's own: a copy of the SQLite template, or a migrated PostgreSQL schema."""
    if backend == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        with sqlite3.connect(template) as source, sqlite3.connect(tmp_path / "plait.db") as copy:
            source.backup(copy)
        return f"sqlite:///{tmp_path / 'plait.db'}"
    return pg_schema_url(request.getfixturevalue("migrated_pg_schema"))


# -- the targets: each starts its process with the cell's point, and resumes after the kill --------------------


def run_target(cell: Cell, request: pytest.FixtureRequest) -> list[tuple[str, Any]]:
    """`plait run` killed; `plait resume RUN_ID`."""
    args = ("run", "graph.yaml", "--input-file", "input.json", "--json", "--quiet")
    process = start_plait(*args, cwd=cell.folder, env=cell.env(cell.failpoint()), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)  # fmt: skip
    cell.killed(process)
    run_id = only(top_runs(cell.db)).id
    check_the_kill(cell, run_id)
    resumed = run_plait("resume", run_id, "--json", "--quiet", cwd=cell.folder, env=cell.env())
    assert resumed.returncode == 0, resumed.stderr
    return [(run_id, json.loads(resumed.stdout)["output"])]


def serve_target(cell: Cell, request: pytest.FixtureRequest) -> list[tuple[str, Any]]:
    """`plait serve` killed while it executes a run started over HTTP; a new `plait serve` on the
    same database continues it at start-up."""
    first, url = _serve(cell, cell.failpoint())
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post("/api/graphs", json={"source": SOURCE}).status_code == 201
            try:
                started = client.post("/api/runs", json={"graph": GRAPH["id"], "input": run_input(TOPIC)})
                assert started.status_code == 202, started.text
            except httpx.TransportError:  # the process died before it answered
                pass
        cell.killed(first)
    finally:
        _stop(first)
    run_id = only(top_runs(cell.db)).id
    check_the_kill(cell, run_id)
    second, url = _serve(cell, None)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            done = wait_until(lambda: _ended(client.get(f"/api/runs/{run_id}").json()), 120, "the resumed run")
    finally:
        _stop(second)
    assert done["status"] == "completed", done
    return [(run_id, done["output"])]


def _serve(cell: Cell, failpoint: str | None) -> tuple[Any, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = cell.folder / f"serve-{port}.log"
    with log.open("w") as out:
        server = start_plait("serve", "--port", str(port), cwd=cell.folder, env=cell.env(failpoint), stdout=out,
                             stderr=subprocess.STDOUT)  # fmt: skip
    wait_until_healthy(url, alive=lambda: server.poll() is None, log=log)
    return server, url


def _ended(run: dict[str, Any]) -> dict[str, Any] | None:
    return run if run["status"] in ("completed", "failed", "cancelled") else None


def _stop(process: Any) -> None:
    if process.poll() is None:
        process.terminate()
    process.wait(timeout=30)


def worker_target(cell: Cell, request: pytest.FixtureRequest) -> list[tuple[str, Any]]:
    """`plait serve` hands the run to the one `plait worker` running, which is killed; a second
    worker, started after, takes the run over once its lease (3 s here) has run out."""
    broker = request.getfixturevalue("redis_url")
    queue = f"plait-test-{uuid.uuid4().hex[:8]}"
    with cell.config.open("a") as config:
        config.write(f'[workers]\nbroker = "{broker}"\nqueue = "{queue}"\nlease_ttl_s = 3\n')
    cluster = Cluster(cell.folder, cell.db, broker, queue, cell.config)
    try:
        with (cell.folder / "worker-killed.log").open("w") as log:
            first = start_plait("worker", "-c", "4", cwd=cell.folder, env=cell.env(cell.failpoint()), stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
        cluster.workers.append(first)
        with cluster.served(SOURCE) as client:
            started = client.post("/api/runs", json={"graph": GRAPH["id"], "input": run_input(TOPIC)})
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            cell.killed(first)
            check_the_kill(cell, run_id)
            cluster.worker()
            done = wait_until(lambda: _ended(client.get(f"/api/runs/{run_id}").json()), 120, "another worker")
        assert done["status"] == "completed", (done, cluster.logs())
        return [(run_id, done["output"])]
    finally:
        cluster.stop()


def batch_target(cell: Cell, request: pytest.FixtureRequest) -> list[tuple[str, Any]]:
    """`plait batch` of six records, one at a time, killed inside the third record's run;
    `plait batch --resume` finishes it: every record once, none with a second run."""
    process = start_plait(*_batch_args(), cwd=cell.folder, env=cell.env(cell.failpoint(runs_before=KILLED)),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    cell.killed(process)
    runs = {run.input["topic"]: run for run in top_runs(cell.db)}
    assert sorted(runs) == [f"r{i}" for i in range(KILLED + 1)]  # killed in the third record's run
    assert [runs[f"r{i}"].status for i in range(KILLED)] == [RunStatus.COMPLETED] * KILLED
    run_id = runs[TOPIC].id
    check_the_kill(cell, run_id)
    resumed = run_plait(*_batch_args("--resume"), cwd=cell.folder, env=cell.env())
    assert resumed.returncode == 0, resumed.stderr
    lines = _lines(cell.folder / "out.jsonl")
    assert sorted(line["index"] for line in lines) == list(range(RECORDS))  # every record once
    assert len(top_runs(cell.db)) == RECORDS  # no record got a second run
    return [(line["run_id"], line["output"]) for line in sorted(lines, key=lambda line: line["index"])]


DRIVERS = {"run": run_target, "serve": serve_target, "worker": worker_target, "batch": batch_target}


# -- what the store says ------------------------------------------------------------------------------------


def top_runs(db: str) -> list[Any]:
    with Store(db) as store:
        return store.runs.list(limit=1000)


def only(runs: list[Any]) -> Any:
    assert len(runs) == 1, runs
    return runs[0]


def tree(db: str, run_id: str) -> dict[str, tuple[RunStatus, list[Any]]]:
    """The status and node runs of `run_id` (key `run`) and of each of its child runs (key
    `body/child_key`: `each/0`, `again/2`)."""
    with Store(db) as store:
        children = [r for r in store.runs.list(children=True, limit=1000) if r.parent_run_id == run_id]
        found = {"run": (store.runs.get(run_id).status, store.runs.node_runs(run_id))}
        found.update({f"{c.body}/{c.child_key}": (c.status, store.runs.node_runs(c.id)) for c in children})
    return found


def check_the_kill(cell: Cell, run_id: str) -> None:
    """The process died at the point the cell names: the node's earlier activations written, its
    answer at the point not (after a commit: written), and before a claim no claim at all."""
    point, node, nth = POINTS[cell.point]
    every = [n for _, nodes in tree(cell.db, run_id).values() for n in nodes]
    ran = [n.status for n in every if n.node_id == node]
    if point == "before_claim":
        assert ran == []  # never claimed
        assert [n.status for n in every if n.node_id == "n1"] == [NodeStatus.RUNNING]  # rolled back with the claim
    elif point == "after_commit":
        assert ran == [NodeStatus.COMPLETED] * nth
    else:
        assert sorted(ran) == sorted([NodeStatus.COMPLETED] * (nth - 1) + [NodeStatus.RUNNING])


def check_the_runs(db: str, run_id: str) -> None:
    """Every (node, activation) of the run and of its children: one committed node run, none running."""
    expected = {"run": ["again", "each", "gather", "n1", "n2"]}
    expected.update({f"each/{i}": ["item_call"] for i in range(len(ITEMS))})
    expected.update({f"again/{i}": ["iter_call"] for i in range(ITERATIONS)})
    found = tree(db, run_id)
    assert sorted(found) == sorted(expected)  # no item or iteration missing or doubled
    for key, (status, nodes) in found.items():
        assert status == RunStatus.COMPLETED, key
        assert sorted(n.node_id for n in nodes) == expected[key], key  # one node run per (node, activation)
        assert {n.status for n in nodes} == {NodeStatus.COMPLETED}, (key, nodes)


# -- the matrix ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("target", TARGETS)
def test_killed_and_resumed_it_ends_as_an_uninterrupted_run_paying_only_the_interrupted_call_again(
    target: str, point: str, backend: str, database: str, tmp_path: Path, request: pytest.FixtureRequest,
    references: Callable[[str], Reference],
) -> None:  # fmt: skip
    reference = references(backend)
    _write_inputs(tmp_path)
    hold = Hold(f"n2 of {TOPIC} after") if POINTS[point][0] is None else None
    with counting_server(latency_s=0, hold=hold, answer=answer) as (url, counts):
        (tmp_path / "plait.toml").write_text(openai_config(url))
        cell = Cell(tmp_path, database, hold, point, tmp_path / "plait.toml")
        ended = DRIVERS[target](cell, request)
    if target == "batch":
        assert [output for _, output in ended] == [reference.outputs[i] for i in range(RECORDS)]
        expected = reference.batch_prompts.copy()
    else:
        assert [output for _, output in ended] == [reference.output]
        expected = reference.prompts.copy()
    for run_id, _ in ended:
        check_the_runs(database, run_id)
    repeated = REPEATED[point]
    if repeated is not None:
        (again,) = [prompt for prompt in expected if prompt.startswith(repeated)]
        expected[again] += 1  # the one call the kill interrupted, paid again
    assert Counter(counts.prompts) == expected
