"""An evaluation drives at most `concurrency` cases at once (`run_evaluation`'s setting; the
driver's semaphore), on SQLite and PostgreSQL: two cases reach their runs together, the third
waits for one of them."""

from __future__ import annotations

import asyncio

from plait.evaluation import GateRules
from plait.runs.eval_run import EvaluationReport, run_evaluation, start_evaluation
from plait.runs.session import RunSession
from plait.store import Store
from tests.runs.eval_run_scenario import graph, judged, new_version, provider


def test_an_evaluation_drives_at_most_its_concurrency_of_cases_at_once(store: Store) -> None:
    judged(store)  # three cases
    new_version(store, graph("Label v2: {{ current.text }}"))
    in_flight: list[str] = []
    seen: list[int] = []

    async def go() -> EvaluationReport:
        session = RunSession(store, provider())
        both = asyncio.Event()

        async def drive(run_id: str) -> object:
            in_flight.append(run_id)
            seen.append(len(in_flight))
            if len(in_flight) == 2:
                both.set()
            try:  # the first run waits for a second one: with one case at a time this times out
                await asyncio.wait_for(both.wait(), timeout=60)
                return await session.finish(run_id)
            finally:
                in_flight.remove(run_id)

        try:
            evaluation = start_evaluation(store, "feedback", "fixes", by="test", rules=GateRules(min_comparable=1))
            return await run_evaluation(store, evaluation.id, drive, concurrency=2)
        finally:
            await session.aclose()

    report = asyncio.run(go())
    assert max(seen) == 2
    assert len(seen) == 3
    assert report.verdict is not None
    assert report.verdict["status"] == "pass"
