"""What driving a run ends with, and the error when it cannot be driven."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.errors import PlaitError
from plait.model.enums import RunStatus


class EngineError(PlaitError):
    """The run cannot be executed as asked (unknown run, busy elsewhere, unsupported node type...)."""

    code = "engine_refused"


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How driving a run ended; when an engine returns it, it is already committed to the store.

    `status` is `completed` (`output` is the run's output: the output node's effective output,
    or a map by node id when there are several), `failed` (`error` holds `kind`, such as
    `node_failed` or `budget`, with `node_id` and `message`), or `paused` (a HUMAN_REVIEW waits
    for a person; no output, no error). For a run that had already ended, `Engine.run` returns
    the stored status, output and error, so `cancelled` is possible too. Immutable.
    """

    run_id: str
    status: RunStatus
    output: Any = None
    error: dict[str, Any] | None = None
