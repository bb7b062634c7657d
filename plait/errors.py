"""The error a person can act on: what is wrong, how to fix it, and the details (e.g. the
schema errors of a value). The CLI prints all three and exits 2; the HTTP API returns them."""

from __future__ import annotations


class PlaitError(Exception):
    """Refused before anything was changed; `hint` says how to fix it, `details` list specifics."""

    def __init__(self, message: str, hint: str | None = None, details: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details or []
