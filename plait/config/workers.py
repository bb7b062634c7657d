"""`[workers]`: running graphs on Celery workers (`plait worker`) instead of in the process that
started them, and the settings every process of a deployment must agree on.

    [workers]
    broker = "redis://127.0.0.1:6379/0"   # a Celery broker URL (redis://, or amqp:// for RabbitMQ)
    queue = "plait"                       # the queue workers listen on
    lease_ttl_s = 15                      # a run's lease; renewed every third of it
    visibility_timeout_s = 3600           # Redis: an unacknowledged message is redelivered after it
    shared_limits = true                  # providers' max_concurrency / rpm / tpm held across processes

With a broker set (here, or `--queue URL` on the command line), `plait run`, `plait batch` and
`plait serve` enqueue their runs; workers execute them against the same database (PostgreSQL).
docs/deploy.md explains each setting and why its default.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from plait.config.providers import Strict


class WorkersConfig(Strict):
    """`[workers]`: the broker, the queue, and the timings of the leases."""

    broker: str | None = None
    """A Celery broker URL; None: runs execute in the process that starts them."""
    queue: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.\-]+$")] = "plait"
    lease_ttl_s: Annotated[float, Field(ge=3, le=600, allow_inf_nan=False)] = 15.0
    """How long a run's lease lasts without a heartbeat: a killed worker's runs are announced
    again once it has run out, and another worker takes them over then, even when the killed
    worker ran on the same machine (`plait resume` and a restarted server take over at once)."""
    visibility_timeout_s: Annotated[float, Field(ge=60, allow_inf_nan=False)] = 3600.0
    """Redis only: how long a delivered, unacknowledged message waits before it is delivered
    again. Longer than the longest run; a lost worker's runs are taken over by lease sooner."""
    shared_limits: bool = True
    """Hold each provider's max_concurrency, rpm and tpm across every process using the broker's
    Redis (Redis brokers only)."""
    spread_map: bool = True
    """A MAP node executed on a worker announces each item's child run to all the workers,
    instead of executing them all itself."""
    spread_grace_s: Annotated[float, Field(ge=0, le=60, allow_inf_nan=False)] = 1.0
    """How long an announced MAP item waits for a free worker before the MAP's own worker
    executes it (so a MAP never waits on places that parents waiting for items hold)."""
