"""A long chain of TRANSFORM nodes runs to its end (deeper than Python's recursion limit), and ten
thousand evaluations in one reused sandbox context: none fails for memory that earlier ones left."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from plait.engine.runner import Engine
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.sandbox import JsSandbox
from plait.store import Store

CHAIN = 2_500
EVALUATIONS = 10_000


def test_a_long_transform_chain_completes(tmp_path: Path) -> None:
    nodes = [{"id": "n0", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"}]
    nodes += [
        {"id": f"n{i}", "type": "TRANSFORM", "transform_expr": f"({{n: nodes.n{i - 1}.n + 1}})"}
        for i in range(1, CHAIN)
    ]
    edges = [{"source": f"n{i - 1}", "target": f"n{i}"} for i in range(1, CHAIN)]
    graph = tmp_path / "chain.json"  # JSON: PyYAML's emitter took seconds to write 2,500 nodes
    graph.write_text(json.dumps({"id": "chain", "nodes": nodes, "edges": edges}))
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        run_id = start_run(store, str(graph), {"n": 0})
        engine = Engine(store, None)

        async def go() -> object:
            try:
                return await engine.run(run_id)
            finally:
                await engine.aclose()

        outcome = asyncio.run(go())
        assert outcome.status == RunStatus.COMPLETED, outcome  # type: ignore[attr-defined]
        assert outcome.output == {"n": CHAIN}  # type: ignore[attr-defined]


def test_ten_thousand_evaluations_in_one_sandbox_leave_no_memory_behind() -> None:
    value: object = {"n": 0}
    with JsSandbox(timeout_s=5.0) as sandbox:
        for _ in range(EVALUATIONS):
            value = sandbox.evaluate(
                "({n: nodes.prev.n + 1, pad: 'x'.repeat(1000)})", {"input": {}, "nodes": {"prev": value}}
            )
    assert value["n"] == EVALUATIONS  # type: ignore[index]
