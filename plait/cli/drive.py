"""Driving a run from a command: the model provider it executes on, the engine with the live
view, and the exit code that says how it ended. `plait run`, `plait resume` and every
correction that leaves work to execute share it, so they report and exit alike."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any

import typer

from plait.cli.common import EXIT_FAILED, EXIT_OK, EXIT_PAUSED, fail
from plait.cli.options import Driving


def provider_from_options(spec: str | None, config: str | None) -> Any:
    """The provider `--llm` and `--config` name (None when none is available); exit 2 on a bad one."""
    from plait.llm.select import LlmConfigError, provider_from_spec

    try:
        return provider_from_spec(spec, config)
    except LlmConfigError as exc:
        fail(str(exc))


def run_provider(store: Any, run_id: str, spec: str | None, config: str | None, *, by: str) -> Any:
    """The provider to execute an existing run with: the run's own model unless --llm/--config
    names another (then the change is recorded on the run, `by` the command)."""
    from plait.llm.select import LlmConfigError
    from plait.runs.model_choice import for_run

    try:
        return for_run(store, run_id, spec, config, by=by)
    except LlmConfigError as exc:
        fail(str(exc))


def mcp_servers(config: str | None) -> Any:
    """The MCP servers the configuration registers; exit 2 when it cannot be read."""
    from plait.config import ConfigError, configured_servers

    try:
        return configured_servers(config)
    except ConfigError as exc:
        fail(str(exc))


def session_for(store: Any, provider: Any, how: Driving, *, retry_lost: bool = False, **options: Any) -> Any:
    """The run session a command drives with: the response cache as --no-cache says, the MCP
    servers of the configuration, graph files on this machine allowed as graph references;
    `retry_lost`: a person asked to continue the run, so a node whose process went down
    executes again (see `Engine`); `options`: the engine's others."""
    from plait.runs.session import RunSession
    from plait.runs.start import local_graphs

    servers = mcp_servers(how.config)
    return RunSession(
        store,
        provider,
        cache=how.cache,
        mcp_servers=servers,
        graphs=local_graphs(store),
        retry_lost=retry_lost,
        **options,
    )


def _say_waiting(run_id: str, wake_at: float) -> None:
    """What a command says when a WAIT node parks the run and it waits for it."""
    from datetime import datetime

    when = datetime.fromtimestamp(wake_at).astimezone().isoformat(timespec="seconds")
    sys.stderr.write(f"waiting until {when} (a WAIT node); Ctrl-C leaves the run parked: plait resume {run_id}\n")


def execute(session: Any, run_id: str, how: Driving, *, show_output: bool = True) -> None:
    """Drive the run with `session` (`session_for`) and report how it ended; `show_output=False`
    keeps the run output off stdout (a correction prints the corrected value there instead).
    Always exits, with the run's code."""
    from plait.cli import interrupt
    from plait.cli.live import LiveView
    from plait.cli.outcome import report_outcome
    from plait.engine.outcome import EngineError
    from plait.model.enums import RunStatus
    from plait.store.faults import StoreUnavailable

    store = session.store
    view: Any = None if how.quiet else LiveView(store, run_id)
    if how.stream:
        from plait.cli.streamed import StreamView

        session.stream(run_id, how.stream)
        view = None  # the text takes stderr: no table drawn over it
        session.events.subscribe(StreamView().on_event)
    if view is not None:
        session.events.subscribe(view.on_event)

    try:
        with view if view is not None else nullcontext():
            outcome = interrupt.run(session.finish(run_id, None if how.quiet else _say_waiting), cleanup=session.aclose)
    except EngineError as exc:
        fail(str(exc))
    except StoreUnavailable as exc:
        fail(f"run {run_id} stopped: {exc}", f"{exc.when}: plait resume {run_id}",
             code=EXIT_FAILED, kind=exc.code)  # fmt: skip
    except interrupt.Interrupted:
        sys.stderr.write(f"interrupted: resume with plait resume {run_id}\n")
        raise typer.Exit(interrupt.EXIT_INTERRUPTED) from None
    report_outcome(store, outcome, how.json_output, how.quiet, show_output=show_output)
    codes = {RunStatus.COMPLETED: EXIT_OK, RunStatus.PAUSED: EXIT_PAUSED}
    raise typer.Exit(codes.get(outcome.status, EXIT_FAILED))
