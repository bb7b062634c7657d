"""Python CODE nodes: the code runs in a child interpreter in the jail, never in Plait's process.

The child is `python -I -S` (no environment variables read, no site-packages: the standard
library only), started in a bubblewrap jail (`plait/sandbox/confinement.py`): the interpreter's
install and the system folders read-only, an in-memory `/tmp`, no network, no view of the host's
processes or files. Before it runs the code it limits itself: CPU time (`RLIMIT_CPU`), address
space (`RLIMIT_AS`), the size of any file it writes (`RLIMIT_FSIZE`) and the number of processes
(`RLIMIT_NPROC`, counted in the jail's own user namespace). Where a cgroup can be made, the
cgroup bounds the processes and the memory of all of them together too. The parent adds a
wall-clock timeout and a cap on what comes back. What the code prints goes to the node's log
(stderr), not into its result.

The code defines `main(input, nodes)`; what it returns (JSON) is the node's output.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from plait.sandbox.confinement import Confinement
from plait.sandbox.errors import SandboxError
from plait.sandbox.programs import run_program

FILE_SIZE_BYTES = 64 * 1024 * 1024
"""The largest file the code may write in its temporary directory."""
# RLIMIT_CPU is set a second above the wall-clock timeout: single-threaded code is stopped by the
# timeout first (one clear message whatever the load); the CPU limit is the backstop for code
# that burns several cores at once.

_CHILD = r"""
import json, os, resource, sys, traceback

request = json.loads(sys.stdin.buffer.read())
limits = request["limits"]
resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
resource.setrlimit(resource.RLIMIT_AS, (limits["memory"], limits["memory"]))
resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size"], limits["file_size"]))
if limits["processes"] is not None:
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)  # print() and subprocesses write to stderr: the node's log, not its result


def reply(obj):
    answer.write(json.dumps(obj))
    answer.flush()


def failure(kind, exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<code>"]
    line = frames[-1].lineno if frames else getattr(exc, "lineno", None)
    reply({"error": {"kind": kind, "type": type(exc).__name__, "message": str(exc), "line": line}})


try:
    compiled = compile(request["code"], "<code>", "exec")
except SyntaxError as exc:
    failure("syntax", exc)
    raise SystemExit(0)
scope = {"__name__": "__plait_code__"}
try:
    exec(compiled, scope)
    main = scope.get("main")
    if not callable(main):
        missing = "the code defines no main(input, nodes)"
        reply({"error": {"kind": "no_main", "type": "NameError", "message": missing, "line": None}})
    else:
        value = main(request["input"], request["nodes"])
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            reply({"error": {"kind": "not_json", "type": type(exc).__name__, "message": str(exc), "line": None}})
        else:
            answer.write('{"value": ' + text + "}")
            answer.flush()
except MemoryError as exc:
    failure("memory", exc)
except BaseException as exc:
    failure("runtime", exc)
"""


class PythonCodeError(SandboxError):
    """Python code failed: it raised, did not define `main`, returned no JSON, or went over a limit.
    `kind` says which (`syntax`, `no_main`, `runtime`, `not_json`, `memory`, `timeout`,
    `output`, `crashed`)."""

    def __init__(self, kind: str, message: str, line: int | None = None) -> None:
        super().__init__(message, line)
        self.kind = kind


async def run_python(
    code: str,
    input: Any,
    nodes: Any,
    *,
    timeout_s: float,
    memory_mb: int,
    max_output_bytes: int,
    processes: int,
    confinement: Confinement,
    executable: str | None = None,
) -> Any:
    """`main(input, nodes)` of `code`, run in a child interpreter under the limits; its JSON value.
    `executable` must be the path that exists in the jail (`confinement.for_python`)."""
    request = {
        "code": code,
        "input": input,
        "nodes": nodes,
        "limits": {
            "cpu_s": math.ceil(timeout_s) + 1,
            "memory": memory_mb * 1024 * 1024,
            "file_size": FILE_SIZE_BYTES,
            # in the jail the kernel counts RLIMIT_NPROC per user namespace: per run; unconfined it
            # would count every process of Plait's user on the host, so it is not set there
            "processes": processes if confinement.jail is not None else None,
        },
    }
    argv = [executable or sys.executable, "-I", "-S", "-X", "utf8", "-c", _CHILD]
    result = await run_program(
        argv,
        env={"LANG": "C.UTF-8"},
        timeout_s=timeout_s,
        max_output_bytes=max_output_bytes,
        confinement=confinement,
        stdin=json.dumps(request).encode(),
    )
    log = result.stderr_tail.strip()
    if result.timed_out:
        raise PythonCodeError("timeout", f"the Python code ran longer than {timeout_s:g} s and was stopped")
    if result.output_over_cap:
        raise PythonCodeError("output", f"the result is larger than the limit of {max_output_bytes} bytes")
    if result.memory_exceeded:
        raise PythonCodeError(
            "memory", f"the Python code's processes together used more than the memory limit of {memory_mb} MB"
        )
    if result.exit_code is not None and result.exit_code < 0:
        if -result.exit_code == 24:  # SIGXCPU: RLIMIT_CPU
            raise PythonCodeError(
                "timeout", f"the Python code used more than {request['limits']['cpu_s']} s of CPU time"
            )
        raise PythonCodeError("crashed", f"the Python process was killed by signal {-result.exit_code}{_tail(log)}")
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        raise PythonCodeError(
            "crashed", f"the Python process exited ({result.exit_code}) without a result{_tail(log)}"
        ) from None
    if "error" in reply:
        error = reply["error"]
        kind, name, message = error["kind"], error["type"], error["message"]
        if kind == "memory":
            raise PythonCodeError("memory", f"the Python code used more than the memory limit of {memory_mb} MB")
        if result.processes_exhausted or name == "BlockingIOError":
            message += f" (the code may have at most {processes} processes and threads at once)"
        raise PythonCodeError(kind, f"{name}: {message}" if kind != "no_main" else message, error.get("line"))
    return reply["value"]


def _tail(log: str) -> str:
    lines = [line for line in log.splitlines() if line.strip()][-5:]
    return (": " + " | ".join(lines)) if lines else ""
