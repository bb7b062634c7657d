"""Evaluations driven inside the server: one background task per evaluation, its runs handed to
the server's executor like any run (here or on workers), and a signal to its event streams each
time it records something.

What a stream says is read from the store (`EvaluationReport.events`), so it is the same from
any process and after a restart; the signal only saves the stream from waiting for its next
look. An evaluation whose server stopped stays `running`: starting it again (the same request)
goes on from where it stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import Any

from plait.api.executor import RunExecutor, ServiceStopping
from plait.api.state import ServerState
from plait.model.enums import RunStatus
from plait.runs.eval_run import CONCURRENCY, Interrupted, default_similarity, run_evaluation

log = logging.getLogger("plait.api")


class EvaluationTasks:
    """The evaluations one server drives, and who waits to hear of them."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._changed: dict[str, asyncio.Event] = {}

    def driving(self, evaluation_id: str) -> bool:
        return evaluation_id in self._tasks

    def start(self, state: ServerState, evaluation_id: str, *, concurrency: int = CONCURRENCY) -> bool:
        """Drive the evaluation in the background, `concurrency` cases at once; False when this
        server drives it already."""
        if evaluation_id in self._tasks:
            return False
        driven = self._drive(state, evaluation_id, concurrency)
        task = asyncio.create_task(driven, name=f"plait-evaluation-{evaluation_id}")
        self._tasks[evaluation_id] = task
        task.add_done_callback(lambda _: self._done(evaluation_id))
        return True

    def waiter(self, evaluation_id: str) -> asyncio.Event:
        """Set the next time the evaluation records something: take it before reading the store,
        so that nothing recorded after the read is missed."""
        return self._changed.setdefault(evaluation_id, asyncio.Event())

    def _signal(self, evaluation_id: str) -> None:
        signal = self._changed.pop(evaluation_id, None)
        if signal is not None:
            signal.set()

    async def _drive(self, state: ServerState, evaluation_id: str, concurrency: int) -> None:
        executor = state.executor

        async def drive(run_id: str) -> None:
            while True:
                try:
                    executor.launch(run_id)
                except ServiceStopping:
                    raise Interrupted(f"the server stopped before run {run_id} ended", "start it again") from None
                await executor.settled(run_id)
                run = await asyncio.to_thread(state.store.runs.get, run_id)
                if run.status != RunStatus.PAUSED or run.wake_at is None:
                    return
                await asyncio.sleep(max(0.0, run.wake_at - time.time()))  # parked by a WAIT node: until it is due

        def said(kind: str, data: dict[str, Any]) -> None:
            self._signal(evaluation_id)

        try:
            await run_evaluation(state.store, evaluation_id, drive, similarity=default_similarity(),
                                 llm=executor.llm, concurrency=concurrency, on_event=said)  # fmt: skip
        except Interrupted as exc:
            log.warning("evaluation %s stopped: %s; starting it again goes on", evaluation_id, exc)
        except Exception:
            log.exception("evaluation %s failed", evaluation_id)  # recorded on the evaluation, with its error
        finally:
            self._signal(evaluation_id)

    def _done(self, evaluation_id: str) -> None:
        self._tasks.pop(evaluation_id, None)

    async def aclose(self) -> None:
        """Stop driving every evaluation (each stays `running`: starting it again goes on)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)


_TASKS: weakref.WeakKeyDictionary[RunExecutor, EvaluationTasks] = weakref.WeakKeyDictionary()


def evaluation_tasks(state: ServerState) -> EvaluationTasks:
    """The evaluations this server (its executor) drives."""
    found = _TASKS.get(state.executor)
    if found is None:
        found = _TASKS[state.executor] = EvaluationTasks()
    return found


async def stop_evaluations(executor: RunExecutor) -> None:
    """The server is stopping: the evaluations it drives stop, resumable (before its runs stop)."""
    found = _TASKS.pop(executor, None)
    if found is not None:
        await found.aclose()
