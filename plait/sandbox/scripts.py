"""Prompt scripts: an `async function main()` that returns a prompt, run in a QuickJS context of
its own, in an evaluator process, with host APIs and quotas.

The script sees three host APIs, each returning a promise (`await getVar("input.topic")`):
`getVar(path)`, `getSchemaHint(target)` and `readRoute(route, params)`, and a `console` whose
`log`, `info`, `warn` and `error` are captured as events. The host answers them through a
`ScriptHost` (the engine's run data, the graph's schemas, Plait's own GET routes), in Plait's
process, between slices of JavaScript: a call queues a request on a bridge object declared
before the lockdown (`_prelude.BRIDGE`) and gets a promise; when the script waits, the process
sends the queued requests here, and the answers settle the promises. No Python function is ever
called from JavaScript, and nothing a script does can reach the host other than these requests.

Each run gets a fresh context (nothing survives from one script to the next) and these limits,
each enforced here and reported as a `ScriptError` of its own kind:

- time, on the wall clock from the moment its process starts it: a `warning` event at `soft_s`,
  and the script is stopped at `hard_s`, host calls included: each request is answered only
  while time is left, and waited for at most until then; the process is killed if it has not
  answered `KILL_GRACE_S` later (QuickJS interrupts loops itself; microtasks run only while
  time is left, so `while (true) await 0` ends too);
- memory: the context's allocator limit, everything counted;
- the prompt: a string of at most `max_prompt_bytes`;
- host calls: at most `max_host_calls`; the next one fails the script;
- console: at most `max_console_entries` entries and `max_console_bytes`, each entry cut at
  `max_console_entry_bytes` with a note; the rest is dropped and counted;
- host values: a value over `max_host_value_bytes` (as JSON) is cut, with a marker.

A cancelled script (`cancel`) has its process killed within `CANCEL_POLL_S`. Every host call is
recorded (`ScriptOutcome.host_calls`: api, arguments, the value given), so that a replay
reproduces the same prompt from the record alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import math
import re
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from plait.sandbox import _protocol as wire
from plait.sandbox._context import RUNTIME_LINES
from plait.sandbox._evaluator import Evaluator
from plait.sandbox._pool import FairPool
from plait.sandbox._process import ProcessGone
from plait.sandbox.errors import JsSyntaxError, SandboxError
from plait.sandbox.syntax import check_syntax, script_function

EventType = Literal["log", "warning", "error", "result"]
HOST_APIS = ("getVar", "getSchemaHint", "readRoute")
CONSOLE_LEVELS = ("log", "info", "warn", "error")
CANCEL_POLL_S = 0.05
"""How often a waiting script checks `cancel` (and so how soon a cancelled one is killed)."""
CANCELLED = "the script was cancelled (a newer run replaced it)"
SCRIPT_MEMORY_MB = 64
"""The address-space budget of a script's evaluator process (the context's own limit is the run's)."""
SCRIPT_PROCESSES = 2
"""Script processes kept ready; the pool grows to `MAX_SCRIPT_PROCESSES` for scripts at once."""
MAX_SCRIPT_PROCESSES = 8
HOST_THREADS = 8
"""Threads answering host calls (a call outliving its script's time finishes there, unawaited)."""


@dataclass(frozen=True, slots=True)
class ScriptLimits:
    """What one run of a script may use."""

    soft_s: float = 5.0
    hard_s: float = 8.0
    memory_mb: int = 64
    max_prompt_bytes: int = 64 * 1024
    max_host_calls: int = 20
    max_console_entries: int = 50
    max_console_bytes: int = 10 * 1024
    max_console_entry_bytes: int = 1024
    """One entry longer than this is cut, with a note saying so: a script logging a whole
    document leaves room for the entries after it."""
    max_host_value_bytes: int = 16 * 1024


PREVIEW = ScriptLimits(soft_s=3.0, hard_s=5.0)
"""A preview in the editor: it should answer quickly."""
GENERATE = ScriptLimits(soft_s=5.0, hard_s=8.0)
"""A script that renders a prompt for a model call (a run's LLM_CALL, or generate)."""


