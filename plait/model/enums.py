"""The closed sets of names the graph format, the store and the engine share.

Plain enums, apart from the pydantic models of the graph format: code that only needs a name
(the store, a CLI command that lists graphs) does not build any model class, whose first one
is a noticeable part of a short command's start-up (docs/performance.md, "CLI start-up").
"""

from __future__ import annotations

from enum import StrEnum


class SourceType(StrEnum):
    """Where a graph comes from: shipped with Plait (read-only), written by a user, or a fork of a
    shipped graph."""

    SYSTEM = "system"
    USER = "user"
    SYSTEM_FORK = "system_fork"


class FreezePolicy(StrEnum):
    """When a field stops accepting writes; applied at node commit time."""

    ON_CREATE = "on_create"
    ON_CONSUME = "on_consume"
    NONE = "none"


class RunStatus(StrEnum):
    """The states of a run; `completed`, `failed` and `cancelled` are final."""

    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    """Waiting for a person: a HUMAN_REVIEW node is unanswered."""
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        """Nothing more will execute (reaching one of these stamps `completed_at`)."""
        return self in TERMINAL_RUN_STATUSES


TERMINAL_RUN_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})


class NodeStatus(StrEnum):
    """The states of one node activation."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    OVERRIDDEN = "overridden"
    """A person corrected the output: the correction is what readers get, the original is kept."""
    STALE = "stale"
    """An input it read was corrected after it ran: its output is still there, but out of date."""
    SKIPPED = "skipped"

    @property
    def has_output(self) -> bool:
        """An output readers can use (a stale one is still there, until it runs again)."""
        return self in _WITH_OUTPUT

    @property
    def ended(self) -> bool:
        """The activation is over: it will not execute again unless a rerun queues a new one."""
        return self in _ENDED


_WITH_OUTPUT = frozenset({NodeStatus.COMPLETED, NodeStatus.OVERRIDDEN, NodeStatus.STALE})
_ENDED = frozenset({*_WITH_OUTPUT, NodeStatus.FAILED, NodeStatus.SKIPPED})


class DownstreamPolicy(StrEnum):
    """What a correction does to the nodes that read the corrected value."""

    KEEP = "KEEP"
    """Leave them as they are."""
    INVALIDATE = "INVALIDATE"
    """Mark the direct readers stale."""
    RERUN = "RERUN"
    """Run the direct readers again."""
    RERUN_ALL = "RERUN_ALL"
    """Run everything downstream again."""
