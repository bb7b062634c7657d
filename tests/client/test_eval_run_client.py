"""`client.evals.run`: what `plait eval run` does, from Python, blocking and async, on the
client's model (SQLite and PostgreSQL); the evaluation's runs left out of `list_runs`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from plait.client import AsyncClient, Client
from plait.evaluation import GateRules
from plait.store import Store
from tests.runs.eval_run_scenario import RULES, graph, judged, new_version


def test_an_evaluation_runs_blocking_and_async(store: Store, db_url: str, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"responses": RULES}))
    llm = f"scripted:{answers}"
    with Client(db_url, llm=llm) as client:
        report = client.evals.run("feedback", set="fixes", rules=GateRules(min_comparable=1))
        assert report.verdict is not None
        assert (report.verdict["status"], report.exit_code) == ("pass", 0)
        assert report.evaluation.created_by == "python"
        assert len(client.list_runs()) == 3
        assert len(client.list_runs(evaluations=True)) == 6

    async def go() -> None:
        async with AsyncClient(db_url, llm=llm) as client:
            found = await client.evals.run("feedback", set="fixes@1", version=1, repeat=2)
            assert [len(c.candidate) for c in found.cases] == [2, 2, 2]
            assert found.verdict is not None
            assert found.verdict["status"] == "inconclusive"

    asyncio.run(go())
