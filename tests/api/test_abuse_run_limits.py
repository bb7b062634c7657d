"""What one run may cost a running `plait serve`, on SQLite and PostgreSQL: a registered secret a
run produces comes back nowhere; a node that takes its server down is not executed again for
ever; a run stays within the budget of child runs, node runs and stored bytes of plait.toml; a
template cannot render without bound or hold the event loop; many large graphs sent to be
validated leave the caches within their byte bounds."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import free_port, read_events, wait_for
from sqlalchemy import select

from plait.caches import cache_stats
from plait.config import forget_loaded
from plait.engine.render import RECORD_CHARS
from plait.redact import register
from plait.store import Store
from plait.store.models import full_metadata
from plait.testing import served_app, wait_until_healthy
from tests.engine.test_crash_loop import GRAPH as CRASH_LOOP_GRAPH
from tests.plait_cli import run_plait, start_plait

CANARY = f"canary-{uuid.uuid4().hex}"
"""Registered as a secret in this process (as a provider key is by plait.toml); it does not look
like an `sk-` key, so only the registered value can hide it."""

LEAKY = """
plait: 1
id: leaky
nodes:
  - {id: ask, type: LLM_CALL, user_prompt_tpl: "Repeat the key"}
  - {id: build, type: TRANSFORM, transform_expr: "({key: input.reversed.split('').reverse().join(''), said: current})"}
  - {id: pass_on, type: TRANSFORM, transform_expr: "({text: 'got ' + current.key, said: current.said})"}
edges:
  - {source: ask, target: build}
  - {source: build, target: pass_on}
"""


def plait(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, env={**os.environ, **(env or {})}, timeout=timeout)


def stored_text(store: Store, tmp_path: Path) -> str:
    """Every row of every table, and for SQLite the database file's own bytes too."""
    with store.db.connect() as conn:
        rows = "\n".join(repr(row) for table in full_metadata().sorted_tables for row in conn.execute(select(table)))
    files = "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("plait.db*"))
    return rows + files


def test_a_registered_secret_a_run_produces_is_found_nowhere(store: Store, tmp_path: Path) -> None:
    """The secret comes from a model's answer and from a TRANSFORM that builds it from data that
    does not hold it; neither the store, the API, the event stream nor `plait runs show` has it."""
    register(CANARY)
    script = tmp_path / "script.yaml"
    script.write_text(f"responses:\n  - {{node: ask, text: 'the key is {CANARY}'}}\n")
    with served_app(store=store, llm=f"scripted:{script}") as served, served.client() as client:
        assert client.post("/api/graphs", json={"source": LEAKY}).status_code == 201
        started = client.post("/api/runs", json={"graph": "leaky", "input": {"reversed": CANARY[::-1]}})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        run = wait_for(lambda: (r := client.get(f"/api/runs/{run_id}").json())["status"] == "completed" and r)
        status, events = read_events(client, run_id)
        assert status == 200
        answers = [str(events), client.get(f"/api/runs/{run_id}").text, client.get("/api/runs").text]
        answers += [client.get(f"/api/runs/{run_id}/ledger").text]
        answers += [client.get(f"/api/node-runs/{node['id']}").text for node in run["nodes"]]
    assert run["output"] == {"text": "got ***", "said": "the key is ***"}  # masked, and handed on masked
    shown = [plait("runs", "show", run_id, "--db", store.url, *flag).stdout for flag in ((), ("--json",))]
    for where, text in [("the API and its events", "\n".join(answers)), ("plait runs show", "\n".join(shown)),
                        ("the store", stored_text(store, tmp_path))]:  # fmt: skip
        assert CANARY not in text, f"the secret is in {where}"
        assert "***" in text, f"nothing was masked in {where}: the test did not cross the path it means"


# -- a node that takes its server down ---------------------------------------------------------------------

CRASHING = CRASH_LOOP_GRAPH  # its first node takes the process down where a failpoint says


