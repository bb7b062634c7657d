"""The error a person can act on: what is wrong, how to fix it, and the details (e.g. the
schema errors of a value). The CLI prints all three and exits 2; the HTTP API returns them,
with a status code chosen by the error's `kind`."""

from __future__ import annotations

from enum import StrEnum


class Refusal(StrEnum):
    """Why something was refused, independent of the surface that reports it (the HTTP API
    maps these to 409, 422 and 404; the CLI exits 2 for all of them)."""

    CONFLICT = "conflict"
    """The request is fine, the current state forbids it (busy, frozen, not waiting, exists)."""
    INVALID = "invalid"
    """The request itself is wrong (a value that breaks a schema, a bad option combination)."""
    NOT_FOUND = "not_found"
    """Something it names does not exist (a node, a version, an item to merge)."""


class PlaitError(Exception):
    """Refused before anything was changed; `hint` says how to fix it, `details` list specifics."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        details: list[str] | None = None,
        *,
        kind: Refusal = Refusal.CONFLICT,
    ):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details or []
        self.kind = kind
