"""The one JavaScript sandbox for every user expression (SPEC §8).

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

Measured on the 2-core development machine (mini-racer 0.14.1, V8 14.4; loops of 2,000 calls):

- importing `py_mini_racer` and loading V8 (once per process): ~200-280 ms;
- creating a context with the lockdown and runner: ~10-15 ms (~40 ms for the first one);
- one `evaluate`/`call` of a small expression in a reused context: ~0.45-0.6 ms, almost all
  of it the hops to mini-racer's loop thread and back, not V8; ~0.7 ms when the source
  contains `async`/`import` and a barrier must wait for its microtasks (see `_host.py`);
- scope size: ~50 µs per KB of JSON (a 150 KB scope of 2,000 rows: ~8 ms);
- `aevaluate` adds a thread-pool hop; with 2 workers, 2,000 concurrent small evaluations ran
  at ~0.7-1 ms each: the pool buys responsiveness for slow expressions, not throughput;
- `check_syntax` of a new expression: ~1.2 ms (two parses); repeated checks are cached (µs).
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
