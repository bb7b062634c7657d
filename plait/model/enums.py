"""The closed sets of names the graph format and the store share.

Plain enums, apart from the pydantic models of the graph format: code that only needs a name
(the store, a CLI command that lists graphs) does not build any model class, which costs a
command ~30 ms of start-up the first time one is built.
"""

from __future__ import annotations

from enum import StrEnum


class SourceType(StrEnum):
    SYSTEM = "system"
    USER = "user"
    SYSTEM_FORK = "system_fork"


class FreezePolicy(StrEnum):
    """When a field stops accepting writes (seed 003 §2.2); applied at node commit time."""

    ON_CREATE = "on_create"
    ON_CONSUME = "on_consume"
    NONE = "none"