class HostError(Exception):
    """A host API refused a call (unknown path, route not allowed); the message reaches the
    script as the rejection of its promise."""


class ScriptHost(Protocol):
    """What a script's host APIs read; each may raise HostError."""

    def get_var(self, path: str) -> Any: ...

    def schema_hint(self, target: str) -> str: ...

    def read_route(self, route: str, params: dict[str, Any]) -> Any: ...


ScriptErrorKind = Literal[
    "syntax",
    "no_main",
    "not_async",
    "thrown",
    "not_string",
    "too_large",
    "timeout",
    "memory",
    "host_calls",
    "cancelled",
]


class ScriptError(SandboxError):
    """The script failed; `kind` says how, `line` and `column` where in the script (1-based)."""

    def __init__(self, kind: ScriptErrorKind, message: str, line: int | None = None, column: int | None = None):
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(message + where)
        self.kind = kind
        self.message = message
        self.line = line
        self.column = column

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "line": self.line, "column": self.column}


@dataclass(frozen=True, slots=True)
class ScriptEvent:
    """One thing a run reports: a console entry (`log`, or `warning`/`error` for `console.warn`
    and `console.error` and for the host's own warnings), or the `result`."""

    type: EventType
    level: str
    args: list[Any]
    ts: float
    error: ScriptError | None = None
    """On the last event of a script that failed: the error (its kind, line and column)."""

    def as_json(self) -> dict[str, Any]:
        data = {"type": self.type, "level": self.level, "args": self.args, "ts": self.ts}
        if self.error is not None:
            data["error"] = self.error.as_json()
        return data


@dataclass
class ScriptOutcome:
    """How a run ended: the prompt, or the error; with every event and host call."""

    prompt: str | None = None
    error: ScriptError | None = None
    events: list[ScriptEvent] = field(default_factory=list)
    host_calls: list[dict[str, Any]] = field(default_factory=list)
    dropped_console: int = 0
    duration_ms: float = 0.0
    template: dict[str, Any] | None = None
    """The stored template the script came from (`id`, and the `code` run), if it came from one."""

    def record(self) -> dict[str, Any]:
        """What a node run's input snapshot keeps of it."""
        return {
            "template": self.template,
            "prompt": self.prompt,
            "error": self.error.as_json() if self.error else None,
            "events": [e.as_json() for e in self.events],
            "host_calls": self.host_calls,
            "dropped_console": self.dropped_console,
            "duration_ms": self.duration_ms,
        }