def serve(db_url: str, port: int, cwd: Path) -> subprocess.Popen[str]:
    """`plait serve` whose process dies (like SIGKILL) each time it starts executing the node `boom`."""
    return start_plait(
        "serve",
        "--db",
        db_url,
        "--port",
        str(port),
        cwd=cwd,
        env={**os.environ, "PLAIT_FAILPOINTS": "execute:boom"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def test_a_node_that_takes_its_server_down_is_not_resumed_a_third_time(db_url: str, tmp_path: Path) -> None:
    """The server dies executing `boom`; restarted, it resumes the run and dies again; the third
    start fails the node with kind `internal` instead, and the server stays up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=url, timeout=30) as client:
        first = serve(db_url, port, tmp_path)
        wait_until_healthy(url, alive=lambda: first.poll() is None)
        assert client.post("/api/graphs", json={"source": CRASHING}).status_code == 201
        with contextlib.suppress(httpx.TransportError):  # the process may die before it answers
            client.post("/api/runs", json={"graph": "crashing", "input": {}})
        assert first.wait(timeout=60) == 137
        with Store(db_url) as store:
            (run,) = store.runs.list()
        second = serve(db_url, port, tmp_path)  # its start-up resumes the run: `boom` again
        assert second.wait(timeout=60) == 137
        third = serve(db_url, port, tmp_path)
        try:
            wait_until_healthy(url, alive=lambda: third.poll() is None)
            failed = wait_for(lambda: (r := client.get(f"/api/runs/{run.id}").json())["status"] == "failed" and r)
            boom = next(n for n in failed["nodes"] if n["node_id"] == "boom")
            assert boom["error"]["kind"] == "internal"
            assert "went down, 2 times" in boom["error"]["message"]
            assert "after" not in {n["node_id"] for n in failed["nodes"]}
            assert third.poll() is None
            assert client.get("/api/health").status_code == 200
        finally:
            third.terminate()
            third.wait(timeout=30)


# -- the run budget, the render budget, the caches ---------------------------------------------------------

BOMB = """
plait: 1
id: bomb
input_schema: {type: object, properties: {xs: {type: array, maxItems: 499000}}}
nodes:
  - id: outer
    type: LOOP
    while_expr: "true"
    max_iterations: 10000
    body:
      input_schema: {type: object, properties: {xs: {type: array, maxItems: 499000}}}
      nodes:
        - id: mid
          type: MAP
          items: input.xs
          body:
            input_schema: {type: object, properties: {xs: {type: array, maxItems: 499000}}}
            nodes:
              - id: inner
                type: MAP
                items: input.xs
                body: {nodes: [{id: t, type: TRANSFORM, transform_expr: "1"}]}
"""

FAN = """
plait: 1
id: fan
input_schema: {type: object, properties: {xs: {type: array}}}
nodes:
  - id: each
    type: MAP
    items: input.xs
    inputs: {n: "{{ item }}"}
    body: {nodes: [{id: double, type: TRANSFORM, transform_expr: "({n: input.n * 2})"}]}
"""

PROMPT = """
plait: 1
id: prompt
nodes:
  - {id: ask, type: LLM_CALL, user_prompt_tpl: "{{ 'a' * input.n }}"}
"""


ACTIVE = ("pending", "running")


def ended(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run, once it has ended (or paused)."""
    return dict(wait_for(lambda: (r := client.get(f"/api/runs/{run_id}").json())["status"] not in ACTIVE and r))


def test_a_run_stays_within_its_budget_and_a_template_within_its_render_budget(store: Store, tmp_path: Path) -> None:
    """`[runs] max_child_runs = 10`: the multiplying graph is refused at validation; a MAP over a
    list without `maxItems` stops at 10 child runs, failing the run naming the budget. A template
    printing 200 million characters fails its node; one printing a million is recorded in part."""
    config = tmp_path / "plait.toml"
    config.write_text("[runs]\nmax_child_runs = 10\n")
    script = tmp_path / "script.yaml"
    script.write_text("responses:\n  - {node: ask, text: done}\n")
    try:
        with served_app(store=store, llm=f"scripted:{script}", config=str(config)) as served, served.client() as client:
            refused = client.post("/api/graphs/validate", json={"source": BOMB}).json()
            assert "run_budget" in [e["code"] for e in refused["errors"]], refused
            for source in (FAN, PROMPT):
                assert client.post("/api/graphs", json={"source": source}).status_code == 201
            fan = client.post("/api/runs", json={"graph": "fan", "input": {"xs": list(range(40))}}).json()["run_id"]
            over = client.post("/api/runs", json={"graph": "prompt", "input": {"n": 200_000_000}}).json()["run_id"]
            large = client.post("/api/runs", json={"graph": "prompt", "input": {"n": 1_000_000}}).json()["run_id"]
            runs = {run_id: ended(client, run_id) for run_id in (fan, over, large)}
            assert client.get("/api/health").status_code == 200
            node_run = client.get(f"/api/node-runs/{runs[large]['nodes'][0]['id']}").json()
    finally:
        forget_loaded()
    assert (runs[fan]["status"], runs[fan]["error"]["kind"]) == ("failed", "budget")
    assert "budget of 10 child runs" in runs[fan]["error"]["message"]
    assert len([r for r in store.runs.list(children=True, limit=1000) if r.parent_run_id == fan]) == 10
    assert runs[over]["status"] == "failed"
    assert runs[over]["nodes"][0]["error"]["kind"] == "render"
    assert runs[large]["status"] == "completed"
    prompt = node_run["input_snapshot"]["rendered_user_prompt"]
    assert prompt.endswith(f"…[{1_000_000 - RECORD_CHARS} more characters not kept in this record]")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_many_large_graphs_sent_to_be_validated_leave_the_caches_bounded(store: Store) -> None:
    """Sixty distinct 1 MB expressions through `POST /api/graphs/validate`: the syntax cache holds
    their digests within its bound, and the texts are not kept. One store: validating reads the
    store only for the stored skills a graph names, and these name none."""
    with served_app(store=store) as served, served.client(timeout=60) as client:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(60):
                expression = f"({{n: {i}, pad: '" + "x" * 1_000_000 + "'}).n"
                source = (
                    f'plait: 1\nid: big{i}\nnodes:\n  - {{id: t, type: TRANSFORM, transform_expr: "{expression}"}}\n'
                )
                answer = client.post("/api/graphs/validate", json={"source": source})
                assert answer.status_code == 200
                assert answer.json()["valid"], answer.text[:500]
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    entries, held = cache_stats()["JavaScript syntax checks"]
    assert entries >= 60
    assert held <= 4 << 20
    assert kept < 20_000_000, f"{kept:,} bytes kept after sending 60 MB"
