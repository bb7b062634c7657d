"""The values a render inserts in a node's prompts, in order, and what a plan shows instead of some.

`context_overflow: retrieve` (plait/engine/overflow.py) renders a node's prompts more than once:
first as usual, noting every value inserted, then with a plan that replaces each value the budget
could not hold with its chosen passages. A template inserts its values in the same order every
time it is rendered against the same names, so a plan is keyed by the insertion's number; it also
holds the value it replaces, and a value that comes out different (a `{% set %}` block that
captured an earlier insertion) is taken as usual rather than replaced by another's passages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Planned:
    """What goes in instead of one inserted value."""

    original: str
    shown: str
    omitted_chars: int
    """Characters of `original` the model is not shown (counted as `truncated_chars`)."""
    counted: bool = True
    """False for the marker of a value none of whose passages fit: like truncation's marker, it goes
    in whatever the budget has left."""


@dataclass
class Insertions:
    """The values one render of a node's prompts inserted so far, and the plan it follows."""

    plan: Mapping[int, Planned] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    record: dict[str, Any] | None = None
    """What the input snapshot says of the values replaced (`context_overflow`), once planned."""

    def copy(self) -> Insertions:
        return Insertions(self.plan, list(self.texts), self.record)

    def insert(self, text: str) -> Planned | None:
        """Note the next inserted value; what the plan shows instead, if anything."""
        planned = self.plan.get(len(self.texts))
        self.texts.append(text)
        return planned if planned is not None and planned.original == text else None
