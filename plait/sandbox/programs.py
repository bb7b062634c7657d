"""Running a program for a TOOL or a Python CODE node: an argv, never a shell, with limits.

Every run gets a fresh temporary working directory (removed afterwards), only the environment it
is given, stdin closed or fed what the caller passes, a wall-clock timeout and a cap on stdout.
The program starts a session of its own, so stopping it (timeout, output over the cap,
cancellation) kills everything it started in its process group too.

This bounds what a well-meaning program does by accident; it is not a sandbox. A program runs
with Plait's own user and can read what that user can: which programs may run at all is the
operator's list (`[tools] allow`), never the graph's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

STDERR_TAIL_BYTES = 4_000
"""How much of the end of stderr is kept (for the error message and the node's attempts)."""
_CHUNK = 65_536


@dataclass(frozen=True, slots=True)
class ProgramResult:
    """How a program ended and what it wrote."""

    exit_code: int | None
    """None when it was stopped (timeout, output over the cap)."""
    stdout: bytes
    stderr_tail: str
    duration_s: float
    timed_out: bool = False
    output_over_cap: bool = False


async def run_program(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int,
    stdin: bytes | None = None,
) -> ProgramResult:
    """Run `argv` (its first item an absolute path) in a fresh temporary directory. Raises
    OSError when it cannot be started (not found, not executable)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plait-run-") as folder:
        environment = {**env, "HOME": folder, "TMPDIR": folder}
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=folder,
            env=environment,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            return await _supervise(process, stdin, timeout_s, max_output_bytes, started)
        finally:
            _kill_group(process)  # whatever it left running in its session goes with the folder
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                await asyncio.wait_for(process.wait(), 5)


async def _supervise(
    process: asyncio.subprocess.Process, stdin: bytes | None, timeout_s: float, cap: int, started: float
) -> ProgramResult:
    out = bytearray()
    tail = bytearray()
    over = asyncio.Event()

    async def read_stdout() -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(_CHUNK):
            out.extend(chunk)
            if len(out) > cap:
                over.set()
                return

    async def read_stderr() -> None:
        assert process.stderr is not None
        while chunk := await process.stderr.read(_CHUNK):
            tail.extend(chunk)
            del tail[:-STDERR_TAIL_BYTES]

    async def feed() -> None:
        if stdin is None or process.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(stdin)
            await process.stdin.drain()
        process.stdin.close()

    async def finish() -> None:
        await asyncio.gather(feed(), read_stdout(), read_stderr())
        await process.wait()

    done = asyncio.ensure_future(finish())
    stopper = asyncio.ensure_future(over.wait())
    try:
        finished, _ = await asyncio.wait({done, stopper}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    elapsed = time.monotonic() - started
    text = tail.decode("utf-8", errors="replace")
    if done not in finished:
        _kill_group(process)
        done.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await done
        if over.is_set():
            return ProgramResult(None, bytes(out[:cap]), text, elapsed, output_over_cap=True)
        return ProgramResult(None, bytes(out), text, elapsed, timed_out=True)
    done.result()
    return ProgramResult(process.returncode, bytes(out), text, elapsed)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
