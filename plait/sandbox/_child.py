"""The evaluator process: QuickJS contexts in a fresh interpreter that serves one parent over pipes.

`_process.py` starts it as `python -I -S -c BOOT CONFIG`: a new interpreter (never a fork of a
threaded server), with an empty environment, `/` as its directory, and a `sys.path` of Plait's
own directory and QuickJS's only. It reads requests on stdin and writes replies on stdout
(`_protocol.py`), one evaluation at a time, in a context it keeps (expressions, CODE, migrations;
replaced after an interruption or a memory error) or in a fresh one per prompt script.

What the process is allowed, beside QuickJS's own limits (`_context.py`):

- memory: `RLIMIT_AS`, the address space it had when ready plus twice the contexts' limit plus
  `SLACK_MB` (a backstop: QuickJS's allocator limit is what an evaluation meets first);
- no files written (`RLIMIT_FSIZE` 0), no core dumps; stdout is kept for the replies and fd 1
  points at /dev/null, so nothing printed can pose as a reply;
- its life: a thread waits for its stdin to hang up and ends the process at once, even in the
  middle of an evaluation. Stdin hangs up when the parent closes it or dies, however it dies, so
  no evaluator outlives Plait. SIGINT is ignored: Ctrl-C is the parent's to handle.

The parent's watchdog kills the process when an evaluation runs past its wall-clock deadline
(QuickJS's interrupt counts CPU time, and a few builtins never check it); this process knows
nothing of that, and needs not.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import threading

from plait.sandbox import _protocol as wire

# `typing` is not imported at run time: evaluator processes import this module, and start
# faster without it (annotations are strings here; mypy reads the block below).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from plait.sandbox._context import Kind

NICENESS = 10
"""Evaluations yield the CPU to Plait's own process: a host busy with runaway evaluations still
schedules the server that answers health checks and kills them."""
SLACK_MB = 256
"""Address space beyond the contexts' limits: the interpreter's own work, a reply being built."""
_STDIN = 0


class _Pipe:
    """Frames in on stdin, out on a private copy of stdout."""

    def __init__(self) -> None:
        self._out = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        self._buffer = bytearray()

    def request(self) -> tuple[int, int, float, int, str, str, str]:
        """The next request: id, op, limit, max_output and its three texts (the process ends at
        the end of its input)."""
        request_id, op, limit, max_output, first, second, third = wire.REQUEST.unpack(self._take(wire.REQUEST.size))
        body = self._take(first + second + third)
        texts = (body[:first], body[first : first + second], body[first + second :])
        a, b, c = (part.decode("utf-8", wire.TEXT) for part in texts)
        return request_id, op, limit, max_output, a, b, c

    def send(self, request_id: int, status: int, body: bytes = b"") -> None:
        view = memoryview(wire.reply(request_id, status, body))
        while view:
            view = view[os.write(self._out, view) :]

    def _take(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = os.read(_STDIN, max(1 << 16, size - len(self._buffer)))
            if not chunk:
                os._exit(0)  # the parent closed the pipe: nothing more to do
            self._buffer += chunk
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out


def _lifeline(armed: threading.Event) -> None:
    """End the process as soon as stdin hangs up (no writer left: the parent is gone)."""
    poller = select.poll()
    poller.register(_STDIN, 0)  # no events asked: only a hang-up or an error wakes it
    armed.set()
    while True:
        for _, event in poller.poll():
            if event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                os._exit(0)


def _vm_size() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _limit(memory_bytes: int) -> None:
    """The process's own limits, once it is ready (see the module docstring)."""
    cap = _vm_size() + 2 * memory_bytes + (SLACK_MB << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class _Evaluator:
    """The requests of one parent: expressions in a kept context, scripts in fresh ones."""

    def __init__(self, pipe: _Pipe, memory_bytes: int, max_depth: int) -> None:
        from plait.sandbox._context import Context

        self.pipe = pipe
        self.memory_bytes = memory_bytes
        self.max_depth = max_depth
        self._make = Context
        self.context = Context(max_memory_bytes=memory_bytes, max_depth=max_depth)

    def serve(self) -> None:
        while True:
            request_id, op, limit, max_output, a, b, c = self.pipe.request()
            try:
                status, out = self._one(request_id, op, limit, max_output, (a, b, c))
            except MemoryError:
                status, out = wire.MEMORY, b""
            except Exception as exc:  # a bug or a limit of this process: the parent reports it
                status, out = wire.ERROR, f"{type(exc).__name__}: {exc}".encode("utf-8", wire.TEXT)
            self.pipe.send(request_id, status, out)

    def _one(
        self, request_id: int, op: int, limit: float, max_output: int, texts: tuple[str, str, str]
    ) -> tuple[int, bytes]:
        from plait.sandbox._context import ContextFailed, Interrupted, OutOfMemory, Stopped

        try:
            if op in (wire.EVALUATE, wire.CALL):
                return self._evaluate(op, *texts, limit, max_output)
            if op == wire.SCRIPT:
                return self._script(request_id, *texts, limit, max_output)
            return wire.ERROR, f"unknown request {op}".encode()
        except Interrupted:
            return wire.TIMEOUT, b""
        except OutOfMemory as exc:
            return (wire.MEMORY_NULL if exc.as_null else wire.MEMORY), b""
        except ContextFailed as exc:
            return wire.FAILED, str(exc).encode("utf-8", wire.TEXT)
        except Stopped:
            return wire.STOPPED, b""

    def _evaluate(
        self, op: int, source: str, names: str, payload: str, limit: float, max_output: int
    ) -> tuple[int, bytes]:
        if self.context.broken:
            self.context = self._make(max_memory_bytes=self.memory_bytes, max_depth=self.max_depth)
        kind: Kind = "evaluate" if op == wire.EVALUATE else "call"
        answer = self.context.run(kind, source, names.split(",") if names else [], payload, max_output, limit)
        if answer.json is not None:
            return wire.OK, answer.json.encode("utf-8", wire.TEXT)
        return wire.THROWN, json.dumps(answer.thrown, ensure_ascii=False).encode("utf-8", wire.TEXT)

    def _script(
        self, request_id: int, source: str, bridge: str, memory: str, limit: float, max_output: int
    ) -> tuple[int, bytes]:
        from plait.sandbox._context import RUNTIME_LINES, Stopped
        from plait.sandbox._prelude import BRIDGE

        context = self._make(
            max_memory_bytes=int(memory),
            # after as many empty lines as the prelude: the bridge's own frames are never the script's
            preamble="\n" * (2 * RUNTIME_LINES) + BRIDGE.replace("__BRIDGE__", bridge),
            max_depth=self.max_depth,
        )
        take, settle = context.value(f"{bridge}.take"), context.value(f"{bridge}.settle")

        def serve() -> bool:
            """Between slices of JavaScript: pass the console on, and the requests, with their answers back."""
            pending = take()
            requests, logs = json.loads(pending)
            if not requests:
                if logs:
                    self.pipe.send(request_id, wire.NOTE, pending.encode("utf-8", wire.TEXT))
                return False
            self.pipe.send(request_id, wire.HOST, pending.encode("utf-8", wire.TEXT))
            _, op, _, _, answers, _, _ = self.pipe.request()
            if op != wire.ANSWERS:
                raise Stopped
            for asked, ok, value in json.loads(answers):
                settle(asked, ok, value)
            return True

        answer = context.run("call", source, [], "[]", max_output, limit, serve=serve)
        left = take()  # what the last slice logged or asked and nobody awaited
        if left != "[[],[]]":
            self.pipe.send(request_id, wire.NOTE, left.encode("utf-8", wire.TEXT))
        if answer.json is not None:
            return wire.OK, answer.json.encode("utf-8", wire.TEXT)
        return wire.THROWN, json.dumps(answer.thrown, ensure_ascii=False).encode("utf-8", wire.TEXT)


def main(config: dict[str, Any]) -> None:
    """Serve the parent until it closes stdin or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(NICENESS)
    pipe = _Pipe()
    armed = threading.Event()
    threading.stack_size(256 * 1024)
    threading.Thread(target=_lifeline, args=(armed,), daemon=True).start()
    armed.wait()
    memory = int(config["memory_mb"]) << 20
    evaluator = _Evaluator(pipe, memory, int(config["max_depth"]))
    _limit(memory)
    pipe.send(0, wire.READY)
    evaluator.serve()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
