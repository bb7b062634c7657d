"""The engines of a process that executes stored runs for others (the HTTP service, a worker):
each run executes on the model it records (`plait.runs.model_choice`), never silently on the
process's own.

A run recorded on the process's model (or on none) goes to the process's engine; a run on
another model goes to an engine built for that model the first time one needs it
(`provider_for`), kept for the next runs on it, and closed with the others. A model this process
cannot build (a scripted file that is not on this machine, a config gone, the embedded model not
installed) is a refusal naming the model and why (`LlmConfigError`); `refuse` records it on the
run as the engine records its own refusals: a run that never started fails (else it would wait
for ever), one a correction reopened is paused, resumable on another model.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from plait.engine.runner import Engine
from plait.llm.provider import Provider
from plait.llm.select import LlmConfigError
from plait.model.enums import RunStatus
from plait.runs.model_choice import Selection, label, provider_for
from plait.runs.session import open_engine
from plait.store import Store


class RunEngines:
    """One engine per model selection the runs executed here record: the process's own first
    (`default`), the others built on first need, all with the same options (the same events,
    leases, MCP servers, MAP spreading), opened as a run session opens its engine (`open_engine`:
    child runs settled into their parents)."""

    def __init__(
        self,
        store: Store,
        provider: Provider | None,
        *,
        llm: Selection,
        here: str,
        before_run: Callable[[], None] | None = None,
        **options: Any,
    ):
        """`provider`, `llm`: the process's own model and the selection it stands for;
        `here`: the process in a refusal's words ("this server", "this worker");
        `before_run`: called as each run is about to execute (where a process following the
        settings looks at their revision: `plait.runs.settings_in_force`);
        `options`: the rest of every engine's arguments (`Engine`)."""
        self.store = store
        self.here = here
        self._before_run = before_run
        self._options = options
        self.default = open_engine(store, provider, llm=llm, **options)
        self._others: dict[str, Engine] = {}
        """Engines for runs recorded on another model than this process's, by selection."""
        self._lock = threading.Lock()

    def for_run(self, run_id: str) -> Engine:
        """The engine for the model the run executes on. It reads the run and may build a
        provider: call it off the event loop. Raises LlmConfigError when that model cannot be
        used here, naming it and why."""
        if self._before_run is not None:
            self._before_run()
        selection = self.store.runs.get(run_id).llm
        if selection is None or selection == self.default.llm:
            return self.default
        key = json.dumps(selection, sort_keys=True)
        with self._lock:
            if key not in self._others:
                try:
                    provider = provider_for(selection)
                except LlmConfigError as exc:
                    raise LlmConfigError(
                        f"run {run_id} executes on {label(selection)}, which {self.here} cannot use: {exc}"
                    ) from None
                self._others[key] = open_engine(self.store, provider, llm=selection, **self._options)
            return self._others[key]

    @property
    def provider(self) -> Provider | None:
        """The process's own model: the one a new run executes on."""
        return self.default.runtime.provider

    def provider_of(self, run_id: str) -> Provider | None:
        """The model the run executes on (`for_run`)."""
        return self.for_run(run_id).runtime.provider

    @property
    def all(self) -> list[Engine]:
        """Every engine built so far, the process's own first."""
        with self._lock:
            return [self.default, *self._others.values()]

    async def aclose(self) -> None:
        """Close every engine (and so its provider)."""
        for engine in self.all:
            await engine.aclose()


def refuse(store: Store, run_id: str, message: str) -> RunStatus | None:
    """Record on a `pending` run that it was refused, with `message`: failed when it never
    started, paused when it had (a correction reopened it). The status it now has; None when it
    was not pending (a paused or interrupted run stays as it is, resumable; an ended one is left
    alone)."""
    error = {"kind": "engine", "message": message}
    record = store.runs.get(run_id)
    status = RunStatus.FAILED if record.started_at is None else RunStatus.PAUSED
    return status if store.runs.set_status(run_id, status, expected=[RunStatus.PENDING], error=error) else None
