"""Helpers for testing graphs and the code around them, Plait's own suite included (docs/testing.md).

    from plait.testing import scripted, served_app, skip_or_fail, temporary_store

- `scripted(...)`: the deterministic scripted provider, its rules written in Python;
- `temporary_store()`: a migrated store on a SQLite file, or a PostgreSQL schema, removed after;
- `served_app(...)`: `plait serve`'s app on a free loopback port (`with` or `async with`);
- `skip_or_fail(reason)`: skip a test whose service is missing, fail it when `CI` is set.

`import plait` never loads this package, and each name here loads its module on first use: a
test that only needs `skip_or_fail` does not load the HTTP stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.llm.scripted import ScriptedProvider, ScriptedResponse, ScriptError
    from plait.testing.scripting import scripted
    from plait.testing.served import HttpRuns, ServedApp, served_app, wait_until_healthy
    from plait.testing.services import skip_or_fail, wait_for
    from plait.testing.stores import temporary_store

_HOME: dict[str, str] = {
    "ScriptError": "plait.llm.scripted",
    "ScriptedProvider": "plait.llm.scripted",
    "ScriptedResponse": "plait.llm.scripted",
    "scripted": "plait.testing.scripting",
    "HttpRuns": "plait.testing.served",
    "ServedApp": "plait.testing.served",
    "served_app": "plait.testing.served",
    "wait_until_healthy": "plait.testing.served",
    "skip_or_fail": "plait.testing.services",
    "wait_for": "plait.testing.services",
    "temporary_store": "plait.testing.stores",
}
"""Where each public name is defined."""

__all__ = [
    "HttpRuns",
    "ScriptError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ServedApp",
    "scripted",
    "served_app",
    "skip_or_fail",
    "temporary_store",
    "wait_for",
    "wait_until_healthy",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'plait.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
