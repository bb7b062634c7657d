"""Running a program for a TOOL or a Python CODE node: an argv, never a shell, in a jail, with limits.

This is the one place that starts such a program. It runs inside a bubblewrap jail
(`plait/sandbox/jail.py`): its own namespaces, the system folders read-only, a fresh in-memory
`/tmp` as the only writable place, no network unless allowed. Where a cgroup can be made
(`plait/sandbox/cgroups.py`) the jail is also bounded in processes and, when asked, in the memory
of all its processes; bubblewrap waits (`--block-fd`) until its first process is in the cgroup.

Every run gets only the environment it is given, stdin closed or fed what the caller passes, a
wall-clock timeout and a cap on stdout. Stopping it (timeout, output over the cap, cancellation)
kills bubblewrap, and with it the jail's pid namespace: every process the program started, in
whatever session, dies too.

With `[jail] mode = "none"` (`Confinement(None)`) the deployer has opted out: the program runs with
Plait's own rights in a host folder under one Plait-owned parent (`plait/sandbox/folders.py`),
removed afterwards on a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from plait.sandbox.cgroups import NodeCgroup
from plait.sandbox.confinement import Confinement
from plait.sandbox.folders import new_folder, remove_tree, sweep_leftovers

STDERR_TAIL_BYTES = 4_000
"""How much of the end of stderr is kept (for the error message and the node's attempts)."""
_CHUNK = 65_536
_INFO_BYTES = 4_096


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
    memory_exceeded: bool = False
    """The kernel killed one of its processes for going over the cgroup's memory limit."""
    processes_exhausted: bool = False
    """It tried to start more processes than the cgroup allows."""


async def run_program(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int,
    confinement: Confinement,
    stdin: bytes | None = None,
) -> ProgramResult:
    """Run `argv` (its first item an absolute path) as `confinement` says (unconfined: in a fresh
    host folder). Raises OSError when it cannot be started (not found, not executable, no cgroup)."""
    jail, bounds = confinement.jail, confinement.bounds
    if jail is None:
        return await _unconfined(argv, env, timeout_s, max_output_bytes, stdin)
    started = time.monotonic()
    cgroup = NodeCgroup(bounds.tree, processes=bounds.processes, memory_bytes=bounds.memory_bytes) if bounds else None
    info_r, info_w = os.pipe() if cgroup else (-1, -1)
    block_r, block_w = os.pipe() if cgroup else (-1, -1)
    fds = (info_w, block_r) if cgroup else ()
    try:
        command = jail.command(argv, env, info_fd=info_w if cgroup else None, block_fd=block_r if cgroup else None)
        process = await _start(command, {}, None, stdin, fds)
    except BaseException:
        for fd in (info_r, info_w, block_r, block_w):
            if fd >= 0:
                os.close(fd)
        if cgroup is not None:
            await asyncio.to_thread(cgroup.destroy)
        raise
    try:
        if cgroup is not None:
            os.close(info_w)
            os.close(block_r)
            await _enter(process, cgroup, info_r, block_w)
        result = await _supervise(process, stdin, timeout_s, max_output_bytes, started)
        if cgroup is not None:
            _stop(process)
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                await asyncio.wait_for(process.wait(), 5)
            exceeded = await asyncio.to_thread(lambda: (cgroup.memory_exceeded(), cgroup.processes_exhausted()))
            result = _with(result, *exceeded)
        return result
    finally:
        _stop(process)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            await asyncio.wait_for(process.wait(), 5)
        if cgroup is not None:
            await asyncio.to_thread(cgroup.destroy)


def _with(result: ProgramResult, memory: bool, processes: bool) -> ProgramResult:
    if not (memory or processes):
        return result
    return ProgramResult(
        result.exit_code,
        result.stdout,
        result.stderr_tail,
        result.duration_s,
        result.timed_out,
        result.output_over_cap,
        memory_exceeded=memory,
        processes_exhausted=processes,
    )


async def _enter(process: asyncio.subprocess.Process, cgroup: NodeCgroup, info_r: int, block_w: int) -> None:
    """Put the jail's first process in the cgroup, then let it run the program."""
    try:
        pid = await asyncio.wait_for(_child_pid(info_r), 30)
        if pid is None:
            return  # bubblewrap failed before making the jail: its stderr says why
        cgroup.join(pid)
        os.write(block_w, b"1")
    except BaseException:
        _stop(process)  # before the block is lifted: an unbounded jail never runs the program
        raise
    finally:
        os.close(info_r)
        os.close(block_w)


async def _child_pid(fd: int) -> int | None:
    """The jail's first process, from the JSON bubblewrap writes on `--info-fd` (None: it wrote
    none), read as the loop sees the pipe become readable."""
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    data = b""
    while len(data) < _INFO_BYTES:
        readable = loop.create_future()
        loop.add_reader(fd, readable.set_result, None)
        try:
            await readable
        finally:
            loop.remove_reader(fd)
        try:
            chunk = os.read(fd, _INFO_BYTES)
        except BlockingIOError:
            continue
        if not chunk:
            return None
        data += chunk
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
    return None


async def _unconfined(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cap: int, stdin: bytes | None
) -> ProgramResult:
    """`[jail] mode = "none"`: the program in a fresh host folder, removed afterwards on a thread."""
    started = time.monotonic()
    await asyncio.to_thread(sweep_leftovers)
    folder = str(await asyncio.to_thread(new_folder))
    try:
        process = await _start(list(argv), {**env, "HOME": folder, "TMPDIR": folder}, folder, stdin, ())
        try:
            return await _supervise(process, stdin, timeout_s, cap, started)
        finally:
            _stop(process)  # whatever it left running in its session goes with the folder
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                await asyncio.wait_for(process.wait(), 5)
    finally:
        await asyncio.to_thread(remove_tree, folder)


async def _start(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | None, stdin: bytes | None, fds: tuple[int, ...]
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        pass_fds=fds,
    )


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
        _stop(process)
        done.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await done
        if over.is_set():
            return ProgramResult(None, bytes(out[:cap]), text, elapsed, output_over_cap=True)
        return ProgramResult(None, bytes(out), text, elapsed, timed_out=True)
    done.result()
    return ProgramResult(process.returncode, bytes(out), text, elapsed)


def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill the program's session: in a jail that is bubblewrap, whose death ends the jail."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
