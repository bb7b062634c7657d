"""Errors the store raises. Their messages are shown to users as they are: each says what is
wrong and what to do about it, and never contains a database password."""

from __future__ import annotations

from plait.errors import PlaitError, Refusal


class StoreError(PlaitError):
    """A store operation failed for a reason the user can act on (bad URL, unknown id, ...)."""

    kind = Refusal.CONFLICT
    code = "conflict"


class NotFoundError(StoreError, KeyError):
    """An id, slug or version is not in the store.

    Also a `KeyError`, so callers that treat the store like a mapping can catch it as one;
    `__str__` is overridden because `KeyError` would wrap the message in quotes.
    """

    kind = Refusal.NOT_FOUND
    code = "not_found"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class ChildExists(StoreError):
    """A node run already has a child run with that key (another engine started it first)."""


class RunExists(StoreError):
    """A run with the id asked for exists already (another process created it first)."""
