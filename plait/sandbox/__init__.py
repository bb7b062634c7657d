"""The one JavaScript sandbox for every user expression (its guarantees: docs/security.md).

`JsSandbox` runs V8 in this process; `ProcessSandbox` runs `JsSandbox`es in child processes and
is what the engine uses, because a few builtins make V8 abort its whole process (see
`process.py`). Both have the same methods.

    from plait.sandbox import JsSandbox, check_syntax, code_function

    with JsSandbox(timeout_s=1.0) as sandbox:
        sandbox.evaluate("nodes.classify.label", {"input": {}, "nodes": {"classify": {"label": "bug"}}})
        sandbox.call("old => ({...old, chapters: old.items})", {"items": []})
        sandbox.call(code_function("return {n: input.n + 1};"), {"n": 1}, {}, None)  # a CODE node

What the engine relies on (`ProcessSandbox`, detailed in `process.py`): results never cross
between evaluations or runs, even after timeouts, crashes, kills and cancellations; `timeout_s`
is capped by plait.toml `[sandbox] max_timeout_s` (`limits.py`); `max_memory_mb` bounds all
memory an evaluation allocates, ArrayBuffers included (`_worker.py`); runs share the children
fairly by owner (`_pool.py`); cancelling an evaluation kills its child; `close()` does not wait
for running expressions; values nested deeper than `plait.model.limits.MAX_DEPTH` and Dates in
results are refused.

Importing this package does not load V8: `py_mini_racer` is imported when the first context is
created (by an evaluation or by `check_syntax`).

What each step costs (loading V8, a context, an evaluation, a scope) is measured in
docs/performance.md, "The JavaScript sandbox".
"""

from __future__ import annotations

from plait.sandbox.errors import (
    JsMemoryError,
    JsRuntimeError,
    JsSyntaxError,
    JsTimeoutError,
    SandboxError,
)
from plait.sandbox.process import ProcessSandbox
from plait.sandbox.sandbox import JsSandbox
from plait.sandbox.syntax import check_syntax, code_function

__all__ = [
    "JsMemoryError",
    "JsRuntimeError",
    "JsSandbox",
    "JsSyntaxError",
    "JsTimeoutError",
    "ProcessSandbox",
    "SandboxError",
    "check_syntax",
    "code_function",
]
