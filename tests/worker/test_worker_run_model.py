"""A queued run executes on the model it records, not on the worker's: `plait run --llm
scripted:F --queue` taken by a `plait worker` started without `--llm` is answered by F, and
`plait runs show` says so; a run whose model the worker cannot build is refused with the
model it needs and why (failed when it never started, paused when it had), as the server does."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from worker_helpers import Cluster, wait_until

from plait.model.enums import RunStatus
from plait.runs.start import start_run

GRAPH = {
    "id": "think_then_shape",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [
        {"id": "think", "type": "LLM_CALL", "user_prompt_tpl": "Think about {{ input.text }}"},
        {"id": "shape", "type": "TRANSFORM", "transform_expr": "({answer: current, asked: input.text})"},
    ],
    "edges": [{"source": "think", "target": "shape"}, {"source": "shape", "target": "END"}],
}


def setup(cluster: Cluster) -> Path:
    """The graph, the worker's own model (plait.toml's `fake` provider, `model.yaml`) and the
    run's (`run.yaml`), answering differently; the path of the run's."""
    (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    (cluster.folder / "model.yaml").write_text(yaml.safe_dump({"responses": [{"text": "the worker's answer"}]}))
    script = cluster.folder / "run.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"text": "the run's answer"}]}))
    return script


def test_a_queued_run_executes_on_its_own_model_on_a_worker_started_without_llm(cluster: Cluster) -> None:
    script = setup(cluster)
    cluster.worker()  # no --llm: its own model is plait.toml's `fake` provider
    queued = cluster.plait("run", "graph.yaml", "-i", "text=birds", "--json", "--llm", f"scripted:{script}")
    assert queued.returncode == 0, queued.stderr + cluster.logs()
    run_id = json.loads(queued.stdout)["run_id"]
    assert json.loads(queued.stdout)["output"] == {"answer": "the run's answer", "asked": "birds"}

    shown = cluster.plait("runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    assert run["llm"] == {"llm": f"scripted:{script.resolve()}"}
    think = next(n for n in run["nodes"] if n["node_id"] == "think")
    assert [(a["provider"], a["model"]) for a in think["attempts"]] == [("scripted", "scripted")]  # not fake/...
    text = cluster.plait("runs", "show", run_id)
    assert text.returncode == 0, text.stderr
    assert "scripted/scripted" in text.stdout  # the "served by" column
    assert "fake/scripted" not in text.stdout

    # a second run on the worker's own model still executes on it (its own engine)
    own = cluster.plait("run", "graph.yaml", "-i", "text=cats", "--json")
    assert own.returncode == 0, own.stderr + cluster.logs()
    assert json.loads(own.stdout)["output"] == {"answer": "the worker's answer", "asked": "cats"}


def test_a_run_on_a_model_the_worker_cannot_build_is_refused_saying_which_and_why(cluster: Cluster) -> None:
    setup(cluster)
    gone = cluster.folder / "gone.yaml"
    graph = str(cluster.folder / "graph.yaml")
    with cluster.store() as store:
        fresh = start_run(store, graph, {"text": "a"}, llm={"llm": f"scripted:{gone}"}, announce="start")
        # a run a correction reopened: it had started, and waits to be driven again
        reopened = start_run(store, graph, {"text": "b"}, llm={"llm": f"scripted:{gone}"})
        store.runs.set_status(reopened, RunStatus.RUNNING)
        store.runs.set_status(reopened, RunStatus.PENDING)
        store.outbox.announce(reopened, "correction")
    cluster.worker()

    def ended() -> list[object] | None:
        with cluster.store() as store:
            runs = [store.runs.get(fresh), store.runs.get(reopened)]
        return runs if all(r.status != RunStatus.PENDING for r in runs) else None

    failed, paused = wait_until(ended, 60, "the worker to refuse both runs")
    assert failed.status == RunStatus.FAILED, cluster.logs()  # never started: it would wait forever
    assert paused.status == RunStatus.PAUSED, cluster.logs()  # had started: resumable on another model
    for run in (failed, paused):
        message = run.error["message"]
        assert f"run {run.id} executes on scripted:{gone}, which this worker cannot use" in message
        assert "scripted responses file not found" in message
        assert run.tokens_input == 0
    shown = cluster.plait("runs", "show", fresh)
    assert "which this worker cannot use" in shown.stdout + shown.stderr


def test_a_worker_keeps_one_engine_per_model_and_closes_them_all(cluster: Cluster) -> None:
    from plait.worker.app import WorkerSettings
    from plait.worker.runtime import WorkerRuntime

    script = setup(cluster)
    graph = str(cluster.folder / "graph.yaml")
    settings = WorkerSettings(broker=cluster.broker, db=cluster.db, config=str(cluster.config), queue=cluster.queue)
    runtime = WorkerRuntime(settings, concurrency=2)
    closed: list[object] = []
    try:
        with cluster.store() as store:
            runs = [start_run(store, graph, {"text": t}, llm={"llm": f"scripted:{script}"}) for t in ("a", "b")]
            runs.append(start_run(store, graph, {"text": "c"}, llm=runtime.engines.default.llm))
        assert [runtime.execute(run_id) for run_id in runs] == ["ended"] * 3
        with cluster.store() as store:
            answers = [store.runs.get(run_id).output["answer"] for run_id in runs]
        assert answers == ["the run's answer", "the run's answer", "the worker's answer"]
        engines = runtime.engines.all
        assert len(engines) == 2  # the worker's own, and one for scripted:run.yaml, built once
        assert engines[1].llm == {"llm": f"scripted:{script.resolve()}"}
        for engine in engines:
            engine.runtime.provider.aclose = lambda engine=engine: _closed(closed, engine)  # type: ignore[method-assign]
    finally:
        runtime.close()
    assert closed == engines


async def _closed(closed: list[object], engine: object) -> None:
    closed.append(engine)
