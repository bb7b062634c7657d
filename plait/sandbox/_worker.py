"""The sandbox child process: evaluate what the parent sends, one request at a time.

Memory: mini-racer's limit counts the V8 heap only; ArrayBuffer and TypedArray backing stores
live outside it. So once V8 is loaded and a context is warm, the child measures its private
writable memory (`VmData`) and sets `RLIMIT_DATA` to that baseline plus the memory limit plus
`SLACK_MB`. An allocation beyond it fails: an ArrayBuffer throws `RangeError: Array buffer
allocation failed` (reported as `JsMemoryError`), a heap allocation makes V8 abort the process
(the parent reports that as `JsMemoryError` too). `RLIMIT_AS` cannot be used: V8 reserves a
terabyte of address space for its pointer cage and ArrayBuffers live inside that reservation.

Accumulation: after every evaluation the child measures `VmData` (and every few evaluations the
V8 heap); past half the limit it replaces its context, and if that does not bring memory back
under three quarters of the limit it asks the parent to replace the whole process. One
evaluation therefore never fails for memory another one left behind.

Every request carries an id the reply repeats; the parent uses no reply whose id does not match.
"""

from __future__ import annotations

import os
import re
import resource
from multiprocessing.connection import Connection
from typing import Any

from plait.sandbox.errors import JsMemoryError, SandboxError

SLACK_MB = 32
"""Room above the memory limit for the child's own work: the request and reply in Python, a
replacement context."""
HEAP_CHECK_EVERY = 16
_VMDATA = re.compile(r"^VmData:\s+(\d+)\s+kB", re.MULTILINE)


def vm_data_bytes(pid: int | str = "self") -> int:
    """Private writable memory of a process (what RLIMIT_DATA limits)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        match = _VMDATA.search(handle.read())
    return int(match.group(1)) * 1024 if match else 0


def serve(conn: Connection, options: dict[str, Any], stderr: str) -> None:
    """The child's main loop. Its stderr (where V8 prints why it aborted) goes to a file the parent
    holds open; the path is unlinked at once, so a killed parent leaves no file behind."""
    log = os.open(stderr, os.O_WRONLY | os.O_TRUNC)
    os.unlink(stderr)
    os.dup2(log, 2)
    os.close(log)
    from plait.sandbox.sandbox import JsSandbox

    limit = int(options["max_memory_mb"]) * 1024 * 1024
    with JsSandbox(**options) as sandbox:
        sandbox.evaluate("0", {})  # V8 loaded and a context warm: the baseline to measure from
        baseline = vm_data_bytes()
        cap = baseline + limit + SLACK_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        count = 0
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message[0] == "stop":
                return
            request_id, kind, source, names, payload, timeout_s = message
            reply = _one(sandbox, kind, source, names, payload, timeout_s)
            count += 1
            retire = _recycle(sandbox, baseline, limit, check_heap=count % HEAP_CHECK_EVERY == 0)
            conn.send((request_id, *reply, retire))


def _one(
    sandbox: Any, kind: str, source: str, names: list[str], payload: str, timeout_s: float | None
) -> tuple[str, Any]:
    try:
        value = sandbox.evaluate_payload(kind, source, names, payload, timeout_s)
    except MemoryError:
        error = JsMemoryError(f"expression exceeded the memory limit of {sandbox.max_memory_mb} MB")
        return "error", (type(error).__name__, error.message, None, None)
    except SandboxError as exc:
        return "error", (type(exc).__name__, exc.message, exc.line, exc.column)
    return "ok", value


def _recycle(sandbox: Any, baseline: int, limit: int, *, check_heap: bool) -> bool:
    """Replace the context when this evaluation left memory behind; True: replace the process."""
    used = vm_data_bytes() - baseline
    if used > limit // 2 or (check_heap and sandbox.heap_used() > limit // 2):
        sandbox.reset()
        sandbox.evaluate("0", {})
        return vm_data_bytes() - baseline > 3 * limit // 4
    return False
