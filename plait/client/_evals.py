"""`client.evals`: what `plait eval` does, from Python, over the client's store: evaluation sets
built from a graph's corrections and approvals, listed and shown, and evaluations run on them
(docs/evaluation.md).

Each method is one of `AsyncEvals`, with its blocking twin on `Evals`; a new one goes in both.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from plait.client._namespaces import _Blocking
from plait.client._sync import _blocking
from plait.client._wording import for_python
from plait.errors import PlaitError

if TYPE_CHECKING:
    from plait.client._async import AsyncClient
    from plait.evaluation import GateRules
    from plait.runs.eval_build import SetShown
    from plait.runs.eval_run import EvaluationReport
    from plait.store.evaluations import EvalSet

BY = "python"


class AsyncEvals:
    """Evaluation sets: build, list, show; evaluations: run."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def build(
        self, graph: str, *, name: str, sources: Sequence[str] = ("corrections", "approvals"),
        since: float | str | None = None, nodes: Sequence[str] | None = None, level: str = "node",
    ) -> EvalSet:  # fmt: skip
        """The next revision of the set `name` of `graph`, built from its corrected and approved
        outputs. `since`: Unix seconds, a date ("2026-12-01") or a duration back ("7d"); `nodes`:
        only these nodes' cases; `level`: "node" or "run". Refused when nothing is found."""
        from plait.runs.eval_build import build_set, since_time

        after = None if since is None else self._client._refused(since_time, since)
        return self._client._refused(
            build_set, self._client.store, graph, name=name, sources=list(sources), since=after,
            nodes=None if nodes is None else list(nodes), level=level, by=BY,
        )  # fmt: skip

    async def sets(self, graph: str) -> builtins.list[EvalSet]:
        """Every revision of every set of the graph, newest first."""
        from plait.runs.eval_build import list_sets

        return self._client._refused(list_sets, self._client.store, graph)

    async def show(self, graph: str, name: str, revision: int | None = None) -> SetShown:
        """A set (its newest revision unless `revision`, or `name` written `NAME@REV`) with its cases."""
        from plait.runs.eval_build import show_set

        return self._client._refused(show_set, self._client.store, graph, name, revision)

    async def run(
        self, graph: str, *, set: str, version: int | None = None, baseline_version: int | None = None,
        repeat: int = 1, rules: GateRules | None = None, time_split: bool = False, concurrency: int = 4,
    ) -> EvaluationReport:  # fmt: skip
        """Score version `version` of `graph` (default: its newest) on the set `set` (`NAME` or
        `NAME@REV`) against the recorded outputs (or `baseline_version` run afresh), each case's
        runs executed here on the client's model; the report, whose `verdict` holds the gate's
        `status`, `exit_code` and `lines`. An evaluation stopped part-way goes on from where it
        stopped when asked again. `concurrency`: cases driven at once (the provider pool still
        limits the calls)."""
        from plait.runs.eval_run import RECORDED, default_similarity, run_evaluation, start_evaluation

        client = self._client
        store, engines = client._open()
        evaluation = client._refused(
            start_evaluation, store, graph, set, candidate_version=version,
            baseline=RECORDED if baseline_version is None else baseline_version, repetitions=repeat, rules=rules,
            by=BY, time_split=time_split,
        )  # fmt: skip
        engine = engines.default

        async def drive(run_id: str) -> object:
            return await client._drive(run_id, engine)

        try:
            return await run_evaluation(store, evaluation.id, drive, similarity=default_similarity(), llm=engine.llm,
                                        concurrency=concurrency)  # fmt: skip
        except PlaitError as exc:
            exc.hint = for_python(exc.hint)
            raise


class Evals(_Blocking[AsyncEvals]):
    """`Client.evals`: the methods of `AsyncEvals`, each returning its result."""

    build = _blocking(AsyncEvals.build)
    sets = _blocking(AsyncEvals.sets)
    show = _blocking(AsyncEvals.show)
    run = _blocking(AsyncEvals.run)
