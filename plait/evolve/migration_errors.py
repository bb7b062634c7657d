"""Why a stored output could not be read at its schema's current version.

Apart from the migration code so that a surface can catch them without loading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plait.errors import PlaitError


class MigrationError(PlaitError):
    """A stored output could not be read at the current schema version; `hint` says how to fix it."""

    code = "migration_failed"

    def __init__(
        self,
        message: str,
        *,
        hint: str,
        schema_id: str,
        from_version: str,
        to_version: str,
        run_id: str | None = None,
        node_id: str | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.schema_id = schema_id
        self.from_version = from_version
        """The version the failure starts from (the stored one, or the failing step's)."""
        self.to_version = to_version
        """The version it was heading for (the registry's, or the failing step's)."""
        self.run_id = run_id
        self.node_id = node_id


class MigrationMissing(MigrationError):
    """No chain of migrations leads from the stored major to the registry's."""

    def __init__(self, message: str, *, needed: tuple[str, str] | None = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.needed = needed
        """The migration that would bring the output forward, `(from_version, to_version)` as a
        graph's `migrations` spells them (`("1.x.x", "2.0.0")`); None when none can (the stored
        output is newer than the registry, or its version is not a semantic version)."""


class MigrationFailed(MigrationError):
    """A `migrate_expr` threw, timed out, ran out of memory, returned a non-object, or the chain's
    result does not match the current schema."""

    def __init__(self, message: str, *, cause: str, problems: Sequence[str] = (), **context: Any) -> None:
        super().__init__(message, **context)
        self.cause = cause
        self.problems = list(problems)
        """Every validation problem (`path: message`), when the result failed the schema."""
