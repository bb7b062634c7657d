"""A long chain of TRANSFORM nodes runs to its end: no evaluation fails for memory that earlier
ones left in a reused sandbox context."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from plait.engine.runner import Engine
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store

CHAIN = 10_000


def test_a_ten_thousand_transform_chain_completes(tmp_path: Path) -> None:
    nodes = [{"id": "n0", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"}]
    nodes += [
        {"id": f"n{i}", "type": "TRANSFORM", "transform_expr": f"({{n: nodes.n{i - 1}.n + 1}})"}
        for i in range(1, CHAIN)
    ]
    edges = [{"source": f"n{i - 1}", "target": f"n{i}"} for i in range(1, CHAIN)]
    graph = tmp_path / "chain.yaml"
    graph.write_text(yaml.safe_dump({"id": "chain", "nodes": nodes, "edges": edges}, sort_keys=False))
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
