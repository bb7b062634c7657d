"""The Celery app of Plait's workers, and the one task: execute (or continue) a stored run.

Every node activation takes effect exactly once. What makes it so, layer by layer:

- the store: a node activation is a row with a UNIQUE (run, node, activation) key, and a run is
  executed only under a lease (renewed every third of `lease_ttl_s`): a second worker given the
  same run finds it leased and waits, or finds it finished and does nothing;
- the broker: `task_acks_late` (a message is acknowledged when its run is done or given back,
  not when it arrives), `task_reject_on_worker_lost` (a message whose worker died is requeued),
  prefetch 1 (a worker holds no messages it is not executing), and one `visibility_timeout`
  set everywhere Celery reads it, longer than the longest run;
- the outbox: a message is written in the transaction of the run it announces and sent after
  the commit (`relay.py`), so none is lost and none announces a run that rolled back; a
  worker that died is found by the reaper once its leases run out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.config import WorkersConfig

if TYPE_CHECKING:
    from celery import Celery

TASK = "plait.run"
log = logging.getLogger("plait.worker")


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What a worker (and a process that enqueues for workers) runs with."""

    broker: str
    db: str | None = None
    llm: str | None = None
    config: str | None = None
    queue: str = "plait"
    lease_ttl_s: float = 15.0
    visibility_timeout_s: float = 3600.0
    shared_limits: bool = True
    spread_map: bool = True
    spread_grace_s: float = 1.0

    @classmethod
    def of(cls, workers: WorkersConfig, *, broker: str | None = None, **given: Any) -> WorkerSettings:
        """The settings of `[workers]`, with what the command line gave (`--queue URL`) first."""
        url = broker or workers.broker
        if url is None:
            raise ValueError("no broker: pass --queue redis://HOST:6379/0, or set [workers] broker in plait.toml")
        return cls(broker=url, queue=workers.queue, lease_ttl_s=workers.lease_ttl_s,
                   visibility_timeout_s=workers.visibility_timeout_s, shared_limits=workers.shared_limits,
                   spread_map=workers.spread_map, spread_grace_s=workers.spread_grace_s, **given)  # fmt: skip


def queued(workers: WorkersConfig, queue: str | None, **given: Any) -> WorkerSettings | None:
    """The settings when runs go to workers: the broker `queue` names (`--queue`), else
    `[workers] broker`; None when runs execute here (neither, or `--queue none`)."""
    if queue == "none" or (queue is None and workers.broker is None):
        return None
    return WorkerSettings.of(workers, broker=queue, **given)


def make_app(settings: WorkerSettings) -> Celery:
    """The Celery app for `settings` (senders and workers build the same one). Celery is
    imported here: a command that only asks whether runs go to workers must not load it."""
    from celery import Celery

    app = Celery("plait", broker=settings.broker, set_as_current=False)
    transport = {"visibility_timeout": settings.visibility_timeout_s}
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        task_ignore_result=True,
        task_default_queue=settings.queue,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        worker_enable_remote_control=False,  # no broadcast from the broker can stop or stall a worker
        worker_consumer="plait.worker.consumer:Consumer",  # reconnects with runs in flight (consumer.py)
        worker_cancel_long_running_tasks_on_connection_loss=False,  # a run goes on while the broker is away
    )
    return app


def send(app: Celery, settings: WorkerSettings, run_id: str, reason: str) -> None:
    """Hand one run to the workers (raises when the broker cannot take it)."""
    app.send_task(TASK, args=[run_id, reason], queue=settings.queue, retry=True,
                  retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5})  # fmt: skip
