"""One QuickJS context, locked down, that evaluates expressions in an evaluator process.

QuickJS (the maintained quickjs-ng, PyPI `quickjs-ng`) runs in the evaluator processes
(`_child.py`), never in Plait's own: a few of its builtins cannot be interrupted, so only a
process that can be killed bounds them. Each `Context` owns a whole QuickJS runtime (no state is
shared between two of them) and must only ever be used from the thread that created it: the
Python binding crashes when two threads touch one runtime, even one after the other. An
evaluator process uses its contexts from its main thread only.

The limits are QuickJS's own:

- **memory**: `set_memory_limit` bounds every allocation of the runtime, ArrayBuffer and
  TypedArray backing stores included; going over throws `InternalError: out of memory`, which
  fails the evaluation and leaves the process alone;
- **time**: `set_time_limit` interrupts JavaScript once the *process* has used that much CPU
  time since the evaluation started (QuickJS reads `clock()`), so on a loaded host later than
  the wall clock says, and not at all inside a long builtin (`indexOf` of a huge string):
  the parent's watchdog enforces the wall-clock limit by killing the process. An interruption
  cannot be caught by the script;
- **stack**: `set_max_stack_size`, so deep recursion is a `RangeError`, not a crashed thread.

Microtasks run only when this module asks: after the evaluation, under what is left of its
deadline (`drain`). A script that keeps queueing them (`(async () => { for (;;) await 0 })()`)
is stopped at the deadline and its context thrown away, with nothing left running.

The prelude (`_prelude.py`) is evaluated after `RUNTIME_LINES` empty lines, so a stack frame in
the runner has a line number no user expression reaches: positions in the user's text are the
frames below that line.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable

from plait.sandbox._prelude import DEPTH_PLACEHOLDER, PRELUDE, RUNNER_PLACEHOLDER

# `typing` is not imported at run time: evaluator processes import this module, and start
# faster without it (annotations are strings here; mypy reads the block below).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any, Literal

    import quickjs

    Kind = Literal["evaluate", "call"]

PRELUDE_TIMEOUT_S = 10.0
RUNTIME_LINES = 100_000
"""Empty lines before the prelude: a frame at or beyond this line is the runner's, not the user's."""
STACK_BYTES = 1024 * 1024
"""QuickJS's stack limit; the evaluator process's main thread has far more."""
NEVER_SETTLED = "the function returned a promise that never settled (it awaits something that never happens)"
COMPILED_CACHE = 256
"""Compiled expressions kept per context: a graph's expressions are compiled once per thread."""


class Interrupted(Exception):
    """The evaluation, or the microtasks it queued, ran past its time limit."""


class Stopped(Exception):
    """The host asked a script to stop (its `serve` raised it), between two slices of JavaScript."""


class OutOfMemory(Exception):
    """The runtime's memory limit was reached."""

    def __init__(self, *, as_null: bool = False) -> None:
        super().__init__("out of memory")
        self.as_null = as_null
        """QuickJS could not even allocate its error and threw `null` instead."""


class ContextFailed(Exception):
    """QuickJS itself failed (not the script: the script's errors come back from the runner)."""


class Answer:
    """What the runner answered: the result's JSON text, or what the script threw
    (`{name, message, stack}`)."""

    __slots__ = ("json", "thrown")

    def __init__(self, json: str | None, thrown: dict[str, Any] | None) -> None:
        self.json = json
        self.thrown = thrown


