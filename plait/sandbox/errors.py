"""Errors of the JavaScript sandbox: every failure of a user expression is a `SandboxError`."""

from __future__ import annotations


class SandboxError(Exception):
    """A user expression could not be evaluated (or the sandbox was misused: closed, bad scope)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.message = message
        self.line = line
        """1-based line within the expression, when the engine reports one."""
        self.column = column
        """1-based column within that line, when the engine reports one."""
        super().__init__(message + _where(line, column))


class JsSyntaxError(SandboxError):
    """The expression does not parse (strict mode, as it runs)."""


class JsTimeoutError(SandboxError):
    """The expression (with any async work it started) ran longer than its time limit."""


class JsMemoryError(SandboxError):
    """The expression used more memory than the context's limit."""


class JsRuntimeError(SandboxError):
    """The expression threw, or its result is not JSON or too large."""


class JsBusyError(SandboxError):
    """No evaluator became free within the time the caller was willing to wait (`wait_s`)."""


def _where(line: int | None, column: int | None) -> str:
    if line is None:
        return ""
    return f" (line {line}, column {column})" if column is not None else f" (line {line})"
