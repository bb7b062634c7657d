"""`client.evals`: what `plait eval build | show` do, from Python, blocking and async, over the
same use case and store (SQLite and PostgreSQL), with refusals worded for Python."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from plait.client import AsyncClient, Client
from plait.runs.eval_build import EvalBuildError
from plait.store import NotFoundError, Store
from tests.runs.eval_scenario import judged_graph


def test_sets_are_built_listed_and_shown_blocking_and_async(store: Store, db_url: str, tmp_path: Path) -> None:
    judged = judged_graph(store, tmp_path)
    with Client(db_url) as client:
        made = client.evals.build("triage", name="triage")
        assert (made.ref, made.cases, made.created_by) == ("triage@1", 6, "python")
        only = client.evals.build("triage", name="triage", sources=["approvals"], since="7d", nodes=["classify"])
        assert (only.ref, only.cases) == ("triage@2", 2)
        assert [s.ref for s in client.evals.sets("triage")] == ["triage@2", "triage@1"]
        shown = client.evals.show("triage", "triage", revision=1)
        assert (shown.set, len(shown.cases)) == (made, 6)
        assert client.evals.show("triage", "triage@1") == shown
        assert shown.cases[0].source_run_id == judged.runs["r1"]
        with pytest.raises(EvalBuildError) as refused:
            client.evals.build("triage", name="x", since="2999-01-01")
        assert 'client.review("RUN", "NODE", approve=True)' in str(refused.value.hint)
        with pytest.raises(NotFoundError):
            client.evals.show("triage", "missing")

    async def go() -> None:
        async with AsyncClient(db_url) as client:
            made = await client.evals.build("triage", name="runs", level="run")
            assert (made.ref, made.cases) == ("runs@1", 1)
            shown = await client.evals.show("triage", "runs")
            assert [c.level for c in shown.cases] == ["run"]
            assert len(await client.evals.sets("triage")) == 3

    asyncio.run(go())
