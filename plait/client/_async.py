"""`AsyncClient`: Plait from Python, over the same run use cases as the CLI and the server.

One client is one store and one set of engines (one per model its runs record), opened on
first use and closed by `aclose` (or `async with`). It runs the graphs itself, on the loop it
is used from; `Client` is the same client for code that is not async.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from plait.client import _corrections, _graphs
from plait.client._flights import Flights
from plait.client._results import ClientClosed, RunResult, result_from, result_of
from plait.client._wiring import open_engines, provider_of
from plait.client._wording import for_python
from plait.errors import PlaitError
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus

if TYPE_CHECKING:
    from plait.client._corrections import Corrected
    from plait.client._graphs import GraphSource, SavedGraph
    from plait.engine.events import Event
    from plait.engine.outcome import RunOutcome
    from plait.engine.runner import Engine
    from plait.evolve.catalog import GraphSummary
    from plait.evolve.drafts import Draft, DraftListing
    from plait.evolve.fork import ForkDiff
    from plait.llm.provider import Provider
    from plait.runs.batch import BatchProgress
    from plait.runs.check import RunCheck
    from plait.runs.corrections import Correction
    from plait.runs.diff import RunDiff
    from plait.runs.dry_run import DryRun
    from plait.runs.engines import RunEngines
    from plait.runs.promote import Promotions
    from plait.runs.read import RunView
    from plait.runs.replay import Replay
    from plait.runs.replay_search import SearchReplay
    from plait.store import RunRecord, Store, StoredGraph
    from plait.store.evaluations import Promotion
    from plait.store.ledger import FieldVersion

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

WAIT_POLL_S = 0.2
"""How often `wait` reads a run that another process executes."""


class AsyncClient:
    """Runs graphs, corrects them and reads them back, from async code.

    `db`: the store (a SQLite path or a database URL; default as the CLI: `$PLAIT_DB`, else
    the store found from the current folder). `llm`: the model the runs it starts execute on, as the CLI's `--llm`
    (`"local"`, `"scripted:FILE"`) or a `Provider` object (a test's scripted provider); `config`:
    a plait.toml (default: the one the CLI would read). A run keeps the model it started on:
    resuming or correcting it executes on that model, as on the command line. `cache`: answer a
    model call from the response cache when the same request was answered before.
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        llm: str | Provider | None = None,
        config: str | os.PathLike[str] | None = None,
        cache: bool = True,
    ) -> None:
        self._db = None if db is None else str(db)
        self._llm = llm
        self._config = None if config is None else str(config)
        self._cache = cache
        self._store: Store | None = None
        self._engines: RunEngines | None = None
        self._flights = Flights()
        self._driving: set[asyncio.Task[RunOutcome]] = set()
        """Every run executing on this client now (started, resumed, continued after a correction)."""
        self._closed = False
        from plait.client._chat import AsyncChat
        from plait.client._evals import AsyncEvals
        from plait.client._knowledge import AsyncKnowledge, AsyncMemory
        from plait.client._namespaces import AsyncSchedules, AsyncTemplates, AsyncTokens  # it imports `_sync`
        from plait.client._settings import AsyncSettings
        from plait.client._skills import AsyncSkills

        self.templates = AsyncTemplates(self)
        self.schedules = AsyncSchedules(self)
        self.tokens = AsyncTokens(self)
        self.chat = AsyncChat(self)
        self.kb = AsyncKnowledge(self)
        self.memory = AsyncMemory(self)
        self.evals = AsyncEvals(self)
        self.skills = AsyncSkills(self)
        self.settings = AsyncSettings(self)

    async def __aenter__(self) -> AsyncClient:
        self._open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the runs still executing here (each stays resumable, as after Ctrl-C) and close
        the engines and the store."""
        if self._closed:
            return
        self._closed = True
        flights = list(self._driving)
        for task in flights:
            task.cancel()
        await asyncio.gather(*flights, return_exceptions=True)
        if self._engines is not None:
            await self._engines.aclose()
        if self._store is not None:
            self._store.close()

    @property
    def store(self) -> Store:
        """The store this client reads and writes (opened on first use)."""
        return self._open()[0]

    # -- graphs ---------------------------------------------------------------------------

    async def save_graph(self, graph: GraphSource) -> SavedGraph:
        """Store a graph (a file path, a `GraphDef`, a `GraphBuilder` or its data) as a new
        version when it changed; raises `GraphInvalid` with every problem when it is not valid."""
        return self._refused(_graphs.save, self.store, graph)

    async def get_graph(self, ref: str, version: int | None = None) -> StoredGraph:
        """A stored graph by id or slug (its latest version unless `version`)."""
        return self._refused(self.store.graphs.get, ref, version)

    async def list_graphs(self, *, source_type: str | None = None) -> list[GraphSummary]:
        from plait.evolve.catalog import list_graphs

        return self._refused(list_graphs, self.store, source_type=source_type)

    async def graph_versions(self, ref: str) -> list[Any]:
        """Every stored version of a graph, oldest first."""
        return self._refused(_graphs.versions, self.store, ref)

    async def export_graph(self, ref: str, version: int | None = None, *, as_json: bool = False) -> str:
        """The graph as a YAML (or JSON) document that `save_graph` reads back as the same graph."""
        return self._refused(_graphs.export, self.store, ref, version, as_json=as_json)

    async def delete_graph(self, ref: str, *, force: bool = False) -> Any:
        """Delete a stored graph; one with runs needs `force` (the runs stay readable)."""
        return self._refused(_graphs.delete, self.store, ref, force=force)

    async def promote_graph(self, ref: str, version: int, *, gate: str | None = None, force: bool = False,
                            note: str | None = None) -> Promotion:  # fmt: skip
        """Make `version` what runs of the graph use by default, as `plait graphs promote` does:
        through the `gate` set's passing verdict (else `GateRefused`), or `force` with a `note`."""
        return self._refused(_graphs.promote, self.store, ref, version, gate=gate, force=force, note=note)

    async def graph_promotions(self, ref: str) -> Promotions:
        """The graph's promoted version (None: its latest runs) and every promotion, newest first."""
        return self._refused(_graphs.promotions, self.store, ref)

    async def fork(self, ref: str, name: str | None = None) -> StoredGraph:
        """A copy of the graph to change on its own, that can take its parent's changes later."""
        from plait.evolve.fork import fork_graph

        return self._refused(fork_graph, self.store, ref, name)

    async def fork_diff(self, ref: str, against: int | None = None) -> ForkDiff:
        """How a fork and its parent differ, item by item, since the fork was made."""
        from plait.evolve.fork import diff_fork

        return self._refused(diff_fork, self.store, ref, against)

    async def merge(self, ref: str, keys: list[str] | None = None, *, refork: bool = False) -> StoredGraph:
        """Take the parent's changes to `keys` (`NODE_ID`, `schema:ID`, `edge:ID`) into the fork,
        or with `refork` replace the fork by its parent's latest version."""
        return self._refused(_graphs.merge, self.store, ref, keys or [], refork=refork)

    async def drafts(self) -> list[DraftListing]:
        """Graphs' edits kept before they are a version (the workbench keeps them as a person
        edits, valid or not), the most recent first."""
        from plait.evolve.drafts import list_drafts

        return self._refused(list_drafts, self.store)

    async def draft(self, ref: str) -> Draft:
        """The draft of graph `ref`, with what is still wrong with it (`check`)."""
        from plait.evolve.drafts import read_draft

        return self._refused(read_draft, self.store, ref)

    async def discard_draft(self, ref: str) -> None:
        """Forget the draft of graph `ref` (its edits are lost)."""
        from plait.evolve.drafts import drop_draft

        self._refused(drop_draft, self.store, ref)

    # -- runs -----------------------------------------------------------------------------

    async def start(
        self,
        graph: GraphSource,
        input: dict[str, Any] | None = None,
        *,
        stream: bool | str | Sequence[str] | None = None,
        version: int | None = None,
    ) -> str:
        """Create a run of `graph` (stored first when it is a file, a `GraphDef` or a builder)
        and start executing it on this client's loop; its id. `wait` or `events` follow it.
        `stream`: node ids (or True: every node) whose answers `events` passes on as they
        arrive (`NodeDelta`), besides the nodes the graph marks `stream: true`. A stored graph
        runs its promoted version, else its latest, unless `version` names another."""
        run_id = self._create(graph, input, version)
        engine = self._open()[1].default  # the model a new run executes on
        if stream:
            from plait.engine.streaming import StreamChoice

            engine.stream(run_id, StreamChoice.of(stream))
        self._flights.start(run_id, self._drive(run_id, engine))
        return run_id

    def _create(self, graph: GraphSource, input: dict[str, Any] | None, version: int | None = None) -> str:
        """The new run of `graph` (refused before it exists when the input or the graph is wrong)."""
        store, engines = self._open()
        ref = _graphs.reference(store, graph)
        from plait.runs.start import start_run

        run_id = self._refused(start_run, store, ref, dict(input or {}), llm=engines.default.llm,
                               check=engines.default.check_executable, version=version)  # fmt: skip
        return run_id

    @overload
    async def run(
        self, graph: GraphSource, input: dict[str, Any] | None = None, *, version: int | None = None
    ) -> RunResult[Any]: ...
    @overload
    async def run(
        self, graph: GraphSource, input: dict[str, Any] | None = None, *, output_type: type[T],
        version: int | None = None,
    ) -> RunResult[T]: ...  # fmt: skip
    async def run(
        self, graph: GraphSource, input: dict[str, Any] | None = None, *, output_type: Any = None,
        version: int | None = None,
    ) -> RunResult[Any]:  # fmt: skip
        """Start a run and wait until it completes, fails or waits for a person. With
        `output_type` (a pydantic model, a dataclass, any type pydantic validates), the output
        is validated into it (`OutputMismatch` when it does not fit). `version` as for `start`."""
        run_id = self._create(graph, input, version)
        return await self._finished(self._drive(run_id, self._open()[1].default), output_type)

    async def wait(self, run_id: str, *, output_type: Any = None, timeout: float | None = None) -> RunResult[Any]:
        """The run's result once it completed, failed, was cancelled or waits for a person,
        whether it executes here or in another process (then read every `WAIT_POLL_S`).
        `timeout` (seconds): raise TimeoutError when it has not stopped by then."""
        flight = self._flights.get(run_id)
        if flight is not None:
            await asyncio.wait_for(asyncio.shield(flight.task), timeout)
        else:
            await asyncio.wait_for(self._stopped(run_id), timeout)
        return self._refused(result_of, self.store, self.store.runs.get(run_id), output_type)

    async def _finished(self, task: asyncio.Task[RunOutcome], output_type: Any = None) -> RunResult[Any]:
        """The result of a run this client drives with `task`, once it stopped (a run that
        failed or waits is read back for its node's reason or its reviews)."""
        outcome = await task
        if outcome.status not in (RunStatus.FAILED, RunStatus.PAUSED):
            return self._refused(result_from, outcome, output_type)
        return self._refused(result_of, self.store, self.store.runs.get(outcome.run_id), output_type)

    async def resume(self, run_id: str, *, llm: str | None = None, config: str | None = None) -> RunResult[Any]:
        """Continue a run after a crash, a kill or a pause: completed nodes are never executed
        again, and a node whose process went down while executing it is, however often that
        happened (an automatic continuation stops at two). It executes on the run's own model
        unless `llm` or `config` names another (recorded on the run)."""
        self._on_model(run_id, llm, config, by="resume")
        return await self._finished(self._drive(run_id, retry_lost=True))

    async def events(self, run_id: str) -> AsyncIterator[Event]:
        """The events of a run this client started (`start`), from its start, then each new one
        until it stops. A run that has stopped and was not started here has none to give; a run
        executing elsewhere is refused."""
        flight = self._flights.get(run_id)
        if flight is None:
            record = self._refused(self.store.runs.get, run_id)
            if _stopped(record):
                return
            raise PlaitError(
                f"run {run_id} is not executing in this client (it is {record.status})",
                f'start it with client.start, or continue it with client.resume("{run_id}")',
                code="not_executing_here",
            )
        async for event in flight.follow():
            yield event

    async def cancel(self, run_id: str) -> str:
        """Stop a run for good (`cancelled`) that no process executes now; its status before."""
        return self._refused(self.store.run_admin.cancel, run_id)

    async def delete_run(self, run_id: str, *, force: bool = False) -> Any:
        """Delete a run with its node runs and ledger; an ended run needs `force`."""
        return self._refused(self.store.run_admin.delete, run_id, force=force)

    async def dry_run(
        self, graph: GraphSource, input: dict[str, Any] | None = None, *, upstream: dict[str, Any] | None = None
    ) -> DryRun:
        """Render every prompt with placeholder (or `upstream`) node outputs and make the checks
        a run makes before calling a model; calls no model, stores no run."""
        from plait.runs.dry_run import dry_run_on

        store, engines = self._open()
        stored = self._refused(store.graphs.get_default, _graphs.reference(store, graph))  # as a run would
        return await dry_run_on(stored.graph, dict(input or {}), engines.provider, upstream or {})

    async def batch(
        self,
        graph: GraphSource,
        input_file: str | os.PathLike[str],
        output: str | os.PathLike[str],
        *,
        failed: str | os.PathLike[str] | None = None,
        concurrency: int = 8,
        resume: bool = False,
    ) -> BatchProgress:
        """Run the graph once per record of a JSONL file, `concurrency` at a time, writing each
        output (and each failure) as a line; `resume` continues the batch of these files."""
        from plait.runs.batch import BatchFiles, open_batch

        store, engines = self._open()
        ref = _graphs.reference(store, graph)
        files = BatchFiles.of(Path(input_file), Path(output), None if failed is None else Path(failed))
        batch, progress = self._refused(open_batch, store, engines.default, ref, files, resume=resume,
                                        llm=engines.default.llm)  # fmt: skip
        if resume:
            batch.catch_up_output()
        await batch.run(concurrency, progress, lambda _: None)
        return progress

    # -- corrections ------------------------------------------------------------------------

    async def override(
        self, run_id: str, node_id: str, value: Any, *, policy: str = "INVALIDATE", note: str | None = None
    ) -> Corrected:
        """Correct a node's output (the model's original is kept); `policy` says what happens
        downstream: KEEP, INVALIDATE (mark stale), RERUN or RERUN_ALL. A correction that leaves
        work executes the run at once; `Corrected.result` is how it ended."""
        return await self._correct(run_id, _corrections.override(node_id, value, policy, note), "override")

    async def rerun(self, run_id: str, node_id: str, *, downstream: bool = False, fresh: bool = True) -> Corrected:
        """Run a node again (a new activation; the old one is kept). `fresh`: ask the model
        afresh instead of the response cache."""
        return await self._correct(run_id, _corrections.rerun(node_id, downstream, fresh), "rerun")

    async def review(
        self, run_id: str, node_id: str, value: Any = None, *, approve: bool = False, note: str | None = None
    ) -> Corrected:
        """Answer a node waiting for a person: `approve=True`, or a corrected `value`; the run continues."""
        return await self._correct(run_id, _corrections.review(node_id, value, approve, note), "review")

    async def rollback(self, run_id: str, target: str, to_version: int, *, cascade: bool = False) -> Corrected:
        """Restore a value (`NODE_ID`, `NODE_ID.FIELD`, `input`, `input.FIELD`) to an earlier
        ledger version; its newer readers become stale (with `cascade`: they run again)."""
        return await self._correct(run_id, _corrections.rollback(target, to_version, cascade), "rollback")

    # -- reading ------------------------------------------------------------------------------

    async def get_run(self, run_id: str, *, raw: bool = False) -> RunView:
        """A run with every activation and each one's effective output (migrated to the graph's
        current schema versions unless `raw`)."""
        from plait.runs.read import read_run

        return self._refused(read_run, self.store, run_id, raw=raw)

    async def list_runs(
        self,
        *,
        graph: str | None = None,
        status: str | None = None,
        limit: int = 100,
        children: bool = False,
        evaluations: bool = False,
    ) -> list[RunRecord]:
        """Runs, newest first; child runs only with `children`, the runs evaluations made only
        with `evaluations`."""
        return self._refused(
            self.store.runs.list, graph=graph, status=status, limit=limit, children=children, evaluations=evaluations
        )

    async def ledger(self, run_id: str, owner: str | None = None) -> list[FieldVersion]:
        """Every version of the run's values (of one node, or `input`), oldest first: who set
        each, when and why."""
        self._refused(self.store.runs.get, run_id)
        return self._refused(self.store.ledger.history, run_id, owner)

    async def diff(self, run_a: str, run_b: str) -> RunDiff:
        """Two runs compared node by node: what changed in each output."""
        from plait.runs.diff import diff_runs

        return self._refused(diff_runs, self.store, run_a, run_b)

    async def check(self, run_id: str) -> RunCheck:
        """Whether a settled run is consistent: every read current or marked stale, branches and
        outputs as the engine decides them now."""
        from plait.runs.check import check_run

        return self._refused(check_run, self.store, run_id)

    async def replay(
        self, node_run_id: str, *, llm: str | None = None, model: str | None = None
    ) -> Replay | SearchReplay:
        """Send a recorded model call again (on the run's model unless `llm`), and compare. A
        RETRIEVE node run searches again at the generation it recorded (no model is called)."""
        from plait.runs.replay import replay
        from plait.runs.replay_search import is_search, replay_search

        store, engines = self._open()
        record = self._refused(store.runs.node_run, node_run_id)
        if is_search(record):
            return self._refused(replay_search, store, record)
        provider = self._refused(engines.provider_of, record.run_id) if llm is None else provider_of(llm, self._config)
        if provider is None:
            raise PlaitError(
                f"no model to replay node run {node_run_id} on",
                'pass llm="local" or llm="scripted:FILE", or configure a provider in plait.toml',
                code="no_provider",
            )
        return await replay(record, provider, model)

    # -- the machinery --------------------------------------------------------------------------

    def _open(self) -> tuple[Store, RunEngines]:
        if self._closed:
            raise ClientClosed("this client is closed", "open a new one")
        if self._store is None or self._engines is None:
            self._store, self._engines = self._refused(open_engines, self._db, self._llm, self._config, self._cache)
            self._flights.listen_to(self._engines.default.events)
        return self._store, self._engines

    def _drive(
        self, run_id: str, engine: Engine | None = None, *, retry_lost: bool = False
    ) -> asyncio.Task[RunOutcome]:
        """Execute the run on this loop, until it stops, as a task (closing the client cancels it);
        `engine`: the one for the run's model, when known (else read from the run).
        `retry_lost`: a person asked for it (`resume`): a node lost with its process often executes."""
        from plait.runs.session import finish

        store = self._open()[0]
        engine = engine or self._refused(self._engines_for, run_id)
        drive = functools.partial(engine.run, retry_lost=retry_lost)
        task = asyncio.get_running_loop().create_task(finish(store, drive, run_id))
        self._driving.add(task)
        task.add_done_callback(self._driving.discard)
        return task

    def _engines_for(self, run_id: str) -> Engine:
        """The engine that executes the run here (its own model's)."""
        return self._open()[1].for_run(run_id)

    async def _stopped(self, run_id: str) -> None:
        while not _stopped(self._refused(self.store.runs.get, run_id)):
            await asyncio.sleep(WAIT_POLL_S)

    async def _correct(self, run_id: str, apply: Any, by: str) -> Corrected:
        """Make a correction; when it left work, execute the run (and the parents a child's
        correction reopened) on its own model."""
        store = self.store
        correction = self._refused(_corrections.make, store, run_id, apply)
        results = []
        step: Correction | None = correction
        while step is not None:
            if step.needs_run:
                results.append(await self._finished(self._drive(step.run_id)))
            step = step.parent
        return _corrections.Corrected(correction, results[0] if results else None, tuple(results[1:]))

    def _on_model(self, run_id: str, llm: str | None, config: str | None, *, by: str) -> None:
        """Record a change of model on the run when `llm` or `config` names one."""
        if llm is None and config is None:
            return
        from plait.runs.model_choice import for_run

        self._refused(for_run, self.store, run_id, llm, config, by=by)

    @staticmethod
    def _refused(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Call `function`; a refusal it raises has its hint said in the client's words."""
        try:
            return function(*args, **kwargs)
        except PlaitError as exc:
            exc.hint = for_python(exc.hint)
            raise


def _stopped(record: RunRecord) -> bool:
    """The run will not go on by itself: it ended, or it waits for a person."""
    return RunStatus(record.status) in TERMINAL_RUN_STATUSES or record.status == RunStatus.PAUSED