class Context:
    """A locked-down QuickJS context; `run` evaluates one expression in it."""

    def __init__(self, *, max_memory_bytes: int, preamble: str | None = None, max_depth: int | None = None) -> None:
        """`preamble`: a script evaluated before the lockdown (its script-scope declarations stay
        reachable by name, as the runner's are), for a host that talks to its scripts through
        an object of its own (prompt scripts: `plait.sandbox.scripts`). `max_depth`: how deeply
        values may nest (default `plait.model.limits.MAX_DEPTH`; an evaluator process is told it,
        so as not to import the value-limit machinery)."""
        if max_depth is None:
            from plait.model.limits import MAX_DEPTH

            max_depth = MAX_DEPTH
        # The binding itself (`quickjs.Context` is the same class): the `quickjs` wrapper also
        # starts a thread, which nobody here uses.
        binding = importlib.import_module("_quickjs")
        self._js: quickjs.Context = binding.Context()
        self._js.set_memory_limit(max_memory_bytes)
        self._js.set_max_stack_size(STACK_BYTES)
        self._js.set_time_limit(PRELUDE_TIMEOUT_S)
        if preamble is not None:
            self._js.eval(preamble)
        runner = "__plait_runner_" + os.urandom(8).hex()
        prelude = PRELUDE.replace(RUNNER_PLACEHOLDER, runner).replace(DEPTH_PLACEHOLDER, str(max_depth))
        self._js.eval("\n" * RUNTIME_LINES + prelude)
        self._runners: dict[Kind, quickjs.Object] = {
            "evaluate": self._js.eval(f"{runner}.evaluate"),
            "call": self._js.eval(f"{runner}.call"),
        }
        self._settled = self._js.eval(f"{runner}.settled")
        self._compiled: OrderedDict[tuple[Kind, tuple[str, ...], str], quickjs.Object] = OrderedDict()
        self.broken = False
        """Set after an interruption or memory exhaustion: the owner replaces the context."""

    def run(
        self,
        kind: Kind,
        source: str,
        names: list[str],
        payload: str,
        max_output: int,
        timeout_s: float,
        serve: Callable[[], bool] | None = None,
    ) -> Answer:
        """Evaluate `source` (an expression; for `call`, one whose value is the function to call)
        with the JSON `payload` as its arguments. Raises `Interrupted`, `OutOfMemory` or
        `ContextFailed`; a value the script threw comes back in the answer. `serve`: called,
        between slices of JavaScript, while a promise the function returned is unsettled; it
        answers what the script asked its host for and says whether it did anything (False: the
        promise never settles); it may raise `Stopped`."""
        deadline = time.monotonic() + timeout_s
        self._js.set_time_limit(timeout_s)
        try:
            compiled = self._compile(kind, source, names)
            out = self._runners[kind](compiled, payload, max_output)
            self._drain(deadline)
            while out is None:  # a promise (`async function main`): settled while draining, or never
                out = self._settled()
                if out is None:
                    if serve is None or not serve():
                        return Answer(None, {"name": "Error", "message": NEVER_SETTLED, "stack": ""})
                    self._drain(deadline)
        except Exception as exc:
            raise self._failure(exc) from None
        if isinstance(out, str):
            return Answer(out, None)
        thrown = json.loads(json.loads(out.json())[0])
        if thrown.get("name") == "InternalError" and "out of memory" in str(thrown.get("message")):
            raise self._failure(OutOfMemory()) from None
        if thrown.get("name") == "thrown value" and thrown.get("message") == "null":
            # When building the error itself fails for memory, QuickJS throws null instead; by
            # the time the runner sees it the memory is free again, so nothing tells this apart
            # from `throw null`, which no expression has a reason to write.
            raise self._failure(OutOfMemory(as_null=True)) from None
        return Answer(None, thrown)

    def value(self, expression: str) -> Any:
        """What `expression` evaluates to in this context (the host reaching an object its
        preamble declared); a function comes back callable from Python."""
        return self._js.eval(expression)

    def _compile(self, kind: Kind, source: str, names: list[str]) -> quickjs.Object:
        """The expression as a frozen function (its text starts on line 2 of the script), once
        per context. Compiling runs none of the user's code; frozen, the function (and its
        `prototype`) carries nothing from one evaluation to the next."""
        key = (kind, tuple(names), source)
        found = self._compiled.get(key)
        if found is not None:
            self._compiled.move_to_end(key)
            return found
        params = ", ".join(names) if kind == "evaluate" else ""
        script = (
            f'"use strict";(() => {{ const f = function ({params}) {{ return (\n{source}\n); }};'
            " Object.freeze(f.prototype); return Object.freeze(f); })()"
        )
        compiled = self._js.eval(script)
        self._compiled[key] = compiled
        if len(self._compiled) > COMPILED_CACHE:
            self._compiled.popitem(last=False)
        return compiled

    def _drain(self, deadline: float) -> None:
        """Run the microtasks the evaluation queued, within what is left of its deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Interrupted
            self._js.set_time_limit(left)
            if not self._js.execute_pending_job():
                return

    def _failure(self, exc: Exception) -> Exception:
        """What an exception out of QuickJS means; the context is unusable after any of them
        but a plain JavaScript error that escaped the runner."""
        text = str(exc)
        if isinstance(exc, Stopped):
            return exc
        if isinstance(exc, Interrupted) or "InternalError: interrupted" in text:
            self.broken = True
            return Interrupted()
        if isinstance(exc, OutOfMemory):
            self.broken = True
            return exc
        if "out of memory" in text:
            self.broken = True
            return OutOfMemory()
        if type(exc).__name__ in ("JSException", "StackOverflow"):
            self.broken = True
            return ContextFailed(f"the JavaScript context failed: {text.partition(chr(10))[0]}")
        return exc
