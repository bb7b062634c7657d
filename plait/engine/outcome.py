"""What driving a run ends with, and the error when it cannot be driven."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.model.enums import RunStatus


class EngineError(Exception):
    """The run cannot be executed as asked (unknown run, busy elsewhere, unsupported node type...)."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run_id: str
    status: RunStatus
    output: Any = None
    error: dict[str, Any] | None = None