class _Run:
    """One run of one script, seen from the host: its bridge's name, the console and host calls
    it passes on, and the conversation with the evaluator process that runs it."""

    def __init__(
        self,
        host: ScriptHost,
        limits: ScriptLimits,
        on_event: Callable[[ScriptEvent], None] | None,
        cancel: threading.Event | None,
    ):
        self.host, self.limits, self.on_event, self.cancel = host, limits, on_event, cancel
        self.outcome = ScriptOutcome()
        self.console_bytes = 0
        self.console_entries = 0
        self.bridge = "__plait_bridge_" + secrets.token_hex(8)
        self.over_quota: ScriptError | None = None
        self.deadline = math.inf
        """When the script's time is up (monotonic), once its process has started it."""

    def emit(self, event: ScriptEvent) -> None:
        self.outcome.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    # --- the conversation -------------------------------------------------------------------------

    def converse(self, evaluator: Evaluator, code: str) -> tuple[int, bytes]:
        """Send the script, answer what it asks while it runs, and return its last frame (status,
        body). Raises ScriptError when it is cancelled or out of time, ProcessGone when its
        process ended."""
        limits = self.limits
        memory = str(limits.memory_mb << 20)
        evaluator.begin(wire.SCRIPT, limits.hard_s, limits.max_prompt_bytes * 4, script_function(code, self.bridge),
                        self.bridge, memory)  # fmt: skip
        warned = False
        while True:
            if self.cancel is not None and self.cancel.is_set():
                evaluator.kill("cancelled")
                raise ScriptError("cancelled", CANCELLED)
            now = time.monotonic()
            began = evaluator.began
            soft = math.inf if began is None or warned else began + limits.soft_s
            if now >= soft:
                warned = True
                message = f"the script has run for {limits.soft_s:g} s; it is stopped at {limits.hard_s:g} s"
                self.emit(ScriptEvent("warning", "time", [message], time.time()))
                continue
            frame = evaluator.receive(min(soft, now + CANCEL_POLL_S))
            if frame is None:
                continue
            began = evaluator.began  # it is ready now: it has sent something
            self.deadline = (began if began is not None else now) + limits.hard_s
            _, status, body = frame
            if status not in (wire.HOST, wire.NOTE):
                return status, body
            answers = self.serve(body.decode("utf-8", wire.TEXT))
            if status == wire.HOST:
                evaluator.send(wire.ANSWERS if answers is not None else wire.STOP, json.dumps(answers or []))

    def serve(self, pending: str) -> list[list[Any]] | None:
        """Pass on the console entries and answer the requests (checking the time before each,
        and waiting for each at most until the deadline); None when the time ran out."""
        requests, logs = json.loads(pending)
        for level, args in logs:
            self._console(level, args)
        answers: list[list[Any]] = []
        for request_id, api, args in requests:
            if time.monotonic() >= self.deadline:
                return None
            answer = self._call(api, args)
            if answer is None:
                return None
            answers.append([request_id, *answer])
        return answers

    # --- the host's side --------------------------------------------------------------------------

    def _console(self, level: str, args: list[Any]) -> None:
        size = len(json.dumps(args, ensure_ascii=False))
        if size > self.limits.max_console_entry_bytes:
            args, size = _cut_entry(args, size, self.limits.max_console_entry_bytes)
        if (
            self.console_entries >= self.limits.max_console_entries
            or self.console_bytes + size > self.limits.max_console_bytes
        ):
            self.outcome.dropped_console += 1
            return
        self.console_entries += 1
        self.console_bytes += size
        kind: EventType = "warning" if level == "warn" else "error" if level == "error" else "log"
        self.emit(ScriptEvent(kind, level, args, time.time()))

    def _call(self, api: str, args: list[Any]) -> tuple[bool, str] | None:
        """(ok, the answer's text) for one request; None when the script's time ran out first."""
        calls = self.outcome.host_calls
        if len(calls) >= self.limits.max_host_calls:
            self.over_quota = ScriptError(
                "host_calls",
                f"the script made more than {self.limits.max_host_calls} host calls (getVar, "
                "getSchemaHint, readRoute); read what you need in fewer calls",
            )
            return False, self.over_quota.message
        record: dict[str, Any] = {"api": api, "args": args}
        calls.append(record)
        asked = _host_threads().submit(self._ask, api, args)
        try:
            value = asked.result(timeout=max(0.0, self.deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            record["error"] = "the script's time ran out during this call"
            return None
        except HostError as exc:
            record["error"] = str(exc)
            return False, f"{api}: {exc}"
        value = self._bounded(value, api)
        record["value"] = value
        return True, json.dumps(value, ensure_ascii=False)

    def _ask(self, api: str, args: list[Any]) -> Any:
        """The host's answer (on a thread of the host pool, so that waiting for it has a bound)."""
        if api == "getVar":
            return self.host.get_var(str(args[0]))
        if api == "getSchemaHint":
            return self.host.schema_hint(str(args[0]))
        if api == "readRoute":
            params = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
            return self.host.read_route(str(args[0]), params)
        raise HostError(f"no host API named {api!r}")

    def _bounded(self, value: Any, api: str) -> Any:
        text = json.dumps(value, ensure_ascii=False)
        limit = self.limits.max_host_value_bytes
        if len(text.encode("utf-8")) <= limit:
            return value
        cut = text.encode("utf-8")[:limit].decode("utf-8", "ignore")
        source = value if isinstance(value, str) else cut
        kept = source[: max(0, limit - 64)]
        marker = f"…[truncated: {len(text)} characters over the {limit} bytes a host value may hold]"
        self.emit(ScriptEvent("warning", "host", [f"{api} returned more than {limit} bytes; it was cut"], time.time()))
        return kept + marker


def _cut_entry(args: list[Any], size: int, limit: int) -> tuple[list[Any], int]:
    """A console entry over `limit` bytes as one text of its first `limit` bytes and a note."""
    text = " ".join(a if isinstance(a, str) else json.dumps(a, ensure_ascii=False) for a in args)
    kept = text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")
    cut = [f"{kept}… [cut at {limit} bytes: the entry had {size}]"]
    return cut, len(json.dumps(cut, ensure_ascii=False))


def run_script(
    code: str,
    host: ScriptHost,
    limits: ScriptLimits = GENERATE,
    *,
    on_event: Callable[[ScriptEvent], None] | None = None,
    cancel: threading.Event | None = None,
) -> ScriptOutcome:
    """Run a prompt script to its prompt, from the calling thread (which waits for it, up to
    `limits.hard_s` once an evaluator process has started it). Never raises for what the script
    does: the outcome holds its error. `on_event` is called, on this thread, with each event as
    it happens; `cancel` set stops the script within `CANCEL_POLL_S` (its process is killed)."""
    started = time.monotonic()
    try:
        check_syntax(code, kind="script")
    except JsSyntaxError as exc:
        outcome = ScriptOutcome(error=ScriptError("syntax", f"SyntaxError: {exc.message}", exc.line, exc.column))
        outcome.events.append(ScriptEvent("error", "script", [str(outcome.error)], time.time(), outcome.error))
        if on_event is not None:
            on_event(outcome.events[-1])
        return outcome
    run = _Run(host, limits, on_event, cancel)
    try:
        status, body = _in_process(run, code)
        run.outcome.prompt = _prompt(status, body, limits, run.over_quota)
    except ScriptError as exc:
        run.outcome.error = exc
    run.outcome.duration_ms = round((time.monotonic() - started) * 1000, 3)
    if run.outcome.error is not None:
        run.emit(ScriptEvent("error", "script", [str(run.outcome.error)], time.time(), run.outcome.error))
    else:
        run.emit(ScriptEvent("result", "script", [run.outcome.prompt], time.time()))
    return run.outcome


def _in_process(run: _Run, code: str) -> tuple[int, bytes]:
    """The script's last frame, from an evaluator process of the scripts' pool (each run its own
    owner, so no script waits behind another while the pool can grow)."""
    pool = _evaluators()
    ticket = pool.request(run.bridge)
    try:
        while not pool.wait(ticket, CANCEL_POLL_S):
            if run.cancel is not None and run.cancel.is_set():
                raise ScriptError("cancelled", CANCELLED)
    except BaseException:
        pool.withdraw(ticket)
        raise
    if ticket.error is not None:
        raise ScriptError("cancelled", f"the script was not run: {ticket.error}")
    evaluator = ticket.item
    assert evaluator is not None
    evaluator.busy = True
    finished = False
    try:
        last = run.converse(evaluator, code)
        finished = True
        return last
    except ProcessGone as gone:
        if gone.reason == "deadline":
            raise ScriptError("timeout", _timeout(run.limits)) from None
        if gone.reason == "cancelled":
            raise ScriptError("cancelled", CANCELLED) from None
        raise ScriptError("thrown", f"the script's evaluator process ended ({gone.detail or gone.reason})") from None
    finally:
        if not finished:  # stopped in the middle (cancelled, a host that raised): nobody finishes it
            evaluator.kill("cancelled")
        evaluator.end()
        evaluator.busy = False
        evaluator.after()
        surplus = pool.release(evaluator, run.bridge)
        if surplus is not None:
            surplus.stop()


def _timeout(limits: ScriptLimits) -> str:
    return f"the script ran past its time limit of {limits.hard_s:g} s"


_pool_lock = threading.Lock()
_pool: FairPool[Evaluator] | None = None
_host_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _evaluators() -> FairPool[Evaluator]:
    """The process's evaluators for prompt scripts, started on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = FairPool(lambda: Evaluator(SCRIPT_MEMORY_MB), base=SCRIPT_PROCESSES, maximum=MAX_SCRIPT_PROCESSES)
        return _pool


def _host_threads() -> concurrent.futures.ThreadPoolExecutor:
    """Where host calls run: a call that outlives its script's time is left to finish there."""
    global _host_pool
    with _pool_lock:
        if _host_pool is None:
            _host_pool = concurrent.futures.ThreadPoolExecutor(HOST_THREADS, thread_name_prefix="plait-script-host")
        return _host_pool


def _prompt(status: int, body: bytes, limits: ScriptLimits, quota: ScriptError | None) -> str:
    """The prompt from the script's last frame, or the ScriptError it stands for."""
    if status == wire.TIMEOUT or status == wire.STOPPED:
        raise ScriptError("timeout", _timeout(limits))
    if status in (wire.MEMORY, wire.MEMORY_NULL):
        raise ScriptError("memory", f"the script used more than its {limits.memory_mb} MB of memory")
    if status in (wire.FAILED, wire.ERROR):
        raise ScriptError("thrown", body.decode("utf-8", wire.TEXT))
    if quota is not None:
        raise quota
    if status == wire.THROWN:
        raise _thrown(json.loads(body))
    value = json.loads(body) if body else None
    if not isinstance(value, str):
        got = "nothing" if value is None else f"a {type(value).__name__}"
        raise ScriptError("not_string", f"main() must return the prompt as a string; it returned {got}")
    size = len(value.encode("utf-8"))
    if size > limits.max_prompt_bytes:
        raise ScriptError("too_large", f"the prompt is {size} bytes, over the limit of {limits.max_prompt_bytes} bytes")
    return value


_FRAME = re.compile(r"<input>:(\d+):(\d+)")


def _script_position(stack: str) -> tuple[int | None, int | None]:
    """The innermost frame in the script itself: the compiled text puts the function's head
    (the host APIs) on line 2 and the script from line 3; frames from `RUNTIME_LINES` on are
    the runner's and the bridge's."""
    for match in _FRAME.finditer(stack):
        line, column = int(match.group(1)), int(match.group(2))
        if 3 <= line < RUNTIME_LINES:
            return line - 2, column
    return None, None


def _thrown(info: dict[str, Any]) -> ScriptError:
    message = str(info.get("message", ""))
    if message == "__plait_no_main__":
        return ScriptError(
            "no_main", "the script defines no `async function main()`; declare one that returns the prompt"
        )
    if message == "__plait_not_async__":
        return ScriptError("not_async", "`main` must be an async function: write `async function main() { ... }`")
    line, column = _script_position(str(info.get("stack", "")))
    name = str(info.get("name", "Error"))
    text = f"threw {message}" if name == "thrown value" else f"{name}: {message}"
    if name == "SyntaxError":
        return ScriptError("syntax", text, line, column)
    return ScriptError("thrown", text, line, column)


class ScriptPool:
    """Threads that run prompt scripts for an event loop, `max_workers` at a time (a script holds
    its thread up to its hard time limit)."""

    def __init__(self, max_workers: int = 4):
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="plait-script")

    async def run(
        self,
        code: str,
        host: ScriptHost,
        limits: ScriptLimits = GENERATE,
        *,
        on_event: Callable[[ScriptEvent], None] | None = None,
    ) -> ScriptOutcome:
        """`run_script` on one of the pool's threads. Cancelling the caller stops the script
        within `CANCEL_POLL_S` (its process is killed)."""
        cancel = threading.Event()
        call = functools.partial(run_script, code, host, limits, on_event=on_event, cancel=cancel)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, call)
        except asyncio.CancelledError:
            cancel.set()
            raise

    def close(self) -> None:
        """Start no more scripts; the running ones end within their limits."""
        self._executor.shutdown(wait=False, cancel_futures=True)
