"""`hypothesis_jsonschema.from_schema`, working with the Hypothesis the test extra installs.

hypothesis-jsonschema (0.23.1, its newest release) draws an object's properties with Hypothesis's
private `many` helper as it was: `while elements.more(): ... elements.reject()`. Newer Hypothesis
turned that helper into a context manager iterated with `for _ in elements:`, so every object
schema fails with "'many' object has no attribute 'more'". The library is given a `many` with the
old interface on top of the new one, and only when Hypothesis lacks it.
"""

from __future__ import annotations

import types
from typing import Any

import hypothesis_jsonschema._from_schema as _generator
from hypothesis.internal.conjecture import utils as _utils
from hypothesis_jsonschema import from_schema

__all__ = ["from_schema"]


class _OldMany:
    """`more()` and `reject()` over the iterating `many`: each `more()` is one step of the loop."""

    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float) -> None:
        self._many = _utils.many(data, min_size=min_size, max_size=max_size, average_size=average_size)
        self._many.__enter__()
        self._steps = iter(self._many)

    def more(self) -> bool:
        try:
            next(self._steps)
        except StopIteration:
            self._many.__exit__(None, None, None)
            return False
        return True

    def reject(self, why: str | None = None) -> None:
        self._many.reject(why)


if not hasattr(_utils.many, "more"):
    _generator.cu = types.SimpleNamespace(**{**vars(_utils), "many": _OldMany})  # type: ignore[assignment,attr-defined]
