"""The Celery consumer of Plait's workers: it survives the broker going away while runs execute.

When the connection to Redis breaks, Celery 5.7 collects the connection (which lets go of its
transport's broker address) and then closes it. Closing a channel that holds unacknowledged
messages (every run in flight: `task_acks_late`) tries to hand them back to the broker, finds no
address and raises `AttributeError`, which Celery takes for an unrecoverable error: a busy worker
stopped (with exit code 0, so a supervisor restarting on failure never brought it back) while an
idle one reconnected. Handing the messages back cannot succeed with the broker away, and is not
wanted once it is back either: this worker still executes those runs and acknowledges their
messages when they end. So a failed connection's channels keep their messages: those a broker
restarted with its data are delivered again after the visibility timeout, and a run whose message
was lost with the broker's memory is found by the relay (`relay.py`). The consumer then reconnects
as Celery does for an idle worker. When such a run ends, its message cannot be acknowledged on the
closed channel it came by (Celery would stop the worker on that too): `Request` lets it be.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer
from celery.worker.request import Request as CeleryRequest

log = logging.getLogger("plait.worker")


class Consumer(CeleryConsumer):
    """Celery's consumer, reconnecting after a broken connection even with runs in flight."""

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        log.warning("the broker connection broke (%s); reconnecting, the runs in flight go on", exc)
        _keep_unacknowledged(self.connection)
        with warnings.catch_warnings():  # Celery's notice that it may cancel such tasks one day: it is set not to
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            super().on_connection_error_after_connected(exc)


def _keep_unacknowledged(connection: Any) -> None:
    """Closing the channels of `connection` must not hand their unacknowledged messages back."""
    transport = getattr(connection, "_transport", None)  # not `.transport`: that would make a new one
    for channel in list(getattr(transport, "channels", None) or ()):
        channel.do_restore = False


class Request(CeleryRequest):
    """Celery's task request; a message whose channel closed with a broken connection is not
    acknowledged there (the broker restores it after the visibility timeout, if it kept it)."""

    def acknowledge(self) -> None:
        if not self.acknowledged and getattr(self.message.channel, "closed", False):
            log.info("the message of task %s came by a connection that broke: not acknowledged", self.id)
            self.acknowledged = True
            return
        super().acknowledge()
