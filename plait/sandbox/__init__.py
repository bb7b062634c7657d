"""The one JavaScript sandbox for every user expression (its guarantees: docs/security.md).

`JsSandbox` runs QuickJS (quickjs-ng) contexts in evaluator processes of their own, locked
down, with a wall-clock time limit and a memory limit per evaluation, shared fairly by runs
(see `sandbox.py`); prompt scripts run in the same kind of process (`scripts.py`).

    from plait.sandbox import JsSandbox, check_syntax, code_function

    with JsSandbox(timeout_s=1.0) as sandbox:
        sandbox.evaluate("nodes.classify.label", {"input": {}, "nodes": {"classify": {"label": "bug"}}})
        sandbox.call("old => ({...old, chapters: old.items})", {"items": []})
        sandbox.call(code_function("return {n: input.n + 1};"), {"n": 1}, {}, None)  # a CODE node

What the engine relies on: results never cross between evaluations or runs, even after
timeouts, kills and memory errors; no evaluation holds Plait's event loop or outlives its limit
by more than a fraction of a second, whatever builtin it calls; `timeout_s` is capped by
plait.toml `[sandbox] max_timeout_s` (`limits.py`); `max_memory_mb` bounds all memory an
evaluation allocates, ArrayBuffers included; runs share the processes fairly by owner, a root
run with its children counting as one (`_pool.py`); values nested deeper than
`plait.model.limits.MAX_DEPTH` and Dates in results are refused.

Importing this package loads neither QuickJS nor the sandbox's own modules: the names below are
imported on first use (an evaluator process imports only what it runs). What each step costs is
measured in docs/performance.md, "The JavaScript sandbox".
"""

from __future__ import annotations

import importlib

# `typing` is not imported at run time: evaluator processes import this module, and start
# faster without it (annotations are strings here; mypy reads the block below).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from plait.sandbox.errors import (
        JsBusyError,
        JsMemoryError,
        JsRuntimeError,
        JsSyntaxError,
        JsTimeoutError,
        SandboxError,
    )
    from plait.sandbox.sandbox import JsSandbox
    from plait.sandbox.syntax import check_syntax, code_function

__all__ = [
    "JsBusyError",
    "JsMemoryError",
    "JsRuntimeError",
    "JsSandbox",
    "JsSyntaxError",
    "JsTimeoutError",
    "SandboxError",
    "check_syntax",
    "code_function",
]

_LAZY = {
    "JsBusyError": "plait.sandbox.errors",
    "JsMemoryError": "plait.sandbox.errors",
    "JsRuntimeError": "plait.sandbox.errors",
    "JsSyntaxError": "plait.sandbox.errors",
    "JsTimeoutError": "plait.sandbox.errors",
    "SandboxError": "plait.sandbox.errors",
    "JsSandbox": "plait.sandbox.sandbox",
    "check_syntax": "plait.sandbox.syntax",
    "code_function": "plait.sandbox.syntax",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if name == "ProcessSandbox":  # the V8 sandbox in child processes, replaced by QuickJS
        from plait.deprecation import deprecated_alias
        from plait.sandbox.sandbox import JsSandbox

        return deprecated_alias("plait.sandbox.ProcessSandbox", "plait.sandbox.JsSandbox", JsSandbox)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
