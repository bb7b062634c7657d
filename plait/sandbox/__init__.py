"""The one JavaScript sandbox for every user expression (its guarantees: docs/security.md).

`JsSandbox` runs QuickJS (quickjs-ng) contexts in this process, each on a thread of its own,
locked down, with a time and a memory limit per evaluation, shared fairly by runs (see
`sandbox.py`).

    from plait.sandbox import JsSandbox, check_syntax, code_function

    with JsSandbox(timeout_s=1.0) as sandbox:
        sandbox.evaluate("nodes.classify.label", {"input": {}, "nodes": {"classify": {"label": "bug"}}})
        sandbox.call("old => ({...old, chapters: old.items})", {"items": []})
        sandbox.call(code_function("return {n: input.n + 1};"), {"n": 1}, {}, None)  # a CODE node

What the engine relies on: results never cross between evaluations or runs, even after
timeouts and memory errors; `timeout_s` is capped by plait.toml `[sandbox] max_timeout_s`
(`limits.py`); `max_memory_mb` bounds all memory an evaluation allocates, ArrayBuffers included;
runs share the threads fairly by owner (`_pool.py`); values nested deeper than
`plait.model.limits.MAX_DEPTH` and Dates in results are refused.

Importing this package does not load QuickJS: `quickjs` is imported when the first context is
created (by an evaluation or by `check_syntax`). What each step costs is measured in
docs/performance.md, "The JavaScript sandbox".
"""

from __future__ import annotations

from typing import Any

from plait.sandbox.errors import (
    JsMemoryError,
    JsRuntimeError,
    JsSyntaxError,
    JsTimeoutError,
    SandboxError,
)
from plait.sandbox.sandbox import JsSandbox
from plait.sandbox.syntax import check_syntax, code_function

__all__ = [
    "JsMemoryError",
    "JsRuntimeError",
    "JsSandbox",
    "JsSyntaxError",
    "JsTimeoutError",
    "SandboxError",
    "check_syntax",
    "code_function",
]


def __getattr__(name: str) -> Any:
    if name == "ProcessSandbox":  # the V8 sandbox in child processes, replaced by QuickJS in-process
        from plait.deprecation import deprecated_alias

        return deprecated_alias("plait.sandbox.ProcessSandbox", "plait.sandbox.JsSandbox", JsSandbox)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
