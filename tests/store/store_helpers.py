"""Small builders shared by the store tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from plait.model import GraphDef
from plait.store import RunRecord, Store, StoredGraph

WORKER = Path(__file__).with_name("race_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def graph(slug: str = "demo", **changes: Any) -> GraphDef:
    """A small but realistic graph: a schema on the edge, an LLM node, a transform."""
    data: dict[str, Any] = {
        "id": slug,
        "name": "Démo graph",
        "schemas": [
            {"id": "label", "schema": {"type": "object", "properties": {"label": {"type": "string"}}}},
        ],
        "nodes": [
            {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}"},
            {"id": "shout", "type": "TRANSFORM", "transform_expr": "({label: nodes.classify.label.toUpperCase()})"},
        ],
        "edges": [{"source": "classify", "target": "shout", "schema_id": "label"}],
    }
    data.update(changes)
    return GraphDef.model_validate(data)


def new_run(store: Store, slug: str = "demo", run_input: dict[str, Any] | None = None) -> RunRecord:
    stored: StoredGraph = store.graphs.save(graph(slug))
    return store.runs.create(
        graph_id=stored.graph_id,
        graph_version=stored.version,
        schema_version=stored.schema_version,
        input=run_input if run_input is not None else {"text": "hello"},
    )


def spawn_workers(*argvs: list[str]) -> list[str]:
    """Run one `race_worker.py` per argv (`mode url ...`; the gate directory is inserted after
    the URL), open the gate once all of them are ready, and return their last stdout lines."""
    gate = Path(tempfile.mkdtemp(prefix="plait-gate-"))
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), argv[0], argv[1], str(gate), *argv[2:]],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    try:
        deadline = time.monotonic() + 120
        while len(list(gate.glob("ready-*"))) < len(procs):
            assert all(p.poll() is None for p in procs), "a worker died before the start"
            assert time.monotonic() < deadline, "the workers did not get ready in 120 s"
            time.sleep(0.005)
        (gate / "go").touch()
        outputs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outputs.append(out.strip().splitlines()[-1])
        return outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(gate, ignore_errors=True)
