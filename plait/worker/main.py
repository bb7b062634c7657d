"""Running a worker: the Celery worker (threads: each executes one run at a time, all of a
process's runs on one engine), its relay and reaper, and with `beat` the cron scheduler.

SIGTERM (and Ctrl-C) give the runs in flight back before the process exits: the engine stops
them at once (their nodes in flight go back to pending, their leases are released), each is
announced again, and its message is acknowledged; another worker continues it. SIGKILL gives
nothing back: the runs' leases run out and the reaper of another worker announces them.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery, Task
from celery.signals import worker_shutting_down

from plait.worker.app import TASK, WorkerSettings, make_app
from plait.worker.relay import Relay
from plait.worker.runtime import WorkerRuntime

log = logging.getLogger("plait.worker")
_runtime: WorkerRuntime | None = None


def register(app: Celery) -> None:
    """The run task on `app`: execute the run; retried while another live worker holds it."""

    @app.task(name=TASK, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None,
              Request="plait.worker.consumer:Request")  # fmt: skip
    def run(task: Task[Any, Any], run_id: str, reason: str = "start") -> str:
        assert _runtime is not None, "the worker's runtime is set up before it consumes"
        ending = _runtime.execute(run_id, reason)
        if ending == "busy":
            raise task.retry(countdown=_runtime.settings.lease_ttl_s)
        if ending == "given_back":
            _runtime.store.outbox.announce(run_id, "given_back")
        log.info("run %s: %s (announced on %s)", run_id, ending, reason)
        return ending


def serve(settings: WorkerSettings, *, concurrency: int = 8, beat: bool = False, name: str | None = None) -> int:
    """Run a worker until it is stopped (SIGTERM, Ctrl-C); the process's exit code: 0 when it was
    stopped, else Celery's (an unrecoverable error is not a clean stop, and a supervisor that
    restarts on failure must see it)."""
    global _runtime
    app = make_app(settings)
    register(app)
    _runtime = WorkerRuntime(settings, concurrency)
    relay = Relay(_runtime.store, app, settings, reap=True)
    relay.start()
    _runtime.nudge = relay.nudge
    scheduler = _beat(_runtime) if beat else None

    @worker_shutting_down.connect(weak=False)
    def give_back(**_: Any) -> None:
        if _runtime is None:  # already closed
            return
        log.info("stopping: giving the runs in flight back")
        _runtime.give_back()
        relay.flush()

    log.info(ready_line(settings, _runtime.store.url, concurrency, beat))
    from plait.config import jail_settings
    from plait.sandbox.confinement import programs_at_start

    log.info("TOOL programs and Python CODE: %s", programs_at_start(jail_settings()))
    try:
        worker = app.Worker(pool="threads", concurrency=concurrency, queues=[settings.queue], hostname=name,
                            without_heartbeat=True, without_mingle=True, without_gossip=True,
                            loglevel="WARNING", quiet=True)  # fmt: skip
        worker.start()
        return int(worker.exitcode or 0)
    finally:
        if scheduler is not None:
            scheduler.cancel()
        relay.stop()
        _runtime.close()
        _runtime = None


def ready_line(settings: WorkerSettings, store_url: str, concurrency: int, beat: bool) -> str:
    """What the worker says once it takes runs: where from, where to, how many; credentials
    in either URL are masked."""
    from plait.redact import redact_url

    schedules = ", firing the cron schedules" if beat else ""
    return (f"taking runs from queue '{settings.queue}' on {redact_url(settings.broker)} into "
            f"{redact_url(store_url)}, {concurrency} at once{schedules}; SIGTERM or Ctrl-C gives the runs "
            "in flight back")  # fmt: skip


def _beat(runtime: WorkerRuntime) -> Any:
    """The cron scheduler on the worker's loop: each firing's run is announced with it."""
    import asyncio

    from plait.runs.schedules import Scheduler

    scheduler = Scheduler(runtime.store, lambda run_id: None, announce="schedule")  # the relay sends them
    return asyncio.run_coroutine_threadsafe(scheduler.loop(), runtime.loop)
