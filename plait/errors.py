"""The one root of every error a person can act on: what is wrong (`message`), how to fix it
(`hint`), the specifics (`details`, e.g. the schema errors of a value), a stable `code` a
program can branch on, and a `kind` that says which sort of refusal it is.

Every layer raises its own subclass (the store's, the compiler's, the configuration's...), and
every surface handles them in one place: the CLI prints message, details and hint and exits 2;
the HTTP API answers with the status the `kind` stands for and the `code` in the body. An
exception that is not a `PlaitError` is a bug in Plait, never a refusal: it is reported as an
internal error (a node fails with kind `internal`, the server answers 500).
"""

from __future__ import annotations

from enum import StrEnum


class Refusal(StrEnum):
    """Why something was refused, independent of the surface that reports it (the HTTP API
    maps these to 409, 422, 404 and 403; the CLI exits 2 for all of them)."""

    CONFLICT = "conflict"
    """The request is fine, the current state forbids it (busy, frozen, not waiting, exists)."""
    INVALID = "invalid"
    """The request itself is wrong (a value that breaks a schema, a bad option combination)."""
    NOT_FOUND = "not_found"
    """Something it names does not exist (a node, a version, an item to merge)."""
    FORBIDDEN = "forbidden"
    """It exists and is fine, but nobody may change it (a system graph)."""


class PlaitError(Exception):
    """Refused before anything was changed; `hint` says how to fix it, `details` list specifics.

    A subclass sets `kind` and `code` for all its instances; an instance may override both. A
    `code` left empty is the kind's name (`conflict`, `invalid`, ...), so a plain refusal still
    has one. `str(error)` is the message.
    """

    kind: Refusal = Refusal.CONFLICT
    code: str = ""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        details: list[str] | None = None,
        *,
        kind: Refusal | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details or []
        self.kind = kind or type(self).kind
        self.code = code or type(self).code or str(self.kind)
