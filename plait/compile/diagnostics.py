"""Compiler diagnostics: one shape for every problem a graph can have.

Every error a user sees carries the category (`config`: fix the field,
`planning`: fix the design), a stable code that tests and
scripts can match on, where it is (node/edge id, file, line) and a hint.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Category(StrEnum):
    """What a diagnostic asks for: `config`, fix a field; `planning`, fix the graph's design."""

    CONFIG = "config"
    PLANNING = "planning"


class Severity(StrEnum):
    """Whether a diagnostic makes the graph invalid (`error`) or only warns (`warning`)."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a graph, in the same shape for errors and warnings. Immutable.

    `code` is stable: tests and scripts match on it, with `category`. `node_id`, `edge_id`,
    `file` and `line` (1-based) say where, when known; `hint` says how to fix it. `format()`
    gives the compiler-style text `file:line: severity category/code ...`; `to_json()` gives the
    fields without `severity` (errors and warnings are listed apart).
    """

    category: Category
    code: str
    message: str
    node_id: str | None = None
    edge_id: str | None = None
    file: str | None = None
    line: int | None = None
    hint: str | None = None
    severity: Severity = Severity.ERROR

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("severity")
        data["category"] = str(self.category)
        return data

    def location(self) -> str:
        if self.file is None:
            return "<graph>"
        return f"{self.file}:{self.line}" if self.line else self.file

    def format(self) -> str:
        """One human-readable line (plus hint) in the style of compilers: `file:line: ...`."""
        where = []
        if self.node_id:
            where.append(f"node {self.node_id!r}")
        if self.edge_id:
            where.append(f"edge {self.edge_id!r}")
        subject = f" [{', '.join(where)}]" if where else ""
        text = f"{self.location()}: {self.severity} {self.category}/{self.code}{subject}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


class GraphLoadError(Exception):
    """Raised when a graph file cannot be turned into data at all (bytes, syntax, size)."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.format() for d in diagnostics))
