"""What a template is read into (its references), and the one Jinja environment.

Apart from the parsing in `templates.py` so that the Jinja-based reader (`jinja_refs.py`),
which `templates.py` calls, can use them without a circular import.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # jinja2 costs ~50 ms to import: only templates with real Jinja syntax pay for it
    from jinja2.sandbox import ImmutableSandboxedEnvironment

Segment = str | int
Spelling = Literal["jinja", "percent"]

FILTERS = frozenset(
    {
        "abs",
        "attr",
        "batch",
        "capitalize",
        "center",
        "count",
        "d",
        "default",
        "dictsort",
        "e",
        "escape",
        "filesizeformat",
        "first",
        "float",
        "forceescape",
        "format",
        "groupby",
        "indent",
        "int",
        "items",
        "join",
        "last",
        "length",
        "list",
        "lower",
        "map",
        "max",
        "min",
        "pprint",
        "random",
        "reject",
        "rejectattr",
        "replace",
        "reverse",
        "round",
        "safe",
        "select",
        "selectattr",
        "slice",
        "sort",
        "string",
        "striptags",
        "sum",
        "title",
        "tojson",
        "trim",
        "truncate",
        "unique",
        "upper",
        "urlencode",
        "urlize",
        "wordcount",
        "wordwrap",
        "xmlattr",
    }
)
"""Filter names of `environment()`, known without importing Jinja (a test keeps the two equal)."""


@dataclass(frozen=True, slots=True)
class TemplateRef:
    """One data reference: `path[0]` is the root name as written (`input`, a node id, `params`...)."""

    path: tuple[Segment, ...]
    spelling: Spelling

    @property
    def root(self) -> str:
        return str(self.path[0])

    def dotted(self) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")


@dataclass(frozen=True, slots=True)
class Template:
    """A template as `parse_template` reads it. Immutable, and shared: parsing is cached per text.

    `source` is Jinja source whatever spelling was written (`%path%` becomes `{{ path }}`, `%%`
    becomes `%`), so one renderer executes every template. `refs` lists each static data
    reference found, once per occurrence, tagged `percent` when it was written `%path%`; at a
    dynamic index (`a[i]`) the path stops before it.
    """

    source: str
    """Normalised Jinja source."""
    refs: tuple[TemplateRef, ...]


class TemplateError(ValueError):
    """A template that does not parse or uses an unknown filter; `line` is its line in the template, when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@cache
def environment() -> ImmutableSandboxedEnvironment:
    """The one sandboxed Jinja environment the compiler checks against and the renderer uses."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
